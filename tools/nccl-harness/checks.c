/* mrc-nccl-harness: the checks of mrc's plugin (the header of harness.c
 * lists them). */
#include <stdio.h>
#include <stdlib.h>

#include "tools/nccl-harness/harness.h"

static int ptr_cuda;                    /* the plugin said NCCL_PTR_CUDA */

void nh_check_props(void)
{
	int ndev = 0;
	NC(nh_net->devices(&ndev));
	if (ndev != 1 && !(nh_bench && ndev > 1))
		nh_die("devices: %d", ndev);
	ncclNetProperties_v11_t p;
	NC(nh_net->getProperties(0, &p));
	if (nh_bench) {
		/* Another plugin (the benchmark drives any): device 0, host
		 * memory, the sizes it takes; mrc's own properties are the
		 * checks' business. */
		if (!(p.ptrSupport & NCCL_PTR_HOST))
			nh_die("properties: %s takes no host memory", p.name ? p.name : "?");
		if (nh_rank == 0)
			printf("properties: %s (%d devices) speed %d Mbit/s maxRecvs %d "
			       "maxP2pBytes %zu\n", p.name ? p.name : "?", ndev, p.speed, p.maxRecvs,
			       p.maxP2pBytes);
		if (p.maxP2pBytes)
			nh_bench_max = p.maxP2pBytes;
		return;
	}
	/* host always; CUDA too where the plugin found a device (docs/nccl.md) */
	ptr_cuda = (p.ptrSupport & NCCL_PTR_CUDA) != 0;
	if (!(p.ptrSupport & NCCL_PTR_HOST) || (p.ptrSupport & ~(NCCL_PTR_HOST | NCCL_PTR_CUDA)) ||
	    p.maxRecvs < 1 || p.speed <= 0 || p.maxComms < 1 ||
	    !p.maxP2pBytes || p.maxMultiRequestSize < 1 || !p.name)
		nh_die("properties: ptrSupport %d maxRecvs %d speed %d maxComms %d", p.ptrSupport,
		    p.maxRecvs, p.speed, p.maxComms);
	if (nh_maxsize > p.maxP2pBytes)
		nh_maxsize = p.maxP2pBytes;
	if (nh_rank == 0)
		printf("properties: %s speed %d Mbit/s maxComms %d maxRecvs %d maxP2pBytes %zu "
		       "pointers %s\n", p.name, p.speed, p.maxComms, p.maxRecvs, p.maxP2pBytes,
		       ptr_cuda ? "host+cuda" : "host");
}

static void check_refusals(void)
{
	static char buf[4096];
	void *mh = NULL;
	int p = (nh_rank + 1) % nh_nranks;
	/* (with a CUDA device the plugin takes CUDA pointers: not a refusal) */
	if (!ptr_cuda && nh_net->regMr(nh_scomm[p][0], buf, sizeof(buf), NCCL_PTR_CUDA, &mh) == ncclSuccess)
		nh_die("regMr accepted NCCL_PTR_CUDA without a CUDA device");
	if (nh_net->regMr(nh_scomm[p][0], buf, sizeof(buf), 0x40, &mh) == ncclSuccess)
		nh_die("regMr accepted pointer type 0x40");
	if (nh_net->regMrDmaBuf(nh_rcomm[p][0], buf, sizeof(buf), NCCL_PTR_CUDA, 0, 3, &mh) == ncclSuccess)
		nh_die("regMrDmaBuf accepted a CUDA dma-buf");
}

/* An isend before the peer posted its receive gets a NULL request, or
 * (a small message, with the receiver's eager ring advertised) a request
 * at once; once posted, a retried isend goes through; iflush on host
 * memory.  n bytes sent into a receive of 2n, tag tag. */
static void early_send(size_t n, int tag)
{
	int next = (nh_rank + 1) % nh_nranks, prev = (nh_rank + nh_nranks - 1) % nh_nranks;
	uint8_t *sbuf = malloc(n), *rbuf = malloc(2 * n);
	if (!sbuf || !rbuf)
		nh_die("early send: out of memory");
	for (size_t i = 0; i < n; i++)
		sbuf[i] = (uint8_t)(i * 7 + (unsigned)nh_rank);
	void *smh, *rmh, *sreq = NULL, *rreq = NULL, *freq = (void *)1;
	NC(nh_net->regMr(nh_scomm[next][0], sbuf, n, NCCL_PTR_HOST, &smh));
	NC(nh_net->regMr(nh_rcomm[prev][0], rbuf, 2 * n, NCCL_PTR_HOST, &rmh));
	NC(nh_net->isend(nh_scomm[next][0], sbuf, n, tag, smh, NULL, &sreq));
	if (!sreq)
		nh_st.isend_null++;
	nh_barrier();
	void *data[1] = { rbuf };
	size_t sizes[1] = { 2 * n };
	int tags[1] = { tag };
	int64_t end = ndrv_now_us() + 30 * 1000000ll;
	while (!rreq) {
		NC(nh_net->irecv(nh_rcomm[prev][0], 1, data, sizes, tags, &rmh, NULL, &rreq));
		if (ndrv_now_us() > end)
			nh_die("irecv stays NULL");
	}
	while (!sreq) {
		NC(nh_net->isend(nh_scomm[next][0], sbuf, n, tag, smh, NULL, &sreq));
		if (!sreq)
			nh_st.isend_null++;
		if (ndrv_now_us() > end)
			nh_die("isend stays NULL after the receive was posted");
	}
	int ssz = -1, rsz = -1;
	nh_wait_req(sreq, &ssz, "early send");
	nh_wait_req(rreq, &rsz, "receive of the early send");
	if (ssz != (int)n || rsz != (int)n)
		nh_die("sizes: sent %d received %d, want %zu", ssz, rsz, n);
	for (size_t i = 0; i < n; i++)
		if (rbuf[i] != (uint8_t)(i * 7 + (unsigned)prev))
			nh_die("early send: byte %zu differs", i);
	int fsz[1] = { rsz };
	NC(nh_net->iflush(nh_rcomm[prev][0], 1, data, fsz, &rmh, &freq));
	if (freq)
		nh_die("iflush on host memory returned a request");
	NC(nh_net->deregMr(nh_scomm[next][0], smh));
	NC(nh_net->deregMr(nh_rcomm[prev][0], rmh));
	free(sbuf);
	free(rbuf);
}

/* A small early send (eager where the receiver offers it), and one larger
 * than any eager slot (2 MiB: MRC_NCCL_EAGER_BYTES is at most 1 MiB),
 * which no receive has made room for: the NULL request and NCCL's retry
 * are exercised in every run, not only when the random rounds happen to
 * send before their receive is posted (a fast peer never does). */
static void check_early_send(void)
{
	early_send(1000, 424242);
	early_send(2u << 20, 424243);
}

/* Receives are posted until irecv returns NULL; the peer sends half of
 * them; everything is closed with the rest still in flight. */
static void check_close_in_flight(void)
{
	int next = (nh_rank + 1) % nh_nranks, prev = (nh_rank + nh_nranks - 1) % nh_nranks;
	static uint8_t rb[256][64], sb[64];
	void *rmh, *smh, *req;
	NC(nh_net->regMr(nh_rcomm[prev][0], rb, sizeof(rb), NCCL_PTR_HOST, &rmh));
	NC(nh_net->regMr(nh_scomm[next][0], sb, sizeof(sb), NCCL_PTR_HOST, &smh));
	int m = 0;
	for (; m < 256; m++) {
		void *data[1] = { rb[m] };
		size_t sizes[1] = { 64 };
		int tags[1] = { 7000 + m };
		NC(nh_net->irecv(nh_rcomm[prev][0], 1, data, sizes, tags, &rmh, NULL, &req));
		if (!req)
			break;
	}
	if (m == 256)
		nh_die("irecv never returned NULL (256 receives posted)");
	nh_st.irecv_null++;
	int counts[MAXR];
	nh_allgather(&m, counts, sizeof(int));
	int sent = 0, want = counts[next] / 2;
	int64_t end = ndrv_now_us() + 30 * 1000000ll;
	while (sent < want) {
		NC(nh_net->isend(nh_scomm[next][0], sb, sizeof(sb), 7000 + sent, smh, NULL, &req));
		sent += req != NULL;
		if (ndrv_now_us() > end)
			nh_die("in-flight sends: %d of %d posted", sent, want);
	}
	nh_barrier();
	nh_close_comms(nh_ncomms);
	NC(nh_net->deregMr(NULL, rmh));
	NC(nh_net->deregMr(NULL, smh));
	if (nh_rank == 0)
		printf("closed with operations in flight: %d receives posted before irecv returned NULL\n",
		       m);
}

void nh_run_checks(void)
{
	nh_check_props();
	int64_t t0 = ndrv_now_us();
	nh_make_comms(nh_ncomms);
	if (nh_rank == 0)
		printf("connected %d comms each way per peer in %.1f ms (connect NULL %llu, accept NULL %llu)\n",
		       nh_ncomms, (ndrv_now_us() - t0) / 1e3, (unsigned long long)nh_connect_null,
		       (unsigned long long)nh_accept_null);
	check_refusals();
	check_early_send();
	struct ndrv_link s[MAXR * MAXC], r[MAXR * MAXC];
	int n = nh_links(s, r, nh_ncomms);
	char err[256];
	for (int k = 0; k < nh_rounds; k++) {
		if (ndrv_round(nh_net, s, n, r, n, nh_seed, (uint64_t)k, nh_maxsize, 8, 120000, &nh_st, err,
			       sizeof(err)))
			nh_die("%s", err);
		if (nh_progress) {
			printf("progress %d\n", (k + 1) * 100 / nh_rounds);
			fflush(stdout);
		}
	}
	nh_barrier();
	check_close_in_flight();
	nh_make_comms(1);
	n = nh_links(s, r, 1);
	if (ndrv_round(nh_net, s, n, r, n, nh_seed, 1000, nh_maxsize, 8, 60000, &nh_st, err, sizeof(err)))
		nh_die("after the closes: %s", err);
	nh_barrier();
	nh_close_comms(1);
	if (!nh_st.grouped || !nh_st.larger_recvs || !nh_st.isend_null || !nh_st.irecv_null)
		nh_die("a behaviour was not exercised: grouped %llu larger %llu isend NULL %llu",
		    (unsigned long long)nh_st.grouped, (unsigned long long)nh_st.larger_recvs,
		    (unsigned long long)nh_st.isend_null);
	printf("rank %d ok: %llu messages, %llu bytes verified; grouped receives %llu, larger receives %llu, "
	       "zero-byte %llu; NULL requests retried: isend %llu irecv %llu\n",
	       nh_rank, (unsigned long long)nh_st.msgs, (unsigned long long)nh_st.bytes,
	       (unsigned long long)nh_st.grouped, (unsigned long long)nh_st.larger_recvs,
	       (unsigned long long)nh_st.zero_msgs, (unsigned long long)nh_st.isend_null,
	       (unsigned long long)nh_st.irecv_null);
}
