/* tp_collector_config: the collector's options, read from TRAINPROF_* environment variables
 * that `trainprof record` sets, and the naming of output files.
 *
 * Pure functions of their inputs (the environment is passed in as a getenv-like callback) so
 * they are tested in-process. Unknown or malformed values fall back to defaults and set
 * `error` to a one-line explanation; the collector says it once on stderr and goes on. */
#ifndef TP_COLLECTOR_CONFIG_H
#define TP_COLLECTOR_CONFIG_H

#include <stddef.h>
#include <stdint.h>

/* On the functions a vfork() child runs in its parent's memory before it execs (sigaction()
 * from CPython's _posixsubprocess resetting its signals, the exec wrappers): no ASan
 * instrumentation. In the sanitized builds the ASan runtime is not the process's first
 * library, so its vfork interceptor never runs: it takes the child's frames for overflows of
 * the parent's stack variables, and the child dies where it stands, with the guard's lock of
 * the parent's memory held (the parent then waits for it at its next sigaction, forever). */
#define TP_VFORK_CHILD __attribute__((no_sanitize_address))

typedef enum { TP_STACKS_NONE = 0, TP_STACKS_API = 1, TP_STACKS_ALL = 2 } tp_stacks_mode;
/* TP_CAPTURE_LIVE: `record --idle`: nothing is recorded until the live server opens the gate
 * (tp_g.live_open) for a window someone asked for. */
typedef enum {
    TP_CAPTURE_ALWAYS = 0,
    TP_CAPTURE_NVTX = 1,
    TP_CAPTURE_TIME = 2,
    TP_CAPTURE_LIVE = 3
} tp_capture_mode;
typedef enum { TP_LIVE_OFF = 0, TP_LIVE_ON = 1, TP_LIVE_IDLE = 2 } tp_live_mode;

typedef struct {
    char output[4096];              /* TRAINPROF_OUTPUT: the traced program's trace path, or "" */
    long target_pid;                /* TRAINPROF_TARGET_PID: the process `output` is meant for */
    char manifest[4096];            /* TRAINPROF_MANIFEST: file each process appends its path to */
    tp_stacks_mode stacks;          /* TRAINPROF_STACKS: none | api | all (default api) */
    tp_capture_mode capture;        /* TRAINPROF_CAPTURE / TRAINPROF_DELAY_S / _DURATION_S */
    char capture_range[256];        /* nvtx:NAME -> NAME */
    char capture_domain[256];       /* nvtx:NAME@DOMAIN -> DOMAIN ("" = any domain) */
    uint64_t delay_ns, duration_ns; /* duration 0 = until exit */
    size_t buffer_bytes;            /* TRAINPROF_BUFFER_MB (default 64) */
    unsigned flush_ms;              /* TRAINPROF_FLUSH_MS (default 200) */
    char codec[16];                 /* TRAINPROF_CODEC: lz4 | zstd | none ("": the writer's
                                       default, lz4) */
    int no_cuda;                    /* TRAINPROF_NO_CUDA=1 */
    char cupti[4096]; /* TRAINPROF_CUPTI: the libcupti to load, and only that one ("": search) */
    int fork_trace;   /* TRAINPROF_FORK: trace (default) | none */
    int32_t rank, world_size, local_rank; /* -1 when absent */
    uint64_t job_id;       /* TRAINPROF_JOB_ID (hex): the recording's id; 0 when absent */
    char main_trace[4096]; /* TRAINPROF_MAIN_TRACE: the started process's trace, or "" */
    long gen_pid;          /* TRAINPROF_EXEC_GEN "<pid>:<gen>": an exec'ing image of `gen_pid` */
    uint32_t gen;          /* left it to its generation `gen` (tp_collector_config_exec_gen) */
    char error[256];       /* first problem found, "" when none */

    /* TRAINPROF_OUTPUT_ID=DEV:INO: the empty file `record` created at `output` before the
     * start, which the target process claims (0: none). */
    uint64_t output_dev, output_ino;
    int force;             /* TRAINPROF_FORCE=1: an existing `output` may be replaced */
    int drain_at_exit;     /* TRAINPROF_DRAIN=exit (tests): no background drain, so what the
                              rings hold depends on the budget alone */
    int drain_nice;        /* TRAINPROF_DRAIN_NICE 0-19 (default TP_DRAIN_NICE_DEFAULT): the
                              drain's nice value above the program's (tp_writer_opts) */
    tp_live_mode live;     /* TRAINPROF_LIVE=live|idle: serve the control socket */
    size_t live_bytes;     /* TRAINPROF_LIVE_MB: the live store's data budget (default 32) */
    unsigned sample_hz;    /* TRAINPROF_SAMPLE_HZ 1-1000: sample every Python thread's
                              frames this often (tp_sampler); 0 (default): no sampling */
    char step_range[256];  /* TRAINPROF_STEP_RANGE=NAME[@DOMAIN] -> NAME ("" = defaults) */
    char step_domain[256]; /* -> DOMAIN ("" = any) */
} tp_collector_config;

/* One drain thread at the program's priority: a nice drain was measured slower on the
 * launch-bound trainer (docs/collector.md, "The drain"). */
#define TP_DRAIN_NICE_DEFAULT 0

typedef const char *(*tp_getenv_fn)(const char *name);

/* Fills `c` from the environment seen through `get` (NULL = getenv). */
void tp_collector_config_load(tp_collector_config *c, tp_getenv_fn get);

/* The exec generation of process `pid`'s current image: what TRAINPROF_EXEC_GEN says when it
 * names `pid` (the image before exec'd into this one), else 0 (a fork child inherits its
 * parent's variable, which names the parent). */
uint32_t tp_collector_config_exec_gen(const tp_collector_config *c, long pid);

/* Writes the trace path for process `pid` running `program` (its basename is used), the
 * layout of one recording (docs/collector.md):
 *   - the started process (pid == target_pid): `output`, else
 *     "./<program>[-rank<R>]-<pid>.tprof";
 *   - any other process of the recording, once the started one has named its trace
 *     (`main_trace`): "<main_trace without .tprof>.<pid>.tprof", next to it;
 *   - otherwise "<dir>/<program>[-rank<R>]-<pid>.tprof", dir being the directory of
 *     `output` or ".".
 * Returns 0, or -1 when it does not fit. */
int tp_collector_config_path(const tp_collector_config *c, long pid, const char *program, char *buf,
                             size_t len);

/* The value of TRAINPROF_EXEC_GEN the next image of process `pid` must see, whose current
 * image is generation `gen`: "<pid>:<gen + 1>" into buf. Returns 0, or -1 when it does not
 * fit. Pure, and safe between vfork and exec (no allocation). */
int tp_collector_config_next_gen(long pid, uint32_t gen, char *buf, size_t len);

/* The k-th (k >= 2) alternative to a default trace name taken by another file:
 * "NAME.tprof" -> "NAME.k.tprof". Returns 0, or -1 when it does not fit. */
int tp_collector_config_alt_path(const char *path, int k, char *buf, size_t len);

#endif
