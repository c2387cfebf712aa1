/* Link-state monitor on RTNLGRP_LINK.  The socket comes from libnl (it
 * binds, joins the group and sends the dump request), but reading is a
 * plain non-blocking recv() so that an overrun (ENOBUFS: the kernel dropped
 * events) is seen as such and answered with a fresh dump. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "srv6/linkmon.h"   /* net/if.h before linux/if.h */
#include <linux/if.h>
#include <linux/rtnetlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>

#include "srv6/nl_internal.h"

#define LINKMON_BUF (64 * 1024)   /* a dump datagram is at most 32 KiB */

struct mrc_linkmon {
	struct nl_sock *sk;
	mrc_linkmon_cb cb;
	void *arg;
	bool dumping;        /* a dump is running: the kernel allows one at a time */
	bool redump;         /* another is wanted once it ends */
	unsigned long overruns;
	uint8_t buf[LINKMON_BUF];
};

bool mrc_linkmon_event_usable(const struct mrc_linkmon_event *ev)
{
	return ev && !ev->deleted && ev->admin_up && ev->running &&
	       (ev->operstate == IF_OPER_UP || ev->operstate == IF_OPER_UNKNOWN);
}

int mrc_linkmon_parse(const struct nlmsghdr *nh, struct mrc_linkmon_event *ev)
{
	struct nlattr *tb[IFLA_MAX + 1];
	const struct ifinfomsg *ifi;

	if (!nh || !ev)
		return -EINVAL;
	if (nh->nlmsg_type != RTM_NEWLINK && nh->nlmsg_type != RTM_DELLINK)
		return -ENOENT;
	if (!nlmsg_valid_hdr(nh, sizeof(*ifi)))
		return -EBADMSG;
	if (nlmsg_parse((struct nlmsghdr *)nh, sizeof(*ifi), tb, IFLA_MAX, NULL) < 0)
		return -EBADMSG;
	ifi = nlmsg_data(nh);
	if (ifi->ifi_index <= 0)
		return -EBADMSG;
	memset(ev, 0, sizeof(*ev));
	ev->ifindex = ifi->ifi_index;
	ev->deleted = nh->nlmsg_type == RTM_DELLINK;
	ev->admin_up = ifi->ifi_flags & IFF_UP;
	ev->running = ifi->ifi_flags & IFF_RUNNING;
	ev->operstate = IF_OPER_UNKNOWN;
	if (tb[IFLA_IFNAME]) {
		/* Never trust the terminating NUL: copy at most the payload. */
		size_t n = strnlen(nla_data(tb[IFLA_IFNAME]), (size_t)nla_len(tb[IFLA_IFNAME]));

		if (n >= sizeof(ev->name))
			return -EBADMSG;
		memcpy(ev->name, nla_data(tb[IFLA_IFNAME]), n);
	}
	if (tb[IFLA_OPERSTATE]) {
		if (nla_len(tb[IFLA_OPERSTATE]) < 1)
			return -EBADMSG;
		ev->operstate = nla_get_u8(tb[IFLA_OPERSTATE]);
	}
	if (tb[IFLA_MTU]) {
		if (nla_len(tb[IFLA_MTU]) < 4)
			return -EBADMSG;
		ev->mtu = nla_get_u32(tb[IFLA_MTU]);
	}
	return 0;
}

static int request_dump(struct mrc_linkmon *m)
{
	struct ifinfomsg ifi = { .ifi_family = AF_UNSPEC };
	int rc;

	if (m->dumping) {
		m->redump = true;
		return 0;
	}
	rc = nl_send_simple(m->sk, RTM_GETLINK, NLM_F_DUMP, &ifi, sizeof(ifi));
	if (rc < 0)
		return mrc__nl_errno(rc);
	m->dumping = true;
	m->redump = false;
	return 0;
}

int mrc_linkmon_open(struct mrc_linkmon **out, bool dump, mrc_linkmon_cb cb,
		     void *arg)
{
	struct mrc_linkmon *m;
	int rc;

	if (!out || !cb)
		return -EINVAL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->cb = cb;
	m->arg = arg;
	m->sk = nl_socket_alloc();
	if (!m->sk) {
		free(m);
		return -ENOMEM;
	}
	nl_socket_disable_seq_check(m->sk);
	rc = nl_connect(m->sk, NETLINK_ROUTE);
	if (rc >= 0)
		rc = nl_socket_add_membership(m->sk, RTNLGRP_LINK);
	if (rc >= 0)
		rc = nl_socket_set_nonblocking(m->sk);
	/* A big receive buffer makes overruns rare during link storms. */
	if (rc >= 0)
		rc = nl_socket_set_buffer_size(m->sk, 1 << 20, 0);
	rc = rc < 0 ? mrc__nl_errno(rc) : 0;
	/* Subscribed before the dump: a change racing it is seen twice, never lost. */
	if (!rc && dump)
		rc = request_dump(m);
	if (rc) {
		mrc_linkmon_close(m);
		return rc;
	}
	*out = m;
	return 0;
}

void mrc_linkmon_close(struct mrc_linkmon *m)
{
	if (!m)
		return;
	nl_socket_free(m->sk);
	free(m);
}

int mrc_linkmon_fd(const struct mrc_linkmon *m)
{
	return m ? nl_socket_get_fd(m->sk) : -1;
}

unsigned long mrc_linkmon_overruns(const struct mrc_linkmon *m)
{
	return m ? m->overruns : 0;
}

/* Handles one datagram; returns the number of events delivered. */
static int handle(struct mrc_linkmon *m, size_t len)
{
	struct nlmsghdr *nh = (struct nlmsghdr *)m->buf;
	int rem = (int)len, events = 0;

	for (; nlmsg_ok(nh, rem); nh = nlmsg_next(nh, &rem)) {
		struct mrc_linkmon_event ev;

		if (nh->nlmsg_type == NLMSG_DONE || nh->nlmsg_type == NLMSG_ERROR) {
			/* The end (or refusal) of our dump request. */
			m->dumping = false;
			if (m->redump)
				(void)request_dump(m);
			continue;
		}
		if (mrc_linkmon_parse(nh, &ev) == 0) {
			m->cb(&ev, m->arg);
			events++;
		}
	}
	return events;
}

int mrc_linkmon_dispatch(struct mrc_linkmon *m)
{
	int events = 0, fd;

	if (!m)
		return -EINVAL;
	fd = nl_socket_get_fd(m->sk);
	for (;;) {
		ssize_t n = recv(fd, m->buf, sizeof(m->buf), MSG_DONTWAIT);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return events;
			if (errno == ENOBUFS) {
				/* Events were lost: re-read the whole state. */
				m->overruns++;
				int rc = request_dump(m);

				if (rc)
					return rc;
				continue;
			}
			return -errno;
		}
		if (n == 0)
			return events;
		events += handle(m, (size_t)n);
	}
}
