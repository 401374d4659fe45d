/* tp_report_svg: escaped HTML text and inline SVG charts (see the header). */
#include "tp_report_svg.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "tp_text.h"
#include "tp_units.h"

/* The drawing area inside a chart of W x H user units (the page scales it to its width). */
enum { W = 960, H = 240, X0 = 76, X1 = W - 14, Y0 = 12, Y1 = H - 30, TICKS = 4 };

void tp_rh_text(FILE *f, const char *s) {
    if (!s)
        return;
    size_t n = strlen(s);
    while (n) {
        uint32_t cp;
        int len = tp_utf8_next(s, n, &cp);
        switch (cp) {
        case '&':
            fputs("&amp;", f);
            break;
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '"':
            fputs("&quot;", f);
            break;
        case '\'':
            fputs("&#39;", f);
            break;
        default:
            if (cp != '\n' && cp != '\t' && tp_text_cp_is_control(cp))
                fputs("&#xFFFD;", f);
            else
                fwrite(s, 1, (size_t)len, f);
        }
        s += len, n -= (size_t)len;
    }
}

/* An axis label: a value in the chart's unit. */
static const char *unit_str(char *b, size_t n, double v, tp_svg_unit u) {
    if (u == TP_SVG_NS)
        return tp_units_dur(b, n, v);
    if (u == TP_SVG_BYTES)
        return tp_units_bytes(b, n, v);
    snprintf(b, n, "%.0f %%", 100 * v);
    return b;
}

/* The smallest 1, 2 or 5 times a power of ten that is >= x (x > 0). */
static double nice(double x) {
    double p = pow(10, floor(log10(x))), m = x / p;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

/* The y axis' top: a whole number of round ticks above `max`; round in the unit shown (bytes
 * are printed in KiB, MiB, ...: a tick of 20 MiB, not of 20,000,000 B). */
static double axis_top(double max, tp_svg_unit u) {
    if (u == TP_SVG_SHARE)
        return 1;
    if (!(max > 0) || !isfinite(max))
        return 1;
    double scale = 1;
    while (u == TP_SVG_BYTES && max / scale >= 1024)
        scale *= 1024;
    return nice(max / scale / TICKS) * TICKS * scale;
}

static double ypos(double v, double top) {
    return Y1 - (Y1 - Y0) * (v / top);
}

/* The frame: the SVG element, gridlines and y labels. Closed by the caller with </svg>. */
static void frame(FILE *f, const char *aria, double top, tp_svg_unit u) {
    char b[32];
    fprintf(f, "<svg class=\"chart\" viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"", W, H);
    tp_rh_text(f, aria);
    fprintf(f, "\">\n");
    for (int t = 0; t <= TICKS; t++) {
        double v = top * t / TICKS, y = ypos(v, top);
        fprintf(f,
                "<line class=\"grid\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>"
                "<text class=\"yl\" x=\"%d\" y=\"%.1f\">",
                X0, y, X1, y, X0 - 6, y + 4);
        tp_rh_text(f, unit_str(b, sizeof b, v, u));
        fprintf(f, "</text>\n");
    }
}

void tp_svg_legend(FILE *f, size_t k, const tp_svg_series *ser) {
    fprintf(f, "<ul class=\"legend\">");
    for (size_t j = 0; j < k; j++) {
        fprintf(f, "<li><span class=\"sw\" style=\"background:%s\"></span>", ser[j].color);
        tp_rh_text(f, ser[j].label);
        fprintf(f, "</li>");
    }
    fprintf(f, "</ul>\n");
}

/* The tooltip of bar i: its name, total and parts. */
static void bar_title(FILE *f, size_t i, size_t k, const double *v, const tp_svg_series *ser,
                      tp_svg_unit unit, tp_svg_bar_name name, const void *arg) {
    char nb[96] = "", b[32];
    double sum = 0;
    for (size_t j = 0; j < k; j++)
        sum += v[j];
    if (name)
        name(i, nb, sizeof nb, arg);
    fprintf(f, "<title>");
    tp_rh_text(f, nb);
    fprintf(f, ": ");
    tp_rh_text(f, unit_str(b, sizeof b, sum, unit));
    for (size_t j = 0; j < k; j++) {
        fprintf(f, "%s", j ? ", " : " (");
        tp_rh_text(f, ser[j].label);
        fprintf(f, " ");
        tp_rh_text(f, unit_str(b, sizeof b, v[j], unit));
    }
    fprintf(f, ")</title>");
}

void tp_svg_bars(FILE *f, const char *aria, size_t n, size_t k, const double *v,
                 const tp_svg_series *ser, tp_svg_unit unit, tp_svg_bar_name name,
                 const void *arg) {
    double max = 0;
    for (size_t i = 0; i < n; i++) {
        double sum = 0;
        for (size_t j = 0; j < k; j++)
            sum += v[i * k + j] > 0 ? v[i * k + j] : 0;
        max = sum > max ? sum : max;
    }
    double top = axis_top(max, unit), slot = n ? (double)(X1 - X0) / (double)n : 0;
    double bw = slot > 3 ? slot * 0.8 : slot;
    bw = bw > 64 ? 64 : bw; /* one step is a bar, not a wall */
    frame(f, aria, top, unit);
    for (size_t i = 0; i < n; i++) {
        double x = X0 + slot * (double)i + (slot - bw) / 2, base = 0;
        fprintf(f, "<g class=\"bar\">");
        bar_title(f, i, k, v + i * k, ser, unit, name, arg);
        for (size_t j = 0; j < k; j++) {
            double h = v[i * k + j] > 0 ? v[i * k + j] : 0;
            if (h > 0)
                fprintf(f,
                        "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\"/>",
                        x, ypos(base + h, top), bw, ypos(base, top) - ypos(base + h, top),
                        ser[j].color);
            base += h;
        }
        fprintf(f, "</g>\n");
    }
    char b[96] = "";
    for (size_t i = 0; i < n; i += (n + 9) / 10) { /* at most ten x labels */
        if (name)
            name(i, b, sizeof b, arg);
        fprintf(f, "<text class=\"xl\" x=\"%.1f\" y=\"%d\">", X0 + slot * ((double)i + 0.5),
                Y1 + 18);
        tp_rh_text(f, b);
        fprintf(f, "</text>");
    }
    fprintf(f, "</svg>\n");
}

/* One series as a polyline (or, filled, a polygon down to the x axis). */
static void series(FILE *f, size_t n, const double *x, const double *y, double top,
                   const char *color, int fill) {
    double x0 = x[0], span = x[n - 1] > x0 ? x[n - 1] - x0 : 1;
    fprintf(f,
            fill ? "<polygon fill=\"%s\" fill-opacity=\"0.35\" stroke=\"%s\" points=\""
                 : "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"",
            color, color);
    if (fill)
        fprintf(f, "%d,%d ", X0, Y1);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%.1f,%.1f ", X0 + (X1 - X0) * (x[i] - x0) / span,
                ypos(y[i] > 0 ? (y[i] < top ? y[i] : top) : 0, top));
    if (fill)
        fprintf(f, "%d,%d", X1, Y1);
    fprintf(f, "\"/>\n");
}

void tp_svg_lines(FILE *f, const char *aria, size_t n, const double *x, size_t k, const double *y,
                  const tp_svg_series *ser, tp_svg_unit unit, int fill_first, double ymax) {
    double max = 0;
    for (size_t i = 0; i < n * k; i++)
        max = y[i] > max ? y[i] : max;
    double top = ymax > 0 ? ymax : axis_top(max, unit);
    frame(f, aria, top, unit);
    for (size_t j = 0; n && j < k; j++)
        series(f, n, x, y + j * n, top, ser[j].color, fill_first && j == 0);
    char b[32];
    for (int t = 0; n && t <= 4; t++) { /* five time labels, from the first point */
        double dx = (x[n - 1] - x[0]) * t / 4;
        fprintf(f, "<text class=\"xl\" x=\"%.1f\" y=\"%d\"%s>", X0 + (X1 - X0) * t / 4.0, Y1 + 18,
                t == 4 ? " text-anchor=\"end\"" : "");
        tp_rh_text(f, t ? tp_units_dur(b, sizeof b, dx) : "0");
        fprintf(f, "</text>");
    }
    fprintf(f, "</svg>\n");
}
