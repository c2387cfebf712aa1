/* A bounded queue of outgoing messages for one non-blocking socket of the
 * operator interface (mrcctl records, metrics HTTP responses): the loop
 * never waits for a reader; what the socket does not take now is sent
 * when it becomes writable, and a reader that falls further behind than
 * the bound is refused more (the caller decides: drop events, pause or
 * close the connection). */
#ifndef MRC_DAEMON_OPER_OUTQ_H
#define MRC_DAEMON_OPER_OUTQ_H

#include <stddef.h>

struct outq_msg;

struct outq {
	struct outq_msg *head, *tail;
	size_t bytes, max;            /* queued, bound */
	size_t off;                   /* bytes of head already sent */
};

/* Copies len bytes as one message; -ENOBUFS when the bound would be passed
 * (an empty queue always takes one message, so any reply can go). */
int mrcd_outq_push(struct outq *q, const void *p, size_t len);
/* Sends what the socket takes (record sockets take whole messages, stream
 * sockets any part): 0 when empty, 1 when some is left (wait for
 * writable), -errno when the peer is gone. */
int mrcd_outq_flush(struct outq *q, int fd);
void mrcd_outq_clear(struct outq *q);

#endif
