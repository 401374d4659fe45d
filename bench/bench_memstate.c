/* bench_memstate: replay throughput of the allocator replay (analyzer/tp_an_memstate).
 *
 * Builds a model of N memory events the way a caching allocator writes them through the NVTX
 * memory extension (64 heaps of 20 MiB, regions registered, sometimes resized in place, and
 * unregistered, ~8k live at a time), opens a replay (sites found once, not timed with the
 * replay) and times replaying every event from the start in process CPU time (on a shared
 * machine wall time measures the neighbours), best of 5. Goal: >= 20 M events/s.
 * Usage: bench_memstate [N]   (default 8,000,000) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "tp_an_memstate.h"
#include "tp_model.h"

#define HEAPS 64
#define SEG (20ull << 20)
#define LIVE 8192

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t); /* CPU time: the machine is shared */
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next_rand(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return rng;
}

static void push(tp_rank *r, int64_t ts, uint8_t op, uint64_t heap, uint64_t addr, uint64_t sz) {
    tp_memev_row e = {0};
    e.ts = ts, e.op = op, e.heap = heap, e.addr = addr, e.size = sz, e.device = -1;
    e.kind = op <= TP_MEMEV_OP_HEAP_RESET          ? TP_MEMEV_HEAP
             : op == TP_MEMEV_OP_REGION_UNREGISTER ? TP_MEMEV_FREE
                                                   : TP_MEMEV_ALLOC;
    e.bytes = (int64_t)sz, e.total_allocated = e.total_reserved = -1, e.pid = e.tid = -1;
    tp_memev_push(&r->mem, &e);
}

int main(int argc, char **argv) {
    size_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 8000000;
    tp_model *m = tp_model_new();
    tp_rank *r = tp_model_add_rank(m, "bench");
    r->native = 1;
    int64_t ts = 0;
    for (uint64_t h = 0; h < HEAPS; h++)
        push(r, ts++, TP_MEMEV_OP_HEAP_REGISTER, (h + 1) * SEG, (h + 1) * SEG, SEG);
    uint64_t *live = calloc(LIVE, sizeof *live); /* slot k: 2560-byte cell k of the heaps */
    while (r->mem.n < n) {
        size_t k = next_rand() % LIVE;
        uint64_t addr = SEG + (uint64_t)k * 2560 * 64;
        if (!live[k])
            push(r, ts++, TP_MEMEV_OP_REGION_REGISTER, SEG + (addr - SEG) / SEG * SEG, addr, 2048),
                live[k] = 1;
        else if (next_rand() % 8 == 0)
            push(r, ts++, TP_MEMEV_OP_REGION_RESIZE, 0, addr, 2560);
        else
            push(r, ts++, TP_MEMEV_OP_REGION_UNREGISTER, 0, addr, 0), live[k] = 0;
    }
    tp_model_finish(m);
    tp_an_memstate *s = tp_an_memstate_open(m, &m->ranks[0]);
    double best = 1e30;
    for (int rep = 0; rep < 5; rep++) {
        tp_an_memstate_seek(s, 0);
        double t0 = now_s();
        tp_an_memstate_seek(s, r->mem.n);
        double dt = now_s() - t0;
        best = dt < best ? dt : best;
    }
    tp_an_mtotals t;
    tp_an_memstate_totals(s, &t);
    double rate = (double)m->ranks[0].mem.n / best;
    printf("replayed %zu memory events in %.3f s: %.1f M events/s (goal >= 20 M: %s); %zu live "
           "blocks, %zu segments\n",
           m->ranks[0].mem.n, best, rate / 1e6, rate >= 20e6 ? "met" : "NOT met", t.blocks,
           t.segments);
    tp_an_memstate_close(s);
    tp_model_close(m);
    free(live);
    return 0;
}
