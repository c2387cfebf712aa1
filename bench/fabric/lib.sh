# Shared helpers for the fabric benchmarks (bench/fabric/*.sh); sourced, not run.
# Each scenario script sets SCEN (its name) and RATE (Mbit/s on every link)
# before sourcing this file, then calls fab_up.  Everything lives in the
# namespaces of prefix $P (default mrcB); the EXIT/INT/TERM trap kills
# every background process started through bg() and removes the namespaces.
# Raw measurements go to bench/results/raw/$SCEN.jsonl (one JSON object per
# line), which bench/fabric/report.py turns into tables and plots.
set -eu
B=${B:-build}
P=${MRC_BENCH_PREFIX:-mrcB}
REPS=${MRC_BENCH_REPS:-3}
RES=${MRC_BENCH_RESULTS:-bench/results}
RAW="$RES/raw/$SCEN.jsonl"
F="$B/bin/mrc-fabric -p $P"
TMP=$(mktemp -d /tmp/mrcbench.XXXXXX)
TOPO="$TMP/topo.json"
# mrc-xfer and mrcd authenticate each other with a cluster key: one per run.
"$B/bin/mrcd" --genkey "$TMP/cluster.key" >/dev/null 2>&1 || true
X="$B/bin/mrc-xfer --topology $TOPO --key-file $TMP/cluster.key"
BGPIDS=""

if [ "$(id -u)" != 0 ]; then
	echo "bench/fabric/$SCEN: needs root (network namespaces); skipped" >&2
	exit 0
fi
for t in iperf3 mptcpize jq python3; do
	command -v $t >/dev/null || { echo "bench/fabric: $t missing (scripts/deps.sh)" >&2; exit 1; }
done

cleanup() {
	for p in $BGPIDS; do kill "$p" 2>/dev/null || true; done
	for p in $BGPIDS; do wait "$p" 2>/dev/null || true; done
	$F down >/dev/null 2>&1 || true
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say() { echo "[$SCEN] $*"; }

# bg CMD...: run in the background, remember the pid in BGPID and BGPIDS.
bg() {
	"$@" &
	BGPID=$!
	BGPIDS="$BGPIDS $BGPID"
}
# reap PID [SECONDS]: wait for a background process at most SECONDS (default
# 30), then kill it; returns its exit status (or 124 when it was killed).
reap() {
	_p=$1; _t=${2:-30}; _i=0
	while kill -0 "$_p" 2>/dev/null; do
		_i=$((_i + 1))
		if [ $_i -gt $((_t * 10)) ]; then
			kill "$_p" 2>/dev/null || true
			wait "$_p" 2>/dev/null || true
			return 124
		fi
		sleep 0.1
	done
	_rc=0; wait "$_p" || _rc=$?
	return $_rc
}

# hex host index; baseline (ECMP) address of host H (number) in plane PL
baddr() { printf 'fdbb:bb00:%x:%x::1' "$2" "$1"; }
# NIC of host H in plane PL (ports are named after the leaf)
nic() { echo "p$2l$(($1 / HOSTS_PER_LEAF))"; }
HOSTS_PER_LEAF=2
PLANES=2

# fab_up: the demo fabric shape (2 planes, 4 leaves x 2 spines, 8 hosts) at
# $RATE Mbit/s on every link, with the ECMP baseline routes and MPTCP set up
# on every host: limits, and an endpoint (subflow + signal) for each plane
# NIC after plane 0.  The client creates a subflow from its plane-1 address
# (to the server's plane-0 address: unreachable, the plane-1 leaf has no
# route there, which nstat counts as MPJoinSynTxConnectErr) and the server
# announces its plane-1 address (ADD_ADDR), which gives the plane-1 subflow.
fab_up() {
	cat >"$TOPO" <<EOF
{"version": 1, "block": "fcbb:bb00::/32", "mtu": 9216, "rate_mbit": $RATE,
 "generate": {"planes": $PLANES, "leaves_per_plane": 4, "spines_per_plane": 2, "hosts_per_leaf": $HOSTS_PER_LEAF}}
EOF
	$F down >/dev/null 2>&1 || true
	$F up "$TOPO" --ecmp >/dev/null
	for h in 0 1 2 3 4 5 6 7; do
		ip -n $P-h$h mptcp limits set subflow 4 add_addr_accepted 4
		pl=1
		while [ $pl -lt $PLANES ]; do
			ip -n $P-h$h mptcp endpoint add "$(baddr $h $pl)" dev "$(nic $h $pl)" subflow signal
			pl=$((pl + 1))
		done
	done
	say "fabric $P up: 2 planes x 2 spines, 8 hosts, $RATE Mbit/s links (host capacity $((RATE * PLANES)) Mbit/s)"
}

# tx bytes of host H's NICs, one number per plane
nic_tx() {
	_h=$1; _o=""
	for pl in 0 1; do
		_o="$_o $(ip netns exec $P-h$_h cat /sys/class/net/$(nic $_h $pl)/statistics/tx_bytes 2>/dev/null || echo 0)"
	done
	echo $_o
}

# CPU jiffies (user+nice+system+irq+softirq, idle) of the whole machine
cpu_stat() { awk '/^cpu /{print $2+$3+$4+$7+$8, $5+$6}' /proc/stat; }

emit() { echo "$1" >>"$RAW"; }

start_raw() {
	mkdir -p "$RES/raw"
	: >"$RAW"
}

# mrc_run SRC DST BYTES OUT [mrc-xfer options...]: one mrc-xfer transfer
# from host SRC to host DST (numbers); the client's JSON lines go to OUT,
# the server's to OUT.srv.  Returns the client's exit status.
mrc_run() {
	_s=$1; _d=$2; _n=$3; _o=$4; shift 4
	bg ip netns exec $P-h$_d timeout 120 $X --host h$_d --listen --bytes "$_n" "$@" >"$_o.srv" 2>&1
	_sp=$BGPID
	_rc=0
	ip netns exec $P-h$_s timeout 120 $X --host h$_s --connect h$_d --bytes "$_n" "$@" >"$_o" 2>"$_o.err" || _rc=$?
	reap $_sp 10 || true
	return $_rc
}

# ip_run KIND SRC DST OUT [iperf3 client options...]: iperf3 from SRC to the
# plane-0 baseline address of DST; KIND tcp or mptcp (both ends under
# mptcpize).  Client JSON to OUT, server JSON to OUT.srv.
ip_run() {
	_k=$1; _s=$2; _d=$3; _o=$4; shift 4
	_w=""; [ "$_k" = mptcp ] && _w="mptcpize run"
	bg ip netns exec $P-h$_d timeout 120 $_w iperf3 -s -1 -p 5201 -J >"$_o.srv" 2>&1
	_sp=$BGPID
	sleep 0.2
	_rc=0
	ip netns exec $P-h$_s timeout 120 $_w iperf3 -c "$(baddr $_d 0)" -p 5201 -J "$@" >"$_o" 2>"$_o.err" || _rc=$?
	reap $_sp 5 || true
	return $_rc
}
