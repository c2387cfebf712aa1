/* mrc-step's command line: options, then key=value pairs named as
 * mrcsim's step workload's (docs/sim.md "Training steps"). */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/parse.h"
#include "tools/step/step.h"

void mrc__step_defaults(struct step_par *p)
{
	*p = (struct step_par){ .layers = 8, .moe = 4, .steps = 20, .runs = 5, .warm = 2,
				.fwd_us = 50, .bwd_us = 100, .tick_us = 100, .tokens = 256,
				.tok = 4096, .topk = 2, .local = 2, .cap = 1.25, .skew = 0.5,
				.grad = 1u << 20, .bucket = 4u << 20, .seed = 1,
				.modes = 1 << STEP_BLOCKING | 1 << STEP_OVERLAP };
}

/* A duration in microseconds: a number, optionally ns, us, ms or s. */
static int duration_us(const char *s, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (end == s || errno || !(v >= 0) || !isfinite(v))
		return -EINVAL;
	double f = !*end || !strcmp(end, "us") ? 1 : !strcmp(end, "ns") ? 1e-3
		 : !strcmp(end, "ms") ? 1e3 : !strcmp(end, "s") ? 1e6 : -1;
	if (f < 0)
		return -EINVAL;
	*out = v * f;
	return 0;
}

static int real(const char *s, double lo, double hi, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (end == s || *end || errno || !(v >= lo && v <= hi))
		return -EINVAL;
	*out = v;
	return 0;
}

static int u32(const char *s, uint32_t lo, uint32_t hi, uint32_t *out)
{
	uint64_t v;
	int r = mrc__parse_u64(s, lo, hi, &v);
	if (!r)
		*out = (uint32_t)v;
	return r;
}

/* One key=value; moe_set: the MoE layer was named (else layers/2). */
static int pair(struct step_par *p, const char *k, const char *v, int *moe_set)
{
	if (!strcmp(k, "layers")) return u32(v, 1, 1024, &p->layers);
	if (!strcmp(k, "moe")) {
		*moe_set = 1;
		if (!strcmp(v, "none")) {
			p->moe = UINT32_MAX;
			return 0;
		}
		return u32(v, 0, 1023, &p->moe);
	}
	if (!strcmp(k, "steps")) return u32(v, 1, 64, &p->steps);
	if (!strcmp(k, "runs")) return u32(v, 1, 64, &p->runs);
	if (!strcmp(k, "warm")) return u32(v, 0, 64, &p->warm);
	if (!strcmp(k, "fwd")) return duration_us(v, &p->fwd_us);
	if (!strcmp(k, "bwd")) return duration_us(v, &p->bwd_us);
	if (!strcmp(k, "tick")) return duration_us(v, &p->tick_us);
	if (!strcmp(k, "tokens")) return mrc__parse_u64(v, 0, 1u << 20, &p->tokens);
	if (!strcmp(k, "tok")) return mrc__parse_size(v, &p->tok);
	if (!strcmp(k, "topk")) return u32(v, 1, 8, &p->topk);
	if (!strcmp(k, "local")) return u32(v, 0, 4096, &p->local);
	if (!strcmp(k, "cap")) return real(v, 0, 1e6, &p->cap);
	if (!strcmp(k, "skew")) return real(v, 0, 10, &p->skew);
	if (!strcmp(k, "grad")) return mrc__parse_size(v, &p->grad);
	if (!strcmp(k, "bucket")) return mrc__parse_size(v, &p->bucket);
	if (!strcmp(k, "bulk")) return mrc__parse_size(v, &p->bulk);
	if (!strcmp(k, "stage")) return mrc__parse_size(v, &p->stage);
	if (!strcmp(k, "stub")) {
		p->sleep = !strcmp(v, "sleep");
		return p->sleep || !strcmp(v, "spin") ? 0 : -EINVAL;
	}
	if (!strcmp(k, "seed")) return mrc__parse_u64(v, 0, UINT64_MAX, &p->seed);
	return -ENOENT;
}

static int opt(struct step_par *p, struct step_cli *cli, int o, char *arg)
{
	uint64_t v;
	switch (o) {
	case 'S': cli->sock = arg; return 0;
	case 's': cli->have_sid = 1; return u32(arg, 0, UINT32_MAX - 2, &cli->sid);
	case 'H': cli->have_host = 1; return u32(arg, 0, UINT32_MAX, &cli->root_host);
	case 'T':
		cli->have_timeout = 1;
		if (mrc__parse_u64(arg, 1, INT32_MAX, &v))
			return -EINVAL;
		cli->timeout_ms = (int)v;
		return 0;
	case 'j': p->json = 1; return 0;
	case 'D': p->stage_file = arg; return 0;
	case 'm':
		p->modes = !strcmp(arg, "blocking") ? 1 << STEP_BLOCKING
			 : !strcmp(arg, "overlap") ? 1 << STEP_OVERLAP
			 : !strcmp(arg, "both") ? 1 << STEP_BLOCKING | 1 << STEP_OVERLAP : 0;
		return p->modes ? 0 : -EINVAL;
	case 'k': {
		/* STEP:FILE: before step STEP of each run, rank 0 says so and
		 * waits for FILE (the script injects the fault, then makes it). */
		char *c = strchr(arg, ':');
		if (!c || !c[1])
			return -EINVAL;
		*c = 0;
		p->fault_file = c + 1;
		return u32(arg, 1, 63, &p->fault_step);
	}
	}
	return -EINVAL;
}

int mrc__step_parse(int argc, char **argv, struct step_par *p, struct step_cli *cli, FILE *err)
{
	int o, moe_set = 0;
	optind = 0;   /* glibc: 0 also resets getopt's state (parsed more than once in the tests) */
	while ((o = getopt(argc, argv, "S:s:H:T:jD:m:k:")) != -1) {
		if (o == '?' || opt(p, cli, o, optarg)) {
			fprintf(err, "mrc-step: bad option -%c%s%s\n", o == '?' ? optopt : o,
				o == '?' ? "" : " ", o == '?' ? "" : optarg);
			return -EINVAL;
		}
	}
	for (int i = optind; i < argc; i++) {
		char *eq = strchr(argv[i], '=');
		int r = -EINVAL;
		if (eq) {
			*eq = 0;
			r = pair(p, argv[i], eq + 1, &moe_set);
			*eq = '=';
		}
		if (r) {
			fprintf(err, "mrc-step: %s '%s' (see mrc-step(1))\n",
				r == -ENOENT ? "unknown key" : "bad value", argv[i]);
			return -EINVAL;
		}
	}
	if (!moe_set)
		p->moe = p->layers / 2;
	if (!p->tokens)
		p->moe = UINT32_MAX;
	const char *why = p->moe != UINT32_MAX && p->moe >= p->layers ? "moe must name a layer"
			: p->tok < 2 || p->tok % 2 ? "tok: an even number of bytes (bfloat16 rows)"
			: p->bucket < p->grad ? "bucket must hold a layer's gradients"
			: p->fault_step && p->fault_step >= p->steps ? "-k: the step must be < steps"
			: p->runs > 64 ? "runs: at most 64" : NULL;
	if (why) {
		fprintf(err, "mrc-step: %s\n", why);
		return -EINVAL;
	}
	return 0;
}
