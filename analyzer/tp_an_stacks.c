/* tp_an_stacks: GPU time by launching stack (see the header). */
#include "tp_an_stacks.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "tp_an_stats.h"
#include "tp_hash.h"
#include "tp_mem.h"
#include "tp_sort.h"

/* The GPU ops of one (launching stack, kernel name): how many, and their time added in op
 * order. Or one GPU op alone (count 1) when sums by pair could differ from sums in op order
 * (see gather). */
typedef struct {
    uint32_t stack, name;
    int64_t group; /* set once stacks are grouped; NO_GROUP: no stack (sorts last) */
    int64_t ns;
    size_t count;
} op;

#define NO_GROUP INT64_MAX

/* A distinct stack and the text its group is keyed by. */
typedef struct {
    uint32_t stack;
    char *key;
    const tp_an_frame *f; /* the prefix */
    size_t n;
    size_t group;
} stack_key;

static int cmp_key(const void *a, const void *b) {
    const stack_key *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : (x->stack > y->stack) - (x->stack < y->stack);
}

static int cmp_key_stack(const void *a, const void *b) {
    const stack_key *x = a, *y = b;
    return (x->stack > y->stack) - (x->stack < y->stack);
}

/* The prefix of `depth` frames the group is keyed by: from the innermost Python frame in a
 * Python program's stack, else from the innermost frame. */
static void prefix(tp_an_frames *fx, uint32_t stack, int depth, stack_key *k, char **buf,
                   size_t *cap) {
    k->stack = stack;
    k->n = tp_an_frames_prefix(fx, stack, depth, &k->f);
    char label[1024];
    size_t len = 0;
    for (size_t i = 0; i < k->n; i++) {
        size_t l = strlen(tp_an_frame_label(&k->f[i], label, sizeof label));
        TP_MEM_XGROW(*buf, *cap, len + l + 2);
        memcpy(*buf + len, label, l);
        len += l;
        (*buf)[len++] = '\n';
    }
    /* the text built in the caller's buffer, kept at its length: grown in place per stack,
     * its room was up to twice the text (and the growth's freed steps), ~1,350 of them held
     * at once on tracelens_xdit_sd35 */
    k->key = tp_mem_xalloc(len + 1, 1);
    if (len)
        memcpy(k->key, *buf, len);
    k->key[len] = 0;
}

int tp_an_stacks_counted(const tp_an_view *v, size_t i) {
    return tp_an_view_gpu(v, i) && tp_an_view_ktype(v, i) != TP_KT_OTHER; /* tp_an_kernels' rule */
}

uint32_t tp_an_stacks_launch(const tp_an_view *v, size_t i) {
    int32_t l = tp_an_view_link(v, i);
    return l >= 0 ? tp_ev_stack(&v->r->ev, tp_an_view_row(v, l)) : 0;
}

/* The ops found so far by (stack, name): an open-addressing table of indexes into the op
 * list (+ 1; 0: empty), and per name id the op of its last hit (a name is mostly launched
 * from one stack: a load and a compare instead of a hash and a probe). */
typedef struct {
    uint32_t *slot, *last; /* slot: mask + 1 cells; last: per name id, op index + 1 */
    size_t mask;
} pair_index;

static size_t pair_slot(const pair_index *x, const op *ops, uint32_t stack, uint32_t name) {
    size_t at = (size_t)tp_hash_mix64((uint64_t)stack << 32 | name) & x->mask;
    while (x->slot[at] &&
           (ops[x->slot[at] - 1].stack != stack || ops[x->slot[at] - 1].name != name))
        at = (at + 1) & x->mask;
    return at;
}

/* A new (stack, name) op at ops[n] (out of line: most ops hit one seen before). */
static void pair_new(pair_index *x, op **ops, size_t *cap, size_t n, size_t at, uint32_t stack,
                     uint32_t name) {
    TP_MEM_XGROW(*ops, *cap, n + 1);
    (*ops)[n] = (op){stack, name, NO_GROUP, 0, 0};
    x->slot[at] = (uint32_t)n + 1;
    if (2 * (n + 1) > x->mask + 1) { /* keep it at most half full */
        free(x->slot);
        x->mask = 2 * x->mask + 1;
        x->slot = tp_mem_xcalloc(x->mask + 1, sizeof *x->slot);
        for (size_t k = 0; k <= n; k++)
            x->slot[pair_slot(x, *ops, (*ops)[k].stack, (*ops)[k].name)] = (uint32_t)k + 1;
    }
}

/* The largest bit count `lim` such that m times of at most 2^lim in absolute value add up
 * to at most INT64_MAX, whatever their order and signs (0: none). */
static unsigned exact_bits(size_t m) {
    unsigned bits = 0;
    while (bits < 64 && (uint64_t)m >> bits)
        bits++;
    return bits < 63 ? 63 - bits : 0;
}

/* A new (stack, name) entry for an op, found in no pair or past the pairs (by_pair 0). */
static size_t op_entry(pair_index *x, op **ops, size_t *cap, size_t *n, int by_pair, uint32_t st,
                       uint32_t name) {
    if (!by_pair) {
        TP_MEM_XGROW(*ops, *cap, *n + 1);
        (*ops)[*n] = (op){st, name, NO_GROUP, 0, 0};
        return ++*n;
    }
    size_t at = pair_slot(x, *ops, st, name), o = x->slot[at];
    if (!o) {
        pair_new(x, ops, cap, *n, at, st, name);
        o = ++*n;
    }
    x->last[name] = (uint32_t)o;
    return o;
}

/* The GPU ops the kernels table counts, by (launching stack, name) in order of first sight;
 * *hi: the largest stack id among them. Each pair's time is summed in op order, and its sums
 * by group are those of adding the ops one by one in op order (tp_an_add) while no partial
 * sum can saturate: each op's time within 2^lim (exact_bits of the ops' count); from the first
 * op past that on every op is an entry of its own (count 1), in op order, added saturating.
 * The sums before it are exact, so plain adds. Returns a new array of *n_ops entries. */
static op *gather(const tp_an_view *v, tp_an_stacks *out, size_t *n_ops, uint32_t *hi) {
    size_t n = 0, cap = 0, nops = 0;
    op *ops = NULL;
    uint32_t top = 0;
    pair_index x = {tp_mem_xcalloc(256, sizeof *x.slot),
                    tp_mem_xcalloc((size_t)tp_model_n_strings(v->m) + 1, sizeof *x.last), 255};
    const uint32_t *gpu = tp_an_view_gpu_rows(v); /* the GPU rows in view order, or NULL */
    size_t m = gpu ? v->n_gpu : v->n;
    unsigned lim = exact_bits(m);
    /* ns + bias < span: -2^lim <= ns < 2^lim (span 0, past the first op out of it: never) */
    uint64_t bias = lim ? (uint64_t)1 << lim : 0, span = 2 * bias;
    int64_t gpu_ns = 0;
    for (size_t k = 0; k < m; k++) {
        size_t i = gpu ? gpu[k] : k;
        if (!((gpu || tp_an_view_gpu(v, i)) &&
              tp_an_view_ktype(v, i) != TP_KT_OTHER)) /* tp_an_stacks_counted */
            continue;
        int64_t ns = tp_an_view_dur(v, i);
        uint32_t st = tp_an_stacks_launch(v, i), name = v->r->ev.name[tp_an_view_row(v, i)];
        size_t o = x.last[name];
        if ((uint64_t)ns + bias < span) {
            if (!o || ops[o - 1].stack != st)
                o = op_entry(&x, &ops, &cap, &n, 1, st, name);
            ops[o - 1].count++;
            ops[o - 1].ns += ns;
            gpu_ns += ns;
            continue;
        }
        span = 0;
        o = op_entry(&x, &ops, &cap, &n, 0, st, name);
        ops[o - 1].count = 1;
        ops[o - 1].ns = ns;
        gpu_ns = tp_an_add(gpu_ns, ns);
    }
    for (size_t k = 0; k < n; k++) {
        top = ops[k].stack > top ? ops[k].stack : top;
        nops += ops[k].count;
    }
    free(x.slot), free(x.last);
    out->gpu_ns = gpu_ns;
    out->n_ops = nops;
    *n_ops = n;
    *hi = top;
    return ops;
}

/* The stack ids of `ops` (0: none left out; hi: the largest) into ids[], ascending, each
 * once where they span no more than a few per op (a trace's stacks are numbered densely:
 * marked in a byte per id, not sorted), else ascending with repeats. Returns how many. */
static size_t distinct_stacks(const op *ops, size_t n, uint32_t hi, uint32_t *ids) {
    size_t m = 0;
    if ((size_t)hi <= 4 * n + 4096) {
        uint8_t *seen = tp_mem_xcalloc((size_t)hi + 1, 1);
        for (size_t i = 0; i < n; i++)
            seen[ops[i].stack] = 1;
        for (uint32_t id = 1; id <= hi && id; id++)
            if (seen[id])
                ids[m++] = id;
        free(seen);
        return m;
    }
    for (size_t i = 0; i < n; i++)
        if (ops[i].stack)
            ids[m++] = ops[i].stack;
    tp_sort_structs_u32(ids, m, sizeof *ids, 0);
    return m;
}

/* The distinct stacks of `ops`, keyed and numbered by group (equal keys, one group). */
static stack_key *group_stacks(const tp_an_stacks *out, const op *ops, size_t n, uint32_t hi,
                               int depth, size_t *n_keys, size_t *n_groups) {
    uint32_t *ids = tp_mem_xalloc(n + 1, sizeof *ids);
    size_t m = distinct_stacks(ops, n, hi, ids);
    stack_key *keys = tp_mem_xcalloc(m + 1, sizeof *keys);
    size_t nk = 0, cap = 0;
    char *buf = NULL;
    for (size_t i = 0; i < m; i++) {
        if (i && ids[i] == ids[i - 1])
            continue;
        prefix(out->fx, ids[i], depth, &keys[nk], &buf, &cap);
        if (keys[nk].n)
            nk++;
        else
            free(keys[nk].key);
    }
    free(ids), free(buf);
    qsort(keys, nk, sizeof *keys, cmp_key);
    size_t g = 0;
    for (size_t i = 0; i < nk; i++) {
        if (i && strcmp(keys[i].key, keys[i - 1].key))
            g++;
        keys[i].group = g;
    }
    *n_groups = nk ? g + 1 : 0;
    qsort(keys, nk, sizeof *keys, cmp_key_stack);
    *n_keys = nk;
    return keys;
}

static int cmp_kernel(const void *a, const void *b) {
    const tp_an_stack_kernel *x = a, *y = b;
    if (x->gpu_ns != y->gpu_ns)
        return x->gpu_ns > y->gpu_ns ? -1 : 1;
    return (x->name > y->name) - (x->name < y->name);
}

/* Rows are sorted by GPU time, ties by their stack id (a stable order across runs). */
static int cmp_row(const void *a, const void *b) {
    const tp_an_stack_row *x = a, *y = b;
    if (x->gpu_ns != y->gpu_ns)
        return x->gpu_ns > y->gpu_ns ? -1 : 1;
    return (x->stack > y->stack) - (x->stack < y->stack);
}

/* The ops of one (group, name): how many, and their time added in op order. */
typedef struct {
    int64_t group;
    uint32_t name, used;
    size_t count;
    int64_t ns;
} gn_sum;

static int cmp_gn(const void *a, const void *b) {
    const gn_sum *x = a, *y = b;
    if (x->group != y->group)
        return x->group < y->group ? -1 : 1;
    return (x->name > y->name) - (x->name < y->name);
}

static size_t gn_slot(const gn_sum *t, size_t mask, int64_t group, uint32_t name) {
    size_t at = (size_t)tp_hash_mix64((uint64_t)group << 32 ^ name) & mask;
    while (t[at].used && (t[at].group != group || t[at].name != name))
        at = (at + 1) & mask;
    return at;
}

/* The names of the ops that have a group, numbered in order of first sight: cn[name]
 * (1-based, 0: none), name_of[number - 1]. Filled by the pass that gives the ops their
 * groups (tp_an_stacks_run), not by a pass of its own. */
typedef struct {
    uint32_t *cn, *name_of;
    size_t n, cap;
} name_numbers;

static inline void number_name(name_numbers *nn, uint32_t nm) {
    if (nn->cn[nm])
        return;
    TP_MEM_XGROW(nn->name_of, nn->cap, nn->n + 1);
    nn->name_of[nn->n++] = nm;
    nn->cn[nm] = (uint32_t)nn->n;
}

/* sum_by_group_name's table when the (group, name) pairs fit a dense one: names numbered in
 * order of first sight (nn), a cell per (group, numbered name); a pair's sum is one indexed
 * add instead of a hash and a probe (a quarter million GPU ops on the 2,000 step
 * launch-bound trace). NULL when the table would be larger than a few cells per op. */
static gn_sum *sum_dense(const op *ops, size_t n, size_t n_groups, const name_numbers *nn,
                         size_t *n_out) {
    const uint32_t *cn = nn->cn, *name_of = nn->name_of;
    size_t ncn = nn->n;
    if (n_groups * ncn > 4 * n + 4096)
        return NULL;
    gn_sum *t = tp_mem_xcalloc(n_groups * ncn + 1, sizeof *t);
    for (size_t i = 0; i < n; i++) {
        if (ops[i].group == NO_GROUP)
            continue;
        gn_sum *c = &t[(size_t)ops[i].group * ncn + cn[ops[i].name] - 1];
        c->count += ops[i].count;
        c->ns = tp_an_add(c->ns, ops[i].ns);
    }
    size_t m = 0;
    for (size_t g = 0; g < n_groups; g++)
        for (size_t k = 0; k < ncn; k++) {
            const gn_sum *c = &t[g * ncn + k];
            if (c->count)
                t[m++] = (gn_sum){(int64_t)g, name_of[k], 1, c->count, c->ns};
        }
    qsort(t, m, sizeof *t, cmp_gn);
    *n_out = m;
    return t;
}

/* The sums per (group, name) of the ops that have a group, by (group, name): what a stable
 * sort of the ops by (group, name) and a pass over its runs gave (each sum in op order), from
 * a table of the few distinct pairs (dense, else a hash) instead of a sort of every op. A new
 * array. nn: the grouped ops' names, numbered. */
static gn_sum *sum_by_group_name(const op *ops, size_t n, size_t n_groups, const name_numbers *nn,
                                 size_t *n_out) {
    gn_sum *d = sum_dense(ops, n, n_groups, nn, n_out);
    if (d)
        return d;
    size_t mask = 255, used = 0;
    gn_sum *t = tp_mem_xcalloc(mask + 1, sizeof *t);
    for (size_t i = 0; i < n; i++) {
        if (ops[i].group == NO_GROUP)
            continue;
        size_t at = gn_slot(t, mask, ops[i].group, ops[i].name);
        if (!t[at].used) {
            if (2 * (used + 1) > mask + 1) { /* keep it at most half full */
                size_t m2 = 2 * mask + 1;
                gn_sum *t2 = tp_mem_xcalloc(m2 + 1, sizeof *t2);
                for (size_t k = 0; k <= mask; k++)
                    if (t[k].used)
                        t2[gn_slot(t2, m2, t[k].group, t[k].name)] = t[k];
                free(t);
                t = t2, mask = m2;
                at = gn_slot(t, mask, ops[i].group, ops[i].name);
            }
            t[at] = (gn_sum){ops[i].group, ops[i].name, 1, 0, 0};
            used++;
        }
        t[at].count += ops[i].count;
        t[at].ns = tp_an_add(t[at].ns, ops[i].ns);
    }
    size_t m = 0;
    for (size_t k = 0; k <= mask; k++)
        if (t[k].used)
            t[m++] = t[k];
    qsort(t, m, sizeof *t, cmp_gn);
    *n_out = m;
    return t;
}

/* ops -> one row per group, one kernel entry per name (by name). */
static void fill_rows(tp_an_stacks *out, op *ops, size_t n, const stack_key *keys, size_t nk,
                      size_t n_groups, const name_numbers *nn) {
    out->s = tp_mem_xcalloc(n_groups + 1, sizeof *out->s);
    for (size_t i = 0; i < nk; i++) {
        tp_an_stack_row *r = &out->s[keys[i].group];
        if (!r->frames || keys[i].stack < r->stack)
            r->stack = keys[i].stack, r->frames = keys[i].f, r->n_frames = keys[i].n;
    }
    size_t n_gn;
    gn_sum *gn = sum_by_group_name(ops, n, n_groups, nn, &n_gn);
    /* gn is by group: each group's kernels are one run, its array sized to it (grown from
     * empty, the first room was 16 kernels: ~0.5 MiB for tracelens_xdit_sd35's 1,282 groups
     * of 1.5 kernels each, the report's peak at the render) */
    for (size_t i = 0, e; i < n_gn; i = e) {
        for (e = i + 1; e < n_gn && gn[e].group == gn[i].group; e++)
            ;
        tp_an_stack_row *r = &out->s[gn[i].group];
        r->k = tp_mem_xalloc(e - i, sizeof *r->k);
        for (size_t j = i; j < e; j++) {
            tp_an_stack_kernel k = {gn[j].name, gn[j].count, gn[j].ns};
            r->k[r->n_k++] = k;
            r->count += k.count;
            r->gpu_ns = tp_an_add(r->gpu_ns, k.gpu_ns);
        }
    }
    free(gn);
    out->n = n_groups;
    for (size_t g = 0; g < n_groups; g++)
        qsort(out->s[g].k, out->s[g].n_k, sizeof *out->s[g].k, cmp_kernel);
    qsort(out->s, out->n, sizeof *out->s, cmp_row);
}

void tp_an_stacks_run(const tp_an_view *v, int depth, tp_an_stacks *out) {
    memset(out, 0, sizeof *out);
    if (depth <= 0)
        depth = TP_AN_STACK_DEPTH_DEFAULT;
    if (depth > TP_AN_STACK_DEPTH_MAX)
        depth = TP_AN_STACK_DEPTH_MAX;
    out->depth = depth;
    out->fx = tp_an_frames_open_shared(v->m, v->r, v->opts.symbolizer, v->opts.no_symbols, 0);
    size_t n = 0, nk = 0, n_groups = 0;
    uint32_t hi = 0;
    op *ops = gather(v, out, &n, &hi);
    stack_key *keys = group_stacks(out, ops, n, hi, depth, &nk, &n_groups);
    /* each op's group: by stack id from a dense table where the ids are (keys is by stack
     * id), else by a search of keys */
    uint32_t top = nk ? keys[nk - 1].stack : 0, *gof = NULL; /* gof[stack]: group + 1, 0: none */
    if ((size_t)top <= 4 * n + 4096) {
        gof = tp_mem_xcalloc((size_t)top + 2, sizeof *gof);
        for (size_t i = 0; i < nk; i++)
            gof[keys[i].stack] = (uint32_t)keys[i].group + 1;
    }
    name_numbers nn = {.cn = tp_mem_xcalloc((size_t)tp_model_n_strings(v->m) + 2, sizeof *nn.cn)};
    for (size_t i = 0; i < n; i++) {
        uint32_t s = ops[i].stack;
        size_t g = 0; /* group + 1 */
        if (gof) {
            g = s <= top ? gof[s] : 0;
        } else if (s) {
            stack_key probe = {.stack = s};
            const stack_key *k = bsearch(&probe, keys, nk, sizeof *keys, cmp_key_stack);
            g = k ? k->group + 1 : 0;
        }
        if (g) {
            ops[i].group = (int64_t)g - 1;
            number_name(&nn, ops[i].name);
        } else {
            out->no_stack += ops[i].count;
            out->no_stack_ns = tp_an_add(out->no_stack_ns, ops[i].ns);
        }
    }
    free(gof);
    fill_rows(out, ops, n, keys, nk, n_groups, &nn);
    free(nn.cn), free(nn.name_of);
    for (size_t i = 0; i < nk; i++)
        free(keys[i].key);
    free(keys);
    free(ops);
}

void tp_an_stacks_free(tp_an_stacks *s) {
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++)
        free(s->s[i].k);
    free(s->s);
    tp_an_frames_close(s->fx);
    memset(s, 0, sizeof *s);
}
