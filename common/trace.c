/* Message-path tracing (trace.h).  Events go to a fixed in-memory array
 * (no I/O on the path being measured) claimed by one atomic add, so any
 * thread may record; when it is full later events are counted, not kept.
 * The file is written at exit. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/trace.h"

int mrc__trace_on;

struct tr_ev {
	uint64_t ts;
	uint64_t id;
	uint32_t stage, qpn, aux;
};

#define TR_MAX (1u << 20)          /* 1 Mi events, 32 MiB, only when on */

static struct tr_ev *tr;
static uint32_t tr_n, tr_lost;
static char tr_dir[256];

static const char *const names[MRC_TR_NSTAGES] = {
	[MRC_TR_C_POST] = "c_post", [MRC_TR_C_SQBELL] = "c_sqbell", [MRC_TR_C_CQE] = "c_cqe",
	[MRC_TR_C_WAKE] = "c_wake", [MRC_TR_N_IRECV] = "n_irecv", [MRC_TR_N_ISEND] = "n_isend",
	[MRC_TR_N_ISEND_WAIT] = "n_isend_wait", [MRC_TR_N_CTS] = "n_cts",
	[MRC_TR_N_DATA] = "n_data", [MRC_TR_N_TEST_DONE] = "n_test_done",
	[MRC_TR_D_SQBELL] = "d_sqbell", [MRC_TR_D_PICK] = "d_pick", [MRC_TR_D_TX] = "d_tx",
	[MRC_TR_D_RX] = "d_rx", [MRC_TR_D_WC] = "d_wc", [MRC_TR_D_CQBELL] = "d_cqbell",
	[MRC_TR_D_ARM] = "d_arm", [MRC_TR_MARK] = "mark",
};

const char *mrc__trace_name(uint32_t stage)
{
	return stage < MRC_TR_NSTAGES && names[stage] ? names[stage] : "?";
}

void mrc__trace_rec(uint32_t stage, uint32_t qpn, uint64_t id, uint32_t aux)
{
	uint32_t i = __atomic_fetch_add(&tr_n, 1, __ATOMIC_RELAXED);
	if (i >= TR_MAX) {
		__atomic_fetch_add(&tr_lost, 1, __ATOMIC_RELAXED);
		return;
	}
	tr[i] = (struct tr_ev){ mrc__mono_ns(), id,
				stage, qpn, aux };
}

/* One line per event: "ns stage qpn id aux pid". */
static void tr_write(void)
{
	uint32_t n = tr_n < TR_MAX ? tr_n : TR_MAX;
	char path[320];
	FILE *f = NULL;
	/* The first free name: a process may hold two copies of this code
	 * (the harness's libmrc and the plugin's), each writes its own. */
	for (int k = 0; k < 64 && !f; k++) {
		snprintf(path, sizeof(path), "%s/mrc-trace.%d.%d", tr_dir, (int)getpid(), k);
		f = fopen(path, "wx");
	}
	if (!f)
		return;
	for (uint32_t i = 0; i < n; i++)
		fprintf(f, "%llu %s %u %llu %u %d\n", (unsigned long long)tr[i].ts,
			mrc__trace_name(tr[i].stage), tr[i].qpn, (unsigned long long)tr[i].id,
			tr[i].aux, (int)getpid());
	if (tr_lost)
		fprintf(f, "# lost %u events (buffer full)\n", tr_lost);
	fclose(f);
}

__attribute__((constructor)) static void tr_init(void)
{
	const char *e = getenv("MRC_TRACE");
	if (!e || !*e || !strcmp(e, "0"))
		return;
	snprintf(tr_dir, sizeof(tr_dir), "%s", strcmp(e, "1") ? e : "/tmp");
	tr = calloc(TR_MAX, sizeof(*tr));
	if (!tr)
		return;
	atexit(tr_write);
	mrc__trace_on = 1;
}
