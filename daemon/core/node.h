/* The daemon core's data-plane glue, one job per file, and what those
 * files share (not for the rooms above: they use core.h/mrcd.h):
 *   peers.c  peers and their EV -> uSID address tables
 *   rx.c     datagrams from the datapath into the engine or the CM
 *   tx.c     the engine's packets out (sealed in AEAD mode), completions
 *            to their owners, events to the log
 *   timer.c  the engine's timer (a timerfd, or libev's ev_timer)
 *   side.c   the udp side channel of datapaths with endpoints (CTRL only)
 *   links.c  the plane link monitor
 *   node.c   setting all of it up and down */
#ifndef MRCD_CORE_NODE_H
#define MRCD_CORE_NODE_H

#include "daemon/core/core.h"

#define MRCD_NO_ID UINT32_MAX   /* no peer, no host */

void mrcd__on_rx(struct ev_loop *loop, ev_io *w, int revents);
int mrcd__dp_poll(void *ctx);   /* a poll-mode datapath's planes (core.c pollers) */
int mrcd__dp_arm(void *ctx);
void mrcd__enc_report(struct mrcd *d);
int mrcd__side_open(struct mrcd *d, const struct mrc_dp_cfg *dc, char *err, size_t errlen);

#endif
