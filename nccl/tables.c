/* libnccl-net-mrc.so, the tables NCCL looks up (docs/nccl.md, "ABI"): v11,
 * and v10/v9/v8 adapters over the same entry points; the only symbols the
 * library exports (nccl/libnccl-net-mrc.map). */
#include <stddef.h>

#include "nccl/plugin.h"

#define EXPORT __attribute__((visibility("default")))

#define DATA_ENTRIES                                                              \
	.accept = mrcn_accept, .regMr = mrcn_regmr,                       \
	.regMrDmaBuf = mrcn_regmr_dmabuf, .deregMr = mrcn_deregmr,        \
	.iflush = mrcn_iflush, .test = mrcn_test,                         \
	.closeSend = mrcn_close_send, .closeRecv = mrcn_close_recv,       \
	.closeListen = mrcn_close_listen, .getDeviceMr = NULL,                \
	.irecvConsumed = NULL, .makeVDevice = mrcn_make_vdevice

EXPORT const ncclNet_v11_t ncclNetPlugin_v11 = {
	.name = "mrc", .init = mrcn_init, .devices = mrcn_devices,
	.getProperties = mrcn_props, .listen = mrcn_listen,
	.connect = mrcn_connect, .isend = mrcn_isend, .irecv = mrcn_irecv,
	DATA_ENTRIES, .finalize = mrcn_finalize, .setNetAttr = mrcn_set_attr,
};

/* v10 and v9 (and v8 below): NCCL 2.19-2.27.  No finalize there: the state lives until
 * the process exits. */
static ncclResult_t v10_init(ncclDebugLogger_t log, ncclProfilerCallback_t prof)
{
	return mrcn_init(NULL, 0, NULL, log, prof);
}
static ncclResult_t v9_init(ncclDebugLogger_t log)
{
	return mrcn_init(NULL, 0, NULL, log, NULL);
}
static ncclResult_t v9_props(int dev, ncclNetProperties_v9_t *p)
{
	ncclNetProperties_v11_t p11;
	ncclResult_t r = mrcn_props(dev, &p11);
	if (r == ncclSuccess)
		memcpy(p, &p11, sizeof(*p));   /* v9/v10 are v11's prefix */
	return r;
}
static ncclResult_t v9_listen(int dev, void *handle, void **lc)
{
	return mrcn_listen(NULL, dev, handle, lc);
}
static ncclResult_t v10_connect(int dev, ncclNetCommConfig_t *cfg, void *handle, void **sc,
				ncclNetDeviceHandle_t **dc)
{
	return mrcn_connect_cfg(cfg, dev, handle, sc, dc);
}
static ncclResult_t v9_connect(int dev, void *handle, void **sc, ncclNetDeviceHandle_t **dc)
{
	return mrcn_connect(NULL, dev, handle, sc, dc);
}
static ncclResult_t v9_isend(void *sc, void *data, size_t size, int tag, void *mh, void **req)
{
	return mrcn_isend(sc, data, size, tag, mh, NULL, req);
}
static ncclResult_t v9_irecv(void *rc, int n, void **data, size_t *sizes, int *tags, void **mh,
			     void **req)
{
	return mrcn_irecv(rc, n, data, sizes, tags, mh, NULL, req);
}

/* v8: int sizes, and properties without the size limits, which NCCL of
 * that age does not know: it must keep its messages within mrcn_max_msg
 * (its defaults do: 512 KiB steps), or isend refuses them. */
static ncclResult_t v8_props(int dev, ncclNetProperties_v8_t *p)
{
	ncclNetProperties_v11_t q;
	ncclResult_t r = mrcn_props(dev, &q);
	if (r != ncclSuccess)
		return r;
	*p = (ncclNetProperties_v8_t){ .name = q.name, .pciPath = q.pciPath, .guid = q.guid,
		.ptrSupport = q.ptrSupport, .regIsGlobal = q.regIsGlobal, .speed = q.speed,
		.port = q.port, .latency = q.latency, .maxComms = q.maxComms,
		.maxRecvs = q.maxRecvs, .netDeviceType = q.netDeviceType,
		.netDeviceVersion = q.netDeviceVersion };
	return ncclSuccess;
}
static ncclResult_t v8_isend(void *sc, void *data, int size, int tag, void *mh, void **req)
{
	*req = NULL;
	if (size < 0)
		return ncclInvalidArgument;
	return mrcn_isend(sc, data, (size_t)size, tag, mh, NULL, req);
}
static ncclResult_t v8_irecv(void *rc, int n, void **data, int *sizes, int *tags, void **mh,
			     void **req)
{
	size_t sz[MRCN_MAX_RECVS];
	*req = NULL;
	if (n < 1 || n > MRCN_MAX_RECVS)
		return ncclInvalidArgument;
	for (int i = 0; i < n; i++) {
		if (sizes[i] < 0)
			return ncclInvalidArgument;
		sz[i] = (size_t)sizes[i];
	}
	return mrcn_irecv(rc, n, data, sz, tags, mh, NULL, req);
}

EXPORT const ncclNet_v8_t ncclNetPlugin_v8 = {
	.name = "mrc", .init = v9_init, .devices = mrcn_devices, .getProperties = v8_props,
	.listen = v9_listen, .connect = v9_connect, .accept = mrcn_accept,
	.regMr = mrcn_regmr, .regMrDmaBuf = mrcn_regmr_dmabuf, .deregMr = mrcn_deregmr,
	.isend = v8_isend, .irecv = v8_irecv, .iflush = mrcn_iflush, .test = mrcn_test,
	.closeSend = mrcn_close_send, .closeRecv = mrcn_close_recv,
	.closeListen = mrcn_close_listen, .getDeviceMr = NULL, .irecvConsumed = NULL,
};

EXPORT const ncclNet_v10_t ncclNetPlugin_v10 = {
	.name = "mrc", .init = v10_init, .devices = mrcn_devices, .getProperties = v9_props,
	.listen = v9_listen, .connect = v10_connect, .isend = mrcn_isend,
	.irecv = mrcn_irecv, DATA_ENTRIES,
};

EXPORT const ncclNet_v9_t ncclNetPlugin_v9 = {
	.name = "mrc", .init = v9_init, .devices = mrcn_devices, .getProperties = v9_props,
	.listen = v9_listen, .connect = v9_connect, .isend = v9_isend, .irecv = v9_irecv,
	DATA_ENTRIES,
};
