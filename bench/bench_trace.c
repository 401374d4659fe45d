/* bench_trace: speed and size of the trace format on a realistic event mix.
 *
 * The mix imitates a training step as the collector sees it: NVTX push/pop around the step
 * and each layer, cudaLaunchKernel API records each followed by its KERNEL (a few dozen
 * kernel names, incrementing correlation ids, three streams, jittered timestamps), and per
 * step one host-to-device copy and one memset with their API calls. Events are generated up
 * front so only the trace code is timed. Measured in CPU time, each best of a few runs:
 *   staging      producer cost per event into its ring (reserve+copy+commit), one thread;
 *   end-to-end   staging + drain + filter + codec + write(2) on one core (producer drains);
 *   size         file bytes per event;
 *   read         open (all CRCs checked) + iterate every record, one thread.
 * usage: bench_trace [-n EVENTS] [-o FILE] [-C CODEC] [-l ZSTD_LEVEL] [-c CHUNK_KIB] [-r RUNS]
 *                    [-F] [-w] [-R] [-i TRACE]
 * (-C: lz4 (default), lz4-columns, lz4-planes, zstd or none; -F: without the filter, to see
 * what it buys; -w: wall-clock time; -R: only read FILE as it is, e.g. a trace an earlier run
 * or another build wrote, so that a profiler sees the reader alone; -i: the mix is TRACE's
 * data records in file order instead, e.g. a recorded trainer's, so that builds compare on
 * one real record stream; -n is then ignored) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tp_chunk.h"
#include "tp_codec.h"
#include "tp_reader.h"
#include "tp_writer.h"

typedef struct {
    size_t n;     /* events */
    uint8_t *buf; /* records back to back */
    size_t bytes;
    uint32_t sids[64]; /* interned names, filled when writing */
} event_mix;

typedef struct {
    size_t events;
    const char *path;
    int level, runs;
    size_t chunk;
    int no_filter;
    const char *codec;
    int read_only;
    const char *input; /* -i: the mix from this trace */
} bench_opts;

/* CPU time of this process by default: every measurement runs on one thread, and the
 * machines we measure on are shared, so CPU seconds are what we can compare between runs.
 * -w switches to wall-clock time. */
static clockid_t bench_clock = CLOCK_PROCESS_CPUTIME_ID;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(bench_clock, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t rnd(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* ------------------------------------------------------------------ the mix */

typedef struct {
    event_mix *m;
    uint64_t seed, cpu_t, gpu_t;
    uint32_t corr, tid;
} gen;

static void *put(gen *g, uint16_t type, uint32_t size) {
    tp_rec_hdr *h = (tp_rec_hdr *)(g->m->buf + g->m->bytes);
    memset(h, 0, size);
    tp_record_init_hdr(h, type, size);
    g->m->bytes += size;
    g->m->n++;
    return h;
}

static void gen_nvtx(gen *g, int push, uint32_t msg) {
    g->cpu_t += 200 + rnd(&g->seed) % 100;
    if (push) {
        tp_rec_nvtx *r = put(g, TP_REC_NVTX_PUSH, sizeof *r);
        r->ts = g->cpu_t;
        r->tid = g->tid;
        r->msg_sid = msg;
        r->color = 0xff00a0c0u;
    } else {
        tp_rec_nvtx_pop *r = put(g, TP_REC_NVTX_POP, sizeof *r);
        r->ts = g->cpu_t;
        r->tid = g->tid;
    }
}

static tp_rec_api *gen_api(gen *g, uint32_t cbid, uint32_t name) {
    tp_rec_api *a = put(g, TP_REC_API, sizeof *a);
    g->cpu_t += 2500 + rnd(&g->seed) % 1500;
    a->ts = g->cpu_t;
    a->end = a->ts + 1800 + rnd(&g->seed) % 600;
    a->tid = g->tid;
    a->correlation = ++g->corr;
    a->cbid = cbid;
    a->name_sid = name;
    return a;
}

static void gen_kernel(gen *g, uint32_t k) {
    tp_rec_api *a = gen_api(g, 211, 1); /* cudaLaunchKernel */
    tp_rec_kernel *r = put(g, TP_REC_KERNEL, sizeof *r);
    uint64_t start = a->ts + 4000 > g->gpu_t ? a->ts + 4000 : g->gpu_t;
    r->ts = start + rnd(&g->seed) % 300;
    r->end = r->ts + 5000 + 1000 * (k % 13) + rnd(&g->seed) % 800;
    g->gpu_t = r->end;
    r->correlation = a->correlation;
    r->name_sid = 8 + k;
    r->device = 0;
    r->context = 1;
    r->stream = k % 5 == 0 ? 13 : (k % 7 == 0 ? 14 : 7);
    r->grid_x = 108u << (k % 4);
    r->grid_y = 1 + k % 3;
    r->grid_z = 1;
    r->block_x = (uint16_t)(128u << (k % 2));
    r->block_y = r->block_z = 1;
    r->registers_per_thread = (uint16_t)(32 + 8 * (k % 12));
    r->static_shared_bytes = 1024u * (k % 5);
    r->dynamic_shared_bytes = k % 3 ? 49152 : 0;
}

static void gen_copy(gen *g, int memset_) {
    tp_rec_api *a = gen_api(g, memset_ ? 2 : 41, memset_ ? 3 : 2);
    uint64_t start = a->ts + 3000 > g->gpu_t ? a->ts + 3000 : g->gpu_t;
    if (memset_) {
        tp_rec_memset *r = put(g, TP_REC_MEMSET, sizeof *r);
        r->ts = start;
        r->end = start + 1500;
        r->bytes = 1u << 20;
        r->correlation = a->correlation;
        r->context = 1;
        r->stream = 7;
        r->mem_kind = TP_MEM_DEVICE;
        g->gpu_t = r->end;
        return;
    }
    tp_rec_memcpy *r = put(g, TP_REC_MEMCPY, sizeof *r);
    r->ts = start;
    r->end = start + 150000 + rnd(&g->seed) % 5000;
    r->bytes = 6u << 20;
    r->correlation = a->correlation;
    r->context = 1;
    r->stream = 14;
    r->copy_kind = TP_COPY_HTOD;
    r->src_kind = TP_MEM_PINNED;
    r->dst_kind = TP_MEM_DEVICE;
    g->gpu_t = r->end;
}

/* One training step: 2 + 8 * (2 + 12) + 4 = 118 events. */
static void gen_step(gen *g, uint32_t step) {
    gen_nvtx(g, 1, 4);
    gen_copy(g, 0);
    gen_copy(g, 1);
    for (uint32_t layer = 0; layer < 8; layer++) {
        gen_nvtx(g, 1, 5 + layer % 3);
        for (uint32_t k = 0; k < 6; k++)
            gen_kernel(g, (layer * 6 + k + step % 2 * 5) % 40);
        gen_nvtx(g, 0, 0);
    }
    gen_nvtx(g, 0, 0);
}

/* -i: the data records of the trace at `path`, in file order. */
static int load_mix(event_mix *m, const char *path) {
    tp_reader *r;
    tp_cursor *c;
    if (tp_reader_open(path, &r) != TP_OK)
        return 0;
    if (tp_cursor_open(r, NULL, &c) != TP_OK) {
        tp_reader_close(r);
        return 0;
    }
    size_t cap = 1u << 20;
    m->buf = malloc(cap);
    m->n = m->bytes = 0;
    const tp_rec_hdr *h;
    while (m->buf && (h = tp_cursor_next(c))) {
        if (m->bytes + h->size > cap) {
            uint8_t *b = realloc(m->buf, cap *= 2);
            if (!b) {
                free(m->buf);
                m->buf = NULL;
                break;
            }
            m->buf = b;
        }
        memcpy(m->buf + m->bytes, h, h->size);
        m->bytes += h->size;
        m->n++;
    }
    tp_cursor_close(c);
    tp_reader_close(r);
    return m->buf && m->n;
}

static int make_mix(event_mix *m, size_t events) {
    m->buf = malloc(events * 96 + 4096);
    if (!m->buf)
        return 0;
    m->n = m->bytes = 0;
    gen g = {m, 0x9e3779b97f4a7c15ull, 1000000000ull, 1000000000ull, 0, 4242};
    for (uint32_t step = 0; m->n < events; step++)
        gen_step(&g, step);
    return 1;
}

/* ------------------------------------------------------------------ measurements */

static void write_names(tp_writer *w) {
    static const char *const fixed[] = {
        "",           "cudaLaunchKernel", "cudaMemcpyAsync", "cudaMemsetAsync",
        "train_step", "forward",          "backward",        "optimizer"};
    uint32_t id;
    for (int i = 0; i < 8; i++)
        if (i)
            tp_writer_intern_string(w, fixed[i], strlen(fixed[i]), &id);
    for (int k = 0; k < 40; k++) {
        char name[96];
        int n = snprintf(name, sizeof name,
                         "void at::native::kernel_%02d<float, 4>(TensorIterator&)", k);
        tp_writer_intern_string(w, name, (size_t)n, &id);
    }
}

static void feed(tp_stage *s, const event_mix *m) {
    for (size_t off = 0; off < m->bytes;) {
        const tp_rec_hdr *h = (const tp_rec_hdr *)(m->buf + off);
        tp_stage_write(s, h);
        off += h->size;
    }
}

/* Producer cost only: a ring big enough for the whole mix, drained after the clock stops. */
static double bench_staging(const event_mix *m, const bench_opts *o) {
    double best = 1e9;
    for (int run = 0; run < o->runs; run++) {
        tp_writer_opts wo;
        tp_writer_opts_default(&wo);
        wo.ring_bytes = m->bytes + (1u << 20);
        wo.buffer_bytes = 2 * wo.ring_bytes; /* the ring is rounded up to a power of two */
        tp_writer *w;
        tp_stage *s;
        if (tp_writer_open("/dev/null", &wo, &w) != TP_OK ||
            tp_writer_stage_open(w, 1, &s) != TP_OK)
            return 0;
        double t0 = now_s();
        feed(s, m);
        double t = now_s() - t0;
        if (tp_stage_dropped(s))
            fprintf(stderr, "bench: staging dropped %lu\n", (unsigned long)tp_stage_dropped(s));
        best = t < best ? t : best;
        tp_writer_abandon(w);
    }
    return (double)m->n / best;
}

/* Everything on one core: the producer drains its 1 MiB ring itself when it fills. */
static double bench_end_to_end(const event_mix *m, const bench_opts *o, size_t *file_bytes) {
    double best = 1e9;
    for (int run = 0; run < o->runs; run++) {
        tp_writer_opts wo;
        tp_writer_opts_default(&wo);
        wo.block_when_full = 1;
        wo.ring_bytes = 1u << 20;
        wo.zstd_level = o->level;
        wo.codec = o->codec;
        wo.chunk_bytes = o->chunk;
        wo.no_filter = o->no_filter;
        wo.producer = "bench_trace";
        tp_writer *w;
        tp_stage *s;
        double t0 = now_s();
        if (tp_writer_open(o->path, &wo, &w) != TP_OK || tp_writer_stage_open(w, 1, &s) != TP_OK)
            return 0;
        write_names(w);
        feed(s, m);
        tp_writer_stats st;
        tp_writer_flush(w);
        tp_writer_get_stats(w, &st);
        if (tp_writer_close(w) != TP_OK)
            return 0;
        double t = now_s() - t0;
        best = t < best ? t : best;
        FILE *f = fopen(o->path, "rb");
        fseek(f, 0, SEEK_END);
        *file_bytes = (size_t)ftell(f);
        fclose(f);
    }
    return (double)m->n / best;
}

/* Events per second reading o->path; `expect` events (0: any number, counted into *seen). */
static double bench_read(size_t expect, const bench_opts *o, size_t *seen) {
    double best = 1e9;
    for (int run = 0; run < o->runs; run++) {
        double t0 = now_s();
        tp_reader *r;
        tp_cursor *c;
        if (tp_reader_open(o->path, &r) != TP_OK || tp_cursor_open(r, NULL, &c) != TP_OK)
            return 0;
        size_t n = 0;
        uint64_t sum = 0;
        for (const tp_rec_hdr *h; (h = tp_cursor_next(c)); n++)
            sum += tp_record_ts(h);
        tp_cursor_close(c);
        tp_reader_close(r);
        double t = now_s() - t0;
        if ((expect && n != expect) || sum == 0)
            fprintf(stderr, "bench: read %zu of %zu events\n", n, expect);
        *seen = n;
        best = t < best ? t : best;
    }
    return (double)*seen / best;
}

static void row(const char *what, double v, const char *unit, double goal, int lower_better) {
    double ratio = lower_better ? goal / v : v / goal;
    printf("%-34s %10.2f %-8s %8.1f %7.2fx  %s\n", what, v, unit, goal, ratio,
           ratio >= 1 ? "ok" : "MISSED");
}

static int parse(int argc, char **argv, bench_opts *o) {
    *o = (bench_opts){4000000, "/tmp/bench_trace.tprof", 0, 5, 256u << 10, 0, NULL, 0, NULL};
    int c;
    while ((c = getopt(argc, argv, "n:o:C:l:c:r:FwRi:")) != -1) {
        if (c == 'n')
            o->events = strtoull(optarg, NULL, 10);
        else if (c == 'o')
            o->path = optarg;
        else if (c == 'C')
            o->codec = optarg;
        else if (c == 'l')
            o->level = atoi(optarg);
        else if (c == 'c')
            o->chunk = strtoull(optarg, NULL, 10) << 10;
        else if (c == 'r')
            o->runs = atoi(optarg);
        else if (c == 'F')
            o->no_filter = 1;
        else if (c == 'w')
            bench_clock = CLOCK_MONOTONIC;
        else if (c == 'R')
            o->read_only = 1;
        else if (c == 'i')
            o->input = optarg;
        else
            return 0;
    }
    return o->events > 0 && o->runs > 0 && tp_codec_by_name(o->codec);
}

int main(int argc, char **argv) {
    bench_opts o;
    if (!parse(argc, argv, &o)) {
        fprintf(
            stderr,
            "usage: bench_trace [-n EVENTS] [-o FILE] [-C lz4|lz4-columns|lz4-planes|zstd|none] "
            "[-l ZSTD_LEVEL] [-c CHUNK_KIB] [-r RUNS] [-F] [-w] [-R] [-i TRACE]\n");
        return 2;
    }
    if (o.read_only) {
        size_t n = 0;
        double rd = bench_read(0, &o, &n);
        printf("read %s: %zu events, best of %d runs, %s time\n", o.path, n, o.runs,
               bench_clock == CLOCK_MONOTONIC ? "wall-clock" : "CPU");
        row("read (open + iterate all)", rd / 1e6, "M ev/s", 50, 0);
        return 0;
    }
    event_mix m;
    if (!(o.input ? load_mix(&m, o.input) : make_mix(&m, o.events))) {
        fprintf(stderr, "bench: no events%s%s\n", o.input ? " in " : "", o.input ? o.input : "");
        return 1;
    }
    if (!o.level) { /* show the level the writer will use */
        tp_writer_opts d;
        tp_writer_opts_default(&d);
        o.level = d.zstd_level;
    }
    const tp_codec_info *ci = tp_codec_by_name(o.codec);
    printf("trace format benchmark: %zu events (%.1f bytes/event raw), codec %s (zstd level %d), "
           "chunks of %zu KiB, filter %s, best of %d runs, %s time\n\n",
           m.n, (double)m.bytes / (double)m.n, ci->name, o.level, o.chunk >> 10,
           o.no_filter ? "off"
           : ci->filter == TP_FILTER_LANE_SPARSE
               ? "lane-delta + columns + byte planes, zero pieces out"
           : ci->filter == TP_FILTER_LANE_COLUMNS ? "lane-delta + columns + byte planes"
           : ci->filter == TP_FILTER_LANE_PLANES  ? "lane-delta + byte planes"
                                                  : "lane-delta",
           o.runs, bench_clock == CLOCK_MONOTONIC ? "wall-clock" : "CPU");
    printf("%-34s %10s %-8s %8s %8s\n", "measure", "value", "unit", "goal", "ratio");
    double stage = bench_staging(&m, &o);
    size_t file_bytes = 0;
    double e2e = bench_end_to_end(&m, &o, &file_bytes);
    size_t seen;
    double rd = bench_read(m.n, &o, &seen);
    row("staging, per thread", stage / 1e6, "M ev/s", 20, 0);
    row("end-to-end to disk, one core", e2e / 1e6, "M ev/s", 5, 0);
    row("file size", (double)file_bytes / (double)m.n, "B/event", 12, 1);
    row("read (open + iterate all)", rd / 1e6, "M ev/s", 50, 0);
    printf("\nfile: %s, %zu bytes\n", o.path, file_bytes);
    free(m.buf);
    return 0;
}
