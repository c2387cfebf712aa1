/* fi_getinfo: the provider's one fi_info, fitted to the hints or refused
 * with the reason at FI_LOG_LEVEL=info, and its addresses (docs/libfabric.md
 * "Capabilities", "Addresses"). */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "fi/mrcfi.h"

static int prov_named(const char *list)
{
	/* "mrc", or a layering list naming mrc last ("ofi_rxm;mrc" is not
	 * ours: we are a core provider and nothing layers over us). */
	return !list || !strcasecmp(list, MRCFI_PROV_NAME);
}

/* Each refusal says why at FI_LOG_LEVEL=info. */
#define REFUSE(why) do { \
	FI_INFO(&mrcfi_prov, FI_LOG_CORE, "hints refused: %s\n", why); \
	return -FI_ENODATA; } while (0)

/* What we can give within the hints, or -FI_ENODATA. */
static int fill_info(const struct fi_info *h, struct fi_info *fi)
{
	uint64_t caps = MRCFI_CAPS;
	uint64_t mr_mode = MRCFI_MR_MODE;
	if (h) {
		if (h->caps & ~MRCFI_CAPS)
			REFUSE("capabilities beyond msg, tagged, RMA write, atomic, directed receive, source");
		if (h->ep_attr && h->ep_attr->type != FI_EP_UNSPEC && h->ep_attr->type != FI_EP_RDM)
			REFUSE("an endpoint type other than FI_EP_RDM");
		if (h->addr_format != FI_FORMAT_UNSPEC)
			REFUSE("an address format other than FI_FORMAT_UNSPEC (mrc names are host index and service id)");
		if (h->fabric_attr && h->fabric_attr->prov_name &&
		    !prov_named(h->fabric_attr->prov_name))
			REFUSE("another provider's name");
		if (h->fabric_attr && h->fabric_attr->name &&
		    strcmp(h->fabric_attr->name, MRCFI_PROV_NAME))
			REFUSE("another fabric's name");
		if (h->domain_attr && h->domain_attr->name &&
		    strcmp(h->domain_attr->name, MRCFI_DOMAIN_NAME))
			REFUSE("another domain's name");
		if (h->ep_attr && h->ep_attr->protocol != FI_PROTO_UNSPEC)
			REFUSE("a protocol other than FI_PROTO_UNSPEC");
		if (h->ep_attr && h->ep_attr->max_msg_size > MRCFI_MAX_MSG)
			REFUSE("a max_msg_size above 4 GiB");
		if (h->tx_attr && (h->tx_attr->msg_order & ~(uint64_t)FI_ORDER_SAS))
			REFUSE("a transmit ordering beyond FI_ORDER_SAS");
		if (h->rx_attr && (h->rx_attr->msg_order & ~(uint64_t)FI_ORDER_SAS))
			REFUSE("a receive ordering beyond FI_ORDER_SAS");
		if (h->tx_attr && h->tx_attr->inject_size > MRCFI_EAGER_MAX)
			REFUSE("an inject_size above 8136 bytes");
		if (h->domain_attr && h->domain_attr->cq_data_size > 8)
			REFUSE("more than 8 bytes of CQ data");
		if (h->domain_attr && h->domain_attr->mr_key_size > 8)
			REFUSE("MR keys above 8 bytes");
		if (h->caps)
			caps = h->caps;
		if (h->domain_attr) {
			int m = h->domain_attr->mr_mode;
			/* FI_MR_BASIC (1.4 and before) means exactly
			 * PROV_KEY|ALLOCATED|VIRT_ADDR, and mrc addresses
			 * regions by offset: treated as no provider keys
			 * (fabtests' getinfo_mr_mode1 wants ENODATA or BASIC) */
			if (m == FI_MR_BASIC)
				m = 0;
			else if (m == FI_MR_SCALABLE)
				m = 0;   /* 0 (UNSPEC) since 1.5: no mode bits */
			if ((m & MRCFI_MR_MODE) != MRCFI_MR_MODE) {
				/* Without provider keys nobody can name our
				 * regions: keep what needs no key. */
				if (h->caps & MRCFI_KEY_CAPS)
					REFUSE("RMA or atomics without FI_MR_PROV_KEY");
				caps &= ~MRCFI_KEY_CAPS;
				mr_mode = 0;
			}
			if (h->domain_attr->caps & ~(uint64_t)(FI_LOCAL_COMM | FI_REMOTE_COMM))
				REFUSE("domain caps beyond local and remote communication (no FI_SHARED_AV)");
			if (h->domain_attr->av_type != FI_AV_UNSPEC &&
			    h->domain_attr->av_type != FI_AV_MAP &&
			    h->domain_attr->av_type != FI_AV_TABLE)
				REFUSE("an AV type other than table or map");
		}
		/* Primary caps imply both directions when none is named. */
		if ((caps & (FI_MSG | FI_TAGGED)) && !(caps & (FI_SEND | FI_RECV)))
			caps |= FI_SEND | FI_RECV;
		if ((caps & (FI_RMA | FI_ATOMIC)) && !(caps & (FI_WRITE | FI_REMOTE_WRITE)))
			caps |= FI_WRITE | FI_REMOTE_WRITE;
		if (h->caps && (h->caps & (FI_READ | FI_REMOTE_READ)))
			REFUSE("RMA read (mrc has no RDMA READ)");
	}
	fi->caps = caps;
	fi->mode = 0;
	fi->addr_format = FI_FORMAT_UNSPEC;
	/* LOCAL/REMOTE_COMM are domain caps: not in tx/rx attrs (getinfo_caps) */
	fi->tx_attr->caps = caps & (FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_SEND | FI_WRITE);
	fi->tx_attr->mode = 0;
	fi->tx_attr->op_flags = h && h->tx_attr ? h->tx_attr->op_flags & (FI_COMPLETION |
			FI_INJECT_COMPLETE | FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE) : 0;
	fi->tx_attr->msg_order = FI_ORDER_SAS;
	fi->tx_attr->comp_order = FI_ORDER_NONE;
	fi->tx_attr->inject_size = MRCFI_EAGER_MAX;
	fi->tx_attr->size = 1024;
	fi->tx_attr->iov_limit = 4;
	fi->tx_attr->rma_iov_limit = 1;
	fi->rx_attr->caps = caps & (FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_RECV |
				    FI_REMOTE_WRITE | FI_DIRECTED_RECV | FI_SOURCE | FI_MULTI_RECV);
	fi->rx_attr->mode = 0;
	fi->rx_attr->op_flags = h && h->rx_attr ?
				h->rx_attr->op_flags & (FI_COMPLETION | FI_MULTI_RECV) : 0;
	fi->rx_attr->msg_order = FI_ORDER_SAS;
	fi->rx_attr->comp_order = FI_ORDER_NONE;
	fi->rx_attr->total_buffered_recv = 0;
	fi->rx_attr->size = 1024;
	fi->rx_attr->iov_limit = 4;
	fi->ep_attr->type = FI_EP_RDM;
	fi->ep_attr->protocol = FI_PROTO_UNSPEC;
	fi->ep_attr->protocol_version = 1;
	fi->ep_attr->max_msg_size = MRCFI_MAX_MSG;
	fi->ep_attr->msg_prefix_size = 0;
	fi->ep_attr->max_order_raw_size = 0;
	fi->ep_attr->max_order_war_size = 0;
	fi->ep_attr->max_order_waw_size = 0;
	/* all 64 bits are matched; the generic format is what MPI's tag
	 * layouts count their free bits in */
	fi->ep_attr->mem_tag_format = 0xaaaaaaaaaaaaaaaaull;
	fi->ep_attr->tx_ctx_cnt = 1;
	fi->ep_attr->rx_ctx_cnt = 1;
	struct fi_domain_attr *da = fi->domain_attr;
	da->name = strdup(MRCFI_DOMAIN_NAME);
	da->threading = h && h->domain_attr && h->domain_attr->threading ?
			h->domain_attr->threading : FI_THREAD_SAFE;
	/* mrcd and the provider's thread move everything: AUTO; an
	 * application asking for MANUAL gets what it asked (it polls anyway). */
	da->control_progress = h && h->domain_attr && h->domain_attr->control_progress ?
			       h->domain_attr->control_progress : FI_PROGRESS_AUTO;
	da->data_progress = h && h->domain_attr && h->domain_attr->data_progress ?
			    h->domain_attr->data_progress : FI_PROGRESS_AUTO;
	da->resource_mgmt = FI_RM_ENABLED;
	da->av_type = h && h->domain_attr ? h->domain_attr->av_type : FI_AV_UNSPEC;
	da->mr_mode = (int)mr_mode;
	da->mr_key_size = 8;
	da->cq_data_size = 8;
	da->cq_cnt = 256;
	da->ep_cnt = 64;
	da->tx_ctx_cnt = 64;
	da->rx_ctx_cnt = 64;
	da->max_ep_tx_ctx = 1;
	da->max_ep_rx_ctx = 1;
	da->max_ep_stx_ctx = 0;
	da->max_ep_srx_ctx = 0;
	da->cntr_cnt = 256;
	da->mr_iov_limit = 1;
	da->caps = FI_LOCAL_COMM | FI_REMOTE_COMM;
	da->mode = 0;
	da->mr_cnt = 1024;
	fi->fabric_attr->name = strdup(MRCFI_PROV_NAME);
	fi->fabric_attr->prov_version = MRCFI_PROV_VERSION;
	if (!da->name || !fi->fabric_attr->name)
		return -FI_ENOMEM;
	return 0;
}

/* A node or service as mrc names it: a number (decimal or 0x), or -1. */
static int64_t num_of(const char *s)
{
	if (!s || !*s)
		return -1;
	char *e;
	unsigned long long v = strtoull(s, &e, 0);
	return *e || v > UINT32_MAX ? -1 : (int64_t)v;
}

static int set_name(void **addr, size_t *len, uint32_t host, uint32_t sid)
{
	struct mrcfi_name *n = malloc(sizeof(*n));
	if (!n)
		return -FI_ENOMEM;
	n->host = host;
	n->sid = sid;
	free(*addr);
	*addr = n;
	*len = sizeof(*n);
	return 0;
}

/* src_addr always (fabtests' getinfo_test checks it): the node and
 * service given with FI_SOURCE, else "this host, any service"; an
 * endpoint takes a service id of its own and ignores it.  dest_addr
 * when a node to reach is given: only mrc names (host index, service
 * id) resolve, not IP addresses or host names. */
static int fill_addrs(const char *node, const char *service, uint64_t flags,
		      const struct fi_info *h, struct fi_info *fi)
{
	int64_t hn = num_of(node), sv = num_of(service);
	if (h && h->src_addr && h->src_addrlen == sizeof(struct mrcfi_name)) {
		const struct mrcfi_name *s = h->src_addr;
		if (set_name(&fi->src_addr, &fi->src_addrlen, s->host, s->sid))
			return -FI_ENOMEM;
	} else if (set_name(&fi->src_addr, &fi->src_addrlen,
			    (flags & FI_SOURCE) && hn >= 0 ? (uint32_t)hn : MRCFI_HOST_ANY,
			    (flags & FI_SOURCE) && sv >= 0 ? (uint32_t)sv : 0)) {
		return -FI_ENOMEM;
	}
	if (flags & FI_SOURCE)
		return 0;
	if (node || service) {
		if (hn < 0 || (service && sv < 0)) {
			FI_INFO(&mrcfi_prov, FI_LOG_CORE, "cannot resolve %s:%s: mrc addresses "
				"are a host index and a service id\n", node ? node : "",
				service ? service : "");
			return -FI_ENODATA;
		}
		return set_name(&fi->dest_addr, &fi->dest_addrlen, (uint32_t)hn,
				sv < 0 ? 0 : (uint32_t)sv);
	}
	if (h && h->dest_addr && h->dest_addrlen == sizeof(struct mrcfi_name)) {
		const struct mrcfi_name *d = h->dest_addr;
		return set_name(&fi->dest_addr, &fi->dest_addrlen, d->host, d->sid);
	}
	return 0;
}

int mrcfi_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
		     const struct fi_info *hints, struct fi_info **info)
{
	*info = NULL;
	if (FI_VERSION_LT(version, FI_VERSION(1, 5)))
		return -FI_ENODATA;
	struct fi_info *fi = fi_allocinfo();
	if (!fi)
		return -FI_ENOMEM;
	int r = fill_info(hints, fi);
	if (!r)
		r = fill_addrs(node, service, flags, hints, fi);
	if (r) {
		fi_freeinfo(fi);
		return r;
	}
	*info = fi;
	return 0;
}
