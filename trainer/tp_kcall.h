/* tp_kcall: one kernel launch, described as plain data.
 *
 * The model queues work as tp_kcall values; each device backend turns them into its own
 * kernels (the CPU device calls tp_kcpu on a device thread, the CUDA device calls CUDA
 * kernels or cuDNN on a stream). A fixed-size value, so a device queue can copy it.
 * Arguments per op (i = ints, f = floats, p = device pointers):
 *   CONV_FWD          i: n c h w k pad        p: x w b y ws
 *   CONV_BWD_DATA     i: n c h w k pad        p: dy w dx ws
 *   CONV_BWD_FILTER   i: n c h w k pad        p: x dy dw db ws
 *   RELU_FWD          i: count                p: x y
 *   RELU_BWD          i: count                p: y dy dx
 *   POOL_FWD          i: n c h w              p: x y idx
 *   POOL_BWD          i: n c h w              p: dy idx dx
 *   LINEAR_FWD        i: n in out             p: x w b y
 *   LINEAR_BWD_DATA   i: n in out             p: dy w dx
 *   LINEAR_BWD_WEIGHT i: n in out             p: x dy dw db
 *   CE_FWD            i: n classes            p: logits labels probs acc
 *   CE_BWD            i: n classes            p: probs labels dlogits
 *   SGD               i: count  f: lr momentum wd               p: w g m
 *   ADAM              i: count  f: lr b1 b2 eps bc1 bc2          p: w g m v */
#ifndef TP_KCALL_H
#define TP_KCALL_H

#include <stdint.h>

typedef enum {
    TP_K_CONV_FWD,
    TP_K_CONV_BWD_DATA,
    TP_K_CONV_BWD_FILTER,
    TP_K_RELU_FWD,
    TP_K_RELU_BWD,
    TP_K_POOL_FWD,
    TP_K_POOL_BWD,
    TP_K_LINEAR_FWD,
    TP_K_LINEAR_BWD_DATA,
    TP_K_LINEAR_BWD_WEIGHT,
    TP_K_CE_FWD,
    TP_K_CE_BWD,
    TP_K_SGD,
    TP_K_ADAM,
    TP_K_COUNT
} tp_kop;

typedef struct {
    tp_kop op;
    int32_t i[6];
    float f[6];
    void *p[5];
} tp_kcall;

/* The kernel's name as traces show it (a string literal, stable for the process). */
static inline const char *tp_kcall_name(tp_kop op) {
    static const char *const names[TP_K_COUNT] = {
        "conv3x3_fwd",       "conv3x3_bwd_data",  "conv3x3_bwd_filter", "relu_fwd",
        "relu_bwd",          "maxpool2_fwd",      "maxpool2_bwd",       "linear_fwd",
        "linear_bwd_data",   "linear_bwd_weight", "softmax_ce_fwd",     "softmax_ce_bwd",
        "sgd_momentum_step", "adam_step"};
    return (unsigned)op < TP_K_COUNT ? names[op] : "unknown_kernel";
}

#endif
