/* tp_collector_config: TRAINPROF_* environment -> options; output naming. */
#include "tp_collector_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_codec.h"
#include "tp_layout.h"
#include "tp_record.h"

static void set_error(tp_collector_config *c, const char *name, const char *value) {
    if (!c->error[0])
        snprintf(c->error, sizeof c->error, "ignoring %s=%s", name, value);
}

static int parse_seconds(const char *s, uint64_t *ns) {
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || !(v >= 0) || v > 1e9)
        return -1;
    *ns = (uint64_t)(v * 1e9);
    return 0;
}

static int parse_long(const char *s, long lo, long hi, long *out) {
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

/* The first of `names` set in the environment, as an int; -1 when none is. */
static int32_t first_int(tp_getenv_fn get, const char *const *names) {
    for (; *names; names++) {
        const char *v = get(*names);
        long n;
        if (v && *v && parse_long(v, 0, 1 << 30, &n) == 0)
            return (int32_t)n;
    }
    return -1;
}

static void load_ranks(tp_collector_config *c, tp_getenv_fn get) {
    static const char *const rank[] = {"RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID", 0};
    static const char *const world[] = {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS", 0};
    static const char *const local[] = {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID",
                                        0};
    c->rank = first_int(get, rank);
    c->world_size = first_int(get, world);
    c->local_rank = first_int(get, local);
}

static void load_capture(tp_collector_config *c, tp_getenv_fn get) {
    const char *v = get("TRAINPROF_CAPTURE");
    if (v && *v) {
        const char *at = strrchr(v, '@');
        size_t n = at ? (size_t)(at - v) : strlen(v);
        if (strncmp(v, "nvtx:", 5) != 0 || n <= 5 || n - 5 >= sizeof c->capture_range) {
            set_error(c, "TRAINPROF_CAPTURE", v);
        } else {
            c->capture = TP_CAPTURE_NVTX;
            memcpy(c->capture_range, v + 5, n - 5);
            c->capture_range[n - 5] = 0;
            if (at)
                snprintf(c->capture_domain, sizeof c->capture_domain, "%s", at + 1);
        }
        return;
    }
    const char *d = get("TRAINPROF_DELAY_S"), *u = get("TRAINPROF_DURATION_S");
    if (d && *d && parse_seconds(d, &c->delay_ns) != 0)
        set_error(c, "TRAINPROF_DELAY_S", d);
    if (u && *u && parse_seconds(u, &c->duration_ns) != 0)
        set_error(c, "TRAINPROF_DURATION_S", u);
    if (c->delay_ns || c->duration_ns)
        c->capture = TP_CAPTURE_TIME;
}

static void load_stacks(tp_collector_config *c, tp_getenv_fn get) {
    const char *v = get("TRAINPROF_STACKS");
    c->stacks = TP_STACKS_API;
    if (!v || !*v || !strcmp(v, "api"))
        c->stacks = TP_STACKS_API;
    else if (!strcmp(v, "none"))
        c->stacks = TP_STACKS_NONE;
    else if (!strcmp(v, "all"))
        c->stacks = TP_STACKS_ALL;
    else
        set_error(c, "TRAINPROF_STACKS", v);
}

static void load_numbers(tp_collector_config *c, tp_getenv_fn get) {
    const char *v = get("TRAINPROF_BUFFER_MB");
    long n;
    c->buffer_bytes = (size_t)64 << 20;
    if (v && *v) {
        if (parse_long(v, 1, 1 << 20, &n) == 0)
            c->buffer_bytes = (size_t)n << 20;
        else
            set_error(c, "TRAINPROF_BUFFER_MB", v);
    }
    /* Tests ask for budgets below a megabyte to force drops. */
    v = get("TRAINPROF_BUFFER_KB");
    if (v && *v && parse_long(v, 1, 1 << 30, &n) == 0)
        c->buffer_bytes = (size_t)n << 10;
    v = get("TRAINPROF_FLUSH_MS");
    c->flush_ms = 200;
    if (v && *v && parse_long(v, 1, 3600000, &n) == 0)
        c->flush_ms = (unsigned)n;
    v = get("TRAINPROF_CODEC");
    if (v && *v && tp_codec_by_name(v) && strlen(v) < sizeof c->codec)
        strcpy(c->codec, v);
    else if (v && *v)
        set_error(c, "TRAINPROF_CODEC", v);
    v = get("TRAINPROF_DRAIN");
    c->drain_at_exit = v && !strcmp(v, "exit");
    /* How much nicer than the program the drain thread runs (0: as the program, one thread;
     * docs/collector.md, "The drain"). */
    v = get("TRAINPROF_DRAIN_NICE");
    c->drain_nice = TP_DRAIN_NICE_DEFAULT;
    if (v && *v) {
        if (parse_long(v, 0, 19, &n) == 0)
            c->drain_nice = (int)n;
        else
            set_error(c, "TRAINPROF_DRAIN_NICE", v);
    }
    v = get("TRAINPROF_TARGET_PID");
    c->target_pid = (v && *v && parse_long(v, 1, 1L << 30, &n) == 0) ? n : -1;
}

/* The recording's identity: its id, its main trace, and which exec generation left an image
 * to this one (docs/collector.md, "One recording"). */
static void load_job(tp_collector_config *c, tp_getenv_fn get) {
    const char *v = get("TRAINPROF_JOB_ID");
    char *end;
    if (v && *v) {
        unsigned long long id = strtoull(v, &end, 16);
        c->job_id = *end ? 0 : (uint64_t)id;
    }
    v = get("TRAINPROF_MAIN_TRACE");
    if (v && strlen(v) < sizeof c->main_trace)
        strcpy(c->main_trace, v);
    v = get("TRAINPROF_EXEC_GEN");
    long pid, gen;
    char *colon = v ? strchr(v, ':') : NULL;
    if (colon && *v != ':') {
        pid = strtol(v, &end, 10);
        if (end == colon && parse_long(colon + 1, 1, 1L << 30, &gen) == 0 && pid > 0)
            c->gen_pid = pid, c->gen = (uint32_t)gen;
    }
}

uint32_t tp_collector_config_exec_gen(const tp_collector_config *c, long pid) {
    return c->gen_pid == pid ? c->gen : 0;
}

/* Appends the decimal digits of v at buf[*at]; 0, or -1 when they do not fit. */
TP_VFORK_CHILD
static int put_decimal(char *buf, size_t len, size_t *at, unsigned long long v) {
    char tmp[24];
    size_t n = 0;
    do
        tmp[n++] = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    if (*at + n >= len)
        return -1;
    while (n)
        buf[(*at)++] = tmp[--n];
    return 0;
}

/* By hand rather than snprintf: it runs between vfork() and exec. */
TP_VFORK_CHILD
int tp_collector_config_next_gen(long pid, uint32_t gen, char *buf, size_t len) {
    size_t at = 0;
    if (pid < 0 || put_decimal(buf, len, &at, (unsigned long long)pid) != 0 || at + 1 >= len)
        return -1;
    buf[at++] = ':';
    if (put_decimal(buf, len, &at, (unsigned long long)gen + 1) != 0)
        return -1;
    buf[at] = 0;
    return 0;
}

/* "DEV:INO" as `record` writes it; malformed or absent: no reservation. */
static void load_output_id(tp_collector_config *c, const char *v) {
    unsigned long long dev, ino;
    char tail;
    if (v && sscanf(v, "%llu:%llu%c", &dev, &ino, &tail) == 2 && ino) {
        c->output_dev = dev;
        c->output_ino = ino;
    } else if (v && *v) {
        set_error(c, "TRAINPROF_OUTPUT_ID", v);
    }
}

static const char *plain_getenv(const char *name) {
    return getenv(name);
}

/* Live mode (`record --live/--idle`), its store's budget and the step range. --idle takes the
 * gate: nothing is recorded until the live server opens it. */
static void load_live(tp_collector_config *c, tp_getenv_fn get) {
    const char *v = get("TRAINPROF_LIVE");
    long n;
    if (v && *v) {
        if (!strcmp(v, "live"))
            c->live = TP_LIVE_ON;
        else if (!strcmp(v, "idle"))
            c->live = TP_LIVE_IDLE;
        else
            set_error(c, "TRAINPROF_LIVE", v);
    }
    if (c->live == TP_LIVE_IDLE)
        c->capture = TP_CAPTURE_LIVE;
    c->live_bytes = (size_t)32 << 20;
    v = get("TRAINPROF_LIVE_MB");
    if (v && *v) {
        if (parse_long(v, 1, 1 << 16, &n) == 0)
            c->live_bytes = (size_t)n << 20;
        else
            set_error(c, "TRAINPROF_LIVE_MB", v);
    }
    v = get("TRAINPROF_SAMPLE_HZ");
    c->sample_hz = 0;
    if (v && *v) {
        if (parse_long(v, 0, TP_SAMPLE_HZ_MAX, &n) == 0)
            c->sample_hz = (unsigned)n;
        else
            set_error(c, "TRAINPROF_SAMPLE_HZ", v);
    }
    v = get("TRAINPROF_STEP_RANGE");
    if (v && *v) {
        const char *at = strrchr(v, '@');
        size_t len = at ? (size_t)(at - v) : strlen(v);
        if (!len || len >= sizeof c->step_range ||
            (at && strlen(at + 1) >= sizeof c->step_domain)) {
            set_error(c, "TRAINPROF_STEP_RANGE", v);
            return;
        }
        memcpy(c->step_range, v, len);
        c->step_range[len] = 0;
        if (at)
            strcpy(c->step_domain, at + 1);
    }
}

void tp_collector_config_load(tp_collector_config *c, tp_getenv_fn get) {
    if (!get)
        get = plain_getenv;
    memset(c, 0, sizeof *c);
    const char *v = get("TRAINPROF_OUTPUT");
    if (v && strlen(v) < sizeof c->output)
        strcpy(c->output, v);
    load_output_id(c, get("TRAINPROF_OUTPUT_ID"));
    v = get("TRAINPROF_FORCE");
    c->force = v && *v && strcmp(v, "0") != 0;
    v = get("TRAINPROF_MANIFEST");
    if (v && strlen(v) < sizeof c->manifest)
        strcpy(c->manifest, v);
    load_stacks(c, get);
    load_capture(c, get);
    load_numbers(c, get);
    v = get("TRAINPROF_NO_CUDA");
    c->no_cuda = v && *v && strcmp(v, "0") != 0;
    v = get("TRAINPROF_CUPTI");
    if (v && strlen(v) < sizeof c->cupti)
        strcpy(c->cupti, v);
    v = get("TRAINPROF_FORK");
    c->fork_trace = !(v && !strcmp(v, "none"));
    load_ranks(c, get);
    load_job(c, get);
    load_live(c, get);
}

int tp_collector_config_path(const tp_collector_config *c, long pid, const char *program, char *buf,
                             size_t len) {
    if (c->output[0] && pid == c->target_pid) {
        int n = snprintf(buf, len, "%s", c->output);
        return n < 0 || (size_t)n >= len ? -1 : 0;
    }
    if (c->main_trace[0] && pid != c->target_pid) /* the recording's other processes */
        return tp_layout_process_path(c->main_trace, pid, buf, len);
    const char *base = program ? strrchr(program, '/') : NULL;
    base = base ? base + 1 : (program && *program ? program : "trace");
    const char *slash = c->output[0] ? strrchr(c->output, '/') : NULL;
    int dirlen = slash ? (int)(slash - c->output) : 1;
    const char *dir = slash ? c->output : ".";
    if (slash && dirlen == 0) { /* output in "/" */
        dir = "/";
        dirlen = 1;
    }
    char rank[32] = "";
    if (c->rank >= 0)
        snprintf(rank, sizeof rank, "-rank%d", (int)c->rank);
    int n = snprintf(buf, len, "%.*s/%s%s-%ld.tprof", dirlen, dir, base, rank, pid);
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

int tp_collector_config_alt_path(const char *path, int k, char *buf, size_t len) {
    size_t n = strlen(path);
    size_t stem = n > 6 && !strcmp(path + n - 6, ".tprof") ? n - 6 : n;
    int m = snprintf(buf, len, "%.*s.%d.tprof", (int)stem, path, k);
    return m < 0 || (size_t)m >= len ? -1 : 0;
}
