/* Bounded non-blocking output queue (outq.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "daemon/oper/outq.h"

struct outq_msg {
	struct outq_msg *next;
	size_t len;
	char data[];
};

int mrcd_outq_push(struct outq *q, const void *p, size_t len)
{
	if (q->head && q->bytes + len > q->max)
		return -ENOBUFS;
	struct outq_msg *m = malloc(sizeof(*m) + len);
	if (!m)
		return -ENOMEM;
	m->next = NULL;
	m->len = len;
	memcpy(m->data, p, len);
	if (q->tail)
		q->tail->next = m;
	else
		q->head = m;
	q->tail = m;
	q->bytes += len;
	return 0;
}

static void pop(struct outq *q)
{
	struct outq_msg *m = q->head;
	q->head = m->next;
	if (!q->head)
		q->tail = NULL;
	q->bytes -= m->len;
	q->off = 0;
	free(m);
}

int mrcd_outq_flush(struct outq *q, int fd)
{
	while (q->head) {
		struct outq_msg *m = q->head;
		ssize_t w = send(fd, m->data + q->off, m->len - q->off, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return errno == EAGAIN || errno == ENOBUFS ? 1 : -errno;
		q->off += (size_t)w;
		if (q->off == m->len)
			pop(q);
	}
	return 0;
}

void mrcd_outq_clear(struct outq *q)
{
	while (q->head)
		pop(q);
}
