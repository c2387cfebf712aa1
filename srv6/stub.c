/* Temporary stubs: the real implementations replace these. */
#include <errno.h>
#include <stddef.h>
#include "srv6/nl.h"
#include "srv6/linkmon.h"

int mrc_nl_open(struct mrc_nl **out)
{
	return -ENOSYS;
}

int mrc_nl_open_netns(int netns_fd, struct mrc_nl **out)
{
	return -ENOSYS;
}

void mrc_nl_close(struct mrc_nl *nl)
{
	
}

int mrc_netns_enter(int netns_fd, int *saved)
{
	return -ENOSYS;
}

int mrc_netns_leave(int saved)
{
	return -ENOSYS;
}

int mrc_nl_link_index(struct mrc_nl *nl, const char *name, int *ifindex)
{
	return -ENOSYS;
}

int mrc_nl_veth_add(struct mrc_nl *nl, const char *name, const char *peer,
		    int peer_netns_fd)
{
	return -ENOSYS;
}

int mrc_nl_ifb_add(struct mrc_nl *nl, const char *name)
{
	return -ENOSYS;
}

int mrc_nl_link_del(struct mrc_nl *nl, const char *name)
{
	return -ENOSYS;
}

int mrc_nl_link_set_up(struct mrc_nl *nl, const char *name, bool up)
{
	return -ENOSYS;
}

int mrc_nl_link_set_mtu(struct mrc_nl *nl, const char *name, unsigned mtu)
{
	return -ENOSYS;
}

int mrc_nl_link_set_netns(struct mrc_nl *nl, const char *name, int netns_fd)
{
	return -ENOSYS;
}

int mrc_nl_build_veth_add(struct nl_msg **out, const char *name,
			  const char *peer, int peer_netns_fd)
{
	return -ENOSYS;
}

int mrc_nl_build_ifb_add(struct nl_msg **out, const char *name)
{
	return -ENOSYS;
}

int mrc_nl_build_link_change(struct nl_msg **out, int ifindex, const char *name,
			     int up, unsigned mtu, int netns_fd)
{
	return -ENOSYS;
}

int mrc_nl_addr_add(struct mrc_nl *nl, int ifindex, const struct in6_addr *a,
		    unsigned prefix_len, unsigned flags)
{
	return -ENOSYS;
}

int mrc_nl_addr_del(struct mrc_nl *nl, int ifindex, const struct in6_addr *a,
		    unsigned prefix_len)
{
	return -ENOSYS;
}

int mrc_nl_build_addr(struct nl_msg **out, int nlmsg_type, unsigned nlm_flags,
		      int ifindex, const struct in6_addr *a, unsigned prefix_len,
		      unsigned flags)
{
	return -ENOSYS;
}

int mrc_nl_route_add(struct mrc_nl *nl, const struct mrc_nl_route *r,
		     unsigned flags)
{
	return -ENOSYS;
}

int mrc_nl_route_del(struct mrc_nl *nl, const struct in6_addr *dst,
		     unsigned dst_len, uint32_t table)
{
	return -ENOSYS;
}

int mrc_nl_local_route_add(struct mrc_nl *nl, const struct in6_addr *dst,
			   unsigned dst_len, int ifindex)
{
	return -ENOSYS;
}

int mrc_nl_seg6local_add(struct mrc_nl *nl, const struct mrc_nl_seg6local *s,
			 unsigned flags)
{
	return -ENOSYS;
}

int mrc_nl_seg6local_counters_get(struct mrc_nl *nl, const struct in6_addr *sid,
				  unsigned sid_len, uint32_t table,
				  struct mrc_nl_seg6local_counters *out)
{
	return -ENOSYS;
}

int mrc_nl_seg6local_dump(struct mrc_nl *nl, uint32_t table,
			  mrc_nl_seg6local_cb cb, void *arg)
{
	return -ENOSYS;
}

int mrc_nl_build_route(struct nl_msg **out, int nlmsg_type, unsigned nlm_flags,
		       const struct mrc_nl_route *r)
{
	return -ENOSYS;
}

int mrc_nl_build_seg6local(struct nl_msg **out, int nlmsg_type,
			   unsigned nlm_flags, const struct mrc_nl_seg6local *s)
{
	return -ENOSYS;
}

int mrc_nl_parse_seg6local(const struct nlmsghdr *nh,
			   struct mrc_nl_seg6local_info *out)
{
	return -ENOSYS;
}

int mrc_nl_sysctl_set(const char *key, const char *value)
{
	return -ENOSYS;
}

int mrc_nl_sysctl_get(const char *key, char *buf, size_t len)
{
	return -ENOSYS;
}

int mrc_nl_sysctl_srv6_ns(bool forwarding, bool seg6_enabled)
{
	return -ENOSYS;
}

int mrc_nl_sysctl_srv6_if(const char *ifname, bool seg6_enabled)
{
	return -ENOSYS;
}

bool mrc_link_event_usable(const struct mrc_link_event *ev)
{
	return false;
}

int mrc_linkmon_open(struct mrc_linkmon **out, bool dump, mrc_linkmon_cb cb,
		     void *arg)
{
	return -ENOSYS;
}

void mrc_linkmon_close(struct mrc_linkmon *m)
{
	
}

int mrc_linkmon_fd(const struct mrc_linkmon *m)
{
	return -ENOSYS;
}

int mrc_linkmon_dispatch(struct mrc_linkmon *m)
{
	return -ENOSYS;
}

unsigned long mrc_linkmon_overruns(const struct mrc_linkmon *m)
{
	return 0;
}

int mrc_linkmon_parse(const struct nlmsghdr *nh, struct mrc_link_event *ev)
{
	return -ENOSYS;
}
