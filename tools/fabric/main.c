/* mrc-fabric: builds, breaks, heals and inspects an emulated multi-plane
 * SRv6 Clos fabric made of network namespaces.  docs/fabric.md. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/fabric/fabric.h"

static void usage(FILE *out)
{
	fprintf(out,
		"usage: mrc-fabric [-p PREFIX] [-j] [-v] [-t TOPO] COMMAND [ARGS]\n"
		"  up TOPO [--ecmp] [--urgent-dscp N|none]\n"
		"                        build the fabric of topology file TOPO (--ecmp: also\n"
		"                        plain IPv6 ECMP routes for TCP/MPTCP baselines;\n"
		"                        rate-limited links serve DSCP N (46) ahead of the\n"
		"                        rest, which keeps 10 %%: the urgent priority band;\n"
		"                        none: one FIFO per port, as before)\n"
		"  down                  remove every namespace PREFIX-* (also after a crash)\n"
		"  show                  nodes, uSIDs, namespaces, links, active faults\n"
		"  path SRC DST [--plane P (--spine S | --direct) | --ev E]\n"
		"                        uSID destination address(es) of the paths SRC -> DST\n"
		"  probe SRC DST [path selection] [-c N] [-s BYTES] [-w MS] [--port P] [--raw]\n"
		"                        send UDP over each selected path, count arrivals\n"
		"  counters [NODE...]    per-SID packet counters of the switches\n"
		"  fail LINK|NODE [--silent]   loud (ports down) or silent (blackhole) failure\n"
		"  drop LINK|NODE PCT    random loss of PCT %% on the ports\n"
		"  trim LINK|NODE PCT    trim PCT %% of MRC data packets leaving the ports\n"
		"  restore               undo every fault, re-add flushed routes\n"
		"LINK is A-B (node names).  PREFIX: -p, else $MRC_FABRIC_PREFIX, else \"mrc\".\n"
		"-j: JSON output.  -t TOPO: show/path from a file, no fabric needed.\n"
		"Everything except show and path needs root.\n");
}

static int need_root(const char *cmd)
{
	if (geteuid() == 0)
		return 0;
	fab_err("'%s' needs root (it creates network namespaces, routes, nftables "
		"rules and tc filters); run it as root", cmd);
	return -EPERM;
}

static int load_topo_file(struct fab *f, const char *path)
{
	char err[MRC_TOPO_ERRLEN];
	int rc = mrc_topo_load(path, &f->t, err, sizeof(err));
	if (rc)
		fab_err("%s (nothing was created)", err);
	return rc;
}

static int set_block(struct fab *f)
{
	struct mrc_srv6_err e;
	int rc = mrc_usid_block_init(&f->blk, &f->t->block, f->t->block_bits, &e);
	if (rc)
		fab_err("block: %s", e.msg);
	return rc;
}

static int run(struct fab *f, const char *topo_file, int argc, char **argv)
{
	const char *cmd = argv[0];
	int rc;
#define IS(name) (!strcmp(cmd, name))
	if (IS("down")) {
		if ((rc = need_root(cmd)))
			return rc;
		return fab_down(f->prefix, f->json);
	}
	if (IS("up")) {
		int i = 1;
		const char *file = NULL;
		for (; i < argc; i++) {
			if (!strcmp(argv[i], "--ecmp"))
				f->ecmp = true;
			else if (!strcmp(argv[i], "--urgent-dscp") && i + 1 < argc) {
				char *end;
				const char *v = argv[++i];
				long d = strtol(v, &end, 10);
				if (!strcmp(v, "none"))
					f->urgent_dscp = -1;
				else if (*v && !*end && d >= 0 && d <= 63)
					f->urgent_dscp = (int)d;
				else
					file = NULL, i = argc + 1;
			} else if (!file)
				file = argv[i];
			else
				file = NULL, i = argc + 1;
		}
		if (!file || i > argc) {
			fab_err("usage: up TOPO [--ecmp] [--urgent-dscp 0..63|none]");
			return -EINVAL;
		}
		/* Validate before the root check: a bad file is reported as such. */
		if ((rc = load_topo_file(f, file)) || (rc = set_block(f)) || (rc = need_root(cmd)))
			return rc;
		return fab_up(f);
	}
	bool known = IS("show") || IS("path") || IS("probe") || IS("counters") || IS("fail") ||
		     IS("drop") || IS("trim") || IS("restore");
	if (!known) {
		fab_err("unknown command '%s'", cmd);
		usage(stderr);
		return -EINVAL;
	}
	bool offline = IS("show") || IS("path");
	if (!offline && (rc = need_root(cmd)))
		return rc;
	if (topo_file && offline)
		rc = load_topo_file(f, topo_file);
	else
		rc = fab_state_load(f);
	if (rc || (rc = set_block(f)))
		return rc;
	if (IS("show"))
		return fab_show(f);
	if (IS("path"))
		return fab_path(f, argc, argv);
	if (IS("probe"))
		return fab_probe(f, argc, argv);
	if (IS("counters"))
		return fab_counters(f, argc, argv);
	if (IS("restore"))
		return fab_restore(f);
	if (IS("fail")) {
		bool silent = argc == 3 && !strcmp(argv[2], "--silent");
		if (argc != 2 && !silent) {
			fab_err("usage: fail LINK|NODE [--silent]");
			return -EINVAL;
		}
		return fab_fault(f, "fail", argv[1], NULL, silent);
	}
	if (argc != 3) {
		fab_err("usage: %s LINK|NODE PCT", cmd);
		return -EINVAL;
	}
	return fab_fault(f, cmd, argv[1], argv[2], false);
#undef IS
}

int main(int argc, char **argv)
{
	struct fab f = { .prefix = getenv("MRC_FABRIC_PREFIX"), .urgent_dscp = 46 };
	const char *topo_file = NULL;
	int c;
	if (!f.prefix || !*f.prefix)
		f.prefix = "mrc";
	while ((c = getopt(argc, argv, "+p:jvt:h")) != -1) {
		switch (c) {
		case 'p': f.prefix = optarg; break;
		case 'j': f.json = true; break;
		case 'v': f.verbose = true; break;
		case 't': topo_file = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	if (fab_prefix_check(f.prefix)) {
		fab_err("prefix '%s': use 1..%d characters of A-Z a-z 0-9 _", f.prefix, FAB_PREFIX_MAX);
		return 2;
	}
	int rc = run(&f, topo_file, argc - optind, argv + optind);
	mrc_topo_free(f.t);
	if (rc == -EINVAL)
		return 2;
	return rc ? 1 : 0;
}
