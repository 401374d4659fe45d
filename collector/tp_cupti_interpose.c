/* tp_cupti_interpose: the CUPTI entry points through which another CUPTI client of the
 * process (torch.profiler's Kineto, most often) takes CUDA tracing from us. CUDA 13 has one
 * activity-buffer callback pair, one timestamp source and one set of enabled kinds per
 * process: a second client that registers its callbacks gets our buffers, its clock changes
 * our timestamps, and when it stops it disables the kinds we enabled. Exported from the
 * shared library (LD_PRELOAD puts it ahead of libcupti), each wrapper tells tp_cupti first
 * (which flushes what is ours, stops and records the moment), then calls the real function.
 * Our own calls go through the dlsym'ed pointers and never come here; calls libcupti makes
 * to its own entry points (should it call them through its PLT) are passed on untouched. */
#include <cupti.h>
#include <dlfcn.h>
#include <string.h>

#include "tp_cupti.h"

#define EXPORT __attribute__((visibility("default")))

/* 1 when the call comes from another CUPTI client, not from inside libcupti itself. */
static int from_client(void *ret) {
    Dl_info di;
    return !(dladdr(ret, &di) && di.dli_fname && strstr(di.dli_fname, "/libcupti.so"));
}

typedef CUptiResult (*register_fn)(CUpti_BuffersCallbackRequestFunc,
                                   CUpti_BuffersCallbackCompleteFunc);
typedef CUptiResult (*clock_fn)(CUpti_TimestampCallbackFunc);
typedef CUptiResult (*kind_fn)(CUpti_ActivityKind);
typedef CUptiResult (*finalize_fn)(void);
typedef CUptiResult (*subscribe_fn)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *);

/* Kineto subscribes first: refused while we hold CUPTI, it gives up on CUDA activity (PyTorch
 * 2.11 on the first GPU run: "CUPTI initialization failed") and never reaches the calls
 * below, so the refusal is what to tell. */
EXPORT CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle *sub, CUpti_CallbackFunc cb,
                                           void *ud) {
    subscribe_fn real = (subscribe_fn)tp_cupti_real("cuptiSubscribe");
    CUptiResult r = real ? real(sub, cb, ud) : CUPTI_ERROR_NOT_INITIALIZED;
    if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED &&
        from_client(__builtin_return_address(0)))
        tp_cupti_refused_client("cuptiSubscribe");
    return r;
}

EXPORT CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc req,
                                                           CUpti_BuffersCallbackCompleteFunc done) {
    tp_cupti_foreign("cuptiActivityRegisterCallbacks",
                     !tp_cupti_is_ours((void (*)(void))req) &&
                         from_client(__builtin_return_address(0)));
    register_fn real = (register_fn)tp_cupti_real("cuptiActivityRegisterCallbacks");
    return real ? real(req, done) : CUPTI_ERROR_NOT_INITIALIZED;
}

EXPORT CUptiResult CUPTIAPI cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc f) {
    tp_cupti_foreign("cuptiActivityRegisterTimestampCallback",
                     !tp_cupti_is_ours((void (*)(void))f) &&
                         from_client(__builtin_return_address(0)));
    clock_fn real = (clock_fn)tp_cupti_real("cuptiActivityRegisterTimestampCallback");
    return real ? real(f) : CUPTI_ERROR_NOT_INITIALIZED;
}

EXPORT CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind kind) {
    tp_cupti_foreign("cuptiActivityDisable", from_client(__builtin_return_address(0)));
    kind_fn real = (kind_fn)tp_cupti_real("cuptiActivityDisable");
    return real ? real(kind) : CUPTI_ERROR_NOT_INITIALIZED;
}

EXPORT CUptiResult CUPTIAPI cuptiFinalize(void) {
    tp_cupti_foreign("cuptiFinalize", from_client(__builtin_return_address(0)));
    finalize_fn real = (finalize_fn)tp_cupti_real("cuptiFinalize");
    return real ? real() : CUPTI_ERROR_NOT_INITIALIZED;
}
