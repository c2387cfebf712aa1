/* The dpdk datapath: see datapath.h. */
#include "datapath/datapath.h"

MRC__DP_UNBUILT(mrc__dp_dpdk_ops, "dpdk", "not implemented yet (issue 17)");
