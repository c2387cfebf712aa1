/* The datapath registry: see datapath.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "datapath/datapath.h"

/* Every provider, built in or not; udp first (the default). */
static const struct mrc_dp_ops *const providers[] = {
	&mrc__dp_udp_ops,
	&mrc__dp_af_xdp_ops,
	&mrc__dp_dpdk_ops,
	&mrc__dp_verbs_ops,
};
#define NPROV (sizeof(providers) / sizeof(providers[0]))

const struct mrc_dp_ops *mrc_dp_find(const char *name)
{
	for (size_t i = 0; i < NPROV; i++)
		if (!strcmp(providers[i]->name, name))
			return providers[i];
	return NULL;
}

const char *const *mrc_dp_names(void)
{
	static const char *names[NPROV + 1];
	for (size_t i = 0; i < NPROV; i++)
		names[i] = providers[i]->name;
	return names;
}

int mrc__dp_check_cfg(const struct mrc_dp_cfg *cfg, char *why, size_t whylen)
{
	if (!cfg->nplanes || cfg->nplanes > MRC_DP_MAX_PLANES) {
		if (why)
			snprintf(why, whylen, "planes must be 1..%d, got %u",
				 MRC_DP_MAX_PLANES, cfg->nplanes);
		return -EINVAL;
	}
	return 0;
}

int mrc__dp_unbuilt(const char *name, const char *how, char *why, size_t whylen)
{
	if (why)
		snprintf(why, whylen, "the %s datapath is not built in: %s", name, how);
	return -EOPNOTSUPP;
}

int mrc_dp_open(struct mrc_dp **out, const char *kind, const struct mrc_dp_cfg *cfg,
		char *why, size_t whylen)
{
	const struct mrc_dp_ops *ops = mrc_dp_find(kind && kind[0] ? kind : "udp");
	if (!ops) {
		if (why) {
			size_t o = (size_t)snprintf(why, whylen, "unknown datapath '%s' (one of:", kind);
			for (size_t i = 0; i < NPROV && o < whylen; i++)
				o += (size_t)snprintf(why + o, whylen - o, " %s", providers[i]->name);
			if (o < whylen)
				snprintf(why + o, whylen - o, ")");
		}
		return -EINVAL;
	}
	int rc = mrc__dp_check_cfg(cfg, why, whylen);
	return rc ? rc : ops->open(out, cfg, why, whylen);
}
