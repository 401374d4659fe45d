/* tp_record: the static table of record types (names, sizes, flags) and field-wise copy. */
#include "tp_record.h"

#include <string.h>
#include <strings.h>

static const tp_rec_info record_infos[TP_REC_TYPE_LIMIT] = {
#define TP_REC_INFO(name, value, st, timed, interval)                                              \
    [value] = {#name, (uint32_t)sizeof(st),                                                        \
               (uint16_t)((timed ? TP_RF_TIMED : 0) | (interval ? TP_RF_INTERVAL : 0))},
    TP_RECORD_TABLE(TP_REC_INFO)
#undef TP_REC_INFO
};

#define TP_REC_SIZE_CHECK(name, value, st, timed, interval)                                        \
    static_assert(sizeof(st) % 8 == 0, #st " size must be a multiple of 8");                       \
    static_assert((value) < TP_REC_TYPE_LIMIT, #name " must fit the type mask");
TP_RECORD_TABLE(TP_REC_SIZE_CHECK)
#undef TP_REC_SIZE_CHECK

/* Sizes are part of the format: changing one is a format change (append fields only). */
static_assert(sizeof(tp_rec_hdr) == 8, "header");
static_assert(sizeof(tp_rec_nvtx) == 56, "nvtx"); /* 48 before stack_id was appended */
static_assert(sizeof(tp_rec_nvtx_pop) == 24, "nvtx pop");
static_assert(sizeof(tp_rec_api) == 48, "api");
static_assert(sizeof(tp_rec_env) == 24, "env");
static_assert(sizeof(tp_rec_kernel) == 88, "kernel");
static_assert(sizeof(tp_rec_memcpy) == 72, "memcpy");
static_assert(sizeof(tp_rec_memset) == 56, "memset");
static_assert(sizeof(tp_rec_sync) == 56, "sync");
static_assert(sizeof(tp_rec_pycode) == 24, "pycode"); /* appended in v1.2 */

static const tp_rec_info unknown_info = {0, 0, 0};

const tp_rec_info *tp_record_info(uint16_t type) {
    if (type >= TP_REC_TYPE_LIMIT || !record_infos[type].name)
        return &unknown_info;
    return &record_infos[type];
}

const char *tp_record_name(uint16_t type) {
    return tp_record_info(type)->name;
}

int tp_record_type_from_name(const char *name) {
    for (int t = 0; t < TP_REC_TYPE_LIMIT; t++)
        if (record_infos[t].name && strcasecmp(record_infos[t].name, name) == 0)
            return t;
    return -1;
}

void tp_record_init_hdr(tp_rec_hdr *h, uint16_t type, uint32_t size) {
    h->type = type;
    h->flags = tp_record_info(type)->flags;
    h->size = size;
}

uint32_t tp_record_get(const tp_rec_hdr *r, void *dst, size_t dst_size) {
    size_t n = r->size < dst_size ? r->size : dst_size;
    memcpy(dst, r, n);
    if (n < dst_size)
        memset((char *)dst + n, 0, dst_size - n);
    return r->size;
}
