/* tp_layout: the file names of one recording (see tp_layout.h). */
#include "tp_layout.h"

#include <stdio.h>
#include <string.h>

#define EXT ".tprof"
#define EXT_LEN (sizeof EXT - 1)

/* Length of `s` without a trailing ".tprof". */
static size_t stem_len(const char *s) {
    size_t n = strlen(s);
    return n > EXT_LEN && !strcmp(s + n - EXT_LEN, EXT) ? n - EXT_LEN : n;
}

int tp_layout_process_path(const char *main_path, long pid, char *buf, size_t len) {
    int n = snprintf(buf, len, "%.*s.%ld" EXT, (int)stem_len(main_path), main_path, pid);
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

int tp_layout_exec_path(const char *path, int k, char *buf, size_t len) {
    int n = snprintf(buf, len, "%.*s.exec%d" EXT, (int)stem_len(path), path, k);
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

int tp_layout_is_member(const char *main_name, const char *name) {
    size_t stem = stem_len(main_name), n = strlen(name);
    if (stem == strlen(main_name) || n <= stem + 1 + EXT_LEN) /* main must end in .tprof */
        return 0;
    if (strncmp(name, main_name, stem) != 0 || name[stem] != '.' ||
        strcmp(name + n - EXT_LEN, EXT) != 0)
        return 0;
    const char *rest = name + stem + 1;
    if (!strncmp(rest, "exec", 4))
        rest += 4;
    return *rest >= '0' && *rest <= '9';
}
