/* tp_units: numbers in human units, shared by every renderer (report text, diagnosis, TUI)
 * so a duration or a size reads the same everywhere. */
#ifndef TP_UNITS_H
#define TP_UNITS_H

#include <stddef.h>
#include <stdint.h>

/* Duration in nanoseconds as "812 ns", "12.30 µs", "4.56 ms" or "7.89 s" ("-" for NaN) into
 * `buf` of `n` bytes; returns buf. "µ" is two bytes of UTF-8 and one display column. */
const char *tp_units_dur(char *buf, size_t n, double ns);

/* Size in bytes as "512 B", "1.50 KiB", "18.40 MiB", ... (binary prefixes); returns buf. */
const char *tp_units_bytes(char *buf, size_t n, double bytes);

/* A count with thousands separators, "1,234,567", into `buf` of `n` bytes; returns buf. */
const char *tp_units_count(char *buf, size_t n, uint64_t v);

#endif
