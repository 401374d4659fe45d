/* tp_capture: a capture's other processes beside it (see the header). */
#include "tp_capture.h"

#include <stdlib.h>
#include <unistd.h>

#include "tp_cut.h"
#include "tp_layout.h"

size_t tp_capture_members(const char *trace, const char *capture, uint64_t t0, uint64_t t1,
                          int replace) {
    char **found = NULL, dst[4200];
    size_t n = 0, wrote = 0;
    if (replace && tp_layout_members(capture, &found, &n) == TP_OK) {
        for (size_t i = 0; i < n; i++)
            unlink(found[i]);
        tp_layout_free(found, n);
        found = NULL, n = 0;
    }
    if (!trace || !trace[0] || t1 <= t0 || tp_layout_members(trace, &found, &n) != TP_OK)
        return 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t records = 0;
        if (tp_layout_member_as(found[i], trace, capture, dst, sizeof dst) != 0 ||
            tp_cut_window(found[i], t0, t1, dst, &records) != TP_OK)
            continue;
        if (!records) /* nothing of it in the span (a worker of another epoch) */
            unlink(dst);
        wrote += records > 0;
    }
    tp_layout_free(found, n);
    return wrote;
}
