/* test_symbolize: offline symbolization (tp_symbolize) of stacks that the real collector
 * recorded, and its wiring into the diagnosis and `trainprof report`.
 *
 * nvtx_app runs under `trainprof record --stacks all`; the stacks of its heap and region
 * records must resolve to suballoc_create_pool / suballoc_alloc, run_normal and main with
 * nvtx_app.c:line. A module whose file changed since the recording (a different ELF copied
 * over it, or a forged build-id) must say so and give no names; files that are missing, not
 * ELF or truncated give a status and no crash. A forged trace with an ALLOC_FAIL record then
 * checks the diagnosis' "source:" stack text, the structured frames and --no-symbols.
 * Arguments: TRAINPROF NVTX_APP (tc_run.h). */
#include <dlfcn.h>
#include <stdint.h>

#include "../collector/tc_run.h"
#include "tp_test.h"

#include "tp_an_frames.h"
#include "tp_diagnose.h"
#include "tp_report.h"
#include "tp_load_native.h"
#include "tp_symbolize.h"
#include "tp_writer.h"

static tc_run R;
static tp_reader *g_rd;
static char g_trace[1024];
static uint32_t g_heap_stack, g_region_stack;
static uint32_t g_app_mod; /* MODULE id of nvtx_app in the recorded trace */

static const char *base_of(const char *p) {
    const char *b = p ? strrchr(p, '/') : NULL;
    return b ? b + 1 : p;
}

static void copy_file(const char *from, const char *to, long max_bytes) {
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    char buf[65536];
    size_t n;
    long left = max_bytes < 0 ? -1 : max_bytes;
    while (in && out && left != 0 && (n = fread(buf, 1, sizeof buf, in)) > 0) {
        if (left > 0 && (long)n > left)
            n = (size_t)left;
        fwrite(buf, 1, n, out);
        if (left > 0)
            left -= (long)n;
    }
    if (in)
        fclose(in);
    if (out)
        fclose(out);
}

/* Records nvtx_app once; later cases read its trace. */
static void test_record(void) {
    const char *opts[] = {"--stacks", "all", NULL};
    int rc = tc_record(&R, NULL, opts, NULL);
    if (rc != 0)
        fprintf(stderr, "trainprof record: exit %d\n%s", rc, tc_stderr(&R));
    CHECK_EQ_I(rc, 0);
    CHECK_EQ_I(tc_trace(&R, 0, g_trace, sizeof g_trace), 1);
    CHECK_OK(tp_reader_open(g_trace, &g_rd));
    tp_query q = {TP_REC_BIT(TP_REC_HEAP) | TP_REC_BIT(TP_REC_REGION), 0, 0};
    tp_cursor *c;
    CHECK_OK(tp_cursor_open(g_rd, &q, &c));
    for (const tp_rec_hdr *h; (h = tp_cursor_next(c));) {
        if (h->type == TP_REC_HEAP && ((const tp_rec_heap *)h)->op == TP_HEAP_REGISTER)
            g_heap_stack = ((const tp_rec_heap *)h)->stack_id;
        if (h->type == TP_REC_REGION && ((const tp_rec_region *)h)->op == TP_REGION_REGISTER)
            g_region_stack = ((const tp_rec_region *)h)->stack_id;
    }
    tp_cursor_close(c);
    CHECK(g_heap_stack != 0 && g_region_stack != 0);
    const tp_rec_hdr *const *mods;
    size_t n = tp_reader_meta(g_rd, TP_REC_MODULE, &mods);
    for (size_t i = 0; i < n; i++) {
        const tp_rec_module *m = (const tp_rec_module *)mods[i];
        const char *p = tp_reader_string(g_rd, m->path_sid);
        if (p && !strcmp(p, R.app))
            g_app_mod = m->id;
    }
    CHECK(g_app_mod != 0);
}

typedef struct {
    int found;
    char file[256];
    int line;
} want_fn;

/* Symbolizes every frame of `stack` and notes where function `fn` was seen. */
static void find_fn(tp_symbolizer *s, uint32_t stack, const char *fn, want_fn *w) {
    uint32_t nf = 0;
    const uint64_t *fr = tp_reader_stack(g_rd, stack, &nf);
    memset(w, 0, sizeof *w);
    for (uint32_t i = 0; fr && i < nf; i++) {
        const tp_rec_module *m = tp_reader_module(g_rd, TP_FRAME_MODULE(fr[i]));
        if (!m)
            continue;
        const tp_sym *sym = tp_symbolize(s, tp_reader_string(g_rd, m->path_sid), m->build_id,
                                         m->build_id_len, TP_FRAME_OFFSET(fr[i]));
        for (size_t k = 0; k < sym->n; k++)
            if (!w->found && !strcmp(sym->f[k].func, fn)) {
                w->found = 1, w->line = sym->f[k].line;
                snprintf(w->file, sizeof w->file, "%s", sym->f[k].file ? sym->f[k].file : "");
            }
    }
}

static void test_trace_stacks(void) {
    if (!g_rd)
        TP_FAIL_("%s", "no trace recorded");
    tp_symbolizer *s;
    CHECK_OK(tp_symbolizer_open(&s));
    static const struct {
        int heap;
        const char *fn;
    } want[] = {{0, "suballoc_alloc"},
                {0, "run_normal"},
                {0, "main"},
                {1, "suballoc_create_pool"},
                {1, "main"}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        want_fn w;
        find_fn(s, want[i].heap ? g_heap_stack : g_region_stack, want[i].fn, &w);
        if (!w.found)
            fprintf(stderr, "missing %s\n", want[i].fn);
        CHECK(w.found);
        CHECK_STR(base_of(w.file), "nvtx_app.c");
        CHECK(w.line > 0);
    }
    want_fn w;
    find_fn(s, g_region_stack, "suballoc_create_pool", &w);
    CHECK(!w.found);
    tp_symbolizer_close(s);
}

/* The cache gives the same answer (the same object) for the same (module, address). */
static void test_cache_and_outside(void) {
    const tp_rec_module *m = tp_reader_module(g_rd, g_app_mod);
    if (!m)
        TP_FAIL_("%s", "no nvtx_app module");
    const char *path = tp_reader_string(g_rd, m->path_sid);
    uint32_t nf;
    const uint64_t *fr = tp_reader_stack(g_rd, g_region_stack, &nf);
    uint64_t off = 0;
    for (uint32_t i = 0; fr && i < nf && !off; i++)
        if (TP_FRAME_MODULE(fr[i]) == g_app_mod)
            off = TP_FRAME_OFFSET(fr[i]);
    tp_symbolizer *s;
    CHECK_OK(tp_symbolizer_open(&s));
    const tp_sym *a = tp_symbolize(s, path, m->build_id, m->build_id_len, off);
    CHECK_EQ_I(a->status, TP_SYM_OK);
    CHECK(tp_symbolize(s, path, m->build_id, m->build_id_len, off) == a);
    /* Far outside every section: a status, no names. */
    const tp_sym *out = tp_symbolize(s, path, m->build_id, m->build_id_len, 0x7ffffffff000ull);
    CHECK_EQ_I(out->status, TP_SYM_NO_SYMBOL);
    CHECK_EQ_U(out->n, 0);
    CHECK_EQ_I(tp_symbolize(s, path, NULL, 0, 0)->status, TP_SYM_NO_SYMBOL);
    tp_symbolizer_close(s);
    tp_symbolizer_close(NULL);
}

/* A C++ function's frame reads as people write it: std::chrono::system_clock::now in this
 * process's libstdc++ (the demangler's own library, so it is there), found through its
 * exported symbol, comes back demangled. */
static void test_cxx_demangled(void) {
    void *f = dlsym(RTLD_DEFAULT, "_ZNSt6chrono3_V212system_clock3nowEv");
    Dl_info di;
    if (!f || !dladdr(f, &di) || !di.dli_fname)
        TP_FAIL_("%s", "libstdc++'s system_clock::now not found");
    tp_symbolizer *s;
    CHECK_OK(tp_symbolizer_open(&s));
    const tp_sym *a =
        tp_symbolize(s, di.dli_fname, NULL, 0, (uint64_t)((uintptr_t)f - (uintptr_t)di.dli_fbase));
    CHECK_EQ_I(a->status, TP_SYM_OK);
    CHECK(a->n >= 1);
    if (a->n >= 1)
        CHECK_STR(a->f[a->n - 1].func, "std::chrono::_V2::system_clock::now()");
    tp_symbolizer_close(s);
}

/* The file changed since the recording: a different ELF over the module's path, or a MODULE
 * record whose build-id is not the file's. Never names from the wrong binary. */
static void test_build_id_mismatch(void) {
    const tp_rec_module *m = tp_reader_module(g_rd, g_app_mod);
    if (!m)
        TP_FAIL_("%s", "no nvtx_app module");
    CHECK(m->build_id_len > 0);
    char copy[300];
    snprintf(copy, sizeof copy, "%s/app-copy", R.dir);
    copy_file(R.app, copy, -1);
    tp_symbolizer *s;
    CHECK_OK(tp_symbolizer_open(&s));
    CHECK_EQ_I(tp_symbolizer_module_status(s, copy, m->build_id, m->build_id_len), TP_SYM_OK);
    tp_symbolizer_close(s);

    copy_file(R.trainprof, copy, -1); /* another ELF, same path */
    CHECK_OK(tp_symbolizer_open(&s));
    const tp_sym *r = tp_symbolize(s, copy, m->build_id, m->build_id_len, 0x1000);
    CHECK_EQ_I(r->status, TP_SYM_MISMATCH);
    CHECK_EQ_U(r->n, 0);

    uint8_t forged[32];
    memcpy(forged, m->build_id, sizeof forged);
    forged[0] ^= 0xff;
    r = tp_symbolize(s, R.app, forged, m->build_id_len, 0x1000);
    CHECK_EQ_I(r->status, TP_SYM_MISMATCH);
    CHECK_EQ_U(r->n, 0);
    CHECK(strstr(tp_sym_status_str(r->status), "build-id") != NULL);
    tp_symbolizer_close(s);
}

/* Missing, not ELF, empty, truncated at several points, a directory: a status, no crash. */
static void test_bad_files(void) {
    char p[300];
    tp_symbolizer *s;
    CHECK_OK(tp_symbolizer_open(&s));
    snprintf(p, sizeof p, "%s/missing.so", R.dir);
    CHECK_EQ_I(tp_symbolize(s, p, NULL, 0, 0x1000)->status, TP_SYM_NO_FILE);
    CHECK_EQ_I(tp_symbolize(s, R.dir, NULL, 0, 0x1000)->status, TP_SYM_NO_FILE);
    CHECK_EQ_I(tp_symbolize(s, NULL, NULL, 0, 0x1000)->status, TP_SYM_NO_FILE);
    snprintf(p, sizeof p, "%s/text.so", R.dir);
    FILE *f = fopen(p, "w");
    fputs("this is not an ELF file\n", f);
    fclose(f);
    CHECK_EQ_I(tp_symbolize(s, p, NULL, 0, 0x1000)->status, TP_SYM_NOT_ELF);
    snprintf(p, sizeof p, "%s/empty.so", R.dir);
    fclose(fopen(p, "w"));
    CHECK_EQ_I(tp_symbolize(s, p, NULL, 0, 0x1000)->status, TP_SYM_NOT_ELF);
    struct stat st;
    CHECK(stat(R.app, &st) == 0);
    const long cuts[] = {4, 52, 64, 1000, 4096, (long)st.st_size / 2, (long)st.st_size - 100};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        snprintf(p, sizeof p, "%s/cut%zu.so", R.dir, i);
        copy_file(R.app, p, cuts[i]);
        /* Each address of the real stack: whatever survives, the answer is consistent. */
        for (uint64_t a = 0; a < 0x4000; a += 0x80) {
            const tp_sym *r = tp_symbolize(s, p, NULL, 0, a);
            CHECK(r->status == TP_SYM_OK ? r->n > 0 : r->n == 0);
        }
        if (cuts[i] <= 64)
            CHECK_EQ_I(tp_symbolize(s, p, NULL, 0, 0x1000)->status, TP_SYM_NOT_ELF);
    }
    tp_symbolizer_close(s);
}

/* A trace with one ALLOC_FAIL whose stack is nvtx_app's region stack, its MODULE record
 * carrying `build_id` (n bytes). Returns 0 on success. */
static int forge_trace(const char *path, const uint8_t *build_id, uint32_t n) {
    uint32_t nf;
    const uint64_t *fr = tp_reader_stack(g_rd, g_region_stack, &nf);
    uint64_t frames[TP_STACK_MAX_FRAMES];
    uint32_t k = 0;
    for (uint32_t i = 0; fr && i < nf; i++)
        if (TP_FRAME_MODULE(fr[i]) == g_app_mod)
            frames[k++] = TP_FRAME_MAKE(1, TP_FRAME_OFFSET(fr[i]));
    tp_writer *w;
    if (!k || tp_writer_open(path, NULL, &w) != TP_OK)
        return -1;
    tp_rec_module mod;
    memset(&mod, 0, sizeof mod);
    TP_REC_INIT(&mod, TP_REC_MODULE);
    mod.id = 1;
    mod.build_id_len = n;
    memcpy(mod.build_id, build_id, n);
    uint32_t sid = 0;
    int bad = tp_writer_intern_string(w, R.app, strlen(R.app), &mod.path_sid) != TP_OK ||
              tp_writer_write_meta(w, &mod) != TP_OK ||
              tp_writer_intern_stack(w, frames, k, &sid) != TP_OK;
    tp_rec_alloc_fail af;
    memset(&af, 0, sizeof af);
    TP_REC_INIT(&af, TP_REC_ALLOC_FAIL);
    af.h.flags |= TP_RF_TIMED;
    af.ts = 1000;
    af.requested = 1 << 20, af.reserved_bytes = 4 << 20, af.free_bytes = 2 << 20;
    af.largest_free_block = 1 << 16;
    af.stack_id = sid;
    bad |= tp_writer_write(w, &af) != TP_OK;
    return tp_writer_close(w) != TP_OK || bad ? -1 : 0;
}

static void diagnose_file(const char *path, int no_symbols, tp_diagnosis *dg) {
    tp_model *m = tp_model_new();
    char err[512];
    memset(dg, 0, sizeof *dg);
    if (tp_load_native_file(m, path, err, sizeof err) != TP_OK) {
        fprintf(stderr, "load %s: %s\n", path, err);
        tp_model_close(m);
        return;
    }
    tp_model_finish(m);
    tp_an_opts o;
    tp_an_opts_init(&o);
    o.no_symbols = no_symbols;
    tp_an_view v;
    tp_an_view_build(&v, m, &m->ranks[0], &o);
    tp_diagnose_run(&v, dg);
    tp_an_view_free(&v);
    tp_model_close(m);
}

/* `trainprof report [--no-symbols] TRACE` output into buf. */
static void report_text(const char *trace, const char *opt, char *buf, size_t n) {
    char cmd[9000];
    snprintf(cmd, sizeof cmd, "'%s' report %s '%s' 2>&1", R.trainprof, opt, trace);
    FILE *p = popen(cmd, "r");
    size_t got = p ? fread(buf, 1, n - 1, p) : 0;
    buf[got] = 0;
    if (p)
        pclose(p);
}

static void test_diagnosis_stacks(void) {
    const tp_rec_module *m = tp_reader_module(g_rd, g_app_mod);
    if (!m)
        TP_FAIL_("%s", "no nvtx_app module");
    char good[300], bad[300];
    snprintf(good, sizeof good, "%s/forged-good.tprof", R.dir);
    snprintf(bad, sizeof bad, "%s/forged-bad.tprof", R.dir);
    uint8_t forged[32];
    memcpy(forged, m->build_id, sizeof forged);
    forged[3] ^= 0x5a;
    CHECK_OK(forge_trace(good, m->build_id, m->build_id_len));
    CHECK_OK(forge_trace(bad, forged, m->build_id_len));

    tp_diagnosis dg;
    diagnose_file(good, 0, &dg);
    const tp_finding *f = tp_diagnosis_find(&dg, "fragmentation-oom");
    CHECK(f != NULL);
    if (f) {
        /* nvtxMemRegionsRegister is a static inline of the NVTX headers: inlined into
         * suballoc_alloc at the call site, so it is a frame of its own. */
        CHECK(strstr(f->source, "stack: nvtxMemRegionsRegister (nvtxExtImplMem_v1.h:") != NULL);
        CHECK(strstr(f->source, " < suballoc_alloc (nvtx_app.c:") != NULL);
        CHECK(strstr(f->source, " < run_normal (nvtx_app.c:") != NULL);
        CHECK(strstr(f->source, " < main (nvtx_app.c:") != NULL);
        CHECK(f->n_frames == 4); /* libc's start frames are left out */
        CHECK_STR(f->frames[0].func, "nvtxMemRegionsRegister");
        CHECK_STR(f->frames[1].func, "suballoc_alloc");
        CHECK_EQ_I(f->frames[1].inlined, 0);
#ifdef __OPTIMIZE__ /* nvtx_app is built with the same flags as this test */
        CHECK_EQ_I(f->frames[0].inlined, 1);
        CHECK_EQ_U(f->frames[1].offset, f->frames[0].offset);
#else /* -O0 (the sanitizer builds): a real call, a frame of its own */
        CHECK_EQ_I(f->frames[0].inlined, 0);
        CHECK(f->frames[1].offset != f->frames[0].offset);
#endif
        CHECK_STR(base_of(f->frames[1].file), "nvtx_app.c");
        CHECK(f->frames[1].line > 0);
        CHECK_STR(f->frames[1].symbols, "ok");
        CHECK_STR(f->frames[0].module, "nvtx_app");
    }
    tp_diagnose_free(&dg);

    diagnose_file(bad, 0, &dg);
    f = tp_diagnosis_find(&dg, "fragmentation-oom");
    CHECK(f != NULL);
    if (f) {
        CHECK(strstr(f->source, "stack: nvtx_app+0x") != NULL);
        CHECK(strstr(f->source, "nvtx_app changed since the recording") != NULL);
        CHECK(strstr(f->source, "suballoc_alloc") == NULL);
        CHECK(f->n_frames >= 3);
        CHECK_STR(f->frames[0].func, "");
        CHECK_STR(f->frames[0].symbols, tp_sym_status_str(TP_SYM_MISMATCH));
    }
    tp_diagnose_free(&dg);

    diagnose_file(good, 1, &dg);
    f = tp_diagnosis_find(&dg, "fragmentation-oom");
    CHECK(f != NULL);
    if (f) {
        CHECK(strstr(f->source, "stack: nvtx_app+0x") != NULL);
        CHECK_STR(f->frames[0].symbols, "off");
    }
    tp_diagnose_free(&dg);

    static char out[65536];
    report_text(good, "", out, sizeof out);
    if (!strstr(out, "< suballoc_alloc"))
        fprintf(stderr, "%s", out);
    CHECK(strstr(out, "< suballoc_alloc") != NULL);
    report_text(good, "--no-symbols", out, sizeof out);
    CHECK(strstr(out, "stack: nvtx_app+0x") != NULL);
    CHECK(strstr(out, "suballoc_alloc") == NULL);
    report_text(good, "--format json", out, sizeof out);
    CHECK(strstr(out, "\"function\": \"suballoc_alloc\"") != NULL);
    CHECK(strstr(out, "\"frames\": [") != NULL);
}

static tp_model *load_model(const char *path) {
    tp_model *m = tp_model_new();
    char err[512];
    if (tp_load_native_file(m, path, err, sizeof err) != TP_OK) {
        fprintf(stderr, "load %s: %s\n", path, err);
        tp_model_close(m);
        return NULL;
    }
    tp_model_finish(m);
    return m;
}

/* A table's prefix of a stack symbolizes only the frames it holds (libc's start, at the
 * stack's outer end, is never opened), and reads the same as the whole stack's first frames;
 * two readers sharing one symbolizer resolve each address once. */
static void test_lazy_prefix(void) {
    tp_model *m = load_model(g_trace);
    if (!m)
        TP_FAIL_("%s", "no model");
    tp_symbolizer *s;
    CHECK_OK(tp_symbolizer_open(&s));
    tp_an_frames *a = tp_an_frames_open_shared(m, &m->ranks[0], s, 0, 0);
    tp_an_frames *b = tp_an_frames_open_shared(m, &m->ranks[0], s, 0, 0);
    const tp_an_frame *pre = NULL, *all = NULL;
    size_t np = tp_an_frames_prefix(a, g_region_stack, 2, &pre);
    tp_symbolizer_stats st;
    tp_symbolizer_get_stats(s, &st);
    CHECK_EQ_U(np, 2);
    CHECK(st.resolved >= 1 && st.resolved <= 2); /* inlined frames share an address */
    CHECK_EQ_U(st.modules, 1);                   /* nvtx_app only: not libc */
    size_t n = tp_an_frames_get(b, g_region_stack, &all);
    CHECK(n > np);
    for (size_t i = 0; i < np && i < n; i++) {
        CHECK_STR(pre[i].func, all[i].func);
        CHECK_EQ_I(pre[i].line, all[i].line);
        CHECK_EQ_U(pre[i].offset, all[i].offset);
    }
    tp_symbolizer_stats st2;
    tp_symbolizer_get_stats(s, &st2);
    CHECK(st2.modules > 1); /* the whole stack reaches libc */
    size_t resolved = st2.resolved;
    tp_an_frames_get(a, g_region_stack, &all); /* the other reader: nothing new to resolve */
    tp_symbolizer_get_stats(s, &st2);
    CHECK_EQ_U(st2.resolved, resolved);
    tp_an_frames_close(a);
    tp_an_frames_close(b);
    tp_symbolizer_close(s);
    tp_model_close(m);
}

/* A report (text, then JSON) with an injected symbolizer: every stack reader goes through
 * it, and the forged trace's frames are each resolved once however often they are shown. */
static void test_report_symbolizes_once(void) {
    char good[300];
    snprintf(good, sizeof good, "%s/forged-good.tprof", R.dir);
    tp_model *m = load_model(good);
    if (!m)
        TP_FAIL_("%s", "no model");
    uint32_t nf = 0;
    const uint64_t *fr = tp_reader_stack(g_rd, g_region_stack, &nf);
    size_t app_frames = 0; /* distinct addresses: a recursion-free stack */
    for (uint32_t i = 0; fr && i < nf; i++)
        app_frames += TP_FRAME_MODULE(fr[i]) == g_app_mod;
    tp_symbolizer *s;
    CHECK_OK(tp_symbolizer_open(&s));
    tp_report_opts o;
    tp_report_opts_init(&o);
    o.an.symbolizer = s;
    FILE *out = fopen("/dev/null", "w");
    CHECK(out != NULL);
    size_t first = 0;
    for (int fmt = 0; out && fmt < 2; fmt++) {
        o.format = fmt ? TP_REPORT_JSON : TP_REPORT_TEXT;
        CHECK_OK(tp_report_write(out, m, &o));
        tp_symbolizer_stats st;
        tp_symbolizer_get_stats(s, &st);
        CHECK(st.lookups > 0);
        CHECK_EQ_U(st.modules, 1);
        /* the finding's frames: every app frame but _start (left out unresolved) */
        CHECK(st.resolved >= 3 && st.resolved < app_frames);
        if (fmt)
            CHECK_EQ_U(st.resolved, first); /* the JSON resolved nothing again */
        first = st.resolved;
    }
    if (out)
        fclose(out);
    tp_symbolizer_close(s);
    tp_model_close(m);
}

int main(int argc, char **argv) {
    tc_init(&R, argc, argv);
    TP_RUN(test_record);
    TP_RUN(test_trace_stacks);
    TP_RUN(test_cache_and_outside);
    TP_RUN(test_cxx_demangled);
    TP_RUN(test_build_id_mismatch);
    TP_RUN(test_bad_files);
    TP_RUN(test_diagnosis_stacks);
    TP_RUN(test_lazy_prefix);
    TP_RUN(test_report_symbolizes_once);
    tp_reader_close(g_rd);
    /* unlinking while reading the directory can skip entries: repeat until it is gone */
    for (int i = 0; i < 8 && access(R.dir, F_OK) == 0; i++)
        tc_cleanup(&R);
    return tp_test_summary();
}
