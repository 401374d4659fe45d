/* tp_folded: folded stacks of a model (see the header). Each rank: the weighed events as
 * (stack, leaf name, ns) samples, summed per (stack, leaf), then written as text lines,
 * summed again per line (two stacks can read the same once symbolized) and sorted. */
#include "tp_folded.h"

#include <stdlib.h>
#include <string.h>

#include "tp_an_frames.h"
#include "tp_an_stacks.h"
#include "tp_an_stats.h"
#include "tp_mem.h"

typedef struct {
    uint32_t stack, leaf; /* stack id, leaf name id */
    int64_t ns;
} sample;

typedef struct {
    char *text;
    int64_t ns;
    uint64_t n;
} line;

/* Whether view row i weighs under a weight, and its stack (0: it does not). */
typedef uint32_t (*pick_fn)(const tp_an_view *v, size_t i);

static uint32_t pick_gpu(const tp_an_view *v, size_t i) {
    return tp_an_stacks_counted(v, i) ? tp_an_stacks_launch(v, i) : 0;
}

static uint32_t pick_cat(const tp_an_view *v, size_t i, int cat_a, int cat_b) {
    uint8_t c = v->r->ev.cat[tp_an_view_row(v, i)];
    return !tp_an_view_gpu(v, i) && (c == cat_a || c == cat_b)
               ? tp_ev_stack(&v->r->ev, tp_an_view_row(v, i))
               : 0;
}

static uint32_t pick_range(const tp_an_view *v, size_t i) {
    return pick_cat(v, i, TP_CAT_USER_ANNOTATION, TP_CAT_USER_ANNOTATION);
}

static uint32_t pick_cpu(const tp_an_view *v, size_t i) {
    return pick_cat(v, i, TP_CAT_CUDA_RUNTIME, TP_CAT_CUDA_DRIVER);
}

/* The samples of `r` (`record --sample`) that weigh: every one (wall) or those that found
 * the thread on a CPU, weighing their period, into s (room for r->samples.n). No leaf: the
 * innermost frame is where the thread was. */
#define NO_LEAF UINT32_MAX
static size_t take_samples(const tp_rank *r, int on_cpu_only, sample *s) {
    const tp_samples *sa = &r->samples;
    size_t n = 0;
    for (size_t i = 0; i < sa->n; i++)
        if (sa->stack[i] && ((sa->flags[i] & TP_SAMPLE_F_ON_CPU) || !on_cpu_only) &&
            sa->period_ns[i] < (uint64_t)INT64_MAX / 4)
            s[n++] = (sample){sa->stack[i], NO_LEAF, (int64_t)sa->period_ns[i]};
    return n;
}

static const struct {
    const char *name;
    pick_fn pick; /* a weight of the view's rows, or */
    int samples;  /* 1: on-CPU samples, 2: every sample (their period) */
} weights[] = {{"gpu", pick_gpu, 0},
               {"range", pick_range, 0},
               {"cpu", pick_cpu, 0},
               {"samples", NULL, 1},
               {"samples-wall", NULL, 2}};
#define N_WEIGHTS (int)(sizeof weights / sizeof weights[0])

const char *tp_folded_weight_name(int i) {
    return i >= 0 && i < N_WEIGHTS ? weights[i].name : NULL;
}

static int cmp_sample(const void *a, const void *b) {
    const sample *x = a, *y = b;
    if (x->stack != y->stack)
        return x->stack < y->stack ? -1 : 1;
    return (x->leaf > y->leaf) - (x->leaf < y->leaf);
}

static int cmp_line(const void *a, const void *b) {
    return strcmp(((const line *)a)->text, ((const line *)b)->text);
}

/* Appends `s` to the growing text, ';' as ':' and control bytes as '?' (they would end or
 * split the line). */
static void put(char **t, size_t *len, size_t *cap, const char *s) {
    size_t n = strlen(s);
    TP_MEM_XGROW(*t, *cap, *len + n + 2);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        (*t)[(*len)++] = c == ';' ? ':' : c < 0x20 || c == 0x7f ? '?' : (char)c;
    }
    (*t)[*len] = 0;
}

/* Appends the frame separator, which put would escape. */
static void sep(char **t, size_t *len, size_t *cap) {
    TP_MEM_XGROW(*t, *cap, *len + 2);
    (*t)[(*len)++] = ';';
    (*t)[*len] = 0;
}

/* "rank N;root;...;innermost;leaf" of one (stack, leaf). */
static char *line_text(tp_an_frames *fx, const tp_model *m, const tp_rank *r, const sample *s) {
    const tp_an_frame *f = NULL;
    size_t n = tp_an_frames_get(fx, s->stack, &f), len = 0, cap = 0;
    char *t = NULL, buf[1024];
    if (m->n_ranks > 1) {
        snprintf(buf, sizeof buf, "rank %d", r->rank);
        put(&t, &len, &cap, buf);
    }
    for (size_t k = n; k-- > 0;) {
        if (len)
            sep(&t, &len, &cap);
        put(&t, &len, &cap, tp_an_frame_label(&f[k], buf, sizeof buf));
    }
    if (s->leaf == NO_LEAF)
        return t ? t : tp_mem_xcalloc(1, 1);
    if (len)
        sep(&t, &len, &cap);
    const char *leaf = tp_model_str(m, s->leaf);
    put(&t, &len, &cap, leaf[0] ? leaf : "?");
    return t;
}

/* The samples of rank `r` under weight `w`, summed per (stack, leaf), as text lines. */
static size_t rank_lines(const tp_model *m, const tp_rank *r, const tp_folded_opts *o, int w,
                         line **out, size_t *cap_out, size_t n_out) {
    tp_an_opts ao;
    tp_an_opts_init(&ao);
    ao.no_symbols = o->no_symbols;
    tp_an_view v = {0};
    sample *s;
    size_t n = 0;
    if (weights[w].samples) {
        s = tp_mem_xalloc(r->samples.n + 1, sizeof *s);
        n = take_samples(r, weights[w].samples == 1, s);
    } else {
        tp_an_view_build(&v, m, r, &ao);
        s = tp_mem_xalloc(v.n + 1, sizeof *s);
        for (size_t i = 0; i < v.n; i++) {
            uint32_t stack = weights[w].pick(&v, i);
            if (stack)
                s[n++] = (sample){stack, r->ev.name[tp_an_view_row(&v, i)], tp_an_view_dur(&v, i)};
        }
    }
    qsort(s, n, sizeof *s, cmp_sample);
    tp_an_frames *fx = tp_an_frames_open(m, r, o->no_symbols, 0);
    for (size_t i = 0, j; i < n; i = j) {
        line l = {NULL, 0, 0};
        for (j = i; j < n && !cmp_sample(&s[i], &s[j]); j++)
            l.ns = tp_an_add(l.ns, s[j].ns), l.n++;
        l.text = line_text(fx, m, r, &s[i]);
        TP_MEM_XGROW(*out, *cap_out, n_out + 1);
        (*out)[n_out++] = l;
    }
    tp_an_frames_close(fx);
    free(s);
    if (!weights[w].samples)
        tp_an_view_free(&v);
    return n_out;
}

tp_status tp_folded_write(FILE *out, const tp_model *m, const tp_folded_opts *o,
                          tp_folded_stats *st) {
    tp_folded_stats z = {0, 0, 0};
    const char *wname = o && o->weight ? o->weight : "gpu";
    int w = 0;
    while (w < N_WEIGHTS && strcmp(weights[w].name, wname))
        w++;
    if (!out || !m || !o || w == N_WEIGHTS)
        return TP_ERR_ARG;
    line *lines = NULL;
    size_t n = 0, cap = 0;
    for (size_t r = 0; r < m->n_ranks; r++)
        n = rank_lines(m, &m->ranks[r], o, w, &lines, &cap, n);
    if (n)
        qsort(lines, n, sizeof *lines, cmp_line);
    for (size_t i = 0, j; i < n; i = j) {
        int64_t ns = lines[i].ns;
        uint64_t k = lines[i].n;
        for (j = i + 1; j < n && !strcmp(lines[i].text, lines[j].text); j++)
            ns = tp_an_add(ns, lines[j].ns), k += lines[j].n;
        if (ns <= 0)
            continue; /* flamegraph.pl takes positive counts only */
        fprintf(out, "%s %lld\n", lines[i].text, (long long)ns);
        z.lines++, z.samples += k, z.total_ns = tp_an_add(z.total_ns, ns);
    }
    for (size_t i = 0; i < n; i++)
        free(lines[i].text);
    free(lines);
    if (st)
        *st = z;
    return ferror(out) ? TP_ERR_IO : TP_OK;
}
