/* tp_decimal: decimal text's doubles without the text.
 *
 * HTA (pandas) reads a Kineto trace's microsecond numbers into doubles and rounds from those,
 * so `report --compat hta` needs, for a model time of `ns` nanoseconds, the double that
 * strtod gives for the exact decimal "ns/1000" ("123.456"): the nearest double, ties to the
 * even one. Printing that text and parsing it back took two snprintf and a strtod per row
 * (14 % of the report's main thread on a 62 MB peer trace); this computes the same double
 * from integers. */
#ifndef TP_DECIMAL_H
#define TP_DECIMAL_H

#include <stdint.h>

/* The double nearest to ns / 1000 (ties to even): bit for bit what strtod returns for the
 * exact decimal text of ns / 1000. */
double tp_decimal_ns_to_us(int64_t ns);

#endif
