/* nvtx_mem_edges: a program that drives the NVTX memory extension through its edge cases,
 * for test_an_memstate_nvtx (run under the real `trainprof record`). One 4 MiB pool (a
 * virtual-address heap); all inside an NVTX range "edges":
 *   r0 = base (1 MiB) and r1 = base + 1 MiB (512 KiB) registered;
 *   r1 resized in place to 1 MiB;
 *   an unregister of an address never registered;
 *   the heap reset while r0 and r1 are live;
 *   r2 = base + 2 MiB (256 KiB) registered after the reset, and left live;
 *   the heap unregistered while r2 is live.
 * Nothing here is real memory: the pool is malloc'ed and never touched. */
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtMem.h>
#include <stdlib.h>
#include <string.h>

#define MiB ((size_t)1 << 20)

static nvtxDomainHandle_t g_dom;

static nvtxMemHeapHandle_t heap_register(void *base, size_t n) {
    nvtxMemVirtualRangeDesc_t range = {n, base};
    nvtxMemHeapDesc_t d;
    memset(&d, 0, sizeof d);
    d.extCompatID = NVTX_EXT_COMPATID_MEM;
    d.structSize = sizeof d;
    d.usage = NVTX_MEM_HEAP_USAGE_TYPE_SUB_ALLOCATOR;
    d.type = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
    d.typeSpecificDescSize = sizeof range;
    d.typeSpecificDesc = &range;
    return nvtxMemHeapRegister(g_dom, &d);
}

static void region_register(nvtxMemHeapHandle_t h, void *p, size_t n) {
    nvtxMemVirtualRangeDesc_t r = {n, p};
    nvtxMemRegionsRegisterBatch_t b;
    memset(&b, 0, sizeof b);
    b.extCompatID = NVTX_EXT_COMPATID_MEM;
    b.structSize = sizeof b;
    b.regionType = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
    b.heap = h;
    b.regionCount = 1;
    b.regionDescElementSize = sizeof r;
    b.regionDescElements = &r;
    nvtxMemRegionsRegister(g_dom, &b);
}

static void region_resize(void *p, size_t n) {
    nvtxMemVirtualRangeDesc_t r = {n, p};
    nvtxMemRegionsResizeBatch_t b;
    memset(&b, 0, sizeof b);
    b.extCompatID = NVTX_EXT_COMPATID_MEM;
    b.structSize = sizeof b;
    b.regionType = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
    b.regionDescCount = 1;
    b.regionDescElementSize = sizeof r;
    b.regionDescElements = &r;
    nvtxMemRegionsResize(g_dom, &b);
}

static void region_unregister(void *p) {
    nvtxMemRegionRef_t ref;
    ref.pointer = p;
    nvtxMemRegionsUnregisterBatch_t b;
    memset(&b, 0, sizeof b);
    b.extCompatID = NVTX_EXT_COMPATID_MEM;
    b.structSize = sizeof b;
    b.refType = NVTX_MEM_REGION_REF_TYPE_POINTER;
    b.refCount = 1;
    b.refElementSize = sizeof ref;
    b.refElements = &ref;
    nvtxMemRegionsUnregister(g_dom, &b);
}

int main(void) {
    g_dom = nvtxDomainCreateA("nvtx_mem_edges");
    char *base = malloc(4 * MiB);
    if (!base)
        return 1;
    nvtxRangePushA("edges");
    nvtxMemHeapHandle_t h = heap_register(base, 4 * MiB);
    region_register(h, base, MiB);
    region_register(h, base + MiB, MiB / 2);
    region_resize(base + MiB, MiB);
    region_unregister(base + 3 * MiB + 12345); /* never registered */
    nvtxMemHeapReset(g_dom, h);                /* r0 and r1 still live */
    region_register(h, base + 2 * MiB, MiB / 4);
    nvtxMemHeapUnregister(g_dom, h); /* r2 still live */
    nvtxRangePop();
    free(base);
    return 0;
}
