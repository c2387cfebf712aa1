# bench/lib.sh: the shared head of the fabric benchmarks that run two
# mrc-nccl-harness ranks, h0 and h7 of the emulated fabric, each on its
# own mrcd (bench/nccl-ab.sh, bench/xack-fabric.sh).  Source it from the
# repository root with B (the build whose mrcd and mrcctl run), P (the
# fabric's namespace prefix), T (the topology), F (the mrc-fabric command,
# -p $P) and H (the harness) set.
. tests/root/lib.sh

# bench_fab NAME: exits 1 unless root (network namespaces); otherwise
# fab_head (tmp, dpid and the trap that takes the daemons and the fabric
# down) and the fabric up with mrcd on h0 and h7.
bench_fab() {
	if [ "$(id -u)" != 0 ]; then
		echo "$1: needs root (network namespaces)" >&2
		exit 1
	fi
	fab_head
	MRCD_LOG_LEVEL=warning fabric_up "$T" h0 h7
}

# harness2 ARGS...: rank 1 on h7 and rank 0 on h0, both with ARGS and the
# rendezvous in $tmp/rdv (each bounded to 300 s); rank 0's output is left
# in $tmp/r0, rank 1's in $tmp/r1.
harness2() {
	MRC_SOCKET=$tmp/h7/mrcd.sock timeout 300 $H -r 1 -n 2 -R "$tmp/rdv" "$@" >"$tmp/r1" 2>&1 &
	local p=$!
	MRC_SOCKET=$tmp/h0/mrcd.sock timeout 300 $H -r 0 -n 2 -R "$tmp/rdv" "$@" >"$tmp/r0" 2>&1
	wait $p
}
