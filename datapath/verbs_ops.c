/* The verbs datapath's real ops table: libibverbs (see verbs.h).  Several
 * entry points are inline functions or macros in <infiniband/verbs.h>
 * (they dispatch through the device's provider), so each is wrapped in a
 * plain function a table can point at.  Built only with libibverbs-dev
 * (datapath/datapath.mk). */
#include "datapath/verbs.h"

static ssize_t query_gid_table(struct ibv_context *ctx, struct ibv_gid_entry *e, size_t max)
{
	return ibv_query_gid_table(ctx, e, max, 0);
}

static int query_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr)
{
	return ibv_query_port(ctx, port, attr);
}

static struct ibv_mr *reg_mr(struct ibv_pd *pd, void *addr, size_t len, int access)
{
	return ibv_reg_mr(pd, addr, len, access);
}

static int req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	return ibv_req_notify_cq(cq, solicited_only);
}

static int poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	return ibv_poll_cq(cq, n, wc);
}

static int post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	return ibv_post_send(qp, wr, bad);
}

static int post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	return ibv_post_recv(qp, wr, bad);
}

const struct mrc__dp_verbs_ops mrc__dp_verbs_real = {
	.get_device_list = ibv_get_device_list,
	.free_device_list = ibv_free_device_list,
	.get_device_name = ibv_get_device_name,
	.open_device = ibv_open_device,
	.close_device = ibv_close_device,
	.query_gid_table = query_gid_table,
	.query_port = query_port,
	.alloc_pd = ibv_alloc_pd,
	.dealloc_pd = ibv_dealloc_pd,
	.reg_mr = reg_mr,
	.reg_dmabuf_mr = ibv_reg_dmabuf_mr,
	.dereg_mr = ibv_dereg_mr,
	.create_comp_channel = ibv_create_comp_channel,
	.destroy_comp_channel = ibv_destroy_comp_channel,
	.create_cq = ibv_create_cq,
	.destroy_cq = ibv_destroy_cq,
	.req_notify_cq = req_notify_cq,
	.get_cq_event = ibv_get_cq_event,
	.ack_cq_events = ibv_ack_cq_events,
	.poll_cq = poll_cq,
	.create_qp = ibv_create_qp,
	.modify_qp = ibv_modify_qp,
	.destroy_qp = ibv_destroy_qp,
	.create_ah = ibv_create_ah,
	.destroy_ah = ibv_destroy_ah,
	.post_send = post_send,
	.post_recv = post_recv,
};
