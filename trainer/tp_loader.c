/* tp_loader: worker threads filling a ring of staging buffers (see tp_loader.h).
 *
 * Slot k serves batches k, k + nslots, ... Each slot moves FREE -> FILLING (a worker owns
 * it) -> READY -> IN_USE (the consumer owns it) -> FREE. Workers claim batches in order,
 * so the consumer always finds batch b in slot b % nslots. */
#include "tp_loader.h"

#include "tp_data.h"
#include "tp_ranges.h"

#include <nvtx3/nvToolsExt.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

enum { SLOT_FREE, SLOT_FILLING, SLOT_READY, SLOT_IN_USE };

typedef struct {
    float *x;
    int32_t *y;
    int state;
    uint64_t batch;
    int n;
    tp_event *ev;   /* recorded by the consumer after its copy */
    int ev_pending; /* ev must complete before the next fill */
} slot;

struct tp_loader {
    tp_loader_opts o;
    int *schedule;
    tp_device *dev;
    int nslots;
    slot *slots;
    pthread_t *threads;
    int nthreads;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t next_fill, next_take;
    int stop;
    float *scratch; /* for workers == 0 */
    nvtxDomainHandle_t dom;
    nvtxStringHandle_t s_build;
};

int tp_loader_max_batch(const tp_loader_opts *o) {
    int m = o->batch;
    for (int i = 0; i < o->schedule_len; i++)
        m = o->schedule[i] > m ? o->schedule[i] : m;
    return m;
}

static int batch_size(const tp_loader *l, uint64_t b) {
    return l->o.schedule_len ? l->schedule[b % (uint64_t)l->o.schedule_len] : l->o.batch;
}

/* First sample index of batch b (batches tile the dataset in order). */
static uint64_t batch_first(const tp_loader *l, uint64_t b) {
    if (!l->o.schedule_len)
        return b * (uint64_t)l->o.batch;
    uint64_t per_cycle = 0, len = (uint64_t)l->o.schedule_len, first;
    for (int i = 0; i < l->o.schedule_len; i++)
        per_cycle += (uint64_t)l->schedule[i];
    first = (b / len) * per_cycle;
    for (uint64_t i = 0; i < b % len; i++)
        first += (uint64_t)l->schedule[i];
    return first;
}

/* The batch's input arriving from slow storage: a wait, no CPU, so that a rank made slow
 * this way stays slow by the same amount whatever else the machine runs. */
static void read_wait(const tp_loader *l) {
    int us = l->o.read_latency_us;
    struct timespec t = {us / 1000000, (long)(us % 1000000) * 1000};
    while (us > 0 && nanosleep(&t, &t) != 0)
        ;
}

static void fill(const tp_loader *l, slot *s, uint64_t b, float *scratch) {
    uint64_t first = batch_first(l, b);
    read_wait(l);
    s->n = batch_size(l, b);
    for (int i = 0; i < s->n; i++) {
        float *img = s->x + (size_t)i * TP_DATA_PIXELS;
        s->y[i] = tp_data_sample(l->o.seed, first + (uint64_t)i, img);
        tp_data_augment(l->o.seed, first + (uint64_t)i, l->o.transform_cost, img, scratch);
    }
    s->batch = b;
}

/* Waits for the slot's copy-out event, outside the lock. */
static void wait_slot_event(tp_loader *l, slot *s) {
    if (s->ev_pending) {
        tp_device_event_sync(l->dev, s->ev, 0);
        s->ev_pending = 0;
    }
}

typedef struct {
    tp_loader *l;
    int id;
} worker_arg;

static void *worker_main(void *p) {
    worker_arg *wa = p;
    tp_loader *l = wa->l;
    char name[32];
    snprintf(name, sizeof name, "loader worker %d", wa->id);
    nvtxNameOsThreadA((uint32_t)gettid(), name);
    free(wa);
    float scratch[TP_DATA_PIXELS];
    pthread_mutex_lock(&l->mu);
    for (;;) {
        slot *s = NULL;
        while (!l->stop && l->next_fill < l->o.max_batches &&
               (s = &l->slots[l->next_fill % (uint64_t)l->nslots])->state != SLOT_FREE)
            pthread_cond_wait(&l->cv, &l->mu);
        if (l->stop || l->next_fill >= l->o.max_batches)
            break;
        uint64_t b = l->next_fill++;
        s->state = SLOT_FILLING;
        pthread_mutex_unlock(&l->mu);
        wait_slot_event(l, s);
        tp_range_push(l->dom, l->s_build);
        fill(l, s, b, scratch);
        tp_range_pop(l->dom);
        pthread_mutex_lock(&l->mu);
        s->state = SLOT_READY;
        pthread_cond_broadcast(&l->cv);
    }
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

tp_status tp_loader_open(const tp_loader_opts *opts, tp_device *dev, tp_loader **out) {
    *out = NULL;
    if (opts->batch <= 0 && opts->schedule_len <= 0)
        return TP_ERR_ARG;
    tp_loader *l = calloc(1, sizeof *l);
    if (!l)
        return TP_ERR_NOMEM;
    l->o = *opts;
    l->dev = dev;
    l->nslots = (opts->prefetch > 0 ? opts->prefetch : 1) + 1;
    l->dom = nvtxDomainCreateA(TP_TRAINER_DOMAIN);
    l->s_build = nvtxDomainRegisterStringA(l->dom, "loader build batch");
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->cv, NULL);
    l->slots = calloc((size_t)l->nslots, sizeof *l->slots);
    l->scratch = malloc(TP_DATA_PIXELS * sizeof(float));
    if (opts->schedule_len > 0) {
        l->schedule = malloc((size_t)opts->schedule_len * sizeof(int));
        if (l->schedule)
            for (int i = 0; i < opts->schedule_len; i++)
                l->schedule[i] = opts->schedule[i];
    }
    l->o.schedule = l->schedule;
    int maxb = tp_loader_max_batch(opts);
    int ok = l->slots && l->scratch && (opts->schedule_len <= 0 || l->schedule);
    for (int i = 0; ok && i < l->nslots; i++) {
        slot *s = &l->slots[i];
        s->x =
            tp_device_host_alloc(dev, (size_t)maxb * TP_DATA_PIXELS * sizeof(float), opts->pinned);
        s->y = tp_device_host_alloc(dev, (size_t)maxb * sizeof(int32_t), opts->pinned);
        s->ev = tp_device_event_create(dev);
        ok = s->x && s->y && s->ev;
    }
    int nthreads = opts->workers > 0 ? opts->workers : 0;
    l->threads = calloc((size_t)nthreads + 1, sizeof(pthread_t));
    ok = ok && l->threads;
    for (int i = 0; ok && i < nthreads; i++) {
        worker_arg *wa = malloc(sizeof *wa);
        ok = wa != NULL;
        if (ok)
            *wa = (worker_arg){l, i};
        if (ok && pthread_create(&l->threads[i], NULL, worker_main, wa) != 0) {
            free(wa);
            ok = 0;
        }
        if (ok)
            l->nthreads++;
    }
    if (!ok) {
        tp_loader_close(l);
        return TP_ERR_NOMEM;
    }
    *out = l;
    return TP_OK;
}

void tp_loader_close(tp_loader *l) {
    if (!l)
        return;
    pthread_mutex_lock(&l->mu);
    l->stop = 1;
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
    for (int i = 0; i < l->nthreads; i++)
        pthread_join(l->threads[i], NULL);
    for (int i = 0; l->slots && i < l->nslots; i++) {
        slot *s = &l->slots[i];
        if (s->ev)
            wait_slot_event(l, s);
        tp_device_event_destroy(l->dev, s->ev);
        tp_device_host_free(l->dev, s->x);
        tp_device_host_free(l->dev, s->y);
    }
    pthread_mutex_destroy(&l->mu);
    pthread_cond_destroy(&l->cv);
    free(l->slots);
    free(l->threads);
    free(l->schedule);
    free(l->scratch);
    free(l);
}

tp_status tp_loader_next(tp_loader *l, tp_batch *out) {
    uint64_t b = l->next_take;
    if (b >= l->o.max_batches)
        return TP_ERR_EMPTY;
    slot *s = &l->slots[b % (uint64_t)l->nslots];
    if (l->nthreads == 0) { /* synchronous: build it here */
        wait_slot_event(l, s);
        fill(l, s, b, l->scratch);
        l->next_fill = b + 1;
        s->state = SLOT_IN_USE;
    } else {
        pthread_mutex_lock(&l->mu);
        while (!(s->state == SLOT_READY && s->batch == b))
            pthread_cond_wait(&l->cv, &l->mu);
        s->state = SLOT_IN_USE;
        pthread_mutex_unlock(&l->mu);
    }
    l->next_take = b + 1;
    *out = (tp_batch){s->x, s->y, s->n, (int)(b % (uint64_t)l->nslots), b};
    return TP_OK;
}

tp_event *tp_loader_slot_event(tp_loader *l, const tp_batch *b) {
    return l->slots[b->slot].ev;
}

void tp_loader_release(tp_loader *l, const tp_batch *b, tp_event *copied) {
    slot *s = &l->slots[b->slot];
    pthread_mutex_lock(&l->mu);
    s->ev_pending = copied != NULL;
    s->state = SLOT_FREE;
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
}
