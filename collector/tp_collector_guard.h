/* tp_collector_guard: keeps the trace whole however the host process ends, without changing
 * what the program sees of its own signals.
 *
 * - exit(): atexit and the library destructor both call tp_collector_finish (exactly once).
 * - _exit(), _Exit() (multiprocessing and DataLoader workers end this way): the interposed
 *   wrappers finish the trace first (on the helper thread, waited for at most 3 s).
 * - SIGINT/SIGTERM: the program's view of their dispositions is virtual. sigaction() and
 *   signal() (interposed) read and write that view; the kernel holds the guard's handler
 *   unless the program ignores the signal (then the kernel ignores it too). On delivery the
 *   handler runs the program's handler as the kernel would have (same mask and flags,
 *   SA_RESETHAND emulated) and asks the helper thread for a flush; when the program's
 *   disposition is the default (the process is about to die) the handler waits for the
 *   helper to close the trace, then dies of the signal with the default action. A copy that
 *   `trainprof record` passed on (tp_sigforward.h) is dropped when the program already got
 *   that signal from the same sender directly, so a process-group signal arrives once.
 * - The guard's threads block every signal, so no handler can wait on its own thread.
 * - fork(): the child's view is the parent's (as the kernel's is); its own helper starts
 *   with its own trace.
 * - SIGKILL, raw exit_group: nothing runs; the writer's periodic drain has already written
 *   complete chunks, so the trace opens up to the last drain.
 * Without interposition (the library reached only by dlopen) the guard leaves signals and
 * _exit alone: the program's dispositions then stay exactly its own. */
#ifndef TP_COLLECTOR_GUARD_H
#define TP_COLLECTOR_GUARD_H

#include <signal.h>

/* Registers the guard as a collector client (atexit, helper thread, signal view at start;
 * reset in a fork child). Once per process image, before the collector starts. */
void tp_guard_register(void);

/* Says that the library's sigaction/signal/_exit wrappers are the ones the program calls
 * (LD_PRELOAD): only then does the guard take over SIGINT/SIGTERM. */
void tp_guard_set_interposed(void);

/* The interposed sigaction(): the program's view for SIGINT/SIGTERM once the guard holds
 * them, libc's sigaction otherwise. Same contract as sigaction(2). */
int tp_guard_sigaction(int sig, const struct sigaction *act, struct sigaction *old);

/* The interposed signal()/bsd_signal() (sysv = 0) and sysv_signal() (sysv = 1) for every
 * signal: BSD or System V semantics as glibc gives them. Returns the previous handler or
 * SIG_ERR. */
typedef void (*tp_sighandler)(int);
tp_sighandler tp_guard_signal(int sig, tp_sighandler handler, int sysv);

/* Called by the interposed _exit/_Exit: finishes this process's trace (index written, an
 * empty trace of a non-target process deleted) unless that cannot be done safely here. */
void tp_guard_before_exit(void);

#endif
