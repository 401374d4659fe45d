/* tp_collector_guard: keeps the trace whole however the host process ends.
 *
 * - exit(): atexit and the library destructor both call tp_collector_finish (exactly once).
 * - fork(): the child abandons the parent's writer without touching its file, then starts
 *   its own trace (<program>-<childpid>.tprof) unless TRAINPROF_FORK=none.
 * - SIGINT/SIGTERM: the handler only writes a byte to a pipe; a helper thread does the I/O.
 *   When the previous disposition was the default (the process is about to die) the handler
 *   waits up to 3 s for the helper to close the trace, then re-raises with the default
 *   action; otherwise the helper flushes and the previous handler runs at once.
 * - SIGKILL, _exit: nothing runs; the writer's periodic drain has already written complete
 *   chunks, so the trace opens up to the last drain. */
#ifndef TP_COLLECTOR_GUARD_H
#define TP_COLLECTOR_GUARD_H

/* Installs the exit, fork and signal handling (once per process). */
void tp_guard_install(void);

#endif
