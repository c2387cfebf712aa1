/* What the reports (report.c: text and plots; report_json.c) share: a
 * run's figures computed once (report_util.c). */
#ifndef MRC_SIM_REPORT_INT_H
#define MRC_SIM_REPORT_INT_H

#include "sim/sim_int.h"

struct fct_stats {
	uint32_t n;
	double p50, p90, p99, p999, max, mean;
	uint32_t slowest;
	double *sorted;            /* caller frees */
};

struct link_class {
	uint32_t ports;
	double sum, max;
	uint64_t qmax;
};

struct totals {
	uint64_t data, retx, acks, probes, rto, nack_trim, rx_trimmed, ctrl_overflow,
		 events_dropped, decode_drops, rx_ecn, loss_detected, suspect_probes,
		 suspect_cleared, suspect_retired, suspect_extended, tlp_probes;
};

void sim_rep_fct_stats(const struct mrc_sim *s, struct fct_stats *o);
const char *sim_rep_tier_name(const struct mrc_sim *s, uint8_t t);
uint64_t sim_rep_span_ps(const struct mrc_sim *s);
double sim_rep_port_util(const struct mrc_sim *s, const struct sim_port *p);
void sim_rep_link_classes(const struct mrc_sim *s, struct link_class cls[16]);
void sim_rep_totals(const struct mrc_sim *s, struct totals *t);
const char *sim_rep_wl_name(const struct mrc_sim *s, uint32_t w);
void sim_rep_port_name(const struct mrc_sim *s, uint32_t p, char *buf, size_t len);
uint32_t sim_rep_top_ports(const struct mrc_sim *s, uint32_t *out, uint32_t max);
void sim_rep_fault_target(const struct mrc_sim *s, uint32_t i, char *buf, size_t len);
uint32_t sim_rep_active_hosts(const struct mrc_sim *s);

#endif
