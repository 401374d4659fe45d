/* tp_cmd_load: the trace loading that `report` and `tui` share (see tp_cmd.h). */
#include "tp_cmd.h"

#include <stdio.h>

#include "tp_load.h"

int tp_cmd_load(const char *cmd, const char *const *paths, size_t n, tp_model **out) {
    tp_load_result res;
    tp_status st = tp_load_paths(paths, n, out, &res);
    if (res.notes[0])
        fprintf(stderr, "%s", res.notes);
    if (st != TP_OK) {
        fprintf(stderr, "trainprof %s: %s\n", cmd, res.error);
        return 1;
    }
    return 0;
}
