/* tp_an_stacks: GPU time by launching stack (see the header). */
#include "tp_an_stacks.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "tp_an_stats.h"
#include "tp_hash.h"
#include "tp_mem.h"
#include "tp_sort.h"

/* One GPU op, with the stack of the call that launched it. */
typedef struct {
    uint32_t stack, name;
    int64_t group; /* set once stacks are grouped; NO_GROUP: no stack (sorts last) */
    int64_t ns;
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
static void prefix(tp_an_frames *fx, uint32_t stack, int depth, stack_key *k) {
    k->stack = stack;
    k->n = tp_an_frames_prefix(fx, stack, depth, &k->f);
    char *key = NULL, label[1024];
    size_t len = 0, cap = 0;
    for (size_t i = 0; i < k->n; i++) {
        size_t l = strlen(tp_an_frame_label(&k->f[i], label, sizeof label));
        TP_MEM_XGROW(key, cap, len + l + 2);
        memcpy(key + len, label, l);
        len += l;
        key[len++] = '\n';
    }
    TP_MEM_XGROW(key, cap, len + 1);
    key[len] = 0;
    k->key = key;
}

int tp_an_stacks_counted(const tp_an_view *v, size_t i) {
    return tp_an_view_gpu(v, i) && tp_an_view_ktype(v, i) != TP_KT_OTHER; /* tp_an_kernels' rule */
}

uint32_t tp_an_stacks_launch(const tp_an_view *v, size_t i) {
    int32_t l = tp_an_view_link(v, i);
    return l >= 0 ? v->r->ev.stack[tp_an_view_row(v, l)] : 0;
}

/* The GPU ops the kernels table counts, with their launching stacks; *hi: the largest stack
 * id among them (found here, not by a pass of its own over the ops). */
static op *gather(const tp_an_view *v, tp_an_stacks *out, size_t *n_ops, uint32_t *hi) {
    op *ops = tp_an_tmp(v, v->n_gpu + 1, sizeof *ops); /* the view's scratch */
    size_t n = 0;
    uint32_t top = 0;
    const uint32_t *gpu = tp_an_view_gpu_rows(v); /* the GPU rows in view order, or NULL */
    for (size_t k = 0, m = gpu ? v->n_gpu : v->n; k < m; k++) {
        size_t i = gpu ? gpu[k] : k;
        if (!tp_an_stacks_counted(v, i))
            continue;
        int64_t ns = tp_an_view_dur(v, i);
        uint32_t st = tp_an_stacks_launch(v, i);
        top = st > top ? st : top;
        ops[n++] = (op){st, v->r->ev.name[tp_an_view_row(v, i)], NO_GROUP, ns};
        out->gpu_ns = tp_an_add(out->gpu_ns, ns);
    }
    out->n_ops = *n_ops = n;
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
    size_t nk = 0;
    for (size_t i = 0; i < m; i++) {
        if (i && ids[i] == ids[i - 1])
            continue;
        prefix(out->fx, ids[i], depth, &keys[nk]);
        if (keys[nk].n)
            nk++;
        else
            free(keys[nk].key);
    }
    free(ids);
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
        c->count++;
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
        t[at].count++;
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
    size_t n_gn, cap = 0;
    gn_sum *gn = sum_by_group_name(ops, n, n_groups, nn, &n_gn);
    for (size_t i = 0; i < n_gn; i++) {
        tp_an_stack_row *r = &out->s[gn[i].group];
        tp_an_stack_kernel k = {gn[i].name, gn[i].count, gn[i].ns};
        cap = r->n_k;
        tp_an_grow((void **)&r->k, &cap, r->n_k + 1, sizeof *r->k);
        r->k[r->n_k++] = k;
        r->count += k.count;
        r->gpu_ns = tp_an_add(r->gpu_ns, k.gpu_ns);
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
            out->no_stack++;
            out->no_stack_ns = tp_an_add(out->no_stack_ns, ops[i].ns);
        }
    }
    free(gof);
    fill_rows(out, ops, n, keys, nk, n_groups, &nn);
    free(nn.cn), free(nn.name_of);
    for (size_t i = 0; i < nk; i++)
        free(keys[i].key);
    free(keys);
    tp_an_tmp_put(v, ops);
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
