/* tp_sampler: `trainprof record --sample`: where each Python thread is, HZ times a second.
 *
 * A client of the collector core (tp_collector_client). In every recording process it runs
 * a thread of its own that wakes HZ times a second, lists the interpreter's thread states and
 * reads each one's Python frames while it runs (tp_pyframes_threads/_walk_other: checked
 * copies only, no GIL, no signal, nothing asked of the program's threads), then writes a
 * SAMPLE record per thread: its stack and the CPU time it used since its previous sample (its
 * thread CPU clock), so a report can say which of the program's lines burn the CPU and which
 * wait. The --capture/--delay/--idle gate applies as to every record. The thread blocks every
 * signal; it is stopped and joined before the trace closes; a fork child starts its own when
 * its recording starts. A process without CPython costs one wake-up per period. */
#ifndef TP_SAMPLER_H
#define TP_SAMPLER_H

/* Registers the sampler with the collector core (once per image, before any start). */
void tp_sampler_register(void);

#endif
