# Shared helpers of the root integration scripts (tests/root/*.sh); sourced
# by bash (arrays),
# not run.  The caller sets B (build dir) and tmp (its scratch dir, where
# host H's mrcctl socket is $tmp/H/mrcctl.sock) and counts failures in fails.
fails=${fails:-0}
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
# until_t SECONDS CMD...: polls CMD (every UNTIL_POLL s, 0.05) until it
# holds; fails after SECONDS.  Readiness is awaited, never slept for.
until_t() {
	local end=$(($(date +%s%N) + $1 * 1000000000)); shift
	while ! "$@"; do
		[ "$(date +%s%N)" -lt $end ] || return 1
		sleep "${UNTIL_POLL:-0.05}"
	done
}
ctl() { local h=$1; shift; $B/bin/mrcctl -s "$tmp/$h/mrcctl.sock" "$@"; }
# Scripts that forge packets (forge.sh, hostile.sh; F is their mrc-fabric
# command): addr H / idx H: host H's address and index as h0's mrcd knows
# them; path SRC DST: the uSID address of plane 0's first path and its NIC.
addr() { ctl h0 -j topology | jq -r --arg h "$1" '.hosts[] | select(.name == $h) | .address'; }
idx() { ctl h0 -j topology | jq -r --arg h "$1" '.hosts[] | select(.name == $h) | .index'; }
path() { $F -j path "$1" "$2" --ev 0 | jq -r '"\(.addr) \(.switches[0])"'; }
stats() { ctl $1 -j stats | jq "$2"; }   # stats H JQ: over host H's mrcctl stats -j
# bulk_start: a verified mrc_bulk of SIZE bytes h0 -> h7 (index I7), on
# the client sockets $tmp/H/mrcd.sock; returns once 5 % has landed (rpid,
# spid: receiver, sender).  live_qp: Q0, Q7, the QP numbers of h0's live
# QP to h7 and its peer, as any local user sees them (mrcctl qps).
# qps_rts WHAT: both still RTS, if the transfer still runs.  bulk_done:
# waits for it and checks it completed and verified.
bulk_start() {
	SIZE_B=$(numfmt --from=iec "$SIZE")
	$B/bin/mrc_bulk -S "$tmp/h7/mrcd.sock" -s "$SIZE" recv >"$tmp/recv" 2>&1 &
	rpid=$!
	until_t 10 sh -c "$B/bin/mrcctl -s $tmp/h7/mrcctl.sock -j status >/dev/null" || true
	$B/bin/mrc_bulk -S "$tmp/h0/mrcd.sock" -s "$SIZE" send $I7 >"$tmp/send" 2>&1 &
	spid=$!
	until_t 60 eval '[ "$(ctl h7 -j status 2>/dev/null | jq -r ".totals.bytes_placed // 0")" -ge $((SIZE_B / 20)) ]' ||
		{ bad "transfer did not reach 5% in 60 s"; cat "$tmp/send" "$tmp/recv"; exit 1; }
}
live_qp() {
	Q0=$(ctl h0 -j qps | jq -r '[.qps[] | select(.state == "RTS" and .host == '$I7')][0].qpn')
	Q7=$(ctl h0 -j qps | jq -r '[.qps[] | select(.state == "RTS" and .host == '$I7')][0].rqpn')
}
qps_rts() {
	local st0 st7
	st0=$(ctl h0 -j qps | jq -r ".qps[] | select(.qpn == $Q0) | .state")
	st7=$(ctl h7 -j qps | jq -r ".qps[] | select(.qpn == $Q7) | .state")
	if kill -0 $spid 2>/dev/null; then
		[ "$st0" = RTS ] && [ "$st7" = RTS ] && ok "both QPs still RTS after $1" ||
			bad "QP state after $1: h0 $st0, h7 $st7"
	else
		echo "note: the transfer ended before the QP check (state h0 '$st0', h7 '$st7')"
	fi
}
bulk_done() {
	local rs rr
	wait $spid; rs=$?; spid=
	wait $rpid; rr=$?; rpid=
	[ $rs = 0 ] && [ $rr = 0 ] && ok "transfer of $SIZE completed and verified: $(tail -n1 "$tmp/recv")" ||
		{ bad "transfer failed (sender $rs, receiver $rr)"; tail -n3 "$tmp/send" "$tmp/recv"; }
}
# Scripts with a mrcd per namespace (bash, sets P, tmp, an associative
# array dpid, and $tmp/topo.json): sock H is host H's client socket;
# start_mrcd H starts mrcd in namespace $P-H with the shared cluster key
# (on the datapath MRC_DATAPATH names, default udp, with MRC_DATAPATH_ARGS;
# MRCD_EXTRA: more options, split on spaces) and waits for its operator
# socket.
sock() { echo "$tmp/$1/mrcd.sock"; }
start_mrcd() {
	local h=$1
	mkdir -p "$tmp/$h"
	[ -f "$tmp/cluster.key" ] || $B/bin/mrcd --genkey "$tmp/cluster.key" >/dev/null || exit 1
	ip netns exec $P-$h $B/bin/mrcd --topology "$tmp/topo.json" --host $h --socket "$(sock $h)" \
		--key_file "$tmp/cluster.key" --datapath "${MRC_DATAPATH:-udp}" \
		${MRC_DATAPATH_ARGS:+--datapath_args "$MRC_DATAPATH_ARGS"} --log_level "${MRCD_LOG_LEVEL:-notice}" \
		${MRCD_EXTRA:-} 2>>"$tmp/$h.log" &
	dpid[$h]=$!
	until_t 10 test -S "$tmp/$h/mrcctl.sock" || { echo "mrcd on $h did not start"; tail "$tmp/$h.log"; exit 1; }
}
# fabric_up TOPO H...: the emulated fabric of TOPO (F: the caller's
# mrc-fabric command, with -p $P) brought up afresh, TOPO copied to
# $tmp/topo.json, and start_mrcd on each host H (bench/nccl.sh,
# bench/nccl-ab.sh).  The caller's trap takes both down.
fabric_up() {
	local t=$1 h; shift
	$F down >/dev/null 2>&1
	$F up "$t" >/dev/null || { echo "mrc-fabric up $t failed"; exit 1; }
	cp "$t" "$tmp/topo.json"
	for h in "$@"; do start_mrcd "$h"; done
}
# paths_map FROM TO: FROM's paths to TO as {"PLANE/SPINE": path} ({}
# before TO is a peer); each script's paths_snap names its pair.
paths_map() {
	ctl "$1" -j paths "$2" 2>/dev/null |
		jq -c '[.paths[] | {key: "\(.plane)/\(.spine)", value: .}] | from_entries' 2>/dev/null ||
		echo '{}'
}
# effect NAME BEFORE JQ: asserts JQ over {b: BEFORE, a: now}, the caller's
# paths_snap (a path map by "PLANE/SPINE"), i.e. that the injected fault
# did what it says.
effect() {
	local after; after=$(paths_snap)
	if jq -e -n --argjson b "$2" --argjson a "$after" "{b: \$b, a: \$a} | $3" >/dev/null; then
		ok "$1: fault took effect ($3)"
	else
		bad "$1: fault had no visible effect: $3 on $(jq -c -n --argjson b "$2" --argjson a "$after" \
			'[$a | to_entries[] | select(.value.exists) | "\(.key) \(.value.state) lost \(.value.lost) (was \($b[.key].lost // 0)) trims \(.value.trims) (was \($b[.key].trims // 0))"]')"
	fi
}
# Scripts that run one process per rank (bash, array ranks): alive holds
# while one still runs; finish NAME SECONDS waits (bounded) for them all,
# kills what is left and returns 0 when every one exited 0.
alive() { local p; for p in "${ranks[@]}"; do kill -0 "$p" 2>/dev/null && return 0; done; return 1; }
finish() {
	local p bad=0
	until_t "$2" eval '! alive' || { echo "  $1: ranks still running after $2 s: killed"; bad=1; }
	for p in "${ranks[@]}"; do kill -9 "$p" 2>/dev/null; wait "$p" || bad=1; done
	ranks=()
	return $bad
}
# need_af_xdp / need_dpdk: exit 77 (skip) saying why when that datapath
# is not built into $B or this host cannot run it.
need_af_xdp() {
	if [ ! -f "$B/datapath/af_xdp_prog.o" ]; then
		echo "SKIP af_xdp not built in (libxdp-dev, libbpf-dev, clang: scripts/deps.sh)"
		exit 77
	fi
	# AF_XDP is address family 44; a kernel without CONFIG_XDP_SOCKETS refuses it.
	if ! python3 -c 'import socket; socket.socket(44, socket.SOCK_RAW).close()' 2>/dev/null; then
		echo "SKIP this kernel has no AF_XDP sockets (CONFIG_XDP_SOCKETS)"
		exit 77
	fi
}
need_dpdk() {
	if ! ldd "$B/bin/mrc-xfer" | grep -q librte_eal; then
		echo "SKIP the dpdk datapath is not built in (install libdpdk-dev: scripts/deps.sh)"
		exit 77
	fi
	if ! ls /usr/lib/*/dpdk/pmds-*/librte_net_af_packet.so* >/dev/null 2>&1; then
		echo "SKIP DPDK's net_af_packet driver is not installed (librte-net-af-packet23)"
		exit 77
	fi
}
# on_datapath DP SUITE: runs tests/root/SUITE (exec, on $B) with
# MRC_DATAPATH=DP; skips (77) when DP cannot run here.
on_datapath() {
	"need_$1"
	export MRC_DATAPATH=$1
	exec "$(dirname "$0")/$2" "$B"
}
# ---- the shared head of the scripts with a fabric and a few mrcd (tclass,
# wireshark, ctl_top, bench/fabric/tclass; F their mrc-fabric command):
# fab_head makes tmp (in /dev/shm where it can: captures write fast),
# dpid, fails and the cleanup trap; on_cleanup CMD adds CMD (eval'd, first:
# capture processes, clients, tmux) to the cleanup; die says FAIL, the
# tail of h0's and h7's mrcd logs when there are some, and exits 1.
fab_head() {
	tmp=$(mktemp -d -p /dev/shm 2>/dev/null || mktemp -d)
	declare -gA dpid
	fails=0
	fab_extra=()
	trap fab_cleanup EXIT
	# A signal ends the script through its EXIT trap: a trap that only
	# cleaned up let it run on after TERM, holding the root lock.
	trap 'exit 143' INT TERM
}
on_cleanup() { fab_extra+=("$1"); }
fab_cleanup() {
	local c p
	for c in "${fab_extra[@]}"; do eval "$c"; done
	for p in "${dpid[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	$F down >/dev/null 2>&1
	rm -rf "$tmp"
}
die() {
	local h
	echo "FAIL $*"
	for h in h0 h7; do [ -s "$tmp/$h.log" ] && { echo "--- mrcd $h log"; tail -n 20 "$tmp/$h.log"; }; done
	exit 1
}
# need_tshark: exit 77 (skip) without tshark and dumpcap.  ts1 FILE
# ARGS...: tshark over capture FILE with mrc's dissector.
LUA=${LUA:-tools/wireshark/mrc.lua}
need_tshark() {
	command -v tshark >/dev/null && command -v dumpcap >/dev/null ||
		{ echo "SKIP tshark/dumpcap not installed (scripts/deps.sh installs tshark)"; exit 77; }
}
ts1() { local f=$1; shift; tshark -n -r "$f" -X "lua_script:$LUA" -o udp.ignore_ipv6_zero_checksum:TRUE "$@" 2>/dev/null; }
