/* tp_collector: the one process-wide singleton of trainprof, and the per-thread state that
 * the NVTX, CUPTI and activity-API hooks write through.
 *
 * Life: tp_collector_start opens the writer (background drain), writes PROCESS, MODULE and
 * CLOCK_SYNC records; tp_collector_finish writes the end CLOCK_SYNC and the drops and seals
 * the trace exactly once. Hooks call tp_collector_thread() first: it returns NULL when
 * nothing is being recorded, so a hook then costs one TLS load and a compare.
 *
 * The core knows none of its clients (NVTX hooks, the exit/signal guard, CUPTI, live taps):
 * each registers a tp_collector_client, and the core calls it at start, before the trace
 * closes, in a fork child, and for every record the drain writes (the tap). The core owns
 * the fork handling (pthread_atfork). Everything here is internal to the collector library. */
#ifndef TP_COLLECTOR_H
#define TP_COLLECTOR_H

/* The collector's own threads are named so (the sampler, the writer's drain, the live socket's,
 * the guard's helper): the program's count of its threads leaves them out
 * (tp_collector_interpose.c), and the sampler never samples them. */
#define TP_OWN_THREAD_PREFIX "trainprof-"

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "tp_clock.h"
#include "tp_collector_config.h"
#include "tp_stacks.h"
#include "tp_writer.h"

#define TP_STR_CACHE_SLOTS 256
#define TP_STR_INLINE 48 /* a slot of 64 bytes: one cache line, indexed by a shift */
#define TP_STEP_SIDS 65536

/* One slot of the pointer-keyed string cache: a hit needs the same pointer AND the same
 * bytes (a copy is kept), because callers such as Python reuse buffers for other text. */
typedef struct {
    const char *ptr;
    uint32_t sid;
    uint32_t len; /* strlen(copy), | TP_STR_XPAGE when the len + 1 bytes at ptr cross a page */
    char copy[TP_STR_INLINE];
} tp_str_slot;
#define TP_STR_XPAGE 0x80000000u
_Static_assert(sizeof(tp_str_slot) == 64, "a string-cache slot is one cache line");

/* NVTX push depths whose pops are matched exactly (a recursive program may nest deeper than
 * a word's 64 bits). */
#define TP_NVTX_DEPTH_MAX 1024

typedef struct tp_tstate {
    tp_stage *stage; /* NULL: the buffer budget was spent; events count as dropped */
    uint32_t gen;    /* tp_g.gen when made; a mismatch (fork, restart) makes a new one */
    uint32_t tid;
    int depth;         /* NVTX push depth (all domains together, as NVTX returns it) */
    uint64_t rec_mask; /* bit d: the push at depth d was recorded, so its pop is too */
    /* the same for depths 64 to TP_NVTX_DEPTH_MAX - 1; deeper pushes share the last bit */
    uint64_t rec_deep[TP_NVTX_DEPTH_MAX / 64 - 1];
    int capture_depth1; /* depth + 1 of the push that opened --capture, 0 = none */
    int idle_step1;     /* --idle: depth + 1 of an unrecorded step push, 0 = none */
    int rt_depth;       /* CUDA runtime API nesting (driver calls inside reuse its stack) */
    uint32_t rt_stack;
    uint32_t hot; /* tp_g.hot when made and it has a ring: the hooks' fast paths may serve it;
                     else TP_HOT_NEVER */
    uint64_t fast_limit; /* hot: tp_stage_fast_limit(stage, TP_FAST_MAX) after the last
                            general write (tp_collector_place); 0 before the first */
    tp_str_slot strs[TP_STR_CACHE_SLOTS];
    tp_stack_cache stacks;
} tp_tstate;

typedef struct {
    tp_collector_config cfg;
    tp_writer *_Atomic writer; /* read by interposed close() on any thread */
    tp_clock clock;
    _Atomic int active;   /* 1 while recording is possible */
    _Atomic uint32_t gen; /* bumped by every start, so old thread states are dropped */
    /* gen while recording in the hot configuration (tp_collector_hot_config), else 0: a
     * thread state whose `hot` equals it is current and recording, in one compare. */
    _Atomic uint32_t hot;
    _Atomic int capture_open; /* --capture nvtx: ranges of that name open now */
    _Atomic int live_open;    /* --idle: > 0 while the live server wants records */
    /* --idle: steps completed while nothing was recorded (their push found the gate shut),
     * so `ps` counts every step without recording any. Step names are found when a string
     * is interned (slow path): a bit per string id below TP_STEP_SIDS. */
    _Atomic uint64_t idle_steps;
    _Atomic uint32_t step_domain; /* id of the --step-range domain once created, 0: none */
    _Atomic uint8_t step_sids[TP_STEP_SIDS / 8];
    uint64_t t_begin, t_end; /* --delay/--duration window on the trace clock */
    char path[4096];
    char cupti_status[256];                /* why CUDA tracing is off, "" when on or not tried */
    uint16_t rec_flags[TP_REC_TYPE_LIMIT]; /* tp_record_info(type)->flags, for TP_HOT_INIT */
    uint64_t rec_hdr[TP_REC_TYPE_LIMIT];   /* a type's header (of its table struct's size) as
                                              one word, for TP_HOT_HDR */
} tp_collector;

/* A part of the collector the core calls back. Every member may be NULL. */
typedef struct {
    const char *name;
    /* Recording began in this process (the writer is open, nothing recorded yet); runs
     * under the core's lock: write metadata, start helpers, never call start/finish. */
    void (*on_start)(void);
    /* The trace is about to close: hand over what you hold (the writer still takes records;
     * CUPTI's forced flush). */
    void (*before_close)(void);
    /* In a fork child (one thread, right after fork): re-initialise your locks and forget
     * threads that did not survive. The parent's trace is dropped after these run. */
    void (*after_fork_child)(void);
    /* At load, in a process of the recording other than the started one (a launcher's ranks,
     * the programs a wrapper runs): it records from its first event, with `cfg`, not now.
     * Start what makes such an event on its own (the sampler's first sample); never call
     * start/finish. */
    void (*on_deferred)(const tp_collector_config *cfg);
    /* The tap: every record the drain writes to the file, in file order (metadata before the
     * data that uses it), on the drain's thread under its lock: keep it short and never call
     * into the collector. `ctx` is passed back. */
    void (*on_drain)(void *ctx, const tp_rec_hdr *rec);
    /* Whether on_drain wants this recording's records, asked when the writer opens (NULL:
     * always). Without a taker the drain never walks a chunk's records (~70 instructions a
     * record on a launch-bound job). */
    int (*wants_drain)(void);
    void *ctx;
} tp_collector_client;

#define TP_COLLECTOR_MAX_CLIENTS 8

/* Registers `c` (copied). Clients added while recording get on_drain from now on but miss
 * on_start. TP_ERR_FULL past TP_COLLECTOR_MAX_CLIENTS. */
tp_status tp_collector_add_client(const tp_collector_client *c);

extern tp_collector tp_g;
/* initial-exec: one TLS load on the hot path instead of a __tls_get_addr call; the
 * collector needs 8 bytes of static TLS, which glibc keeps in reserve for dlopen. */
extern __thread tp_tstate *tp_tls __attribute__((tls_model("initial-exec")));

/* Nesting of collector code that holds a lock on this thread (slow paths: interning,
 * metadata, thread set-up, domains, stack misses). A signal handler that would wait for the
 * trace to close must not wait while it is > 0 (closing needs that lock): it defers its
 * signal (tp_busy_deferred) and tp_collector_busy_leave raises it again once the lock is
 * released. The hot path (a cached push or pop) never touches it. */
extern __thread int tp_busy __attribute__((tls_model("initial-exec")));
extern __thread int tp_busy_deferred __attribute__((tls_model("initial-exec")));

static inline void tp_collector_busy_enter(void) {
    tp_busy++;
}

void tp_collector_busy_raise(void);

static inline void tp_collector_busy_leave(void) {
    if (--tp_busy == 0 && __builtin_expect(tp_busy_deferred != 0, 0))
        tp_collector_busy_raise();
}

/* At library load (LD_PRELOAD constructor): starts now in the process `trainprof record`
 * started (or when no target is known), else at the process's first event. */
void tp_collector_load(void);

/* Starts recording with `cfg` (NULL: from the environment). Idempotent. */
tp_status tp_collector_start(const tp_collector_config *cfg);

/* Flushes and closes the trace; later events are ignored. Safe to call more than once. */
void tp_collector_finish(void);

/* Closes the trace before execve replaces this image (which runs no atexit handlers); the
 * new image starts its own. An empty trace is deleted then (see discard_if_empty). */
void tp_collector_before_exec(void);

/* Finishes the trace if this process opened it (never a vfork child's parent's trace). For
 * the exit paths that run no atexit handlers (_exit, death by signal). */
void tp_collector_finish_here(void);

/* 1 when this process is recording into a trace of its own now. */
int tp_collector_recording_here(void);

/* The variable the next image of this process must find in its environment so its trace
 * records its exec generation ("TRAINPROF_EXEC_GEN=<pid>:<gen>", into buf). Returns 0, or -1
 * when none is needed (not a `trainprof record` job) or it does not fit. Allocates nothing:
 * it runs between vfork() and exec. */
int tp_collector_exec_gen_env(char *buf, size_t len);

/* Drains all rings to the file now (signal helper, tests). */
void tp_collector_flush(void);

/* The trace file's descriptor now, -1 when none. */
int tp_collector_fd(void);

/* 1 when `fd` is the trace file's descriptor (the program must not close it: to the program
 * that number is not open). */
int tp_collector_owns_fd(int fd);

/* The program is about to make `fd` its own (dup2 onto it): if it is the trace's, the writer
 * lets go of it (and reopens its file elsewhere before its next write). */
void tp_collector_release_fd(int fd);

/* tp_collector_thread's slow path: starts a deferred trace, (re)creates this thread's state
 * after start or fork. A thread refused a ring (budget spent) still gets a state whose
 * events count as dropped. NULL when not recording or out of memory. */
tp_tstate *tp_collector_thread_slow(void);

/* The calling thread's state, or NULL when the collector is not recording. */
static inline tp_tstate *tp_collector_thread(void) {
    tp_tstate *t = tp_tls;
    if (__builtin_expect(t != 0, 1) &&
        t->gen == atomic_load_explicit(&tp_g.gen, memory_order_relaxed) &&
        atomic_load_explicit(&tp_g.active, memory_order_relaxed))
        return t;
    return tp_collector_thread_slow();
}

static inline uint64_t tp_collector_now(void) {
    return tp_clock_now(&tp_g.clock);
}

/* The hooks' fast paths serve only the common configuration, tested once at start rather
 * than at every event: the gate always open (no --capture, --delay, --duration or --idle),
 * no stack at NVTX pushes, the TSC clock. Every other case takes the general path. */
#define TP_HOT_NEVER UINT32_MAX /* a tstate's `hot` that matches no tp_g.hot */

static inline int tp_collector_hot_config(void) {
    return tp_g.cfg.capture == TP_CAPTURE_ALWAYS && tp_g.cfg.stacks < TP_STACKS_ALL &&
           TP_CLOCK_HAVE_TSC && tp_g.clock.use_tsc;
}

/* The calling thread's state when a fast path may serve it (recording, hot configuration, a
 * ring of its own), else NULL: then take the general path (tp_collector_thread). */
static inline tp_tstate *tp_collector_hot_thread(void) {
    tp_tstate *t = tp_tls;
    if (__builtin_expect(t != 0, 1) &&
        t->hot == atomic_load_explicit(&tp_g.hot, memory_order_relaxed))
        return t;
    return NULL;
}

/* tp_collector_now for a thread tp_collector_hot_thread returned: the TSC, without a test. */
static inline uint64_t tp_collector_now_hot(void) {
#if TP_CLOCK_HAVE_TSC
    return tp_clock_now_tsc(&tp_g.clock);
#else
    return tp_collector_now();
#endif
}

/* --idle: 1 when `sid` names a step range and `domain` is the step range's (any domain
 * when --step-range named none). */
static inline int tp_collector_is_step(uint32_t sid, uint32_t domain) {
    if (sid >= TP_STEP_SIDS ||
        !(atomic_load_explicit(&tp_g.step_sids[sid / 8], memory_order_relaxed) & (1u << (sid % 8))))
        return 0;
    if (!tp_g.cfg.step_domain[0])
        return 1;
    uint32_t want = atomic_load_explicit(&tp_g.step_domain, memory_order_relaxed);
    return want && domain == want;
}

/* 1 when an event at `now` is inside the --delay/--duration window or capture range. */
static inline int tp_collector_gate(uint64_t now) {
    switch (tp_g.cfg.capture) {
    case TP_CAPTURE_ALWAYS:
        return 1;
    case TP_CAPTURE_NVTX:
        return atomic_load_explicit(&tp_g.capture_open, memory_order_relaxed) > 0;
    case TP_CAPTURE_LIVE:
        return atomic_load_explicit(&tp_g.live_open, memory_order_relaxed) > 0;
    default:
        return now >= tp_g.t_begin && now < tp_g.t_end;
    }
}

/* TP_REC_INIT and TP_REC_CLEAR for the hot paths: the same header, without a call (the
 * type's flags were copied from tp_record_info into tp_g.rec_flags at start). */
#define TP_HOT_INIT(rec, type_)                                                                    \
    ((rec)->h.type = (type_), (rec)->h.flags = tp_g.rec_flags[(type_)],                            \
     (rec)->h.size = (uint32_t)sizeof(*(rec)))
/* TP_HOT_INIT as one store, for a record of the struct tp_record.h's table names for its
 * type (whose size the header word holds). */
#define TP_HOT_HDR(rec, type_) memcpy(&(rec)->h, &tp_g.rec_hdr[(type_)], sizeof(tp_rec_hdr))
#define TP_HOT_CLEAR(rec, type_) (memset((rec), 0, sizeof(*(rec))), TP_HOT_INIT((rec), (type_)))

/* A u64, or two adjacent u32 fields (the first in the low half: x86-64 and the other
 * little-endian targets, as the NVTX fast path packs them), as one store to a record in the
 * ring; written through memcpy so the compiler stores it directly, not through an array on
 * the stack. */
static inline void tp_put64(void *dst, uint64_t v) {
    memcpy(dst, &v, sizeof v);
}

/* Interned id of `len` bytes (slow path, locked). */
uint32_t tp_collector_intern_n(const char *s, size_t len);

/* tp_collector_intern's miss: interns `s` and caches it in slot `e`. */
uint32_t tp_collector_intern_miss(tp_str_slot *e, const char *s);

/* 1 when the `n` bytes at `a` and `b` are equal; 1 <= `n` <= TP_STR_INLINE. Word compares
 * with overlapping tails, inline (a libc call cost more than the compare). */
static inline int tp_collector_eq_small(const char *a, const char *b, uint32_t n) {
    uint64_t x, y, u = 0;
    if (n >= 8) { /* the first 8, the words between (n > 16 only), the last 8 */
        memcpy(&x, a, 8), memcpy(&y, b, 8);
        u = x ^ y;
        for (uint32_t i = 8; i + 8 < n; i += 8) {
            memcpy(&x, a + i, 8), memcpy(&y, b + i, 8);
            u |= x ^ y;
        }
        memcpy(&x, a + n - 8, 8), memcpy(&y, b + n - 8, 8);
        return !(u | (x ^ y));
    }
    uint32_t p, q;
    if (n >= 4) {
        memcpy(&p, a, 4), memcpy(&q, b, 4), u = p ^ q;
        memcpy(&p, a + n - 4, 4), memcpy(&q, b + n - 4, 4);
        return !(u | (p ^ q));
    }
    for (uint32_t i = 0; i < n; i++)
        u |= (uint8_t)(a[i] ^ b[i]);
    return !u;
}

/* The slot of the thread's string cache that may hold `s`. */
static inline tp_str_slot *tp_collector_str_slot(tp_tstate *t, const char *s) {
    uintptr_t p = (uintptr_t)s;
    /* Slot ((p >> 3) ^ (p >> 11)) % TP_STR_CACHE_SLOTS, its byte offset computed in fewer
     * steps: (p ^ (p >> 8)) keeps those bits at 3..10, a slot is 64 = 8 << 3 bytes. */
    _Static_assert(TP_STR_CACHE_SLOTS == 256 && sizeof(tp_str_slot) == 64, "the offset below");
    return (tp_str_slot *)(void *)((char *)t->strs + ((p ^ (p >> 8)) & (255u << 3)) * 8);
}

/* 1 when slot `e` holds non-NULL `s` and its bytes lie in one page (word compares, no call);
 * 0 otherwise: fast paths leave the rest to tp_collector_intern. */
static inline int tp_collector_str_hit(const tp_str_slot *e, const char *s) {
    return e->ptr == s && !(e->len & TP_STR_XPAGE) && tp_collector_eq_small(e->copy, s, e->len + 1);
}

/* Interned id of NUL-terminated `s` (0 for NULL). always_inline: gcc split it and called the
 * hit's compare out of line (~35 instructions a call). Lock-free when cached: a hit needs the
 * same pointer and the same bytes, NUL included (callers such as Python reuse buffers). The
 * bytes are compared as words only when all len + 1 of them lie in the page of `s`, which is
 * readable as s[0] is: a shorter string now at that address must not make us read past its
 * end into an unmapped page. Elsewhere strcmp, which stops at the first difference. */
__attribute__((always_inline)) static inline uint32_t tp_collector_intern(tp_tstate *t,
                                                                          const char *s) {
    if (!s)
        return 0;
    tp_str_slot *e = tp_collector_str_slot(t, s);
    if (__builtin_expect(tp_collector_str_hit(e, s), 1))
        return e->sid;
    if (e->ptr == s && (e->len & TP_STR_XPAGE) && strcmp(e->copy, s) == 0)
        return e->sid;
    return tp_collector_intern_miss(e, s);
}

/* tp_collector_intern for a name that is a stable pointer by contract (activity.h's names are
 * literals, interned by address): the slot's pointer alone is a hit, no bytes read (~20-35
 * instructions an API or KERNEL record); a different pointer takes the miss, which interns
 * the bytes. The slot is the one tp_collector_intern uses, so both agree on a pointer. */
__attribute__((always_inline)) static inline uint32_t tp_collector_intern_stable(tp_tstate *t,
                                                                                 const char *s) {
    if (!s)
        return 0;
    tp_str_slot *e = tp_collector_str_slot(t, s);
    if (__builtin_expect(e->ptr == s, 1))
        return e->sid;
    return tp_collector_intern_miss(e, s);
}

/* Writes an event through the thread's ring (or counts it dropped without one). A macro so
 * that the copy has the record's size as a constant (a few vector moves, no call). */
#define tp_collector_emit(t, rec) tp_collector_emit_sized((t), (rec), (uint32_t)sizeof(*(rec)))

/* The largest record the fast paths write with tp_collector_place (KERNEL's 88 bytes). */
#define TP_FAST_MAX 96

/* always_inline: left to itself gcc made this a call in the activity and region hooks (~10
 * instructions of call, spills and the size as a variable, at every record). */
__attribute__((always_inline)) static inline void
tp_collector_emit_sized(tp_tstate *t, const void *rec, uint32_t size) {
    /* A hot thread's ring with room before its next out-of-line work (the fast paths' limit;
     * 0 on other threads and before the first write): the copy and one release store. */
    void *p;
    uint64_t end;
    if (t->fast_limit && size <= TP_FAST_MAX &&
        tp_stage_place(t->stage, size, t->fast_limit, &p, &end)) {
        memcpy(p, rec, size);
        tp_stage_commit_fast(t->stage, end);
        return;
    }
    uint16_t type = ((const tp_rec_hdr *)rec)->type;
    tp_stage *s = t->stage;
    if (__builtin_expect(s == 0, 0)) {
        tp_writer_count_drop(tp_g.writer, type, TP_DROP_NO_BUFFER, 1);
        return;
    }
    void *d = tp_stage_reserve(s, size, type);
    if (d) {
        memcpy(d, rec, size);
        tp_stage_commit(s);
    }
    /* reserve and commit may have moved the stage to another ring or past a check: the fast
     * paths' limit is taken again (they fall back here when it runs out). */
    if (t->hot != TP_HOT_NEVER)
        t->fast_limit = tp_stage_fast_limit(s, TP_FAST_MAX);
}

/* Space in the thread's ring for a fast path's record of `size` (<= TP_FAST_MAX) bytes, none
 * of the ring's out-of-line work due: 1 and the space in *rec, *end for tp_stage_commit_fast;
 * 0: use tp_collector_emit (which then takes a new limit). Only for a thread
 * tp_collector_hot_thread returned (it has a ring). */
static inline int tp_collector_place(tp_tstate *t, uint32_t size, void **rec, uint64_t *end) {
    return tp_stage_place(t->stage, size, t->fast_limit, rec, end);
}

/* Stack id of the calling thread's stack when `mode` is enabled, else 0. */
static inline uint32_t tp_collector_stack(tp_tstate *t, tp_stacks_mode needed) {
    if (tp_g.cfg.stacks < needed || needed == TP_STACKS_NONE)
        return 0;
    /* busy while it may hold a lock (a miss interns the stack): tp_stacks_init's hooks */
    return tp_stacks_capture(tp_g.writer, &t->stacks);
}

/* Writes a metadata record; ignores errors (the trace simply lacks it). */
void tp_collector_meta(const void *rec);

/* Records why CUDA tracing is off and says it once on stderr. */
void tp_collector_cuda_off(const char *why);

/* A note kept in the trace as a COUNTER named `prefix` + the first n bytes of `text` (value
 * 1), which the native loader reads back by its prefix (trainprof.cuda_off: ...). */
void tp_collector_counter_note(const char *prefix, const char *text, int n);

#endif
