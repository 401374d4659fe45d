/* tp_model_move: tp_model_move_ranks (tp_model.h): ranks loaded into a model of their own
 * moved into the job's model, their string ids translated. */
#include <stdlib.h>

#include "tp_mem.h"
#include "tp_model.h"

/* Every field of a rank that holds a string pool id, translated through `map`. */
static void remap_ids(tp_rank *r, const uint32_t *map) {
    tp_events *e = &r->ev;
    for (size_t i = 0; i < e->n; i++) {
        e->name[i] = map[e->name[i]];
        if (e->cat_raw_opt)
            e->cat_raw_opt[i] = map[e->cat_raw_opt[i]];
        if (e->shapes_opt)
            e->shapes_opt[i] = map[e->shapes_opt[i]];
    }
    for (size_t k = 0; k < e->shapes_sp.n_val; k++) /* sparse: a finished rank (tests) */
        e->shapes_sp.val[k] = map[e->shapes_sp.val[k]];
    for (size_t k = 0; k < e->places.n; k++) /* place_hash leaves the domain out: no rehash */
        e->places.v[k].domain = map[e->places.v[k].domain];
    for (size_t c = 0; c < TP_CAT_COUNT; c++)
        e->cat_raw_dflt[c] = map[e->cat_raw_dflt[c]];
    for (size_t i = 0; i < r->n_devices; i++)
        r->devices[i].name = map[r->devices[i].name];
    for (size_t i = 0; i < r->n_env; i++)
        r->env[i].key = map[r->env[i].key], r->env[i].value = map[r->env[i].value];
    for (size_t i = 0; i < r->stacks.n_modules; i++)
        r->stacks.modules[i].path = map[r->stacks.modules[i].path];
    for (size_t i = 0; i < r->stacks.n_pycodes; i++) {
        tp_stack_pycode *c = &r->stacks.pycodes[i];
        c->file = map[c->file], c->name = map[c->name];
    }
    for (size_t i = 0; i < r->n_procs; i++)
        r->procs[i].command = map[r->procs[i].command];
    for (size_t i = 0; i < r->n_thread_names; i++)
        r->tn_name[i] = map[r->tn_name[i]];
    r->dist_backend = map[r->dist_backend];
    r->cuda_off = map[r->cuda_off];
    r->cupti_refused = map[r->cupti_refused];
}

void tp_model_move_ranks(tp_model *into, tp_model *from) {
    uint32_t n = tp_model_n_strings(from);
    uint32_t *map = tp_mem_xcalloc(n, sizeof *map); /* from's id -> into's; 0 -> 0 */
    int same = 1; /* every id its own: `into` had no strings of its own yet (one file loaded) */
    for (uint32_t id = 1; id < n; id++) {
        map[id] = tp_model_intern(into, tp_model_str(from, id), tp_model_str_len(from, id));
        same &= map[id] == id;
    }
    for (size_t i = 0; i < from->n_ranks; i++) {
        tp_rank *dst = tp_model_add_rank(into, NULL);
        free((char *)dst->file);
        *dst = from->ranks[i];
        if (!same) /* a pass over every row's names (~20 ms on a 10 M-record trace) */
            remap_ids(dst, map);
    }
    from->n_ranks = 0; /* what the ranks own went with them */
    free(map);
}
