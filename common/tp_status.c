/* tp_status: names and descriptions generated from the one table in tp_status.h. */
#include "tp_status.h"

#include <string.h>

static const char *const status_text[] = {
#define TP_STATUS_TEXT(name, text) text,
    TP_STATUS_TABLE(TP_STATUS_TEXT)
#undef TP_STATUS_TEXT
};

static const char *const status_name[] = {
#define TP_STATUS_NAME(name, text) #name,
    TP_STATUS_TABLE(TP_STATUS_NAME)
#undef TP_STATUS_NAME
};

const char *tp_status_str(tp_status s) {
    if ((unsigned)s >= TP_STATUS_COUNT)
        return "unknown status";
    return status_text[s];
}

const char *tp_status_name(tp_status s) {
    if ((unsigned)s >= TP_STATUS_COUNT)
        return "TP_ERR_UNKNOWN";
    return status_name[s];
}

const char *tp_status_why(tp_status s, int err) {
    if ((s == TP_ERR_IO || s == TP_ERR_OPEN) && err > 0)
        return strerror(err);
    return tp_status_str(s);
}
