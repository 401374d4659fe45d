/* tp_kgroup: kernel groups by name (see the header). */
#include "tp_kgroup.h"

#include <string.h>

#include "tp_kineto_names.h"

static int starts(const char *s, const char *p) {
    return strncmp(s, p, strlen(p)) == 0;
}

/* HTA's ComputeKernelGroupingPattern, inverted: names that are NOT compute kernels.
 * Python's re.match anchors at the start, so ".*X" means "contains X". */
static int hta_not_compute(const char *n) {
    static const char *const prefixes[] = {"nccl",        TP_KINETO_SYNC_STREAM_WAIT_EVENT,
                                           "runFunction", "hip",
                                           "job_exe",     "packet",
                                           "pe_exe",      "cpum_exe_subgraph",
                                           "hccl",        "collective_subgraph_execution"};
    static const char *const contains[] = {TP_KINETO_MEMCPY, TP_KINETO_MEMSET, "dma", "Sync"};
    for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++)
        if (starts(n, prefixes[i]))
            return 1;
    for (size_t i = 0; i < sizeof contains / sizeof *contains; i++)
        if (strstr(n, contains[i]))
            return 1;
    /* (cuda.*LaunchKernel) at the start */
    return starts(n, "cuda") && strstr(n + 4, "LaunchKernel") != NULL;
}

int tp_kgroup_of(const char *n) {
    if (starts(n, "nccl") || starts(n, "hip") || starts(n, "hccl") || strstr(n, "ncclKernel"))
        return TP_KGROUP_COMMUNICATION;
    if (tp_kineto_is_memcpy(n) || starts(n, "hipMemcpy") || tp_kineto_is_memset(n) ||
        starts(n, "hipMemset") || starts(n, "dma"))
        return TP_KGROUP_MEMORY;
    return hta_not_compute(n) ? TP_KGROUP_OTHER : TP_KGROUP_COMPUTATION;
}
