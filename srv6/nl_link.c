/* Links: veth pairs and ifb devices through libnl-route's link objects;
 * up/down/MTU/namespace changes, lookup and deletion as plain RTM_*LINK
 * messages (they need no object state and stay easy to test). */
#include <errno.h>
#include <net/if.h>
#include <string.h>

#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <netlink/route/link.h>
#include <netlink/route/link/veth.h>

#include "srv6/nl.h"
#include "srv6/nl_internal.h"

int mrc__nl_check_ifname(const char *name)
{
	size_t n;

	if (!name)
		return -EINVAL;
	n = strlen(name);
	/* The kernel's dev_valid_name(): also what keeps /proc/sys paths safe. */
	if (n == 0 || n >= IF_NAMESIZE || !strcmp(name, ".") || !strcmp(name, ".."))
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (name[i] == '/' || name[i] == ':' || name[i] <= ' ' || name[i] == 0x7f)
			return -EINVAL;
	return 0;
}

static int add_request(struct rtnl_link *link, struct nl_msg **out)
{
	int rc = rtnl_link_build_add_request(link, NLM_F_CREATE | NLM_F_EXCL, out);

	return rc < 0 ? mrc__nl_errno(rc) : 0;
}

int mrc_nl_build_veth_add(struct nl_msg **out, const char *name,
			  const char *peer, int peer_netns_fd)
{
	struct rtnl_link *link, *p;
	int rc;

	if (!out || mrc__nl_check_ifname(name) || mrc__nl_check_ifname(peer))
		return -EINVAL;
	link = rtnl_link_veth_alloc();
	if (!link)
		return -ENOMEM;
	rtnl_link_set_name(link, name);
	p = rtnl_link_veth_get_peer(link);
	rtnl_link_set_name(p, peer);
	if (peer_netns_fd >= 0)
		rtnl_link_set_ns_fd(p, peer_netns_fd);
	rtnl_link_put(p);
	rc = add_request(link, out);
	rtnl_link_put(link);
	return rc;
}

int mrc_nl_build_ifb_add(struct nl_msg **out, const char *name)
{
	struct rtnl_link *link;
	int rc;

	if (!out || mrc__nl_check_ifname(name))
		return -EINVAL;
	link = rtnl_link_alloc();
	if (!link)
		return -ENOMEM;
	rtnl_link_set_name(link, name);
	rc = rtnl_link_set_type(link, "ifb");
	rc = rc < 0 ? mrc__nl_errno(rc) : add_request(link, out);
	rtnl_link_put(link);
	return rc;
}

/* RTM_NEWLINK / RTM_DELLINK / RTM_GETLINK addressed by index or name. */
static struct nl_msg *link_msg(int type, unsigned flags, int ifindex,
			       const char *name)
{
	struct ifinfomsg ifi = { .ifi_family = AF_UNSPEC, .ifi_index = ifindex };
	struct nl_msg *msg = mrc__nl_msg(type, flags, &ifi, sizeof(ifi));

	if (msg && ifindex <= 0 && nla_put_string(msg, IFLA_IFNAME, name) < 0) {
		nlmsg_free(msg);
		return NULL;
	}
	return msg;
}

int mrc_nl_build_link_change(struct nl_msg **out, int ifindex, const char *name,
			     int up, unsigned mtu, int netns_fd)
{
	struct nl_msg *msg;
	struct ifinfomsg *ifi;

	if (!out || (ifindex <= 0 && mrc__nl_check_ifname(name)))
		return -EINVAL;
	if (up < 0 && mtu == 0 && netns_fd < 0)
		return -EINVAL;   /* nothing to change */
	msg = link_msg(RTM_NEWLINK, 0, ifindex, name);
	if (!msg)
		return -ENOMEM;
	ifi = nlmsg_data(nlmsg_hdr(msg));
	if (up >= 0) {
		ifi->ifi_change = IFF_UP;
		ifi->ifi_flags = up ? IFF_UP : 0;
	}
	if ((mtu && nla_put_u32(msg, IFLA_MTU, mtu) < 0) ||
	    (netns_fd >= 0 && nla_put_u32(msg, IFLA_NET_NS_FD, (uint32_t)netns_fd) < 0)) {
		nlmsg_free(msg);
		return -ENOMEM;
	}
	*out = msg;
	return 0;
}

static int send_free(struct mrc_nl *nl, struct nl_msg *msg, int rc)
{
	if (rc)
		return rc;
	rc = mrc__nl_talk(nl, msg, NULL, NULL);
	nlmsg_free(msg);
	return rc;
}

int mrc_nl_veth_add(struct mrc_nl *nl, const char *name, const char *peer,
		    int peer_netns_fd)
{
	struct nl_msg *msg = NULL;
	int rc = mrc_nl_build_veth_add(&msg, name, peer, peer_netns_fd);

	return send_free(nl, msg, rc);
}

int mrc_nl_ifb_add(struct mrc_nl *nl, const char *name)
{
	struct nl_msg *msg = NULL;
	int rc = mrc_nl_build_ifb_add(&msg, name);

	return send_free(nl, msg, rc);
}

int mrc_nl_link_del(struct mrc_nl *nl, const char *name)
{
	struct nl_msg *msg;

	if (mrc__nl_check_ifname(name))
		return -EINVAL;
	msg = link_msg(RTM_DELLINK, 0, 0, name);
	return send_free(nl, msg, msg ? 0 : -ENOMEM);
}

static int change(struct mrc_nl *nl, const char *name, int up, unsigned mtu,
		  int netns_fd)
{
	struct nl_msg *msg = NULL;
	int rc = mrc_nl_build_link_change(&msg, 0, name, up, mtu, netns_fd);

	return send_free(nl, msg, rc);
}

int mrc_nl_link_set_up(struct mrc_nl *nl, const char *name, bool up)
{
	return change(nl, name, up ? 1 : 0, 0, -1);
}

int mrc_nl_link_set_mtu(struct mrc_nl *nl, const char *name, unsigned mtu)
{
	if (mtu == 0)
		return -EINVAL;
	return change(nl, name, -1, mtu, -1);
}

int mrc_nl_link_set_netns(struct mrc_nl *nl, const char *name, int netns_fd)
{
	if (netns_fd < 0)
		return -EINVAL;
	return change(nl, name, -1, 0, netns_fd);
}

static int got_index(const struct nlmsghdr *nh, void *arg)
{
	const struct ifinfomsg *ifi = nlmsg_data(nh);

	if (nh->nlmsg_type == RTM_NEWLINK && nlmsg_datalen(nh) >= (int)sizeof(*ifi))
		*(int *)arg = ifi->ifi_index;
	return 0;
}

int mrc_nl_link_index(struct mrc_nl *nl, const char *name, int *ifindex)
{
	struct nl_msg *msg;
	int idx = 0, rc;

	if (!ifindex || mrc__nl_check_ifname(name))
		return -EINVAL;
	/* Asked of the socket's namespace, which need not be the thread's. */
	msg = link_msg(RTM_GETLINK, 0, 0, name);
	if (!msg)
		return -ENOMEM;
	rc = mrc__nl_talk(nl, msg, got_index, &idx);
	nlmsg_free(msg);
	if (rc)
		return rc;
	if (idx <= 0)
		return -ENODEV;
	*ifindex = idx;
	return 0;
}
