/* tp_report_fmt: see tp_report_fmt.h. */
#include "tp_report_fmt.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tp_text.h"
#include "tp_units.h"

double tp_rf_pct(int64_t a, int64_t b) {
    return b > 0 ? 100.0 * (double)a / (double)b : NAN;
}

/* fmt_dur right-aligned to 12 display columns for table cells. printf pads by bytes, and
 * "µ" takes two, so the padding is done here and "%12s" then leaves the string alone. */
const char *tp_rf_time(char *buf, size_t n, double ns) {
    char s[32];
    tp_units_dur(s, sizeof s, ns);
    size_t bytes = strlen(s), cols = bytes - (strstr(s, "\u00b5") ? 1 : 0);
    size_t pad = cols < 12 ? 12 - cols : 0;
    if (pad + bytes + 1 > n)
        pad = 0;
    assert(bytes + 1 <= n);
    memset(buf, ' ', pad);
    memcpy(buf + pad, s, bytes + 1);
    return buf;
}

const char *tp_rf_pct_str(char *buf, size_t n, double p) {
    if (isnan(p))
        snprintf(buf, n, "-");
    else
        snprintf(buf, n, "%.2f %%", p);
    return buf;
}

/* A name from the trace, terminal-safe (tp_text), shortened to `w` bytes with a trailing
 * "..." when longer. */
const char *tp_rf_clip(char *buf, size_t n, const char *s, size_t w) {
    if (tp_text_safe_size(s) <= w + 1 || w < 4 || w + 1 > n)
        return tp_text_safe(buf, n, s);
    tp_text_safe(buf, w - 2, s);
    strcat(buf, "...");
    return buf;
}

/* Writes `label` then `text` (made terminal-safe) wrapped at 100 columns, continuation lines
 * indented to match. */
void tp_rf_wrapped(FILE *f, const char *label, const char *raw) {
    const size_t indent = 7 + strlen(label), width = 100;
    char *safe = tp_text_safe_dup(raw);
    if (!safe)
        abort();
    const char *text = safe;
    fprintf(f, "     %s  ", label);
    size_t col = indent;
    while (*text) {
        size_t w = strcspn(text, " ");
        if (col > indent && col + 1 + w > width) {
            fprintf(f, "\n%*s", (int)indent, "");
            col = indent;
        } else if (col > indent) {
            fputc(' ', f);
            col++;
        }
        fwrite(text, 1, w, f);
        col += w;
        text += w;
        text += strspn(text, " ");
    }
    fputc('\n', f);
    free(safe);
}

/* Strings are exact (yajl escapes controls); only bytes that are not UTF-8, which no JSON
 * document may hold, become U+FFFD. */
void tp_rj_str(yajl_gen g, const char *s) {
    size_t n;
    const char *u = tp_text_utf8_fix(s, strlen(s), &n);
    if (!u)
        abort();
    yajl_gen_string(g, (const unsigned char *)u, n);
    if (u != s)
        free((void *)u);
}

void tp_rj_int(yajl_gen g, const char *k, long long v) {
    tp_rj_str(g, k);
    yajl_gen_integer(g, v);
}

void tp_rj_num(yajl_gen g, const char *k, double v) {
    tp_rj_str(g, k);
    if (isnan(v) || isinf(v)) {
        yajl_gen_null(g);
        return;
    }
    char buf[40];
    int n = snprintf(buf, sizeof buf, "%.17g", v);
    yajl_gen_number(g, buf, (size_t)n);
}

void tp_rj_kv(yajl_gen g, const char *k, const char *v) {
    tp_rj_str(g, k);
    tp_rj_str(g, v);
}

void tp_rj_describe(yajl_gen g, const char *k, const tp_an_describe_t *d) {
    tp_rj_str(g, k);
    yajl_gen_map_open(g);
    tp_rj_int(g, "count", (long long)d->count);
    tp_rj_num(g, "mean", d->mean);
    tp_rj_num(g, "std", d->std);
    tp_rj_num(g, "min", d->min);
    tp_rj_num(g, "p25", d->p25);
    tp_rj_num(g, "p50", d->p50);
    tp_rj_num(g, "p75", d->p75);
    tp_rj_num(g, "max", d->max);
    yajl_gen_map_close(g);
}

void tp_rj_dist(yajl_gen g, const char *k, const tp_an_dist *d) {
    tp_rj_str(g, k);
    yajl_gen_map_open(g);
    tp_rj_int(g, "count", (long long)d->count);
    tp_rj_num(g, "sum", d->sum);
    tp_rj_num(g, "mean", d->mean);
    tp_rj_num(g, "min", d->min);
    tp_rj_num(g, "p50", d->p50);
    tp_rj_num(g, "p95", d->p95);
    tp_rj_num(g, "max", d->max);
    yajl_gen_map_close(g);
}
