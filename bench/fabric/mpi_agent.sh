#!/bin/sh
# mpirun's remote launcher (plm_rsh_agent) on the emulated fabric, in place
# of ssh: "AGENT HOST COMMAND..." runs COMMAND (a shell string, as ssh
# takes it) in host HOST's network namespace $MRC_MPI_PREFIX-HOST, in a new
# session whose id goes to $MRC_MPI_SIDS (so that bench/fabric/mpi.sh can
# end whatever a job leaves behind by that id), and waits for it as ssh
# would.  Every "host" has the machine's hostname, and Open MPI names its
# session directories (shared memory files, PMIx stores) after the
# hostname: each orted gets its own base, $MRC_MPI_TMP/HOST, or the orteds
# of one machine trip over each other's files.  Set by mpi.sh.
set -eu
h=$1
shift
mkdir -p "$MRC_MPI_TMP/$h"
export OMPI_MCA_orte_tmpdir_base="$MRC_MPI_TMP/$h" TMPDIR="$MRC_MPI_TMP/$h"
exec ip netns exec "$MRC_MPI_PREFIX-$h" setsid -w sh -c "echo \$\$ >>'$MRC_MPI_SIDS'; $*"
