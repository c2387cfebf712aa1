/* The verbs datapath: see datapath.h. */
#include "datapath/datapath.h"

MRC__DP_UNBUILT(mrc__dp_verbs_ops, "verbs", "not implemented yet (issue 17)");
