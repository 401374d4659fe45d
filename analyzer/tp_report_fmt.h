/* tp_report_fmt: the report's cell formats (text) and value writers (JSON), shared by every
 * report section, wherever the section lives (tp_report.c and the tp_report_*.c files), so a
 * time, a share or a name is printed the same way in every table. Private to analyzer/. */
#ifndef TP_REPORT_FMT_H
#define TP_REPORT_FMT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <yajl/yajl_gen.h>

#include "tp_an_launch.h"
#include "tp_an_stats.h"

/* 100 * a / b; NaN when b <= 0 (printed "-" in text, null in JSON). */
double tp_rf_pct(int64_t a, int64_t b);

/* A duration right-aligned to 12 display columns, for table cells. */
const char *tp_rf_time(char *buf, size_t n, double ns);

/* "12.34 %", or "-" for NaN. */
const char *tp_rf_pct_str(char *buf, size_t n, double p);

/* A name from the trace, terminal-safe, shortened to `w` bytes with "..." when longer. */
const char *tp_rf_clip(char *buf, size_t n, const char *s, size_t w);

/* "     LABEL  TEXT" wrapped at 100 columns, continuation lines indented; TEXT made safe. */
void tp_rf_wrapped(FILE *f, const char *label, const char *raw);

/* JSON: a string (bytes that are not UTF-8 become U+FFFD), and key/value pairs. */
void tp_rj_str(yajl_gen g, const char *s);
void tp_rj_int(yajl_gen g, const char *k, long long v);
void tp_rj_num(yajl_gen g, const char *k, double v); /* NaN and inf: null */
void tp_rj_kv(yajl_gen g, const char *k, const char *v);
void tp_rj_describe(yajl_gen g, const char *k, const tp_an_describe_t *d);
void tp_rj_dist(yajl_gen g, const char *k, const tp_an_dist *d);

/* What the report calls a native thread of the sampler's, in the text and the HTML page alike. */
#define TP_RF_NATIVE_THREADS                                                                       \
    "native threads (not the interpreter's: intra-op and OpenMP pools, CUDA, NCCL and other "      \
    "libraries' threads; their state and CPU clock, no frames)"

#endif
