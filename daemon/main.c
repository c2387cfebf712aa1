/* mrcd: the per-host MRC daemon.  Options, configuration, signals,
 * systemd notification, and the loop. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <systemd/sd-daemon.h>

#include "daemon/clients/clients.h"
#include "daemon/core/core.h"
#include "daemon/oper/oper.h"
#include "mrc/version.h"


static void usage(FILE *out)
{
	fprintf(out,
		"usage: mrcd [-c FILE] [--check] [--KEY=VALUE ...]\n"
		"       mrcd --genkey PATH\n"
		"  -c, --config FILE    configuration file (default " MRCD_CONF_DEFAULT
		"; a missing default file means built-in defaults)\n"
		"      --check          validate configuration, topology and cluster key, print a summary, exit\n"
		"      --genkey PATH    write a new cluster key to PATH (mode 0600, never overwrites), exit\n"
		"  -V, --version        print the version\n"
		"  -h, --help           this help\n"
		"Every configuration key is also an option (the command line wins):\n");
	mrcd_cfg_usage(out);
}

static struct option *make_opts(void)
{
	const char *const *k = mrcd_cfg_keys();
	size_t n = 0;
	while (k[n])
		n++;
	struct option *o = calloc(n + 6, sizeof(*o));
	if (!o)
		return NULL;
	for (size_t i = 0; i < n; i++)
		o[i] = (struct option){ k[i], required_argument, NULL, 1000 + (int)i };
	o[n] = (struct option){ "config", required_argument, NULL, 'c' };
	o[n + 1] = (struct option){ "check", no_argument, NULL, 'C' };
	o[n + 2] = (struct option){ "version", no_argument, NULL, 'V' };
	o[n + 3] = (struct option){ "help", no_argument, NULL, 'h' };
	o[n + 4] = (struct option){ "genkey", required_argument, NULL, 'G' };
	return o;
}

struct args {
	const char *conf;
	int check;
	const char *genkey;
	int nset;
	const char *keys[64], *vals[64];
};

static int parse_args(int argc, char **argv, struct args *a)
{
	struct option *o = make_opts();
	if (!o)
		return -ENOMEM;
	const char *const *k = mrcd_cfg_keys();
	int c, rc = 0;
	while (!rc && (c = getopt_long(argc, argv, "c:Vh", o, NULL)) != -1) {
		if (c == 'c')
			a->conf = optarg;
		else if (c == 'C')
			a->check = 1;
		else if (c == 'G')
			a->genkey = optarg;
		else if (c == 'V') {
			printf("mrcd " MRC_VERSION "\n");
			exit(0);
		} else if (c == 'h') {
			usage(stdout);
			exit(0);
		} else if (c >= 1000 && a->nset < 64) {
			a->keys[a->nset] = k[c - 1000];
			a->vals[a->nset++] = optarg;
		} else {
			rc = -EINVAL;
		}
	}
	if (!rc && optind < argc) {
		fprintf(stderr, "mrcd: unexpected argument '%s'\n", argv[optind]);
		rc = -EINVAL;
	}
	free(o);
	return rc;
}

static int load_config(struct mrcd_cfg *cfg, const struct args *a)
{
	char err[512];
	mrcd_cfg_default(cfg);
	const char *path = a->conf ? a->conf : MRCD_CONF_DEFAULT;
	int rc = mrcd_cfg_load(cfg, path, err, sizeof(err));
	if (rc && !(rc == -ENOENT && !a->conf)) {
		fprintf(stderr, "mrcd: %s\n", err);
		return rc;
	}
	for (int i = 0; i < a->nset; i++)
		if (mrcd_cfg_set(cfg, a->keys[i], a->vals[i], err, sizeof(err))) {
			fprintf(stderr, "mrcd: --%s: %s\n", a->keys[i], err);
			return -EINVAL;
		}
	if (mrcd_cfg_check(cfg, err, sizeof(err))) {
		fprintf(stderr, "mrcd: %s\n", err);
		return -EINVAL;
	}
	return 0;
}

static struct args g_args;

/* Logged, and told to systemd so `systemctl status` shows why. */
static void startup_failed(int rc, const char *err)
{
	mrcd_log(MRCD_LOG_ERR, "%s", err);
	char msg[700];
	snprintf(msg, sizeof(msg), "STATUS=failed: %.600s\nERRNO=%d", err, rc < 0 ? -rc : rc);
	sd_notify(0, msg);
}

#define DRAIN_NS 5000000000ull   /* in-flight work gets 5 s to complete */

/* Shutdown drains: work already posted may complete for DRAIN_NS; what is
 * still unfinished then completes with -ESHUTDOWN, so no client waits on a
 * completion that will never come.  A second signal stops at once. */
static void on_drain(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct mrcd *d = w->data;
	(void)revents;
	uint64_t now = mrcd_now();
	uint32_t busy = mrce_busy_qps(d->eng);
	if (busy && now < d->drain_deadline)
		return;
	if (busy)
		mrcd_log(MRCD_LOG_WARNING, "shutdown: %u QPs still busy after %llu s: their work fails with ESHUTDOWN",
			 mrce_abort_all(d->eng, now, -ESHUTDOWN),
			 (unsigned long long)(DRAIN_NS / 1000000000ull));
	mrcd_flush(d);
	ev_timer_stop(loop, w);
	ev_break(loop, EVBREAK_ALL);
}

static void on_stop(struct ev_loop *loop, ev_signal *w, int revents)
{
	struct mrcd *d = w->data;
	(void)revents;
	if (d->stopping) {
		mrcd_log(MRCD_LOG_NOTICE, "signal %d again: stopping now", w->signum);
		ev_break(loop, EVBREAK_ALL);
		return;
	}
	d->stopping = 1;
	uint32_t busy = mrce_busy_qps(d->eng);
	mrcd_log(MRCD_LOG_NOTICE, "signal %d: shutting down (%u busy QPs draining)", w->signum, busy);
	sd_notify(0, "STOPPING=1");
	d->drain_deadline = mrcd_now() + DRAIN_NS;
	ev_timer_init(&d->drain, on_drain, 0.0, 0.01);
	d->drain.data = d;
	ev_timer_start(loop, &d->drain);
}

/* SIGHUP: re-read the configuration and the topology.  A topology of the
 * same shape (planes, hosts, paths) is applied without dropping a QP: only
 * the routes behind the EVs change.  Keys that only tune behaviour take
 * effect now; host, socket and port need a restart (saying so beats
 * silently dropping every QP). */
static void on_hup(struct ev_loop *loop, ev_signal *w, int revents)
{
	struct mrcd *d = w->data;
	(void)loop;
	(void)revents;
	char mono[64];
	snprintf(mono, sizeof(mono), "RELOADING=1\nMONOTONIC_USEC=%llu",
		 (unsigned long long)(mrcd_now() / 1000));
	sd_notify(0, mono);
	struct mrcd_cfg n;
	char err[512];
	if (load_config(&n, &g_args)) {
		mrcd_log(MRCD_LOG_ERR, "reload failed: keeping the running configuration");
		sd_notify(0, "STATUS=reload failed: configuration refused, the running one is kept");
	} else {
		if (strcmp(n.host, d->cfg.host) || strcmp(n.socket, d->cfg.socket) ||
		    n.port != d->cfg.port || !n.topology[0] != !d->cfg.topology[0])
			mrcd_log(MRCD_LOG_WARNING, "reload: host/socket/port changes need a restart");
		else if (n.topology[0] && mrcd_topology_reload(d, n.topology, err, sizeof(err))) {
			mrcd_log(MRCD_LOG_ERR, "reload: topology kept: %s", err);
			char st[600];
			snprintf(st, sizeof(st), "STATUS=reload: topology kept: %.500s", err);
			sd_notify(0, st);
		} else if (n.topology[0]) {
			snprintf(d->cfg.topology, sizeof(d->cfg.topology), "%s", n.topology);
		}
		mrcd_log_level = (int)n.log_level;
		d->cfg.log_level = n.log_level;
		mrcd_log(MRCD_LOG_NOTICE, "configuration reloaded");
	}
	sd_notify(0, "READY=1");
}

static void on_watchdog(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)w;
	(void)revents;
	sd_notify(0, "WATCHDOG=1");
}

/* --check: everything but opening sockets: config, key and topology. */
static int check_only(const struct mrcd_cfg *cfg)
{
	char err[512] = "";
	struct mrc_auth *key;
	const char *why = "";
	if (mrc_auth_key_load(cfg->key_file, &key, &why)) {
		fprintf(stderr, "mrcd: cluster key %s (key_file): %s; `mrcd --genkey PATH` "
			"makes one, to copy to every host (docs/operator.md)\n", cfg->key_file, why);
		return 1;
	}
	mrc_auth_free(key);
	if (cfg->topology[0]) {
		struct mrc_topo *t;
		if (mrc_topo_load(cfg->topology, &t, err, sizeof(err))) {
			fprintf(stderr, "mrcd: %s\n", err);
			return 1;
		}
		uint32_t h;
		if (mrc_topo_host_lookup(t, cfg->host, &h)) {
			fprintf(stderr, "mrcd: host '%s' is not in %s\n", cfg->host,
				cfg->topology);
			mrc_topo_free(t);
			return 1;
		}
		printf("mrcd: configuration ok: topology %s (%u planes, %u hosts), host %s\n",
		       cfg->topology, t->planes, t->n_hosts, cfg->host);
		mrc_topo_free(t);
	} else {
		printf("mrcd: configuration ok: single-host loopback fabric\n");
	}
	return 0;
}

/* Signals, the systemd watchdog and READY=1, then the loop until a
 * signal stops it. */
static void run_loop(struct mrcd *d)
{
	ev_signal_init(&d->sig_term, on_stop, SIGTERM);
	ev_signal_init(&d->sig_int, on_stop, SIGINT);
	ev_signal_init(&d->sig_hup, on_hup, SIGHUP);
	d->sig_term.data = d->sig_int.data = d->sig_hup.data = d;
	ev_signal_start(d->loop, &d->sig_term);
	ev_signal_start(d->loop, &d->sig_int);
	ev_signal_start(d->loop, &d->sig_hup);
	uint64_t wd_usec = 0;
	ev_timer wd;
	if (sd_watchdog_enabled(0, &wd_usec) > 0 && wd_usec) {
		ev_timer_init(&wd, on_watchdog, wd_usec / 2e6, wd_usec / 2e6);
		ev_timer_start(d->loop, &wd);
	}
	mrcd_log(MRCD_LOG_NOTICE, "mrcd " MRC_VERSION " ready: host %u of %u, %u plane%s, socket %s",
		 d->self, d->nhosts, d->nplanes, d->nplanes > 1 ? "s" : "", d->cfg.socket);
	char status[512];
	snprintf(status, sizeof(status), "READY=1\nSTATUS=host %u, %u planes, %s",
		 d->self, d->nplanes, d->topo ? d->cfg.topology : "loopback");
	sd_notify(0, status);
	ev_run(d->loop, 0);
}

int main(int argc, char **argv)
{
	static struct mrcd d;
	if (parse_args(argc, argv, &g_args)) {
		usage(stderr);
		return 2;
	}
	if (g_args.genkey) {
		const char *why = "";
		if (mrc_auth_key_generate(g_args.genkey, &why)) {
			fprintf(stderr, "mrcd: --genkey %s: %s\n", g_args.genkey, why);
			return 1;
		}
		printf("mrcd: wrote a new cluster key to %s; copy it to every host of the "
		       "fabric (owner root, mode 0600)\n", g_args.genkey);
		return 0;
	}
	if (load_config(&d.cfg, &g_args))
		return 1;
	mrcd_log_level = (int)d.cfg.log_level;
	signal(SIGPIPE, SIG_IGN);
	/* Each QP holds eventfds (doorbells): raise the soft fd limit to the
	 * hard one so thousands of QPs fit (systemd sets LimitNOFILE). */
	struct rlimit rl;
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	char err[512] = "";
	if (mrcd_cfg_port_exposed(&d.cfg, err, sizeof(err))) {
		if (g_args.check)
			fprintf(stderr, "mrcd: warning: %s\n", err);
		else
			mrcd_log(MRCD_LOG_WARNING, "%s", err);
	}
	err[0] = 0;
	if (g_args.check) {
		return check_only(&d.cfg) ? 1 : 0;
	}
	int rc;
	if ((rc = mrcd_core_init(&d, err, sizeof(err)))) {
		startup_failed(rc, err);
		mrcd_core_fini(&d);
		return 1;
	}
	if ((rc = mrcd_clients_start(&d, &d.cfg, err, sizeof(err)))) {
		startup_failed(rc, err);
		mrcd_core_fini(&d);
		return 1;
	}
	if ((rc = mrcd_oper_start(&d, err, sizeof(err)))) {
		startup_failed(rc, err);
		mrcd_clients_stop(&d);
		mrcd_core_fini(&d);
		return 1;
	}
	mrcd_oper_restore(&d);   /* saved admin state, before READY=1 */
	run_loop(&d);
	mrcd_oper_stop(&d);
	mrcd_clients_stop(&d);
	mrcd_flush(&d);
	mrcd_core_fini(&d);
	mrcd_log(MRCD_LOG_NOTICE, "stopped");
	return 0;
}
