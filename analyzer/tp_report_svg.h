/* tp_report_svg: what the HTML report writes with: escaped text and inline SVG charts.
 *
 * Every string that comes from a trace (kernel, range, op and file names, the diagnosis'
 * texts, which quote them) goes through tp_rh_text, so a kernel named "f<float>(a&b)" or a
 * range named "</table><script>" shows as what it is and cannot change the page. The charts
 * are plain SVG elements drawn here from numbers the caller computed (nothing is computed
 * twice): stacked bars and line series, with axes whose ticks are round numbers in the
 * report's units (tp_units), a <title> on every bar (the browser's tooltip, no script), and
 * a legend in HTML. Nothing refers to anything outside the page. Private to analyzer/. */
#ifndef TP_REPORT_SVG_H
#define TP_REPORT_SVG_H

#include <stddef.h>
#include <stdio.h>

/* Writes `s` (NULL: nothing) as HTML text or attribute value: & < > " ' as entities, bytes
 * that are not UTF-8 and control characters (but tab and newline) as U+FFFD. */
void tp_rh_text(FILE *f, const char *s);

/* The unit of a chart axis: nanoseconds, bytes, or a share in [0, 1] shown as percent. */
typedef enum { TP_SVG_NS = 0, TP_SVG_BYTES, TP_SVG_SHARE } tp_svg_unit;

typedef struct {
    const char *label; /* static text */
    const char *color; /* CSS colour, "#4e79a7" */
} tp_svg_series;

/* A legend for `k` series, as an HTML list. */
void tp_svg_legend(FILE *f, size_t k, const tp_svg_series *ser);

/* Names bar i in its tooltip ("step 12", "rank 3"), into buf of n bytes. */
typedef void (*tp_svg_bar_name)(size_t i, char *buf, size_t n, const void *arg);

/* `n` bars of `k` stacked parts, part j of bar i being v[i * k + j] (>= 0) in `unit`, the
 * first part at the bottom; the y axis from 0 to the tallest bar. `aria` names the chart for
 * screen readers. */
void tp_svg_bars(FILE *f, const char *aria, size_t n, size_t k, const double *v,
                 const tp_svg_series *ser, tp_svg_unit unit, tp_svg_bar_name name, const void *arg);

/* `k` line series over the same `n` x values (ns on the trace clock, ascending), series j
 * being y[j * n + i] in `unit`; the x axis shows time from x[0]. fill_first: the first series
 * is drawn as a filled area. ymax > 0 fixes the top of the y axis (1 for a share), else the
 * largest value sets it. */
void tp_svg_lines(FILE *f, const char *aria, size_t n, const double *x, size_t k, const double *y,
                  const tp_svg_series *ser, tp_svg_unit unit, int fill_first, double ymax);

#endif
