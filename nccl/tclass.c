/* libnccl-net-mrc.so, NCCL's per-communicator traffic class (docs/nccl.md
 * "Traffic class"): init's ncclNetCommConfig_t (v11) or connect's (v10)
 * becomes the libmrc class of the QPs the comm's connects create. */
#include "nccl/plugin.h"

uint32_t mrcn_tclass_flags(int tc)
{
	/* NCCL's trafficClass is the IP TOS byte; its DSCP is the upper six
	 * bits.  EF (46) and AF11 (10) are what mrcd marks URGENT and BULK
	 * packets with by default (mrcd.conf dscp_urgent, dscp_bulk). */
	if (tc < 0)
		return 0;
	switch (tc >> 2) {
	case 46:
		return MRC_QP_URGENT;
	case 10:
		return MRC_QP_BULK;
	default:
		return 0;
	}
}

ncclResult_t mrcn_connect_cfg(ncclNetCommConfig_t *cfg, int dev, void *handle, void **sendComm,
			      ncclNetDeviceHandle_t **sendDevComm)
{
	struct mrcn_ictx ic = { .qp_flags = cfg ? mrcn_tclass_flags(cfg->trafficClass) : 0 };
	return mrcn_connect(&ic, dev, handle, sendComm, sendDevComm);
}
