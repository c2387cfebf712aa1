/* mrcd configuration: defaults, every key settable, precise errors that
 * name file, line, key and value, and all-or-nothing application. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "topology/addr.h"
#include "topology/topo.h"

#include "daemon/core/config.h"

static void defaults_are_valid(void **st)
{
	(void)st;
	struct mrcd_cfg c;
	char err[256];
	mrcd_cfg_default(&c);
	assert_int_equal(mrcd_cfg_check(&c, err, sizeof(err)), 0);
	assert_string_equal(c.socket, "/run/mrcd/mrcd.sock");
	assert_int_equal(c.port, MRC_UDP_PORT);
	assert_true(c.port < 1024);   /* privileged: docs/security.md */
	assert_int_equal(c.ev_floor, 1);
	assert_string_equal(c.key_file, "/etc/mrcd/cluster.key");
	assert_int_equal(c.rnr_retry, 7);
	/* Traffic classes: default unmarked as before, urgent EF, bulk AF11. */
	assert_int_equal(c.dscp_default, 0);
	assert_int_equal(c.dscp_urgent, 46);
	assert_int_equal(c.dscp_bulk, 10);
	assert_int_equal(c.bulk_min_pct, 10);
	/* The power-floor hint is off unless asked for (h-floor). */
	assert_int_equal(c.power_floor, 0);
	assert_int_equal(c.power_floor_hold_us, 1000);
	/* Cross-QP ACKs off unless turned on (h-ack). */
	assert_int_equal(c.xack, 0);
	/* h-hold: libev's engine timer unless asked (bench/results/hold.md);
	 * the engine's 32 us hold. */
	assert_int_equal(c.engine_timerfd, 0);
	assert_int_equal(c.ack_delay_us, 32);
	/* No lone-tail probe under libev's millisecond timer. */
	assert_int_equal(c.tlp_lone, 0);
	/* h-same: loopback mode's datagrams to itself in-process. */
	assert_int_equal(c.loopback_inproc, 1);
	/* Every listed key can be set from text (the CLI relies on it). */
	for (const char *const *k = mrcd_cfg_keys(); *k; k++) {
		struct mrcd_cfg t = c;
		const char *v = !strcmp(*k, "log_level") ? "debug" :
				!strcmp(*k, "cc") ? "fixed" :
				!strcmp(*k, "socket") || !strcmp(*k, "ctl_socket") ? "/tmp/x.sock" :
				!strcmp(*k, "window") || !strcmp(*k, "ring_entries") ? "64" :
				!strcmp(*k, "socket_mode") ? "0600" :
				!strcmp(*k, "rto_max_us") ? "500000" : "1000";
		if (!strcmp(*k, "mtu"))
			v = "4096";
		if (!strcmp(*k, "rnr_retry"))
			v = "3";
		if (!strncmp(*k, "dscp_", 5) || !strcmp(*k, "bulk_min_pct"))
			v = "10";
		if (!strcmp(*k, "power_floor"))   /* h-floor: a switch, 0..1 */
			v = "1";
		if (!strcmp(*k, "health_share") ||  /* h-hfeed: a switch, 0..1 */
		    !strcmp(*k, "health_suspect") ||

		    !strcmp(*k, "xack") ||          /* h-ack: a switch, 0..1 */
		    !strcmp(*k, "engine_timerfd") ||  /* h-hold: a switch, 0..1 */
		    !strcmp(*k, "loopback_inproc") ||  /* h-same: a switch, 0..1 */
		    !strcmp(*k, "tlp_lone"))
			v = "1";
		int rc = mrcd_cfg_set(&t, *k, v, err, sizeof(err));
		if (rc)
			fail_msg("key %s = %s: %s", *k, v, err);
	}
}

/* busy_poll_us: "auto" by default, which polls on machines with CPUs to
 * spare and sleeps at once on small ones; a number always wins. */
static void busy_poll_auto(void **st)
{
	(void)st;
	struct mrcd_cfg c;
	char err[256];
	mrcd_cfg_default(&c);
	assert_int_equal(c.busy_poll_us, MRCD_CFG_AUTO);
	assert_int_equal(mrcd_cfg_busy_poll_us(&c, 2), 0);
	assert_int_equal(mrcd_cfg_busy_poll_us(&c, MRCD_BUSY_POLL_AUTO_CPUS - 1), 0);
	assert_int_equal(mrcd_cfg_busy_poll_us(&c, MRCD_BUSY_POLL_AUTO_CPUS), MRCD_BUSY_POLL_AUTO_US);
	assert_int_equal(mrcd_cfg_busy_poll_us(&c, 128), MRCD_BUSY_POLL_AUTO_US);
	assert_int_equal(mrcd_cfg_set(&c, "busy_poll_us", "0", err, sizeof(err)), 0);
	assert_int_equal(mrcd_cfg_busy_poll_us(&c, 128), 0);
	assert_int_equal(mrcd_cfg_set(&c, "busy_poll_us", "20", err, sizeof(err)), 0);
	assert_int_equal(mrcd_cfg_busy_poll_us(&c, 2), 20);
	assert_int_equal(mrcd_cfg_set(&c, "busy_poll_us", "auto", err, sizeof(err)), 0);
	assert_int_equal(c.busy_poll_us, MRCD_CFG_AUTO);
	/* A bad word names the key and what it takes, and changes nothing. */
	assert_int_equal(mrcd_cfg_set(&c, "busy_poll_us", "autox", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "busy_poll_us"));
	assert_non_null(strstr(err, "or auto"));
	assert_int_equal(c.busy_poll_us, MRCD_CFG_AUTO);
	/* The largest number is still a number, not auto. */
	assert_int_equal(mrcd_cfg_set(&c, "busy_poll_us", "4294967295", err, sizeof(err)), -EINVAL);
	/* Other numeric keys do not take auto. */
	assert_int_equal(mrcd_cfg_set(&c, "window", "auto", err, sizeof(err)), -EINVAL);
	assert_null(strstr(err, "or auto"));
}

static void parse_file_text(void **st)
{
	(void)st;
	struct mrcd_cfg c;
	char err[256];
	mrcd_cfg_default(&c);
	const char *text = "; comment\n[mrcd]\nport = 5000\nlog_level = debug\n"
			   "topology = /etc/mrcd/t.json\nhost = h3\nsocket_mode = 0640\n";
	assert_int_equal(mrcd_cfg_parse(&c, text, "t.conf", err, sizeof(err)), 0);
	assert_int_equal(c.port, 5000);
	assert_int_equal(c.log_level, 7);
	assert_string_equal(c.topology, "/etc/mrcd/t.json");
	assert_string_equal(c.host, "h3");
	assert_int_equal(c.socket_mode, 0640);
	assert_int_equal(mrcd_cfg_check(&c, err, sizeof(err)), 0);
}

struct bad { const char *text, *want; };

static void errors_are_precise_and_atomic(void **st)
{
	(void)st;
	static const struct bad cases[] = {
		{ "[mrcd]\nport = 0\n", "t.conf:2: key 'port': 0 is out of range 1..65535" },
		{ "[mrcd]\nport = 12x\n", "key 'port': '12x' is not a number" },
		{ "[mrcd]\nport = -1\n", "key 'port': '-1' is not a number" },
		{ "[mrcd]\nbogus = 1\n", "t.conf:2: unknown key 'bogus'" },
		{ "[other]\nport = 1\n", "unknown section [other]" },
		{ "[mrcd]\nlog_level = loud\n", "'loud' is not one of err, warning" },
		{ "[mrcd]\nsocket_mode = 0999\n", "'0999' is not an octal number" },
		{ "[mrcd]\nport = 5000\nthis is not ini\n", "t.conf:3: syntax error" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct mrcd_cfg c, before;
		char err[256] = "";
		mrcd_cfg_default(&c);
		before = c;
		assert_int_equal(mrcd_cfg_parse(&c, cases[i].text, "t.conf", err, sizeof(err)),
				 -EINVAL);
		if (!strstr(err, cases[i].want))
			fail_msg("case %zu: got '%s', want '%s'", i, err, cases[i].want);
		/* Nothing of a bad file is applied (port = 5000 above too). */
		assert_memory_equal(&c, &before, sizeof(c));
	}
}

static void cross_key_checks(void **st)
{
	(void)st;
	struct mrcd_cfg c;
	char err[256];
	mrcd_cfg_default(&c);
	c.window = 100;
	assert_int_equal(mrcd_cfg_check(&c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "'window': 100 is not a power of two"));
	mrcd_cfg_default(&c);
	snprintf(c.topology, sizeof(c.topology), "/x.json");
	assert_int_equal(mrcd_cfg_check(&c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "'host' is required"));
	mrcd_cfg_default(&c);
	c.rto_min_us = 9000;
	c.rto_max_us = 5000;
	assert_int_equal(mrcd_cfg_check(&c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "rto_min_us (9000) is larger than rto_max_us (5000)"));
	mrcd_cfg_default(&c);
	c.probe_interval_us = 100000;   /* above the default maximum */
	assert_int_equal(mrcd_cfg_check(&c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "probe_interval_us (100000) is larger than probe_max_interval_us (64000)"));
	mrcd_cfg_default(&c);
	snprintf(c.socket, sizeof(c.socket), "relative.sock");
	assert_int_equal(mrcd_cfg_check(&c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "not an absolute path"));
}

static void load_from_file(void **st)
{
	(void)st;
	char path[] = "/tmp/mrc-test-conf-XXXXXX", err[256];
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	const char *t = "[mrcd]\nwindow = 128\n";
	assert_int_equal(write(fd, t, strlen(t)), (ssize_t)strlen(t));
	close(fd);
	struct mrcd_cfg c;
	mrcd_cfg_default(&c);
	assert_int_equal(mrcd_cfg_load(&c, path, err, sizeof(err)), 0);
	assert_int_equal(c.window, 128);
	unlink(path);
	assert_int_equal(mrcd_cfg_load(&c, path, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, path));
}

/* spray_slot = topo|hash: topo by default, anything else refused by name;
 * the engine gets the host's slot under its leaf only with topo and a
 * topology, else 0 (the hash). */
static void spray_slot_key(void **st)
{
	(void)st;
	struct mrcd_cfg c;
	char err[256] = "";
	mrcd_cfg_default(&c);
	assert_string_equal(c.spray_slot, "topo");
	assert_int_equal(mrcd_cfg_parse(&c, "[mrcd]\nspray_slot = hash\n", "t.conf", err,
					sizeof(err)), 0);
	assert_string_equal(c.spray_slot, "hash");
	assert_int_equal(mrcd_cfg_check(&c, err, sizeof(err)), 0);
	assert_int_equal(mrcd_cfg_parse(&c, "[mrcd]\nspray_slot = leaf\n", "t.conf", err,
					sizeof(err)), 0);
	assert_int_equal(mrcd_cfg_check(&c, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "key 'spray_slot': 'leaf' is not topo or hash");
	assert_int_equal(mrcd_cfg_parse(&c, "[mrcd]\nspray_slot = topology\n", "t.conf", err,
					sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "t.conf:2: key 'spray_slot': value is 8 characters, at most 7"));

	/* 4 hosts per leaf: host 6 is the third of leaf 1. */
	struct mrc_topo_gen g = { .planes = 2, .leaves_per_plane = 2,
		.spines_per_plane = 2, .hosts_per_leaf = 4 };
	struct mrc_topo *t = NULL;
	assert_int_equal(mrc_topo_generate(&g, &t, err, sizeof(err)), 0);
	mrcd_cfg_default(&c);
	assert_int_equal(mrcd_cfg_spray_slot(&c, t, 6), 3);
	assert_int_equal(mrcd_cfg_spray_slot(&c, t, 0), 1);
	assert_int_equal(mrcd_cfg_spray_slot(&c, NULL, 0), 0);   /* loopback */
	snprintf(c.spray_slot, sizeof(c.spray_slot), "hash");
	assert_int_equal(mrcd_cfg_spray_slot(&c, t, 6), 0);
	mrc_topo_free(t);
}

/* h-hfeed: the fabric-health keys (docs/health.md "Settings"): defaults
 * as health/'s, out-of-range values refused with the key and the range,
 * and one host's say (health_k_hosts 1) refused while evidence is shared. */
static void health_keys(void **st)
{
	(void)st;
	struct mrcd_cfg c;
	char err[256] = "";
	mrcd_cfg_default(&c);
	assert_int_equal(c.health_share, 1);
	assert_int_equal(c.health_ttl_ms, 1000);
	assert_int_equal(c.health_k_hosts, 2);
	assert_int_equal(c.health_min_paths, 2);
	assert_int_equal(mrcd_cfg_parse(&c, "[mrcd]\nhealth_ttl_ms = 3000\nhealth_k_hosts = 3\n"
					"health_min_paths = 4\nhealth_share = 0\n", "t.conf", err,
					sizeof(err)), 0);
	assert_int_equal(c.health_ttl_ms, 3000);
	assert_int_equal(c.health_k_hosts, 3);
	assert_int_equal(c.health_min_paths, 4);
	assert_int_equal(c.health_share, 0);
	assert_int_equal(mrcd_cfg_check(&c, err, sizeof(err)), 0);
	assert_int_equal(mrcd_cfg_set(&c, "health_ttl_ms", "150", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "'health_ttl_ms': 150 is out of range 200..600000"));
	assert_int_equal(mrcd_cfg_set(&c, "health_share", "2", err, sizeof(err)), -EINVAL);
	assert_int_equal(mrcd_cfg_set(&c, "health_k_hosts", "0", err, sizeof(err)), -EINVAL);
	/* One host alone may deny only its own paths' links, never share. */
	assert_int_equal(mrcd_cfg_set(&c, "health_k_hosts", "1", err, sizeof(err)), 0);
	assert_int_equal(mrcd_cfg_check(&c, err, sizeof(err)), 0);
	c.health_share = 1;
	assert_int_equal(mrcd_cfg_check(&c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "health_k_hosts 1 with health_share 1"));
}

int main(void)
{
	const struct CMUnitTest t[] = {
		cmocka_unit_test(defaults_are_valid),
		cmocka_unit_test(parse_file_text),
		cmocka_unit_test(errors_are_precise_and_atomic),
		cmocka_unit_test(cross_key_checks),
		cmocka_unit_test(load_from_file),
		cmocka_unit_test(busy_poll_auto),
		cmocka_unit_test(spray_slot_key),
		cmocka_unit_test(health_keys),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}
