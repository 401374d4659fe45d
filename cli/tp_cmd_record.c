/* trainprof record: placeholder until its issue lands. */
#include "tp_cmd.h"

#include <stdio.h>

int tp_cmd_record(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "trainprof record: not implemented yet\n");
    return 1;
}
