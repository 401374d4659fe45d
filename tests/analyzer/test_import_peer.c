/* test_import_peer: the Kineto importer against real PyTorch-profiler traces
 * ($TP_PEER_TRACES/traces) and the raw inventory HTA's reference files record for them
 * ($TP_PEER_TRACES/expected/SET.json files[]): per-category event counts, memcpy kinds by
 * name, memory events, ranks (distributedInfo and HTA's inference), fractional timestamps,
 * device types and GPU streams. Also loads every one of the 30 sets and checks the model's
 * invariants (order, indexes, nesting). Skips (77) when the peer traces are absent. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_tree.h>

#include "tp_load.h"
#include "tp_model.h"
#include "tp_record.h"
#include "tp_test.h"

static const char *peer;

static yajl_val get(yajl_val v, const char *key) {
    if (!YAJL_IS_OBJECT(v))
        return NULL;
    for (size_t i = 0; i < v->u.object.len; i++)
        if (!strcmp(v->u.object.keys[i], key))
            return v->u.object.values[i];
    return NULL;
}

static long long get_int(yajl_val v, const char *key, long long dflt) {
    yajl_val x = get(v, key);
    return YAJL_IS_INTEGER(x) ? YAJL_GET_INTEGER(x) : dflt;
}

/* The string in `v`, "" when it is not one. */
static const char *str_of(yajl_val v) {
    const char *s = YAJL_IS_STRING(v) ? v->u.string : NULL;
    return s ? s : "";
}

static tp_model *load_set(const char *set) {
    char path[1024];
    snprintf(path, sizeof path, "%s/traces/%s", peer, set);
    const char *paths[] = {path};
    tp_model *m;
    tp_load_result res;
    if (tp_load_paths(paths, 1, &m, &res) != TP_OK) {
        fprintf(stderr, "%s: %s\n", set, res.error);
        return NULL;
    }
    return m;
}

static const tp_rank *rank_of_file(const tp_model *m, const char *file) {
    for (size_t i = 0; i < m->n_ranks; i++) {
        const char *slash = strrchr(m->ranks[i].file, '/');
        if (!strcmp(slash ? slash + 1 : m->ranks[i].file, file))
            return &m->ranks[i];
    }
    return NULL;
}

static size_t count_cat(const tp_rank *r, tp_cat c) {
    size_t n = 0;
    for (size_t i = 0; i < r->ev.n; i++)
        n += r->ev.cat[i] == c;
    return n;
}

static size_t count_where(const tp_model *m, const tp_rank *r, const char *name,
                          const char *cat_raw) {
    size_t n = 0;
    for (size_t i = 0; i < r->ev.n; i++)
        n += (!name || !strcmp(tp_model_str(m, r->ev.name[i]), name)) &&
             (!cat_raw || !strcmp(tp_model_str(m, tp_ev_cat_raw(&r->ev, i)), cat_raw));
    return n;
}

static int failures_before;

/* One files[] entry of an expected file against the rank loaded from that file. */
static void check_file(const char *set, const tp_model *m, yajl_val fe, yajl_val res) {
    const char *file = str_of(get(fe, "file"));
    const tp_rank *r = rank_of_file(m, file);
    if (!r) {
        fprintf(stderr, "%s: no rank loaded from %s\n", set, file);
        tp_test_failures++;
        return;
    }
    CHECK_EQ_U(count_cat(r, TP_CAT_KERNEL), get_int(fe, "n_kernels", -1));
    CHECK_EQ_U(count_cat(r, TP_CAT_MEMCPY), get_int(fe, "n_memcpy", -1));
    CHECK_EQ_U(count_cat(r, TP_CAT_MEMSET), get_int(fe, "n_memset", -1));
    /* the inventory's n_runtime counts runtime and driver calls */
    CHECK_EQ_U(count_cat(r, TP_CAT_CUDA_RUNTIME) + count_cat(r, TP_CAT_CUDA_DRIVER),
               get_int(fe, "n_runtime", -1));
    CHECK_EQ_U(r->mem.n, get_int(fe, "n_memory_events", -1));
    /* every admitted category, counted by its raw text; non-admitted ones (flows, Trace,
     * instants) have no rows */
    yajl_val cc = get(fe, "cat_counts");
    size_t admitted = 0;
    for (size_t i = 0; cc && i < cc->u.object.len; i++) {
        size_t ours = count_where(m, r, NULL, cc->u.object.keys[i]);
        if (ours)
            CHECK_EQ_U(ours, YAJL_GET_INTEGER(cc->u.object.values[i]));
        admitted += ours;
    }
    CHECK_EQ_U(admitted, r->ev.n);
    CHECK_EQ_U(r->ev.n + (size_t)get_int(cc, "Trace", 0), get_int(fe, "n_complete_X", -1));
    /* memcpy kinds by name */
    yajl_val mb = get(fe, "memcpy_by_name");
    for (size_t i = 0; mb && i < mb->u.object.len; i++) {
        const char *name = mb->u.object.keys[i];
        CHECK_EQ_U(count_where(m, r, name, NULL), YAJL_GET_INTEGER(mb->u.object.values[i]));
        for (size_t j = 0; j < r->ev.n; j++) {
            if (strcmp(tp_model_str(m, r->ev.name[j]), name))
                continue;
            if (strstr(name, "HtoD"))
                CHECK_EQ_I(tp_ev_copy_kind(&r->ev, j), TP_COPY_HTOD);
            if (strstr(name, "(Pageable"))
                CHECK_EQ_I(tp_ev_src_kind(&r->ev, j), TP_MEM_PAGEABLE);
            if (strstr(name, "(Pinned"))
                CHECK_EQ_I(tp_ev_src_kind(&r->ev, j), TP_MEM_PINNED);
        }
    }
    yajl_val rb = get(fe, "runtime_by_name");
    CHECK_EQ_U(count_where(m, r, "cudaLaunchKernel", NULL), get_int(rb, "cudaLaunchKernel", 0));
    /* ranks */
    yajl_val dr = get(fe, "distributedInfo_rank");
    if (YAJL_IS_INTEGER(dr)) {
        CHECK_EQ_I(r->rank, YAJL_GET_INTEGER(dr));
        CHECK(r->has_dist_info);
    }
    yajl_val r2f = get(get(res, "default"), "rank_to_file");
    for (size_t i = 0; r2f && i < r2f->u.object.len; i++)
        if (!strcmp(str_of(r2f->u.object.values[i]), file))
            CHECK_EQ_I(r->rank_hta, atoi(r2f->u.object.keys[i]));
    CHECK_EQ_I(r->has_fractional_ts, YAJL_IS_TRUE(get(fe, "has_fractional_ts")));
    /* GPU (pid, stream) pairs: every stream HTA saw is one of ours */
    yajl_val pairs = get(fe, "gpu_pid_stream_pairs");
    for (size_t i = 0; YAJL_IS_ARRAY(pairs) && i < pairs->u.array.len; i++) {
        yajl_val pr = pairs->u.array.values[i];
        long long stream = atoll(str_of(pr->u.array.values[1]));
        if (tp_rank_stream_index(r, stream) < 0) {
            fprintf(stderr, "%s: stream %lld missing\n", set, stream);
            tp_test_failures++;
        }
    }
}

static void check_device_type(const tp_model *m, yajl_val res) {
    yajl_val info = get(get(res, "default"), "hta_dataframe_info");
    for (size_t i = 0; info && i < info->u.object.len; i++) {
        const tp_rank *r = tp_model_rank(m, atoi(info->u.object.keys[i]));
        const char *dt = str_of(get(info->u.object.values[i], "device_type"));
        if (!r)
            continue;
        if (!strcmp(dt, "NVIDIA GPU"))
            CHECK_EQ_I(r->device_type, TP_DEVTYPE_NVIDIA);
        else if (!strcmp(dt, "AMD GPU"))
            CHECK_EQ_I(r->device_type, TP_DEVTYPE_AMD);
    }
}

/* Distinct ProfilerStep#N names in the model (HTA trims only when there are two or more). */
static size_t distinct_steps(const tp_model *m) {
    uint32_t seen[64];
    size_t n = 0;
    for (size_t k = 0; k < m->n_ranks; k++)
        for (size_t i = 0; i < m->ranks[k].ev.n; i++) {
            if (!(m->ranks[k].ev.flags[i] & TP_EVF_PROFILER_STEP))
                continue;
            size_t j = 0;
            while (j < n && seen[j] != m->ranks[k].ev.name[i])
                j++;
            if (j == n && n < 64)
                seen[n++] = m->ranks[k].ev.name[i];
        }
    return n;
}

/* Every kernel name HTA lists exists among our GPU rows of that rank, with HTA's count
 * when HTA did not trim profiler steps. */
static void check_kernel_names(const char *set, const tp_model *m, yajl_val res) {
    yajl_val all = get(get(res, "default"), "kernel_breakdown_all");
    int exact = distinct_steps(m) < 2;
    for (size_t i = 0; YAJL_IS_ARRAY(all) && i < all->u.array.len; i++) {
        yajl_val k = all->u.array.values[i];
        const char *name = str_of(get(k, "name"));
        const tp_rank *r = tp_model_rank(m, (int)get_int(k, "rank", -1));
        uint32_t id = tp_model_find_str(m, name);
        size_t n = 0;
        for (size_t j = 0; r && id && j < r->ev.n; j++)
            n += r->ev.name[j] == id && tp_ev_stream(&r->ev, j) != -1;
        if (n == 0 || (exact && (long long)n != get_int(k, "count", -1))) {
            fprintf(stderr, "%s: kernel \"%.60s\": %zu rows, HTA count %lld\n", set, name, n,
                    get_int(k, "count", -1));
            tp_test_failures++;
            return;
        }
    }
}

static void check_expected_set(const char *set) {
    char path[1024];
    snprintf(path, sizeof path, "%s/expected/%s.json", peer, set);
    char *text = tp_test_read_text(path);
    CHECK(text != NULL);
    char err[256];
    yajl_val root = yajl_tree_parse(text, err, sizeof err);
    free(text);
    CHECK(root != NULL);
    tp_model *m = load_set(set);
    CHECK(m != NULL);
    yajl_val files = get(root, "files");
    CHECK_EQ_U(m->n_ranks, files->u.array.len);
    for (size_t i = 0; i < files->u.array.len; i++)
        check_file(set, m, files->u.array.values[i], get(root, "results"));
    check_device_type(m, get(root, "results"));
    check_kernel_names(set, m, get(root, "results"));
    tp_model_close(m);
    yajl_tree_free(root);
}

static void test_expected_inventory(void) {
    char path[1024];
    snprintf(path, sizeof path, "%s/expected", peer);
    DIR *d = opendir(path);
    CHECK(d != NULL);
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".json"))
            continue;
        char set[256];
        snprintf(set, sizeof set, "%.*s", (int)(len - 5), e->d_name);
        failures_before = tp_test_failures;
        check_expected_set(set);
        if (tp_test_failures != failures_before)
            fprintf(stderr, "  ^ in set %s\n", set);
        n++;
    }
    closedir(d);
    CHECK_EQ_U(n, TP_PEER_HTA_SETS);
}

/* The model's promises on one rank: time order, buckets, correlation index, nesting. */
static void check_invariants(const tp_rank *r) {
    const tp_events *e = &r->ev;
    for (size_t i = 1; i < e->n; i++)
        CHECK(e->ts[i] > e->ts[i - 1] ||
              (e->ts[i] == e->ts[i - 1] && tp_ev_dur(e, i) <= tp_ev_dur(e, i - 1)));
    size_t in_streams = 0, in_threads = r->threads.off[r->threads.n];
    for (size_t j = 0; j < r->streams.n; j++)
        for (uint32_t k = r->streams.off[j]; k < r->streams.off[j + 1]; k++, in_streams++) {
            CHECK_EQ_I(tp_ev_stream(e, r->streams.rows[k]), r->streams.key[j]);
            if (k > r->streams.off[j])
                CHECK(r->streams.rows[k] > r->streams.rows[k - 1]);
        }
    CHECK_EQ_U(in_streams + in_threads, e->n);
    for (size_t k = 1; k < r->n_by_corr; k++)
        CHECK(tp_ev_corr(e, r->by_corr[k]) >= tp_ev_corr(e, r->by_corr[k - 1]));
    for (size_t i = 0; i < e->n; i++) {
        int32_t p = tp_ev_parent(e, i);
        if (p < 0)
            continue;
        CHECK(e->ts[p] <= e->ts[i] && e->ts[p] + tp_ev_dur(e, p) >= e->ts[i] + tp_ev_dur(e, i));
        CHECK_EQ_I(tp_ev_depth(e, i), tp_ev_depth(e, (size_t)p) + 1);
        CHECK_EQ_I(tp_ev_tid(e, p), tp_ev_tid(e, i));
    }
}

static void test_all_sets_load(void) {
    char path[1024];
    snprintf(path, sizeof path, "%s/traces", peer);
    DIR *d = opendir(path);
    CHECK(d != NULL);
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.')
            continue;
        tp_model *m = load_set(e->d_name);
        CHECK(m != NULL);
        n++;
        int cpu_only = !strcmp(e->d_name, "hta_cpu_only");
        for (size_t i = 0; i < m->n_ranks; i++) {
            const tp_rank *r = &m->ranks[i];
            CHECK(r->ev.n > 0);
            CHECK_EQ_I(r->device_type == TP_DEVTYPE_CPU_ONLY, cpu_only);
            failures_before = tp_test_failures;
            check_invariants(r);
            if (tp_test_failures != failures_before)
                fprintf(stderr, "  ^ in %s\n", r->file);
        }
        if (!strcmp(e->d_name, "param_dlrm_8rank")) {
            CHECK_EQ_U(m->n_ranks, 8);
            for (int k = 0; k < 8; k++)
                CHECK(tp_model_rank(m, k) != NULL);
        }
        tp_model_close(m);
    }
    closedir(d);
    CHECK_EQ_U(n, TP_PEER_SETS);
}

/* Exact ns from decimal µs on a real trace, and the launch <-> kernel correlation. */
static void test_ns_resolution_values(void) {
    tp_model *m = load_set("hta_ns_resolution");
    CHECK(m != NULL);
    const tp_rank *r = &m->ranks[0];
    const uint32_t *rows;
    size_t n = tp_rank_corr_rows(r, 135071, &rows);
    CHECK_EQ_U(n, 2);
    long kernel = -1, launch = -1;
    for (size_t i = 0; i < n; i++) {
        if (r->ev.cat[rows[i]] == TP_CAT_KERNEL)
            kernel = rows[i];
        if (r->ev.flags[rows[i]] & TP_EVF_LAUNCH)
            launch = rows[i];
    }
    CHECK(kernel >= 0 && launch >= 0);
    CHECK_EQ_I(r->ev.ts[kernel], 1712195495505582988LL);
    CHECK_EQ_I(tp_ev_dur(&r->ev, kernel), 4928);
    CHECK_EQ_I(tp_ev_stream(&r->ev, kernel), 7);
    CHECK(r->ev.ts[launch] < r->ev.ts[kernel]);
    CHECK(r->has_fractional_ts);
    tp_model_close(m);
}

int main(void) {
    peer = tp_test_peer_root(); /* skips, or fails under CI, when absent */
    TP_RUN(test_expected_inventory);
    TP_RUN(test_all_sets_load);
    TP_RUN(test_ns_resolution_values);
    return tp_test_summary();
}
