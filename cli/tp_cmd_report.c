/* trainprof report: placeholder until its issue lands. */
#include "tp_cmd.h"

#include <stdio.h>

int tp_cmd_report(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "trainprof report: not implemented yet\n");
    return 1;
}
