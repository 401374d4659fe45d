/* tp_nvtx_hooks: NVTX core, domain and memory-extension handlers (see tp_nvtx_hooks.h). */
#include "tp_nvtx_hooks.h"

#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExtMemCudaRt.h>
#undef NVTX_NO_IMPL

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tp_collector.h"

#define MAX_DOMAINS 256
#define MSG_MAX 1024

/* Domains deduplicated by name: two DSOs creating "alloc" share one id. */
static struct {
    pthread_mutex_t mu;
    uint32_t n;
    uint32_t name_sid[MAX_DOMAINS];
    char name[MAX_DOMAINS][64];      /* to write them again into a fork child's trace */
    _Atomic uint32_t capture_domain; /* id of the --capture domain once created */
} g_dom = {.mu = PTHREAD_MUTEX_INITIALIZER};

static _Atomic uint64_t g_next_range = 1;
static _Atomic uint64_t g_capture_range; /* start/end range that opened the capture */
/* --capture's name as a registered string (nvtxDomainRegisterStringA: the nvtx package names
 * every range so), found when it is registered; 0: not registered */
static _Atomic uint32_t g_capture_sid;
static _Atomic uint64_t g_next_heap = 1;

#define DOMAIN_ID(d) ((uint32_t)(uintptr_t)(d))

/* ---------------------------------------------------------------- messages */

size_t tp_nvtx_wide_to_utf8(const wchar_t *w, char *out, size_t cap) {
    size_t n = 0;
    for (; w && *w; w++) {
        uint32_t c = (uint32_t)*w;
        char b[4];
        size_t k;
        if (c < 0x80) {
            b[0] = (char)c, k = 1;
        } else if (c < 0x800) {
            b[0] = (char)(0xc0 | c >> 6), b[1] = (char)(0x80 | (c & 0x3f)), k = 2;
        } else if (c < 0x10000) {
            b[0] = (char)(0xe0 | c >> 12), b[1] = (char)(0x80 | ((c >> 6) & 0x3f));
            b[2] = (char)(0x80 | (c & 0x3f)), k = 3;
        } else if (c < 0x110000) {
            b[0] = (char)(0xf0 | c >> 18), b[1] = (char)(0x80 | ((c >> 12) & 0x3f));
            b[2] = (char)(0x80 | ((c >> 6) & 0x3f)), b[3] = (char)(0x80 | (c & 0x3f)), k = 4;
        } else {
            continue; /* not a Unicode code point: skip it */
        }
        if (n + k >= cap)
            break;
        memcpy(out + n, b, k);
        n += k;
    }
    if (cap)
        out[n] = 0;
    return n;
}

static uint32_t intern_wide(const wchar_t *w) {
    char buf[MSG_MAX];
    size_t n = tp_nvtx_wide_to_utf8(w, buf, sizeof buf);
    return w ? tp_collector_intern_n(buf, n) : 0;
}

/* Message id of an attribute block, plus its text when the capture needs to match it. */
static uint32_t attr_message(tp_tstate *t, const nvtxEventAttributes_t *a, const char **text) {
    *text = NULL;
    if (!a)
        return 0;
    switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII:
        *text = a->message.ascii;
        return tp_collector_intern(t, a->message.ascii);
    case NVTX_MESSAGE_TYPE_UNICODE:
        return intern_wide(a->message.unicode);
    case NVTX_MESSAGE_TYPE_REGISTERED:
        return (uint32_t)(uintptr_t)a->message.registered;
    default:
        return 0;
    }
}

/* Fills the common fields of push/mark/start records from attributes. */
static void attr_fill(const nvtxEventAttributes_t *a, uint16_t *flags, uint32_t *category,
                      uint32_t *color, uint32_t *ptype, uint64_t *payload) {
    if (!a)
        return;
    *category = a->category;
    if (a->colorType == NVTX_COLOR_ARGB) {
        *color = a->color;
        *flags |= TP_NVTX_HAS_COLOR;
    }
    *ptype = (uint32_t)a->payloadType;
    switch (a->payloadType) {
    case NVTX_PAYLOAD_TYPE_UNSIGNED_INT64:
    case NVTX_PAYLOAD_TYPE_INT64:
    case NVTX_PAYLOAD_TYPE_DOUBLE:
        memcpy(payload, &a->payload, 8);
        break;
    case NVTX_PAYLOAD_TYPE_UNSIGNED_INT32:
    case NVTX_PAYLOAD_TYPE_INT32:
    case NVTX_PAYLOAD_TYPE_FLOAT: {
        uint32_t v;
        memcpy(&v, &a->payload, 4);
        *payload = v;
        break;
    }
    default:
        *ptype = TP_PAYLOAD_NONE;
    }
}

/* --capture nvtx:NAME[@DOMAIN]: does this range (its text, or its registered string `sid`)
 * open the capture? */
static int capture_matches(uint32_t domain, const char *text, uint32_t sid) {
    if (tp_g.cfg.capture != TP_CAPTURE_NVTX || (!text && !sid))
        return 0;
    if (tp_g.cfg.capture_domain[0] && domain != atomic_load(&g_dom.capture_domain))
        return 0;
    if (!text)
        return sid == atomic_load_explicit(&g_capture_sid, memory_order_relaxed);
    return strcmp(text, tp_g.cfg.capture_range) == 0;
}

/* ---------------------------------------------------------------- push / pop / mark */

/* The fast paths: what push_common and pop_common do in the hot configuration
 * (tp_collector_hot_thread: the gate always open, no push stacks, the TSC clock), for a
 * message already in the thread's string cache, when the ring has room without out-of-line
 * work and the depth has a mask bit of its own (< 63). They write the record in place and
 * call nothing. They return -1, having changed nothing, when any of that does not hold;
 * then the general path runs. The gate being open, --capture nvtx and --idle never set
 * capture_depth1 or idle_step1 here, so the pop has nothing else to do. They store pairs of
 * u32 fields as one little-endian u64. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "u32 pairs stored as one u64");
_Static_assert(offsetof(tp_rec_nvtx, domain) == offsetof(tp_rec_nvtx, tid) + 4 &&
                   offsetof(tp_rec_nvtx, msg_sid) == offsetof(tp_rec_nvtx, tid) + 8 &&
                   offsetof(tp_rec_nvtx, category) == offsetof(tp_rec_nvtx, tid) + 12 &&
                   offsetof(tp_rec_nvtx_pop, domain) == offsetof(tp_rec_nvtx_pop, tid) + 4,
               "tid, domain, msg_sid, category are adjacent");

static inline int push_fast(tp_tstate *t, uint32_t domain, uint32_t sid,
                            const nvtxEventAttributes_t *a) {
    int d = t->depth;
    uint64_t end;
    void *p;
    if (__builtin_expect((unsigned)d >= 63, 0) ||
        !tp_collector_place(t, sizeof(tp_rec_nvtx), &p, &end))
        return -1;
    tp_rec_nvtx *r = p;
    TP_HOT_HDR(r, TP_REC_NVTX_PUSH);
    r->ts = tp_collector_now_hot();
    if (a) { /* as push_common fills them */
        uint16_t flags = r->h.flags;
        uint32_t category = 0, color = 0, ptype = 0;
        uint64_t payload = 0;
        attr_fill(a, &flags, &category, &color, &ptype, &payload);
        r->h.flags = flags;
        r->tid = t->tid, r->domain = domain, r->msg_sid = sid, r->category = category;
        r->color = color, r->payload_type = ptype, r->payload = payload;
        r->stack_id = r->reserved1 = 0;
    } else { /* pairs of u32 fields as one u64 store each (the compiler does not merge them) */
        uint64_t w[2] = {t->tid | (uint64_t)domain << 32, sid}; /* tid, domain; sid, category */
        memcpy(&r->tid, w, sizeof w);
        memset(&r->color, 0, sizeof *r - offsetof(tp_rec_nvtx, color));
    }
    tp_stage_commit_fast(t->stage, end);
    t->depth = d + 1;
    t->rec_mask |= 1ull << d;
    return d;
}

static inline int pop_fast(tp_tstate *t, uint32_t domain) {
    int d = t->depth - 1;
    uint64_t end;
    void *p;
    if (__builtin_expect((unsigned)d >= 63 || !(t->rec_mask >> d & 1), 0) ||
        !tp_collector_place(t, sizeof(tp_rec_nvtx_pop), &p, &end))
        return -1;
    tp_rec_nvtx_pop *r = p;
    TP_HOT_HDR(r, TP_REC_NVTX_POP);
    r->ts = tp_collector_now_hot();
    uint64_t w = t->tid | (uint64_t)domain << 32; /* tid, domain */
    memcpy(&r->tid, &w, sizeof w);
    tp_stage_commit_fast(t->stage, end);
    t->depth = d;
    t->rec_mask &= ~(1ull << d);
    return d;
}

/* The word and bit that say whether the push at depth d was recorded (rec_mask, rec_deep). */
static uint64_t *rec_bit(tp_tstate *t, int d, uint64_t *bit) {
    if (d < 64) {
        *bit = 1ull << d;
        return &t->rec_mask;
    }
    int k = d - 64 < TP_NVTX_DEPTH_MAX - 65 ? d - 64 : TP_NVTX_DEPTH_MAX - 65;
    *bit = 1ull << (k % 64);
    return &t->rec_deep[k / 64];
}

/* `stacks`: the --stacks level at which the push records its calling stack (NVTX's pushes:
 * all; record --pytorch's, a fetch or an update: api, the default, so that a finding on them
 * names the program's line without --stacks all). */
static int push_common(uint32_t domain, const nvtxEventAttributes_t *a, const char *ascii,
                       tp_stacks_mode stacks) {
    tp_tstate *t = tp_collector_thread();
    if (!t)
        return 0;
    int d = t->depth++;
    uint64_t bit, *word = rec_bit(t, d, &bit);
    const char *text = ascii;
    tp_rec_nvtx r;
    TP_HOT_INIT(&r, TP_REC_NVTX_PUSH);
    r.msg_sid = ascii ? tp_collector_intern(t, ascii) : attr_message(t, a, &text);
    if (__builtin_expect(tp_g.cfg.capture == TP_CAPTURE_NVTX, 0) && !t->capture_depth1 &&
        capture_matches(domain, text, r.msg_sid)) {
        t->capture_depth1 = d + 1;
        atomic_fetch_add(&tp_g.capture_open, 1);
    }
    r.ts = tp_collector_now();
    if (!tp_collector_gate(r.ts)) {
        *word &= ~bit;
        if (__builtin_expect(tp_g.cfg.live == TP_LIVE_IDLE, 0) && !t->idle_step1 &&
            tp_collector_is_step(r.msg_sid, domain))
            t->idle_step1 = d + 1; /* counted when it pops: only completed steps count */
        return d;
    }
    *word |= bit;
    r.tid = t->tid;
    r.domain = domain;
    r.category = r.color = r.payload_type = 0;
    r.payload = 0;
    attr_fill(a, &r.h.flags, &r.category, &r.color, &r.payload_type, &r.payload);
    r.stack_id = tp_collector_stack(t, stacks);
    r.reserved1 = 0;
    tp_collector_emit(t, &r);
    return d;
}

static int pop_common(uint32_t domain) {
    tp_tstate *t = tp_collector_thread();
    if (!t || t->depth <= 0)
        return -1;
    int d = --t->depth;
    uint64_t bit, *word = rec_bit(t, d, &bit);
    if (*word & bit) {
        *word &= ~bit;
        tp_rec_nvtx_pop r;
        TP_HOT_INIT(&r, TP_REC_NVTX_POP);
        r.ts = tp_collector_now();
        r.tid = t->tid;
        r.domain = domain;
        tp_collector_emit(t, &r);
    }
    if (t->capture_depth1 == d + 1) {
        t->capture_depth1 = 0;
        atomic_fetch_sub(&tp_g.capture_open, 1);
    }
    if (__builtin_expect(t->idle_step1 == d + 1, 0)) {
        t->idle_step1 = 0;
        atomic_fetch_add_explicit(&tp_g.idle_steps, 1, memory_order_relaxed);
    }
    return d;
}

/* The message id of ASCII `m` when the thread's string cache has it without a call: 1 and
 * *sid, else 0. */
static inline int ascii_fast(tp_tstate *t, const char *m, uint32_t *sid) {
    if (!m)
        return 0;
    tp_str_slot *e = tp_collector_str_slot(t, m);
    if (!tp_collector_str_hit(e, m))
        return 0;
    *sid = e->sid;
    return 1;
}

/* The message id of attributes the fast path serves (ASCII in the cache, or registered):
 * 1 and *sid, else 0. */
static inline int attr_fast(tp_tstate *t, const nvtxEventAttributes_t *a, uint32_t *sid) {
    if (!a)
        return 0;
    if (a->messageType == NVTX_MESSAGE_TYPE_ASCII)
        return ascii_fast(t, a->message.ascii, sid);
    *sid = (uint32_t)(uintptr_t)a->message.registered;
    return a->messageType == NVTX_MESSAGE_TYPE_REGISTERED;
}

/* push with attributes: the fast path when it serves them, else push_common. */
static inline int push_attr(uint32_t domain, const nvtxEventAttributes_t *a) {
    tp_tstate *t = tp_collector_hot_thread();
    uint32_t sid;
    int d;
    if (t && attr_fast(t, a, &sid) && (d = push_fast(t, domain, sid, a)) >= 0)
        return d;
    return push_common(domain, a, NULL, TP_STACKS_ALL);
}

/* pop: the fast path when it serves it, else pop_common. */
static inline int pop_any(uint32_t domain) {
    tp_tstate *t = tp_collector_hot_thread();
    int d;
    if (t && (d = pop_fast(t, domain)) >= 0)
        return d;
    return pop_common(domain);
}

static void mark_common(uint32_t domain, const nvtxEventAttributes_t *a, const char *ascii) {
    tp_tstate *t = tp_collector_thread();
    if (!t)
        return;
    tp_rec_nvtx r;
    TP_HOT_CLEAR(&r, TP_REC_NVTX_MARK);
    r.ts = tp_collector_now();
    if (!tp_collector_gate(r.ts))
        return;
    const char *text;
    r.msg_sid = ascii ? tp_collector_intern(t, ascii) : attr_message(t, a, &text);
    r.tid = t->tid;
    r.domain = domain;
    attr_fill(a, &r.h.flags, &r.category, &r.color, &r.payload_type, &r.payload);
    tp_collector_emit(t, &r);
}

/* ---------------------------------------------------------------- start / end */

static nvtxRangeId_t start_common(uint32_t domain, const nvtxEventAttributes_t *a,
                                  const char *ascii) {
    uint64_t id = atomic_fetch_add_explicit(&g_next_range, 1, memory_order_relaxed);
    tp_tstate *t = tp_collector_thread();
    if (!t)
        return id;
    tp_rec_nvtx_start r;
    TP_HOT_CLEAR(&r, TP_REC_NVTX_START);
    const char *text = ascii;
    r.msg_sid = ascii ? tp_collector_intern(t, ascii) : attr_message(t, a, &text);
    uint64_t none = 0;
    if (capture_matches(domain, text, r.msg_sid) &&
        atomic_compare_exchange_strong(&g_capture_range, &none, id))
        atomic_fetch_add(&tp_g.capture_open, 1);
    r.ts = tp_collector_now();
    if (!tp_collector_gate(r.ts))
        return id;
    r.range_id = id;
    r.tid = t->tid;
    r.domain = domain;
    attr_fill(a, &r.h.flags, &r.category, &r.color, &r.payload_type, &r.payload);
    r.stack_id = tp_collector_stack(t, TP_STACKS_ALL);
    tp_collector_emit(t, &r);
    return id;
}

static void end_common(nvtxRangeId_t id) {
    tp_tstate *t = tp_collector_thread();
    if (!t)
        return;
    tp_rec_nvtx_end r;
    TP_HOT_CLEAR(&r, TP_REC_NVTX_END);
    r.ts = tp_collector_now();
    r.range_id = id;
    r.tid = t->tid;
    uint64_t cap = id;
    int closes = atomic_compare_exchange_strong(&g_capture_range, &cap, 0);
    if (closes || tp_collector_gate(r.ts))
        tp_collector_emit(t, &r);
    if (closes)
        atomic_fetch_sub(&tp_g.capture_open, 1);
}

/* ---------------------------------------------------------------- naming */

static void name_category(uint32_t domain, uint32_t category, uint32_t name_sid) {
    if (!tp_collector_thread())
        return;
    tp_rec_category r;
    TP_REC_CLEAR(&r, TP_REC_CATEGORY);
    r.domain = domain;
    r.category = category;
    r.name_sid = name_sid;
    tp_collector_meta(&r);
}

static void name_thread(uint32_t tid, uint32_t name_sid) {
    if (!tp_collector_thread())
        return;
    tp_rec_thread r;
    TP_REC_CLEAR(&r, TP_REC_THREAD);
    r.tid = tid;
    r.name_sid = name_sid;
    r.pid = (uint32_t)getpid();
    tp_collector_meta(&r);
}

static uint32_t intern_ascii(const char *s) {
    return s ? tp_collector_intern_n(s, strlen(s)) : 0;
}

static nvtxDomainHandle_t domain_create(uint32_t name_sid, const char *ascii) {
    if (!tp_collector_thread() || !name_sid || !ascii)
        return NULL;
    tp_collector_busy_enter();
    pthread_mutex_lock(&g_dom.mu);
    uint32_t id = 0;
    for (uint32_t i = 0; i < g_dom.n && !id; i++)
        if (g_dom.name_sid[i] == name_sid)
            id = i + 1;
    if (!id && g_dom.n < MAX_DOMAINS) {
        snprintf(g_dom.name[g_dom.n], sizeof g_dom.name[0], "%s", ascii);
        g_dom.name_sid[g_dom.n++] = name_sid;
        id = g_dom.n;
        tp_rec_domain r;
        TP_REC_CLEAR(&r, TP_REC_DOMAIN);
        r.id = id;
        r.name_sid = name_sid;
        tp_collector_meta(&r);
    }
    pthread_mutex_unlock(&g_dom.mu);
    tp_collector_busy_leave();
    if (id && ascii && tp_g.cfg.capture_domain[0] && !strcmp(ascii, tp_g.cfg.capture_domain))
        atomic_store(&g_dom.capture_domain, id);
    if (id && ascii && tp_g.cfg.step_domain[0] && !strcmp(ascii, tp_g.cfg.step_domain))
        atomic_store(&tp_g.step_domain, id);
    return (nvtxDomainHandle_t)(uintptr_t)id;
}

/* Client hook: the core's lock is held and nothing is recorded yet, so no domain_create
 * runs now in this process (it needs a recording thread state). */
static void rewrite_domains(void) {
    for (uint32_t i = 0; i < g_dom.n; i++) {
        tp_rec_domain r;
        TP_REC_CLEAR(&r, TP_REC_DOMAIN);
        r.id = i + 1;
        r.name_sid = g_dom.name_sid[i] = intern_ascii(g_dom.name[i]);
        tp_collector_meta(&r);
    }
}

/* Client hook: a parent thread may have held the lock at fork time. */
static void domains_after_fork(void) {
    pthread_mutex_init(&g_dom.mu, NULL);
}

void tp_nvtx_register(void) {
    tp_collector_client c = {
        .name = "nvtx", .on_start = rewrite_domains, .after_fork_child = domains_after_fork};
    tp_collector_add_client(&c);
}

static void domain_destroy(nvtxDomainHandle_t d) {
    uint32_t id = DOMAIN_ID(d);
    if (!tp_collector_thread() || !id || id > MAX_DOMAINS)
        return;
    tp_rec_domain r;
    TP_REC_CLEAR(&r, TP_REC_DOMAIN);
    r.h.flags |= 1; /* destroyed */
    r.id = id;
    tp_collector_busy_enter();
    pthread_mutex_lock(&g_dom.mu);
    r.name_sid = id <= g_dom.n ? g_dom.name_sid[id - 1] : 0;
    pthread_mutex_unlock(&g_dom.mu);
    tp_collector_busy_leave();
    tp_collector_meta(&r);
}

/* ---------------------------------------------------------------- CORE handlers */

static void h_mark_ex(const nvtxEventAttributes_t *a) {
    mark_common(0, a, NULL);
}
static void h_mark_a(const char *m) {
    mark_common(0, NULL, m ? m : "");
}
static void h_mark_w(const wchar_t *m) {
    nvtxEventAttributes_t a = {.messageType = NVTX_MESSAGE_TYPE_UNICODE};
    a.message.unicode = m;
    mark_common(0, &a, NULL);
}
static nvtxRangeId_t h_start_ex(const nvtxEventAttributes_t *a) {
    return start_common(0, a, NULL);
}
static nvtxRangeId_t h_start_a(const char *m) {
    return start_common(0, NULL, m ? m : "");
}
static nvtxRangeId_t h_start_w(const wchar_t *m) {
    nvtxEventAttributes_t a = {.messageType = NVTX_MESSAGE_TYPE_UNICODE};
    a.message.unicode = m;
    return start_common(0, &a, NULL);
}
static void h_end(nvtxRangeId_t id) {
    end_common(id);
}
static int h_push_ex(const nvtxEventAttributes_t *a) {
    return push_attr(0, a);
}
static int h_push_a(const char *m) {
    tp_tstate *t = tp_collector_hot_thread();
    uint32_t sid;
    int d;
    if (t && ascii_fast(t, m, &sid) && (d = push_fast(t, 0, sid, NULL)) >= 0)
        return d;
    return push_common(0, NULL, m ? m : "", TP_STACKS_ALL);
}
static int h_push_w(const wchar_t *m) {
    nvtxEventAttributes_t a = {.messageType = NVTX_MESSAGE_TYPE_UNICODE};
    a.message.unicode = m;
    return push_common(0, &a, NULL, TP_STACKS_ALL);
}
static int h_pop(void) {
    return pop_any(0);
}
static void h_name_cat_a(uint32_t c, const char *n) {
    name_category(0, c, intern_ascii(n));
}
static void h_name_cat_w(uint32_t c, const wchar_t *n) {
    name_category(0, c, intern_wide(n));
}
static void h_name_thread_a(uint32_t tid, const char *n) {
    name_thread(tid, intern_ascii(n));
}
static void h_name_thread_w(uint32_t tid, const wchar_t *n) {
    name_thread(tid, intern_wide(n));
}

/* ---------------------------------------------------------------- record --pytorch */

int tp_nvtx_push(const char *name) {
    return push_common(0, NULL, name ? name : "", TP_STACKS_API);
}

int tp_nvtx_pop(void) {
    return h_pop();
}

void tp_nvtx_range_since(const char *name, uint64_t t0) {
    tp_tstate *t = tp_collector_thread();
    if (!t || !name)
        return;
    uint32_t sid = tp_collector_intern(t, name);
    uint64_t now = tp_collector_now();
    if (!tp_collector_gate(now)) {
        if (tp_g.cfg.live == TP_LIVE_IDLE && tp_collector_is_step(sid, 0))
            atomic_fetch_add_explicit(&tp_g.idle_steps, 1, memory_order_relaxed);
        return;
    }
    tp_rec_nvtx_start r;
    TP_HOT_CLEAR(&r, TP_REC_NVTX_START);
    r.msg_sid = sid;
    r.ts = t0 < now ? t0 : now;
    r.range_id = atomic_fetch_add_explicit(&g_next_range, 1, memory_order_relaxed);
    r.tid = t->tid;
    tp_collector_emit(t, &r);
    tp_rec_nvtx_end e;
    TP_HOT_CLEAR(&e, TP_REC_NVTX_END);
    e.ts = now;
    e.range_id = r.range_id;
    e.tid = t->tid;
    tp_collector_emit(t, &e);
}

/* ---------------------------------------------------------------- CORE2 (domain) handlers */

static void h_dmark(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) {
    mark_common(DOMAIN_ID(d), a, NULL);
}
static nvtxRangeId_t h_dstart(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) {
    return start_common(DOMAIN_ID(d), a, NULL);
}
static void h_dend(nvtxDomainHandle_t d, nvtxRangeId_t id) {
    (void)d, end_common(id);
}
static int h_dpush(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) {
    return push_attr(DOMAIN_ID(d), a);
}
static int h_dpop(nvtxDomainHandle_t d) {
    return pop_any(DOMAIN_ID(d));
}
static nvtxResourceHandle_t h_res_create(nvtxDomainHandle_t d, nvtxResourceAttributes_t *a) {
    static char resource; /* resources are accepted and not recorded */
    (void)d, (void)a;
    return (nvtxResourceHandle_t)&resource;
}
static void h_res_destroy(nvtxResourceHandle_t r) {
    (void)r;
}
static void h_dname_cat_a(nvtxDomainHandle_t d, uint32_t c, const char *n) {
    name_category(DOMAIN_ID(d), c, intern_ascii(n));
}
static void h_dname_cat_w(nvtxDomainHandle_t d, uint32_t c, const wchar_t *n) {
    name_category(DOMAIN_ID(d), c, intern_wide(n));
}
static nvtxStringHandle_t h_reg_a(nvtxDomainHandle_t d, const char *s) {
    (void)d;
    if (!tp_collector_thread())
        return NULL;
    uint32_t sid = intern_ascii(s);
    if (sid && s && tp_g.cfg.capture == TP_CAPTURE_NVTX && !strcmp(s, tp_g.cfg.capture_range))
        atomic_store_explicit(&g_capture_sid, sid, memory_order_relaxed);
    return (nvtxStringHandle_t)(uintptr_t)sid;
}
static nvtxStringHandle_t h_reg_w(nvtxDomainHandle_t d, const wchar_t *s) {
    (void)d;
    return tp_collector_thread() ? (nvtxStringHandle_t)(uintptr_t)intern_wide(s) : NULL;
}
static nvtxDomainHandle_t h_dcreate_a(const char *n) {
    return domain_create(intern_ascii(n), n);
}
static nvtxDomainHandle_t h_dcreate_w(const wchar_t *n) {
    char buf[256];
    tp_nvtx_wide_to_utf8(n, buf, sizeof buf);
    return domain_create(intern_ascii(buf), buf);
}
static void h_ddestroy(nvtxDomainHandle_t d) {
    domain_destroy(d);
}
static void h_initialize(const void *r) {
    (void)r;
}

/* ---------------------------------------------------------------- memory extension */

static void heap_event(nvtxDomainHandle_t d, uint64_t heap, uint64_t addr, uint64_t size,
                       uint32_t op, const nvtxMemHeapDesc_t *desc) {
    tp_tstate *t = tp_collector_thread();
    if (!t)
        return;
    tp_rec_heap r;
    TP_HOT_CLEAR(&r, TP_REC_HEAP);
    r.ts = tp_collector_now();
    if (!tp_collector_gate(r.ts))
        return;
    r.heap = heap;
    r.address = addr;
    r.size = size;
    r.tid = t->tid;
    r.domain = DOMAIN_ID(d);
    r.op = op;
    if (desc) {
        r.usage = desc->usage;
        r.mem_type = desc->type;
        if (desc->messageType == NVTX_MESSAGE_TYPE_ASCII)
            r.name_sid = intern_ascii(desc->message.ascii);
        else if (desc->messageType == NVTX_MESSAGE_TYPE_REGISTERED)
            r.name_sid = (uint32_t)(uintptr_t)desc->message.registered;
        else if (desc->messageType == NVTX_MESSAGE_TYPE_UNICODE)
            r.name_sid = intern_wide(desc->message.unicode);
    }
    r.stack_id = tp_collector_stack(t, TP_STACKS_API);
    tp_collector_emit(t, &r);
}

static nvtxMemHeapHandle_t h_heap_register(nvtxDomainHandle_t d, const nvtxMemHeapDesc_t *h) {
    if (!h)
        return NULL;
    const nvtxMemVirtualRangeDesc_t *v = NULL;
    if (h->type == NVTX_MEM_TYPE_VIRTUAL_ADDRESS && h->typeSpecificDesc &&
        h->typeSpecificDescSize >= sizeof *v)
        v = h->typeSpecificDesc;
    /* For virtual-address heaps the heap's address is its handle (nvToolsExtMem.h). */
    uint64_t handle = v && v->ptr ? (uint64_t)(uintptr_t)v->ptr : atomic_fetch_add(&g_next_heap, 1);
    heap_event(d, handle, v ? (uint64_t)(uintptr_t)v->ptr : 0, v ? v->size : 0, TP_HEAP_REGISTER,
               h);
    return (nvtxMemHeapHandle_t)(uintptr_t)handle;
}
static void h_heap_unregister(nvtxDomainHandle_t d, nvtxMemHeapHandle_t h) {
    heap_event(d, (uint64_t)(uintptr_t)h, 0, 0, TP_HEAP_UNREGISTER, NULL);
}
static void h_heap_reset(nvtxDomainHandle_t d, nvtxMemHeapHandle_t h) {
    heap_event(d, (uint64_t)(uintptr_t)h, 0, 0, TP_HEAP_RESET, NULL);
}

/* A REGION record through the general path (a cleared copy, then tp_collector_emit). */
__attribute__((noinline)) static void region_event_slow(tp_tstate *t, uint32_t domain,
                                                        uint64_t heap, uint64_t addr, uint64_t size,
                                                        uint32_t op, uint32_t stack) {
    tp_rec_region r;
    TP_HOT_CLEAR(&r, TP_REC_REGION);
    r.ts = tp_collector_now();
    r.heap = heap;
    r.address = addr;
    r.size = size;
    r.tid = t->tid;
    r.domain = domain;
    r.op = op;
    r.stack_id = stack;
    tp_collector_emit(t, &r);
}

/* One REGION record per element; one stack for the whole batch. A hot thread's record is
 * written in place in its ring, every field (zeros too) as a store, as push_fast does: no
 * cleared copy on the stack, no call. */
__attribute__((always_inline)) static inline void region_event(tp_tstate *t, int hot,
                                                               uint32_t domain, uint64_t heap,
                                                               uint64_t addr, uint64_t size,
                                                               uint32_t op, uint32_t stack) {
    void *p;
    uint64_t end;
    if (!hot || !tp_collector_place(t, sizeof(tp_rec_region), &p, &end)) {
        region_event_slow(t, domain, heap, addr, size, op, stack);
        return;
    }
    tp_rec_region *r = p;
    TP_HOT_HDR(r, TP_REC_REGION);
    r->ts = tp_collector_now_hot();
    r->heap = heap;
    r->address = addr;
    r->size = size;
    tp_put64(&r->tid, t->tid | (uint64_t)domain << 32);
    tp_put64(&r->op, op | (uint64_t)stack << 32); /* op, stack_id */
    tp_put64(&r->name_sid, 0);                    /* name_sid, reserved */
    tp_stage_commit_fast(t->stage, end);
}

/* The thread state when the batch is recorded, else NULL, and the batch's stack. *hot: the
 * state is hot (region_event may write in place). always_inline: as calls, this and
 * region_event cost the batch hooks ~40 instructions a record of calls and saved registers. */
__attribute__((always_inline)) static inline tp_tstate *region_thread(uint32_t *stack, int *hot) {
    /* A hot thread records with the gate always open: no clock read for the gate. */
    tp_tstate *t = tp_collector_hot_thread();
    *hot = t != NULL;
    if (!t && (!(t = tp_collector_thread()) || !tp_collector_gate(tp_collector_now())))
        return NULL;
    *stack = tp_collector_stack(t, TP_STACKS_API);
    return t;
}

static void h_regions_register(nvtxDomainHandle_t d, const nvtxMemRegionsRegisterBatch_t *b) {
    uint32_t stack = 0;
    if (!b || !b->regionDescElements ||
        b->regionDescElementSize < sizeof(nvtxMemVirtualRangeDesc_t))
        return;
    int hot;
    tp_tstate *t = region_thread(&stack, &hot);
    for (size_t i = 0; i < b->regionCount; i++) {
        const nvtxMemVirtualRangeDesc_t *v =
            (const void *)((const char *)b->regionDescElements + i * b->regionDescElementSize);
        if (b->regionHandleElementsOut)
            b->regionHandleElementsOut[i] = (nvtxMemRegionHandle_t)(uintptr_t)v->ptr;
        if (t)
            region_event(t, hot, DOMAIN_ID(d), (uint64_t)(uintptr_t)b->heap,
                         (uint64_t)(uintptr_t)v->ptr, v->size, TP_REGION_REGISTER, stack);
    }
}
static void h_regions_resize(nvtxDomainHandle_t d, const nvtxMemRegionsResizeBatch_t *b) {
    uint32_t stack = 0;
    if (!b || !b->regionDescElements ||
        b->regionDescElementSize < sizeof(nvtxMemVirtualRangeDesc_t))
        return;
    int hot;
    tp_tstate *t = region_thread(&stack, &hot);
    for (size_t i = 0; t && i < b->regionDescCount; i++) {
        const nvtxMemVirtualRangeDesc_t *v =
            (const void *)((const char *)b->regionDescElements + i * b->regionDescElementSize);
        region_event(t, hot, DOMAIN_ID(d), 0, (uint64_t)(uintptr_t)v->ptr, v->size,
                     TP_REGION_RESIZE, stack);
    }
}
static void h_regions_unregister(nvtxDomainHandle_t d, const nvtxMemRegionsUnregisterBatch_t *b) {
    uint32_t stack = 0;
    if (!b || !b->refElements || b->refElementSize < sizeof(nvtxMemRegionRef_t))
        return;
    int hot;
    tp_tstate *t = region_thread(&stack, &hot);
    for (size_t i = 0; t && i < b->refCount; i++) {
        const nvtxMemRegionRef_t *r =
            (const void *)((const char *)b->refElements + i * b->refElementSize);
        region_event(t, hot, DOMAIN_ID(d), 0, (uint64_t)(uintptr_t)r->pointer, 0,
                     TP_REGION_UNREGISTER, stack);
    }
}
/* Names, permissions and peer access are accepted (so callers see a tool) and not recorded. */
static void h_regions_name(nvtxDomainHandle_t d, const nvtxMemRegionsNameBatch_t *b) {
    (void)d, (void)b;
}
static char g_perm;
static nvtxMemPermissionsHandle_t h_perm_create(nvtxDomainHandle_t d, int32_t s) {
    (void)d, (void)s;
    return (nvtxMemPermissionsHandle_t)&g_perm;
}
static void h_perm_assign(nvtxDomainHandle_t d, const nvtxMemPermissionsAssignBatch_t *b) {
    (void)d, (void)b;
}
static void h_perm_handle(nvtxDomainHandle_t d, nvtxMemPermissionsHandle_t p) {
    (void)d, (void)p;
}
static void h_perm_bind(nvtxDomainHandle_t d, nvtxMemPermissionsHandle_t p, uint32_t s,
                        uint32_t f) {
    (void)d, (void)p, (void)s, (void)f;
}
static void h_perm_unbind(nvtxDomainHandle_t d, uint32_t s) {
    (void)d, (void)s;
}
static nvtxMemPermissionsHandle_t h_cuda_proc_perm(nvtxDomainHandle_t d) {
    (void)d;
    return (nvtxMemPermissionsHandle_t)&g_perm;
}
static nvtxMemPermissionsHandle_t h_cuda_dev_perm(nvtxDomainHandle_t d, int dev) {
    (void)d, (void)dev;
    return (nvtxMemPermissionsHandle_t)&g_perm;
}
static void h_cuda_peer(nvtxDomainHandle_t d, nvtxMemPermissionsHandle_t p, int dev, uint32_t f) {
    (void)d, (void)p, (void)dev, (void)f;
}
static void h_cuda_mark_init(nvtxDomainHandle_t d, cudaStream_t s, uint8_t b,
                             const nvtxMemMarkInitializedBatch_t *x) {
    (void)d, (void)s, (void)b, (void)x;
}

/* ---------------------------------------------------------------- installation */

static void set_slot(NvtxFunctionTable t, unsigned n, unsigned id, NvtxFunctionPointer fn) {
    if (id < n && t[id])
        *t[id] = fn;
}
#define SLOT(t, n, id, fn) set_slot(t, n, id, (NvtxFunctionPointer)(fn))

static void install_core(NvtxFunctionTable t, unsigned n) {
    SLOT(t, n, NVTX_CBID_CORE_MarkEx, h_mark_ex);
    SLOT(t, n, NVTX_CBID_CORE_MarkA, h_mark_a);
    SLOT(t, n, NVTX_CBID_CORE_MarkW, h_mark_w);
    SLOT(t, n, NVTX_CBID_CORE_RangeStartEx, h_start_ex);
    SLOT(t, n, NVTX_CBID_CORE_RangeStartA, h_start_a);
    SLOT(t, n, NVTX_CBID_CORE_RangeStartW, h_start_w);
    SLOT(t, n, NVTX_CBID_CORE_RangeEnd, h_end);
    SLOT(t, n, NVTX_CBID_CORE_RangePushEx, h_push_ex);
    SLOT(t, n, NVTX_CBID_CORE_RangePushA, h_push_a);
    SLOT(t, n, NVTX_CBID_CORE_RangePushW, h_push_w);
    SLOT(t, n, NVTX_CBID_CORE_RangePop, h_pop);
    SLOT(t, n, NVTX_CBID_CORE_NameCategoryA, h_name_cat_a);
    SLOT(t, n, NVTX_CBID_CORE_NameCategoryW, h_name_cat_w);
    SLOT(t, n, NVTX_CBID_CORE_NameOsThreadA, h_name_thread_a);
    SLOT(t, n, NVTX_CBID_CORE_NameOsThreadW, h_name_thread_w);
}

static void install_core2(NvtxFunctionTable t, unsigned n) {
    SLOT(t, n, NVTX_CBID_CORE2_DomainMarkEx, h_dmark);
    SLOT(t, n, NVTX_CBID_CORE2_DomainRangeStartEx, h_dstart);
    SLOT(t, n, NVTX_CBID_CORE2_DomainRangeEnd, h_dend);
    SLOT(t, n, NVTX_CBID_CORE2_DomainRangePushEx, h_dpush);
    SLOT(t, n, NVTX_CBID_CORE2_DomainRangePop, h_dpop);
    SLOT(t, n, NVTX_CBID_CORE2_DomainResourceCreate, h_res_create);
    SLOT(t, n, NVTX_CBID_CORE2_DomainResourceDestroy, h_res_destroy);
    SLOT(t, n, NVTX_CBID_CORE2_DomainNameCategoryA, h_dname_cat_a);
    SLOT(t, n, NVTX_CBID_CORE2_DomainNameCategoryW, h_dname_cat_w);
    SLOT(t, n, NVTX_CBID_CORE2_DomainRegisterStringA, h_reg_a);
    SLOT(t, n, NVTX_CBID_CORE2_DomainRegisterStringW, h_reg_w);
    SLOT(t, n, NVTX_CBID_CORE2_DomainCreateA, h_dcreate_a);
    SLOT(t, n, NVTX_CBID_CORE2_DomainCreateW, h_dcreate_w);
    SLOT(t, n, NVTX_CBID_CORE2_DomainDestroy, h_ddestroy);
    SLOT(t, n, NVTX_CBID_CORE2_Initialize, h_initialize);
}

int tp_nvtx_init_core(NvtxGetExportTableFunc_t get_export_table) {
    if (!get_export_table)
        return 0;
    const NvtxExportTableCallbacks *cb = get_export_table(NVTX_ETID_CALLBACKS);
    const NvtxExportTableVersionInfo *vi = get_export_table(NVTX_ETID_VERSIONINFO);
    if (!cb || cb->struct_size < sizeof *cb || !cb->GetModuleFunctionTable)
        return 0;
    if (vi && vi->struct_size >= sizeof *vi && vi->SetInjectionNvtxVersion)
        vi->SetInjectionNvtxVersion(NVTX_VERSION);
    NvtxFunctionTable t;
    unsigned n;
    if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &t, &n))
        install_core(t, n);
    if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &t, &n))
        install_core2(t, n);
    return 1;
}

int tp_nvtx_init_ext(nvtxExtModuleInfo_t *mi) {
    if (!mi || !mi->segments || !mi->segmentsCount)
        return 0;
    if (mi->moduleId != NVTX_EXT_MODULEID_MEM)
        return 1; /* payload, counters: left disabled */
    nvtxExtModuleSegment_t *s = &mi->segments[0];
    intptr_t *f = s->functionSlots;
#define MSLOT(name, fn)                                                                            \
    do {                                                                                           \
        if (NVTX3EXT_CBID_##name < s->slotCount)                                                   \
            f[NVTX3EXT_CBID_##name] = (intptr_t)(fn);                                              \
    } while (0)
    MSLOT(nvtxMemHeapRegister, h_heap_register);
    MSLOT(nvtxMemHeapUnregister, h_heap_unregister);
    MSLOT(nvtxMemHeapReset, h_heap_reset);
    MSLOT(nvtxMemRegionsRegister, h_regions_register);
    MSLOT(nvtxMemRegionsResize, h_regions_resize);
    MSLOT(nvtxMemRegionsUnregister, h_regions_unregister);
    MSLOT(nvtxMemRegionsName, h_regions_name);
    MSLOT(nvtxMemPermissionsAssign, h_perm_assign);
    MSLOT(nvtxMemPermissionsCreate, h_perm_create);
    MSLOT(nvtxMemPermissionsDestroy, h_perm_handle);
    MSLOT(nvtxMemPermissionsReset, h_perm_handle);
    MSLOT(nvtxMemPermissionsBind, h_perm_bind);
    MSLOT(nvtxMemPermissionsUnbind, h_perm_unbind);
    MSLOT(nvtxMemCudaGetProcessWidePermissions, h_cuda_proc_perm);
    MSLOT(nvtxMemCudaGetDeviceWidePermissions, h_cuda_dev_perm);
    MSLOT(nvtxMemCudaSetPeerAccess, h_cuda_peer);
    MSLOT(nvtxMemCudaMarkInitialized, h_cuda_mark_init);
#undef MSLOT
    return 1;
}
