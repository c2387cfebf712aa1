/* Scenario parsing: command-line settings ("key value"; a JSON file of the
 * same keys: scenario_json.c).  Every error names the field, the value and
 * why. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/errf.h"
#include "common/parse.h"
#include "sim/sim_int.h"

void mrc_sim_cfg_default(struct mrc_sim_cfg *c)
{
	memset(c, 0, sizeof(*c));
	c->topo = (struct mrc_sim_topo){ .kind = MRC_SIM_CLOS, .planes = 2, .leaves = 4,
		.spines = 4, .hosts_per_leaf = 4, .k = 4, .rate_mbit = 100000,
		.delay_ns = 500 };
	c->mode = MRC_SIM_SPRAY;
	c->buffer = 1 << 20;
	c->ecn = 128 << 10;
	c->trim = 512 << 10;
	c->prio_buffer = 256 << 10;
	c->frame_overhead = 86;      /* IPv6 40 + UDP 8 + Ethernet 18 + 20 */
	c->nic_queue = 1;
	c->mtu = 4096;
	c->seed = 1;
	c->until_ns = 10000000000ull;
	c->bin_ns = 10000;
	c->verify_limit = 256ull << 20;
}

const char *mrc_sim_cfg_help(void)
{
	return
"Scenario settings (command line: --KEY VALUE; JSON file: {\"KEY\": VALUE}):\n"
"  topo      clos:planes=P,leaves=L,spines=S,hosts=N,rate=R,delay=D\n"
"            fattree:k=K,planes=P,rate=R,delay=D        (k^3/4 hosts per plane)\n"
"  workload  (repeatable) permutation:size=Z | alltoall:size=Z,group=G |\n"
"            ring:size=Z,group=G | incast:size=Z,senders=N,dst=hI |\n"
"            flow:src=hI,dst=hJ,size=Z;  all take start=T,jitter=T,qps=Q\n"
"            step:layers=L,steps=N,moe=I,fwd=T,bwd=T,tokens=N,tok=Z,topk=K,\n"
"                 cap=F,skew=S,ep=E,local=N,dp=D,grad=Z,bucket=Z,bulk=Z\n"
"                 (training steps; docs/sim.md \"Training steps\")\n"
"  fault     (repeatable) TIME:KIND:TARGET, KIND = down | blackhole |\n"
"            loss=P | recover; TARGET = switch (p0s1), link (p0l0-p0s1)\n"
"            or one direction (p0l0>p0s1)\n"
"  mode      spray | ecmp          paths  N EVs per pair (0: all)\n"
"  buffer Z  ecn Z|off  trim Z|off  prio-buffer Z  overhead BYTES  nic-queue N\n"
"  rx-batch T|off (arrivals at a host within T of the first, 0: the same\n"
"            instant, get one send turn: docs/sim.md \"Receive batches\")\n"
"  mtu N  window N (0: auto)  cc nscc|fixed  rto-min T  probe-interval T\n"
"  reorder-slack T  ev-floor N  tlp-min T (tail-loss probe; 0: off)\n"
"  tlp-lone 0|1 (probe a packet alone in flight; mrcd.conf tlp_lone)\n"
"  seed N  until T  hold T  bin T  verify-limit Z  progress on|off\n"
"  stalls on|off (report why senders' NICs sat idle: docs/sim.md)\n"
"  spray-slot hash|topo (where each host's spray starts: docs/sim.md)\n"
"  health off|local|shared[,TICK] (link health per host: docs/health.md)\n"
"Sizes: 4096, 64K, 2M, 1G (binary).  Times: 500ns, 10us, 1ms, 2s (bare: ns).\n"
"Rates: 100G, 400G, 25000M (bit/s).\n";
}

/* ---- value parsers ---------------------------------------------------- */

static int parse_u64(const char *v, uint64_t *out, char **end)
{
	if (!v || !*v || *v == '-' || *v == '+')
		return -EINVAL;
	errno = 0;
	unsigned long long x = strtoull(v, end, 10);
	if (errno || *end == v)
		return -EINVAL;
	*out = x;
	return 0;
}

static int mul_ok(uint64_t a, uint64_t m, uint64_t *out)
{
	if (m && a > UINT64_MAX / m)
		return -ERANGE;
	*out = a * m;
	return 0;
}

int sim_parse_size(const char *v, uint64_t *out)
{
	return mrc__parse_size(v, out);
}

int sim_parse_time(const char *v, uint64_t *out)
{
	char *e;
	uint64_t x, m;
	if (parse_u64(v, &x, &e))
		return -EINVAL;
	if (!*e || !strcmp(e, "ns"))
		m = 1;
	else if (!strcmp(e, "us"))
		m = 1000;
	else if (!strcmp(e, "ms"))
		m = 1000000;
	else if (!strcmp(e, "s"))
		m = 1000000000;
	else
		return -EINVAL;
	return mul_ok(x, m, out);
}

static int parse_rate(const char *v, uint64_t *mbit)
{
	char *e;
	uint64_t x, m;
	if (parse_u64(v, &x, &e))
		return -EINVAL;
	if (!*e || !strcmp(e, "M"))
		m = 1;
	else if (!strcmp(e, "G"))
		m = 1000;
	else if (!strcmp(e, "T"))
		m = 1000000;
	else
		return -EINVAL;
	return mul_ok(x, m, mbit);
}

static int parse_u32r(const char *v, uint32_t lo, uint32_t hi, uint32_t *out)
{
	char *e;
	uint64_t x;
	if (parse_u64(v, &x, &e) || *e || x < lo || x > hi)
		return -EINVAL;
	*out = (uint32_t)x;
	return 0;
}

static int parse_host(const char *v, uint32_t *out)
{
	if (v[0] != 'h')
		return parse_u32r(v, 0, MRC_TOPO_MAX_HOSTS - 1, out);
	return parse_u32r(v + 1, 0, MRC_TOPO_MAX_HOSTS - 1, out);
}

/* ---- "kind:key=val,key=val" ------------------------------------------ */

typedef int (*kv_fn)(void *obj, const char *ctx, const char *k, const char *v,
		     char *err, size_t errlen);

static int parse_kvs(char *s, void *obj, const char *ctx, kv_fn fn, char *err,
		     size_t errlen)
{
	char *save = NULL;
	for (char *tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');
		if (!eq)
			return mrc__errf(err, errlen, "%s: '%s': expected key=value", ctx, tok);
		*eq = 0;
		int rc = fn(obj, ctx, tok, eq + 1, err, errlen);
		if (rc)
			return rc;
	}
	return 0;
}

#define BADV(what) mrc__errf(err, errlen, "%s: %s='%s': %s", ctx, k, v, what)

static int topo_kv(void *obj, const char *ctx, const char *k, const char *v,
		   char *err, size_t errlen)
{
	struct mrc_sim_topo *t = obj;
	if (!strcmp(k, "planes"))
		return parse_u32r(v, 1, MRCE_MAX_PLANES, &t->planes) ? BADV("must be 1..16") : 0;
	if (!strcmp(k, "leaves"))
		return parse_u32r(v, 1, MRC_TOPO_MAX_PER_PLANE, &t->leaves) ?
		       BADV("must be 1..256") : 0;
	if (!strcmp(k, "spines"))
		return parse_u32r(v, 1, MRC_TOPO_MAX_PER_PLANE, &t->spines) ?
		       BADV("must be 1..256") : 0;
	if (!strcmp(k, "hosts") || !strcmp(k, "hosts_per_leaf"))
		return parse_u32r(v, 1, MRC_TOPO_MAX_HOSTS, &t->hosts_per_leaf) ?
		       BADV("must be 1..32768") : 0;
	if (!strcmp(k, "k"))
		return parse_u32r(v, 2, MRC_TOPO_FATTREE_K_MAX, &t->k) || t->k % 2 ?
		       BADV("must be even, 2..50 (k^3/4 hosts fit the 16-bit uSIDs)") : 0;
	if (!strcmp(k, "rate"))
		return parse_rate(v, &t->rate_mbit) || !t->rate_mbit ||
		       t->rate_mbit > 100000000 ?
		       BADV("not a rate (e.g. 100G, 400G, 25000M), 1M..100T") : 0;
	if (!strcmp(k, "delay"))
		return sim_parse_time(v, &t->delay_ns) || t->delay_ns > 1000000000 ?
		       BADV("not a time up to 1s (e.g. 500ns, 2us)") : 0;
	return mrc__errf(err, errlen, "%s: unknown key '%s' (planes, leaves, spines, hosts, k, rate, delay)",
		    ctx, k);
}

/* The step workload's keys (struct mrc_sim_step). */
static int step_kv(struct mrc_sim_step *p, const char *ctx, const char *k, const char *v,
		   char *err, size_t errlen)
{
	uint64_t x;
	if (!strcmp(k, "layers"))
		return parse_u32r(v, 1, 1024, &p->layers) ? BADV("must be 1..1024") : 0;
	if (!strcmp(k, "steps"))
		return parse_u32r(v, 1, 64, &p->steps) ? BADV("must be 1..64") : 0;
	if (!strcmp(k, "moe"))
		return parse_u32r(v, 0, 1023, &p->moe_layer) ? BADV("must be a layer index") : 0;
	if (!strcmp(k, "fwd"))
		return sim_parse_time(v, &p->fwd_ns) || p->fwd_ns > 10000000000ull ?
		       BADV("not a time up to 10s") : 0;
	if (!strcmp(k, "bwd"))
		return sim_parse_time(v, &p->bwd_ns) || p->bwd_ns > 10000000000ull ?
		       BADV("not a time up to 10s") : 0;
	if (!strcmp(k, "tokens"))
		return parse_u32r(v, 0, 1u << 20, &p->tokens) ? BADV("must be 0..1048576") : 0;
	if (!strcmp(k, "tok"))
		return sim_parse_size(v, &x) || !x || x > (1u << 20) ? BADV("must be 1..1M bytes") :
		       (p->tok_bytes = (uint32_t)x, 0);
	if (!strcmp(k, "topk"))
		return parse_u32r(v, 1, 16, &p->topk) ? BADV("must be 1..16") : 0;
	if (!strcmp(k, "cap") || !strcmp(k, "skew")) {
		char *e;
		double d = strtod(v, &e);
		if (e == v || *e || !(d >= 0 && d <= 100) || (!strcmp(k, "cap") && d <= 0))
			return BADV(!strcmp(k, "cap") ? "must be a factor > 0" : "must be 0..100");
		*(!strcmp(k, "cap") ? &p->cap : &p->skew) = d;
		return 0;
	}
	if (!strcmp(k, "ep"))
		return parse_u32r(v, 2, MRC_TOPO_MAX_HOSTS, &p->ep) ? BADV("must be 2..32768 hosts") : 0;
	if (!strcmp(k, "local"))
		return parse_u32r(v, 1, MRC_TOPO_MAX_HOSTS, &p->local) ? BADV("must be 1..32768 hosts") : 0;
	if (!strcmp(k, "dp"))
		return parse_u32r(v, 1, MRC_TOPO_MAX_HOSTS, &p->dp) ? BADV("must be 1..32768 hosts") : 0;
	if (!strcmp(k, "grad"))
		return sim_parse_size(v, &p->grad) || p->grad > (1ull << 36) ? BADV("not a size") : 0;
	if (!strcmp(k, "bucket"))
		return sim_parse_size(v, &p->bucket) || !p->bucket ? BADV("not a size > 0") : 0;
	if (!strcmp(k, "bulk"))
		return sim_parse_size(v, &p->bulk) || p->bulk > MRCE_MAX_MSG ?
		       BADV("not a size up to 1G") : 0;
	return mrc__errf(err, errlen, "%s: unknown key '%s' (start, layers, steps, moe, fwd, bwd, tokens, tok, topk, cap, skew, ep, local, dp, grad, bucket, bulk)",
		    ctx, k);
}

static int wl_kv(void *obj, const char *ctx, const char *k, const char *v,
		 char *err, size_t errlen)
{
	struct mrc_sim_workload *w = obj;
	if (!strcmp(k, "size"))
		return sim_parse_size(v, &w->size) || w->size > MRCE_MAX_MSG ?
		       BADV("not a size up to 1G (e.g. 4096, 64K, 2M)") : 0;
	if (!strcmp(k, "start"))
		return sim_parse_time(v, &w->start_ns) ? BADV("not a time (e.g. 0, 10us)") : 0;
	if (!strcmp(k, "jitter"))
		return sim_parse_time(v, &w->jitter_ns) ? BADV("not a time (e.g. 0, 10us)") : 0;
	if (!strcmp(k, "group"))
		return parse_u32r(v, 2, MRC_TOPO_MAX_HOSTS, &w->group) ?
		       BADV("must be 2..32768 hosts") : 0;
	if (!strcmp(k, "senders"))
		return parse_u32r(v, 1, MRC_TOPO_MAX_HOSTS, &w->senders) ?
		       BADV("must be 1..32767") : 0;
	if (!strcmp(k, "qps"))
		return parse_u32r(v, 1, 64, &w->qps) ? BADV("must be 1..64") : 0;
	if (!strcmp(k, "src"))
		return parse_host(v, &w->src) ? BADV("not a host (h0, h1, ...)") : 0;
	if (!strcmp(k, "dst"))
		return parse_host(v, &w->dst) ? BADV("not a host (h0, h1, ...)") : 0;
	if (w->kind == MRC_SIM_WL_STEP)
		return step_kv(&w->step, ctx, k, v, err, errlen);
	return mrc__errf(err, errlen, "%s: unknown key '%s' (size, start, jitter, group, senders, qps, src, dst)",
		    ctx, k);
}

static int set_topo(struct mrc_sim_cfg *c, const char *val, char *err, size_t errlen)
{
	char buf[512];
	if (strlen(val) >= sizeof(buf))
		return mrc__errf(err, errlen, "topo: value too long");
	snprintf(buf, sizeof(buf), "%s", val);
	char *colon = strchr(buf, ':');
	if (colon)
		*colon = 0;
	struct mrc_sim_topo t = c->topo;
	if (!strcmp(buf, "clos"))
		t.kind = MRC_SIM_CLOS;
	else if (!strcmp(buf, "fattree")) {
		t.kind = MRC_SIM_FATTREE;
		t.planes = 1;
	} else
		return mrc__errf(err, errlen, "topo: '%s': unknown kind (clos, fattree)", buf);
	int rc = colon ? parse_kvs(colon + 1, &t, "topo", topo_kv, err, errlen) : 0;
	if (rc)
		return rc;
	uint64_t hosts = t.kind == MRC_SIM_CLOS ? (uint64_t)t.leaves * t.hosts_per_leaf :
			 (uint64_t)t.k * t.k * t.k / 4;
	if (hosts > MRC_TOPO_MAX_HOSTS)
		return mrc__errf(err, errlen, "topo: %llu hosts: at most %u",
			    (unsigned long long)hosts, MRC_TOPO_MAX_HOSTS);
	c->topo = t;
	return 0;
}

static int set_workload(struct mrc_sim_cfg *c, const char *val, char *err, size_t errlen)
{
	if (c->n_wl == MRC_SIM_MAX_WORKLOADS)
		return mrc__errf(err, errlen, "workload: at most %d entries", MRC_SIM_MAX_WORKLOADS);
	char buf[512], ctx[48];
	if (strlen(val) >= sizeof(buf))
		return mrc__errf(err, errlen, "workload[%u]: value too long", c->n_wl);
	snprintf(buf, sizeof(buf), "%s", val);
	char *colon = strchr(buf, ':');
	if (colon)
		*colon = 0;
	static const char *kinds[] = { "permutation", "alltoall", "ring", "incast", "flow", "step" };
	struct mrc_sim_workload w = { .size = 1 << 20, .senders = 8, .qps = 1 };
	uint32_t k;
	for (k = 0; k < 6 && strcmp(buf, kinds[k]); k++)
		;
	if (k == 6)
		return mrc__errf(err, errlen,
			    "workload[%u]: '%s': unknown kind (permutation, alltoall, ring, incast, flow, step)",
			    c->n_wl, buf);
	w.kind = (uint8_t)k;
	if (k == MRC_SIM_WL_STEP)   /* docs/sim.md "Training steps" */
		w.step = (struct mrc_sim_step){ .layers = 8, .steps = 3, .moe_layer = UINT32_MAX,
			.fwd_ns = 50000, .bwd_ns = 100000, .tokens = 256, .tok_bytes = 4096,
			.topk = 2, .cap = 1.25, .skew = 0.5, .dp = 8, .grad = 1 << 20,
			.bucket = 4 << 20 };
	if (k == MRC_SIM_WL_FLOW)
		w.dst = 1;
	snprintf(ctx, sizeof(ctx), "workload[%u] (%s)", c->n_wl, kinds[k]);
	int rc = colon ? parse_kvs(colon + 1, &w, ctx, wl_kv, err, errlen) : 0;
	if (rc)
		return rc;
	if (!w.size && k != MRC_SIM_WL_FLOW)
		return mrc__errf(err, errlen, "%s: size=0: flows need at least 1 byte", ctx);
	if (k == MRC_SIM_WL_STEP && w.step.moe_layer == UINT32_MAX)
		w.step.moe_layer = w.step.layers / 2;
	if (k == MRC_SIM_WL_RING && w.qps != 1)
		return mrc__errf(err, errlen, "%s: qps=%u: ring steps use one QP per edge", ctx, w.qps);
	c->wl[c->n_wl++] = w;
	return 0;
}

static int set_fault(struct mrc_sim_cfg *c, const char *val, char *err, size_t errlen)
{
	uint32_t i = c->n_faults;
	if (i == MRC_SIM_MAX_FAULTS)
		return mrc__errf(err, errlen, "fault: at most %d entries", MRC_SIM_MAX_FAULTS);
	char buf[256];
	if (strlen(val) >= sizeof(buf))
		return mrc__errf(err, errlen, "fault[%u]: value too long", i);
	snprintf(buf, sizeof(buf), "%s", val);
	char *k = strchr(buf, ':'), *t = k ? strchr(k + 1, ':') : NULL;
	if (!k || !t)
		return mrc__errf(err, errlen, "fault[%u]: '%s': expected TIME:KIND:TARGET", i, val);
	*k++ = 0;
	*t++ = 0;
	struct mrc_sim_fault f = { 0 };
	if (sim_parse_time(buf, &f.at_ns))
		return mrc__errf(err, errlen, "fault[%u]: time '%s': not a time (e.g. 100us)", i, buf);
	if (!strcmp(k, "down"))
		f.kind = MRC_SIM_F_DOWN;
	else if (!strcmp(k, "blackhole"))
		f.kind = MRC_SIM_F_BLACKHOLE;
	else if (!strcmp(k, "recover") || !strcmp(k, "up"))
		f.kind = MRC_SIM_F_RECOVER;
	else if (!strncmp(k, "loss=", 5)) {
		char *e;
		f.kind = MRC_SIM_F_LOSS;
		f.loss = strtod(k + 5, &e);
		if (e == k + 5 || *e || !(f.loss > 0 && f.loss <= 1))
			return mrc__errf(err, errlen, "fault[%u]: loss '%s': need a probability in (0, 1]",
				    i, k + 5);
	} else
		return mrc__errf(err, errlen, "fault[%u]: kind '%s': unknown (down, blackhole, loss=P, recover)",
			    i, k);
	if (!*t || strlen(t) >= sizeof(f.target))
		return mrc__errf(err, errlen, "fault[%u]: target '%s': empty or too long", i, t);
	snprintf(f.target, sizeof(f.target), "%s", t);
	c->faults[c->n_faults++] = f;
	return 0;
}

static int onoff(const char *v, int *out)
{
	if (!strcmp(v, "on") || !strcmp(v, "1") || !strcmp(v, "true") || !strcmp(v, "yes"))
		*out = 1;
	else if (!strcmp(v, "off") || !strcmp(v, "0") || !strcmp(v, "false") || !strcmp(v, "no"))
		*out = 0;
	else
		return -EINVAL;
	return 0;
}

/* A size that may be "off" (0). */
static int size_or_off(const char *v, uint64_t *out)
{
	if (!strcmp(v, "off")) {
		*out = 0;
		return 0;
	}
	return sim_parse_size(v, out);
}

/* off | local | shared, with an optional ",TICK" (evaluation period) */
static int set_health(struct mrc_sim_cfg *c, const char *v)
{
	static const char *const names[] = { "off", "local", "shared" };
	const char *comma = strchr(v, ',');
	size_t len = comma ? (size_t)(comma - v) : strlen(v);
	uint64_t tick = 10000000;
	if (comma && (sim_parse_time(comma + 1, &tick) || tick < 1000 || tick > 1000000000))
		return -EINVAL;
	for (unsigned i = 0; i < 3; i++)
		if (strlen(names[i]) == len && !strncmp(v, names[i], len)) {
			c->health = (uint8_t)(MRC_SIM_HEALTH_OFF + i);
			c->health_tick_ns = tick;
			return 0;
		}
	return -EINVAL;
}

int mrc_sim_cfg_set(struct mrc_sim_cfg *c, const char *key, const char *val,
		    char *err, size_t errlen)
{
	const char *k = key, *v = val, *ctx = "option";
	uint64_t x;
	int b;
	if (!val)
		return mrc__errf(err, errlen, "%s: missing value", key);
	if (!strcmp(k, "topo"))
		return set_topo(c, v, err, errlen);
	if (!strcmp(k, "workload"))
		return set_workload(c, v, err, errlen);
	if (!strcmp(k, "fault"))
		return set_fault(c, v, err, errlen);
	if (!strcmp(k, "mode")) {
		if (!strcmp(v, "spray"))
			c->mode = MRC_SIM_SPRAY;
		else if (!strcmp(v, "ecmp"))
			c->mode = MRC_SIM_ECMP;
		else
			return BADV("must be spray or ecmp");
		return 0;
	}
	if (!strcmp(k, "health"))
		return set_health(c, v) ? BADV("must be off, local or shared[,TICK]") : 0;
	if (!strcmp(k, "paths"))
		return parse_u32r(v, 0, MRCE_MAX_EVS, &c->paths) ? BADV("must be 0..4096") : 0;
	if (!strcmp(k, "buffer"))
		return sim_parse_size(v, &c->buffer) || c->buffer < 16384 ||
		       c->buffer > SIM_QBYTES_MAX ? BADV("must be a size, 16K..2G") : 0;
	if (!strcmp(k, "ecn"))
		return size_or_off(v, &c->ecn) ? BADV("must be a size or off") : 0;
	if (!strcmp(k, "trim"))
		return size_or_off(v, &c->trim) ? BADV("must be a size or off") : 0;
	if (!strcmp(k, "prio-buffer"))
		return sim_parse_size(v, &c->prio_buffer) || c->prio_buffer < 1024 ||
		       c->prio_buffer > SIM_QBYTES_MAX ? BADV("must be a size, 1K..2G") : 0;
	if (!strcmp(k, "overhead"))
		return parse_u32r(v, 0, 1024, &c->frame_overhead) ? BADV("must be 0..1024 bytes") : 0;
	if (!strcmp(k, "rx-batch")) {
		if (!strcmp(v, "off")) {
			c->rx_batch_off = 1;
			return 0;
		}
		c->rx_batch_off = 0;
		return sim_parse_time(v, &c->rx_batch_ns) || c->rx_batch_ns > 1000000 ?
		       BADV("must be off or a time, 0..1ms") : 0;
	}
	if (!strcmp(k, "nic-queue"))
		return parse_u32r(v, 1, 64, &c->nic_queue) ? BADV("must be 1..64 packets") : 0;
	if (!strcmp(k, "mtu"))
		return parse_u32r(v, 64, MRC_MAX_PAYLOAD, &c->mtu) ?
		       BADV("must be 64..9000 payload bytes") : 0;
	if (!strcmp(k, "window")) {
		if (parse_u32r(v, 0, MRCE_MAX_WINDOW, &c->window) ||
		    (c->window && (c->window < 4 || (c->window & (c->window - 1)))))
			return BADV("must be 0 (auto) or a power of two, 4..256");
		return 0;
	}
	if (!strcmp(k, "cc")) {
		if (!strcmp(v, "nscc"))
			c->cc_fixed = 0;
		else if (!strcmp(v, "fixed"))
			c->cc_fixed = 1;
		else
			return BADV("must be nscc or fixed");
		return 0;
	}
	if (!strcmp(k, "rto-min"))
		return sim_parse_time(v, &c->rto_min_ns) || !c->rto_min_ns ||
		       c->rto_min_ns > 200000000 ? BADV("must be a time, 1ns..200ms") : 0;
	if (!strcmp(k, "probe-interval"))
		return sim_parse_time(v, &c->probe_interval_ns) || !c->probe_interval_ns ?
		       BADV("must be a time > 0") : 0;
	if (!strcmp(k, "reorder-slack"))
		return sim_parse_time(v, &c->reorder_slack_ns) ? BADV("must be a time") : 0;
	if (!strcmp(k, "tlp-min"))
		return sim_parse_time(v, &c->tlp_min_ns) ? BADV("must be a time") :
		       (c->tlp_set = 1, 0);
	if (!strcmp(k, "tlp-lone")) {
		if (strcmp(v, "0") && strcmp(v, "1"))
			return BADV("must be 0 or 1");
		c->tlp_lone = v[0] == '1' ? 1 : 2;
		return 0;
	}
	if (!strcmp(k, "ev-floor"))
		return parse_u32r(v, 1, MRCE_MAX_EVS, &c->ev_floor) ? BADV("must be 1..4096") : 0;
	if (!strcmp(k, "seed")) {
		char *e;
		return parse_u64(v, &c->seed, &e) || *e ? BADV("must be an unsigned integer") : 0;
	}
	if (!strcmp(k, "until"))
		return sim_parse_time(v, &c->until_ns) || !c->until_ns ? BADV("must be a time > 0") : 0;
	if (!strcmp(k, "hold"))
		return sim_parse_time(v, &c->hold_ns) ? BADV("must be a time") : 0;
	if (!strcmp(k, "bin"))
		return sim_parse_time(v, &c->bin_ns) || c->bin_ns < 10 ?
		       BADV("must be a time >= 10ns") : 0;
	if (!strcmp(k, "verify-limit"))
		return size_or_off(v, &c->verify_limit) ? BADV("must be a size or off") : 0;
	if (!strcmp(k, "progress")) {
		if (onoff(v, &b))
			return BADV("must be on or off");
		c->progress = (uint8_t)b;
		return 0;
	}
	if (!strcmp(k, "stalls")) {
		if (onoff(v, &b))
			return BADV("must be on or off");
		c->stalls = (uint8_t)b;
		return 0;
	}
	if (!strcmp(k, "spray-slot")) {
		if (strcmp(v, "hash") && strcmp(v, "topo"))
			return BADV("must be hash or topo");
		c->spray_slot = !strcmp(v, "topo");
		return 0;
	}
	(void)x;
	return mrc__errf(err, errlen, "unknown setting '%s' (see --help)", key);
}
