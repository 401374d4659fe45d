/* tp_job: gathers the processes of one recording into ranks (see tp_job.h). */
#include "tp_job.h"

#include <stdlib.h>
#include <string.h>

#include "tp_mem.h"

/* One loaded rank while gathering: its process and where it goes. */
typedef struct {
    const tp_process *p; /* NULL: not a native single-process rank (left alone) */
    long parent;         /* item of the image it came from; -1: none loaded */
    long root;           /* job without an id: the root of its tree (an item) */
    int rank;            /* its rank, inherited or the job's lowest; -1: none */
    long group;          /* item that leads its group (the lowest index in it) */
    int placed;          /* already in the new order */
    int is_proc;         /* p was set (p itself may move while ranks are merged) */
    int own_rank;        /* p's own rank (its PROCESS record's; -1: none), kept since p moves */
} item;

static int same_job(const tp_process *a, const tp_process *b) {
    return a->job_id == b->job_id; /* 0 == 0: both older traces, linked by the tree */
}

/* 1 when process `c` may have come from image `p` (fork or exec), judging by start times
 * (0: unknown, then anything goes). */
static int started_after(const tp_process *c, const tp_process *p) {
    return !c->start_ns || !p->start_ns || p->start_ns <= c->start_ns;
}

/* Is candidate `j` a better parent for `c` than the best so far `best`? The image that started
 * last before the child is the one that forked or exec'd it. */
static int better(const item *it, long best, long j) {
    return best < 0 || it[j].p->start_ns > it[best].p->start_ns ||
           (it[j].p->start_ns == it[best].p->start_ns && it[j].p->exec_gen > it[best].p->exec_gen);
}

/* The image `c` came from: the previous image of its own pid when it exec'd, else an image
 * of its parent pid. */
static long find_parent(const item *it, size_t n, size_t i) {
    const tp_process *c = it[i].p;
    long same_pid = -1, by_ppid = -1;
    for (size_t j = 0; j < n; j++) {
        const tp_process *q = it[j].p;
        if (j == i || !q || !same_job(c, q) || !started_after(c, q))
            continue;
        int earlier_image = c->job_id ? q->exec_gen < c->exec_gen : q->start_ns < c->start_ns;
        if (q->pid == c->pid && earlier_image && better(it, same_pid, (long)j))
            same_pid = (long)j;
        else if (q->pid == c->ppid && q->pid != c->pid && better(it, by_ppid, (long)j))
            by_ppid = (long)j;
    }
    return same_pid >= 0 ? same_pid : by_ppid;
}

/* A rank for every process: its own, else its nearest ranked ancestor's, else the lowest
 * rank of its job, else none. */
static void assign_ranks(item *it, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (!it[i].p)
            continue;
        long a = (long)i;
        int hops = 0;
        while (a >= 0 && it[a].p->rank < 0 && hops++ < (int)n)
            a = it[a].parent;
        it[i].rank = a >= 0 ? it[a].p->rank : -1;
    }
    for (size_t i = 0; i < n; i++) {
        if (!it[i].p || it[i].rank >= 0)
            continue;
        for (size_t j = 0; j < n; j++)
            if (it[j].p && it[j].p->rank >= 0 && same_job(it[i].p, it[j].p) &&
                (it[i].p->job_id || it[j].root == it[i].root) &&
                (it[i].rank < 0 || it[j].p->rank < it[i].rank))
                it[i].rank = it[j].p->rank;
    }
}

static int same_group(const item *a, const item *b) {
    if (!a->p || !b->p || !same_job(a->p, b->p) || a->rank != b->rank)
        return 0;
    return a->p->job_id ? 1 : a->root == b->root;
}

/* Children of `at` in the group, in the order they started (then pid), after `at`. */
static void place_tree(item *it, size_t n, long at, size_t *order, size_t *k) {
    order[(*k)++] = (size_t)at;
    it[at].placed = 1;
    for (;;) {
        long next = -1;
        for (size_t j = 0; j < n; j++)
            if (!it[j].placed && it[j].parent == at && it[j].group == it[at].group &&
                (next < 0 || it[j].p->start_ns < it[next].p->start_ns ||
                 (it[j].p->start_ns == it[next].p->start_ns && it[j].p->pid < it[next].p->pid)))
                next = (long)j;
        if (next < 0)
            return;
        place_tree(it, n, next, order, k);
    }
}

/* The group's main process, among those not placed yet: the one `record` started (its first
 * image), else the root of the tree that started first. -1 when none is left. */
static long group_main(const item *it, size_t n, long g) {
    long best = -1;
    for (size_t j = 0; j < n; j++) {
        if (it[j].group != g || it[j].placed)
            continue;
        const tp_process *p = it[j].p;
        int root = it[j].parent < 0 || it[it[j].parent].group != g;
        int started = p->root_pid && p->pid == p->root_pid;
        if (!root && !started)
            continue;
        if (best < 0) {
            best = (long)j;
            continue;
        }
        const tp_process *b = it[best].p;
        int b_started = b->root_pid && b->pid == b->root_pid;
        if (started != b_started ? started
                                 : (p->exec_gen != b->exec_gen ? p->exec_gen < b->exec_gen
                                                               : p->start_ns < b->start_ns))
            best = (long)j;
    }
    return best;
}

/* The new order of the items: each group where its lowest index was, main first, in tree
 * order (roots other than the main after it, by start). */
static void order_items(item *it, size_t n, size_t *order) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (it[i].placed)
            continue;
        if (!it[i].p) {
            order[k++] = i;
            it[i].placed = 1;
            continue;
        }
        long g = it[i].group;
        for (long r; (r = group_main(it, n, g)) >= 0;)
            place_tree(it, n, r, order, &k);
        for (size_t j = 0; j < n; j++) /* a cycle of bad links: keep what is left, in order */
            if (it[j].group == g && !it[j].placed)
                place_tree(it, n, (long)j, order, &k);
    }
}

/* Roles and parents as indexes into the gathered rank's process list (tree order: a parent
 * before its children). A process without a rank of its own above one with a rank (torchrun,
 * mpirun, a wrapper script) is a launcher; a ranked process a launcher started is the rank's
 * main; an exec'd image keeps the role of the image before it; any other child is a worker. */
static void set_roles(tp_rank *r, const item *it, const size_t *order, size_t first) {
    for (size_t k = 0; k < r->n_procs; k++) {
        long parent = it[order[first + k]].parent;
        tp_process *p = &r->procs[k];
        p->parent = -1;
        for (size_t q = 0; q < k; q++)
            if ((long)order[first + q] == parent)
                p->parent = (int)q;
    }
    unsigned char *launcher = tp_mem_xcalloc(r->n_procs + 1, 1);
    for (size_t k = 0; k < r->n_procs; k++) /* every rankless ancestor of a ranked process */
        if (it[order[first + k]].own_rank >= 0)
            for (int a = r->procs[k].parent, hops = 0; a >= 0 && hops < (int)r->n_procs;
                 a = r->procs[a].parent, hops++)
                launcher[a] |= it[order[first + (size_t)a]].own_rank < 0;
    for (size_t k = 0; k < r->n_procs; k++) {
        tp_process *p = &r->procs[k];
        const tp_process *up = p->parent >= 0 ? &r->procs[p->parent] : NULL;
        p->role = launcher[k]         ? TP_PROC_LAUNCHER
                  : !up               ? TP_PROC_MAIN
                  : up->pid == p->pid ? up->role
                  : up->role == TP_PROC_LAUNCHER && it[order[first + k]].own_rank >= 0
                      ? TP_PROC_MAIN
                      : TP_PROC_WORKER;
    }
    free(launcher);
}

static void gather_groups(tp_model *m, const item *it, const size_t *order) {
    size_t n = m->n_ranks, out = 0;
    tp_rank *v = tp_mem_xalloc(n, sizeof *v);
    for (size_t k = 0; k < n; k++)
        v[k] = m->ranks[order[k]];
    memcpy(m->ranks, v, n * sizeof *v);
    free(v);
    for (size_t k = 0; k < n;) {
        size_t len = 1;
        while (k + len < n && it[order[k]].is_proc &&
               it[order[k + len]].group == it[order[k]].group)
            len++;
        for (size_t j = 1; j < len; j++)
            tp_model_merge_rank(m, out, out + 1);
        if (it[order[k]].is_proc) {
            tp_rank *r = &m->ranks[out];
            set_roles(r, it, order, k);
            r->rank = it[order[k]].rank;
            r->rank_hta = r->rank >= 0 ? r->rank : r->rank_hta;
            r->has_dist_info = r->has_dist_info || r->rank >= 0;
        }
        out++;
        k += len;
    }
}

void tp_job_gather(tp_model *m) {
    size_t n = m->n_ranks;
    item *it = tp_mem_xcalloc(n, sizeof *it);
    size_t *order = tp_mem_xcalloc(n, sizeof *order);
    for (size_t i = 0; i < n; i++) {
        const tp_rank *r = &m->ranks[i];
        it[i].p = r->native && r->n_procs == 1 ? &r->procs[0] : NULL;
        it[i].is_proc = it[i].p != NULL;
        it[i].own_rank = it[i].p ? it[i].p->rank : -1;
        it[i].parent = -1;
        it[i].group = (long)i;
    }
    for (size_t i = 0; i < n; i++)
        if (it[i].p)
            it[i].parent = find_parent(it, n, i);
    for (size_t i = 0; i < n; i++) { /* tree roots, for traces without a job id */
        long a = (long)i;
        for (size_t hops = 0; it[a].p && it[a].parent >= 0 && hops < n; hops++)
            a = it[a].parent;
        it[i].root = a;
    }
    assign_ranks(it, n);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < i; j++)
            if (same_group(&it[i], &it[j])) {
                it[i].group = it[j].group;
                break;
            }
    order_items(it, n, order);
    gather_groups(m, it, order);
    free(it);
    free(order);
}
