/* tp_model_mem: the accounting of tp_model_mem.h, from the column tables of tp_model.h. */
#include "tp_model_mem.h"

#include <math.h>
#include <string.h>

/* 1 when row `i` of a column of element type T holds something other than `none`. */
#define HOLDS(col, i, none)                                                                        \
    _Generic((col)[0], double                                                                      \
             : !isnan((double)(col)[i]), default                                                   \
             : (int64_t)(none) == TP_EV_ALWAYS || (int64_t)(col)[i] != (int64_t)(none))

static size_t buckets_bytes(const tp_buckets *b) {
    if (!b->off) /* none built, or dropped */
        return 0;
    size_t rows = b->n ? b->off[b->n] : 0;
    return b->n * (sizeof *b->key + sizeof *b->key2) + (b->n + 1) * sizeof *b->off +
           rows * sizeof *b->rows;
}

static size_t rank_index_bytes(const tp_rank *r) {
    size_t b = r->n_by_corr * sizeof *r->by_corr;
    if (r->corr_dir) { /* slices + 1 entries: (hi - lo) >> shift + 2 at most */
        uint64_t span = (uint64_t)r->corr_hi - (uint64_t)r->corr_lo;
        b += (size_t)((span >> r->corr_shift) + 2) * sizeof *r->corr_dir;
    }
    return b + buckets_bytes(&r->streams) + buckets_bytes(&r->threads) + buckets_bytes(&r->cats);
}

static size_t rank_stacks_bytes(const tp_stacks *s) {
    return s->cap * sizeof *s->v +
           s->frames_cap * ((s->frame_module ? sizeof *s->frame_module : 0) +
                            sizeof *s->frame_addr + (s->frame_next ? sizeof *s->frame_next : 0)) +
           s->modules_cap * sizeof *s->modules + s->pycodes_cap * sizeof *s->pycodes;
}

/* Bytes of a place table and its hash table. */
static size_t places_bytes(const tp_ev_places *t) {
    return t->cap * sizeof *t->v + (t->slots ? (t->mask + 1) * sizeof *t->slots : 0);
}

/* Bytes of the memory-event columns, their places and side tables. */
static size_t memev_bytes(const tp_memevents *e) {
    size_t b = places_bytes(&e->places) + e->totals_cap * sizeof *e->totals;
#define MEMEV_WIDE(w) b += e->w.cap * (sizeof *e->w.row + sizeof *e->w.val);
    TP_MEMEV_WIDES(MEMEV_WIDE)
#undef MEMEV_WIDE
#define MEMEV_COL(c, none)                                                                         \
    if (e->c)                                                                                      \
        b += (e->cap ? e->cap : 1) * sizeof *e->c;
    TP_MEMEV_ALL(MEMEV_COL)
#undef MEMEV_COL
    return b;
}

/* Adds sparse column `sp` of `e` (tp_ev_sparse) to `col`: its bytes, and each value on its row
 * (and that row's category), as a dense column counts the rows that are not "none";
 * `by_corr`: and e->external_id_corr's bitmap, its rows used (their value is a bit: no bytes on
 * their category). */
static void account_sparse(const tp_events *e, const tp_ev_sparse *sp, int by_corr,
                           tp_model_mem_col *col, tp_model_mem *a) {
    col->bytes += tp_ev_sparse_bytes(sp, e->n);
    col->used += sp->n_val;
    const uint64_t *same = by_corr ? e->external_id_corr : NULL; /* a bit a row, no value */
    for (size_t w = 0; same && w < (e->n + 63) / 64; w++)
        col->bytes += sizeof *same, col->used += (uint64_t)__builtin_popcountll(same[w]);
    for (size_t w = 0; sp->bits && w < (e->n + 63) / 64; w++)
        for (uint64_t b = sp->bits[w]; b; b &= b - 1) {
            uint8_t cat = e->cat[w * 64 + (size_t)__builtin_ctzll(b)];
            a->cat_used_bytes[cat < TP_CAT_COUNT ? cat : TP_CAT_OTHER] += sizeof *sp->val;
        }
}

/* The entry of `a` for column `name`. */
static tp_model_mem_col *col_named(tp_model_mem *a, const char *name) {
    size_t k = 0;
    while (strcmp(a->cols[k].name, name) != 0)
        k++;
    return &a->cols[k];
}

/* Adds rank `r`'s event columns to `a`: bytes, rows in use, bytes in use per category. */
static void account_events(const tp_events *e, tp_model_mem *a) {
    size_t k = 0;
#define ACCOUNT_COL(c, none)                                                                       \
    {                                                                                              \
        tp_model_mem_col *col = &a->cols[k++];                                                     \
        col->name = #c;                                                                            \
        col->elem = sizeof *e->c;                                                                  \
        if (e->c) {                                                                                \
            col->bytes += (e->cap ? e->cap : 1) * sizeof *e->c;                                    \
            for (size_t i = 0; i < e->n; i++)                                                      \
                if (HOLDS(e->c, i, none)) {                                                        \
                    col->used++;                                                                   \
                    a->cat_used_bytes[e->cat[i] < TP_CAT_COUNT ? e->cat[i] : TP_CAT_OTHER] +=      \
                        sizeof *e->c;                                                              \
                }                                                                                  \
        }                                                                                          \
    }
    TP_EV_ALL(ACCOUNT_COL)
#undef ACCOUNT_COL
#define ACCOUNT_SPARSE(c, sp, none, by_corr, grows)                                                \
    account_sparse(e, &e->sp, by_corr, col_named(a, #c), a);
    TP_EV_SPARSE(ACCOUNT_SPARSE)
#undef ACCOUNT_SPARSE
    tp_model_mem_col *side = &a->cols[k++]; /* the copies' side table: an entry per copy row */
    side->name = "copies (side)";
    side->elem = sizeof *e->copies;
    side->bytes += e->copies_cap * sizeof *e->copies;
    side->used += e->n_copies;
    for (size_t c = 0; c < e->n_copies; c++) {
        uint8_t cat = e->cat[e->copies[c].row];
        a->cat_used_bytes[cat < TP_CAT_COUNT ? cat : TP_CAT_OTHER] += sizeof *e->copies;
    }
    tp_model_mem_col *places = &a->cols[k++]; /* the places and their hash table */
    places->name = "places (side)";
    places->elem = sizeof *e->places.v;
    places->bytes += places_bytes(&e->places);
    places->used += e->places.n;
#define ACCOUNT_WIDE(w) /* a narrow column's wide values: an entry per row that has one */         \
    {                                                                                              \
        tp_model_mem_col *col = &a->cols[k++];                                                     \
        col->name = #w " (side)";                                                                  \
        col->elem = sizeof *e->w.row + sizeof *e->w.val;                                           \
        col->bytes += e->w.cap * col->elem;                                                        \
        col->used += e->w.n;                                                                       \
        for (size_t c = 0; c < e->w.n; c++) {                                                      \
            uint8_t cat = e->cat[e->w.row[c]];                                                     \
            a->cat_used_bytes[cat < TP_CAT_COUNT ? cat : TP_CAT_OTHER] += col->elem;               \
        }                                                                                          \
    }
    TP_EV_WIDES(ACCOUNT_WIDE)
#undef ACCOUNT_WIDE
    a->n_cols = k;
    for (size_t i = 0; i < e->n; i++)
        a->cat_rows[e->cat[i] < TP_CAT_COUNT ? e->cat[i] : TP_CAT_OTHER]++;
}

void tp_model_mem_account(const tp_model *m, tp_model_mem *a) {
    memset(a, 0, sizeof *a);
    for (size_t i = 0; i < m->n_ranks; i++) {
        const tp_rank *r = &m->ranks[i];
        account_events(&r->ev, a);
        a->n_events += r->ev.n;
        a->n_memev += r->mem.n;
        a->memev_bytes += memev_bytes(&r->mem);
        a->index_bytes += rank_index_bytes(r);
        a->stacks_bytes += rank_stacks_bytes(&r->stacks);
    }
    for (size_t c = 0; c < a->n_cols; c++)
        a->events_bytes += a->cols[c].bytes;
    a->strings_bytes = tp_model_strings_bytes(m);
    a->total_bytes =
        a->events_bytes + a->memev_bytes + a->index_bytes + a->stacks_bytes + a->strings_bytes;
}

static double per(size_t bytes, uint64_t n) {
    return n ? (double)bytes / (double)n : 0;
}

void tp_model_mem_print(const tp_model_mem *a, FILE *f) {
    fprintf(f, "%-24s %5s %14s %9s %7s\n", "column", "elem", "bytes", "B/event", "used");
    for (size_t c = 0; c < a->n_cols; c++) {
        const tp_model_mem_col *col = &a->cols[c];
        fprintf(f, "%-24s %5zu %14zu %9.2f %6.1f%%%s\n", col->name, col->elem, col->bytes,
                per(col->bytes, a->n_events),
                a->n_events ? 100.0 * (double)col->used / (double)a->n_events : 0.0,
                col->bytes ? "" : "  (absent)");
    }
    fprintf(f, "\n%-20s %12s %7s %18s\n", "category", "rows", "share", "used B/row");
    for (int c = 0; c < TP_CAT_COUNT; c++)
        if (a->cat_rows[c])
            fprintf(f, "%-20s %12llu %6.1f%% %18.1f\n", tp_cat_name((tp_cat)c),
                    (unsigned long long)a->cat_rows[c],
                    100.0 * (double)a->cat_rows[c] / (double)a->n_events,
                    per(a->cat_used_bytes[c], a->cat_rows[c]));
    fprintf(f, "\nevents %llu, memory events %llu\n", (unsigned long long)a->n_events,
            (unsigned long long)a->n_memev);
    fprintf(f, "event columns  %14zu  %7.2f B/event\n", a->events_bytes,
            per(a->events_bytes, a->n_events));
    fprintf(f, "indexes        %14zu  %7.2f B/event\n", a->index_bytes,
            per(a->index_bytes, a->n_events));
    fprintf(f, "memory events  %14zu  %7.2f B/memory event\n", a->memev_bytes,
            per(a->memev_bytes, a->n_memev));
    fprintf(f, "stacks         %14zu\nstrings        %14zu\n", a->stacks_bytes, a->strings_bytes);
    fprintf(f, "model total    %14zu  %7.2f B/event (events + indexes: %.2f)\n", a->total_bytes,
            per(a->total_bytes, a->n_events), per(a->events_bytes + a->index_bytes, a->n_events));
}
