/* test_collector_gpu (label gpu): `trainprof record` on cuda_app on a machine with a GPU.
 * Checks the CUPTI path end to end: kernels, pageable and pinned copies, memset, sync,
 * device memory, the failed cudaMalloc as ALLOC_FAIL with its size, the launch's API record
 * joined to its kernel by correlation id with a stack through launch_scale(), and the GPU
 * timestamps on the trace clock (inside the enclosing NVTX range). Skips without a GPU. */
#include "tc_run.h"
#include "tp_test.h"

static tc_run R;
static tp_reader *g_rd;

static int frame_in(uint64_t frame, const char *want) {
    const tp_rec_module *m = tp_reader_module(g_rd, TP_FRAME_MODULE(frame));
    char cmd[1400], line[512];
    int found = 0;
    if (!m)
        return 0;
    snprintf(cmd, sizeof cmd, "addr2line -f -i -e '%s' 0x%llx", tp_reader_string(g_rd, m->path_sid),
             (unsigned long long)TP_FRAME_OFFSET(frame));
    FILE *p = popen(cmd, "r");
    for (int i = 0; p && fgets(line, sizeof line, p); i++) {
        line[strcspn(line, "\n")] = 0;
        found |= i % 2 == 0 && strstr(line, want) != NULL;
    }
    if (p)
        pclose(p);
    return found;
}

static int stack_has(uint32_t id, const char *want) {
    uint32_t n;
    const uint64_t *f = tp_reader_stack(g_rd, id, &n);
    for (uint32_t i = 0; f && i < n; i++)
        if (frame_in(f[i], want))
            return 1;
    return 0;
}

static void test_gpu_trace(void) {
    const char *opts[] = {"-o", "gpu.tprof", NULL};
    int rc = tc_record(&R, NULL, opts, NULL);
    if (rc == 77)
        TP_SKIP("no GPU");
    CHECK_EQ_I(rc, 0);
    CHECK(strstr(tc_stderr(&R), "CUDA: not traced") == NULL);
    char path[1024];
    CHECK_EQ_I(tc_trace(&R, 0, path, sizeof path), 1);
    CHECK_OK(tp_reader_open(path, &g_rd));
    const tp_trace_info *in = tp_reader_info(g_rd);
    CHECK(in->records[TP_REC_KERNEL] >= 1);
    CHECK(in->records[TP_REC_MEMCPY] >= 2);
    CHECK(in->records[TP_REC_MEMSET] >= 1);
    CHECK(in->records[TP_REC_SYNC] >= 1);
    CHECK(in->records[TP_REC_DEVICE_MEM] >= 2);
    CHECK(in->records[TP_REC_DEVICE] >= 1);
    CHECK_EQ_U(in->dropped_total, 0);

    uint64_t range_begin = 0, range_end = 0, kernel_ts = 0, kernel_end = 0;
    uint32_t kernel_corr = 0, launch_stack = 0;
    int pageable = 0, pinned = 0, fails = 0;
    tp_cursor *c;
    CHECK_OK(tp_cursor_open(g_rd, NULL, &c));
    for (const tp_rec_hdr *h; (h = tp_cursor_next(c));) {
        if (h->type == TP_REC_NVTX_PUSH)
            range_begin = tp_record_ts(h);
        else if (h->type == TP_REC_NVTX_POP)
            range_end = tp_record_ts(h);
        else if (h->type == TP_REC_KERNEL) {
            const tp_rec_kernel *k = (const void *)h;
            if (strstr(tp_reader_string(g_rd, k->name_sid), "scale_kernel")) {
                kernel_corr = k->correlation;
                kernel_ts = k->ts, kernel_end = k->end;
            }
        } else if (h->type == TP_REC_MEMCPY) {
            const tp_rec_memcpy *m = (const void *)h;
            pageable += m->copy_kind == TP_COPY_HTOD && m->src_kind == TP_MEM_PAGEABLE;
            pinned += m->copy_kind == TP_COPY_HTOD && m->src_kind == TP_MEM_PINNED &&
                      (m->h.flags & TP_MEMCPY_ASYNC);
        } else if (h->type == TP_REC_ALLOC_FAIL) {
            const tp_rec_alloc_fail *f = (const void *)h;
            fails += f->requested == (uint64_t)1 << 50;
        }
    }
    tp_cursor_close(c);
    CHECK_OK(tp_cursor_open(g_rd, NULL, &c));
    for (const tp_rec_hdr *h; (h = tp_cursor_next(c));)
        if (h->type == TP_REC_API && ((const tp_rec_api *)h)->correlation == kernel_corr &&
            ((const tp_rec_api *)h)->stack_id)
            launch_stack = ((const tp_rec_api *)h)->stack_id;
    tp_cursor_close(c);
    CHECK(kernel_corr != 0);
    CHECK(launch_stack != 0);
    CHECK(stack_has(launch_stack, "launch_scale"));
    CHECK_EQ_I(pageable, 1);
    CHECK_EQ_I(pinned, 1);
    CHECK_EQ_I(fails, 1);
    /* Same clock: the kernel ran inside the NVTX range around it. */
    CHECK(range_begin && kernel_ts >= range_begin && kernel_end <= range_end);
    tp_reader_close(g_rd);
    tc_cleanup(&R);
}

int main(int argc, char **argv) {
    tc_init(&R, argc, argv);
    TP_RUN(test_gpu_trace);
    return tp_test_summary();
}
