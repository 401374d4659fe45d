/* test_an_memstate: the allocator replay on hand-built memory events.
 *
 * A native rank with two heaps (segments) and regions in them: layouts (live blocks, holes,
 * largest hole), totals at any moment, resize in place, a heap reset while regions are live,
 * an unregister and a resize of unknown regions (counted, never a crash), seeking backwards;
 * allocation sites from the enclosing NVTX range; Kineto [memory] events whose own totals
 * stand for allocated and reserved; many sites, more than the replay's memo of them holds;
 * memuse's timeline over the replay (its point times from the rows, reserved as runs). */
#include <stdlib.h>
#include <string.h>

#include "tp_an_fixture.h"
#include "tp_an_memstate.h"
#include "tp_an_memuse.h"
#include "tp_test.h"

#define KiB 1024
#define MiB (1024 * 1024)
#define SEG_A 0x10000000ull
#define SEG_B 0x20000000ull

static void mev(fx_model *f, double ts_us, uint8_t op, uint64_t heap, uint64_t addr, int64_t size) {
    tp_memev_row r = {0};
    r.ts = FX_US(ts_us);
    r.op = op;
    r.heap = heap, r.addr = addr;
    r.size = size > 0 ? (uint64_t)size : 0;
    r.device = -1;
    r.pid = 100, r.tid = 1; /* fx_ev's CPU thread */
    int is_heap = op <= TP_MEMEV_OP_HEAP_RESET;
    r.kind = is_heap ? TP_MEMEV_HEAP
                     : (op == TP_MEMEV_OP_REGION_UNREGISTER ? TP_MEMEV_FREE : TP_MEMEV_ALLOC);
    r.bytes = op == TP_MEMEV_OP_REGION_UNREGISTER ? -1 : size;
    r.total_allocated = r.total_reserved = -1;
    tp_memev_push(&f->r->mem, &r);
}

/* Events, in time order (µs):
 *   1 heap A (4 MiB at SEG_A), 2 heap B (2 MiB at SEG_B)
 *  10 'fwd': region a0 = A+0 (1 MiB), 11 a1 = A+1MiB (1 MiB), 12 a2 = A+3MiB (512 KiB)
 *  20 'bwd': region b0 = B+0 (256 KiB)
 *  30 resize a1 -> 2 MiB in place; 31 unregister a0
 *  40 unregister of an unknown address; 41 resize of an unknown address
 *  50 reset heap B (b0 live); 60 unregister heap B; 70 reset of an unknown heap */
static fx_model build(void) {
    fx_model f = fx_new();
    f.r->native = 1;
    fx_ev(&f, "fwd", TP_CAT_USER_ANNOTATION, 5, 10, -1, -1);
    fx_ev(&f, "bwd", TP_CAT_USER_ANNOTATION, 18, 5, -1, -1);
    mev(&f, 1, TP_MEMEV_OP_HEAP_REGISTER, SEG_A, SEG_A, 4 * MiB);
    mev(&f, 2, TP_MEMEV_OP_HEAP_REGISTER, SEG_B, SEG_B, 2 * MiB);
    mev(&f, 10, TP_MEMEV_OP_REGION_REGISTER, SEG_A, SEG_A, MiB);
    mev(&f, 11, TP_MEMEV_OP_REGION_REGISTER, SEG_A, SEG_A + MiB, MiB);
    mev(&f, 12, TP_MEMEV_OP_REGION_REGISTER, SEG_A, SEG_A + 3 * MiB, 512 * KiB);
    mev(&f, 20, TP_MEMEV_OP_REGION_REGISTER, SEG_B, SEG_B, 256 * KiB);
    mev(&f, 30, TP_MEMEV_OP_REGION_RESIZE, 0, SEG_A + MiB, 2 * MiB);
    mev(&f, 31, TP_MEMEV_OP_REGION_UNREGISTER, 0, SEG_A, 0);
    mev(&f, 40, TP_MEMEV_OP_REGION_UNREGISTER, 0, 0xdead0000ull, 0);
    mev(&f, 41, TP_MEMEV_OP_REGION_RESIZE, 0, 0xbeef0000ull, 4 * KiB);
    mev(&f, 50, TP_MEMEV_OP_HEAP_RESET, SEG_B, 0, 0);
    mev(&f, 60, TP_MEMEV_OP_HEAP_UNREGISTER, SEG_B, 0, 0);
    mev(&f, 70, TP_MEMEV_OP_HEAP_RESET, 0x999ull, 0, 0);
    tp_model_finish(f.m);
    return f;
}

static void totals_at(tp_an_memstate *s, size_t ev, int64_t alloc, int64_t res, size_t blocks) {
    tp_an_mtotals t;
    tp_an_memstate_seek(s, ev);
    tp_an_memstate_totals(s, &t);
    CHECK_EQ_I(t.allocated, alloc);
    CHECK_EQ_I(t.reserved, res);
    CHECK_EQ_U(t.blocks, blocks);
}

static void test_totals(void) {
    fx_model f = build();
    tp_an_memstate *s = tp_an_memstate_open(f.m, f.r);
    CHECK_EQ_I(tp_an_memstate_source(s), TP_AN_MSRC_NVTX);
    totals_at(s, 2, 0, 6 * MiB, 0);
    totals_at(s, 6, 2 * MiB + 768 * KiB, 6 * MiB, 4);
    totals_at(s, 7, 3 * MiB + 768 * KiB, 6 * MiB, 4); /* a1 resized in place to 2 MiB */
    totals_at(s, 8, 2 * MiB + 768 * KiB, 6 * MiB, 3);
    totals_at(s, 10, 2 * MiB + 768 * KiB, 6 * MiB, 3); /* the unknown ones changed nothing */
    totals_at(s, 11, 2 * MiB + 512 * KiB, 6 * MiB, 2); /* reset of B released b0 */
    totals_at(s, 12, 2 * MiB + 512 * KiB, 4 * MiB, 2); /* B unregistered */
    totals_at(s, 13, 2 * MiB + 512 * KiB, 4 * MiB, 2);
    const tp_an_mcounts *c = tp_an_memstate_counts(s);
    CHECK_EQ_U(c->unknown_unregister, 1);
    CHECK_EQ_U(c->unknown_resize, 1);
    CHECK_EQ_U(c->reset_live, 1);
    CHECK_EQ_U(c->unknown_heap, 1);
    CHECK_EQ_U(c->double_register, 0);
    size_t freed = 0; /* a0 by its unregister; b0 went with its heap's reset: not a free */
    for (uint32_t i = 0; i < tp_an_memstate_n_sites(s); i++)
        freed += tp_an_memstate_site_freed(s, i);
    CHECK_EQ_U(freed, 1);
    totals_at(s, 3, MiB, 6 * MiB, 1); /* backwards: replayed from the start */
    CHECK_EQ_U(tp_an_memstate_counts(s)->unknown_unregister, 0);
    tp_an_memstate_close(s);
    tp_model_close(f.m);
}

/* After the resize and the free of a0 (8 events): A = [hole 1 MiB][a1 2 MiB][a2 512 KiB]
 * [hole 512 KiB], B = [b0 256 KiB][hole 1.75 MiB]. */
static void test_layout(void) {
    fx_model f = build();
    tp_an_memstate *s = tp_an_memstate_open(f.m, f.r);
    tp_an_memstate_seek(s, 8);
    tp_an_mlayout *l;
    size_t n;
    tp_an_memstate_layouts(s, &l, &n);
    CHECK_EQ_U(n, 2);
    size_t nseg;
    const tp_an_mseg *sg = tp_an_memstate_segments(s, &nseg);
    CHECK_EQ_U(nseg, 2);
    CHECK_EQ_U(sg[l[0].seg].base, SEG_A);
    CHECK_EQ_U(l[0].n_blocks, 2);
    CHECK_EQ_U(l[0].n_holes, 2);
    CHECK_EQ_U(l[0].hole_addr[0], SEG_A);
    CHECK_EQ_I(l[0].hole_size[0], MiB);
    CHECK_EQ_I(l[0].hole_size[1], 512 * KiB);
    CHECK_EQ_I(l[0].largest_hole, MiB);
    CHECK_EQ_I(l[0].live_bytes, 2 * MiB + 512 * KiB);
    CHECK_EQ_I(l[0].free_bytes, MiB + 512 * KiB);
    CHECK_EQ_U(sg[l[1].seg].base, SEG_B);
    CHECK_EQ_I(l[1].largest_hole, 2 * MiB - 256 * KiB);
    tp_an_memstate_layouts_free(l, n);
    CHECK_EQ_I(tp_an_memstate_largest_hole(s), 2 * MiB - 256 * KiB);
    tp_an_memstate_close(s);
    tp_model_close(f.m);
}

/* Sites: a0..a2 in 'fwd', b0 in 'bwd'; the label names the range. */
static void test_sites(void) {
    fx_model f = build();
    tp_an_memstate *s = tp_an_memstate_open(f.m, f.r);
    tp_an_memstate_seek(s, 6);
    size_t n;
    const tp_an_mblock *b = tp_an_memstate_blocks(s, &n);
    CHECK_EQ_U(n, 4);
    char lb[64];
    for (size_t i = 0; i < n; i++) {
        const char *want = b[i].addr == SEG_B ? "range 'bwd'" : "range 'fwd'";
        CHECK_STR(tp_an_msite_label(f.m, tp_an_memstate_site(s, b[i].site), lb, sizeof lb), want);
    }
    CHECK_EQ_U(tp_an_memstate_n_sites(s), 3); /* none, fwd, bwd */
    tp_an_memstate_close(s);
    tp_model_close(f.m);
}

/* Kineto: blocks from Addr/Bytes; allocated and reserved are the trace's own totals. */
static fx_model build_kineto(void) {
    fx_model f = fx_new();
    static const struct {
        double ts;
        uint64_t addr;
        int64_t bytes, total, res;
    } ev[] = {{1, 0x100, 4096, 10000, 20000},
              {2, 0x200, 8192, 18192, 20000},
              {3, 0x100, -4096, 14096, 20000},
              {4, 0x300, -100, 13996, 20000}}; /* freed before profiling began */
    for (size_t i = 0; i < 4; i++) {
        tp_memev_row r = {0};
        r.ts = FX_US(ev[i].ts), r.addr = ev[i].addr, r.bytes = ev[i].bytes;
        r.kind = ev[i].bytes < 0 ? TP_MEMEV_FREE : TP_MEMEV_ALLOC;
        r.total_allocated = ev[i].total, r.total_reserved = ev[i].res;
        r.device = 0, r.pid = r.tid = -1;
        tp_memev_push(&f.r->mem, &r);
    }
    tp_model_finish(f.m);
    return f;
}

static void test_kineto(void) {
    fx_model f = build_kineto();
    tp_an_memstate *s = tp_an_memstate_open(f.m, f.r);
    CHECK_EQ_I(tp_an_memstate_source(s), TP_AN_MSRC_KINETO);
    tp_an_mtotals t;
    tp_an_memstate_seek(s, 2);
    tp_an_memstate_totals(s, &t);
    CHECK_EQ_I(t.allocated, 18192);
    CHECK_EQ_I(t.reserved, 20000);
    CHECK_EQ_I(t.in_blocks, 4096 + 8192);
    tp_an_memstate_seek(s, 4);
    tp_an_memstate_totals(s, &t);
    CHECK_EQ_I(t.in_blocks, 8192);
    CHECK_EQ_U(t.segments, 0);
    CHECK_EQ_U(tp_an_memstate_counts(s)->unknown_unregister, 1);
    tp_an_memstate_close(s);
    tp_model_close(f.m);
}

/* A kept state: every seek backwards from the end to a position at or after the kept one
 * starts there, and ends in the state a replay from the start reaches (totals, counts, live
 * blocks in their order, segments, sites' frees); before it, the replay from the start. */
static void same_state(tp_an_memstate *a, tp_an_memstate *b) {
    tp_an_mtotals x, y;
    tp_an_memstate_totals(a, &x), tp_an_memstate_totals(b, &y);
    CHECK(!memcmp(&x, &y, sizeof x));
    CHECK(!memcmp(tp_an_memstate_counts(a), tp_an_memstate_counts(b), sizeof(tp_an_mcounts)));
    size_t na, nb;
    const tp_an_mblock *ba = tp_an_memstate_blocks(a, &na), *bb = tp_an_memstate_blocks(b, &nb);
    CHECK_EQ_U(na, nb);
    CHECK(na == nb && !memcmp(ba, bb, na * sizeof *ba));
    const tp_an_mseg *sa = tp_an_memstate_segments(a, &na), *sb = tp_an_memstate_segments(b, &nb);
    CHECK_EQ_U(na, nb);
    for (size_t i = 0; i < na && na == nb; i++) /* field by field: the struct has padding */
        CHECK(sa[i].handle == sb[i].handle && sa[i].base == sb[i].base &&
              sa[i].size == sb[i].size && sa[i].ts == sb[i].ts && sa[i].device == sb[i].device);
    for (uint32_t i = 0; i < tp_an_memstate_n_sites(a); i++)
        CHECK_EQ_U(tp_an_memstate_site_freed(a, i), tp_an_memstate_site_freed(b, i));
    CHECK_EQ_I(tp_an_memstate_largest_hole(a), tp_an_memstate_largest_hole(b));
}

static void test_keep(void) {
    fx_model f = build();
    for (size_t k = 0; k <= 13; k++) {
        tp_an_memstate *s = tp_an_memstate_open(f.m, f.r);
        tp_an_memstate_seek(s, k);
        tp_an_memstate_keep(s);
        CHECK(tp_an_memstate_keep_cost(s) > 0 || k < 2);
        for (size_t to = 0; to <= 13; to++) {
            tp_an_memstate_seek(s, 13);
            tp_an_memstate_seek(s, to);
            CHECK_EQ_U(tp_an_memstate_pos(s), to);
            tp_an_memstate *fresh = tp_an_memstate_open(f.m, f.r);
            tp_an_memstate_seek(fresh, to);
            same_state(s, fresh);
            tp_an_memstate_close(fresh);
        }
        tp_an_memstate_close(s);
    }
    tp_model_close(f.m);
}

/* Sites from many stacks: 300 stacks, more than the replay's memo of sites has slots, each
 * allocating twice inside 'fwd' in an order that interleaves them, then one allocation with
 * no stack outside any range. Every block's site is its own row's stack and range; the
 * site-less allocation is a site of its own (as before the memo); and the live blocks are
 * there (never NULL) before the first allocation. */
static void test_many_sites(void) {
    fx_model f = fx_new();
    f.r->native = 1;
    fx_ev(&f, "fwd", TP_CAT_USER_ANNOTATION, 5, 1000, -1, -1);
    enum { STACKS = 300 };
    for (uint32_t k = 0; k < 2 * STACKS; k++) {
        tp_memev_row r = {0};
        r.ts = FX_US(10.0 + (double)k);
        r.op = TP_MEMEV_OP_NONE, r.kind = TP_MEMEV_ALLOC;
        r.addr = 0x100000ull + 0x1000ull * k, r.bytes = 256;
        r.stack = 1 + (k * 7) % STACKS; /* each stack twice, never twice in a row */
        r.device = 0, r.pid = 100, r.tid = 1;
        r.total_allocated = r.total_reserved = -1;
        tp_memev_push(&f.r->mem, &r);
    }
    tp_memev_row r = {0};
    r.ts = FX_US(2000), r.kind = TP_MEMEV_ALLOC, r.addr = 0x900000ull, r.bytes = 64;
    r.device = 0, r.pid = 100, r.tid = 1, r.total_allocated = r.total_reserved = -1;
    tp_memev_push(&f.r->mem, &r);
    tp_model_finish(f.m);
    tp_an_memstate *s = tp_an_memstate_open(f.m, f.r);
    CHECK_EQ_I(tp_an_memstate_source(s), TP_AN_MSRC_DEVICE);
    size_t n;
    CHECK(tp_an_memstate_blocks(s, &n) != NULL);
    CHECK_EQ_U(n, 0);
    tp_an_memstate_seek(s, f.r->mem.n);
    const tp_an_mblock *b = tp_an_memstate_blocks(s, &n);
    CHECK_EQ_U(n, 2 * STACKS + 1);
    CHECK_EQ_U(tp_an_memstate_n_sites(s), 1 + STACKS + 1);
    uint32_t fwd = tp_model_find_str(f.m, "fwd");
    for (size_t i = 0; i < n; i++) {
        const tp_an_msite *x = tp_an_memstate_site(s, b[i].site);
        CHECK_EQ_U(x->stack, f.r->mem.stack[b[i].ev]);
        CHECK_EQ_U(x->name[0], b[i].addr == 0x900000ull ? 0 : fwd);
        CHECK_EQ_U(b[i].site, tp_an_memstate_row_site(s, b[i].ev));
        CHECK(b[i].site != 0); /* site 0 is for no allocation */
    }
    tp_an_memstate_close(s);
    tp_model_close(f.m);
}

/* CUDA-level allocations only (each block its own segment): cudaMalloc / cudaFree rows. */
static fx_model build_device(void) {
    fx_model f = fx_new();
    f.r->native = 1;
    static const struct {
        uint64_t addr;
        int64_t bytes;
    } ev[] = {{0x1000, 4096}, {0x3000, 8192}, {0x1000, -4096}, {0x5000, 100}, {0x7000, -1}};
    for (size_t i = 0; i < sizeof ev / sizeof *ev; i++) {
        tp_memev_row r = {0};
        r.ts = FX_US(1 + (double)i), r.addr = ev[i].addr, r.bytes = ev[i].bytes;
        r.size = ev[i].bytes > 0 ? (uint64_t)ev[i].bytes : 0;
        r.kind = ev[i].bytes < 0 ? TP_MEMEV_FREE : TP_MEMEV_ALLOC;
        r.total_allocated = r.total_reserved = -1;
        r.device = 0, r.pid = 100, r.tid = 1;
        tp_memev_push(&f.r->mem, &r);
    }
    tp_model_finish(f.m);
    return f;
}

/* tp_an_memstate_seek_totals (memuse's replay) against a seek and tp_an_memstate_totals, on
 * every source (NVTX heaps, Kineto's own totals, device allocations), one event at a time,
 * past the end, backwards (a replay from the start) and jumping ahead. */
static void test_seek_totals(void) {
    fx_model fs[3] = {build(), build_kineto(), build_device()};
    static const tp_an_msource src[3] = {TP_AN_MSRC_NVTX, TP_AN_MSRC_KINETO, TP_AN_MSRC_DEVICE};
    for (size_t k = 0; k < 3; k++) {
        tp_an_memstate *a = tp_an_memstate_open(fs[k].m, fs[k].r);
        tp_an_memstate *b = tp_an_memstate_open(fs[k].m, fs[k].r);
        CHECK_EQ_I(tp_an_memstate_source(a), src[k]);
        size_t n = fs[k].r->mem.n, order[64], no = 0;
        for (size_t ev = 1; ev <= n + 1; ev++)
            order[no++] = ev;
        order[no++] = 1, order[no++] = 3, order[no++] = n, order[no++] = 2;
        for (size_t i = 0; i < no; i++) {
            int64_t alloc = -7, res = -7;
            tp_an_mtotals t;
            tp_an_memstate_seek_totals(a, order[i], &alloc, &res);
            tp_an_memstate_seek(b, order[i]);
            tp_an_memstate_totals(b, &t);
            CHECK_EQ_U(tp_an_memstate_pos(a), tp_an_memstate_pos(b));
            CHECK_EQ_I(alloc, t.allocated);
            CHECK_EQ_I(res, t.reserved);
        }
        tp_an_memstate_close(a), tp_an_memstate_close(b);
        tp_model_close(fs[k].m);
    }
}

/* tp_an_memstate_run_totals (memuse's replay in batches) against a seek and
 * tp_an_memstate_totals after every row, on every source: batches of 1, 2 and all the rows,
 * each also stopped at the first row over a bound (every bound from below the least total to
 * above the largest), past the end (clamped), and from the end (nothing). */
static void test_run_totals(void) {
    fx_model fs[3] = {build(), build_kineto(), build_device()};
    for (size_t k = 0; k < 3; k++) {
        tp_an_memstate *a = tp_an_memstate_open(fs[k].m, fs[k].r);
        tp_an_memstate *b = tp_an_memstate_open(fs[k].m, fs[k].r);
        size_t n = fs[k].r->mem.n;
        int64_t alloc[64], res[64], bound[66];
        int ok = 1;
        CHECK(n <= 64); /* the fixtures' size: the arrays above */
        n = n <= 64 ? n : 64;
        bound[0] = -2;
        for (size_t ev = 1; ev <= n; ev++) { /* each row's total as a bound, and one above */
            tp_an_mtotals t;
            tp_an_memstate_seek(b, ev);
            tp_an_memstate_totals(b, &t);
            bound[ev] = t.allocated;
            bound[n + 1] = ev == 1 || t.allocated >= bound[n + 1] ? t.allocated + 1 : bound[n + 1];
        }
        static const size_t widths[] = {1, 2, 64};
        for (size_t w = 0; w < 3; w++) {
            for (size_t q = 0; q < n + 2; q++) {
                int64_t above = bound[q];
                tp_an_memstate_seek(a, 0);
                for (size_t pos = 0; pos < n;) {
                    size_t got = tp_an_memstate_run_totals(a, pos + widths[w], above, alloc, res);
                    ok &= got >= 1 && got <= widths[w];
                    for (size_t j = 0; j < got; j++) {
                        tp_an_mtotals t;
                        tp_an_memstate_seek(b, pos + j + 1);
                        tp_an_memstate_totals(b, &t);
                        ok &= alloc[j] == t.allocated && res[j] == t.reserved;
                        ok &= j + 1 == got || alloc[j] <= above; /* none over it before */
                    }
                    /* short of the batch (and of the end): the last row is over the bound */
                    if (got < widths[w] && pos + got < n)
                        ok &= alloc[got - 1] > above;
                    pos += got;
                    ok &= tp_an_memstate_pos(a) == pos;
                }
                ok &= tp_an_memstate_run_totals(a, n + 5, above, alloc, res) == 0;
            }
        }
        CHECK(ok);
        tp_an_memstate_close(a), tp_an_memstate_close(b);
        tp_model_close(fs[k].m);
    }
}

/* memuse's timeline (a point per event that changed a total; its time from its row, reserved
 * as runs) against the replay's totals after each point's row, on every source and on events
 * at one instant (a point replaced, with the reserved run it began). */
static void check_timeline(const fx_model *f) {
    tp_an_view v;
    tp_an_memuse u;
    fx_view(&v, f, 0);
    tp_an_memuse_run(&v, &u);
    tp_an_memstate *s = tp_an_memstate_open(f->m, f->r);
    const tp_memevents *e = &f->r->mem;
    CHECK(u.n_points > 0 && u.n_res > 0 && u.n_res <= u.n_points);
    CHECK_EQ_U(u.res_at[0], 0);
    int ok = 1;
    for (size_t i = 0; i < u.n_points; i++) {
        int64_t alloc, res;
        tp_an_memstate_seek_totals(s, u.pt_row[i] + 1, &alloc, &res);
        ok &= tp_an_memuse_pt_ts(&u, i) == e->ts[u.pt_row[i]];
        ok &= u.pt_alloc[i] == alloc && tp_an_memuse_pt_res(&u, i) == res;
        if (i) /* one point per instant (the later state stands) */
            ok &= tp_an_memuse_pt_ts(&u, i) > tp_an_memuse_pt_ts(&u, i - 1);
        /* the last row at this instant is the point's */
        ok &= u.pt_row[i] + 1 == e->n || e->ts[u.pt_row[i] + 1] > e->ts[u.pt_row[i]];
    }
    for (size_t k = 1; k < u.n_res; k++) /* runs: ascending, each a change */
        ok &= u.res_at[k] > u.res_at[k - 1] && u.res_val[k] != u.res_val[k - 1];
    CHECK(ok);
    tp_an_memstate_close(s);
    tp_an_memuse_free(&u);
    tp_an_view_free(&v);
}

static void test_timeline(void) {
    fx_model fs[3] = {build(), build_kineto(), build_device()};
    for (size_t k = 0; k < 3; k++) {
        check_timeline(&fs[k]);
        tp_model_close(fs[k].m);
    }
    /* heap A, a region; then, at one instant, heap B comes and goes and a region of A comes:
     * the point that began a run of reserved (B's) is replaced by one with A's reserved
     * again, so the run goes with it */
    fx_model f = fx_new();
    f.r->native = 1;
    mev(&f, 1, TP_MEMEV_OP_HEAP_REGISTER, SEG_A, SEG_A, 4 * MiB);
    mev(&f, 2, TP_MEMEV_OP_REGION_REGISTER, SEG_A, SEG_A, MiB);
    mev(&f, 3, TP_MEMEV_OP_HEAP_REGISTER, SEG_B, SEG_B, 2 * MiB);
    mev(&f, 3, TP_MEMEV_OP_HEAP_UNREGISTER, SEG_B, 0, 0);
    mev(&f, 3, TP_MEMEV_OP_REGION_REGISTER, SEG_A, SEG_A + MiB, MiB);
    mev(&f, 4, TP_MEMEV_OP_REGION_REGISTER, SEG_A, SEG_A + 2 * MiB, KiB);
    mev(&f, 4, TP_MEMEV_OP_REGION_UNREGISTER, 0, SEG_A + 2 * MiB, 0);
    tp_model_finish(f.m);
    check_timeline(&f);
    tp_an_view v;
    tp_an_memuse u;
    fx_view(&v, &f, 0);
    tp_an_memuse_run(&v, &u);
    CHECK_EQ_U(u.n_points, 4); /* t = 1, 2, 3 and 4 (4's total back to 3's: still a point) */
    CHECK_EQ_U(u.n_res, 1);    /* 4 MiB throughout: B's 6 MiB never stood at an instant's end */
    CHECK_EQ_I(tp_an_memuse_pt_res(&u, 2), 4 * MiB);
    CHECK_EQ_I(u.pt_alloc[2], 2 * MiB);
    CHECK_EQ_I(u.pt_alloc[3], 2 * MiB);
    tp_an_memuse_free(&u);
    tp_an_view_free(&v);
    tp_model_close(f.m);
}

int main(void) {
    TP_RUN(test_totals);
    TP_RUN(test_layout);
    TP_RUN(test_sites);
    TP_RUN(test_kineto);
    TP_RUN(test_keep);
    TP_RUN(test_many_sites);
    TP_RUN(test_seek_totals);
    TP_RUN(test_run_totals);
    TP_RUN(test_timeline);
    return tp_test_summary();
}
