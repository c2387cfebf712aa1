/* libFuzzer: what the verbs datapath reads from outside (datapath/verbs.c,
 * verbs_io.c), through a minimal fake libibverbs: its options text
 * (datapath_args), and receive completions with the GRH the NIC wrote
 * (byte_len, status and flags from the completion, then the header and
 * payload bytes).  Input: 1 byte selector; args text, or a series of
 * completions (2 bytes length, 1 byte status, 1 byte flags, then length
 * bytes of buffer).  Invariants: open succeeds only with valid options,
 * recv reports only lengths that fit the buffer, sources copied from the
 * GRH, and every buffer goes back to the NIC. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#ifdef MRC_HAVE_VERBS
#include "datapath/verbs_int.h"

static const uint8_t *in_p;
static size_t in_n;
static uint64_t rwr[4096], raddr[4096];
static uint32_t rhead, rtail;

static struct ibv_device dev;
static struct ibv_device *devs[2] = { &dev, NULL };
static struct ibv_device **get_list(int *n) { *n = 1; return devs; }
static void free_list(struct ibv_device **l) { (void)l; }
static const char *dev_name(struct ibv_device *d) { (void)d; return "fuzz0"; }
static struct ibv_context *open_dev(struct ibv_device *d)
{
	(void)d;
	return calloc(1, sizeof(struct ibv_context));
}
static int free_obj(void *o) { free(o); return 0; }
static int close_dev(struct ibv_context *c) { return free_obj(c); }
static ssize_t gids(struct ibv_context *c, struct ibv_gid_entry *e, size_t max)
{
	(void)c;
	(void)max;
	memset(e, 0, sizeof(*e));
	e->gid_type = IBV_GID_TYPE_ROCE_V2;
	e->port_num = 1;
	e->gid.raw[15] = 1;
	return 1;
}
static int qport(struct ibv_context *c, uint8_t p, struct ibv_port_attr *a)
{
	(void)c;
	(void)p;
	a->active_mtu = IBV_MTU_1024;
	a->state = IBV_PORT_ACTIVE;
	return 0;
}
static struct ibv_pd *pd(struct ibv_context *c) { (void)c; return calloc(1, sizeof(struct ibv_pd)); }
static int dealloc_pd(struct ibv_pd *p) { return free_obj(p); }
static struct ibv_mr *mr(struct ibv_pd *p, void *a, size_t l, int acc)
{
	(void)p;
	(void)a;
	(void)l;
	(void)acc;
	return calloc(1, sizeof(struct ibv_mr));
}
static struct ibv_mr *dmr(struct ibv_pd *p, uint64_t o, size_t l, uint64_t i, int fd, int acc)
{
	(void)o;
	(void)i;
	(void)fd;
	return mr(p, NULL, l, acc);
}
static int dereg(struct ibv_mr *m) { return free_obj(m); }
static struct ibv_comp_channel *mkch(struct ibv_context *c)
{
	(void)c;
	struct ibv_comp_channel *ch = calloc(1, sizeof(*ch));
	ch->fd = eventfd(0, EFD_CLOEXEC);
	return ch;
}
static int rmch(struct ibv_comp_channel *ch) { close(ch->fd); return free_obj(ch); }
static struct ibv_cq *mkcq(struct ibv_context *c, int n, void *x, struct ibv_comp_channel *ch, int v)
{
	(void)c;
	(void)n;
	(void)x;
	(void)ch;
	(void)v;
	return calloc(1, sizeof(struct ibv_cq));
}
static int rmcq(struct ibv_cq *cq) { return free_obj(cq); }
static int notify(struct ibv_cq *cq, int s) { (void)cq; (void)s; return 0; }
static int getev(struct ibv_comp_channel *ch, struct ibv_cq **cq, void **x)
{
	(void)ch;
	(void)cq;
	(void)x;
	return -1;
}
static void ackev(struct ibv_cq *cq, unsigned n) { (void)cq; (void)n; }
/* Receive completions come from the input, each on the oldest buffer. */
static int fpoll(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	(void)cq;
	int k = 0;
	while (k < n && in_n >= 4 && rhead != rtail) {
		size_t len = (size_t)(in_p[0] | in_p[1] << 8) % (MRC__VERBS_GRH + 1024 + 1);
		uint8_t st = in_p[2], fl = in_p[3];
		in_p += 4, in_n -= 4;
		if (len > in_n)
			len = in_n;
		uint32_t i = rhead++ % 4096;
		memcpy((void *)(uintptr_t)raddr[i], in_p, len);
		in_p += len, in_n -= len;
		wc[k++] = (struct ibv_wc){ .wr_id = rwr[i], .status = st % 4 ? IBV_WC_LOC_LEN_ERR :
			IBV_WC_SUCCESS, .byte_len = (uint32_t)len, .wc_flags = fl & 1 ? IBV_WC_GRH : 0,
			.src_qp = fl };
	}
	return k;
}
static struct ibv_qp *mkqp(struct ibv_pd *p, struct ibv_qp_init_attr *a)
{
	(void)p;
	(void)a;
	return calloc(1, sizeof(struct ibv_qp));
}
static int modqp(struct ibv_qp *q, struct ibv_qp_attr *a, int m) { (void)q; (void)a; (void)m; return 0; }
static int rmqp(struct ibv_qp *q) { return free_obj(q); }
static struct ibv_ah *mkah(struct ibv_pd *p, struct ibv_ah_attr *a)
{
	(void)p;
	(void)a;
	return calloc(1, sizeof(struct ibv_ah));
}
static int rmah(struct ibv_ah *a) { return free_obj(a); }
static int psend(struct ibv_qp *q, struct ibv_send_wr *w, struct ibv_send_wr **b)
{
	(void)q;
	(void)w;
	(void)b;
	return 0;
}
static int precv(struct ibv_qp *q, struct ibv_recv_wr *w, struct ibv_recv_wr **b)
{
	(void)q;
	(void)b;
	for (; w; w = w->next) {
		rwr[rtail % 4096] = w->wr_id;
		raddr[rtail++ % 4096] = w->sg_list[0].addr;
	}
	return 0;
}

static const struct mrc__dp_verbs_ops ops = {
	get_list, free_list, dev_name, open_dev, close_dev, gids, qport, pd, dealloc_pd, mr, dmr,
	dereg, mkch, rmch, mkcq, rmcq, notify, getev, ackev, fpoll, mkqp, modqp, rmqp, mkah, rmah,
	psend, precv,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mrc_dp_plane pl = { .ifname = "" };
	pl.local.s6_addr[15] = 1;
	struct mrc_dp_cfg cfg = { .planes = &pl, .nplanes = 1, .port = 4791 };
	char args[300], why[256];
	struct mrc_dp *dp = NULL;
	rhead = rtail = 0;
	if (size && data[0] & 1) {
		size_t n = size - 1 < sizeof(args) - 1 ? size - 1 : sizeof(args) - 1;
		memcpy(args, data + 1, n);
		args[n] = 0;
		cfg.args = args;
		int rc = mrc__dp_verbs_open_ops(&dp, &cfg, &ops, why, sizeof(why));
		if (rc != 0 && rc != -EINVAL)
			abort();
		if (rc == 0)
			mrc_dp_close(dp);
		return 0;
	}
	cfg.args = "rx_depth=80,tx_depth=4,ah_max=4";   /* small: fast to open */
	if (mrc__dp_verbs_open_ops(&dp, &cfg, &ops, why, sizeof(why)))
		abort();
	in_p = size ? data + 1 : data;
	in_n = size ? size - 1 : 0;
	struct mrc_dp_in in[MRC_DP_BATCH];
	for (int round = 0; round < 64 && in_n >= 4; round++) {
		int n = mrc_dp_recv(dp, 0, in, MRC_DP_BATCH);
		if (n < 0)
			abort();
		for (int i = 0; i < n; i++)
			if (in[i].len > 1024 || in[i].plane != 0)
				abort();
	}
	mrc_dp_recv(dp, 0, in, 0);   /* hands the last batch back */
	if (rtail - rhead != 80)
		abort();
	mrc_dp_close(dp);
	return 0;
}
#else
/* Built without libibverbs-dev: nothing to fuzz. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	(void)data;
	(void)size;
	return 0;
}
#endif
