/* Tests of tp_kineto_names: the names are Kineto's, byte for byte, and every name built
 * parses back to the kinds it was built from (the native loader writes them, the Kineto
 * importer reads them: a mismatch would split one kind of copy into two in the report). */
#include "tp_demangle.h"
#include "tp_kineto_names.h"

#include "tp_record.h"
#include "tp_test.h"

static void test_spellings(void) {
    char b[TP_KINETO_NAME_MAX];
    CHECK_STR(tp_kineto_memcpy_name(b, sizeof b, TP_COPY_HTOD, TP_MEM_PAGEABLE, TP_MEM_DEVICE),
              "Memcpy HtoD (Pageable -> Device)");
    CHECK_STR(tp_kineto_memcpy_name(b, sizeof b, TP_COPY_DTOH, TP_MEM_DEVICE, TP_MEM_PINNED),
              "Memcpy DtoH (Device -> Pinned)");
    CHECK_STR(tp_kineto_memset_name(b, sizeof b, TP_MEM_DEVICE), "Memset (Device)");
    CHECK_STR(tp_sync_type_name(TP_SYNC_EVENT), "Event Sync");
    CHECK_STR(tp_sync_type_name(TP_SYNC_STREAM_WAIT_EVENT), "Stream Wait Event");
    CHECK_STR(tp_sync_type_name(TP_SYNC_STREAM), "Stream Sync");
    CHECK_STR(tp_sync_type_name(TP_SYNC_CONTEXT), "Context Sync");
    CHECK_STR(tp_sync_type_name(TP_SYNC_UNKNOWN), "Unknown Sync");
    CHECK_STR(tp_sync_type_name(99), "Unknown Sync");
    CHECK_STR(tp_copy_kind_name(TP_COPY_PTOP), "PtoP");
    CHECK_STR(tp_copy_kind_name(200), "Unknown");
    CHECK_STR(tp_mem_kind_name(TP_MEM_MANAGED_STATIC), "Managed Static");
    CHECK_STR(tp_mem_kind_name(8), "Unknown");
    /* the longest name fits the advertised buffer */
    CHECK(strlen(tp_kineto_memcpy_name(b, sizeof b, TP_COPY_PTOP, TP_MEM_MANAGED_STATIC,
                                       TP_MEM_MANAGED_STATIC)) < TP_KINETO_NAME_MAX - 1);
    CHECK(tp_kineto_is_memcpy(b) && !tp_kineto_is_memset(b));
    CHECK(!tp_kineto_is_memcpy("cudaMemcpy") && tp_kineto_is_memset("Memset (Device)"));
}

/* Every copy kind x source x destination, and every memset, round trips. */
static void test_round_trip(void) {
    char b[TP_KINETO_NAME_MAX];
    uint8_t c, s, d;
    for (unsigned k = TP_COPY_HTOD; k <= TP_COPY_PTOP; k++)
        for (unsigned x = TP_MEM_PAGEABLE; x <= TP_MEM_MANAGED_STATIC; x++)
            for (unsigned y = TP_MEM_PAGEABLE; y <= TP_MEM_MANAGED_STATIC; y++) {
                tp_kineto_parse_copy_name(tp_kineto_memcpy_name(b, sizeof b, k, x, y), &c, &s, &d);
                if (c != k || s != x || d != y) {
                    CHECK_STR(b, "(parses back)");
                    return;
                }
            }
    for (unsigned x = TP_MEM_PAGEABLE; x <= TP_MEM_MANAGED_STATIC; x++) {
        tp_kineto_parse_copy_name(tp_kineto_memset_name(b, sizeof b, x), &c, &s, &d);
        CHECK_EQ_U(c, TP_COPY_UNKNOWN);
        CHECK_EQ_U(s, x);
        CHECK_EQ_U(d, x);
    }
}

/* Spellings other profilers use come out unknown, never as a wrong kind. */
static void test_foreign_names(void) {
    uint8_t c = 9, s = 9, d = 9;
    tp_kineto_parse_copy_name("Memcpy HtoD (Host -> Device)", &c, &s, &d); /* ROCm */
    CHECK_EQ_U(c, TP_COPY_HTOD);
    CHECK_EQ_U(s, TP_MEM_UNKNOWN);
    CHECK_EQ_U(d, TP_MEM_DEVICE);
    tp_kineto_parse_copy_name("Memset (Unknown)", &c, &s, &d);
    CHECK_EQ_U(s, TP_MEM_UNKNOWN);
    tp_kineto_parse_copy_name("Memcpy XtoY (Pinned", &c, &s, &d); /* cut off */
    CHECK_EQ_U(c, TP_COPY_UNKNOWN);
    CHECK_EQ_U(s + d, 0);
}

/* CUPTI's versioned runtime names, as the first GPU run recorded them, lose the version;
 * driver names and everything else stay whole. */
static void test_api_names(void) {
    static const struct {
        const char *in, *out;
    } cases[] = {
        {"cudaLaunchKernel_v7000", "cudaLaunchKernel"},
        {"cudaMemcpyAsync_v3020", "cudaMemcpyAsync"},
        {"cudaStreamSynchronize_v3020", "cudaStreamSynchronize"},
        {"cudaLaunchKernelExC_v11060", "cudaLaunchKernelExC"},
        {"cudaLaunchKernel", "cudaLaunchKernel"},
        {"cuMemAlloc_v2", "cuMemAlloc_v2"},             /* the driver symbol's own name */
        {"cuGetProcAddress_v2", "cuGetProcAddress_v2"}, /* not "cuda" */
        {"cudaFoo_v12", "cudaFoo_v12"},                 /* under 4 digits: not CUPTI's */
        {"cudaFoo_7000", "cudaFoo_7000"},               /* no "_v" */
        {"step_v2024", "step_v2024"},                   /* a range's name */
        {"cuda_v1234", "cuda_v1234"},                   /* nothing would be left */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n = tp_kineto_api_name_len(cases[i].in, strlen(cases[i].in));
        CHECK_EQ_U(n, strlen(cases[i].out));
        CHECK(strncmp(cases[i].in, cases[i].out, n) == 0);
    }
}

/* C++ kernel names as Kineto writes them; anything else is not touched (NULL). */
static void test_demangle(void) {
    char *d = tp_demangle("_ZN2ns4gemmIfEEvPfi");
    CHECK(d != NULL);
    if (d)
        CHECK_STR(d, "void ns::gemm<float>(float*, int)");
    free(d);
    CHECK(tp_demangle("gemm_fwd") == NULL);
    CHECK(tp_demangle("_Z") == NULL);    /* cut short: left as it is */
    CHECK(tp_demangle("_Zq9x") == NULL); /* not a mangling */
    CHECK(tp_demangle(NULL) == NULL);
}

int main(void) {
    TP_RUN(test_spellings);
    TP_RUN(test_round_trip);
    TP_RUN(test_foreign_names);
    TP_RUN(test_api_names);
    TP_RUN(test_demangle);
    return tp_test_summary();
}
