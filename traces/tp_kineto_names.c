/* tp_kineto_names: Kineto's names of copies, memsets and syncs (see tp_kineto_names.h). */
#include "tp_kineto_names.h"

#include <stdio.h>
#include <string.h>

#include "tp_record.h"

#define NAMES_OF(names, i) ((i) < sizeof(names) / sizeof(names)[0] ? (names)[i] : (names)[0])

static const char *const copy_kinds[] = {"Unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
                                         "AtoD",    "DtoA", "DtoD", "HtoH", "PtoP"};
static const char *const mem_kinds[] = {"Unknown", "Pageable", "Pinned",        "Device",
                                        "Array",   "Managed",  "Device Static", "Managed Static"};
static const char *const sync_types[] = {
    [TP_SYNC_UNKNOWN] = TP_KINETO_SYNC_UNKNOWN,
    [TP_SYNC_EVENT] = TP_KINETO_SYNC_EVENT,
    [TP_SYNC_STREAM_WAIT_EVENT] = TP_KINETO_SYNC_STREAM_WAIT_EVENT,
    [TP_SYNC_STREAM] = TP_KINETO_SYNC_STREAM,
    [TP_SYNC_CONTEXT] = TP_KINETO_SYNC_CONTEXT,
};

static_assert(sizeof copy_kinds / sizeof copy_kinds[0] == TP_COPY_PTOP + 1, "one per kind");
static_assert(sizeof mem_kinds / sizeof mem_kinds[0] == TP_MEM_MANAGED_STATIC + 1, "one per kind");
static_assert(sizeof sync_types / sizeof sync_types[0] == TP_SYNC_CONTEXT + 1, "one per type");

const char *tp_copy_kind_name(unsigned kind) {
    return NAMES_OF(copy_kinds, kind);
}

const char *tp_mem_kind_name(unsigned kind) {
    return NAMES_OF(mem_kinds, kind);
}

const char *tp_sync_type_name(unsigned type) {
    return NAMES_OF(sync_types, type);
}

const char *tp_kineto_memcpy_name(char *buf, size_t n, unsigned copy_kind, unsigned src_kind,
                                  unsigned dst_kind) {
    snprintf(buf, n, TP_KINETO_MEMCPY " %s (%s -> %s)", tp_copy_kind_name(copy_kind),
             tp_mem_kind_name(src_kind), tp_mem_kind_name(dst_kind));
    return buf;
}

const char *tp_kineto_memset_name(char *buf, size_t n, unsigned mem_kind) {
    snprintf(buf, n, TP_KINETO_MEMSET " (%s)", tp_mem_kind_name(mem_kind));
    return buf;
}

/* ---------------------------------------------------------------- parsing */

/* The memory kind spelled by s[0..n), 0 when none is. */
static uint8_t mem_kind_from(const char *s, size_t n) {
    for (uint8_t k = 1; k < sizeof mem_kinds / sizeof mem_kinds[0]; k++)
        if (strlen(mem_kinds[k]) == n && !memcmp(s, mem_kinds[k], n))
            return k;
    return TP_MEM_UNKNOWN;
}

/* The copy kind whose four letters start s, 0 when none does. */
static uint8_t copy_kind_from(const char *s) {
    for (uint8_t k = 1; k < sizeof copy_kinds / sizeof copy_kinds[0]; k++)
        if (!strncmp(s, copy_kinds[k], 4))
            return k;
    return TP_COPY_UNKNOWN;
}

void tp_kineto_parse_copy_name(const char *s, uint8_t *copy_kind, uint8_t *src_kind,
                               uint8_t *dst_kind) {
    static const char memcpy_[] = TP_KINETO_MEMCPY " ";
    *copy_kind = *src_kind = *dst_kind = 0;
    if (!strncmp(s, memcpy_, sizeof memcpy_ - 1))
        *copy_kind = copy_kind_from(s + sizeof memcpy_ - 1);
    const char *open = strchr(s, '(');
    const char *close = open ? strchr(open, ')') : NULL;
    if (!close)
        return;
    const char *arrow = strstr(open, " -> ");
    if (arrow && arrow < close) {
        *src_kind = mem_kind_from(open + 1, (size_t)(arrow - open - 1));
        *dst_kind = mem_kind_from(arrow + 4, (size_t)(close - arrow - 4));
    } else {
        *src_kind = *dst_kind = mem_kind_from(open + 1, (size_t)(close - open - 1));
    }
}

size_t tp_kineto_api_name_len(const char *s, size_t n) {
    if (n < 10 || strncmp(s, "cuda", 4) != 0)
        return n;
    size_t d = n;
    while (d > 0 && s[d - 1] >= '0' && s[d - 1] <= '9')
        d--;
    return n - d >= 4 && d - 2 > 4 && s[d - 1] == 'v' && s[d - 2] == '_' ? d - 2 : n;
}
