/* tp_report_section: one section of a rank's report, as a row of tp_report.c's section
 * tables (one for text, one for JSON, each in the order it is printed). A new section is a
 * function in a file of its own (tp_report_<name>.c, formatting through tp_report_fmt) and one
 * row in each table; nothing else in tp_report.c changes. Private to analyzer/. */
#ifndef TP_REPORT_SECTION_H
#define TP_REPORT_SECTION_H

#include <stdio.h>
#include <yajl/yajl_gen.h>

#include "tp_an_ranks.h"
#include "tp_rank_analysis.h"
#include "tp_report.h"

enum {
    TP_RS_ALWAYS = 0,
    TP_RS_DEVICE = 1u << 0, /* only for a rank with device activity (rr->t.has_gpu) */
    TP_RS_HOST = 1u << 1,   /* only for a rank without (its report is about the host) */
};

/* 1 when a section marked `when` is printed for rank analysis `rr`. */
static inline int tp_report_section_shown(unsigned when, const tp_rank_analysis *rr) {
    return !((when & TP_RS_DEVICE) && !rr->t.has_gpu) && !((when & TP_RS_HOST) && rr->t.has_gpu);
}

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

/* One output format of the report: a row of tp_report.c's renderer table. tp_report_write
 * calls open (NULL: nothing to set up; returns the renderer's state), then `ranks` when more
 * than one rank is reported (the cross-rank comparison, before the ranks), `rank` for each
 * rank, and close with the same comparison (NULL for one rank). Every renderer reads the
 * same tp_rank_analysis and tp_an_ranks results. */
typedef struct {
    tp_report_format format;
    void *(*open)(FILE *out, const tp_model *m, const tp_report_opts *o, size_t n_ranks);
    void (*ranks)(void *st, const tp_an_ranks *x);
    void (*rank)(void *st, const tp_rank_analysis *rr, const tp_report_opts *o);
    void (*close)(void *st, const tp_an_ranks *x);
} tp_report_renderer;

#endif
