/* tp_live: the live server thread, its socket and requests (see tp_live.h). */
#include "tp_live.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "tp_collector.h"
#include "tp_live_agg.h"
#include "tp_live_store.h"
#include "tp_liveproto.h"

#define MAX_CLIENTS 8
#define MAX_CAPTURES 4
#define STAGE_BYTES ((size_t)4 << 20)
#define POLL_MS 50
#define RATE_PER_S 10.0 /* requests a client may make per second (burst RATE_BURST) */
#define RATE_BURST 20.0
#define MAX_DROPPED_REPLIES 64 /* a client that stopped reading is let go after these */
#define LEASE_NS 5000000000ull /* --idle: how long one WINDOW request keeps recording on */
#define HIST_STEPS 32          /* step times in a STATUS reply */
#define MAX_WINDOW_STEPS 4096  /* the most steps one window or capture may span */

typedef struct {
    int fd; /* -1: free */
    double tokens;
    uint64_t refill_ns;
    uint64_t dropped;
} client;

typedef struct {
    int used;
    int client; /* index into clients, -1 once that client left */
    int out_fd; /* the file the trace goes into */
    int by_steps;
    uint64_t n;     /* steps */
    uint64_t after; /* request time */
    uint64_t t0, t1;
    int have_window;
    uint64_t id;
} capture;

static struct {
    pthread_mutex_t mu; /* staging (tap vs server) */
    uint8_t *stage, *spare;
    size_t len;
    uint64_t tap_dropped;
    _Atomic int on; /* the tap takes records */
    pid_t pid;      /* the serving process */
    int lfd, wake[2];
    pthread_t th;
    int running;
    _Atomic int stop;
    char sock[108];
    char cmd[512];
    tp_live_store *store;
    tp_live_agg *agg;
    client cl[MAX_CLIENTS];
    capture cap[MAX_CAPTURES];
    uint64_t t_start, lease_until, wm_ns;
    uint64_t updates_dropped, refused, requests, captures_done, next_id;
    int said_refused, gate_held;
} L = {.mu = PTHREAD_MUTEX_INITIALIZER, .lfd = -1, .wake = {-1, -1}};

/* ---------------------------------------------------------------- the tap */

/* On the drain's thread, under its lock: a copy and nothing else. */
static void on_drain(void *ctx, const tp_rec_hdr *rec) {
    (void)ctx;
    if (!atomic_load_explicit(&L.on, memory_order_acquire))
        return;
    pthread_mutex_lock(&L.mu);
    if (L.stage && L.len + rec->size <= STAGE_BYTES) {
        memcpy(L.stage + L.len, rec, rec->size);
        L.len += rec->size;
    } else {
        L.tap_dropped++;
    }
    pthread_mutex_unlock(&L.mu);
}

/* Moves what the tap staged into the store (the swap is the only work under the lock). */
static void ingest(void) {
    pthread_mutex_lock(&L.mu);
    uint8_t *buf = L.stage;
    size_t n = L.len;
    L.stage = L.spare;
    L.spare = buf;
    L.len = 0;
    pthread_mutex_unlock(&L.mu);
    for (size_t off = 0; off + sizeof(tp_rec_hdr) <= n;) {
        const tp_rec_hdr *r = (const tp_rec_hdr *)(buf + off);
        if (r->size < sizeof *r || off + r->size > n)
            break;
        tp_live_store_add(L.store, r); /* first: it tells the aggregator of step edges */
        tp_live_agg_add(L.agg, r);
        off += r->size;
    }
    uint64_t now = tp_collector_now();
    tp_live_agg_advance(L.agg, now > L.wm_ns ? now - L.wm_ns : 0);
}

/* ---------------------------------------------------------------- replies */

static void close_client(int i) {
    if (L.cl[i].fd >= 0)
        close(L.cl[i].fd);
    L.cl[i].fd = -1;
    for (int k = 0; k < MAX_CAPTURES; k++)
        if (L.cap[k].used && L.cap[k].client == i)
            L.cap[k].client = -1; /* the capture still completes: the file is the client's */
}

/* Sends without ever waiting: a reply that finds the peer's queue full is dropped. */
static void reply(int i, uint16_t type, const char *text, int fd) {
    if (i < 0 || L.cl[i].fd < 0)
        return;
    tp_status s = tp_live_send(L.cl[i].fd, type, text, strlen(text), fd, 1);
    if (s == TP_OK)
        return;
    L.updates_dropped++;
    if (s != TP_ERR_FULL || ++L.cl[i].dropped > MAX_DROPPED_REPLIES)
        close_client(i);
}

static void reply_error(int i, const char *why) {
    char buf[300];
    snprintf(buf, sizeof buf, "error=%s\n", why);
    reply(i, TP_LIVE_ERROR, buf, -1);
}

/* ---------------------------------------------------------------- status */

static void status_text(char *buf, size_t cap) {
    tp_live_store_stats st;
    tp_live_store_get_stats(L.store, &st);
    tp_writer_stats ws = {0};
    if (tp_g.writer)
        tp_writer_get_stats(tp_g.writer, &ws);
    struct timespec cpu;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);
    uint64_t now = tp_collector_now();
    int n =
        snprintf(buf, cap,
                 "pid=%ld\nppid=%ld\nmode=%s\nuptime_ns=%llu\nsteps=%llu\ntrace=%s\ncmd=%s\n"
                 "records=%llu\nevicted=%llu\ntap_dropped=%llu\nupdates_dropped=%llu\n"
                 "refused=%llu\ncaptures=%llu\nwriter_dropped=%llu\nwriter_overhead_ns=%llu\n"
                 "now=%llu\nsample_hz=%u\n",
                 (long)getpid(), (long)getppid(), tp_g.cfg.live == TP_LIVE_IDLE ? "idle" : "live",
                 (unsigned long long)(now - L.t_start),
                 (unsigned long long)(st.steps + atomic_load(&tp_g.idle_steps)), tp_g.path, L.cmd,
                 (unsigned long long)st.records, (unsigned long long)st.evicted,
                 (unsigned long long)L.tap_dropped, (unsigned long long)L.updates_dropped,
                 (unsigned long long)L.refused, (unsigned long long)L.captures_done,
                 (unsigned long long)ws.dropped_total, (unsigned long long)ws.overhead_ns,
                 (unsigned long long)now, tp_g.cfg.sample_hz);
    tp_live_step h[HIST_STEPS];
    size_t k = tp_live_store_last_steps(L.store, HIST_STEPS, h);
    if (n > 0 && (size_t)n < cap)
        n += snprintf(buf + n, cap - (size_t)n, "step_ns=");
    for (size_t i = 0; i < k && n > 0 && (size_t)n < cap; i++)
        n += snprintf(buf + n, cap - (size_t)n, "%s%llu", i ? "," : "",
                      (unsigned long long)(h[i].end - h[i].start));
    if (n > 0 && (size_t)n < cap)
        snprintf(buf + n, cap - (size_t)n, "\nstep_end=%llu\n",
                 (unsigned long long)(k ? h[k - 1].end : 0));
}

/* ---------------------------------------------------------------- requests */

/* steps=N or seconds=S. Returns 0, or -1 after an error reply. */
static int parse_span(int i, const char *text, int *by_steps, uint64_t *n) {
    double steps = tp_live_get_num(text, "steps", -1), secs = tp_live_get_num(text, "seconds", -1);
    if ((steps >= 1) == (secs > 0)) {
        reply_error(i, "give steps=N (1 or more) or seconds=S (more than 0), not both");
        return -1;
    }
    if (steps > MAX_WINDOW_STEPS || secs > 3600) {
        reply_error(i, "window too large (at most 4096 steps or 3600 seconds)");
        return -1;
    }
    *by_steps = steps >= 1;
    *n = *by_steps ? (uint64_t)steps : (uint64_t)(secs * 1e9);
    return 0;
}

static void on_window(int i, const char *text) {
    int by_steps;
    uint64_t n, t0, t1, now = tp_collector_now();
    if (parse_span(i, text, &by_steps, &n) != 0)
        return;
    L.lease_until = now + LEASE_NS;
    tp_live_step steps[MAX_WINDOW_STEPS];
    size_t k = 0;
    if (by_steps) {
        k = tp_live_store_last_steps(L.store, (size_t)n, steps);
        if (!k) {
            reply_error(i, "no step has completed yet");
            return;
        }
        t0 = steps[0].start, t1 = steps[k - 1].end;
    } else {
        t1 = now, t0 = now > n ? now - n : 0;
    }
    int fd = memfd_create("trainprof-window", MFD_CLOEXEC);
    if (fd < 0) {
        reply_error(i, "cannot create a memory file");
        return;
    }
    int keep = dup(fd); /* the writer closes its descriptor */
    uint64_t recs = 0;
    tp_status s = tp_live_store_write(L.store, t0, t1, fd, &recs);
    if (s != TP_OK || keep < 0) {
        reply_error(i, s == TP_ERR_EMPTY ? "the window is older than the live buffer holds"
                                         : "cannot write the window");
    } else {
        static char buf[TP_LIVE_REPLY_MAX]; /* only this thread uses it */
        snprintf(buf, sizeof buf, "t0=%llu\nt1=%llu\nsteps=%zu\nrecords=%llu\n",
                 (unsigned long long)t0, (unsigned long long)t1, k, (unsigned long long)recs);
        if (by_steps) /* the figures of the same window, at the same moment */
            tp_live_agg_window(L.agg, t0, t1, buf, sizeof buf);
        reply(i, TP_LIVE_OK, buf, keep);
    }
    if (keep >= 0)
        close(keep);
}

/* The aggregator's figures of the last N steps: no trace is cut. */
static void on_figures(int i, const char *text) {
    int by_steps;
    uint64_t n;
    if (parse_span(i, text, &by_steps, &n) != 0)
        return;
    L.lease_until = tp_collector_now() + LEASE_NS;
    if (!by_steps || n > TP_LIVE_AGG_STEPS) {
        reply_error(i, "figures are kept for the last 512 steps: give steps=N, N <= 512");
        return;
    }
    tp_live_step steps[TP_LIVE_AGG_STEPS];
    size_t k = tp_live_store_last_steps(L.store, (size_t)n, steps);
    if (!k) {
        reply_error(i, "no step has completed yet");
        return;
    }
    static char buf[TP_LIVE_REPLY_MAX]; /* only this thread uses it */
    snprintf(buf, sizeof buf, "t0=%llu\nt1=%llu\nsteps=%zu\n", (unsigned long long)steps[0].start,
             (unsigned long long)steps[k - 1].end, k);
    tp_live_agg_window(L.agg, steps[0].start, steps[k - 1].end, buf, sizeof buf);
    reply(i, TP_LIVE_OK, buf, -1);
}

static void on_capture(int i, const char *text, int fd) {
    int by_steps, k;
    uint64_t n;
    if (fd < 0) {
        reply_error(i, "a capture needs the output file's descriptor attached");
        return;
    }
    if (parse_span(i, text, &by_steps, &n) != 0) {
        close(fd);
        return;
    }
    for (k = 0; k < MAX_CAPTURES && L.cap[k].used; k++)
        ;
    if (k == MAX_CAPTURES) {
        reply_error(i, "too many captures in progress");
        close(fd);
        return;
    }
    capture *c = &L.cap[k];
    *c = (capture){1, i, fd, by_steps, n, tp_collector_now(), 0, 0, 0, ++L.next_id};
    if (!by_steps)
        c->t0 = c->after, c->t1 = c->after + n, c->have_window = 1;
    char buf[64];
    snprintf(buf, sizeof buf, "capture=%llu\n", (unsigned long long)c->id);
    reply(i, TP_LIVE_OK, buf, -1);
}

/* Per-client token bucket: 1 when request may be served. */
static int rate_ok(client *c) {
    uint64_t now = tp_collector_now();
    c->tokens += (double)(now - c->refill_ns) * 1e-9 * RATE_PER_S;
    c->refill_ns = now;
    if (c->tokens > RATE_BURST)
        c->tokens = RATE_BURST;
    if (c->tokens < 1)
        return 0;
    c->tokens -= 1;
    return 1;
}

static void on_readable(int i) {
    static tp_live_msg m; /* only this thread uses it */
    tp_status s = tp_live_recv(L.cl[i].fd, &m, TP_LIVE_REQ_MAX, 1);
    if (s == TP_ERR_FULL)
        return;
    if (s == TP_ERR_EMPTY || s == TP_ERR_IO) {
        close_client(i);
        return;
    }
    L.requests++;
    if (s != TP_OK) {
        reply_error(i, s == TP_ERR_ARG ? "request too large" : "malformed request");
        close_client(i);
        return;
    }
    if (!rate_ok(&L.cl[i])) {
        if (m.fd >= 0)
            close(m.fd);
        reply_error(i, "too many requests: at most 10 a second");
        return;
    }
    if (m.type == TP_LIVE_CAPTURE) {
        on_capture(i, m.text, m.fd);
        return;
    }
    if (m.fd >= 0)
        close(m.fd);
    if (m.type == TP_LIVE_STATUS) {
        char buf[TP_LIVE_REPLY_MAX];
        status_text(buf, sizeof buf);
        reply(i, TP_LIVE_OK, buf, -1);
    } else if (m.type == TP_LIVE_WINDOW) {
        on_window(i, m.text);
    } else if (m.type == TP_LIVE_FIGURES) {
        on_figures(i, m.text);
    } else {
        reply_error(i, "unknown request type");
    }
}

/* ---------------------------------------------------------------- connections */

static void say_refused(uid_t uid) {
    L.refused++;
    if (L.said_refused++)
        return;
    fprintf(stderr,
            "trainprof: live: refused a connection from uid %ld (only uid %ld and root are "
            "served)\n",
            (long)uid, (long)geteuid());
}

static void on_accept(void) {
    for (;;) {
        int fd = accept4(L.lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return;
        struct ucred cr;
        socklen_t len = sizeof cr;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0 ||
            (cr.uid != geteuid() && cr.uid != 0)) {
            say_refused(len == sizeof cr ? cr.uid : (uid_t)-1);
            static const char no[] = "error=refused: another user's job\n";
            (void)tp_live_send(fd, TP_LIVE_ERROR, no, sizeof no - 1, -1, 1);
            close(fd);
            continue;
        }
        int i;
        for (i = 0; i < MAX_CLIENTS && L.cl[i].fd >= 0; i++)
            ;
        if (i == MAX_CLIENTS) {
            static const char busy[] = "error=too many clients\n";
            (void)tp_live_send(fd, TP_LIVE_ERROR, busy, sizeof busy - 1, -1, 1);
            close(fd);
            continue;
        }
        L.cl[i] = (client){fd, RATE_BURST, tp_collector_now(), 0};
    }
}

/* ---------------------------------------------------------------- captures */

static void finish_capture(capture *c) {
    uint64_t recs = 0;
    tp_status s = tp_live_store_write(L.store, c->t0, c->t1, c->out_fd, &recs);
    char buf[256];
    if (s == TP_OK) {
        snprintf(buf, sizeof buf, "capture=%llu\nrecords=%llu\nt0=%llu\nt1=%llu\n",
                 (unsigned long long)c->id, (unsigned long long)recs, (unsigned long long)c->t0,
                 (unsigned long long)c->t1);
        L.captures_done++;
        reply(c->client, TP_LIVE_DONE, buf, -1);
    } else {
        reply_error(c->client, s == TP_ERR_EMPTY
                                   ? "the window outgrew the live buffer (TRAINPROF_LIVE_MB)"
                                   : "cannot write the capture");
    }
    c->used = 0;
}

static void progress_captures(uint64_t now) {
    for (int k = 0; k < MAX_CAPTURES; k++) {
        capture *c = &L.cap[k];
        if (!c->used)
            continue;
        if (!c->have_window)
            c->have_window =
                tp_live_store_steps_after(L.store, c->after, (size_t)c->n, &c->t0, &c->t1);
        /* Device records arrive after the host's (CUPTI buffers, the drain period): wait a
         * few drains past the window's end before cutting it, and until the drain has
         * brought records from past that wait (a drain slowed down, e.g. on a loaded
         * machine, lags the clock); a job that records nothing more is cut after 20 waits. */
        if (!c->have_window || now <= c->t1 + L.wm_ns)
            continue;
        tp_live_store_stats st;
        tp_live_store_get_stats(L.store, &st);
        if (st.last_ts > c->t1 + L.wm_ns || now > c->t1 + 20 * L.wm_ns)
            finish_capture(c);
    }
}

/* --idle: records flow while a capture waits or someone watched lately. */
static void update_gate(uint64_t now) {
    if (tp_g.cfg.live != TP_LIVE_IDLE)
        return;
    int want = now < L.lease_until;
    for (int k = 0; k < MAX_CAPTURES; k++)
        want |= L.cap[k].used;
    if (want != L.gate_held) {
        atomic_fetch_add(&tp_g.live_open, want ? 1 : -1);
        L.gate_held = want;
    }
}

/* ---------------------------------------------------------------- the thread */

static void *serve(void *arg) {
    (void)arg;
    struct pollfd p[2 + MAX_CLIENTS];
    while (!atomic_load(&L.stop)) {
        int n = 0, map[MAX_CLIENTS];
        p[n++] = (struct pollfd){L.lfd, POLLIN, 0};
        p[n++] = (struct pollfd){L.wake[0], POLLIN, 0};
        for (int i = 0; i < MAX_CLIENTS; i++)
            if (L.cl[i].fd >= 0) {
                map[n - 2] = i;
                p[n++] = (struct pollfd){L.cl[i].fd, POLLIN, 0};
            }
        int r = poll(p, (nfds_t)n, POLL_MS);
        ingest();
        if (r > 0) {
            if (p[0].revents)
                on_accept();
            for (int j = 2; j < n; j++)
                if (p[j].revents)
                    on_readable(map[j - 2]);
        }
        uint64_t now = tp_collector_now();
        progress_captures(now);
        update_gate(now);
    }
    return NULL;
}

static void read_cmdline(void) {
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, L.cmd, sizeof L.cmd - 1) : -1;
    if (fd >= 0)
        close(fd);
    n = n < 0 ? 0 : n;
    for (ssize_t i = 0; i < n; i++)
        L.cmd[i] = L.cmd[i] == 0 || L.cmd[i] == '\n' ? ' ' : L.cmd[i];
    while (n > 0 && L.cmd[n - 1] == ' ')
        n--;
    L.cmd[n] = 0;
}

static int make_socket(void) {
    char dir[256], why[400];
    tp_status s = TP_ERR_ARG;
    if (tp_live_dir(dir, sizeof dir) != 0 ||
        (s = tp_live_dir_check(dir, 1, why, sizeof why)) != TP_OK ||
        tp_live_sock_path(dir, (long)getpid(), L.sock, sizeof L.sock) != 0) {
        fprintf(stderr, "trainprof: live: no control socket: %s\n",
                s == TP_ERR_STATE ? why : "cannot make its folder");
        return -1;
    }
    unlink(L.sock); /* this pid's: a previous image killed with SIGKILL left it */
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    strcpy(a.sun_path, L.sock);
    L.lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (L.lfd < 0 || bind(L.lfd, (struct sockaddr *)&a, sizeof a) != 0 ||
        chmod(L.sock, 0600) != 0 || listen(L.lfd, 16) != 0) {
        fprintf(stderr, "trainprof: live: cannot serve %s: %s\n", L.sock, strerror(errno));
        if (L.lfd >= 0)
            close(L.lfd);
        L.lfd = -1;
        return -1;
    }
    return 0;
}

static void on_edge(void *ctx, uint64_t ts) {
    tp_live_agg_edge(ctx, ts);
}

static int make_state(void) {
    if (tp_live_agg_open(&L.agg) != TP_OK)
        return -1;
    tp_live_store_opts so = {tp_g.cfg.live_bytes,
                             tp_g.cfg.step_range,
                             tp_g.cfg.step_domain,
                             "trainprof-collector live",
                             on_edge,
                             L.agg};
    L.stage = malloc(STAGE_BYTES);
    L.spare = malloc(STAGE_BYTES);
    if (!L.stage || !L.spare || tp_live_store_open(&so, &L.store) != TP_OK ||
        pipe2(L.wake, O_CLOEXEC | O_NONBLOCK) != 0)
        return -1;
    for (int i = 0; i < MAX_CLIENTS; i++)
        L.cl[i].fd = -1;
    return 0;
}

static void on_start(void) {
    if (tp_g.cfg.live == TP_LIVE_OFF || getpid() != tp_g.cfg.target_pid || L.running)
        return;
    if (make_state() != 0 || make_socket() != 0)
        return;
    read_cmdline();
    L.pid = getpid();
    L.t_start = tp_collector_now();
    uint64_t flush = tp_g.cfg.flush_ms ? tp_g.cfg.flush_ms : 200;
    L.wm_ns = (3 * flush + 100) * 1000000ull;
    atomic_store(&L.stop, 0);
    atomic_store_explicit(&L.on, 1, memory_order_release);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&L.th, NULL, serve, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        atomic_store(&L.on, 0);
        close(L.lfd);
        unlink(L.sock);
        return;
    }
    pthread_setname_np(L.th, "trainprof-live");
    L.running = 1;
}

static void before_close(void) {
    if (!L.running || getpid() != L.pid)
        return;
    atomic_store(&L.stop, 1);
    if (write(L.wake[1], "x", 1) < 0)
        (void)0;
    pthread_join(L.th, NULL);
    L.running = 0;
    unlink(L.sock);
    close(L.lfd);
    L.lfd = -1;
    for (int k = 0; k < MAX_CAPTURES; k++)
        if (L.cap[k].used) {
            reply_error(L.cap[k].client, "the job ended before the window was complete");
            close(L.cap[k].out_fd);
            L.cap[k].used = 0;
        }
    for (int i = 0; i < MAX_CLIENTS; i++)
        close_client(i);
    pthread_mutex_lock(&L.mu);
    atomic_store(&L.on, 0);
    pthread_mutex_unlock(&L.mu);
    if (L.gate_held)
        atomic_fetch_add(&tp_g.live_open, -1);
    L.gate_held = 0;
}

/* The child has none of the parent's threads: it closes the parent's descriptors (the
 * socket stays the parent's) and serves nothing. */
static void after_fork_child(void) {
    pthread_mutex_init(&L.mu, NULL);
    atomic_store(&L.on, 0);
    if (!L.running)
        return;
    L.running = 0;
    close(L.lfd);
    close(L.wake[0]);
    close(L.wake[1]);
    L.lfd = L.wake[0] = L.wake[1] = -1;
    for (int i = 0; i < MAX_CLIENTS; i++)
        if (L.cl[i].fd >= 0)
            close(L.cl[i].fd), L.cl[i].fd = -1;
    for (int k = 0; k < MAX_CAPTURES; k++)
        if (L.cap[k].used)
            close(L.cap[k].out_fd), L.cap[k].used = 0;
    if (L.gate_held)
        atomic_store(&tp_g.live_open, 0);
    L.gate_held = 0;
}

/* Only `record --live/--idle` serves a live view: without it nothing reads the tap. */
static int wants_drain(void) {
    return tp_g.cfg.live != TP_LIVE_OFF;
}

void tp_live_register(void) {
    tp_collector_client c = {.name = "live",
                             .on_start = on_start,
                             .before_close = before_close,
                             .after_fork_child = after_fork_child,
                             .on_drain = on_drain,
                             .wants_drain = wants_drain};
    tp_collector_add_client(&c);
}
