/* tp_layout: the file names of one recording (see tp_layout.h). */
#include "tp_layout.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_mem.h"

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

int tp_layout_member_as(const char *member_path, const char *main_path, const char *to_main,
                        char *buf, size_t len) {
    const char *name = strrchr(member_path, '/'), *main = strrchr(main_path, '/');
    name = name ? name + 1 : member_path, main = main ? main + 1 : main_path;
    if (!tp_layout_is_member(main, name))
        return -1;
    int n = snprintf(buf, len, "%.*s%s", (int)stem_len(to_main), to_main, name + stem_len(main));
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

void tp_layout_free(char **v, size_t n) {
    for (size_t i = 0; v && i < n; i++)
        free(v[i]);
    free(v);
}

static int cmp_path(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Appends "<dir><name>" to v (n of cap); 0, or -1 when out of memory. */
static int add_path(char ***v, size_t *n, size_t *cap, const char *dir, size_t dir_len,
                    const char *name) {
    size_t len = dir_len + strlen(name) + 1;
    char *p = malloc(len);
    if (!p || !tp_mem_grow((void **)v, cap, *n + 1, sizeof **v)) {
        free(p);
        return -1;
    }
    memcpy(p, dir, dir_len);
    strcpy(p + dir_len, name);
    (*v)[(*n)++] = p;
    return 0;
}

tp_status tp_layout_members(const char *main_path, char ***out, size_t *n) {
    *out = NULL, *n = 0;
    const char *slash = strrchr(main_path, '/');
    const char *base = slash ? slash + 1 : main_path;
    size_t dir_len = slash ? (size_t)(slash - main_path) + 1 : 0; /* with the '/' */
    char dir[4096];
    if (dir_len >= sizeof dir)
        return TP_OK;
    memcpy(dir, main_path, dir_len);
    dir[dir_len] = 0;
    DIR *d = opendir(dir_len ? dir : ".");
    size_t cap = 0;
    for (struct dirent *e; d && (e = readdir(d)) != NULL;)
        if (tp_layout_is_member(base, e->d_name) &&
            add_path(out, n, &cap, dir, dir_len, e->d_name) != 0) {
            closedir(d);
            tp_layout_free(*out, *n);
            *out = NULL, *n = 0;
            return TP_ERR_NOMEM;
        }
    if (d)
        closedir(d);
    if (*n > 1)
        qsort(*out, *n, sizeof **out, cmp_path);
    return TP_OK;
}
