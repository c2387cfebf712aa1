/* The dpdk datapath's options: see dpdk_args.h. */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "datapath/dpdk_args.h"

static const char *const default_eal[] = { "--no-huge", "--no-shconf", "--no-pci", "-m", "256" };

static int add(struct mrc__dp_dpdk_args *a, size_t *used, const char *w, size_t wl)
{
	if (a->argc == MRC__DPDK_MAX_ARGS || wl + 1 > sizeof(a->buf) - *used)
		return -E2BIG;
	char *s = a->buf + *used;
	memcpy(s, w, wl);
	s[wl] = 0;
	*used += wl + 1;
	a->argv[a->argc++] = s;
	a->argv[a->argc] = NULL;
	return 0;
}

static int adds(struct mrc__dp_dpdk_args *a, size_t *used, const char *w)
{
	return add(a, used, w, strlen(w));
}

static int starts(const char *w, size_t wl, const char *p)
{
	size_t pl = strlen(p);
	return wl >= pl && !memcmp(w, p, pl);
}

static int parse_mac(const char *s, size_t n, uint8_t mac[6])
{
	unsigned v[6];
	char tail;
	char tmp[32];
	if (n >= sizeof(tmp))
		return -EINVAL;
	memcpy(tmp, s, n);
	tmp[n] = 0;
	if (sscanf(tmp, "%2x:%2x:%2x:%2x:%2x:%2x%c", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
		   &tail) != 6)
		return -EINVAL;
	for (int i = 0; i < 6; i++)
		mac[i] = (uint8_t)v[i];
	return 0;
}

/* One of our words (pmd=, devargs=, dmacN=): 1 when it was, 0 when it is
 * an EAL word, -EINVAL when it is ours and bad. */
static int own_word(struct mrc__dp_dpdk_args *a, const char *w, size_t wl)
{
	if (starts(w, wl, "pmd=")) {
		static const char *const pmds[] = { "af_packet", "af_xdp", "ring", "none" };
		for (size_t i = 0; i < sizeof(pmds) / sizeof(pmds[0]); i++)
			if (wl - 4 == strlen(pmds[i]) && !memcmp(w + 4, pmds[i], wl - 4)) {
				snprintf(a->pmd, sizeof(a->pmd), "%s", pmds[i]);
				return 1;
			}
		return -EINVAL;
	}
	if (starts(w, wl, "devargs=")) {
		if (wl - 8 >= sizeof(a->devargs) || wl == 8)
			return -EINVAL;
		memcpy(a->devargs, w + 8, wl - 8);
		a->devargs[wl - 8] = 0;
		return 1;
	}
	if (starts(w, wl, "idle_us=")) {
		char num[8];
		if (wl - 8 == 0 || wl - 8 >= sizeof(num))
			return -EINVAL;
		memcpy(num, w + 8, wl - 8);
		num[wl - 8] = 0;
		if (strspn(num, "0123456789") != wl - 8 || atoi(num) > 10000)
			return -EINVAL;
		a->idle_us = (uint32_t)atoi(num);
		return 1;
	}
	if (starts(w, wl, "wait=")) {
		static const char *const waits[] = { "auto", "socket", "poll" };
		for (int i = 0; i < 3; i++)
			if (wl - 5 == strlen(waits[i]) && !memcmp(w + 5, waits[i], wl - 5)) {
				a->wait = i;
				return 1;
			}
		return -EINVAL;
	}
	if (starts(w, wl, "dmac")) {
		unsigned pl;
		int n = 0;
		if (sscanf(w + 4, "%2u=%n", &pl, &n) != 1 || !n || pl >= MRC_DP_MAX_PLANES ||
		    parse_mac(w + 4 + n, wl - 4 - (size_t)n, a->dmac[pl]))
			return -EINVAL;
		a->dmac_set |= 1u << pl;
		return 1;
	}
	return 0;
}

int mrc__dp_dpdk_args_parse(struct mrc__dp_dpdk_args *a, const char *args, const char *cpus,
			 char *why, size_t whylen)
{
	memset(a, 0, sizeof(*a));
	snprintf(a->pmd, sizeof(a->pmd), "af_packet");
	a->idle_us = MRC__DPDK_IDLE_US;
	size_t used = 0;
	int rc = adds(a, &used, "mrc");
	int eal = 0, lcores = 0, telemetry = 0, loglevel = 0;
	const char *s = args ? args : "";
	/* First pass: our words, and whether any EAL word is given. */
	for (int pass = 0; pass < 2 && !rc; pass++) {
		if (pass == 1 && !eal)
			for (size_t i = 0; i < sizeof(default_eal) / sizeof(default_eal[0]) && !rc; i++)
				rc = adds(a, &used, default_eal[i]);
		for (const char *p = s; *p && !rc;) {
			p += strspn(p, " \t\n");
			size_t wl = strcspn(p, " \t\n");
			if (!wl)
				break;
			int own = pass == 0 ? own_word(a, p, wl) : 1;
			if (own < 0) {
				snprintf(why, whylen, "datapath_args: bad word '%.*s' (pmd=af_packet|af_xdp|"
					 "ring|none, devargs=K=V,..., dmacN=XX:XX:XX:XX:XX:XX, "
					 "idle_us=0-10000, wait=auto|socket|poll)", (int)wl, p);
				return -EINVAL;
			}
			if (pass == 0 && !own) {
				eal = 1;
				lcores |= starts(p, wl, "-l") || starts(p, wl, "--lcores") ||
					  starts(p, wl, "-c");
				telemetry |= starts(p, wl, "--telemetry") || starts(p, wl, "--no-telemetry");
				loglevel |= starts(p, wl, "--log-level");
			}
			if (pass == 1 && !own_word(&(struct mrc__dp_dpdk_args){ 0 }, p, wl))
				rc = add(a, &used, p, wl);
			p += wl;
		}
	}
	char w[96];
	if (!rc && !lcores) {
		snprintf(w, sizeof(w), "--lcores=0@(%s)", cpus && cpus[0] ? cpus : "0");
		rc = adds(a, &used, w);
	}
	if (!rc && !telemetry)
		rc = adds(a, &used, "--no-telemetry");
	if (!rc && !loglevel)
		rc = adds(a, &used, "--log-level=warning");
	if (rc)
		snprintf(why, whylen, "datapath_args: more than %d words or %zu bytes",
			 MRC__DPDK_MAX_ARGS, sizeof(a->buf));
	return rc ? -EINVAL : 0;
}

int mrc__dp_dpdk_vdev(char *buf, size_t len, const struct mrc__dp_dpdk_args *a, unsigned id,
		   const char *ifname)
{
	int n;
	/* af_packet: frames up to a 9216-byte datagram, a 12 MiB ring each way
	 * (kernel UDP has 8 MiB socket buffers), and through the NIC's
	 * qdisc like kernel UDP (no qdisc bypass). */
	if (!strcmp(a->pmd, "af_packet"))
		n = snprintf(buf, len, "net_af_packet%u,iface=%s,qpairs=1,blocksz=%u,"
			     "framesz=%u,framecnt=1024,qdisc_bypass=0", id, ifname,
			     MRC__DPDK_FRAMESZ, MRC__DPDK_FRAMESZ);
	else if (!strcmp(a->pmd, "af_xdp"))
		n = snprintf(buf, len, "net_af_xdp%u,iface=%s,start_queue=0,queue_count=1", id, ifname);
	else if (!strcmp(a->pmd, "ring"))
		n = snprintf(buf, len, "net_ring%u", id);
	else
		return -ENOTSUP;
	if (n >= 0 && (size_t)n < len && a->devargs[0])
		n += snprintf(buf + n, len - (size_t)n, ",%s", a->devargs);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int mrc__dp_dpdk_cpus(char *buf, size_t len)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof(set), &set))
		return -errno;
	size_t o = 0;
	buf[0] = 0;
	for (int c = 0; c < CPU_SETSIZE; c++) {
		if (!CPU_ISSET(c, &set))
			continue;
		int e = c;
		while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, &set))
			e++;
		int n = e > c ? snprintf(buf + o, len - o, "%s%d-%d", o ? "," : "", c, e)
			      : snprintf(buf + o, len - o, "%s%d", o ? "," : "", c);
		if (n < 0 || (size_t)n >= len - o)
			return -ENAMETOOLONG;
		o += (size_t)n;
		c = e;
	}
	return o ? 0 : -ENOENT;
}
