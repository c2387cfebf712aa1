/* mrc-nccl-harness: the plugin's comms to every peer (harness.h). */
#include <string.h>

#include "tools/nccl-harness/harness.h"

const ncclNet_v11_t *nh_net;
void *nh_nctx;
void *nh_lcomm[MAXR][MAXC], *nh_scomm[MAXR][MAXC], *nh_rcomm[MAXR][MAXC];
struct ndrv_stats nh_st;
uint64_t nh_connect_null, nh_accept_null;

void nh_make_comms(int nc)
{
	static uint8_t mine[MAXR][MAXC][NCCL_NET_HANDLE_MAXSIZE];
	static uint8_t all[MAXR][MAXR][MAXC][NCCL_NET_HANDLE_MAXSIZE];
	memset(mine, 0, sizeof(mine));
	for (int p = 0; p < nh_nranks; p++)
		for (int k = 0; k < nc && p != nh_rank; k++)
			NC(nh_net->listen(nh_nctx, 0, mine[p][k], &nh_lcomm[p][k]));
	nh_allgather(mine, all, sizeof(mine));
	int64_t end = ndrv_now_us() + 60 * 1000000ll;
	int left = 2 * (nh_nranks - 1) * nc;
	while (left) {
		if (ndrv_now_us() > end)
			nh_die("connect/accept: %d not done after 60 s", left);
		for (int p = 0; p < nh_nranks; p++)
			for (int k = 0; k < nc && p != nh_rank; k++) {
				ncclNetDeviceHandle_t *dev = NULL;
				if (!nh_scomm[p][k]) {
					NC(nh_net->connect(nh_nctx, 0, all[p][nh_rank][k], &nh_scomm[p][k], &dev));
					if (nh_scomm[p][k])
						left--;
					else
						nh_connect_null++;
				}
				if (!nh_rcomm[p][k]) {
					NC(nh_net->accept(nh_lcomm[p][k], &nh_rcomm[p][k], &dev));
					if (nh_rcomm[p][k])
						left--;
					else
						nh_accept_null++;
				}
			}
	}
}

void nh_close_comms(int nc)
{
	for (int p = 0; p < nh_nranks; p++)
		for (int k = 0; k < nc && p != nh_rank; k++) {
			NC(nh_net->closeSend(nh_scomm[p][k]));
			NC(nh_net->closeRecv(nh_rcomm[p][k]));
			NC(nh_net->closeListen(nh_lcomm[p][k]));
			nh_scomm[p][k] = nh_rcomm[p][k] = nh_lcomm[p][k] = NULL;
		}
}

int nh_links(struct ndrv_link *s, struct ndrv_link *r, int nc)
{
	int n = 0;
	for (int p = 0; p < nh_nranks; p++)
		for (int k = 0; k < nc && p != nh_rank; k++, n++) {
			s[n] = (struct ndrv_link){ nh_rank, p, k, nh_scomm[p][k] };
			r[n] = (struct ndrv_link){ p, nh_rank, k, nh_rcomm[p][k] };
		}
	return n;
}

void nh_wait_req(void *req, int *sizes, const char *what)
{
	int64_t end = ndrv_now_us() + 30 * 1000000ll;
	for (int done = 0; !done;) {
		NC(nh_net->test(req, &done, sizes));
		if (!done && ndrv_now_us() > end)
			nh_die("%s: not done after 30 s", what);
	}
}
