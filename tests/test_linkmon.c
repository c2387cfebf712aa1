/* Link monitor: the parser on built messages, and (as root, in a private
 * network namespace) real down/up events of a veth. */
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/support/skip.h"

#include <linux/if.h>
#include <linux/rtnetlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>

#include "srv6/linkmon.h"
#include "srv6/nl.h"

static unsigned seed;

static struct nl_msg *link_msg(int type, int ifindex, unsigned flags)
{
	struct ifinfomsg ifi = { .ifi_family = AF_UNSPEC, .ifi_index = ifindex,
				 .ifi_flags = flags, .ifi_change = ~0u };
	struct nl_msg *msg = nlmsg_alloc_simple(type, 0);

	assert_non_null(msg);
	assert_int_equal(nlmsg_append(msg, &ifi, sizeof(ifi), NLMSG_ALIGNTO), 0);
	return msg;
}

static void test_parse_random(void **st)
{
	for (int iter = 0; iter < 500; iter++) {
		int idx = 1 + rand() % 100000;
		unsigned flags = (rand() % 2 ? IFF_UP : 0) | (rand() % 2 ? IFF_RUNNING : 0) |
				 (rand() % 2 ? IFF_LOWER_UP : 0);
		uint8_t op = (uint8_t)(rand() % 7);
		unsigned mtu = 68 + (unsigned)rand() % 65000;
		int type = rand() % 4 ? RTM_NEWLINK : RTM_DELLINK;
		char name[IF_NAMESIZE];
		struct mrc_linkmon_event ev;
		struct nl_msg *msg = link_msg(type, idx, flags);

		snprintf(name, sizeof(name), "mrcS%d", rand() % 100000);
		nla_put_string(msg, IFLA_IFNAME, name);
		nla_put_u8(msg, IFLA_OPERSTATE, op);
		nla_put_u32(msg, IFLA_MTU, mtu);
		if (mrc_linkmon_parse(nlmsg_hdr(msg), &ev))
			fail_msg("seed %u iter %d: parse failed", seed, iter);
		assert_int_equal(ev.ifindex, idx);
		assert_string_equal(ev.name, name);
		assert_int_equal(ev.deleted, type == RTM_DELLINK);
		assert_int_equal(ev.admin_up, !!(flags & IFF_UP));
		assert_int_equal(ev.running, !!(flags & IFF_RUNNING));
		assert_int_equal(ev.operstate, op);
		assert_int_equal(ev.mtu, mtu);
		assert_int_equal(mrc_linkmon_event_usable(&ev),
				 type == RTM_NEWLINK && (flags & IFF_UP) && (flags & IFF_RUNNING) &&
				 (op == IF_OPER_UP || op == IF_OPER_UNKNOWN));
		nlmsg_free(msg);
	}
}

static void test_parse_bad(void **st)
{
	struct mrc_linkmon_event ev;
	struct nl_msg *msg;
	char longname[40];

	/* Optional attributes missing: defaults. */
	msg = link_msg(RTM_NEWLINK, 3, IFF_UP);
	assert_int_equal(mrc_linkmon_parse(nlmsg_hdr(msg), &ev), 0);
	assert_string_equal(ev.name, "");
	assert_int_equal(ev.operstate, IF_OPER_UNKNOWN);
	assert_int_equal(ev.mtu, 0);
	/* Wrong type. */
	nlmsg_hdr(msg)->nlmsg_type = RTM_NEWADDR;
	assert_int_equal(mrc_linkmon_parse(nlmsg_hdr(msg), &ev), -ENOENT);
	/* Header cut short. */
	nlmsg_hdr(msg)->nlmsg_type = RTM_NEWLINK;
	nlmsg_hdr(msg)->nlmsg_len = NLMSG_HDRLEN + 4;
	assert_int_equal(mrc_linkmon_parse(nlmsg_hdr(msg), &ev), -EBADMSG);
	nlmsg_free(msg);
	/* A name longer than any interface name, with no NUL in reach. */
	memset(longname, 'x', sizeof(longname));
	msg = link_msg(RTM_NEWLINK, 3, 0);
	nla_put(msg, IFLA_IFNAME, sizeof(longname), longname);
	assert_int_equal(mrc_linkmon_parse(nlmsg_hdr(msg), &ev), -EBADMSG);
	nlmsg_free(msg);
	/* Zero-length operstate; index 0. */
	msg = link_msg(RTM_NEWLINK, 3, 0);
	nla_put(msg, IFLA_OPERSTATE, 0, NULL);
	assert_int_equal(mrc_linkmon_parse(nlmsg_hdr(msg), &ev), -EBADMSG);
	nlmsg_free(msg);
	msg = link_msg(RTM_NEWLINK, 0, 0);
	assert_int_equal(mrc_linkmon_parse(nlmsg_hdr(msg), &ev), -EBADMSG);
	nlmsg_free(msg);
	assert_int_equal(mrc_linkmon_open(NULL, false, NULL, NULL), -EINVAL);
}

/* ---- root: real events ------------------------------------------------------ */

struct watch {
	int ifindex;
	bool saw_lo;              /* from the initial dump */
	int n;
	struct mrc_linkmon_event last;
};

static void on_event(const struct mrc_linkmon_event *ev, void *arg)
{
	struct watch *w = arg;

	if (!strcmp(ev->name, "lo"))
		w->saw_lo = true;
	if (ev->ifindex == w->ifindex) {
		w->last = *ev;
		w->n++;
	}
}

/* Dispatches until pred holds for the watched link, at most 5 s. */
static bool wait_for(struct mrc_linkmon *m, struct watch *w,
		     bool (*pred)(const struct watch *w))
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct pollfd p = { .fd = mrc_linkmon_fd(m), .events = POLLIN };
		long ms;

		assert_true(mrc_linkmon_dispatch(m) >= 0);
		if (pred(w))
			return true;
		clock_gettime(CLOCK_MONOTONIC, &t);
		ms = 5000 - ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000);
		if (ms <= 0 || poll(&p, 1, (int)ms) < 0)
			return false;
	}
}

static bool is_down(const struct watch *w)
{
	return w->n && !w->last.admin_up && !mrc_linkmon_event_usable(&w->last);
}

static bool is_usable(const struct watch *w)
{
	return w->n && mrc_linkmon_event_usable(&w->last);
}

static bool saw_lo(const struct watch *w)
{
	return w->saw_lo;
}

static bool is_gone(const struct watch *w)
{
	return w->n && w->last.deleted;
}

static void test_root_veth_down_up(void **st)
{
	struct mrc_linkmon *m = NULL;
	struct mrc_nl *nl = NULL;
	struct watch w = { 0 };

	if (geteuid() != 0)
		MRC_SKIP("needs root (network namespace)");
	/* A private, anonymous namespace: it goes away with the process. */
	assert_int_equal(unshare(CLONE_NEWNET), 0);
	assert_int_equal(mrc_nl_open(&nl), 0);
	assert_int_equal(mrc_nl_veth_add(nl, "mrcSl0", "mrcSl1", -1), 0);
	assert_int_equal(mrc_nl_link_index(nl, "mrcSl0", &w.ifindex), 0);
	assert_int_equal(mrc_linkmon_open(&m, true, on_event, &w), 0);
	assert_true(wait_for(m, &w, saw_lo));

	assert_int_equal(mrc_nl_link_set_up(nl, "mrcSl1", true), 0);
	assert_int_equal(mrc_nl_link_set_up(nl, "mrcSl0", true), 0);
	if (!wait_for(m, &w, is_usable))
		fail_msg("no usable event after up (last: up %d running %d oper %u)",
			 w.last.admin_up, w.last.running, w.last.operstate);
	assert_string_equal(w.last.name, "mrcSl0");

	w.n = 0;
	assert_int_equal(mrc_nl_link_set_up(nl, "mrcSl0", false), 0);
	if (!wait_for(m, &w, is_down))
		fail_msg("no down event (events %d)", w.n);
	assert_int_equal(w.last.ifindex, w.ifindex);

	w.n = 0;
	assert_int_equal(mrc_nl_link_set_up(nl, "mrcSl0", true), 0);
	if (!wait_for(m, &w, is_usable))
		fail_msg("no usable event after up again (events %d)", w.n);

	w.n = 0;
	assert_int_equal(mrc_nl_link_del(nl, "mrcSl0"), 0);
	assert_true(wait_for(m, &w, is_gone));
	assert_int_equal(mrc_linkmon_overruns(m), 0);
	mrc_linkmon_close(m);
	mrc_nl_close(nl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_random),
		cmocka_unit_test(test_parse_bad),
		cmocka_unit_test(test_root_veth_down_up),
	};
	const char *s = getenv("MRC_TEST_SEED");
	int rc;

	seed = s ? (unsigned)strtoul(s, NULL, 0) : (unsigned)time(NULL);
	srand(seed);
	rc = cmocka_run_group_tests_name("linkmon", tests, NULL, NULL);
	if (rc)
		fprintf(stderr, "linkmon: failed with MRC_TEST_SEED=%u\n", seed);
	return rc;
}
