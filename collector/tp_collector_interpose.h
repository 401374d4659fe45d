/* tp_collector_interpose: the libc functions libtrainprof-collector.so replaces in the
 * program (signals, _exit, descriptors; see the .c file for the list and why). */
#ifndef TP_COLLECTOR_INTERPOSE_H
#define TP_COLLECTOR_INTERPOSE_H

/* Resolves the real functions and tells the guard whether the program calls ours (they only
 * interpose when the library was preloaded). Call from the library's constructor. */
void tp_interpose_init(void);

#endif
