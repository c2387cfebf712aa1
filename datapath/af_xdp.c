/* The af_xdp datapath: see datapath.h. */
#include "datapath/datapath.h"

MRC__DP_UNBUILT(mrc__dp_af_xdp_ops, "af_xdp", "not implemented yet (issue 17)");
