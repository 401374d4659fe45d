/* tp_net: SimpleCNN and MLP with forward, backward and optimizer steps on a tp_device.
 *
 * SimpleCNN: conv3x3(1->16, pad 1)-ReLU-maxpool2-conv3x3(16->32, pad 1)-ReLU-maxpool2-
 * linear(32*7*7 -> 10). MLP: linear(784 -> width)-ReLU repeated `depth` times, then
 * linear(width -> 10). Loss: softmax cross-entropy. Optimizers: SGD with momentum (and
 * weight decay) or Adam. Parameters, gradients, optimizer state and every activation live
 * in device memory from the caching allocator; activations are allocated during forward
 * and freed as backward consumes them, so the allocator sees a training step's real
 * pattern. Each layer's forward and backward is an NVTX range ("forward conv1", ...), as
 * are "loss" and "optimizer step". All work goes to TP_STREAM_COMPUTE. */
#ifndef TP_NET_H
#define TP_NET_H

#include "tp_alloc.h"
#include "tp_device.h"
#include "tp_status.h"

#include <nvtx3/nvToolsExt.h>
#include <stdint.h>

typedef struct tp_net tp_net;

typedef enum { TP_NET_CNN, TP_NET_MLP } tp_net_kind;
typedef enum { TP_OPT_SGD, TP_OPT_ADAM } tp_opt_kind;

typedef struct {
    tp_net_kind kind;
    int mlp_width, mlp_depth;
    uint64_t seed; /* parameter init */
    tp_opt_kind opt;
    float lr, momentum, weight_decay;
    /* Keep the first layer's output of the last N steps alive (like a forward hook that
     * appends activations to a list); 0 = free them as usual. */
    int keep_activations;
} tp_net_opts;

/* Allocates and initializes parameters on the device. TP_ERR_NOMEM when the device
 * memory limit is too small for them. */
tp_status tp_net_open(const tp_net_opts *opts, tp_device *dev, tp_alloc *alloc,
                      nvtxDomainHandle_t domain, tp_net **out);
/* Frees the parameters (back to the allocator) and the net; NULL is a no-op. */
void tp_net_close(tp_net *m);

/* One training step on device inputs x (n x 784) and labels y: forward, loss (added into
 * the device accumulator acc[3] as tp_softmax_ce_fwd does), backward, optimizer.
 * Queues the work and returns; TP_ERR_NOMEM if an allocation failed (the allocator has
 * reported it). */
tp_status tp_net_train_step(tp_net *m, const float *x, const int32_t *y, int n, float *acc);

/* Forward and loss only (held-out evaluation). */
tp_status tp_net_eval(tp_net *m, const float *x, const int32_t *y, int n, float *acc);

/* Number of trainable parameters (weights and biases). */
size_t tp_net_param_count(const tp_net *m);

#endif
