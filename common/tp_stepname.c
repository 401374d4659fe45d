/* tp_stepname: the names of a training step (see the header). */
#include "tp_stepname.h"

#include <string.h>
#include <strings.h>

int tp_step_name_n(const char *s, size_t len) {
    static const char *const names[] = {"step", "train_step", "training_step", "train step"};
    if (!s)
        return 0;
    if (len >= 13 && !memcmp(s, "ProfilerStep#", 13))
        return 1;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strlen(names[i]) == len && !strncasecmp(s, names[i], len))
            return 1;
    return 0;
}

int tp_step_name(const char *s) {
    return s && tp_step_name_n(s, strlen(s));
}
