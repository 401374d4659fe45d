/* tp_an_memuse: who holds device memory, at the peak and at the first failed allocation.
 *
 * Built on the allocator replay (tp_an_memstate) of one rank, over the training steps found
 * in the view (ranges named like steps, tp_an_is_step_name; nested steps count once):
 *   - the timeline: allocated and reserved after every memory event, and per step (value at
 *     the step's end, maximum within it);
 *   - the peak (the first moment allocated reaches its maximum) and the first allocation
 *     failure, each as a moment: the live blocks grouped by allocation site (bytes, blocks,
 *     share of live bytes, steps the oldest has been alive), and every segment's layout
 *     (live, free, largest hole, and the site whose blocks from earlier steps pin it);
 *   - the failure's class (tp_an_oom_kind) from the allocator's own report at that moment
 *     (or the replay's figures when it said nothing), with the device's capacity when known;
 *   - growth: the site whose live bytes rise across steps, its per-step slope, and whether
 *     any of its blocks was ever freed.
 * The report's Memory section, the diagnosis's memory rules and the TUI's Memory view all
 * read this one result. Aborts on out of memory, like the other analyses. */
#ifndef TP_AN_MEMUSE_H
#define TP_AN_MEMUSE_H

#include <stddef.h>
#include <stdint.h>

#include "tp_an_memstate.h"
#include "tp_an_view.h"

/* The failure's class, in the order they are judged. */
#define TP_AN_OOM_TABLE(X)                                                                         \
    X(TP_AN_OOM_NONE, "none", "no allocation failed")                                              \
    X(TP_AN_OOM_FRAGMENTATION, "fragmentation",                                                    \
      "enough memory was free, but in holes smaller than the request")                             \
    X(TP_AN_OOM_REQUEST, "request-over-budget",                                                    \
      "a single request larger than anything the allocator could hold")                            \
    X(TP_AN_OOM_CAPACITY, "capacity",                                                              \
      "live memory plus the request exceed what the allocator "                                    \
      "could hold")

typedef enum {
#define TP_AN_OOM_ENUM(name, key, text) name,
    TP_AN_OOM_TABLE(TP_AN_OOM_ENUM)
#undef TP_AN_OOM_ENUM
} tp_an_oom_kind;

/* "fragmentation", ... (JSON key); never NULL. */
const char *tp_an_oom_key(tp_an_oom_kind k);
/* One line on what the class means; never NULL. */
const char *tp_an_oom_text(tp_an_oom_kind k);

/* Live blocks of one allocation site at a moment. Sites that differ only by their stack are
 * one holder (people read the ranges; a trace without stacks has only those). */
typedef struct {
    uint32_t site; /* the holder's site (tp_an_memstate_site): its ranges name it */
    int64_t bytes;
    size_t blocks;
    double share;        /* of the live bytes the replay knows */
    int64_t steps_alive; /* age of its oldest block, in steps begun since it was allocated */
    int64_t largest;     /* its largest block */
} tp_an_holder;

/* One segment at a moment. */
typedef struct {
    uint64_t base;
    int64_t size, live, free, largest_hole;
    size_t blocks;
    int64_t pinned_bytes; /* live bytes of blocks allocated before the current step */
    uint32_t pin_site;    /* the site with most of them (0: none) */
    int fits;             /* the moment's request fits its largest hole (1), or not (0) */
} tp_an_segstate;

typedef struct {
    int valid;
    size_t ev;  /* memory events applied */
    int64_t ts; /* the moment (ns) */
    long step;  /* index of the step it falls in; -1: outside the steps */
    int64_t allocated, reserved, in_blocks; /* tp_an_mtotals; reserved -1: unknown */
    int64_t largest_hole;                   /* over the segments; -1: no segment known */
    size_t n_holders;
    tp_an_holder *holders; /* by bytes, largest first */
    size_t n_segs;
    tp_an_segstate *segs; /* by free bytes, most first */
} tp_an_memmoment;

/* The first failed allocation. Figures are the allocator's own when it reported them
 * (ALLOC_FAIL), else the replay's; -1: unknown. */
typedef struct {
    tp_an_oom_kind kind;
    size_t row;      /* memory row of the failure */
    size_t failures; /* every failed allocation of the rank */
    int64_t ts, request, reserved, free, largest_free, live;
    int64_t budget;          /* the most the allocator reserved up to the failure */
    int64_t device_capacity; /* the device's memory when the trace says it; -1 */
    int64_t outside;         /* device_capacity - reserved; -1 when the capacity is unknown */
    uint32_t stack;
    int32_t device;
} tp_an_oomfail;

typedef struct {
    int found;
    uint32_t site;
    double slope;            /* bytes per step (least squares over the step ends) */
    int64_t first, last;     /* the site's live bytes at the first and last step end */
    size_t rises, intervals; /* step-to-step rises of its live bytes */
    size_t allocs, frees;    /* its blocks allocated, and freed, over the whole trace */
} tp_an_memgrowth;

typedef struct {
    int64_t start, end;
    int64_t alloc_end, alloc_max, res_end, res_max; /* -1: unknown */
} tp_an_memstep;

typedef struct {
    tp_an_msource source;
    size_t n_events;
    tp_an_mcounts counts; /* over the whole trace */
    /* the timeline: a point after each event that changed a total, read through
     * tp_an_memuse_pt_ts / tp_an_memuse_pt_res (pt_alloc directly). 12 bytes a point, not
     * the 24 of three int64 arrays (51 MB of the report's peak on lb20k's 2.1 M points): its
     * time is its event's (a row index into the model), and reserved, which changes far less
     * often than allocated (NVTX: at a heap's register only), is kept as runs. */
    size_t n_points;
    uint32_t *pt_row;      /* per point: the memory row it follows (its ts: mem_ts[row]) */
    int64_t *pt_alloc;     /* per point: allocated */
    size_t n_res, res_cap; /* runs of reserved: run k holds from point res_at[k] on */
    uint32_t *res_at;      /* ascending; res_at[0] == 0 when there are points */
    int64_t *res_val;      /* -1: unknown */
    const int64_t *mem_ts; /* the rank's memory events' times (tp_memevents.ts) */
    size_t n_steps;
    tp_an_memstep *steps;
    int64_t peak_allocated, peak_reserved; /* -1: unknown */
    tp_an_memmoment peak;
    int has_oom;
    tp_an_oomfail oom;
    tp_an_memmoment at_oom; /* the state the failing request met */
    tp_an_memgrowth growth;
    tp_an_memstate *state; /* the replay (sites, labels; moments seek it): owned here */
    uint32_t *group;       /* per site: its holder group (sites with the same ranges) */
    uint32_t *group_site;  /* per group: the site that names it */
    size_t n_groups;
} tp_an_memuse;

/* Point i's time, and its reserved (binary search over the runs: a few steps on a native
 * trace). */
static inline int64_t tp_an_memuse_pt_ts(const tp_an_memuse *u, size_t i) {
    return u->mem_ts[u->pt_row[i]];
}
int64_t tp_an_memuse_pt_res(const tp_an_memuse *u, size_t i);

/* Runs the analysis over view `v` into *out (overwritten; free with tp_an_memuse_free). */
void tp_an_memuse_run(const tp_an_view *v, tp_an_memuse *out);
void tp_an_memuse_free(tp_an_memuse *out);

/* The moment after the first `ev` memory events, built as the peak is (holders, segments;
 * `request` > 0 marks which segments cannot fit it). Free with tp_an_memmoment_free. */
void tp_an_memuse_moment(const tp_an_memuse *u, size_t ev, int64_t request, tp_an_memmoment *out);
void tp_an_memmoment_free(tp_an_memmoment *mo);

/* Label of a holder's site: "range 'forward conv1' in 'step'" (see tp_an_msite_label). */
char *tp_an_memuse_site_label(const tp_an_memuse *u, const tp_model *m, uint32_t site, char *buf,
                              size_t cap);

#endif
