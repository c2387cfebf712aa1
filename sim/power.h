/* The power model of a step run (issue 35, docs/power.md): every host's
 * draw from its phases (mrc_sim_phases), the job's waveform at a fixed
 * resolution, its spectrum (fftw3), the share of the swing's energy in a
 * band, the steepest ramp and the peak-to-trough; and the levers that
 * flatten it (stagger, pace, floor), each applied to the same run. */
#ifndef MRC_SIM_POWER_H
#define MRC_SIM_POWER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sim/sim.h"

struct mrc_sim_power_params {
	/* per host (one GPU with its share of the server), watts */
	double compute_w;          /* GPU while computing */
	double comm_w;             /* GPU while waiting on the fabric */
	double other_w;            /* CPU, memory, fans, switches: constant */
	double nic_idle_w, nic_max_w; /* NIC: idle, at line rate */
	double time_scale;         /* waveform time = simulated time x this */
	double res_ms;             /* waveform resolution */
	double band_lo_hz, band_hi_hz;
	/* levers (0: off) */
	uint32_t stagger_groups;   /* groups of consecutive hosts (pods) */
	double stagger_ms;         /* group g enters each step g x this later */
	double pace_ms;            /* hosts' phase edges spread over this */
	double floor;              /* filler: GPU held at floor x compute_w */
	double floor_ramp_ms;      /* filler released linearly over this */
};

void mrc_sim_power_default(struct mrc_sim_power_params *p);
/* A JSON object of the struct's keys (any subset); unknown keys, wrong
 * types and out-of-range values are errors naming the key. */
int mrc_sim_power_load_json(struct mrc_sim_power_params *p, const char *text, size_t len,
			    char *err, size_t errlen);

/* The params as a JSON object (sim/power_params.c). */
struct json_t;
struct json_t *mrc_sim_power_params_json(const struct mrc_sim_power_params *p);

enum { MRC_SIM_PW_NONE, MRC_SIM_PW_STAGGER, MRC_SIM_PW_PACE, MRC_SIM_PW_FLOOR,
       MRC_SIM_PW_ALL, MRC_SIM_PW_NVARIANTS };

struct mrc_sim_power_fig {
	int on;                    /* this variant was computed */
	double step_ms;            /* mean step in waveform time */
	double step_cost;          /* step_ms / the no-lever step_ms - 1 */
	double mean_mw, peak_mw, trough_mw, p2t_mw;
	double ramp_mw_s;          /* steepest change between samples */
	double band_share;         /* in-band share of this swing's energy */
	double band_vs_none;       /* in-band energy / no-lever swing energy */
	double peak_hz;            /* spectrum's largest bin above DC */
	double energy_cost;        /* energy / the no-lever energy - 1 */
	double *wave;              /* MW per sample, n of them */
	double *spec;              /* |X(f)|^2 per bin, n / 2 + 1 */
	size_t n;
};

struct mrc_sim_power {
	struct mrc_sim_power_params p;
	uint32_t hosts, steps;
	struct mrc_sim_power_fig v[MRC_SIM_PW_NVARIANTS];
};

/* The no-lever waveform and each lever the params turn on, alone and all
 * together, from one step run.  -EINVAL without a finished step run. */
int mrc_sim_power_run(const struct mrc_sim *s, const struct mrc_sim_power_params *p,
		      struct mrc_sim_power *out, char *err, size_t errlen);
void mrc_sim_power_free(struct mrc_sim_power *pw);
extern const char *const mrc_sim_power_names[MRC_SIM_PW_NVARIANTS];

/* sim/power_out.c */
void mrc_sim_power_text(const struct mrc_sim_power *pw, FILE *f);
char *mrc_sim_power_json(const struct mrc_sim_power *pw);
/* DIR/power.json, wave.dat, spectrum.dat, and PNGs when gnuplot is there
 * (*plotted 0 and a message on stderr when it is not). */
int mrc_sim_power_write(const struct mrc_sim_power *pw, const char *dir, int *plotted,
			char *err, size_t errlen);

#endif
