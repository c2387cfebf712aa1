#!/bin/bash
# The cost of authentication end to end (issue 12, "Benchmark"), on the
# emulated fabric WITHOUT rate limits (examples/topologies/fabric-2p-8h.json,
# h0 -> h7), with mrc-xfer (the daemon's core built in: engine, datapath,
# connection manager, and the AEAD glue of daemon/core/enc.c).  Side by
# side in each repetition:
#   default  the daemon as it runs by default: tokens in every packet (and
#            the CTRL envelope's MAC at setup) -- authentication is
#            mandatory, there is no "off" to compare with;
#   aes-gcm  payload_encryption = aes-gcm: payloads encrypted, payload and
#            header authenticated (AES-256-GCM per packet);
#   udp      raw UDP on the same pair of namespaces (iperf3 -u -b 0, 4096-
#            byte datagrams; bench/pingpong -u), the kernel's ceiling here.
# Goodput: one QP, BYTES per run, every byte verified (CRC-32C of both
# buffers).  Latency: 64-byte WRITE_WITH_IMM ping-pong, PINGS round trips.
# The aes-gcm runs count as AEAD only when mrc-xfer reports packets sealed
# and opened: until connection setup gives connections their AEAD keys
# (mrcd_node_set_aead, called by daemon/core/cm.c), the mode is asked for
# but unused, and auth.md says so instead of passing it off as a result.
# MRC_BENCH_BASE_XFER=PATH adds the same two modes run with another
# mrc-xfer build (e.g. the commit before a change: issue 29 measured its
# per-packet tags against 56f5c0f this way), in the same repetitions.
# Raw: bench/results/raw/auth.jsonl; summary: bench/results/auth.md.
#   MRC_BENCH_REPS (5), MRC_BENCH_AUTH_BYTES (256M), MRC_BENCH_PINGS (5000)
set -eu
B=${B:-${1:-build}}
P=${MRC_BENCH_AUTH_PREFIX:-mrcG}
REPS=${MRC_BENCH_REPS:-5}
BYTES=${MRC_BENCH_AUTH_BYTES:-256M}
PINGS=${MRC_BENCH_PINGS:-5000}
RES=${MRC_BENCH_RESULTS:-bench/results}
RAW="$RES/raw/auth.jsonl"
T=examples/topologies/fabric-2p-8h.json
F="$B/bin/mrc-fabric -p $P"
X="$B/bin/mrc-xfer --topology $T"
say() { echo "[auth] $*" >&2; }

if [ "$(id -u)" != 0 ]; then
	say "needs root (network namespaces); skipped" >&2
	exit 0
fi
for t in iperf3 jq python3; do
	command -v $t >/dev/null || { say "$t missing (scripts/deps.sh)" >&2; exit 1; }
done
for x in bin/mrc-xfer bin/mrc-fabric bench/pingpong; do
	[ -x "$B/$x" ] || { say "$B/$x missing (make all bench)" >&2; exit 1; }
done
TMP=$(mktemp -d /tmp/mrcbench-auth.XXXXXX)
# mrc-xfer, like mrcd, needs the cluster key: one for this run.
"$B/bin/mrcd" --genkey "$TMP/cluster.key" >/dev/null || { say "mrcd --genkey failed"; exit 1; }
X="$X --key-file $TMP/cluster.key"
XNOW=$X
XBASE=${MRC_BENCH_BASE_XFER:+$MRC_BENCH_BASE_XFER --topology $T --key-file $TMP/cluster.key}
SPID=
cleanup() {
	[ -z "$SPID" ] || kill "$SPID" 2>/dev/null || true
	$F down >/dev/null 2>&1 || true
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
emit() { echo "$1" >>"$RAW"; }
addr7() { echo 'fdbb:bb00:0:7::1'; }   # h7's plane-0 ECMP address (--ecmp)

# xfer MODE SID ARGS...: one mrc-xfer pair h7 (listen) <- h0 (connect);
# prints the client's and the server's JSON lines (one per line; a
# ping-pong server is stopped when its client is done, so only the
# client's).
xfer() {
	local mode=$1 sid=$2 rc=0
	shift 2
	ip netns exec $P-h7 timeout 60 $X --host h7 --listen --sid "$sid" \
		--payload-encryption "$mode" "$@" >"$TMP/s" 2>"$TMP/se" &
	SPID=$!
	sleep 0.3
	ip netns exec $P-h0 timeout 60 $X --host h0 --connect h7 --sid "$sid" \
		--payload-encryption "$mode" "$@" >"$TMP/c" 2>"$TMP/ce" || rc=$?
	case " $* " in
	*" --pingpong "*)
		# a ping-pong server answers until stopped: its client is done
		kill "$SPID" 2>/dev/null || true
		wait "$SPID" 2>/dev/null || true ;;
	*) wait "$SPID" || rc=$((rc ? rc : $?)) ;;
	esac
	SPID=
	[ $rc = 0 ] || say "mrc-xfer $mode $* FAILED (exit $rc): $(tail -n2 "$TMP/ce" "$TMP/se" | tr '\n' ' ')"
	cat "$TMP/c" "$TMP/s"
}
# aead JSON of a run: {"sealed": client's, "opened": server's, ...}
aead_of() {
	jq -sc '[.[] | select(.aead) | .aead] | {sealed: (map(.sealed) | add // 0),
		opened: (map(.opened) | add // 0), dropped: (map(.dropped) | add // 0)}' "$1" \
		2>/dev/null || echo '{"sealed":0,"opened":0,"dropped":0}'
}

mkdir -p "$RES/raw"
: >"$RAW"
$F down >/dev/null 2>&1 || true
$F up "$T" --ecmp >/dev/null
say "fabric $P up ($T: no rate limit), $(nproc) CPUs shared by every namespace"
aes=$(grep -qw aes /proc/cpuinfo && grep -qw pclmulqdq /proc/cpuinfo && echo true || echo false)
[ -z "$XBASE" ] || say "base contender: $MRC_BENCH_BASE_XFER"
emit "{\"kind\":\"meta\",\"base\":\"${MRC_BENCH_BASE_XFER:-}\",\"date\":\"$(date -u '+%Y-%m-%d %H:%M UTC')\",\"cpu\":\"$(awk -F': ' '/model name/{print $2; exit}' /proc/cpuinfo)\",\"ncpu\":$(nproc),\"aesni\":$aes,\"kernel\":\"$(uname -r)\",\"bytes\":\"$BYTES\",\"pings\":$PINGS,\"reps\":$REPS,\"load\":\"$(cut -d' ' -f1-3 /proc/loadavg)\"}"

sid=8100
for r in $(seq 1 "$REPS"); do
	for c in off aes-gcm ${XBASE:+off@base aes-gcm@base}; do
		mode=${c%@base}
		case $c in *@base) X=$XBASE ;; *) X=$XNOW ;; esac
		sid=$((sid + 1))
		xfer $mode $sid --bytes "$BYTES" >"$TMP/g"
		sc=$(jq -r 'select(.role == "server" and .crc32c) | .crc32c' "$TMP/g" 2>/dev/null || true)
		cc=$(jq -r 'select(.role == "client" and .crc32c) | .crc32c' "$TMP/g" 2>/dev/null || true)
		mbit=$(jq -r 'select(.goodput_mbit) | .goodput_mbit' "$TMP/g" 2>/dev/null || true)
		retx=$(jq -r 'select(.role == "client" and .retx != null) | .retx' "$TMP/g" 2>/dev/null || true)
		ok=$([ -n "$cc" ] && [ "$cc" = "$sc" ] && echo true || echo false)
		emit "{\"kind\":\"goodput\",\"rep\":$r,\"mode\":\"$c\",\"mbit\":${mbit:-null},\"verified\":$ok,\"retx\":${retx:-null},\"aead\":$(aead_of "$TMP/g")}"
		say "goodput rep $r/$REPS $c: ${mbit:-?} Mbit/s (verified $ok, retx ${retx:-?}, aead $(aead_of "$TMP/g"))"
		sid=$((sid + 1))
		xfer $mode $sid --bytes 64 --pingpong "$PINGS" >"$TMP/p"
		lat=$(jq -c 'select(.rtt_us_p50) | {min: .rtt_us_min, p50: .rtt_us_p50, p99: .rtt_us_p99}' "$TMP/p" 2>/dev/null || true)
		emit "{\"kind\":\"latency\",\"rep\":$r,\"mode\":\"$c\",\"rtt\":${lat:-null},\"aead\":$(aead_of "$TMP/p")}"
		say "latency rep $r/$REPS $c: ${lat:-FAILED}"
	done
	X=$XNOW
	# raw UDP, same pair: goodput (4096-byte datagrams) and ping-pong
	ip netns exec $P-h7 timeout 30 iperf3 -s -1 -p 5402 -J >"$TMP/u.srv" 2>&1 &
	SPID=$!
	sleep 0.3
	ip netns exec $P-h0 timeout 30 iperf3 -u -b 0 -l 4096 -t 4 -c "$(addr7)" -p 5402 -J >"$TMP/u" 2>"$TMP/u.err" || say "udp rep $r FAILED: $(cat "$TMP/u.err")"
	wait "$SPID" || true
	ug=$(jq -r '.end.sum.bits_per_second * (1 - .end.sum.lost_percent / 100) / 1e6' "$TMP/u" 2>/dev/null || echo null)
	ip netns exec $P-h7 timeout 60 "$B/bench/pingpong" -s -u -p 7402 -n "$PINGS" -b 64 2>/dev/null &
	SPID=$!
	sleep 0.2
	ip netns exec $P-h0 timeout 60 "$B/bench/pingpong" -c "$(addr7)" -u -p 7402 -n "$PINGS" -b 64 >"$TMP/upc" 2>/dev/null || say "udp ping-pong rep $r FAILED"
	wait "$SPID" || true
	SPID=
	ul=$(jq -c 'select(.rtt_us_p50) | {min: .rtt_us_min, p50: .rtt_us_p50, p99: .rtt_us_p99}' "$TMP/upc" 2>/dev/null || true)
	emit "{\"kind\":\"goodput\",\"rep\":$r,\"mode\":\"udp\",\"mbit\":$ug,\"verified\":null}"
	emit "{\"kind\":\"latency\",\"rep\":$r,\"mode\":\"udp\",\"rtt\":${ul:-null}}"
	say "udp rep $r/$REPS: $ug Mbit/s received, ping-pong ${ul:-FAILED}"
done
$F down >/dev/null 2>&1 || true
bash bench/fabric/auth_md.sh "$RES"
