/* tp_report_samples: CPU time by line in the report (see the header). */
#include "tp_report_samples.h"

#include <stdlib.h>
#include <string.h>

#include "tp_an_host.h"
#include "tp_an_samples.h"
#include "tp_report_fmt.h"
#include "tp_report_stacks.h"
#include "tp_text.h"
#include "tp_units.h"

#define INDENT 50 /* where a row's frames start: after "  #  CPU time  share  wall  samples  " */
#define WAIT_ROWS 5

static void text_frames(FILE *f, const tp_an_sample_row *s) {
    char label[1024], gap[64];
    for (size_t k = 0; k < s->n_frames; k++) {
        if (k && s->frames[k].skipped)
            fprintf(f, "%*s%s\n", INDENT, "", tp_an_frame_gap(&s->frames[k], gap, sizeof gap));
        if (k)
            fprintf(f, "%*s", INDENT, "");
        tp_text_fputs(tp_an_frame_label(&s->frames[k], label, sizeof label), f);
        fputc('\n', f);
    }
    if (!s->n_frames)
        fputc('\n', f);
}

static void text_row(FILE *f, const char *num, const tp_an_sample_row *s, int64_t of, int wait) {
    char tb[32], pb[32], wb[32];
    int64_t v = wait ? s->wall_ns - s->cpu_ns : s->cpu_ns;
    fprintf(f, "  %3s %s %8s %s %7zu  ", num, tp_rf_time(tb, sizeof tb, (double)v),
            tp_rf_pct_str(pb, sizeof pb, tp_rf_pct(v, of)),
            tp_rf_time(wb, sizeof wb, (double)s->wall_ns), s->samples);
    text_frames(f, s);
}

/* A thread's line of the threads table; a native thread's GIL column is "-" (it runs no
 * Python code). */
static void text_thread(FILE *f, const tp_an_sample_thread *t, int native) {
    char who[96], nb[64], tb[32], wb[32], pb[32], cb[32], gb[32];
    snprintf(who, sizeof who, "%lld/%lld %s", (long long)t->pid, (long long)t->tid,
             tp_rf_clip(nb, sizeof nb, t->name, 16));
    fprintf(f, "  ");
    tp_text_fputs(who, f);
    fprintf(
        f, "%*s %12s %12s %12s %8s %8s %8zu\n", (int)(strlen(who) < 28 ? 28 - strlen(who) : 0), "",
        tp_rf_time(cb, sizeof cb, (double)t->clock_ns),
        tp_rf_time(tb, sizeof tb, (double)t->cpu_ns), tp_rf_time(wb, sizeof wb, (double)t->wall_ns),
        tp_rf_pct_str(pb, sizeof pb, tp_rf_pct(t->clock_ns, t->wall_ns)),
        native ? "-" : tp_rf_pct_str(gb, sizeof gb, tp_rf_pct(t->gil_ns, t->wall_ns)), t->samples);
}

/* The native threads (not the interpreter's): their CPU in all, then those that used any. */
static void text_native(FILE *f, const tp_an_samples *sa, size_t top) {
    if (!sa->n_native)
        return;
    char cb[32], ob[32], pb[32];
    size_t busy = sa->n_native_busy;
    fprintf(f,
            "  " TP_RF_NATIVE_THREADS ": %zu, %zu of them used a CPU; CPU clock %s (%s of the "
            "Python threads'), on CPU %s\n",
            sa->n_native, busy, tp_units_dur(cb, sizeof cb, (double)sa->native_clock_ns),
            tp_rf_pct_str(pb, sizeof pb, tp_rf_pct(sa->native_clock_ns, sa->clock_ns)),
            tp_units_dur(ob, sizeof ob, (double)sa->native_cpu_ns));
    size_t shown = 0;
    for (size_t i = 0; i < sa->n_native && shown < top; i++)
        if (sa->nt[i].clock_ns > 0) /* as n_native_busy counts them */
            text_thread(f, &sa->nt[i], 1), shown++;
    if (busy > shown)
        fprintf(f, "  ... %zu more native threads that used a CPU\n", busy - shown);
}

static int cmp_wait(const void *a, const void *b) {
    const tp_an_sample_row *x = *(const tp_an_sample_row *const *)a,
                           *y = *(const tp_an_sample_row *const *)b;
    int64_t wx = x->wall_ns - x->cpu_ns, wy = y->wall_ns - y->cpu_ns;
    if (wx != wy)
        return wx < wy ? 1 : -1;
    return (x->stack > y->stack) - (x->stack < y->stack);
}

/* The steps' part of the samples (from the first step's start to the last one's end) into
 * *in, when the rank has two steps or more; 0 otherwise (nothing to free). */
static int in_steps(const tp_rank_analysis *rr, const tp_report_opts *o, tp_an_samples *in) {
    const tp_an_host *h = &rr->host;
    if (h->n_steps < 2 || h->w1 <= h->w0)
        return 0;
    tp_an_samples_run_between(&rr->v, o->an.stack_depth, h->w0, h->w1, in);
    return 1;
}

#define STEP_ROWS 5

/* Text: the steps' rows, when a fifth of the on-CPU time or more lies outside them (start-up,
 * imports, compilation, evaluation): what the training loop itself spends its CPU on. */
static void text_in_steps(FILE *f, const tp_rank_analysis *rr, const tp_report_opts *o,
                          const tp_an_samples *all) {
    tp_an_samples in;
    if (!in_steps(rr, o, &in))
        return;
    if (in.samples && tp_rf_pct(all->cpu_ns - in.cpu_ns, all->cpu_ns) >= 20) {
        char pb[32];
        fprintf(f,
                "  in the steps only (%zu steps, from the first start to the last end: %s of "
                "the on-CPU time above; the rest is start-up, imports, compilation, "
                "evaluation):\n",
                rr->host.n_steps, tp_rf_pct_str(pb, sizeof pb, tp_rf_pct(in.cpu_ns, all->cpu_ns)));
        fprintf(f, "  %3s %12s %8s %12s %7s  %s\n", "#", "on CPU", "share", "wall", "samples",
                "stack");
        size_t top = (size_t)(o->top > 0 && o->top < STEP_ROWS ? o->top : STEP_ROWS);
        for (size_t i = 0; i < in.n && i < top; i++) {
            char num[24];
            snprintf(num, sizeof num, "s%zu", i + 1);
            text_row(f, num, &in.s[i], in.cpu_ns, 0);
        }
    }
    tp_an_samples_free(&in);
}

void tp_report_samples_text(FILE *f, const tp_rank_analysis *rr, const tp_report_opts *o) {
    if (!rr->v.r->samples.n)
        return;
    tp_an_samples sa;
    tp_an_samples_run(&rr->v, o->an.stack_depth, 0, 0, &sa);
    if (!sa.samples) {
        tp_an_samples_free(&sa);
        return;
    }
    char tb[32];
    size_t top = (size_t)(o->top > 0 ? o->top : 10);
    fprintf(f,
            "CPU time by line, sampled (%zu samples of %zu threads, %lld a second; on CPU: the "
            "periods whose sample found the thread running or ready to run, CPU clock: what it "
            "got; up to %d frames)\n",
            sa.samples, sa.n_threads, (long long)sa.hz, sa.depth);
    fprintf(f, "  %-28s %12s %12s %12s %8s %8s %8s\n", "thread", "CPU clock", "on CPU", "wall",
            "busy", "GIL", "samples");
    for (size_t i = 0; i < sa.n_threads && i < top; i++)
        text_thread(f, &sa.t[i], 0);
    if (sa.n_threads > top)
        fprintf(f, "  ... %zu more threads\n", sa.n_threads - top);
    text_native(f, &sa, top);
    fprintf(f, "  %3s %12s %8s %12s %7s  %s\n", "#", "on CPU", "share", "wall", "samples",
            "stack: the call, then your line and its callers");
    for (size_t i = 0; i < sa.n && i < top; i++) {
        char num[24];
        snprintf(num, sizeof num, "%zu", i + 1);
        text_row(f, num, &sa.s[i], sa.cpu_ns, 0);
    }
    if (sa.n > top)
        fprintf(f, "  ... %zu more stacks (trainprof report --top N, or --format json)\n",
                sa.n - top);
    if (sa.no_stack)
        fprintf(f, "  without Python frames: %zu samples, %s on CPU\n", sa.no_stack,
                tp_units_dur(tb, sizeof tb, (double)sa.no_stack_cpu_ns));
    /* Where the threads waited: wall time off a CPU, when it is a tenth of the sampled wall */
    int64_t waited = sa.wall_ns - sa.cpu_ns;
    if (sa.n && waited >= sa.wall_ns / 10) {
        const tp_an_sample_row **w = malloc(sa.n * sizeof *w);
        for (size_t i = 0; i < sa.n; i++)
            w[i] = &sa.s[i];
        qsort(w, sa.n, sizeof *w, cmp_wait);
        fprintf(f, "  waiting (wall time off a CPU: locks, I/O, sleeps, queues, the GPU):\n");
        fprintf(f, "  %3s %12s %8s %12s %7s\n", "#", "waited", "share", "wall", "samples");
        /* rows that waited a twentieth of the whole at least */
        for (size_t i = 0; i < sa.n && i < WAIT_ROWS && w[i]->wall_ns - w[i]->cpu_ns >= waited / 20;
             i++) {
            char num[24];
            snprintf(num, sizeof num, "w%zu", i + 1);
            text_row(f, num, w[i], waited, 1);
        }
        free(w);
    }
    text_in_steps(f, rr, o, &sa);
    fprintf(f, "\n");
    tp_an_samples_free(&sa);
}

static void json_threads(yajl_gen g, const char *key, const tp_an_sample_thread *t, size_t n,
                         int native) {
    tp_rj_str(g, key);
    yajl_gen_array_open(g);
    for (size_t i = 0; i < n; i++) {
        yajl_gen_map_open(g);
        tp_rj_int(g, "pid", t[i].pid);
        tp_rj_int(g, "tid", t[i].tid);
        tp_rj_kv(g, "name", t[i].name);
        tp_rj_int(g, "samples", (long long)t[i].samples);
        tp_rj_int(g, "cpu_ns", t[i].cpu_ns);
        tp_rj_int(g, "wall_ns", t[i].wall_ns);
        tp_rj_int(g, "clock_ns", t[i].clock_ns);
        if (!native)
            tp_rj_int(g, "gil_ns", t[i].gil_ns);
        yajl_gen_map_close(g);
    }
    yajl_gen_array_close(g);
}

static void json_rows(yajl_gen g, const tp_an_samples *sa) {
    tp_rj_str(g, "stacks");
    yajl_gen_array_open(g);
    for (size_t i = 0; i < sa->n; i++) {
        const tp_an_sample_row *s = &sa->s[i];
        yajl_gen_map_open(g);
        tp_rj_int(g, "cpu_ns", s->cpu_ns);
        tp_rj_num(g, "pct", tp_rf_pct(s->cpu_ns, sa->cpu_ns));
        tp_rj_int(g, "wall_ns", s->wall_ns);
        tp_rj_int(g, "samples", (long long)s->samples);
        tp_report_stacks_json_frames(g, s->stack, s->frames, s->n_frames);
        yajl_gen_map_close(g);
    }
    yajl_gen_array_close(g);
}

void tp_report_samples_json(yajl_gen g, const tp_rank_analysis *rr, const tp_report_opts *o) {
    if (!rr->v.r->samples.n)
        return;
    tp_an_samples sa;
    tp_an_samples_run(&rr->v, o->an.stack_depth, 0, 0, &sa);
    tp_rj_str(g, "cpu_samples");
    yajl_gen_map_open(g);
    tp_rj_int(g, "depth", sa.depth);
    tp_rj_int(g, "hz", sa.hz);
    tp_rj_int(g, "samples", (long long)sa.samples);
    tp_rj_int(g, "cpu_ns", sa.cpu_ns);
    tp_rj_int(g, "wall_ns", sa.wall_ns);
    tp_rj_int(g, "clock_ns", sa.clock_ns);
    tp_rj_int(g, "no_stack_samples", (long long)sa.no_stack);
    tp_rj_int(g, "no_stack_cpu_ns", sa.no_stack_cpu_ns);
    json_threads(g, "threads", sa.t, sa.n_threads, 0);
    if (sa.n_native) { /* only where recorded: the reports of earlier traces are unchanged */
        tp_rj_int(g, "native_samples", (long long)sa.native_samples);
        tp_rj_int(g, "native_cpu_ns", sa.native_cpu_ns);
        tp_rj_int(g, "native_wall_ns", sa.native_wall_ns);
        tp_rj_int(g, "native_clock_ns", sa.native_clock_ns);
        json_threads(g, "native_threads", sa.nt, sa.n_native, 1);
    }
    json_rows(g, &sa);
    tp_an_samples in;
    if (in_steps(rr, o, &in)) { /* the steps' part: what the training loop itself spends */
        tp_rj_str(g, "in_steps");
        yajl_gen_map_open(g);
        tp_rj_int(g, "steps", (long long)rr->host.n_steps);
        tp_rj_int(g, "lo_ns", rr->host.w0);
        tp_rj_int(g, "hi_ns", rr->host.w1);
        tp_rj_int(g, "samples", (long long)in.samples);
        tp_rj_int(g, "cpu_ns", in.cpu_ns);
        tp_rj_int(g, "wall_ns", in.wall_ns);
        json_rows(g, &in);
        yajl_gen_map_close(g);
        tp_an_samples_free(&in);
    }
    yajl_gen_map_close(g);
    tp_an_samples_free(&sa);
}
