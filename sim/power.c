/* The power model (docs/power.md): a host draws compute_w while one of
 * its compute phases runs and comm_w (plus the floor's filler and its
 * NIC's draw) otherwise; the job's draw is their sum, sampled at res_ms
 * after stretching the simulated time by time_scale (a simulated step is
 * ~1.7 ms, a real one seconds: the scale keeps the step's shape and puts
 * its frequency where the grid cares).  The levers are applied to the
 * same run's phases, so their figures differ only by the lever. */
#include <errno.h>
#include <fftw3.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/errf.h"
#include "sim/power.h"
#include "sim/sim_int.h"

const char *const mrc_sim_power_names[MRC_SIM_PW_NVARIANTS] = {
	"none", "stagger", "pace", "floor", "all" };

/* Adds v0 + slope x (t - a) over [a, b) (ms) to the samples it overlaps,
 * as their mean over each sample.  The power stage's hot loop (every
 * host's every phase per variant: ~2e9 sample updates at 8,192 hosts):
 * comparisons instead of fmax/fmin calls, and a flat phase (slope 0,
 * nearly all) without the slope term, which only added an exact 0: the
 * same values bit for bit. */
static void add_lin(double *w, size_t n, double res, double a, double b, double v0, double slope)
{
	if (b <= a)
		return;
	size_t i = (size_t)(a / res);
	if (slope == 0) {
		for (; i < n && i * res < b; i++) {
			double x = i * res, y = (i + 1) * res;
			x = a > x ? a : x;
			y = b < y ? b : y;
			if (y > x)
				w[i] += v0 * (y - x) / res;
		}
		return;
	}
	for (; i < n && i * res < b; i++) {
		double x = fmax(a, i * res), y = fmin(b, (i + 1) * res);
		if (y <= x)
			continue;
		double area = v0 * (y - x) + slope * ((y - a) * (y - a) - (x - a) * (x - a)) / 2;
		w[i] += area / res;
	}
}

struct pw_ctx {
	const struct mrc_sim *s;
	const struct mrc_sim_power_params *p;
	uint32_t H, steps;
	double scale_ms;           /* ms of waveform per simulated ns */
	double *nic_w;             /* per host: NIC's extra draw while waiting */
};

static int is_compute(uint8_t kind)
{
	return kind <= MRC_SIM_PH_EXPERT;
}

/* The floor's filler over a wait [a, b): held at F, or released linearly
 * over floor_ramp_ms. */
static void add_filler(const struct pw_ctx *c, double *w, size_t n, double a, double b)
{
	const struct mrc_sim_power_params *p = c->p;
	double F = p->floor * p->compute_w - p->comm_w;
	if (F <= 0)
		return;
	if (p->floor_ramp_ms <= 0) {
		add_lin(w, n, p->res_ms, a, b, F, 0);
		return;
	}
	add_lin(w, n, p->res_ms, a, fmin(b, a + p->floor_ramp_ms), F, -F / p->floor_ramp_ms);
}

/* Host h's draw above the constant: its compute phases, the filler in
 * the time between them (up to the end T), its NIC while it waits.
 * Step k is shifted by k x O + off (a synchronous step waits for the
 * last group: docs/power.md "Levers"). */
static void add_host(const struct pw_ctx *c, double *w, size_t n, uint32_t h, double off,
		     double O, double T, int floor)
{
	const struct mrc_sim_power_params *p = c->p;
	uint32_t ni;
	const struct mrc_sim_phase_iv *iv = mrc_sim_phases(c->s, h, &ni);
	double wait0 = 0;          /* the current wait's start */
	for (uint32_t i = 0; iv && i < ni; i++) {
		double sh = iv[i].step * O + off;
		double a = iv[i].t0_ns * c->scale_ms + sh, b = iv[i].t1_ns * c->scale_ms + sh;
		if (!is_compute(iv[i].kind)) {
			add_lin(w, n, p->res_ms, a, b, c->nic_w[h], 0);
			continue;
		}
		if (floor && a > wait0)
			add_filler(c, w, n, wait0, a);
		add_lin(w, n, p->res_ms, a, b, p->compute_w - p->comm_w, 0);
		wait0 = b;
	}
	if (floor && T > wait0)
		add_filler(c, w, n, wait0, T);
}

/* Per host: the NIC's draw above idle while it waits, its bytes sent
 * spread over its waits at the fabric's line rate (planes x rate). */
static int nic_draw(struct pw_ctx *c)
{
	const struct mrc_sim *s = c->s;
	c->nic_w = calloc(c->H, sizeof(double));
	double *bytes = calloc(c->H, sizeof(double));
	if (!c->nic_w || !bytes) {
		free(bytes);
		return -ENOMEM;
	}
	for (uint32_t f = 0; f < s->n_flows; f++)
		if (s->flows[f].src < c->H)
			bytes[s->flows[f].src] += (double)s->flows[f].size;
	double bps = (double)s->fab.rate_mbit * 1e6 * (s->fab.planes ? s->fab.planes : 1);
	for (uint32_t h = 0; h < c->H; h++) {
		uint32_t ni;
		const struct mrc_sim_phase_iv *iv = mrc_sim_phases(s, h, &ni);
		double wait_ns = 0;
		for (uint32_t i = 0; iv && i < ni; i++)
			if (!is_compute(iv[i].kind))
				wait_ns += (double)(iv[i].t1_ns - iv[i].t0_ns);
		double util = wait_ns > 0 ? bytes[h] * 8 / (bps * wait_ns * 1e-9) : 0;
		c->nic_w[h] = (c->p->nic_max_w - c->p->nic_idle_w) * fmin(1, util);
	}
	free(bytes);
	return 0;
}

static uint64_t run_end_ns(const struct pw_ctx *c)
{
	uint64_t end = 0;
	for (uint32_t h = 0; h < c->H; h++) {
		uint32_t ni;
		const struct mrc_sim_phase_iv *iv = mrc_sim_phases(c->s, h, &ni);
		if (iv && ni && iv[ni - 1].t1_ns > end)
			end = iv[ni - 1].t1_ns;
	}
	return end;
}

/* Swing power (mean square about the mean, MW^2) per bin: |X_k|^2 / n^2,
 * one-sided (x2 but DC and Nyquist), so bins sum to the variance. */
static int spectrum(struct mrc_sim_power_fig *v)
{
	size_t n = v->n, nb = n / 2 + 1;
	double *in = fftw_malloc(n * sizeof(double));
	fftw_complex *out = fftw_malloc(nb * sizeof(fftw_complex));
	v->spec = calloc(nb, sizeof(double));
	if (!in || !out || !v->spec) {
		fftw_free(in);
		fftw_free(out);
		return -ENOMEM;
	}
	fftw_plan pl = fftw_plan_dft_r2c_1d((int)n, in, out, FFTW_ESTIMATE);
	for (size_t i = 0; i < n; i++)
		in[i] = v->wave[i] - v->mean_mw;
	fftw_execute(pl);
	for (size_t k = 1; k < nb; k++) {
		double m = out[k][0] * out[k][0] + out[k][1] * out[k][1];
		v->spec[k] = m / ((double)n * n) * ((n % 2 == 0 && k == n / 2) ? 1 : 2);
	}
	fftw_destroy_plan(pl);
	fftw_free(in);
	fftw_free(out);
	return 0;
}

/* Figures of a variant's waveform; none is the no-lever one (NULL when
 * this is it). */
static int figures(struct mrc_sim_power_fig *v, const struct mrc_sim_power_params *p,
		   uint32_t steps, const struct mrc_sim_power_fig *none)
{
	size_t n = v->n;
	double sum = 0, pk = -INFINITY, tr = INFINITY, ramp = 0;
	for (size_t i = 0; i < n; i++) {
		sum += v->wave[i];
		pk = fmax(pk, v->wave[i]);
		tr = fmin(tr, v->wave[i]);
		if (i)
			ramp = fmax(ramp, fabs(v->wave[i] - v->wave[i - 1]) / (p->res_ms / 1e3));
	}
	v->mean_mw = sum / n;
	v->peak_mw = pk;
	v->trough_mw = tr;
	v->p2t_mw = pk - tr;
	v->ramp_mw_s = ramp;
	v->step_ms = n * p->res_ms / steps;
	if (spectrum(v))
		return -ENOMEM;
	double tot = 0, band = 0, best = -1, hz_per_bin = 1e3 / (n * p->res_ms);
	for (size_t k = 1; k <= n / 2; k++) {
		double f = k * hz_per_bin;
		tot += v->spec[k];
		if (f >= p->band_lo_hz && f <= p->band_hi_hz)
			band += v->spec[k];
		if (v->spec[k] > best) {
			best = v->spec[k];
			v->peak_hz = f;
		}
	}
	v->band_share = tot > 0 ? band / tot : 0;
	const struct mrc_sim_power_fig *b = none ? none : v;
	double btot = 0;
	for (size_t k = 1; k <= b->n / 2; k++)
		btot += b->spec[k];
	v->band_vs_none = btot > 0 ? band / btot : 0;
	v->step_cost = v->step_ms / b->step_ms - 1;
	v->energy_cost = (sum / n * v->step_ms) / (b->mean_mw * b->step_ms) - 1;
	return 0;
}

/* One variant: stagger/pace on or off, floor on or off. */
static int variant(const struct pw_ctx *c, struct mrc_sim_power_fig *v, int stagger, int pace,
		   int floor, const struct mrc_sim_power_fig *none)
{
	const struct mrc_sim_power_params *p = c->p;
	uint32_t G = stagger ? p->stagger_groups : 0;
	double O = 0;              /* the latest host's offset */
	if (G > 1)
		O += (G - 1) * p->stagger_ms;
	if (pace)
		O += p->pace_ms * (c->H - 1) / c->H;
	double T = run_end_ns(c) * c->scale_ms + c->steps * O;
	v->n = (size_t)(T / p->res_ms);
	if (v->n < 4)
		return -EINVAL;
	v->wave = calloc(v->n, sizeof(double));
	if (!v->wave)
		return -ENOMEM;
	double base = p->comm_w + p->other_w + p->nic_idle_w;
	for (uint32_t h = 0; h < c->H; h++) {
		double off = 0;
		if (G > 1)
			off += (double)((uint64_t)h * G / c->H) * p->stagger_ms;
		if (pace)
			off += p->pace_ms * h / c->H;
		add_host(c, v->wave, v->n, h, off, O, T, floor);
	}
	for (size_t i = 0; i < v->n; i++)
		v->wave[i] = (v->wave[i] + base * c->H) / 1e6;
	v->on = 1;
	return figures(v, p, c->steps, none);
}

int mrc_sim_power_run(const struct mrc_sim *s, const struct mrc_sim_power_params *p,
		      struct mrc_sim_power *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	out->p = *p;
	struct mrc_sim_step_result r;
	if (mrc_sim_step_result(s, &r) || !r.hosts || !r.done || !r.steps)
		return mrc__errf(err, errlen, "power: needs a finished step workload (--workload step:...)");
	struct pw_ctx c = { .s = s, .p = p, .H = r.hosts, .steps = r.steps,
			    .scale_ms = p->time_scale * 1e-6 };
	out->hosts = r.hosts;
	out->steps = r.steps;
	if (nic_draw(&c))
		return mrc__errf(err, errlen, "power: out of memory");
	struct mrc_sim_power_fig *v = out->v;
	int st = p->stagger_groups > 1 && p->stagger_ms > 0, pc = p->pace_ms > 0,
	    fl = p->floor > 0;
	int rc = variant(&c, &v[MRC_SIM_PW_NONE], 0, 0, 0, NULL);
	if (!rc && st)
		rc = variant(&c, &v[MRC_SIM_PW_STAGGER], 1, 0, 0, &v[0]);
	if (!rc && pc)
		rc = variant(&c, &v[MRC_SIM_PW_PACE], 0, 1, 0, &v[0]);
	if (!rc && fl)
		rc = variant(&c, &v[MRC_SIM_PW_FLOOR], 0, 0, 1, &v[0]);
	if (!rc && st + pc + fl > 1)
		rc = variant(&c, &v[MRC_SIM_PW_ALL], st, pc, fl, &v[0]);
	free(c.nic_w);
	if (rc)
		return mrc__errf(err, errlen, "power: %s", rc == -ENOMEM ? "out of memory" :
				 "the run is shorter than 4 samples (raise time_scale or lower res_ms)");
	return 0;
}

void mrc_sim_power_free(struct mrc_sim_power *pw)
{
	for (int i = 0; i < MRC_SIM_PW_NVARIANTS; i++) {
		free(pw->v[i].wave);
		free(pw->v[i].spec);
		pw->v[i].wave = pw->v[i].spec = NULL;
	}
}
