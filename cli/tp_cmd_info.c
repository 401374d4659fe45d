/* trainprof info: placeholder until the reader lands. */
#include "tp_cmd.h"

#include <stdio.h>

int tp_cmd_info(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "trainprof info: not implemented yet\n");
    return 1;
}
