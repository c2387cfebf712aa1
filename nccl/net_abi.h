/* The NCCL net plugin ABI (versions 8, 9, 10 and 11), written for mrc from
 * NCCL's public plugin interface (ext-net, src/include/plugin/net/) as
 * released in NCCL 2.28.x/2.29.x.  NCCL's own headers are not shipped with
 * the CUDA toolkit, so the structs are declared here; the asserts below pin
 * every size and field offset that NCCL reads, on LP64, so that a layout
 * slip fails the build instead of crashing NCCL.
 *
 * Only the names NCCL resolves (ncclNetPlugin_v11/_v10/_v9/_v8) are exported
 * from libnccl-net-mrc.so; everything here is otherwise private to nccl/. */
#ifndef MRC_NCCL_NET_ABI_H
#define MRC_NCCL_NET_ABI_H

#include <stddef.h>
#include <stdint.h>

/* ncclResult_t's values (nccl.h). */
typedef enum {
	ncclSuccess = 0,
	ncclUnhandledCudaError = 1,
	ncclSystemError = 2,
	ncclInternalError = 3,
	ncclInvalidArgument = 4,
	ncclInvalidUsage = 5,
	ncclRemoteError = 6,
	ncclInProgress = 7,
} ncclResult_t;

#define NCCL_NET_HANDLE_MAXSIZE 128
#define NCCL_PTR_HOST 0x1
#define NCCL_PTR_CUDA 0x2
#define NCCL_PTR_DMABUF 0x4
#define NCCL_NET_MAX_DEVS_PER_NIC 4      /* v9..v11 */

typedef enum {
	NCCL_LOG_NONE = 0, NCCL_LOG_VERSION = 1, NCCL_LOG_WARN = 2, NCCL_LOG_INFO = 3,
	NCCL_LOG_ABORT = 4, NCCL_LOG_TRACE = 5
} ncclDebugLogLevel;
#define NCCL_INIT 0x1ul
#define NCCL_NET 0x10ul
typedef void (*ncclDebugLogger_t)(ncclDebugLogLevel level, unsigned long flags, const char *file,
				  int line, const char *fmt, ...);
typedef ncclResult_t (*ncclProfilerCallback_t)(void **eHandle, int type, void *pHandle,
					       int64_t pluginId, void *extData);

typedef enum { NCCL_NET_DEVICE_HOST = 0, NCCL_NET_DEVICE_UNPACK = 1 } ncclNetDeviceType;
typedef struct {
	ncclNetDeviceType netDeviceType;
	int netDeviceVersion;
	void *handle;
	size_t size;
	int needsProxyProgress;
} ncclNetDeviceHandle_t;

typedef struct {
	int ndevs;
	int devs[NCCL_NET_MAX_DEVS_PER_NIC];
} ncclNetVDeviceProps_t;                 /* same in v9, v10, v11 */

typedef struct {
	int trafficClass;                /* -1: undefined */
} ncclNetCommConfig_t;                   /* v10, v11 */

/* Properties: v9 and v10 end at maxCollBytes; v11 adds
 * maxMultiRequestSize (its tail padding makes the size differ by 8). */
#define MRC_NCCL_PROPS_COMMON                                                         \
	char *name;                                                                   \
	char *pciPath;                                                                \
	uint64_t guid;                                                                \
	int ptrSupport;                                                               \
	int regIsGlobal;                                                              \
	int forceFlush;                                                               \
	int speed;                       /* Mbit/s */                                 \
	int port;                                                                     \
	float latency;                   /* us */                                     \
	int maxComms;                                                                 \
	int maxRecvs;                                                                 \
	ncclNetDeviceType netDeviceType;                                              \
	int netDeviceVersion;                                                         \
	ncclNetVDeviceProps_t vProps;                                                 \
	size_t maxP2pBytes;                                                           \
	size_t maxCollBytes;
typedef struct { MRC_NCCL_PROPS_COMMON } ncclNetProperties_v9_t;
typedef ncclNetProperties_v9_t ncclNetProperties_v10_t;
typedef struct {
	MRC_NCCL_PROPS_COMMON
	int maxMultiRequestSize;
} ncclNetProperties_v11_t;

typedef struct {
	int32_t maxConcurrentPeers, minConcurrentPeers, maxFlowsPerPeer, minFlowsPerPeer;
} ncclNetCommAttr_v11_t;
typedef struct {
	ncclNetCommAttr_v11_t sendCommAttr, recvCommAttr;
	uint32_t op, algo, proto;
} ncclNetAttr_v11_t;

/* The entry points every version shares after connect/accept. */
#define MRC_NCCL_NET_DATA(PHANDLE_ISEND, PHANDLE_IRECV)                                      \
	ncclResult_t (*accept)(void *listenComm, void **recvComm,                            \
			       ncclNetDeviceHandle_t **recvDevComm);                         \
	ncclResult_t (*regMr)(void *comm, void *data, size_t size, int type, void **mhandle); \
	ncclResult_t (*regMrDmaBuf)(void *comm, void *data, size_t size, int type,          \
				    uint64_t offset, int fd, void **mhandle);                \
	ncclResult_t (*deregMr)(void *comm, void *mhandle);                                  \
	ncclResult_t (*isend)(void *sendComm, void *data, size_t size, int tag,              \
			      void *mhandle, PHANDLE_ISEND void **request);                  \
	ncclResult_t (*irecv)(void *recvComm, int n, void **data, size_t *sizes, int *tags,  \
			      void **mhandles, PHANDLE_IRECV void **request);                \
	ncclResult_t (*iflush)(void *recvComm, int n, void **data, int *sizes,               \
			       void **mhandles, void **request);                             \
	ncclResult_t (*test)(void *request, int *done, int *sizes);                          \
	ncclResult_t (*closeSend)(void *sendComm);                                           \
	ncclResult_t (*closeRecv)(void *recvComm);                                           \
	ncclResult_t (*closeListen)(void *listenComm);                                       \
	ncclResult_t (*getDeviceMr)(void *comm, void *mhandle, void **dptr_mhandle);         \
	ncclResult_t (*irecvConsumed)(void *recvComm, int n, void *request);                 \
	ncclResult_t (*makeVDevice)(int *d, ncclNetVDeviceProps_t *props);

#define MRC_NCCL_PH_ISEND void *phandle,
#define MRC_NCCL_PH_IRECV void **phandles,

typedef struct {
	const char *name;
	ncclResult_t (*init)(void **ctx, uint64_t commId, ncclNetCommConfig_t *config,
			     ncclDebugLogger_t logFunction, ncclProfilerCallback_t profFunction);
	ncclResult_t (*devices)(int *ndev);
	ncclResult_t (*getProperties)(int dev, ncclNetProperties_v11_t *props);
	ncclResult_t (*listen)(void *ctx, int dev, void *handle, void **listenComm);
	ncclResult_t (*connect)(void *ctx, int dev, void *handle, void **sendComm,
				ncclNetDeviceHandle_t **sendDevComm);
	MRC_NCCL_NET_DATA(MRC_NCCL_PH_ISEND, MRC_NCCL_PH_IRECV)
	ncclResult_t (*finalize)(void *ctx);
	ncclResult_t (*setNetAttr)(void *ctx, ncclNetAttr_v11_t *netAttr);
} ncclNet_v11_t;

typedef struct {
	const char *name;
	ncclResult_t (*init)(ncclDebugLogger_t logFunction, ncclProfilerCallback_t profFunction);
	ncclResult_t (*devices)(int *ndev);
	ncclResult_t (*getProperties)(int dev, ncclNetProperties_v10_t *props);
	ncclResult_t (*listen)(int dev, void *handle, void **listenComm);
	ncclResult_t (*connect)(int dev, ncclNetCommConfig_t *config, void *handle, void **sendComm,
				ncclNetDeviceHandle_t **sendDevComm);
	MRC_NCCL_NET_DATA(MRC_NCCL_PH_ISEND, MRC_NCCL_PH_IRECV)
} ncclNet_v10_t;

typedef struct {
	const char *name;
	ncclResult_t (*init)(ncclDebugLogger_t logFunction);
	ncclResult_t (*devices)(int *ndev);
	ncclResult_t (*getProperties)(int dev, ncclNetProperties_v9_t *props);
	ncclResult_t (*listen)(int dev, void *handle, void **listenComm);
	ncclResult_t (*connect)(int dev, void *handle, void **sendComm,
				ncclNetDeviceHandle_t **sendDevComm);
	MRC_NCCL_NET_DATA(, )
} ncclNet_v9_t;

/* v8 (NCCL 2.19-2.21, still loaded by later ones as a fallback): no
 * forceFlush, vProps or size limits in the properties; int sizes. */
typedef struct {
	char *name;
	char *pciPath;
	uint64_t guid;
	int ptrSupport, regIsGlobal, speed, port;
	float latency;
	int maxComms, maxRecvs;
	ncclNetDeviceType netDeviceType;
	int netDeviceVersion;
} ncclNetProperties_v8_t;

typedef struct {
	const char *name;
	ncclResult_t (*init)(ncclDebugLogger_t logFunction);
	ncclResult_t (*devices)(int *ndev);
	ncclResult_t (*getProperties)(int dev, ncclNetProperties_v8_t *props);
	ncclResult_t (*listen)(int dev, void *handle, void **listenComm);
	ncclResult_t (*connect)(int dev, void *handle, void **sendComm,
				ncclNetDeviceHandle_t **sendDevComm);
	ncclResult_t (*accept)(void *listenComm, void **recvComm,
			       ncclNetDeviceHandle_t **recvDevComm);
	ncclResult_t (*regMr)(void *comm, void *data, size_t size, int type, void **mhandle);
	ncclResult_t (*regMrDmaBuf)(void *comm, void *data, size_t size, int type, uint64_t offset,
				    int fd, void **mhandle);
	ncclResult_t (*deregMr)(void *comm, void *mhandle);
	ncclResult_t (*isend)(void *sendComm, void *data, int size, int tag, void *mhandle,
			      void **request);
	ncclResult_t (*irecv)(void *recvComm, int n, void **data, int *sizes, int *tags,
			      void **mhandles, void **request);
	ncclResult_t (*iflush)(void *recvComm, int n, void **data, int *sizes, void **mhandles,
			       void **request);
	ncclResult_t (*test)(void *request, int *done, int *sizes);
	ncclResult_t (*closeSend)(void *sendComm);
	ncclResult_t (*closeRecv)(void *recvComm);
	ncclResult_t (*closeListen)(void *listenComm);
	ncclResult_t (*getDeviceMr)(void *comm, void *mhandle, void **dptr_mhandle);
	ncclResult_t (*irecvConsumed)(void *recvComm, int n, void *request);
} ncclNet_v8_t;

/* ---- layout pins (LP64) ------------------------------------------------ */
#define MRC_NCCL_AT(T, f, off) _Static_assert(offsetof(T, f) == (off), #T "." #f " offset")
_Static_assert(sizeof(void *) == 8 && sizeof(size_t) == 8, "LP64 only");
_Static_assert(sizeof(ncclNetDeviceType) == 4, "enum is an int");
_Static_assert(sizeof(ncclNetDeviceHandle_t) == 32, "device handle");
_Static_assert(sizeof(ncclNetVDeviceProps_t) == 20, "vProps");
MRC_NCCL_AT(ncclNetProperties_v11_t, guid, 16);
MRC_NCCL_AT(ncclNetProperties_v11_t, ptrSupport, 24);
MRC_NCCL_AT(ncclNetProperties_v11_t, speed, 36);
MRC_NCCL_AT(ncclNetProperties_v11_t, latency, 44);
MRC_NCCL_AT(ncclNetProperties_v11_t, maxComms, 48);
MRC_NCCL_AT(ncclNetProperties_v11_t, maxRecvs, 52);
MRC_NCCL_AT(ncclNetProperties_v11_t, netDeviceType, 56);
MRC_NCCL_AT(ncclNetProperties_v11_t, vProps, 64);
MRC_NCCL_AT(ncclNetProperties_v11_t, maxP2pBytes, 88);
MRC_NCCL_AT(ncclNetProperties_v11_t, maxCollBytes, 96);
MRC_NCCL_AT(ncclNetProperties_v11_t, maxMultiRequestSize, 104);
_Static_assert(sizeof(ncclNetProperties_v11_t) == 112, "v11 properties");
_Static_assert(sizeof(ncclNetProperties_v9_t) == 104, "v9/v10 properties");
_Static_assert(sizeof(ncclNetAttr_v11_t) == 44, "v11 net attributes");
MRC_NCCL_AT(ncclNet_v11_t, init, 8);
MRC_NCCL_AT(ncclNet_v11_t, listen, 32);
MRC_NCCL_AT(ncclNet_v11_t, accept, 48);
MRC_NCCL_AT(ncclNet_v11_t, isend, 80);
MRC_NCCL_AT(ncclNet_v11_t, irecv, 88);
MRC_NCCL_AT(ncclNet_v11_t, test, 104);
MRC_NCCL_AT(ncclNet_v11_t, closeListen, 128);
MRC_NCCL_AT(ncclNet_v11_t, makeVDevice, 152);
MRC_NCCL_AT(ncclNet_v11_t, finalize, 160);
MRC_NCCL_AT(ncclNet_v11_t, setNetAttr, 168);
_Static_assert(sizeof(ncclNet_v11_t) == 176, "v11 table: 22 slots");
_Static_assert(sizeof(ncclNet_v10_t) == 160, "v10 table: 20 slots");
_Static_assert(sizeof(ncclNet_v9_t) == 160, "v9 table: 20 slots");
MRC_NCCL_AT(ncclNet_v10_t, makeVDevice, 152);
MRC_NCCL_AT(ncclNet_v9_t, makeVDevice, 152);
MRC_NCCL_AT(ncclNetProperties_v8_t, speed, 32);
MRC_NCCL_AT(ncclNetProperties_v8_t, maxRecvs, 48);
MRC_NCCL_AT(ncclNetProperties_v8_t, netDeviceVersion, 56);
_Static_assert(sizeof(ncclNetProperties_v8_t) == 64, "v8 properties");
MRC_NCCL_AT(ncclNet_v8_t, isend, 80);
MRC_NCCL_AT(ncclNet_v8_t, irecvConsumed, 144);
_Static_assert(sizeof(ncclNet_v8_t) == 152, "v8 table: 19 slots");

#endif
