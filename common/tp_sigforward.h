/* tp_sigforward: how `trainprof record` marks a SIGINT/SIGTERM it passes on to the program,
 * so the collector inside the program can tell that copy from the one a process-group signal
 * (`kill -INT -PGID`, a job scheduler signalling the whole job) already delivered directly.
 *
 * record passes a signal on with sigqueue(); the value carries a magic, the pid of the
 * process that sent the original and how many signals of that number record has passed on
 * from that sender (1, 2, ...). The collector drops a passed-on copy when it already received
 * the same signal from the same sender directly (docs/collector.md, "Signals"). */
#ifndef TP_SIGFORWARD_H
#define TP_SIGFORWARD_H

#include <stdint.h>

#define TP_SIGFWD_MAGIC 0x7470u /* "tp" */

static inline uint64_t tp_sigfwd_encode(uint32_t sender, uint16_t seq) {
    return (uint64_t)TP_SIGFWD_MAGIC << 48 | (uint64_t)seq << 32 | sender;
}

/* 1 when `v` is a value made by tp_sigfwd_encode; fills sender and seq. */
static inline int tp_sigfwd_decode(uint64_t v, uint32_t *sender, uint16_t *seq) {
    if ((v >> 48) != TP_SIGFWD_MAGIC)
        return 0;
    *sender = (uint32_t)v;
    *seq = (uint16_t)(v >> 32);
    return 1;
}

#endif
