/* tp_progress: the progress line (see the header).
 *
 * The working thread only stores counters (atomics) and, at phase boundaries, the phase's
 * name under the mutex; the reporter's thread wakes every 250 ms, and prints under the same
 * mutex, so a line is never torn between the two. */
#include "tp_progress.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tp_clock.h"

#define TICK_MS 250
#define PLAIN_EVERY_MS 10000 /* a plain line this often when stderr is no terminal */

struct tp_progress {
    FILE *out;
    char prog[32];
    int tty;
    uint64_t t0, after_ns;
    uint64_t last_plain; /* when the last plain line was printed */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t th;
    int stop;
    int shown;    /* the current phase has printed a line */
    int in_place; /* a line without its newline is on the terminal */
    char what[256];
    uint64_t total;
    _Atomic uint64_t bytes, events;
};

static double secs(const tp_progress *p) {
    return (double)(tp_clock_monotonic_ns() - p->t0) / 1e9;
}

static void size_str(char *b, size_t n, uint64_t v) {
    static const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double x = (double)v;
    int u = 0;
    while (x >= 1024 && u < 4)
        x /= 1024, u++;
    snprintf(b, n, u ? "%.1f %s" : "%.0f %s", x, unit[u]);
}

static void count_str(char *b, size_t n, uint64_t v) {
    if (v >= 1000000)
        snprintf(b, n, "%.1f M", (double)v / 1e6);
    else
        snprintf(b, n, "%llu", (unsigned long long)v);
}

/* The running line of the current phase, into b. */
static void running_line(const tp_progress *p, char *b, size_t n) {
    uint64_t by = atomic_load_explicit(&p->bytes, memory_order_relaxed);
    uint64_t ev = atomic_load_explicit(&p->events, memory_order_relaxed);
    char s1[32], s2[32], s3[32];
    int k = snprintf(b, n, "%s: %s:", p->prog, p->what);
    if (by && p->total) {
        size_str(s1, sizeof s1, by), size_str(s2, sizeof s2, p->total);
        k += snprintf(b + k, n - (size_t)k, " %s of %s (%.0f %%),", s1, s2,
                      100.0 * (double)by / (double)p->total);
    } else if (p->total) {
        size_str(s2, sizeof s2, p->total);
        k += snprintf(b + k, n - (size_t)k, " %s,", s2);
    }
    if (ev) {
        count_str(s3, sizeof s3, ev);
        k += snprintf(b + k, n - (size_t)k, " %s events,", s3);
    }
    snprintf(b + k, n - (size_t)k, " %.1f s", secs(p));
}

/* Prints the running line (mutex held): in place on a terminal, else as a line. */
static void show(tp_progress *p) {
    char line[512];
    running_line(p, line, sizeof line);
    if (p->tty)
        fprintf(p->out, "\r%s\x1b[K", line), p->in_place = 1;
    else
        fprintf(p->out, "%s\n", line), p->last_plain = tp_clock_monotonic_ns();
    fflush(p->out);
    p->shown = 1;
}

static int due(const tp_progress *p) {
    uint64_t now = tp_clock_monotonic_ns();
    if (!p->what[0] || now - p->t0 < p->after_ns)
        return 0;
    return p->tty || !p->shown || now - p->last_plain >= (uint64_t)PLAIN_EVERY_MS * 1000000;
}

static void *ticker(void *arg) {
    tp_progress *p = arg;
    pthread_mutex_lock(&p->mu);
    while (!p->stop) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += TICK_MS * 1000000L;
        ts.tv_sec += ts.tv_nsec / 1000000000L, ts.tv_nsec %= 1000000000L;
        pthread_cond_timedwait(&p->cv, &p->mu, &ts);
        if (!p->stop && due(p))
            show(p);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* Ends the current phase (mutex held): its exact figures as a line of their own, once the
 * progress shows at all (the threshold has passed). */
static void end_phase(tp_progress *p) {
    if (!p->what[0])
        return;
    if (tp_clock_monotonic_ns() - p->t0 >= p->after_ns) {
        uint64_t by = atomic_load_explicit(&p->bytes, memory_order_relaxed);
        uint64_t ev = atomic_load_explicit(&p->events, memory_order_relaxed);
        char line[512];
        int k = snprintf(line, sizeof line, "%s: %s: done,", p->prog, p->what);
        if (by)
            k +=
                snprintf(line + k, sizeof line - (size_t)k, " %llu bytes,", (unsigned long long)by);
        if (ev)
            k += snprintf(line + k, sizeof line - (size_t)k, " %llu events,",
                          (unsigned long long)ev);
        snprintf(line + k, sizeof line - (size_t)k, " %.1f s", secs(p));
        fprintf(p->out, p->tty ? "\r%s\x1b[K\n" : "%s\n", line);
        fflush(p->out);
    }
    p->what[0] = 0, p->shown = 0, p->in_place = 0;
}

tp_progress *tp_progress_open(FILE *out, const char *prog, int64_t after_ms, int tty) {
    tp_progress *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->out = out, p->tty = tty;
    snprintf(p->prog, sizeof p->prog, "%s", prog);
    p->t0 = tp_clock_monotonic_ns();
    p->after_ns = after_ms > 0 ? (uint64_t)after_ms * 1000000 : 0;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    if (pthread_create(&p->th, NULL, ticker, p)) {
        pthread_mutex_destroy(&p->mu);
        pthread_cond_destroy(&p->cv);
        free(p);
        return NULL;
    }
    return p;
}

void tp_progress_phase(tp_progress *p, const char *what, uint64_t total_bytes) {
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    if (!what) { /* the phase failed: its running line goes, no final line */
        if (p->in_place)
            fprintf(p->out, "\r\x1b[K"), fflush(p->out);
        p->what[0] = 0, p->shown = 0, p->in_place = 0;
        pthread_mutex_unlock(&p->mu);
        return;
    }
    end_phase(p);
    snprintf(p->what, sizeof p->what, "%s", what[0] ? what : "working");
    p->total = total_bytes;
    atomic_store_explicit(&p->bytes, 0, memory_order_relaxed);
    atomic_store_explicit(&p->events, 0, memory_order_relaxed);
    pthread_mutex_unlock(&p->mu);
}

void tp_progress_update(tp_progress *p, uint64_t bytes, uint64_t events) {
    if (!p)
        return;
    atomic_store_explicit(&p->bytes, bytes, memory_order_relaxed);
    atomic_store_explicit(&p->events, events, memory_order_relaxed);
}

void tp_progress_events(tp_progress *p, uint64_t events) {
    if (p && !(events & 16383))
        atomic_store_explicit(&p->events, events, memory_order_relaxed);
}

void tp_progress_done(tp_progress *p, uint64_t bytes, uint64_t events) {
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    atomic_store_explicit(&p->bytes, bytes, memory_order_relaxed);
    atomic_store_explicit(&p->events, events, memory_order_relaxed);
    end_phase(p);
    pthread_mutex_unlock(&p->mu);
}

void tp_progress_close(tp_progress *p) {
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    end_phase(p);
    p->stop = 1;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->th, NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    free(p);
}
