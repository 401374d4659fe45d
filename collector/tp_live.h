/* tp_live: the control socket of a job started with `trainprof record --live` or `--idle`
 * (protocol: docs/live-protocol.md, common/tp_liveproto.h).
 *
 * A client of the collector core (tp_collector_client). In the process `record` started, and
 * only there, it serves <dir>/<pid>.sock from a thread of its own: the application's threads
 * never do any of its work, and nothing a client does (garbage, floods, never reading) can
 * block them; replies that find no room are dropped and counted. The drain's tap copies every
 * record into a bounded staging buffer (full: counted as dropped) that the server thread moves
 * into a tp_live_store; windows and captures are cut from that store. Under --idle it opens
 * the collector's gate (tp_g.live_open) only while a capture waits for its window or a client
 * watched in the last seconds. Peers of another uid (root excepted) are refused, and that is
 * said once on stderr. The socket is removed when the trace closes (exit, exec); a fork child
 * closes the descriptors it inherited and serves nothing. */
#ifndef TP_LIVE_H
#define TP_LIVE_H

/* Registers the live server with the collector core (once per image, before any start). */
void tp_live_register(void);

#endif
