/* The power model's parameters file and what it reports: a table, JSON,
 * the waveform and spectrum as data and gnuplot PNGs (docs/power.md). */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/errf.h"
#include "sim/power.h"

void mrc_sim_power_text(const struct mrc_sim_power *pw, FILE *f)
{
	const struct mrc_sim_power_params *p = &pw->p;
	fprintf(f, "power: %u hosts, %u steps, x%g time, %g ms samples, band %g-%g Hz\n",
		pw->hosts, pw->steps, p->time_scale, p->res_ms, p->band_lo_hz, p->band_hi_hz);
	fprintf(f, "%-8s %9s %7s %8s %8s %8s %9s %7s %7s %8s %7s\n", "lever", "step_ms", "cost",
		"mean_MW", "p2t_MW", "ramp", "peak_Hz", "band", "vs_none", "energy", "");
	for (int i = 0; i < MRC_SIM_PW_NVARIANTS; i++) {
		const struct mrc_sim_power_fig *v = &pw->v[i];
		if (!v->on)
			continue;
		fprintf(f, "%-8s %9.2f %6.2f%% %8.3f %8.3f %8.2f %9.3f %6.1f%% %6.1f%% %+7.2f%%\n",
			mrc_sim_power_names[i], v->step_ms, 100 * v->step_cost, v->mean_mw, v->p2t_mw,
			v->ramp_mw_s, v->peak_hz, 100 * v->band_share, 100 * v->band_vs_none,
			100 * v->energy_cost);
	}
	fprintf(f, "(ramp: steepest MW/s; band: in-band share of the variant's swing energy;\n"
		" vs_none: its in-band energy over the no-lever swing's; energy: vs no lever)\n");
}

char *mrc_sim_power_json(const struct mrc_sim_power *pw)
{
	json_t *par = mrc_sim_power_params_json(&pw->p);
	json_t *lev = json_object();
	for (int i = 0; i < MRC_SIM_PW_NVARIANTS; i++) {
		const struct mrc_sim_power_fig *v = &pw->v[i];
		if (!v->on)
			continue;
		json_object_set_new(lev, mrc_sim_power_names[i], json_pack(
			"{s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f}",
			"step_ms", v->step_ms, "step_cost", v->step_cost, "mean_mw", v->mean_mw,
			"peak_mw", v->peak_mw, "trough_mw", v->trough_mw, "p2t_mw", v->p2t_mw,
			"ramp_mw_s", v->ramp_mw_s, "band_share", v->band_share,
			"band_vs_none", v->band_vs_none, "peak_hz", v->peak_hz,
			"energy_cost", v->energy_cost, "samples", (double)v->n));
	}
	json_t *root = json_pack("{s:i,s:i,s:o,s:o}", "hosts", (json_int_t)pw->hosts,
				 "steps", (json_int_t)pw->steps, "params", par, "levers", lev);
	char *out = root ? json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(6)) : NULL;
	json_decref(root);
	return out;
}

/* DIR/NAME.dat: time (s) and MW per variant; spectrum: Hz and MW^2. */
static int write_dat(const struct mrc_sim_power *pw, const char *dir, int spec)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s.dat", dir, spec ? "spectrum" : "wave");
	FILE *f = fopen(path, "w");
	if (!f)
		return -errno;
	fprintf(f, "# %s", spec ? "Hz" : "s");
	for (int i = 0; i < MRC_SIM_PW_NVARIANTS; i++)
		if (pw->v[i].on)
			fprintf(f, " %s", mrc_sim_power_names[i]);
	fprintf(f, "\n");
	/* Variants differ in length (stagger lengthens the run): each is
	 * sampled at its own index, a blank column past its end. */
	size_t n = 0;
	for (int i = 0; i < MRC_SIM_PW_NVARIANTS; i++)
		if (pw->v[i].on && pw->v[i].n > n)
			n = pw->v[i].n;
	size_t rows = spec ? pw->v[0].n / 2 + 1 : n;
	for (size_t k = spec ? 1 : 0; k < rows; k++) {
		double x = spec ? k * 1e3 / (pw->v[0].n * pw->p.res_ms) : k * pw->p.res_ms / 1e3;
		fprintf(f, "%.6g", x);
		for (int i = 0; i < MRC_SIM_PW_NVARIANTS; i++) {
			const struct mrc_sim_power_fig *v = &pw->v[i];
			if (!v->on)
				continue;
			/* spectra on the no-lever run's frequency grid */
			size_t j = spec ? (size_t)llround(x * v->n * pw->p.res_ms / 1e3) : k;
			if (spec ? j > v->n / 2 : j >= v->n)
				fprintf(f, " NaN");
			else
				fprintf(f, " %.6g", spec ? v->spec[j] : v->wave[j]);
		}
		fprintf(f, "\n");
	}
	return fclose(f) ? -errno : 0;
}

static int plot(const struct mrc_sim_power *pw, const char *dir, int *plotted)
{
	char gp[4096];
	snprintf(gp, sizeof(gp), "%s/power.gp", dir);
	FILE *f = fopen(gp, "w");
	if (!f)
		return -errno;
	fprintf(f, "set terminal pngcairo size 1000,560\nset grid\nset key outside\n"
		"set output '%s/power_wave.png'\nset title 'job power (%u hosts)'\n"
		"set xlabel 'time (s)'\nset ylabel 'MW'\nplot", dir, pw->hosts);
	int col = 2;
	for (int i = 0; i < MRC_SIM_PW_NVARIANTS; i++)
		if (pw->v[i].on) {
			fprintf(f, "%s '%s/wave.dat' u 1:%d w l t '%s'", col > 2 ? "," : "", dir,
				col, mrc_sim_power_names[i]);
			col++;
		}
	fprintf(f, "\nset output '%s/power_spectrum.png'\nset title 'swing power spectrum'\n"
		"set xlabel 'Hz'\nset ylabel 'MW^2'\nset logscale xy\n"
		"set arrow from %g, graph 0 to %g, graph 1 nohead dt 2\n"
		"set arrow from %g, graph 0 to %g, graph 1 nohead dt 2\nplot", dir,
		pw->p.band_lo_hz, pw->p.band_lo_hz, pw->p.band_hi_hz, pw->p.band_hi_hz);
	col = 2;
	for (int i = 0; i < MRC_SIM_PW_NVARIANTS; i++)
		if (pw->v[i].on) {
			fprintf(f, "%s '%s/spectrum.dat' u 1:%d w l t '%s'", col > 2 ? "," : "", dir,
				col, mrc_sim_power_names[i]);
			col++;
		}
	fprintf(f, "\n");
	if (fclose(f))
		return -errno;
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (!pid) {
		execlp("gnuplot", "gnuplot", gp, (char *)NULL);
		_exit(127);
	}
	int st;
	if (waitpid(pid, &st, 0) < 0)
		return -errno;
	*plotted = WIFEXITED(st) && !WEXITSTATUS(st);
	if (!*plotted)
		fprintf(stderr, "mrcsim: power plots skipped: gnuplot %s did not run (exit %d; "
			"install gnuplot-nox); the data is in %s\n", gp,
			WIFEXITED(st) ? WEXITSTATUS(st) : -1, dir);
	return 0;
}

int mrc_sim_power_write(const struct mrc_sim_power *pw, const char *dir, int *plotted,
			char *err, size_t errlen)
{
	*plotted = 0;
	if (mkdir(dir, 0777) && errno != EEXIST)
		return mrc__errf(err, errlen, "power: %s: %s", dir, strerror(errno));
	char path[4096];
	snprintf(path, sizeof(path), "%s/power.json", dir);
	char *j = mrc_sim_power_json(pw);
	FILE *f = j ? fopen(path, "w") : NULL;
	int bad = !f || fputs(j, f) < 0;
	if (f && fclose(f))
		bad = 1;
	free(j);
	int rc = bad ? -EIO : write_dat(pw, dir, 0);
	if (!rc)
		rc = write_dat(pw, dir, 1);
	if (!rc)
		rc = plot(pw, dir, plotted);
	return rc ? mrc__errf(err, errlen, "power: writing %s: %s", dir, strerror(-rc == EIO ? EIO : -rc)) : 0;
}
