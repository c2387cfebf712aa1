/* Link-state monitor: RTNLGRP_LINK events on a non-blocking netlink socket
 * that the daemon watches in its event loop (EV_READ on mrc_linkmon_fd(),
 * then mrc_linkmon_dispatch()).  Each RTM_NEWLINK/RTM_DELLINK becomes one
 * callback with the link's index, name and state.
 */
#ifndef MRC_SRV6_LINKMON_H
#define MRC_SRV6_LINKMON_H

#include <net/if.h>
#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct nlmsghdr;
struct mrc_linkmon;

struct mrc_linkmon_event {
	int ifindex;
	char name[IF_NAMESIZE];
	bool deleted;              /* RTM_DELLINK: the link is gone */
	bool admin_up;             /* IFF_UP */
	bool running;              /* IFF_RUNNING (carrier and admin up) */
	uint8_t operstate;         /* IF_OPER_* (RFC 2863), IF_OPER_UNKNOWN if absent */
	unsigned mtu;              /* 0 if absent */
};

/* true when the link can carry traffic: admin up, running, and operstate
 * up or unknown (veth and ifb report UNKNOWN/UP inconsistently by kernel). */
bool mrc_linkmon_event_usable(const struct mrc_linkmon_event *ev);

typedef void (*mrc_linkmon_cb)(const struct mrc_linkmon_event *ev, void *arg);

/* Subscribes to RTNLGRP_LINK in the current namespace.  When dump is true
 * the current state of every link is requested at once and arrives through
 * the same callback, so no change between subscribe and dump is lost. */
int mrc_linkmon_open(struct mrc_linkmon **out, bool dump, mrc_linkmon_cb cb,
		     void *arg);
void mrc_linkmon_close(struct mrc_linkmon *m);
/* Non-blocking fd to poll for readability. */
int mrc_linkmon_fd(const struct mrc_linkmon *m);
/* Reads every message pending without blocking and calls the callback for
 * each link message.  Returns the number of events delivered (>= 0).  If
 * the kernel dropped events (socket overrun) a fresh dump is requested
 * automatically, so the state converges; the count of overruns is kept in
 * mrc_linkmon_overruns(). */
int mrc_linkmon_dispatch(struct mrc_linkmon *m);
unsigned long mrc_linkmon_overruns(const struct mrc_linkmon *m);

/* Pure parser (no socket): fills ev from one RTM_NEWLINK/RTM_DELLINK.
 * -ENOENT for other message types, -EBADMSG when malformed. */
int mrc_linkmon_parse(const struct nlmsghdr *nh, struct mrc_linkmon_event *ev);

#ifdef __cplusplus
}
#endif
#endif
