/* mrcsim: command line front end of the simulator (sim/sim.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/power.h"
#include "sim/sim.h"

static void usage(FILE *f)
{
	fprintf(f,
"usage: mrcsim [--scenario FILE.json] [--KEY VALUE ...] [-j] [--json-out FILE]\n"
"              [--plot DIR] [--phases-out FILE] [--timing] [--quiet]\n"
"Runs the real MRC engine on every host of a simulated fabric.\n"
"  -j            JSON report on stdout (instead of the summary table)\n"
"  --json-out F  also write the JSON report to F\n"
"  --plot DIR    gnuplot PNGs (goodput, EV states, FCT CDF) and data into DIR\n"
"  --phases-out F  step workload: each host's phases (CSV: host, step,\n"
"                phase, start_ns, end_ns), for a power model (issue 35)\n"
"  --power P     step workload: the power model (docs/power.md), P a JSON\n"
"                params file or 'default'; its table after the report\n"
"                (up to 16 --power, each its own table)\n"
"  --power-out D power.json, wave/spectrum data and PNGs into D (the\n"
"                second --power's into D/2, ...)\n"
"  --timing      add wall time, events/s and memory to the report\n"
"  --quiet       no progress line on stderr (default: on when stderr is a tty)\n"
"Example:\n"
"  mrcsim --topo fattree:k=12,rate=100G --workload permutation:size=2M --mode spray\n\n%s",
		mrc_sim_cfg_help());
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 4096, n = 0;
	char *b = malloc(cap);
	while (b) {
		size_t r = fread(b + n, 1, cap - n, f);
		n += r;
		if (n < cap)
			break;
		char *nb = realloc(b, cap * 2);
		if (!nb) {
			free(b);
			b = NULL;
			break;
		}
		b = nb;
		cap *= 2;
	}
	fclose(f);
	*len = n;
	return b;
}

static int write_phases(const struct mrc_sim *s, const char *path)
{
	static const char *names[] = { "fwd", "bwd", "expert", "a2a_wait", "grad_wait" };
	FILE *f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "mrcsim: --phases-out %s: %s\n", path, strerror(errno));
		return -1;
	}
	fprintf(f, "host,step,phase,start_ns,end_ns\n");
	struct mrc_sim_step_result r;
	mrc_sim_step_result(s, &r);   /* r.hosts 0 without a step workload */
	for (uint32_t h = 0; h < r.hosts; h++) {
		uint32_t n;
		const struct mrc_sim_phase_iv *iv = mrc_sim_phases(s, h, &n);
		for (uint32_t i = 0; iv && i < n; i++)
			fprintf(f, "%u,%u,%s,%llu,%llu\n", h, iv[i].step,
				iv[i].kind < 5 ? names[iv[i].kind] : "?",
				(unsigned long long)iv[i].t0_ns, (unsigned long long)iv[i].t1_ns);
	}
	if (fclose(f)) {
		fprintf(stderr, "mrcsim: --phases-out %s: %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* --power / --power-out (issue 35): the model over the run's phases. */
static int power_report(const struct mrc_sim *s, const char *params, const char *dir)
{
	struct mrc_sim_power_params p;
	mrc_sim_power_default(&p);
	char err[MRC_SIM_ERRLEN];
	if (strcmp(params, "default")) {
		size_t len;
		char *text = slurp(params, &len);
		if (!text) {
			fprintf(stderr, "mrcsim: --power %s: %s\n", params, strerror(errno));
			return -1;
		}
		int rc = mrc_sim_power_load_json(&p, text, len, err, sizeof(err));
		free(text);
		if (rc) {
			fprintf(stderr, "mrcsim: %s: %s\n", params, err);
			return -1;
		}
	}
	struct mrc_sim_power pw;
	int plotted, rc = mrc_sim_power_run(s, &p, &pw, err, sizeof(err));
	if (!rc) {
		printf("power params: %s\n", params);
		mrc_sim_power_text(&pw, stdout);
		if (dir)
			rc = mrc_sim_power_write(&pw, dir, &plotted, err, sizeof(err));
	}
	if (rc)
		fprintf(stderr, "mrcsim: %s\n", err);
	mrc_sim_power_free(&pw);
	return rc ? -1 : 0;
}

int main(int argc, char **argv)
{
	struct mrc_sim_cfg cfg;
	mrc_sim_cfg_default(&cfg);
	cfg.progress = isatty(2);
	char err[MRC_SIM_ERRLEN];
	int json = 0, timing = 0, user_wl = 0;
	const char *json_out = NULL, *plot = NULL, *phases_out = NULL;
	const char *power[16] = { "default" }, *power_out = NULL;
	int npower = 0;
	struct mrc_sim_cfg base = cfg;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		}
		if (!strcmp(a, "-j") || !strcmp(a, "--json")) {
			json = 1;
			continue;
		}
		if (!strcmp(a, "--timing")) {
			timing = 1;
			continue;
		}
		if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) {
			cfg.progress = 0;
			continue;
		}
		if (strncmp(a, "--", 2) || i + 1 >= argc) {
			fprintf(stderr, "mrcsim: %s: expected --KEY VALUE (see --help)\n", a);
			return 2;
		}
		const char *v = argv[++i];
		if (!strcmp(a, "--json-out")) {
			json_out = v;
			continue;
		}
		if (!strcmp(a, "--phases-out")) {
			phases_out = v;
			continue;
		}
		if (!strcmp(a, "--power-out")) {
			power_out = v;
			continue;
		}
		if (!strcmp(a, "--power")) {
			if (npower == 16) {
				fprintf(stderr, "mrcsim: at most 16 --power\n");
				return 2;
			}
			power[npower++] = v;
			continue;
		}
		if (!strcmp(a, "--plot")) {
			plot = v;
			continue;
		}
		if (!strcmp(a, "--scenario")) {
			size_t len;
			char *text = slurp(v, &len);
			if (!text) {
				fprintf(stderr, "mrcsim: --scenario %s: %s\n", v, strerror(errno));
				return 2;
			}
			int rc = mrc_sim_cfg_load_json(&cfg, text, len, err, sizeof(err));
			free(text);
			if (rc) {
				fprintf(stderr, "mrcsim: %s: %s\n", v, err);
				return 2;
			}
			continue;
		}
		if (mrc_sim_cfg_set(&cfg, a + 2, v, err, sizeof(err))) {
			fprintf(stderr, "mrcsim: %s\n", err);
			return 2;
		}
	}
	user_wl = cfg.n_wl != base.n_wl;
	if (!user_wl)
		mrc_sim_cfg_set(&cfg, "workload", "permutation", err, sizeof(err));
	struct mrc_sim *s;
	if (mrc_sim_create(&cfg, &s, err, sizeof(err))) {
		fprintf(stderr, "mrcsim: %s\n", err);
		return 2;
	}
	if (mrc_sim_run(s, err, sizeof(err))) {
		fprintf(stderr, "mrcsim: %s\n", err);
		mrc_sim_destroy(s);
		return 1;
	}
	int rc = 0;
	char *j = NULL;
	if ((json || json_out) && mrc_sim_report_json(s, timing, &j)) {
		fprintf(stderr, "mrcsim: out of memory for the report\n");
		rc = 1;
	}
	if (json && j)
		fputs(j, stdout);
	else
		mrc_sim_report_text(s, timing, stdout);
	if (json_out && j) {
		FILE *f = fopen(json_out, "w");
		if (!f || fputs(j, f) < 0 || fclose(f)) {
			fprintf(stderr, "mrcsim: --json-out %s: %s\n", json_out, strerror(errno));
			rc = 1;
		}
	}
	free(j);
	if (phases_out && write_phases(s, phases_out))
		rc = 1;
	for (int k = 0; k < (npower ? npower : !!power_out); k++) {
		char dir[4096];
		if (power_out)
			snprintf(dir, sizeof(dir), k ? "%s/%d" : "%s", power_out, k + 1);
		if (power_report(s, power[k], power_out ? dir : NULL))
			rc = 1;
	}
	if (plot && mrc_sim_plot(s, plot, err, sizeof(err))) {
		fprintf(stderr, "mrcsim: %s\n", err);
		rc = 1;
	}
	struct mrc_sim_summary sum;
	mrc_sim_summary(s, &sum);
	if (sum.verified < 0) {
		fprintf(stderr, "mrcsim: received data differs from what was sent\n");
		rc = 1;
	}
	mrc_sim_destroy(s);
	return rc;
}
