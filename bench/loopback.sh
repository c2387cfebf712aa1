# One loopback mrcd for the client-path benchmarks (bench/client-path.sh,
# bench/nccl-dgrams.sh); sourced by bash.  The caller sets tmp (its
# scratch dir, holding the cluster key at $tmp/key) and dpid, and may set
# LO_ENV (an array: environment assignments for the daemon, e.g.
# MRC_TRACE=DIR) and LO_ARGS (an array: more mrcd options, e.g.
# --xack=0).  lo_start BUILD starts BUILD's mrcd on $tmp/s (its
# operator socket $tmp/mrcctl.sock) on a random port and waits for it;
# lo_stop stops it.  The wait is 30 s: at load 40 a start took over 10.
lo_start() {
	rm -f "$tmp/s" "$tmp/mrcctl.sock"
	env "${LO_ENV[@]}" "$1/bin/mrcd" --socket="$tmp/s" --port=$((20000 + RANDOM % 20000)) \
		--key_file="$tmp/key" --log_level=warning ${LO_ARGS[@]+"${LO_ARGS[@]}"} 2>>"$tmp/mrcd.log" &
	dpid=$!
	for _ in $(seq 600); do [ -S "$tmp/s" ] && return 0; sleep 0.05; done
	echo "mrcd of $1 did not start" >&2
	exit 1
}
lo_stop() { kill "$dpid"; wait "$dpid" 2>/dev/null; dpid=; }
