/* tp_units: human units for durations and sizes (see tp_units.h). */
#include "tp_units.h"

#include <math.h>
#include <stdio.h>

const char *tp_units_dur(char *buf, size_t n, double ns) {
    double a = fabs(ns);
    if (isnan(ns))
        snprintf(buf, n, "-");
    else if (a < 1e3)
        snprintf(buf, n, "%.0f ns", ns);
    else if (a < 1e6)
        snprintf(buf, n, "%.2f \u00b5s", ns / 1e3);
    else if (a < 1e9)
        snprintf(buf, n, "%.2f ms", ns / 1e6);
    else
        snprintf(buf, n, "%.2f s", ns / 1e9);
    return buf;
}

const char *tp_units_bytes(char *buf, size_t n, double bytes) {
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int k = 0;
    while (fabs(bytes) >= 1024 && k < 4) {
        bytes /= 1024;
        k++;
    }
    snprintf(buf, n, k ? "%.2f %s" : "%.0f %s", bytes, unit[k]);
    return buf;
}

const char *tp_units_count(char *buf, size_t n, uint64_t v) {
    char digits[24];
    int k = snprintf(digits, sizeof digits, "%llu", (unsigned long long)v), o = 0;
    for (int i = 0; i < k && (size_t)o + 2 < n; i++) {
        if (i && (k - i) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = digits[i];
    }
    if (n)
        buf[o < (int)n ? o : (int)n - 1] = 0;
    return buf;
}
