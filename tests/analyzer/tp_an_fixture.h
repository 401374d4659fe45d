/* tp_an_fixture: builds tiny hand-made models for the analysis unit tests.
 *
 * Times are given in µs for readability and stored in ns. Every helper returns the row
 * number of the event it added (before tp_model_finish sorts them). */
#ifndef TP_AN_FIXTURE_H
#define TP_AN_FIXTURE_H

#include <math.h>
#include <string.h>

#include "tp_an_view.h"
#include "tp_model.h"

#define FX_US(x) ((int64_t)((x)*1000.0 + ((x) >= 0 ? 0.5 : -0.5)))

typedef struct {
    tp_model *m;
    tp_rank *r;
} fx_model;

static inline fx_model fx_new(void) {
    fx_model f;
    f.m = tp_model_new();
    f.r = tp_model_add_rank(f.m, "fixture.json");
    f.r->rank = 0;
    f.r->rank_hta = 0;
    return f;
}

/* A generic event: name, category, start and duration in µs, stream (-1: CPU), corr. */
static inline void fx_ev(fx_model *f, const char *name, tp_cat cat, double ts_us, double dur_us,
                         int64_t stream, int64_t corr) {
    tp_event_row e;
    tp_event_row_init(&e);
    e.ts = FX_US(ts_us);
    e.dur = FX_US(dur_us);
    e.name = tp_model_intern(f->m, name, strlen(name));
    e.cat = (uint8_t)cat;
    const char *cn = tp_cat_name(cat);
    e.cat_raw = tp_model_intern(f->m, cn, strlen(cn));
    e.stream = stream;
    e.device = stream >= 0 ? 0 : -1;
    e.pid = stream >= 0 ? 0 : 100;
    e.tid = stream >= 0 ? stream : 1;
    e.correlation = corr;
    if (strncmp(name, "cudaLaunchKernel", 16) == 0 || strcmp(name, "cudaMemcpyAsync") == 0)
        e.flags |= TP_EVF_LAUNCH;
    if (strncmp(name, "ProfilerStep#", 13) == 0)
        e.flags |= TP_EVF_PROFILER_STEP;
    tp_events_push(&f->r->ev, &e);
}

/* A kernel on `stream` with its cudaLaunchKernel call (corr) at launch_us lasting call_us. */
static inline void fx_launch(fx_model *f, const char *kernel, double launch_us, double call_us,
                             double ts_us, double dur_us, int64_t stream, int64_t corr) {
    fx_ev(f, "cudaLaunchKernel", TP_CAT_CUDA_RUNTIME, launch_us, call_us, -1, corr);
    fx_ev(f, kernel, TP_CAT_KERNEL, ts_us, dur_us, stream, corr);
}

/* A copy with bytes and Kineto's bandwidth argument. */
static inline void fx_copy(fx_model *f, const char *name, double ts_us, double dur_us,
                           int64_t bytes, uint8_t copy_kind, uint8_t src_kind, int64_t corr) {
    fx_ev(f, name, strncmp(name, "Memset", 6) == 0 ? TP_CAT_MEMSET : TP_CAT_MEMCPY, ts_us, dur_us,
          7, corr);
    tp_events *ev = &f->r->ev;
    size_t i = ev->n - 1;
    tp_events_set_copy(ev, i, bytes, copy_kind, src_kind, 0);
    tp_events_set_bw_gbps(ev, i, dur_us > 0 ? (double)bytes / (dur_us * 1000.0) : 0);
}

/* The view of the fixture's rank (after tp_model_finish): native, or as HTA's (compat_hta). */
static inline void fx_view(tp_an_view *v, const fx_model *f, int compat_hta) {
    tp_an_opts o;
    tp_an_opts_init(&o);
    o.compat_hta = compat_hta;
    tp_an_view_build(v, f->m, &f->m->ranks[0], &o);
}

#endif
