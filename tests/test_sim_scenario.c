/* mrcsim scenario handling and fabric model: precise errors for bad input,
 * JSON scenarios equal to the command-line form, source routes that follow
 * the topology, ECMP pinning, loud NIC-link failures, and the sender-stall
 * accounting (stalls on). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sim/sim_int.h"

static uint64_t seed = 11;

static void expect_err(const char *key, const char *val, const char *needle)
{
	struct mrc_sim_cfg c;
	char err[MRC_SIM_ERRLEN] = "";
	mrc_sim_cfg_default(&c);
	int rc = mrc_sim_cfg_set(&c, key, val, err, sizeof(err));
	if (rc != -EINVAL || !strstr(err, needle))
		print_error("--%s %s: rc %d, '%s' lacks '%s'\n", key, val, rc, err, needle);
	assert_int_equal(rc, -EINVAL);
	assert_non_null(strstr(err, needle));
}

static void bad_settings_say_why(void **st)
{
	(void)st;
	expect_err("topo", "clos:planes=0", "planes='0': must be 1..16");
	expect_err("topo", "torus:k=4", "'torus': unknown kind");
	expect_err("topo", "fattree:k=5", "k='5': must be even");
	expect_err("topo", "clos:leaves=256,hosts=256", "65536 hosts: at most 32768");
	expect_err("topo", "clos:rate=fast", "rate='fast': not a rate");
	expect_err("topo", "clos:colour=red", "unknown key 'colour'");
	expect_err("workload", "permutation:size=2X", "workload[0] (permutation): size='2X'");
	expect_err("workload", "permutation:size", "'size': expected key=value");
	expect_err("workload", "gossip", "'gossip': unknown kind");
	expect_err("workload", "ring:size=1M,qps=2", "qps=2: ring steps use one QP");
	expect_err("fault", "100us:melt:p0s1", "kind 'melt': unknown");
	expect_err("fault", "p0s1", "expected TIME:KIND:TARGET");
	expect_err("fault", "soon:down:p0s1", "time 'soon': not a time");
	expect_err("fault", "1us:loss=2:p0s1", "loss '2': need a probability");
	expect_err("mode", "random", "mode='random': must be spray or ecmp");
	expect_err("window", "100", "window='100': must be 0 (auto) or a power of two");
	expect_err("buffer", "1K", "buffer='1K': must be a size, 16K..2G");
	expect_err("buffer", "3G", "buffer='3G': must be a size, 16K..2G");
	expect_err("prio-buffer", "3G", "prio-buffer='3G': must be a size, 1K..2G");
	expect_err("tlp-lone", "2", "tlp-lone='2': must be 0 or 1");
	expect_err("frobnicate", "1", "unknown setting 'frobnicate'");
}

static void create_err(const char *const *kv, const char *needle)
{
	struct mrc_sim_cfg c;
	char err[MRC_SIM_ERRLEN] = "";
	mrc_sim_cfg_default(&c);
	for (int i = 0; kv[i]; i += 2)
		assert_int_equal(mrc_sim_cfg_set(&c, kv[i], kv[i + 1], err, sizeof(err)), 0);
	struct mrc_sim *s = NULL;
	int rc = mrc_sim_create(&c, &s, err, sizeof(err));
	if (!rc || !strstr(err, needle))
		print_error("create: rc %d, '%s' lacks '%s'\n", rc, err, needle);
	assert_int_not_equal(rc, 0);
	assert_null(s);
	assert_non_null(strstr(err, needle));
}

static void bad_scenarios_say_why(void **st)
{
	(void)st;
	const char *a[] = { "workload", "permutation", "fault", "1us:down:p9s9", NULL };
	create_err(a, "fault[0]: target 'p9s9': no node named 'p9s9'");
	const char *b[] = { "workload", "permutation", "fault", "1us:down:p0l0-p1s0", NULL };
	create_err(b, "p0l0 and p1s0 are not linked");
	const char *c[] = { "workload", "permutation", "fault", "1us:blackhole:h3", NULL };
	create_err(c, "a host; name one of its links");
	const char *d[] = { "workload", "flow:src=h0,dst=h99", NULL };
	create_err(d, "workload[0]: flow h0 -> h99");
	const char *e[] = { "workload", "permutation", "trim", "2M", NULL };
	create_err(e, "trim=2097152: must not exceed buffer");
	const char *f[] = { "workload", "incast:senders=16", NULL };
	create_err(f, "incast senders=16: must be 1..15");
	const char *g[] = { "topo", "clos:planes=16,spines=256", "workload", "permutation", NULL };
	create_err(g, "EVs per host pair, the engine takes at most 4096");
	/* Queue byte counts are 32-bit: a config set without the parser is
	 * refused at create too. */
	struct mrc_sim_cfg h;
	char err[MRC_SIM_ERRLEN] = "";
	struct mrc_sim *s = NULL;
	mrc_sim_cfg_default(&h);
	assert_int_equal(mrc_sim_cfg_set(&h, "workload", "permutation", err, sizeof(err)), 0);
	h.prio_buffer = 3ull << 30;
	assert_int_equal(mrc_sim_create(&h, &s, err, sizeof(err)), -EINVAL);
	assert_null(s);
	assert_non_null(strstr(err, "at most 2G each"));
}

static char *report(struct mrc_sim_cfg *c)
{
	char err[MRC_SIM_ERRLEN], *j = NULL;
	struct mrc_sim *s;
	if (mrc_sim_create(c, &s, err, sizeof(err))) {
		print_error("%s\n", err);
		fail();
	}
	assert_int_equal(mrc_sim_run(s, err, sizeof(err)), 0);
	assert_int_equal(mrc_sim_report_json(s, 0, &j), 0);
	mrc_sim_destroy(s);
	return j;
}

/* A JSON scenario means exactly what the same command line means. */
static void json_scenario_equals_cli(void **st)
{
	(void)st;
	const char *text =
		"{\"topo\": {\"type\": \"clos\", \"planes\": 2, \"leaves\": 2, \"spines\": 2, \"hosts\": 4},\n"
		" \"workloads\": [{\"type\": \"permutation\", \"size\": \"128K\"},\n"
		"                {\"type\": \"incast\", \"size\": 65536, \"senders\": 3, \"dst\": \"h2\"}],\n"
		" \"faults\": [{\"at\": \"10us\", \"kind\": \"loss\", \"loss\": 0.05, \"target\": \"p0l0-p0s0\"},\n"
		"            \"30us:recover:p0l0-p0s0\"],\n"
		" \"seed\": 5, \"mode\": \"spray\", \"ecn\": \"32K\"}";
	struct mrc_sim_cfg a, b;
	char err[MRC_SIM_ERRLEN];
	mrc_sim_cfg_default(&a);
	if (mrc_sim_cfg_load_json(&a, text, strlen(text), err, sizeof(err))) {
		print_error("%s\n", err);
		fail();
	}
	mrc_sim_cfg_default(&b);
	const char *kv[] = { "topo", "clos:planes=2,leaves=2,spines=2,hosts=4",
		"workload", "permutation:size=128K", "workload", "incast:size=64K,senders=3,dst=h2",
		"fault", "10us:loss=0.05:p0l0-p0s0", "fault", "30us:recover:p0l0-p0s0",
		"seed", "5", "mode", "spray", "ecn", "32K", NULL };
	for (int i = 0; kv[i]; i += 2)
		assert_int_equal(mrc_sim_cfg_set(&b, kv[i], kv[i + 1], err, sizeof(err)), 0);
	char *ja = report(&a), *jb = report(&b);
	assert_string_equal(ja, jb);
	free(ja);
	free(jb);
	mrc_sim_cfg_default(&a);
	assert_int_equal(mrc_sim_cfg_load_json(&a, "{\"seed\": 1,", 11, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "scenario: line 1"));
	assert_int_equal(mrc_sim_cfg_load_json(&a, "{\"topo\": {\"planes\": 2}}", 23, err,
					       sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "topo: an object needs a string \"type\""));
	assert_int_equal(mrc_sim_cfg_load_json(&a, "{\"seed\": [[1]]}", 15, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "seed: value must be"));
}

static struct mrc_sim *build(const char *topo, const char *extra)
{
	struct mrc_sim_cfg c;
	char err[MRC_SIM_ERRLEN], sd[24];
	mrc_sim_cfg_default(&c);
	snprintf(sd, sizeof(sd), "%llu", (unsigned long long)seed);
	assert_int_equal(mrc_sim_cfg_set(&c, "seed", sd, err, sizeof(err)), 0);
	assert_int_equal(mrc_sim_cfg_set(&c, "topo", topo, err, sizeof(err)), 0);
	assert_int_equal(mrc_sim_cfg_set(&c, "workload", "permutation:size=64K", err,
					 sizeof(err)), 0);
	if (extra) {
		char k[32], v[128];
		assert_int_equal(sscanf(extra, "%31[^=]=%127s", k, v), 2);
		assert_int_equal(mrc_sim_cfg_set(&c, k, v, err, sizeof(err)), 0);
	}
	struct mrc_sim *s;
	if (mrc_sim_create(&c, &s, err, sizeof(err))) {
		print_error("%s\n", err);
		fail();
	}
	return s;
}

/* Every source route is a connected up-down walk from src to dst; in the
 * Clos it is exactly topology/'s path of that EV; in the fat tree distinct
 * EVs between pods use distinct cores. */
static void routes_follow_topology(void **st)
{
	(void)st;
	const char *topos[] = { "clos:planes=3,leaves=5,spines=3,hosts=3", "fattree:k=6,planes=2" };
	for (int t = 0; t < 2; t++) {
		struct mrc_sim *s = build(topos[t], NULL);
		const struct sim_fabric *f = &s->fab;
		struct mrc_rng r;
		mrc_rng_seed(&r, seed);
		for (int i = 0; i < 400; i++) {
			uint32_t a = mrc_rng_below(&r, f->n_hosts), b = mrc_rng_below(&r, f->n_hosts);
			if (a == b)
				continue;
			uint32_t core_seen[64] = { 0 };
			for (uint32_t ev = 0; ev < f->nev; ev++) {
				uint32_t rt[SIM_MAX_HOPS];
				int n = sim_fabric_route(f, a, b, ev, rt);
				if (n < 0) {
					assert_int_equal(n, -ENOENT);
					continue;
				}
				assert_int_equal(sim_port_from(f, rt[0]), f->host_node[a]);
				assert_int_equal(sim_port_to(f, rt[n - 1]), f->host_node[b]);
				for (int h = 0; h + 1 < n; h++)
					assert_int_equal(sim_port_to(f, rt[h]), sim_port_from(f, rt[h + 1]));
				for (int h = 1; h < n; h++)   /* stays in the EV's plane */
					assert_int_equal(f->nodes[sim_port_from(f, rt[h])].plane,
							 f->plane_of_ev[ev]);
				if (f->kind == MRC_SIM_CLOS) {
					struct mrc_path p;
					assert_int_equal(mrc_topo_path(f->topo, a, b, ev, &p), 0);
					assert_int_equal(p.n_links, n);
					for (int h = 0; h < n; h++)
						assert_int_equal(rt[h] >> 1, p.links[h]);
				} else if (n == 6) {
					uint32_t core = sim_port_to(f, rt[2]);
					assert_int_equal(f->nodes[core].tier, 3);
					assert_true(core_seen[f->nodes[core].index + 9 * f->plane_of_ev[ev]]++ == 0);
				}
			}
		}
		mrc_sim_destroy(s);
	}
}

/* ECMP: each QP keeps to its one hashed EV on a healthy fabric. */
static void ecmp_pins_one_path(void **st)
{
	(void)st;
	struct mrc_sim *s = build("clos:planes=2,leaves=4,spines=4,hosts=4", "mode=ecmp");
	char err[MRC_SIM_ERRLEN];
	assert_int_equal(mrc_sim_run(s, err, sizeof(err)), 0);
	assert_int_equal(s->flows_done, s->n_flows);
	for (uint32_t i = 0; i < s->n_flows; i++) {
		uint32_t peer, used = 0;
		assert_int_equal(mrc_sim_peer(s, s->flows[i].src, s->flows[i].dst, &peer), 0);
		for (uint32_t ev = 0; ev < s->fab.nev; ev++) {
			struct mrce_ev_info in;
			assert_int_equal(mrce_ev_info(s->hosts[s->flows[i].src].eng, peer, ev, &in), 0);
			used += in.tx_pkts > 0;
		}
		assert_int_equal(used, 1);
	}
	mrc_sim_destroy(s);
}

/* A host's own NIC link going down is loud: that host stops using the
 * plane at once (DENIED, no loss needed), flows still finish, and after
 * recovery the plane's EVs are probed back to GOOD. */
static void nic_link_down_is_loud(void **st)
{
	(void)st;
	struct mrc_sim_cfg c;
	char err[MRC_SIM_ERRLEN];
	mrc_sim_cfg_default(&c);
	const char *kv[] = { "topo", "clos:planes=2,leaves=2,spines=2,hosts=2",
		"workload", "flow:src=h0,dst=h3,size=2M", "fault", "20us:down:h0-p1l0",
		"fault", "100us:recover:h0-p1l0", "hold", "6ms", NULL };
	for (int i = 0; kv[i]; i += 2)
		assert_int_equal(mrc_sim_cfg_set(&c, kv[i], kv[i + 1], err, sizeof(err)), 0);
	struct mrc_sim *s;
	assert_int_equal(mrc_sim_create(&c, &s, err, sizeof(err)), 0);
	assert_int_equal(mrc_sim_run(s, err, sizeof(err)), 0);
	assert_int_equal(s->flows_done, 1);
	assert_int_equal(s->verified, 1);
	uint32_t n = mrc_sim_ev_change_count(s), denied = 0, back = 0;
	const struct mrc_sim_ev_change *ch = mrc_sim_ev_changes(s);
	for (uint32_t i = 0; i < n; i++) {
		if (ch[i].host != 0)
			continue;
		assert_int_equal(s->fab.plane_of_ev[ch[i].ev], 1);
		if (ch[i].new_state == MRCE_EV_DENIED) {
			assert_int_equal(ch[i].t_ns, 20000);
			denied++;
		}
		if (ch[i].new_state == MRCE_EV_GOOD)
			back++;
	}
	assert_int_equal(denied, 2);   /* the two spine paths of plane 1 */
	assert_int_equal(back, 2);
	mrc_sim_destroy(s);
}

/* One 1 MiB flow across the fabric, fixed window of `window` packets,
 * stall accounting on or off; returns the finished simulator. */
static struct mrc_sim *one_flow(const char *window, const char *stalls)
{
	struct mrc_sim_cfg c;
	char err[MRC_SIM_ERRLEN], sd[24];
	mrc_sim_cfg_default(&c);
	snprintf(sd, sizeof(sd), "%llu", (unsigned long long)seed);
	const char *kv[] = { "seed", sd, "topo", "clos:planes=1,leaves=2,spines=2,hosts=2",
		"workload", "flow:src=h0,dst=h3,size=1M", "cc", "fixed", "window", window,
		"stalls", stalls, NULL };
	for (int i = 0; kv[i]; i += 2)
		assert_int_equal(mrc_sim_cfg_set(&c, kv[i], kv[i + 1], err, sizeof(err)), 0);
	struct mrc_sim *s;
	if (mrc_sim_create(&c, &s, err, sizeof(err))) {
		print_error("%s\n", err);
		fail();
	}
	assert_int_equal(mrc_sim_run(s, err, sizeof(err)), 0);
	assert_int_equal(s->flows_done, 1);
	return s;
}

/* A 4-packet window on a path whose BDP is far larger leaves the NIC idle
 * most of the time, and the accounting blames the window; with a window
 * above the BDP the only idle time is the drain at the end (the last
 * ACKs), about one base RTT.  Off, nothing is counted or reported. */
static void stalls_blame_the_window(void **st)
{
	(void)st;
	struct mrc_sim *s = one_flow("4", "on");
	const struct sim_stalls *t = &s->stalls;
	assert_true(t->send_ps > 0);
	assert_true(t->ps[SIM_STALL_WINDOW] > t->send_ps / 2);
	assert_int_equal(t->ps[SIM_STALL_CWND], 0);
	char *j = NULL;
	assert_int_equal(mrc_sim_report_json(s, 0, &j), 0);
	assert_non_null(strstr(j, "\"stalls\": {"));
	free(j);
	mrc_sim_destroy(s);

	s = one_flow("256", "on");
	t = &s->stalls;
	uint64_t rtt = sim_pair_rtt_ps(s, 0, 3);
	assert_int_equal(t->ps[SIM_STALL_WINDOW] + t->ps[SIM_STALL_CWND] +
			 t->ps[SIM_STALL_OTHER], 0);
	assert_true(t->ps[SIM_STALL_DRAIN] > rtt / 2);
	assert_true(t->ps[SIM_STALL_DRAIN] < 2 * rtt);
	mrc_sim_destroy(s);

	s = one_flow("4", "off");
	assert_int_equal(s->stalls.send_ps + s->stalls.n + s->stalls.ps[SIM_STALL_WINDOW], 0);
	assert_int_equal(mrc_sim_report_json(s, 0, &j), 0);
	assert_null(strstr(j, "\"stalls\""));
	free(j);
	mrc_sim_destroy(s);
}

int main(void)
{
	const char *e = getenv("MRC_TEST_SEED");
	if (e)
		seed = strtoull(e, NULL, 0);
	print_message("test_sim_scenario: seed %llu (MRC_TEST_SEED)\n", (unsigned long long)seed);
	const struct CMUnitTest t[] = {
		cmocka_unit_test(bad_settings_say_why),
		cmocka_unit_test(bad_scenarios_say_why),
		cmocka_unit_test(json_scenario_equals_cli),
		cmocka_unit_test(routes_follow_topology),
		cmocka_unit_test(ecmp_pins_one_path),
		cmocka_unit_test(nic_link_down_is_loud),
		cmocka_unit_test(stalls_blame_the_window),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}
