/* tp_an_samples: CPU time by line from the sampler's samples (see the header). */
#include "tp_an_samples.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_an_ivset.h"
#include "tp_an_stacks.h"
#include "tp_an_stats.h"
#include "tp_mem.h"
#include "tp_units.h"

/* A distinct stack's sums, then the text its row is keyed by. */
typedef struct {
    uint32_t stack;
    size_t samples;
    int64_t cpu_ns, wall_ns;
    char *key;
    const tp_an_frame *f;
    size_t n;
    size_t row;
} stack_sum;

static int in_view(const tp_an_view *v, int64_t ts) {
    const tp_an_opts *o = &v->opts;
    return o->window_hi <= o->window_lo || (ts >= o->window_lo && ts < o->window_hi);
}

static int cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int cmp_key(const void *a, const void *b) {
    const stack_sum *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : (x->stack > y->stack) - (x->stack < y->stack);
}

static int cmp_row(const tp_an_sample_row *x, const tp_an_sample_row *y) {
    if (x->cpu_ns != y->cpu_ns)
        return x->cpu_ns < y->cpu_ns ? 1 : -1;
    return (x->stack > y->stack) - (x->stack < y->stack);
}

static int cmp_order(const void *a, const void *b, void *rows) {
    const tp_an_sample_row *r = rows;
    return cmp_row(&r[*(const size_t *)a], &r[*(const size_t *)b]);
}

static int cmp_thread(const void *a, const void *b) {
    const tp_an_sample_thread *x = a, *y = b;
    if (x->cpu_ns != y->cpu_ns)
        return x->cpu_ns < y->cpu_ns ? 1 : -1;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    return (x->tid > y->tid) - (x->tid < y->tid);
}

/* The row key of a stack: its prefix read as one line (tp_an_frames_text, the diagnosis' and
 * diff's reading of a stack). */
static void key_of(tp_an_frames *fx, int depth, stack_sum *k) {
    k->n = tp_an_frames_prefix(fx, k->stack, depth, &k->f);
    k->key = tp_an_frames_text(k->f, k->n);
}

/* Which samples a run counts: of thread (pid, tid) when tid > 0, and in [lo, hi) when
 * hi > lo, besides the view's window. */
typedef struct {
    int64_t pid, tid, lo, hi;
} which;

/* 1 when sample i counts: in the view's window, and as `w` says. */
static int counted(const tp_an_view *v, const tp_samples *sa, size_t i, const which *w) {
    return in_view(v, sa->ts[i]) &&
           (w->tid <= 0 || (sa->pid[i] == w->pid && sa->tid[i] == w->tid)) &&
           (w->hi <= w->lo || (sa->ts[i] >= w->lo && sa->ts[i] < w->hi));
}

/* The index of `stack` in the sorted ids[0..n), or n. */
static size_t find_id(const uint32_t *ids, size_t n, uint32_t stack) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ids[mid] < stack)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && ids[lo] == stack ? lo : n;
}

/* A sample's period, and the part of it charged as on-CPU time. */
static int64_t period_of(const tp_samples *sa, size_t i) {
    return (int64_t)(sa->period_ns[i] < (uint64_t)INT64_MAX / 4 ? sa->period_ns[i] : 0);
}

static int64_t gil_of(const tp_samples *sa, size_t i) {
    return sa->flags[i] & TP_SAMPLE_F_HOLDS_GIL ? period_of(sa, i) : 0;
}

static int64_t on_cpu_of(const tp_samples *sa, size_t i) {
    return sa->flags[i] & TP_SAMPLE_F_ON_CPU ? period_of(sa, i) : 0;
}

/* 1 for a native thread's sample (its state and clock; no frames) */
static int native_of(const tp_samples *sa, size_t i) {
    return (sa->flags[i] & TP_SAMPLE_F_NATIVE) != 0;
}

/* A sample's CPU clock: the thread's CPU time since its previous sample (measured). */
static int64_t clock_of(const tp_samples *sa, size_t i) {
    return (int64_t)(sa->cpu_ns[i] < (uint64_t)INT64_MAX / 4 ? sa->cpu_ns[i] : 0);
}

/* Adds a sample to thread (pid, tid) of the list *t (*n of them, room for *cap). */
static void add_thread(tp_an_sample_thread **list, size_t *n_list, size_t *cap, const tp_an_view *v,
                       int64_t pid, int64_t tid, int64_t cpu, int64_t wall, int64_t clock,
                       int64_t gil) {
    for (size_t i = *n_list; i-- > 0;) /* its samples come together: the latest thread first */
        if ((*list)[i].pid == pid && (*list)[i].tid == tid) {
            tp_an_sample_thread *t = &(*list)[i];
            t->samples++,
                t->cpu_ns = tp_an_add(t->cpu_ns, cpu), t->wall_ns = tp_an_add(t->wall_ns, wall),
                t->clock_ns = tp_an_add(t->clock_ns, clock), t->gil_ns = tp_an_add(t->gil_ns, gil);
            return;
        }
    TP_MEM_XGROW(*list, *cap, *n_list + 1);
    const char *name = tp_rank_thread_name(v->m, v->r, pid, tid);
    (*list)[(*n_list)++] =
        (tp_an_sample_thread){pid, tid, name ? name : "", 1, cpu, wall, clock, gil};
}

static void run(const tp_an_view *v, int depth, const which *w, tp_an_samples *out) {
    memset(out, 0, sizeof *out);
    out->depth = depth <= 0                      ? TP_AN_STACK_DEPTH_DEFAULT
                 : depth > TP_AN_STACK_DEPTH_MAX ? TP_AN_STACK_DEPTH_MAX
                                                 : depth;
    const tp_samples *sa = &v->r->samples;
    size_t tcap = 0, ncap = 0, m = 0;
    uint32_t *ids = tp_mem_xalloc(sa->n + 1, sizeof *ids);
    double *periods = tp_mem_xalloc(sa->n + 1, sizeof *periods);
    for (size_t i = 0; i < sa->n; i++) {
        if (!counted(v, sa, i, w))
            continue;
        int64_t cpu = on_cpu_of(sa, i), wall = period_of(sa, i);
        int64_t clock = clock_of(sa, i);
        if (native_of(sa, i)) {
            out->native_samples++, out->native_cpu_ns = tp_an_add(out->native_cpu_ns, cpu);
            out->native_wall_ns = tp_an_add(out->native_wall_ns, wall);
            out->native_clock_ns = tp_an_add(out->native_clock_ns, clock);
            add_thread(&out->nt, &out->n_native, &ncap, v, sa->pid[i], sa->tid[i], cpu, wall, clock,
                       0);
            continue;
        }
        periods[out->samples] = (double)wall;
        out->samples++, out->cpu_ns = tp_an_add(out->cpu_ns, cpu);
        out->wall_ns = tp_an_add(out->wall_ns, wall),
        out->clock_ns = tp_an_add(out->clock_ns, clock);
        add_thread(&out->t, &out->n_threads, &tcap, v, sa->pid[i], sa->tid[i], cpu, wall, clock,
                   gil_of(sa, i));
        if (sa->stack[i])
            ids[m++] = sa->stack[i];
        else
            out->no_stack++, out->no_stack_cpu_ns = tp_an_add(out->no_stack_cpu_ns, cpu),
                             out->no_stack_wall_ns = tp_an_add(out->no_stack_wall_ns, wall);
    }
    if (out->samples) {
        int64_t med = (int64_t)tp_an_percentile(periods, out->samples, 50);
        int64_t hz = med > 0 ? (1000000000 + med / 2) / med : 0;
        /* to two significant digits: the periods jitter (401 for a 400 Hz sampler) */
        int64_t unit = 1;
        while (hz / unit >= 100)
            unit *= 10;
        out->hz = (hz + unit / 2) / unit * unit;
    }
    free(periods);
    qsort(out->t, out->n_threads, sizeof *out->t, cmp_thread);
    if (out->n_native)
        qsort(out->nt, out->n_native, sizeof *out->nt, cmp_thread);
    for (size_t i = 0; i < out->n_native; i++)
        out->n_native_busy += out->nt[i].clock_ns > 0;
    /* the distinct stacks and their sums */
    qsort(ids, m, sizeof *ids, cmp_u32);
    size_t d = 0;
    for (size_t i = 0; i < m; i++)
        if (!d || ids[d - 1] != ids[i])
            ids[d++] = ids[i];
    stack_sum *ks = tp_mem_xcalloc(d + 1, sizeof *ks);
    for (size_t k = 0; k < d; k++)
        ks[k].stack = ids[k];
    for (size_t i = 0; i < sa->n; i++) {
        if (!sa->stack[i] || native_of(sa, i) || !counted(v, sa, i, w))
            continue;
        stack_sum *k = &ks[find_id(ids, d, sa->stack[i])];
        k->samples++, k->cpu_ns = tp_an_add(k->cpu_ns, on_cpu_of(sa, i));
        k->wall_ns = tp_an_add(k->wall_ns, period_of(sa, i));
    }
    /* keyed by their prefixes; equal keys are one row */
    out->fx = tp_an_frames_open(v->m, v->r, v->opts.no_symbols, 0);
    for (size_t k = 0; k < d; k++)
        key_of(out->fx, out->depth, &ks[k]);
    qsort(ks, d, sizeof *ks, cmp_key);
    tp_an_sample_row *rows = tp_mem_xcalloc(d + 1, sizeof *rows);
    size_t *group = tp_mem_xalloc(d + 1, sizeof *group), n = 0;
    for (size_t k = 0; k < d; k++) {
        if (!k || strcmp(ks[k].key, ks[k - 1].key)) /* the first of a key: its lowest id */
            rows[n++] = (tp_an_sample_row){ks[k].stack, ks[k].f, ks[k].n, 0, 0, 0};
        tp_an_sample_row *r = &rows[n - 1];
        r->samples += ks[k].samples, r->cpu_ns = tp_an_add(r->cpu_ns, ks[k].cpu_ns);
        r->wall_ns = tp_an_add(r->wall_ns, ks[k].wall_ns);
        group[k] = n - 1;
    }
    /* rows by CPU time; each stack's row through its group's place in that order */
    size_t *order = tp_mem_xalloc(n + 1, sizeof *order),
           *place = tp_mem_xalloc(n + 1, sizeof *place);
    for (size_t r = 0; r < n; r++)
        order[r] = r;
    qsort_r(order, n, sizeof *order, cmp_order, rows);
    out->s = tp_mem_xcalloc(n + 1, sizeof *out->s);
    for (size_t j = 0; j < n; j++)
        out->s[j] = rows[order[j]], place[order[j]] = j;
    out->n = n;
    out->map_stack = ids;
    out->map_row = tp_mem_xalloc(d + 1, sizeof *out->map_row);
    out->n_map = d;
    for (size_t k = 0; k < d; k++)
        out->map_row[find_id(ids, d, ks[k].stack)] = (uint32_t)place[group[k]];
    free(rows), free(group), free(order), free(place);
    for (size_t k = 0; k < d; k++)
        free(ks[k].key);
    free(ks);
}

void tp_an_samples_run(const tp_an_view *v, int depth, int64_t pid, int64_t tid,
                       tp_an_samples *out) {
    run(v, depth, &(which){pid, tid, 0, 0}, out);
}

void tp_an_samples_run_between(const tp_an_view *v, int depth, int64_t lo, int64_t hi,
                               tp_an_samples *out) {
    run(v, depth, &(which){0, 0, lo, hi > lo ? hi : lo + 1}, out);
}

/* 1 when process `pid` of the rank is a launcher (torchrun: it started the ranks and feeds
 * none of them). */
static int is_launcher(const tp_rank *r, int64_t pid) {
    for (size_t k = 0; k < r->n_procs; k++)
        if (r->procs[k].pid == pid && r->procs[k].role == TP_PROC_LAUNCHER)
            return 1;
    return 0;
}

/* The processes other than `pid` that count: those with a sampled thread named `named`, or
 * every one but a launcher (named NULL): sorted, into *set (allocated; free it); their count,
 * or -1 for every one (no launcher either). */
static long other_set(const tp_an_view *v, const tp_an_samples *all, int64_t pid, const char *named,
                      int64_t **set) {
    *set = NULL;
    int launchers = 0;
    for (size_t k = 0; k < v->r->n_procs; k++)
        launchers |= v->r->procs[k].role == TP_PROC_LAUNCHER;
    if (!named && !launchers)
        return -1;
    *set = tp_mem_xalloc(all->n_threads + 1, sizeof **set);
    size_t k = 0;
    for (size_t t = 0; t < all->n_threads; t++)
        if (all->t[t].pid != pid &&
            (named ? !strcmp(all->t[t].name, named) : !is_launcher(v->r, all->t[t].pid)))
            (*set)[k++] = all->t[t].pid;
    qsort(*set, k, sizeof **set, cmp_i64);
    return (long)k;
}

static int in_set(const int64_t *set, long n, int64_t pid) {
    return n < 0 || bsearch(&pid, set, (size_t)n, sizeof *set, cmp_i64) != NULL;
}

/* The samples a part is about: Python thread (pid, tid), or (others) every Python thread of
 * the other processes in the set (other_set). */
static int of_part(const tp_samples *sa, size_t i, int64_t pid, int64_t tid, int others,
                   const int64_t *set, long n_set) {
    return native_of(sa, i) ? 0
           : others         ? sa->pid[i] != pid && in_set(set, n_set, sa->pid[i])
                            : sa->pid[i] == pid && sa->tid[i] == tid;
}

/* A thread's sums inside a part (part_in's per-thread tally). */
typedef struct {
    int64_t pid, tid, cpu, wall, clock;
} part_thread;

static int cmp_part_thread(const void *a, const void *b) {
    const part_thread *x = a, *y = b;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    if (x->cpu != y->cpu) /* the busiest thread of a process first */
        return x->cpu < y->cpu ? 1 : -1;
    return (x->tid > y->tid) - (x->tid < y->tid);
}

/* The slot of thread (pid, tid) in th[0..*n), added when new; `at` is the slot the previous
 * sample found, tried first: a thread's samples come together (its process's file). */
static size_t thread_slot(part_thread **th, size_t *n, size_t *cap, size_t at, int64_t pid,
                          int64_t tid) {
    if (at < *n && (*th)[at].pid == pid && (*th)[at].tid == tid)
        return at;
    for (at = 0; at < *n && ((*th)[at].pid != pid || (*th)[at].tid != tid); at++)
        ;
    if (at == *n) {
        TP_MEM_XGROW(*th, *cap, *n + 1);
        (*th)[(*n)++] = (part_thread){pid, tid, 0, 0, 0};
    }
    return at;
}

/* Sorts th by process, each one's busiest thread first (cmp_part_thread); returns how many
 * processes there are. */
static size_t by_process(part_thread *th, size_t n) {
    if (n)
        qsort(th, n, sizeof *th, cmp_part_thread);
    size_t procs = 0;
    for (size_t k = 0; k < n; k++)
        procs += !k || th[k].pid != th[k - 1].pid;
    return procs;
}

static void part_in(const tp_an_view *v, const tp_an_samples *all, int64_t pid, int64_t tid,
                    int others, const char *named, const int64_t *lo, const int64_t *hi, size_t n,
                    tp_an_samples_part *out) {
    const tp_samples *sa = &v->r->samples;
    int64_t *set;
    long n_set = others ? other_set(v, all, pid, named, &set) : (set = NULL, -1);
    int64_t *cpu = tp_mem_xcalloc(all->n + 1, sizeof *cpu);
    int64_t *wait = tp_mem_xcalloc(all->n + 1, sizeof *wait);
    memset(out, 0, sizeof *out);
    part_thread *th = NULL;
    size_t n_th = 0, th_cap = 0, at = 0;
    for (size_t i = 0; i < sa->n; i++) {
        if (!of_part(sa, i, pid, tid, others, set, n_set) || !in_view(v, sa->ts[i]) ||
            !tp_an_in_sorted(lo, hi, n, sa->ts[i]))
            continue;
        int64_t c = on_cpu_of(sa, i), w = period_of(sa, i), clock = clock_of(sa, i);
        out->samples++, out->cpu_ns = tp_an_add(out->cpu_ns, c),
                        out->wall_ns = tp_an_add(out->wall_ns, w);
        out->clock_ns = tp_an_add(out->clock_ns, clock);
        out->gil_ns = tp_an_add(out->gil_ns, gil_of(sa, i));
        at = thread_slot(&th, &n_th, &th_cap, at, sa->pid[i], sa->tid[i]);
        th[at].cpu = tp_an_add(th[at].cpu, c), th[at].wall = tp_an_add(th[at].wall, w);
        th[at].clock = tp_an_add(th[at].clock, clock);
        size_t k = sa->stack[i] ? find_id(all->map_stack, all->n_map, sa->stack[i]) : all->n_map;
        if (k < all->n_map) {
            cpu[all->map_row[k]] = tp_an_add(cpu[all->map_row[k]], c);
            wait[all->map_row[k]] = tp_an_add(wait[all->map_row[k]], w > c ? w - c : 0);
        }
    }
    out->top_cpu = out->top_wait = -1;
    for (size_t r = 0; r < all->n; r++) {
        if (cpu[r] > 0 && (out->top_cpu < 0 || cpu[r] > cpu[out->top_cpu]))
            out->top_cpu = (long)r;
        if (wait[r] > 0 && (out->top_wait < 0 || wait[r] > wait[out->top_wait]))
            out->top_wait = (long)r;
    }
    out->top_cpu_ns = out->top_cpu >= 0 ? cpu[out->top_cpu] : 0;
    out->top_wait_ns = out->top_wait >= 0 ? wait[out->top_wait] : 0;
    /* per process, its busiest thread (the first of its run once sorted) */
    out->n_procs = by_process(th, n_th);
    for (size_t k = 0; k < n_th; k++)
        if (!k || th[k].pid != th[k - 1].pid) {
            out->lead_cpu_ns = tp_an_add(out->lead_cpu_ns, th[k].cpu);
            out->lead_wall_ns = tp_an_add(out->lead_wall_ns, th[k].wall);
            out->lead_clock_ns = tp_an_add(out->lead_clock_ns, th[k].clock);
        }
    free(cpu), free(wait), free(th), free(set);
}

void tp_an_samples_in(const tp_an_view *v, const tp_an_samples *all, int64_t pid, int64_t tid,
                      const int64_t *lo, const int64_t *hi, size_t n, tp_an_samples_part *out) {
    part_in(v, all, pid, tid, 0, NULL, lo, hi, n, out);
}

void tp_an_samples_in_others(const tp_an_view *v, const tp_an_samples *all, int64_t pid,
                             const char *named, const int64_t *lo, const int64_t *hi, size_t n,
                             tp_an_samples_part *out) {
    part_in(v, all, pid, 0, 1, named, lo, hi, n, out);
}

typedef struct {
    int64_t t;
    int end;
} edge_t;

static int cmp_edge(const void *a, const void *b) {
    const edge_t *x = a, *y = b;
    return x->t != y->t ? (x->t > y->t) - (x->t < y->t) : x->end - y->end;
}

void tp_an_samples_workers(const tp_an_view *v, const tp_an_samples *all, int64_t pid,
                           const char *named, tp_an_sample_workers *out) {
    const tp_samples *sa = &v->r->samples;
    memset(out, 0, sizeof *out);
    int64_t *set;
    long n_set = other_set(v, all, pid, named, &set);
    /* each other process's lifetime as its samples show it: first and last sample */
    size_t n = 0, cap = 0, at = 0;
    struct life {
        int64_t pid, t0, t1;
    } *l = NULL;
    for (size_t i = 0; i < sa->n; i++) {
        if (sa->pid[i] == pid || native_of(sa, i) || !in_view(v, sa->ts[i]) ||
            !in_set(set, n_set, sa->pid[i]))
            continue;
        if (at >= n || l[at].pid != sa->pid[i]) /* a process's samples come together (its file) */
            for (at = 0; at < n && l[at].pid != sa->pid[i]; at++)
                ;
        if (at == n) {
            TP_MEM_XGROW(l, cap, n + 1);
            l[n++] = (struct life){sa->pid[i], sa->ts[i], sa->ts[i]};
        }
        l[at].t0 = sa->ts[i] < l[at].t0 ? sa->ts[i] : l[at].t0;
        l[at].t1 = sa->ts[i] > l[at].t1 ? sa->ts[i] : l[at].t1;
    }
    /* the lifetimes' starts and ends in time order (a start first at the same instant): how
     * many at a time, and how many times a set started while none was alive */
    edge_t *edge = tp_mem_xalloc(2 * n + 1, sizeof *edge);
    for (size_t k = 0; k < n; k++)
        edge[2 * k] = (edge_t){l[k].t0, 0}, edge[2 * k + 1] = (edge_t){l[k].t1, 1};
    qsort(edge, 2 * n, sizeof *edge, cmp_edge);
    size_t alive = 0;
    out->starts = tp_mem_xalloc(n + 1, sizeof *out->starts);
    out->ends = tp_mem_xalloc(n + 1, sizeof *out->ends);
    for (size_t k = 0; k < 2 * n; k++) {
        if (!edge[k].end) {
            if (!alive)
                out->starts[out->generations] = edge[k].t;
            out->generations += alive == 0;
            alive++;
            out->at_once = alive > out->at_once ? alive : out->at_once;
        } else if (!--alive) {
            out->ends[out->generations - 1] = edge[k].t;
        }
    }
    out->procs = n;
    free(edge), free(l), free(set);
}

const char *tp_an_samples_native_note(const tp_an_samples *sa, char *buf, size_t n) {
    char c[32];
    if (!sa->n_native) {
        snprintf(buf, n, "%s", "");
        return buf;
    }
    snprintf(buf, n, "; %zu native thread%s beside them, CPU clock %s", sa->n_native,
             sa->n_native == 1 ? "" : "s", tp_units_dur(c, sizeof c, (double)sa->native_clock_ns));
    return buf;
}

void tp_an_samples_free(tp_an_samples *s) {
    if (!s)
        return;
    free(s->s), free(s->t), free(s->nt), free(s->map_stack), free(s->map_row);
    tp_an_frames_close(s->fx);
    memset(s, 0, sizeof *s);
}

int64_t tp_an_samples_off_cpu(const tp_an_view *v, int64_t pid, int64_t tid, const int64_t *lo,
                              const int64_t *hi, size_t n, const int64_t *xlo, const int64_t *xhi,
                              size_t xn, size_t *samples) {
    const tp_samples *sa = &v->r->samples;
    int64_t off = 0;
    *samples = 0;
    for (size_t i = 0; i < sa->n; i++) {
        if (sa->pid[i] != pid || sa->tid[i] != tid || native_of(sa, i) || !in_view(v, sa->ts[i]) ||
            !tp_an_in_sorted(lo, hi, n, sa->ts[i]) || tp_an_in_sorted(xlo, xhi, xn, sa->ts[i]))
            continue;
        (*samples)++;
        off = tp_an_add(off, period_of(sa, i) - on_cpu_of(sa, i));
    }
    return off;
}

int64_t tp_an_samples_clock_in(const tp_an_view *v, const int64_t *lo, const int64_t *hi, size_t n,
                               int native_only) {
    const tp_samples *sa = &v->r->samples;
    int64_t clock = 0;
    for (size_t i = 0; i < sa->n; i++)
        if ((!native_only || native_of(sa, i)) && in_view(v, sa->ts[i]) &&
            tp_an_in_sorted(lo, hi, n, sa->ts[i]))
            clock = tp_an_add(clock, clock_of(sa, i));
    return clock;
}

double tp_an_samples_demand(const tp_an_view *v, const int64_t *lo, const int64_t *hi, size_t n,
                            tp_an_samples_want *w) {
    const tp_samples *sa = &v->r->samples;
    int64_t ready = 0, native_ready = 0, len = 0;
    size_t n_native = 0;
    for (size_t k = 0; k < n; k++)
        len = tp_an_add(len, hi[k] - lo[k]);
    part_thread *th = NULL;
    size_t n_th = 0, cap = 0, at = 0;
    for (size_t i = 0; i < sa->n; i++) {
        if (!in_view(v, sa->ts[i]) || !tp_an_in_sorted(lo, hi, n, sa->ts[i]))
            continue;
        ready = tp_an_add(ready, on_cpu_of(sa, i));
        if (native_of(sa, i))
            native_ready = tp_an_add(native_ready, on_cpu_of(sa, i));
        size_t had = n_th;
        at = thread_slot(&th, &n_th, &cap, at, sa->pid[i], sa->tid[i]);
        n_native += n_th > had && native_of(sa, i);
    }
    if (w)
        *w = (tp_an_samples_want){n_th, by_process(th, n_th), n_native,
                                  len > 0 ? (double)native_ready / (double)len : 0};
    free(th);
    return len > 0 ? (double)ready / (double)len : 0;
}
