/* Shared by the srv6/nl*.c files (not part of the public API). */
#ifndef MRC_SRV6_NL_INTERNAL_H
#define MRC_SRV6_NL_INTERNAL_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

struct mrc_nl;
struct nl_msg;
struct nlattr;
struct nlmsghdr;

/* Called for each answer message of a request; non-zero stops the walk
 * and becomes mrc__nl_talk's return value. */
typedef int (*mrc__nl_valid_cb)(const struct nlmsghdr *nh, void *arg);

/* Sends msg (the caller still owns it) and waits for the ack, the error, or
 * the end of a dump.  Returns 0, the kernel's negative errno, or the
 * callback's non-zero value. */
int mrc__nl_talk(struct mrc_nl *nl, struct nl_msg *msg, mrc__nl_valid_cb valid,
		 void *arg);
/* A message of `type` with a fixed family header (ifinfomsg, rtmsg, ...). */
struct nl_msg *mrc__nl_msg(int type, unsigned flags, const void *hdr, size_t hdrlen);
/* nla_nest_start with NLA_F_NESTED set. */
struct nlattr *mrc__nl_nla_nest(struct nl_msg *msg, int type);
/* libnl NLE_* code to negative errno. */
int mrc__nl_errno(int nlerr);
/* Interface name usable in a request and a /proc/sys path. */
int mrc__nl_check_ifname(const char *name);
/* A route message with rtmsg, RTA_DST and RTA_TABLE filled in. */
struct nl_msg *mrc__nl_route_msg(int type, unsigned flags, const struct in6_addr *dst,
				 unsigned dst_len, uint32_t table, uint8_t rtn);
/* Sends and frees msg, unless rc (a builder's result) is already an error. */
int mrc__nl_send_route(struct mrc_nl *nl, struct nl_msg *msg, int rc);

#endif
