/* rtnetlink socket: open (in this or another namespace), send a request and
 * collect the kernel's answer with its exact errno and extended-ack text.
 *
 * libnl's own nl_send_sync() turns kernel errnos into NLE_* codes, losing
 * detail (and the extack message), so requests go through mrc__nl_talk(),
 * which installs its own error/ack/finish callbacks. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/netlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>

#include "srv6/nl.h"
#include "srv6/nl_internal.h"

#ifndef SOL_NETLINK
#define SOL_NETLINK 270
#endif

int mrc__nl_errno(int nlerr)
{
	switch (nlerr < 0 ? -nlerr : nlerr) {
	case 0: return 0;
	case NLE_NOMEM: return -ENOMEM;
	case NLE_INVAL: return -EINVAL;
	case NLE_AGAIN: return -EAGAIN;
	case NLE_INTR: return -EINTR;
	case NLE_MSGSIZE: return -EMSGSIZE;
	case NLE_NOADDR: return -EADDRNOTAVAIL;
	case NLE_NODEV: return -ENODEV;
	case NLE_OBJ_NOTFOUND: return -ENOENT;
	case NLE_EXIST: return -EEXIST;
	case NLE_PERM: return -EPERM;
	case NLE_BUSY: return -EBUSY;
	case NLE_RANGE: return -ERANGE;
	case NLE_NOACCESS: return -EACCES;
	case NLE_OPNOTSUPP: return -EOPNOTSUPP;
	case NLE_AF_NOSUPPORT: return -EAFNOSUPPORT;
	case NLE_MSG_TRUNC: case NLE_MSG_TOOSHORT: case NLE_MSG_OVERFLOW:
	case NLE_PARSE_ERR: return -EBADMSG;
	default: return -EIO;
	}
}

struct mrc_nl {
	struct nl_sock *sk;
	char errmsg[256];
};

static int open_here(struct mrc_nl **out)
{
	struct mrc_nl *nl;
	int one = 1, rc;

	if (!out)
		return -EINVAL;
	nl = calloc(1, sizeof(*nl));
	if (!nl)
		return -ENOMEM;
	nl->sk = nl_socket_alloc();
	if (!nl->sk) {
		free(nl);
		return -ENOMEM;
	}
	rc = nl_connect(nl->sk, NETLINK_ROUTE);
	if (rc < 0) {
		nl_socket_free(nl->sk);
		free(nl);
		return mrc__nl_errno(rc);
	}
	/* Extended acks carry the kernel's reason; capped acks keep them small.
	 * Both are optional: older kernels just ignore them. */
	(void)setsockopt(nl_socket_get_fd(nl->sk), SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
	(void)setsockopt(nl_socket_get_fd(nl->sk), SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
	nl_socket_enable_msg_peek(nl->sk);   /* route dumps can exceed a page */
	nl_socket_disable_seq_check(nl->sk); /* mrc__nl_talk matches sequence numbers itself */
	*out = nl;
	return 0;
}

int mrc_nl_open(struct mrc_nl **out)
{
	return open_here(out);
}

int mrc_nl_netns_enter(int netns_fd, int *saved)
{
	int self;

	if (netns_fd < 0 || !saved)
		return -EINVAL;
	self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (self < 0)
		return -errno;
	if (setns(netns_fd, CLONE_NEWNET) < 0) {
		int e = -errno;

		close(self);
		return e;
	}
	*saved = self;
	return 0;
}

int mrc_nl_netns_leave(int saved)
{
	int rc = 0;

	if (saved < 0)
		return -EINVAL;
	if (setns(saved, CLONE_NEWNET) < 0)
		rc = -errno;
	close(saved);
	return rc;
}

int mrc_nl_open_netns(int netns_fd, struct mrc_nl **out)
{
	int saved, rc, rc2;

	rc = mrc_nl_netns_enter(netns_fd, &saved);
	if (rc)
		return rc;
	/* A netlink socket stays bound to the namespace it was created in. */
	rc = open_here(out);
	rc2 = mrc_nl_netns_leave(saved);
	if (rc2) {
		if (!rc)
			mrc_nl_close(*out);
		return rc2;
	}
	return rc;
}

void mrc_nl_close(struct mrc_nl *nl)
{
	if (!nl)
		return;
	nl_socket_free(nl->sk);
	free(nl);
}

const char *mrc_nl_errmsg(const struct mrc_nl *nl)
{
	return nl ? nl->errmsg : "";
}

struct nl_sock *mrc_nl_sock(struct mrc_nl *nl)
{
	return nl ? nl->sk : NULL;
}

/* ---- request / answer ---------------------------------------------------- */

struct talk {
	struct mrc_nl *nl;
	uint32_t seq;
	bool done;
	int err;
	mrc__nl_valid_cb valid;
	void *arg;
};

static int on_seq(struct nl_msg *msg, void *arg)
{
	struct talk *t = arg;

	/* Late answers to an abandoned earlier request are skipped. */
	return nlmsg_hdr(msg)->nlmsg_seq == t->seq ? NL_OK : NL_SKIP;
}

static int on_valid(struct nl_msg *msg, void *arg)
{
	struct talk *t = arg;
	int rc;

	if (!t->valid)
		return NL_OK;
	rc = t->valid(nlmsg_hdr(msg), t->arg);
	if (rc) {
		t->err = rc;
		t->done = true;
		return NL_STOP;
	}
	return NL_OK;
}

static int on_done(struct nl_msg *msg, void *arg)
{
	struct talk *t = arg;

	t->done = true;
	return NL_STOP;
}

/* Copies NLMSGERR_ATTR_MSG out of an extended ack, if there is one. */
static void extack(struct mrc_nl *nl, struct nlmsgerr *e)
{
	const struct nlmsghdr *h = (const void *)((const char *)e - NLMSG_HDRLEN);
	const struct nlattr *a;
	size_t off, len;
	int rem;

	if (!(h->nlmsg_flags & NLM_F_ACK_TLVS))
		return;
	off = NLMSG_HDRLEN + sizeof(*e);
	if (!(h->nlmsg_flags & NLM_F_CAPPED))
		off += NLMSG_ALIGN(e->msg.nlmsg_len - NLMSG_HDRLEN);
	if (off >= h->nlmsg_len)
		return;
	len = h->nlmsg_len - off;
	nla_for_each_attr(a, (struct nlattr *)((char *)h + off), (int)len, rem) {
		if (nla_type(a) == NLMSGERR_ATTR_MSG && nla_len(a) > 0) {
			size_t n = (size_t)nla_len(a);

			if (n >= sizeof(nl->errmsg))
				n = sizeof(nl->errmsg) - 1;
			memcpy(nl->errmsg, nla_data(a), n);
			nl->errmsg[n] = '\0';
		}
	}
}

static int on_error(struct sockaddr_nl *who, struct nlmsgerr *e, void *arg)
{
	struct talk *t = arg;

	if (e->msg.nlmsg_seq != t->seq)
		return NL_SKIP;
	t->err = e->error < 0 ? e->error : -EIO;
	t->done = true;
	extack(t->nl, e);
	return NL_STOP;
}

int mrc__nl_talk(struct mrc_nl *nl, struct nl_msg *msg, mrc__nl_valid_cb valid,
		 void *arg)
{
	struct talk t = { .nl = nl, .valid = valid, .arg = arg };
	struct nl_cb *cb;
	int rc;

	if (!nl || !msg)
		return -EINVAL;
	nl->errmsg[0] = '\0';
	cb = nl_cb_alloc(NL_CB_DEFAULT);
	if (!cb)
		return -ENOMEM;
	nl_cb_set(cb, NL_CB_SEQ_CHECK, NL_CB_CUSTOM, on_seq, &t);
	nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, on_valid, &t);
	nl_cb_set(cb, NL_CB_ACK, NL_CB_CUSTOM, on_done, &t);
	nl_cb_set(cb, NL_CB_FINISH, NL_CB_CUSTOM, on_done, &t);
	nl_cb_err(cb, NL_CB_CUSTOM, on_error, &t);
	nl_complete_msg(nl->sk, msg);   /* sequence number, port, NLM_F_ACK */
	t.seq = nlmsg_hdr(msg)->nlmsg_seq;
	rc = nl_send(nl->sk, msg);
	if (rc < 0) {
		nl_cb_put(cb);
		return mrc__nl_errno(rc);
	}
	while (!t.done) {
		rc = nl_recvmsgs(nl->sk, cb);
		if (t.done)
			break;
		if (rc < 0) {
			t.err = mrc__nl_errno(rc);
			break;
		}
	}
	nl_cb_put(cb);
	return t.err;
}

struct nl_msg *mrc__nl_msg(int type, unsigned flags, const void *hdr, size_t hdrlen)
{
	struct nl_msg *msg = nlmsg_alloc_simple(type, (int)flags);

	if (!msg)
		return NULL;
	if (nlmsg_append(msg, (void *)hdr, hdrlen, NLMSG_ALIGNTO) < 0) {
		nlmsg_free(msg);
		return NULL;
	}
	return msg;
}

struct nlattr *mrc__nl_nla_nest(struct nl_msg *msg, int type)
{
	struct nlattr *a = nla_nest_start(msg, type);

	/* The kernel's strict parser refuses nests without NLA_F_NESTED. */
	if (a)
		a->nla_type |= NLA_F_NESTED;
	return a;
}
