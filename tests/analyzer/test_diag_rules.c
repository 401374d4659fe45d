/* test_diag_rules: the rule table (tp_diag_rules.h) is well formed, and the findings follow
 * it: every id once, every rule with a function and a description, the tie orders 0..N-1
 * each once (also a static_assert in tp_diagnose.c), and equal severities sorted by order. */
#include "tp_diagnose.h"

#include <math.h>

#include "tp_an_fixture.h"
#include "tp_an_ranks.h"
#include "tp_test.h"

static void test_table(void) {
    const tp_diag_rule *r;
    size_t n = tp_diagnose_rules(&r);
    CHECK_EQ_U(n, 17);
    unsigned seen = 0;
    for (size_t i = 0; i < n; i++) {
        CHECK(r[i].id && r[i].id[0]);
        CHECK(r[i].run != NULL);
        CHECK(r[i].description && strlen(r[i].description) > 10);
        CHECK(r[i].order < n);
        CHECK(!(seen & (1u << r[i].order)));
        seen |= 1u << r[i].order;
        for (size_t j = 0; j < i; j++)
            CHECK(strcmp(r[i].id, r[j].id) != 0);
    }
}

/* The cross-rank table (tp_diag_rank_rules.h): its rules, ids unique across both tables. */
static void test_rank_table(void) {
    const tp_an_rank_rule *r;
    const tp_diag_rule *d;
    size_t n = tp_an_ranks_rules(&r), nd = tp_diagnose_rules(&d);
    CHECK_EQ_U(n, 5);
    CHECK_STR(r[2].id, "memory-imbalance");
    CHECK_STR(r[3].id, "input-straggler");
    CHECK_STR(r[4].id, "cpu-oversubscribed");
    for (size_t i = 0; i < n; i++) {
        CHECK(r[i].id && r[i].id[0] && r[i].run != NULL);
        CHECK(r[i].description && strlen(r[i].description) > 10);
        for (size_t j = 0; j < i; j++)
            CHECK(strcmp(r[i].id, r[j].id) != 0);
        for (size_t j = 0; j < nd; j++)
            CHECK(strcmp(r[i].id, d[j].id) != 0);
    }
}

static tp_an_rank_row row(int rank, int64_t peak) {
    tp_an_rank_row r = {0};
    r.rank = rank, r.n_steps = 4, r.step_p50_ns = r.step_p90_ns = 1e6;
    r.span_ns = r.busy_ns = r.compute_ns = 4000000;
    r.mem_peak_bytes = peak;
    r.host_wait_ns = -1; /* not sampled */
    r.cpu_demand = NAN;
    return r;
}

/* Ranks without a device, sampled: 10 steps of 10 ms each; ranks 0 and 2 wait 6 and 5.5 ms of
 * each off a CPU, rank 1 never: straggler (its own work 10 ms, 2.22x the median 4.5 ms) and
 * collective-wait (ranks 0 and 2 wait for it) name rank 1, with the sampled waits' words. A
 * rank among them whose waits were not sampled has no own work (not a straggler); without any
 * sampled waits every step is the rank's own, and equal steps name nobody. */
/* cpu-oversubscribed from rows alone: ranks 0 and 1 on machine "a" (2 cores, all theirs)
 * want 1.5 + 1.2 CPUs: a finding naming rank 0 (the most), severity 0.7 / 2.7; machine "b"'s
 * two ranks want 2 of its 8; one rank alone on "c" wants 5 of 2 (its own cpu-contention's
 * case); "d"'s ranks are bound to 2 of its 4 cores each; rank 8 on "a" was not sampled. */
static void test_rank_cpu_oversubscribed(void) {
    static const struct {
        const char *host;
        int64_t cores;
        double cpus, demand;
    } rows[] = {{"a", 2, 2, 1.5}, {"a", 2, 2, 1.2}, {"b", 8, 8, 1}, {"b", 8, 8, 1},
                {"c", 2, 2, 5},   {"d", 4, 2, 3},   {"d", 4, 2, 3}, {"a", 2, 2, NAN}};
    tp_an_ranks x = {0};
    for (int k = 0; k < 8; k++) {
        tp_an_rank_row r = row(k, -1);
        snprintf(r.host, sizeof r.host, "%s", rows[k].host);
        r.cores = rows[k].cores, r.cpus = rows[k].cpus, r.cpu_demand = rows[k].demand;
        tp_an_ranks_add(&x, &r);
    }
    tp_an_ranks_judge(&x);
    CHECK_EQ_U(x.n_findings, 1);
    CHECK_STR(x.f[0].id, "cpu-oversubscribed");
    CHECK_EQ_I(x.f[0].rank, 0);
    CHECK(fabs(x.f[0].severity - 0.7 / 2.7) < 1e-9);
    CHECK_STR(x.f[0].title, "cpu-oversubscribed: the 2 ranks on a want 2.7 CPUs at a time, on 2 "
                            "cores");
    CHECK(strstr(x.f[0].evidence, "ranks 0, 1 on a: ") &&
          strstr(x.f[0].evidence, "running 1.5, 1.2 at a time"));
    tp_an_ranks_free(&x);
}

static void test_rank_host_waits(void) {
    const int64_t waits[] = {60000000, 0, 55000000, -1};
    for (int unsampled = 0; unsampled < 3; unsampled++) {
        tp_an_ranks x = {0};
        for (int k = 0; k < 3 + (unsampled == 1); k++) {
            tp_an_rank_row r = row(k, -1);
            r.n_steps = 10, r.step_p50_ns = r.step_p90_ns = 10e6;
            r.span_ns = r.busy_ns = r.compute_ns = 0;
            r.host_wait_ns = unsampled == 2 ? -1 : waits[k];
            tp_an_ranks_add(&x, &r);
        }
        tp_an_ranks_judge(&x);
        if (unsampled == 2) {
            CHECK_EQ_U(x.n_findings, 0);
            tp_an_ranks_free(&x);
            continue;
        }
        CHECK(fabs(x.median_own_p50_ns - 4.5e6) < 1e-6);
        CHECK_EQ_U(x.n_findings, 2);
        const tp_an_rank_finding *wait = NULL, *strag = NULL;
        for (size_t i = 0; i < x.n_findings; i++) {
            if (!strcmp(x.f[i].id, "collective-wait"))
                wait = &x.f[i];
            if (!strcmp(x.f[i].id, "straggler"))
                strag = &x.f[i];
        }
        CHECK(strag && strag->rank == 1 && fabs(strag->severity - 0.55) < 1e-9);
        CHECK(strag && strstr(strag->title, "2.22x"));
        CHECK(strag && strstr(strag->evidence, "outside its waits (its step thread sampled off a "
                                               "CPU"));
        CHECK(wait && wait->rank == 1 && fabs(wait->severity - 0.6) < 1e-9);
        CHECK(wait && strstr(wait->title, "ranks 0, 2 wait in collectives for rank 1"));
        CHECK(wait && strstr(wait->evidence, "no device: the step threads' time off a CPU"));
        CHECK(isnan(x.r[3 % x.n].own_p50_ns) == (unsampled == 1));
        tp_an_ranks_free(&x);
    }
}

/* memory-imbalance from rows alone: 1.21x the median fires, 1.19x does not, a rank without
 * memory events takes no part (nor in the median); rows come out by rank; judging again
 * replaces the findings. */
static void test_rank_memory(void) {
    const int64_t mib = 1 << 20;
    tp_an_ranks x = {0};
    int64_t peaks[] = {121 * mib, 100 * mib, -1, 119 * mib, 100 * mib, 100 * mib};
    int ranks[] = {5, 0, 3, 1, 2, 4};
    for (size_t i = 0; i < 6; i++) {
        tp_an_rank_row r = row(ranks[i], peaks[i]);
        tp_an_ranks_add(&x, &r);
    }
    CHECK_EQ_I((int)tp_an_ranks_find(&x, 3), 2);
    CHECK_EQ_I((int)tp_an_ranks_find(&x, 7), -1);
    for (int pass = 0; pass < 2; pass++) {
        tp_an_ranks_judge(&x);
        CHECK_EQ_U(x.n, 6);
        for (size_t i = 0; i < x.n; i++)
            CHECK_EQ_I(x.r[i].rank, (int)i);
        CHECK(fabs(x.median_mem_peak - 100.0 * mib) < 1);
        CHECK(fabs(x.median_own_p50_ns - 1e6) < 1e-6);
        CHECK_EQ_U(x.n_findings, 1);
        CHECK_STR(x.f[0].id, "memory-imbalance");
        CHECK_EQ_I(x.f[0].rank, 5);
        CHECK(fabs(x.f[0].severity - 21.0 / 121) < 1e-9);
        CHECK(strstr(x.f[0].title, "rank 5") && strstr(x.f[0].title, "1.21x"));
        CHECK(strstr(x.f[0].evidence, "over 5 ranks with memory events"));
    }
    tp_an_ranks_free(&x);
}

/* The order of the rule with `id`. */
static unsigned order_of(const char *id) {
    const tp_diag_rule *r;
    size_t n = tp_diagnose_rules(&r);
    for (size_t i = 0; i < n; i++)
        if (strcmp(r[i].id, id) == 0)
            return r[i].order;
    return (unsigned)n;
}

static void alloc_fail(fx_model *f, int64_t ts) {
    tp_memev_row row = {0};
    row.ts = ts;
    row.kind = TP_MEMEV_ALLOC_FAIL;
    row.bytes = 1 << 20;
    row.device = 0;
    tp_memev_push(&f->r->mem, &row);
}

/* An oom (severity 1) and findings of other rules: equal severities come out by order, and
 * every finding's id is a rule's. */
static void test_ties(void) {
    fx_model f = fx_new();
    for (int s = 0; s < 3; s++) { /* input-bound, as in test_diagnose */
        double t = 1000.0 * s;
        fx_ev(&f, "step", TP_CAT_USER_ANNOTATION, t, 1000, -1, -1);
        fx_ev(&f, "dataloader wait", TP_CAT_USER_ANNOTATION, t, 600, -1, -1);
        fx_launch(&f, "conv_fwd", t + 600, 10, t + 610, 390, 1, s + 1);
    }
    alloc_fail(&f, 5000);
    tp_model_finish(f.m);
    tp_an_view v;
    tp_an_view_build(&v, f.m, &f.m->ranks[0], NULL);
    tp_diagnosis d;
    tp_diagnose_run(&v, &d);
    CHECK_EQ_U(d.n, 2);
    CHECK_STR(d.f[0].id, "oom");
    CHECK_STR(d.f[1].id, "input-bound");
    for (size_t i = 0; i < d.n; i++) {
        CHECK(order_of(d.f[i].id) < 10);
        CHECK(i == 0 || d.f[i].severity < d.f[i - 1].severity ||
              order_of(d.f[i].id) > order_of(d.f[i - 1].id));
    }
    tp_diagnose_free(&d);
    tp_an_view_free(&v);
    tp_model_close(f.m);
}

int main(void) {
    TP_RUN(test_table);
    TP_RUN(test_rank_table);
    TP_RUN(test_rank_memory);
    TP_RUN(test_rank_host_waits);
    TP_RUN(test_rank_cpu_oversubscribed);
    TP_RUN(test_ties);
    return tp_test_summary();
}
