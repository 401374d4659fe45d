/* tp_ranges: NVTX push/pop with registered strings in the trainer's domain.
 *
 * Registered strings make each push a pointer hand-off (the tool interns them once);
 * without a tool every call is a no-op branch inside NVTX. */
#ifndef TP_RANGES_H
#define TP_RANGES_H

#include <nvtx3/nvToolsExt.h>

#define TP_TRAINER_DOMAIN "trainprof.trainer"

static inline void tp_range_push(nvtxDomainHandle_t d, nvtxStringHandle_t s) {
    nvtxEventAttributes_t a = {0};
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    a.message.registered = s;
    nvtxDomainRangePushEx(d, &a);
}

static inline void tp_range_pop(nvtxDomainHandle_t d) {
    nvtxDomainRangePop(d);
}

#endif
