/* Reports: a summary table for people and gnuplot plots (JSON for
 * machines: report_json.c).
 * Everything printed is a function of the scenario and seed (integers and
 * fixed-precision ratios); wall time and memory only with timing set. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sim/report_int.h"

/* ---- text ---------------------------------------------------------------- */

void mrc_sim_report_text(const struct mrc_sim *s, int timing, FILE *f)
{
	const struct mrc_sim_cfg *c = &s->cfg;
	struct fct_stats fs;
	sim_rep_fct_stats(s, &fs);
	struct totals t;
	sim_rep_totals(s, &t);
	char a[32], b2[32], d[32];
	fprintf(f, "fabric    %s, %llu Gbit/s links, %llu ns propagation\n", s->desc,
		(unsigned long long)(s->fab.rate_mbit / 1000), (unsigned long long)s->fab.delay_ns);
	sim_human_bytes(c->buffer, a, sizeof(a));
	fprintf(f, "transport %s%s, cc %s, window %u x %u B, buffer %s/port, ECN %llu K, "
		"trim %s, seed %llu\n", c->mode == MRC_SIM_ECMP ? "ECMP (pinned EV per QP)" : "spray",
		c->paths ? " (subset of EVs per pair)" : c->spray_slot ? " (slots by topology)" : "", c->cc_fixed ? "fixed" : "nscc",
		s->ecfg.window, c->mtu, a, (unsigned long long)(c->ecn >> 10),
		c->trim ? "on" : "off", (unsigned long long)c->seed);
	for (uint32_t w = 0; w < c->n_wl; w++) {
		const struct sim_job *j = &s->jobs[w];
		uint64_t end = 0;
		for (uint32_t i = j->flow0; i < j->flow0 + j->nflows; i++) {
			const struct sim_flow *fl = &s->flows[i];
			uint64_t e = fl->end_ps > fl->recv_ps ? fl->end_ps : fl->recv_ps;
			if (e > end)
				end = e;
		}
		uint64_t st = j->start_ps == UINT64_MAX ? 0 : j->start_ps;
		if (c->wl[w].kind == MRC_SIM_WL_STEP)   /* flows of many sizes */
			snprintf(a, sizeof(a), "various");
		else
			sim_human_bytes(c->wl[w].size, a, sizeof(a));
		sim_human_time(end > st ? end - st : 0, b2, sizeof(b2));
		sim_human_time(j->ideal_ps, d, sizeof(d));
		fprintf(f, "workload  %-11s %s x %u flows: done in %s, ideal %s (x%.3f)\n",
			sim_rep_wl_name(s, w), a, j->nflows, b2, d,
			j->ideal_ps ? (double)(end - st) / (double)j->ideal_ps : 0.0);
	}
	struct mrc_sim_step_result sr;
	if (!mrc_sim_step_result(s, &sr)) {
		/* Step figures: the trimmed mean step (MLPerf style) and each
		 * step's exposed communication (step minus compute). */
		sim_human_time(sr.step_trimmed_ns * SIM_PS_PER_NS, a, sizeof(a));
		sim_human_time(sr.compute_ns * SIM_PS_PER_NS, b2, sizeof(b2));
		sim_human_time(sr.time_to_n_ns * SIM_PS_PER_NS, d, sizeof(d));
		fprintf(f, "step      %u steps%s: step %s (compute %s), %u to done in %s; "
			"tokens dropped %.2f%%\n          exposed mean/max per step:",
			sr.steps, sr.done ? "" : " (NOT all done)", a, b2, sr.steps, d,
			sr.tokens ? 100.0 * (double)sr.dropped / (double)sr.tokens : 0.0);
		for (uint32_t i = 0; i < sr.steps; i++)
			fprintf(f, " %.1f/%.1f us", sr.exposed_mean_ns[i] / 1e3,
				sr.exposed_max_ns[i] / 1e3);
		fprintf(f, "\n");
	}
	fprintf(f, "flows     %u/%u complete%s%s, data %s\n", s->flows_done, s->n_flows,
		s->flows_failed ? ", FAILED: " : "", s->flows_failed ? "some" : "",
		s->verified > 0 ? "compared equal" : s->verified < 0 ? "MISMATCH" :
		"not compared (too large)");
	if (s->stalled)
		fprintf(f, "          STALLED: the event queue ran dry before every flow finished\n");
	fprintf(f, "FCT/ideal p50 %.3f  p90 %.3f  p99 %.3f  p99.9 %.3f  max %.3f  mean %.3f\n",
		fs.p50, fs.p90, fs.p99, fs.p999, fs.max, fs.mean);
	if (fs.slowest != SIM_NONE) {
		const struct sim_flow *fl = &s->flows[fs.slowest];
		sim_human_time(fl->end_ps - fl->start_ps, a, sizeof(a));
		sim_human_time(fl->ideal_ps, b2, sizeof(b2));
		sim_human_time(fl->rtt_ps, d, sizeof(d));
		fprintf(f, "slowest   h%u -> h%u: %s, ideal %s (base RTT %s)\n", fl->src, fl->dst,
			a, b2, d);
	}
	struct link_class cls[16];
	sim_rep_link_classes(s, cls);
	fprintf(f, "links     utilisation mean/max over %.3f us:", (double)sim_rep_span_ps(s) / 1e6);
	for (int i = 0; i < 16; i++)
		if (cls[i].ports)
			fprintf(f, " %s>%s %.2f/%.2f", sim_rep_tier_name(s, (uint8_t)(i / 4)),
				sim_rep_tier_name(s, (uint8_t)(i % 4)), cls[i].sum / cls[i].ports, cls[i].max);
	fprintf(f, "\npackets   data %llu, retransmits %llu, trimmed %llu, ECN marked %llu, "
		"RTOs %llu, probes %llu\n", (unsigned long long)t.data, (unsigned long long)t.retx,
		(unsigned long long)s->trims, (unsigned long long)s->marks,
		(unsigned long long)t.rto, (unsigned long long)t.probes);
	fprintf(f, "drops     buffer %llu, prio %llu, link down %llu, blackhole %llu, "
		"random loss %llu\n", (unsigned long long)s->drop_full,
		(unsigned long long)s->drop_prio, (unsigned long long)s->drop_down,
		(unsigned long long)s->drop_blackhole, (unsigned long long)s->drop_loss);
	if (s->cfg.health) {
		char hl[1024];
		sim_health_fmt(s, 0, hl, sizeof(hl));
		fputs(hl, f);
	}
	uint64_t to_bad = 0, to_good = 0;
	for (uint32_t i = 0; i < s->n_evc; i++) {
		to_bad += s->evc[i].new_state == MRCE_EV_ASSUMED_BAD;
		to_good += s->evc[i].new_state == MRCE_EV_GOOD;
	}
	fprintf(f, "EV states %llu changes (%llu to ASSUMED_BAD, %llu to GOOD), %llu floor events\n",
		(unsigned long long)s->evc_total, (unsigned long long)to_bad,
		(unsigned long long)to_good, (unsigned long long)s->floor_events);
	for (uint32_t i = 0; i < c->n_faults; i++) {
		const struct sim_fault_rec *r = &s->frec[i];
		sim_human_time(r->t_ps, a, sizeof(a));
		fprintf(f, "fault     %s %s %s", a, sim_fault_kind_name(c->faults[i].kind),
			c->faults[i].target);
		if (c->faults[i].kind != MRC_SIM_F_RECOVER) {
			fprintf(f, ": %u flows cross it, %u EVs to ASSUMED_BAD", r->affected, r->bad_evs);
			if (r->bad_evs) {
				sim_human_time(r->first_bad_ps - r->t_ps, b2, sizeof(b2));
				sim_human_time(r->last_bad_ps - r->t_ps, d, sizeof(d));
				fprintf(f, " (first +%s, last +%s)", b2, d);
			}
			if (r->recover_ps >= 0) {
				sim_human_time((uint64_t)r->recover_ps, b2, sizeof(b2));
				fprintf(f, ", goodput back to 90%% of %.1f Gbit/s after %s",
					r->pre_gbps, b2);
			} else {
				fprintf(f, ", goodput recovery not measured");
			}
		}
		fprintf(f, "\n");
	}
	fprintf(f, "sim       %llu events, %s virtual, packet pool peak %llu\n",
		(unsigned long long)s->events, (sim_human_time(s->now, a, sizeof(a)), a),
		(unsigned long long)s->pool.peak);
	if (s->cfg.stalls) {
		const struct sim_stalls *st = &s->stalls;
		double send = st->send_ps ? (double)st->send_ps / 100 : 1.0;
		fprintf(f, "stalls    NIC idle while sending, %% of flow time: drain %.2f, "
			"cwnd %.2f, window %.2f, other %.2f; at idle: cwnd %llu B, srtt %llu ns\n",
			st->ps[SIM_STALL_DRAIN] / send, st->ps[SIM_STALL_CWND] / send,
			st->ps[SIM_STALL_WINDOW] / send, st->ps[SIM_STALL_OTHER] / send,
			(unsigned long long)(st->n ? st->cwnd_sum / st->n : 0),
			(unsigned long long)(st->n ? st->srtt_sum / st->n : 0));
	}
	if (timing) {
		uint32_t active = sim_rep_active_hosts(s);
		fprintf(f, "timing    %.3f s wall, %.3f s CPU, %.2f M events per CPU second, "
			"max RSS %.1f MiB (%.1f KiB per host)\n", s->wall_s, s->cpu_s,
			s->cpu_s > 0 ? s->events / s->cpu_s / 1e6 : 0.0,
			s->maxrss_kb / 1024.0, active ? (double)s->maxrss_kb / active : 0.0);
	}
	free(fs.sorted);
}

/* ---- plots ---------------------------------------------------------------- */

static FILE *open_in(const char *dir, const char *name, char *path, size_t len)
{
	snprintf(path, len, "%s/%s", dir, name);
	return fopen(path, "w");
}

int mrc_sim_plot(const struct mrc_sim *s, const char *dir, char *err, size_t errlen)
{
	char path[4096];
	if (mkdir(dir, 0755) && errno != EEXIST) {
		snprintf(err, errlen, "plot: cannot create %s: %s", dir, strerror(errno));
		return -errno;
	}
	struct fct_stats fs;
	sim_rep_fct_stats(s, &fs);
	FILE *f = open_in(dir, "fct.dat", path, sizeof(path));
	if (!f)
		goto io;
	fprintf(f, "# FCT/ideal  CDF\n");
	for (uint32_t i = 0; i < fs.n; i++)
		fprintf(f, "%.5f %.6f\n", fs.sorted[i], (double)(i + 1) / fs.n);
	fclose(f);
	f = open_in(dir, "goodput.dat", path, sizeof(path));
	if (!f)
		goto io;
	double per = 8.0 / ((double)s->bin_ps / 1000.0);   /* bytes/bin -> Gbit/s */
	fprintf(f, "# t_us  all_gbps  affected_gbps\n");
	for (uint32_t b = 0; b < s->n_bins; b++)
		fprintf(f, "%.3f %.3f %.3f\n", (double)b * s->bin_ps / 1e6, s->gp_all[b] * per,
			s->gp_aff[b] * per);
	fclose(f);
	f = open_in(dir, "evbad.dat", path, sizeof(path));
	if (!f)
		goto io;
	fprintf(f, "# t_us  EVs in ASSUMED_BAD (all hosts)\n0 0\n");
	long bad = 0;
	for (uint32_t i = 0; i < s->n_evc; i++) {
		const struct mrc_sim_ev_change *e = &s->evc[i];
		bad += (e->new_state == MRCE_EV_ASSUMED_BAD) - (e->old_state == MRCE_EV_ASSUMED_BAD);
		fprintf(f, "%.3f %ld\n", e->t_ns / 1e3, bad);
	}
	fprintf(f, "%.3f %ld\n", s->now / 1e6, bad);
	fclose(f);
	f = open_in(dir, "plots.gp", path, sizeof(path));
	if (!f)
		goto io;
	fprintf(f, "set terminal pngcairo size 900,540\nset grid\n");
	for (uint32_t i = 0; i < s->cfg.n_faults; i++)
		fprintf(f, "set arrow from %.3f, graph 0 to %.3f, graph 1 nohead dt 2 lc rgb 'red'\n",
			s->frec[i].t_ps / 1e6, s->frec[i].t_ps / 1e6);
	fprintf(f, "set output '%s/goodput.png'\nset title \"%s: goodput\"\n"
		"set xlabel 'time (us)'\nset ylabel 'Gbit/s'\n"
		"plot '%s/goodput.dat' u 1:2 w l t 'all flows', '' u 1:3 w l t 'flows crossing a fault'\n",
		dir, s->desc, dir);
	fprintf(f, "set output '%s/evbad.png'\nset title 'EVs in ASSUMED_BAD'\n"
		"set ylabel 'EVs'\nplot '%s/evbad.dat' u 1:2 w steps t 'ASSUMED_BAD'\n", dir, dir);
	fprintf(f, "unset arrow\nset output '%s/fct_cdf.png'\nset title \"%s: FCT / ideal\"\n"
		"set xlabel 'FCT / ideal'\nset ylabel 'CDF'\nset yrange [0:1]\n"
		"plot '%s/fct.dat' u 1:2 w l t '%s'\n", dir, s->desc, dir,
		s->cfg.mode == MRC_SIM_ECMP ? "ecmp" : "spray");
	fclose(f);
	free(fs.sorted);
	fs.sorted = NULL;
	pid_t pid = fork();
	if (pid < 0)
		goto io;
	if (!pid) {
		execlp("gnuplot", "gnuplot", path, (char *)NULL);
		_exit(127);
	}
	int st;
	if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) {
		snprintf(err, errlen, "plot: gnuplot %s failed (exit %d); is gnuplot installed?",
			 path, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
		return -EIO;
	}
	return 0;
io:
	free(fs.sorted);
	snprintf(err, errlen, "plot: %s: %s", path, strerror(errno));
	return -EIO;
}
