/* The endpoint's RMA and atomic ops tables: fi_write (read is refused:
 * mrc has no RDMA READ) and the atomic add; the data path is fi/ep_tx.c. */
#include "fi/mrcfi.h"

#define EP(e) container_of(e, struct mrcfi_ep, ep)

/* ---- rma ------------------------------------------------------------- */
static ssize_t r_read(struct fid_ep *e, void *buf, size_t len, void *desc, fi_addr_t src,
		      uint64_t addr, uint64_t key, void *ctx)
{
	return -FI_ENOSYS;   /* mrc has no RDMA READ (docs/libfabric.md) */
}

static ssize_t r_readv(struct fid_ep *e, const struct iovec *iov, void **desc, size_t count,
		       fi_addr_t src, uint64_t addr, uint64_t key, void *ctx)
{
	return -FI_ENOSYS;
}

static ssize_t r_readmsg(struct fid_ep *e, const struct fi_msg_rma *m, uint64_t flags)
{
	return -FI_ENOSYS;
}

static ssize_t r_write(struct fid_ep *e, const void *buf, size_t len, void *desc, fi_addr_t dest,
		       uint64_t addr, uint64_t key, void *ctx)
{
	struct iovec v = { (void *)buf, len };
	return mrcfi_do_write(EP(e), &v, 1, dest, addr, key, 0, EP(e)->op_flags_tx, ctx);
}

static ssize_t r_writev(struct fid_ep *e, const struct iovec *iov, void **desc, size_t count,
			fi_addr_t dest, uint64_t addr, uint64_t key, void *ctx)
{
	return mrcfi_do_write(EP(e), iov, count, dest, addr, key, 0, EP(e)->op_flags_tx, ctx);
}

static ssize_t r_writemsg(struct fid_ep *e, const struct fi_msg_rma *m, uint64_t flags)
{
	if (m->rma_iov_count != 1)
		return -FI_EINVAL;
	return mrcfi_do_write(EP(e), m->msg_iov, m->iov_count, m->addr, m->rma_iov[0].addr,
			m->rma_iov[0].key, m->data, flags, m->context);
}

static ssize_t r_inject(struct fid_ep *e, const void *buf, size_t len, fi_addr_t dest,
			uint64_t addr, uint64_t key)
{
	struct iovec v = { (void *)buf, len };
	return mrcfi_do_write(EP(e), &v, 1, dest, addr, key, 0, FI_INJECT, NULL);
}

static ssize_t r_writedata(struct fid_ep *e, const void *buf, size_t len, void *desc,
			   uint64_t data, fi_addr_t dest, uint64_t addr, uint64_t key, void *ctx)
{
	struct iovec v = { (void *)buf, len };
	return mrcfi_do_write(EP(e), &v, 1, dest, addr, key, data, EP(e)->op_flags_tx | FI_REMOTE_CQ_DATA,
			ctx);
}

static ssize_t r_injectdata(struct fid_ep *e, const void *buf, size_t len, uint64_t data,
			    fi_addr_t dest, uint64_t addr, uint64_t key)
{
	struct iovec v = { (void *)buf, len };
	return mrcfi_do_write(EP(e), &v, 1, dest, addr, key, data, FI_INJECT | FI_REMOTE_CQ_DATA, NULL);
}

struct fi_ops_rma mrcfi_rma_ops = {
	.size = sizeof(struct fi_ops_rma), .read = r_read, .readv = r_readv,
	.readmsg = r_readmsg, .write = r_write, .writev = r_writev, .writemsg = r_writemsg,
	.inject = r_inject, .writedata = r_writedata, .injectdata = r_injectdata,
};

/* ---- atomic ---------------------------------------------------------- */
static ssize_t a_write(struct fid_ep *e, const void *buf, size_t count, void *desc,
		       fi_addr_t dest, uint64_t addr, uint64_t key, enum fi_datatype dt,
		       enum fi_op op, void *ctx)
{
	return mrcfi_do_atomic(EP(e), buf, count, dest, addr, key, dt, op, EP(e)->op_flags_tx, ctx);
}

static ssize_t a_writev(struct fid_ep *e, const struct fi_ioc *iov, void **desc, size_t count,
			fi_addr_t dest, uint64_t addr, uint64_t key, enum fi_datatype dt,
			enum fi_op op, void *ctx)
{
	if (count != 1)
		return -FI_EINVAL;
	return mrcfi_do_atomic(EP(e), iov[0].addr, iov[0].count, dest, addr, key, dt, op, EP(e)->op_flags_tx,
			 ctx);
}

static ssize_t a_writemsg(struct fid_ep *e, const struct fi_msg_atomic *m, uint64_t flags)
{
	if (m->iov_count != 1 || m->rma_iov_count != 1)
		return -FI_EINVAL;
	return mrcfi_do_atomic(EP(e), m->msg_iov[0].addr, m->msg_iov[0].count, m->addr,
			 m->rma_iov[0].addr, m->rma_iov[0].key, m->datatype, m->op, flags,
			 m->context);
}

static ssize_t a_inject(struct fid_ep *e, const void *buf, size_t count, fi_addr_t dest,
			uint64_t addr, uint64_t key, enum fi_datatype dt, enum fi_op op)
{
	return mrcfi_do_atomic(EP(e), buf, count, dest, addr, key, dt, op, FI_INJECT, NULL);
}

static ssize_t a_readwrite(struct fid_ep *e, const void *buf, size_t count, void *desc,
			   void *result, void *result_desc, fi_addr_t dest, uint64_t addr,
			   uint64_t key, enum fi_datatype dt, enum fi_op op, void *ctx)
{
	return -FI_EOPNOTSUPP;   /* no fetching atomics in the engine */
}

static ssize_t a_readwritev(struct fid_ep *e, const struct fi_ioc *iov, void **desc, size_t count,
			    struct fi_ioc *resultv, void **result_desc, size_t result_count,
			    fi_addr_t dest, uint64_t addr, uint64_t key, enum fi_datatype dt,
			    enum fi_op op, void *ctx)
{
	return -FI_EOPNOTSUPP;
}

static ssize_t a_readwritemsg(struct fid_ep *e, const struct fi_msg_atomic *m,
			      struct fi_ioc *resultv, void **result_desc, size_t result_count,
			      uint64_t flags)
{
	return -FI_EOPNOTSUPP;
}

static ssize_t a_compwrite(struct fid_ep *e, const void *buf, size_t count, void *desc,
			   const void *compare, void *compare_desc, void *result,
			   void *result_desc, fi_addr_t dest, uint64_t addr, uint64_t key,
			   enum fi_datatype dt, enum fi_op op, void *ctx)
{
	return -FI_EOPNOTSUPP;
}

static ssize_t a_compwritev(struct fid_ep *e, const struct fi_ioc *iov, void **desc, size_t count,
			    const struct fi_ioc *comparev, void **compare_desc,
			    size_t compare_count, struct fi_ioc *resultv, void **result_desc,
			    size_t result_count, fi_addr_t dest, uint64_t addr, uint64_t key,
			    enum fi_datatype dt, enum fi_op op, void *ctx)
{
	return -FI_EOPNOTSUPP;
}

static ssize_t a_compwritemsg(struct fid_ep *e, const struct fi_msg_atomic *m,
			      const struct fi_ioc *comparev, void **compare_desc,
			      size_t compare_count, struct fi_ioc *resultv, void **result_desc,
			      size_t result_count, uint64_t flags)
{
	return -FI_EOPNOTSUPP;
}

static int a_writevalid(struct fid_ep *e, enum fi_datatype dt, enum fi_op op, size_t *count)
{
	if (!mrcfi_atomic_ok(dt, op))
		return -FI_EOPNOTSUPP;
	if (count)
		*count = 1;
	return 0;
}

static int a_novalid(struct fid_ep *e, enum fi_datatype dt, enum fi_op op, size_t *count)
{
	return -FI_EOPNOTSUPP;
}

struct fi_ops_atomic mrcfi_atomic_ops = {
	.size = sizeof(struct fi_ops_atomic), .write = a_write, .writev = a_writev,
	.writemsg = a_writemsg, .inject = a_inject, .readwrite = a_readwrite,
	.readwritev = a_readwritev, .readwritemsg = a_readwritemsg, .compwrite = a_compwrite,
	.compwritev = a_compwritev, .compwritemsg = a_compwritemsg,
	.writevalid = a_writevalid, .readwritevalid = a_novalid, .compwritevalid = a_novalid,
};
