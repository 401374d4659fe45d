/* tp_net: layers as a flat list, run forward then backward (see tp_net.h).
 *
 * Activation lifetimes follow an autograd engine: a layer's input pointer is saved in
 * forward; its output is freed right after its own backward (by then every later layer
 * is done with it). ReLU's backward works in place on the incoming gradient. */
#include "tp_net.h"

#include "tp_data.h"
#include "tp_ranges.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LAYERS 40
#define MAX_KEEP 64

typedef enum { L_CONV, L_RELU, L_POOL, L_LINEAR } layer_kind;

typedef struct {
    layer_kind kind;
    int c, h, w;                        /* input, per sample */
    int oc, oh, ow;                     /* output, per sample */
    float *p[2], *g[2], *m1[2], *m2[2]; /* weight/bias, grads, optimizer state */
    size_t np[2];
    const float *x; /* saved input */
    float *y;       /* output */
    int32_t *idx;   /* pooling winners */
    nvtxStringHandle_t fwd_name, bwd_name;
} layer;

struct tp_net {
    tp_net_opts o;
    tp_device *dev;
    tp_alloc *alloc;
    nvtxDomainHandle_t dom;
    nvtxStringHandle_t s_loss, s_optim;
    layer layers[MAX_LAYERS];
    int nlayers;
    int step;
    float *kept[MAX_KEEP];
    int nkept;
};

static size_t in_elems(const layer *l) {
    return (size_t)l->c * l->h * l->w;
}

static size_t out_elems(const layer *l) {
    return (size_t)l->oc * l->oh * l->ow;
}

static void add_layer(tp_net *m, layer_kind kind, int oc, const char *name) {
    layer *prev = m->nlayers ? &m->layers[m->nlayers - 1] : NULL;
    layer *l = &m->layers[m->nlayers++];
    memset(l, 0, sizeof *l);
    l->kind = kind;
    l->c = prev ? prev->oc : 1;
    l->h = prev ? prev->oh : TP_DATA_SIDE;
    l->w = prev ? prev->ow : TP_DATA_SIDE;
    l->oc = kind == L_CONV || kind == L_LINEAR ? oc : l->c;
    l->oh = kind == L_LINEAR ? 1 : (kind == L_POOL ? l->h / 2 : l->h);
    l->ow = kind == L_LINEAR ? 1 : (kind == L_POOL ? l->w / 2 : l->w);
    if (kind == L_CONV) {
        l->np[0] = (size_t)oc * l->c * 9;
        l->np[1] = (size_t)oc;
    } else if (kind == L_LINEAR) {
        l->np[0] = (size_t)oc * in_elems(l);
        l->np[1] = (size_t)oc;
    }
    char buf[64];
    snprintf(buf, sizeof buf, "forward %s", name);
    l->fwd_name = nvtxDomainRegisterStringA(m->dom, buf);
    snprintf(buf, sizeof buf, "backward %s", name);
    l->bwd_name = nvtxDomainRegisterStringA(m->dom, buf);
}

static void build_layers(tp_net *m) {
    if (m->o.kind == TP_NET_CNN) {
        add_layer(m, L_CONV, 16, "conv1");
        add_layer(m, L_RELU, 0, "relu1");
        add_layer(m, L_POOL, 0, "pool1");
        add_layer(m, L_CONV, 32, "conv2");
        add_layer(m, L_RELU, 0, "relu2");
        add_layer(m, L_POOL, 0, "pool2");
        add_layer(m, L_LINEAR, TP_DATA_CLASSES, "fc");
        return;
    }
    int depth = m->o.mlp_depth < 0 ? 0 : m->o.mlp_depth;
    if (depth > (MAX_LAYERS - 1) / 2)
        depth = (MAX_LAYERS - 1) / 2;
    char name[16];
    for (int i = 0; i < depth; i++) {
        snprintf(name, sizeof name, "fc%d", i + 1);
        add_layer(m, L_LINEAR, m->o.mlp_width > 0 ? m->o.mlp_width : 128, name);
        snprintf(name, sizeof name, "relu%d", i + 1);
        add_layer(m, L_RELU, 0, name);
    }
    add_layer(m, L_LINEAR, TP_DATA_CLASSES, "fc_out");
}

static tp_status dev_alloc(tp_net *m, size_t bytes, void *out) {
    return tp_alloc_malloc(m->alloc, bytes, (void **)out);
}

/* Kaiming-uniform weights (bound sqrt(6 / fan_in)), zero biases, zero optimizer state. */
static tp_status init_param(tp_net *m, layer *l, int j, uint64_t *rs) {
    size_t n = l->np[j], bytes = n * sizeof(float);
    int nstate = m->o.opt == TP_OPT_ADAM ? 2 : 1;
    if (dev_alloc(m, bytes, &l->p[j]) || dev_alloc(m, bytes, &l->g[j]) ||
        dev_alloc(m, bytes, &l->m1[j]) || (nstate == 2 && dev_alloc(m, bytes, &l->m2[j])))
        return TP_ERR_NOMEM;
    float *host = malloc(bytes);
    if (!host)
        return TP_ERR_NOMEM;
    double fan_in = (double)l->np[0] / l->oc, bound = j == 0 ? sqrt(6.0 / fan_in) : 0.0;
    for (size_t i = 0; i < n; i++) {
        *rs = *rs * 6364136223846793005ull + 1442695040888963407ull;
        host[i] = (float)(((double)(*rs >> 11) / 9007199254740992.0 * 2.0 - 1.0) * bound);
    }
    tp_device_memcpy(m->dev, TP_STREAM_COMPUTE, l->p[j], host, bytes, TP_COPY_H2D);
    free(host); /* safe: a pageable copy has completed when memcpy returns */
    tp_device_memset(m->dev, TP_STREAM_COMPUTE, l->m1[j], 0, bytes);
    if (nstate == 2)
        tp_device_memset(m->dev, TP_STREAM_COMPUTE, l->m2[j], 0, bytes);
    return TP_OK;
}

tp_status tp_net_open(const tp_net_opts *opts, tp_device *dev, tp_alloc *alloc,
                      nvtxDomainHandle_t domain, tp_net **out) {
    *out = NULL;
    tp_net *m = calloc(1, sizeof *m);
    if (!m)
        return TP_ERR_NOMEM;
    m->o = *opts;
    if (m->o.keep_activations > MAX_KEEP)
        m->o.keep_activations = MAX_KEEP;
    m->dev = dev;
    m->alloc = alloc;
    m->dom = domain;
    m->s_loss = nvtxDomainRegisterStringA(domain, "loss");
    m->s_optim = nvtxDomainRegisterStringA(domain, "optimizer step");
    build_layers(m);
    uint64_t rs = opts->seed * 2654435761u + 1;
    for (int i = 0; i < m->nlayers; i++)
        for (int j = 0; j < 2; j++)
            if (m->layers[i].np[j] && init_param(m, &m->layers[i], j, &rs) != TP_OK) {
                tp_net_close(m);
                return TP_ERR_NOMEM;
            }
    *out = m;
    return TP_OK;
}

void tp_net_close(tp_net *m) {
    if (!m)
        return;
    for (int i = 0; i < m->nlayers; i++)
        for (int j = 0; j < 2; j++) {
            tp_alloc_free(m->alloc, m->layers[i].p[j]);
            tp_alloc_free(m->alloc, m->layers[i].g[j]);
            tp_alloc_free(m->alloc, m->layers[i].m1[j]);
            tp_alloc_free(m->alloc, m->layers[i].m2[j]);
        }
    for (int i = 0; i < m->nkept; i++)
        tp_alloc_free(m->alloc, m->kept[i]);
    free(m);
}

size_t tp_net_param_count(const tp_net *m) {
    size_t n = 0;
    for (int i = 0; i < m->nlayers; i++)
        n += m->layers[i].np[0] + m->layers[i].np[1];
    return n;
}

/* ---- forward ---- */

static tp_kcall conv_call(tp_kop op, const layer *l, int n) {
    tp_kcall k = {.op = op, .i = {n, l->c, l->h, l->w, l->oc, 1}};
    return k;
}

/* Queues the conv forward with a workspace from the allocator (freed right after: later
 * work on the same stream may reuse it, which stream order makes safe). */
static tp_status launch_conv(tp_net *m, tp_kcall *k, int ws_slot) {
    size_t ws_bytes = tp_device_conv_workspace(m->dev, k);
    void *ws = NULL;
    if (ws_bytes && dev_alloc(m, ws_bytes, &ws) != TP_OK)
        return TP_ERR_NOMEM;
    k->p[ws_slot] = ws;
    tp_device_launch(m->dev, TP_STREAM_COMPUTE, k);
    tp_alloc_free(m->alloc, ws);
    return TP_OK;
}

static tp_status layer_forward(tp_net *m, layer *l, int n) {
    tp_kcall k = {0};
    switch (l->kind) {
    case L_CONV:
        k = conv_call(TP_K_CONV_FWD, l, n);
        k.p[0] = (void *)l->x, k.p[1] = l->p[0], k.p[2] = l->p[1], k.p[3] = l->y;
        return launch_conv(m, &k, 4);
    case L_RELU:
        k = (tp_kcall){.op = TP_K_RELU_FWD, .i = {(int)(n * in_elems(l))}};
        k.p[0] = (void *)l->x, k.p[1] = l->y;
        break;
    case L_POOL:
        if (dev_alloc(m, (size_t)n * out_elems(l) * sizeof(int32_t), &l->idx) != TP_OK)
            return TP_ERR_NOMEM;
        k = (tp_kcall){.op = TP_K_POOL_FWD, .i = {n, l->c, l->h, l->w}};
        k.p[0] = (void *)l->x, k.p[1] = l->y, k.p[2] = l->idx;
        break;
    case L_LINEAR:
        k = (tp_kcall){.op = TP_K_LINEAR_FWD, .i = {n, (int)in_elems(l), l->oc}};
        k.p[0] = (void *)l->x, k.p[1] = l->p[0], k.p[2] = l->p[1], k.p[3] = l->y;
        break;
    }
    tp_device_launch(m->dev, TP_STREAM_COMPUTE, &k);
    return TP_OK;
}

static tp_status forward(tp_net *m, const float *x, int n, float **logits) {
    const float *cur = x;
    for (int i = 0; i < m->nlayers; i++) {
        layer *l = &m->layers[i];
        tp_range_push(m->dom, l->fwd_name);
        l->x = cur;
        tp_status s = dev_alloc(m, (size_t)n * out_elems(l) * sizeof(float), &l->y);
        if (s == TP_OK)
            s = layer_forward(m, l, n);
        tp_range_pop(m->dom);
        if (s != TP_OK)
            return s;
        cur = l->y;
    }
    *logits = (float *)cur;
    return TP_OK;
}

/* ---- loss and backward ---- */

static tp_status loss(tp_net *m, const float *logits, const int32_t *y, int n, float *acc,
                      float **dlogits) {
    tp_range_push(m->dom, m->s_loss);
    float *probs = NULL;
    size_t bytes = (size_t)n * TP_DATA_CLASSES * sizeof(float);
    tp_status s = dev_alloc(m, bytes, &probs);
    if (s == TP_OK) {
        tp_kcall k = {.op = TP_K_CE_FWD, .i = {n, TP_DATA_CLASSES}};
        k.p[0] = (void *)logits, k.p[1] = (void *)y, k.p[2] = probs, k.p[3] = acc;
        tp_device_launch(m->dev, TP_STREAM_COMPUTE, &k);
    }
    if (s == TP_OK && dlogits && (s = dev_alloc(m, bytes, dlogits)) == TP_OK) {
        tp_kcall k = {.op = TP_K_CE_BWD, .i = {n, TP_DATA_CLASSES}};
        k.p[0] = probs, k.p[1] = (void *)y, k.p[2] = *dlogits;
        tp_device_launch(m->dev, TP_STREAM_COMPUTE, &k);
    }
    tp_alloc_free(m->alloc, probs);
    tp_range_pop(m->dom);
    return s;
}

/* Queues layer l's backward from gradient g; *dx receives the input gradient (NULL for
 * the first layer, g itself for ReLU). */
static tp_status layer_backward(tp_net *m, layer *l, int first, int n, float *g, float **dx) {
    *dx = NULL;
    if (l->kind == L_RELU) {
        tp_kcall k = {.op = TP_K_RELU_BWD, .i = {(int)(n * in_elems(l))}};
        k.p[0] = l->y, k.p[1] = g, k.p[2] = g;
        tp_device_launch(m->dev, TP_STREAM_COMPUTE, &k);
        *dx = g;
        return TP_OK;
    }
    if (!first && dev_alloc(m, (size_t)n * in_elems(l) * sizeof(float), dx) != TP_OK)
        return TP_ERR_NOMEM;
    tp_kcall k = {0};
    if (l->kind == L_POOL) {
        k = (tp_kcall){.op = TP_K_POOL_BWD, .i = {n, l->c, l->h, l->w}};
        k.p[0] = g, k.p[1] = l->idx, k.p[2] = *dx;
        tp_device_launch(m->dev, TP_STREAM_COMPUTE, &k);
        return TP_OK;
    }
    if (l->kind == L_LINEAR) {
        int in = (int)in_elems(l);
        k = (tp_kcall){.op = TP_K_LINEAR_BWD_WEIGHT, .i = {n, in, l->oc}};
        k.p[0] = (void *)l->x, k.p[1] = g, k.p[2] = l->g[0], k.p[3] = l->g[1];
        tp_device_launch(m->dev, TP_STREAM_COMPUTE, &k);
        if (!first) {
            k = (tp_kcall){.op = TP_K_LINEAR_BWD_DATA, .i = {n, in, l->oc}};
            k.p[0] = g, k.p[1] = l->p[0], k.p[2] = *dx;
            tp_device_launch(m->dev, TP_STREAM_COMPUTE, &k);
        }
        return TP_OK;
    }
    k = conv_call(TP_K_CONV_BWD_FILTER, l, n);
    k.p[0] = (void *)l->x, k.p[1] = g, k.p[2] = l->g[0], k.p[3] = l->g[1];
    if (launch_conv(m, &k, 4) != TP_OK)
        return TP_ERR_NOMEM;
    if (first)
        return TP_OK;
    k = conv_call(TP_K_CONV_BWD_DATA, l, n);
    k.p[0] = g, k.p[1] = l->p[0], k.p[2] = *dx;
    return launch_conv(m, &k, 3);
}

/* Frees layer 0's output, or keeps it for keep_activations steps. */
static void release_output(tp_net *m, layer *l, int first) {
    if (!first || m->o.keep_activations <= 0) {
        tp_alloc_free(m->alloc, l->y);
    } else {
        if (m->nkept == m->o.keep_activations) {
            tp_alloc_free(m->alloc, m->kept[0]);
            memmove(m->kept, m->kept + 1, (size_t)(m->nkept - 1) * sizeof m->kept[0]);
            m->nkept--;
        }
        m->kept[m->nkept++] = l->y;
    }
    l->y = NULL;
    tp_alloc_free(m->alloc, l->idx);
    l->idx = NULL;
}

static tp_status backward(tp_net *m, float *dlogits, int n) {
    float *g = dlogits;
    for (int i = m->nlayers - 1; i >= 0; i--) {
        layer *l = &m->layers[i];
        float *dx = NULL;
        tp_range_push(m->dom, l->bwd_name);
        tp_status s = layer_backward(m, l, i == 0, n, g, &dx);
        tp_range_pop(m->dom);
        if (s != TP_OK)
            return s;
        if (dx != g)
            tp_alloc_free(m->alloc, g);
        release_output(m, l, i == 0);
        g = dx;
    }
    return TP_OK;
}

static void optimizer_step(tp_net *m) {
    tp_range_push(m->dom, m->s_optim);
    m->step++;
    const float b1 = 0.9f, b2 = 0.999f;
    float bc1 = 1.0f - powf(b1, (float)m->step), bc2 = 1.0f - powf(b2, (float)m->step);
    for (int i = 0; i < m->nlayers; i++)
        for (int j = 0; j < 2; j++) {
            layer *l = &m->layers[i];
            if (!l->np[j])
                continue;
            tp_kcall k = {.i = {(int)l->np[j]}};
            k.p[0] = l->p[j], k.p[1] = l->g[j], k.p[2] = l->m1[j], k.p[3] = l->m2[j];
            if (m->o.opt == TP_OPT_ADAM) {
                k.op = TP_K_ADAM;
                float f[6] = {m->o.lr, b1, b2, 1e-8f, bc1, bc2};
                memcpy(k.f, f, sizeof f);
            } else {
                k.op = TP_K_SGD;
                k.f[0] = m->o.lr, k.f[1] = m->o.momentum, k.f[2] = m->o.weight_decay;
            }
            tp_device_launch(m->dev, TP_STREAM_COMPUTE, &k);
        }
    tp_range_pop(m->dom);
}

/* Frees whatever forward allocated when a step is abandoned. */
static void drop_step(tp_net *m) {
    for (int i = 0; i < m->nlayers; i++) {
        tp_alloc_free(m->alloc, m->layers[i].y);
        tp_alloc_free(m->alloc, m->layers[i].idx);
        m->layers[i].y = NULL;
        m->layers[i].idx = NULL;
    }
}

tp_status tp_net_train_step(tp_net *m, const float *x, const int32_t *y, int n, float *acc) {
    float *logits = NULL, *dlogits = NULL;
    tp_status s = forward(m, x, n, &logits);
    if (s == TP_OK)
        s = loss(m, logits, y, n, acc, &dlogits);
    if (s == TP_OK)
        s = backward(m, dlogits, n);
    if (s != TP_OK) {
        drop_step(m);
        return s;
    }
    optimizer_step(m);
    return TP_OK;
}

tp_status tp_net_eval(tp_net *m, const float *x, const int32_t *y, int n, float *acc) {
    float *logits = NULL;
    tp_status s = forward(m, x, n, &logits);
    if (s == TP_OK)
        s = loss(m, logits, y, n, acc, NULL);
    drop_step(m);
    return s;
}
