/* tp_kgroup: the group a device operation belongs to, by its name (Holistic Trace Analysis'
 * kernel grouping: computation, communication, memory, other). One rule for the offline
 * analyses (analyzer/tp_an_view's tp_ktype_of) and the live aggregator (collector/), which
 * cannot reach the analyzer. */
#ifndef TP_KGROUP_H
#define TP_KGROUP_H

enum {
    TP_KGROUP_COMPUTATION = 0,
    TP_KGROUP_COMMUNICATION = 1,
    TP_KGROUP_MEMORY = 2,
    TP_KGROUP_OTHER = 3
};

/* The group of an operation named `name` (a kernel's name, or Kineto's name of a copy or
 * memset as traces/tp_kineto_names spells it). */
int tp_kgroup_of(const char *name);

#endif
