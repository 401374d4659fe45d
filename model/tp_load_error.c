/* tp_load_error: a loader's error in parts, and its one-line form (see the header). */
#include "tp_load_error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void tp_load_error_init(tp_load_error *e, const char *file) {
    memset(e, 0, sizeof *e);
    snprintf(e->file, sizeof e->file, "%s", file ? file : "");
}

tp_status tp_load_error_set(tp_load_error *e, tp_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->reason, sizeof e->reason, fmt, ap);
    va_end(ap);
    e->status = status;
    return status;
}

char *tp_load_error_format(const tp_load_error *e, char *buf, size_t n) {
    if (!n)
        return buf;
    buf[0] = 0;
    if (!e->reason[0])
        return buf;
    if (e->line)
        snprintf(buf, n, "%s:%llu:%llu: byte %llu: %s%s%s", e->file, (unsigned long long)e->line,
                 (unsigned long long)e->col, (unsigned long long)e->byte, e->where,
                 e->where[0] ? ": " : "", e->reason);
    else if (e->file[0])
        snprintf(buf, n, "%s: %s", e->file, e->reason);
    else
        snprintf(buf, n, "%s", e->reason);
    return buf;
}

tp_status tp_load_error_string(tp_status st, const tp_load_error *e, char *err, size_t err_len) {
    if (err && err_len)
        tp_load_error_format(e, err, err_len);
    return st;
}
