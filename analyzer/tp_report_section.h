/* tp_report_section: one section of a rank's report, as a row of tp_report.c's section
 * tables (one for text, one for JSON, each in the order it is printed). A new section is a
 * function in a file of its own (tp_report_<name>.c, formatting through tp_report_fmt) and one
 * row in each table; nothing else in tp_report.c changes. Private to analyzer/. */
#ifndef TP_REPORT_SECTION_H
#define TP_REPORT_SECTION_H

#include <stdio.h>
#include <yajl/yajl_gen.h>

#include "tp_rank_analysis.h"
#include "tp_report.h"

enum {
    TP_RS_ALWAYS = 0,
    TP_RS_DEVICE = 1u << 0, /* only for a rank with device activity (rr->t.has_gpu) */
};

typedef void (*tp_report_text_fn)(FILE *f, const tp_rank_analysis *rr, const tp_report_opts *o);
typedef void (*tp_report_json_fn)(yajl_gen g, const tp_rank_analysis *rr, const tp_report_opts *o);

typedef struct {
    const char *name; /* for people reading the table; JSON sections write their own keys */
    unsigned when;    /* TP_RS_* */
    tp_report_text_fn text;
} tp_report_text_section;

typedef struct {
    const char *name;
    unsigned when;
    tp_report_json_fn json;
} tp_report_json_section;

#endif
