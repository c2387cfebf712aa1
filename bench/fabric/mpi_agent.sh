#!/bin/sh
# mpirun's remote launcher (plm_rsh_agent) on the emulated fabric, in place
# of ssh: "AGENT HOST COMMAND..." runs COMMAND (a shell string, as ssh
# takes it) in host HOST's network namespace $MRC_MPI_PREFIX-HOST, in a new
# session whose id goes to $MRC_MPI_SIDS, so that bench/fabric/mpi.sh can
# end whatever the job leaves behind by that id.  Set by mpi.sh.
set -eu
h=$1
shift
exec ip netns exec "$MRC_MPI_PREFIX-$h" setsid sh -c "echo \$\$ >>'$MRC_MPI_SIDS'; $*"
