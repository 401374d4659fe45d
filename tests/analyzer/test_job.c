/* test_job: one recording is one job (model/tp_job, tp_model_merge_rank), on traces written
 * here with the writer API so every pid, id and time is chosen:
 *   - a main process and its workers are one rank, main first, workers in the order they
 *     started, with their events, thread names and correlation ids kept apart;
 *   - exec'd images follow the image before them and keep its role;
 *   - ranks only where known: a launcher without a rank joins the lowest rank of its job as
 *     its launcher (the rank's own process its main), workers inherit their parent's rank;
 *     two recordings are two jobs;
 *   - traces older than format 1.3 (no job id) are linked through the process tree;
 *   - given a main trace, report reads its recording's traces beside it and leaves out one
 *     of another recording under a matching name, with a note. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tp_load.h"
#include "tp_model.h"
#include "tp_record.h"
#include "tp_test.h"
#include "tp_writer.h"

static char dir[256];

typedef struct {
    uint32_t pid, ppid, root, gen;
    int32_t rank;
    uint64_t job;
    uint64_t start; /* realtime start, ns */
    int ranges;     /* NVTX ranges on the main thread */
    int launches;   /* API + KERNEL pairs, correlation ids 1.. */
} proc_spec;

static uint32_t intern(tp_writer *w, const char *s) {
    uint32_t id = 0;
    tp_writer_intern_string(w, s, strlen(s), &id);
    return id;
}

static void write_proc(const char *name, const proc_spec *p) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    tp_writer_opts o;
    tp_writer_opts_default(&o);
    tp_writer *w;
    CHECK_OK(tp_writer_open(path, &o, &w));
    tp_rec_process r = {0};
    TP_REC_INIT(&r, TP_REC_PROCESS);
    r.pid = p->pid, r.ppid = p->ppid, r.rank = p->rank, r.world_size = -1, r.local_rank = -1;
    r.cmdline_sid = intern(w, name);
    r.start_realtime_ns = p->start;
    r.job_id = p->job, r.root_pid = p->root, r.exec_gen = p->gen;
    CHECK_OK(tp_writer_write_meta(w, &r));
    tp_rec_thread t = {0};
    TP_REC_INIT(&t, TP_REC_THREAD);
    t.pid = p->pid, t.tid = p->pid, t.name_sid = intern(w, name);
    CHECK_OK(tp_writer_write_meta(w, &t));
    for (int i = 0; i < p->ranges; i++) {
        tp_rec_nvtx push = {0};
        TP_REC_INIT(&push, TP_REC_NVTX_PUSH);
        push.ts = 1000 + (uint64_t)i * 100, push.tid = p->pid, push.msg_sid = intern(w, "work");
        CHECK_OK(tp_writer_write(w, &push));
        tp_rec_nvtx_pop pop = {0};
        TP_REC_INIT(&pop, TP_REC_NVTX_POP);
        pop.ts = push.ts + 50, pop.tid = p->pid;
        CHECK_OK(tp_writer_write(w, &pop));
    }
    for (int i = 0; i < p->launches; i++) {
        tp_rec_api a = {0};
        TP_REC_INIT(&a, TP_REC_API);
        a.h.flags |= TP_API_RUNTIME;
        a.ts = 5000 + (uint64_t)i * 1000, a.end = a.ts + 100, a.tid = p->pid;
        a.correlation = (uint32_t)i + 1, a.name_sid = intern(w, "cudaLaunchKernel");
        CHECK_OK(tp_writer_write(w, &a));
        tp_rec_kernel k = {0};
        TP_REC_INIT(&k, TP_REC_KERNEL);
        k.ts = a.ts + 200, k.end = k.ts + 300, k.correlation = (uint32_t)i + 1, k.stream = 7;
        k.name_sid = intern(w, "k");
        CHECK_OK(tp_writer_write(w, &k));
    }
    CHECK_OK(tp_writer_close(w));
}

/* Loads `what` in the test folder ("": the folder); aborts the test program when that fails,
 * since every case needs the model. */
static tp_model *load(const char *what, tp_load_result *res) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, what);
    const char *paths[] = {path};
    tp_model *m = NULL;
    if (tp_load_paths(paths, 1, &m, res) != TP_OK) {
        fprintf(stderr, "cannot load %s: %s\n", path, res->error);
        exit(1);
    }
    return m;
}

static void clean(void) {
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -f '%s'/*.tprof", dir);
    if (system(cmd) != 0)
        abort();
}

#define JOB 0x1234abcdull

static void test_workers_one_rank(void) {
    /* Named so that the workers sort before the main trace, as they do on disk. */
    write_proc("app-10.tprof", &(proc_spec){10, 9, 10, 0, -1, JOB, 100, 4, 2});
    write_proc("app-10.12.tprof", &(proc_spec){12, 10, 10, 0, -1, JOB, 300, 3, 1});
    write_proc("app-10.11.tprof", &(proc_spec){11, 10, 10, 0, -1, JOB, 200, 3, 0});
    tp_load_result res;
    for (int given_dir = 0; given_dir < 2; given_dir++) {
        tp_model *m = load(given_dir ? "" : "app-10.tprof", &res);
        CHECK(m != NULL);
        CHECK_EQ_U(m->n_ranks, 1);
        CHECK_STR(res.notes, "");
        const tp_rank *r = &m->ranks[0];
        CHECK_EQ_I(r->rank, 0);
        CHECK(strstr(r->file, "app-10.tprof") != NULL);
        CHECK_EQ_U(r->n_procs, 3);
        CHECK_EQ_I(r->procs[0].pid, 10);
        CHECK_EQ_I(r->procs[0].role, TP_PROC_MAIN);
        CHECK_EQ_I(r->procs[0].parent, -1);
        CHECK_EQ_I(r->procs[1].pid, 11); /* started first */
        CHECK_EQ_I(r->procs[2].pid, 12);
        for (int k = 1; k < 3; k++) {
            CHECK_EQ_I(r->procs[k].role, TP_PROC_WORKER);
            CHECK_EQ_I(r->procs[k].parent, 0);
        }
        CHECK_EQ_U(r->procs[0].n_events, 4 + 2 * 2);
        CHECK_EQ_U(r->procs[1].n_events, 3);
        CHECK_EQ_U(r->procs[2].n_events, 3 + 1 * 2);
        CHECK_EQ_U(r->ev.n, 4 + 4 + 3 + 3 + 2);
        CHECK_STR(tp_rank_thread_name(m, r, 11, 11), "app-10.11.tprof");
        /* Correlation 1 of the main and of worker 12 are two launches, not one. */
        const uint32_t *rows;
        CHECK_EQ_U(tp_rank_corr_rows(r, 1, &rows), 2);
        int64_t w12 = r->procs[2].corr_offset;
        CHECK(w12 != 0);
        CHECK_EQ_U(tp_rank_corr_rows(r, w12 + 1, &rows), 2);
        CHECK_EQ_U(tp_rank_corr_rows(r, w12 + 2, &rows), 0);
        tp_model_close(m);
    }
}

static void test_exec_images(void) {
    write_proc("sh-20.tprof", &(proc_spec){20, 19, 20, 0, -1, JOB, 100, 1, 0});
    write_proc("sh-20.exec1.tprof", &(proc_spec){20, 19, 20, 1, -1, JOB, 200, 1, 0});
    write_proc("sh-20.21.tprof", &(proc_spec){21, 20, 20, 0, -1, JOB, 300, 1, 0});
    tp_load_result res;
    tp_model *m = load("", &res);
    CHECK_EQ_U(m->n_ranks, 1);
    const tp_rank *r = &m->ranks[0];
    CHECK_EQ_U(r->n_procs, 3);
    CHECK_EQ_I(r->procs[0].pid, 20);
    CHECK_EQ_U(r->procs[0].exec_gen, 0);
    CHECK_EQ_I(r->procs[1].pid, 20);
    CHECK_EQ_U(r->procs[1].exec_gen, 1);
    CHECK_EQ_I(r->procs[1].parent, 0);
    CHECK_EQ_I(r->procs[1].role, TP_PROC_MAIN); /* an exec'd image keeps its role */
    CHECK_EQ_I(r->procs[2].pid, 21);
    CHECK_EQ_I(r->procs[2].parent, 1); /* forked by the image running at the time */
    CHECK_EQ_I(r->procs[2].role, TP_PROC_WORKER);
    tp_model_close(m);
}

static void test_ranks_only_where_known(void) {
    /* a launcher (no rank) starts ranks 0 and 1; each starts a worker, the one of rank 1
     * without RANK in its environment */
    write_proc("run-5.tprof", &(proc_spec){5, 4, 5, 0, -1, JOB, 100, 0, 0});
    write_proc("run-5.6.tprof", &(proc_spec){6, 5, 5, 0, 0, JOB, 200, 1, 0});
    write_proc("run-5.7.tprof", &(proc_spec){7, 5, 5, 0, 1, JOB, 210, 1, 0});
    write_proc("run-5.8.tprof", &(proc_spec){8, 6, 5, 0, 0, JOB, 300, 1, 0});
    write_proc("run-5.9.tprof", &(proc_spec){9, 7, 5, 0, -1, JOB, 310, 1, 0});
    /* another recording in the same folder, rank 1 as well: a rank already taken */
    write_proc("zz-other-5.tprof", &(proc_spec){5, 4, 5, 0, 1, JOB + 1, 100, 1, 0});
    tp_load_result res;
    tp_model *m = load("", &res);
    CHECK_EQ_U(m->n_ranks, 3);
    const tp_rank *r0 = tp_model_rank(m, 0), *r1 = tp_model_rank(m, 1), *r2 = tp_model_rank(m, 2);
    CHECK(r0 && r1 && r2);
    CHECK_EQ_U(r0->n_procs, 3); /* launcher, rank 0, its worker */
    CHECK_EQ_I(r0->procs[0].pid, 5);
    CHECK_EQ_I(r0->procs[1].pid, 6);
    CHECK_EQ_I(r0->procs[2].pid, 8);
    CHECK_EQ_I(r0->procs[2].parent, 1);
    /* the rankless launcher above the ranks, the rank's own process its main, its child a
     * worker; rank 1 holds no launcher */
    CHECK_EQ_I(r0->procs[0].role, TP_PROC_LAUNCHER);
    CHECK_EQ_I(r0->procs[1].role, TP_PROC_MAIN);
    CHECK_EQ_I(r0->procs[2].role, TP_PROC_WORKER);
    CHECK_STR(tp_proc_role_name(TP_PROC_LAUNCHER), "launcher");
    CHECK_EQ_U(r1->n_procs, 2);
    CHECK_EQ_I(r1->procs[0].pid, 7);
    CHECK_EQ_I(r1->procs[0].role, TP_PROC_MAIN); /* the root within its rank */
    CHECK_EQ_I(r1->procs[1].pid, 9);
    CHECK_EQ_U(r2->n_procs, 1);
    CHECK(strstr(r2->file, "zz-other-5.tprof") != NULL);
    CHECK(strstr(res.notes, "zz-other-5.tprof: rank missing or already taken; using rank 2") !=
          NULL);
    tp_model_close(m);
}

static void test_older_traces_by_tree(void) {
    /* no job ids: the worker joins the process whose pid is its ppid and which started
     * before it; pid 30 of an earlier run (started later than nothing here) stays apart */
    write_proc("a-30.tprof", &(proc_spec){30, 1, 0, 0, -1, 0, 1000, 1, 0});
    write_proc("b-31.tprof", &(proc_spec){31, 30, 0, 0, -1, 0, 2000, 1, 0});
    write_proc("c-40.tprof", &(proc_spec){40, 1, 0, 0, -1, 0, 1500, 1, 0});
    tp_load_result res;
    tp_model *m = load("", &res);
    CHECK_EQ_U(m->n_ranks, 2);
    const tp_rank *a = tp_model_rank(m, 0), *c = tp_model_rank(m, 1);
    CHECK(a && c);
    CHECK_EQ_U(a->n_procs, 2);
    CHECK_EQ_I(a->procs[0].pid, 30);
    CHECK_EQ_I(a->procs[1].pid, 31);
    CHECK_EQ_I(a->procs[1].role, TP_PROC_WORKER);
    CHECK_EQ_U(c->n_procs, 1);
    CHECK_EQ_I(c->procs[0].pid, 40);
    tp_model_close(m);
}

static void test_other_recording_left_out(void) {
    write_proc("job.tprof", &(proc_spec){50, 49, 50, 0, -1, JOB, 100, 1, 0});
    write_proc("job.51.tprof", &(proc_spec){51, 50, 50, 0, -1, JOB, 200, 1, 0});
    write_proc("job.52.tprof", &(proc_spec){52, 50, 50, 0, -1, JOB + 7, 200, 1, 0});
    write_proc("jobx.tprof", &(proc_spec){60, 1, 60, 0, -1, JOB + 9, 200, 1, 0}); /* no match */
    tp_load_result res;
    tp_model *m = load("job.tprof", &res);
    CHECK_EQ_U(m->n_ranks, 1);
    CHECK_EQ_U(m->ranks[0].n_procs, 2);
    CHECK_EQ_I(m->ranks[0].procs[1].pid, 51);
    CHECK(strstr(res.notes, "job.52.tprof: left out: not of the same recording as") != NULL);
    CHECK_EQ_U(res.n_files, 2);
    tp_model_close(m);
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/tp-test-job-XXXXXX");
    if (!mkdtemp(dir))
        return 1;
    void (*tests[])(void) = {test_workers_one_rank, test_exec_images, test_ranks_only_where_known,
                             test_older_traces_by_tree, test_other_recording_left_out};
    const char *names[] = {"test_workers_one_rank", "test_exec_images",
                           "test_ranks_only_where_known", "test_older_traces_by_tree",
                           "test_other_recording_left_out"};
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        int before = tp_test_failures;
        tp_test_count++;
        tests[i]();
        clean(); /* also after a failed case, so the next one starts from an empty folder */
        printf("%s %s\n", tp_test_failures == before ? "ok  " : "FAIL", names[i]);
    }
    rmdir(dir);
    return tp_test_summary();
}
