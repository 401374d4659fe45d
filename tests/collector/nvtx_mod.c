/* nvtx_mod: a second DSO with its own NVTX v3 instance, to show that several instances in
 * one process share one collector (and one "app" domain id). */
#include <nvtx3/nvToolsExt.h>

void nvtx_mod_range(void);
void nvtx_mod_range(void) {
    nvtxDomainHandle_t d = nvtxDomainCreateA("app");
    nvtxEventAttributes_t a = {0};
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = "lib-range";
    nvtxDomainRangePushEx(d, &a);
    nvtxDomainRangePop(d);
}
