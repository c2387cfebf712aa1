#!/bin/bash
# Every GPU check in one run, bounded to 8 minutes, for a lent GPU machine
# (nvcc, PyTorch, no network), from the repository root with the kit of
# scripts/nccl-gpu-kit.sh carried (MRC_KIT_BASE_MRCD=PATH puts a baseline
# mrcd beside the new one):
#   1. rounds: mrc_gpu_put_cuda (a kernel puts 4 KiB / 1 MiB to the peer,
#      signals, waits for the peer's signal, flushes; every byte checked)
#      and mrc_gpu_put (the same flow from host threads) through one
#      loopback mrcd, for each mrcd of the kit, with the daemon sleeping
#      between work (mrcd-base's default; the current mrcd's auto polls 50 us
#      on 8+ CPUs) and busy-polling (busy_poll_us), each with
#      the two processes time-sliced on the one GPU (CUDA's default) and
#      sharing it at once under MPS (where nvidia-cuda-mps-control is);
#      the daemon's counters after each (timers, ACKs, parked-ring
#      ticks); mrc_pingpong and mrc_bulk through the same mrcd as the
#      host-side references
#   h. host: the client path's rows (bench/client-path.sh) on this
#      machine's cores, one loopback mrcd: the NCCL plugin driven as
#      NCCL's proxy drives it (mrc-nccl-harness -b), libmrc directly (-d)
#      and TCP (-T) at 4 KiB and 4 MiB; mrc_pingpong 64 B busy and
#      sleeping beside raw UDP's (bench/pingpong); 64-byte WRITEs through
#      mrcd beside 64-byte UDP datagrams (bench_ring part 3)
#   2. scripts/nccl-gpu-run.sh: the harness and a PyTorch NCCL all_reduce
#      through the plugin, time-sliced and under MPS
#   3. scripts/gpu-check.sh: gpucheck, collcheck (device-buffer
#      collectives over the kit's mrcd), gpu_selftest, compute-sanitizer
# MRC_GPU_STEPS (default "rounds host nccl check") picks steps; for the
# rounds, MRC_GPU_SHARING (default "sliced mps"), MRC_GPU_MRCDS (default
# "mrcd-base mrcd") and MRC_GPU_ROUND_OPTS (mrcd option sets separated by
# ";", default ";--busy_poll_us=200000") pick what is varied.
# Results: $OUT/summary.txt, rounds.txt, and one tarball per step.
set -u
K=${MRC_NCCL_KIT:-nccl-gpu-kit}
OUT=${OUT:-/tmp/mrc-gpu-out}
mkdir -p "$OUT"
S=$OUT/summary.txt
T0=$(date +%s)
left() { echo $((${MRC_GPU_BUDGET:-480} - ($(date +%s) - T0))); }
kr() { "$K/lib/ld-linux-x86-64.so.2" --library-path "$K/lib" "$@"; }
d=$(mktemp -d)
mpid=
cleanup() { [ -n "$mpid" ] && kill "$mpid" 2>/dev/null; mps off; rm -rf "$d"; }
trap cleanup EXIT
trap 'exit 143' INT TERM
{
	echo "date: $(date -u +%FT%TZ)  host: $(uname -n)  cores: $(nproc)"
	nvidia-smi -L 2>&1 | head -n 2
	nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>&1 | head -1
} >"$S"
[ -x "$K/bin/mrcd" ] || { echo "FAIL: no kit at $K (scripts/nccl-gpu-kit.sh)" >>"$S"; cat "$S"; exit 1; }

# mrcd_up BINARY [OPTION...]: one loopback mrcd, its sockets in $d
mrcd_up() {
	local m=$1; shift
	rm -f "$d/s" "$d/c"
	kr "$K/bin/$m" --genkey "$d/key" >/dev/null 2>&1
	# the loader itself in the background (a function there would be a
	# subshell, and killing it would leave mrcd running)
	"$K/lib/ld-linux-x86-64.so.2" --library-path "$K/lib" "$K/bin/$m" --socket="$d/s" --ctl_socket="$d/c" --port=47311 --key_file="$d/key" \
		--log_level=warning "$@" 2>>"$OUT/mrcd.log" &
	mpid=$!
	for _ in $(seq 200); do [ -S "$d/s" ] && return 0; sleep 0.05; done
	return 1
}
mrcd_down() { kill "$mpid" 2>/dev/null; wait "$mpid" 2>/dev/null; mpid=; }

# round PROGRAM SIZE ROUNDS SID: server and client through $d/s
round() {
	local p=$1 sz=$2 n=$3 sid=$4
	timeout 60 "$K/lib/ld-linux-x86-64.so.2" --library-path "$K/lib" "$K/bin/$p" -S "$d/s" \
		-s "$sz" -n "$n" -i "$sid" server >"$d/srv" 2>&1 &
	local sp=$!
	for _ in $(seq 200); do grep -q serving "$d/srv" && break; sleep 0.05; done
	local r
	r=$(timeout 60 "$K/lib/ld-linux-x86-64.so.2" --library-path "$K/lib" "$K/bin/$p" -S "$d/s" \
		-s "$sz" -n "$n" -i "$sid" client 0 2>&1)
	wait $sp
	echo "$r" | sed "s/^mrc_gpu_put: //; s/^/  $p $sz x $n: /"
}

# MPS: without it, kernels of two processes on one GPU run by turns
# (time slices of a few ms), so a kernel spinning for its peer's signal
# holds the GPU while the peer's kernel, which would send it, waits.
MPSC=$(command -v nvidia-cuda-mps-control)
mps() {
	if [ "$1" = on ]; then
		[ -n "$MPSC" ] || return 1
		export CUDA_MPS_PIPE_DIRECTORY=$d/mps CUDA_MPS_LOG_DIRECTORY=$d/mpslog
		mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
		"$MPSC" -d
	else
		[ -n "${CUDA_MPS_PIPE_DIRECTORY:-}" ] && echo quit | "$MPSC"
		unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
	fi
	return 0
}

STEPS=${MRC_GPU_STEPS:-rounds host nccl check}
step() { case " $STEPS " in *" $1 "*) return 0 ;; esac; return 1; }
R=$OUT/rounds.txt
: >"$R"
sid=900
step rounds &&
for sharing in ${MRC_GPU_SHARING:-sliced mps}; do
	if [ $sharing = mps ] && ! mps on; then
		echo "== MPS: nvidia-cuda-mps-control not found, skipped" >>"$R"
		continue
	fi
	for m in ${MRC_GPU_MRCDS:-mrcd-base mrcd}; do
		[ -x "$K/bin/$m" ] || continue
		IFS=";" read -r -a opts <<<"${MRC_GPU_ROUND_OPTS-;--busy_poll_us=200000}"
		[ ${#opts[@]} = 0 ] && opts=("")
		for opt in "${opts[@]}"; do
			echo "== GPU $sharing, $m ${opt:-(its default busy_poll_us: mrcd-base sleeps between work, mrcd auto)}" >>"$R"
			mrcd_up "$m" $opt || { echo "  mrcd did not start" >>"$R"; continue; }
			for spec in "mrc_gpu_put_cuda 4k 200" "mrc_gpu_put_cuda 1M 50" "mrc_gpu_put 4k 500"; do
				sid=$((sid + 1))
				# shellcheck disable=SC2086
				round $spec $sid >>"$R"
			done
			if [ $sharing = sliced ]; then   # host-only references, once per daemon
				sid=$((sid + 1))
				kr "$K/bin/mrc_pingpong" -S "$d/s" -s 4096 -n 2000 -i $sid server >/dev/null 2>&1 &
				rp=$!
				sleep 0.3
				echo "  $(kr "$K/bin/mrc_pingpong" -S "$d/s" -s 4096 -n 2000 -i $sid client 0 2>&1 | tail -1)" >>"$R"
				wait $rp
				sid=$((sid + 1))
				kr "$K/bin/mrc_bulk" -S "$d/s" -s 256M -i $sid recv >/dev/null 2>&1 &
				rp=$!
				sleep 0.3
				echo "  mrc_bulk: $(kr "$K/bin/mrc_bulk" -S "$d/s" -s 256M -p 3 -i $sid send 0 2>&1 | tail -1)" >>"$R"
				wait $rp
			fi
			kr "$K/bin/mrcctl" -s "$d/c" stats 2>&1 | grep -E \
				"^ *(tx_data|tx_acks|tx_pb_acks|ack_delay_expired|rto_fires|tx_retx|timer_superseded|notify_[a-z]+|fine_[a-z]+) " \
				| tr -s ' ' | tr '\n' ',' | sed 's/^/  counters:/; s/,$/\n/' >>"$R"
			mrcd_down
		done
	done
	[ $sharing = mps ] && mps off
done
cat "$R" >>"$S"

if step host; then
	echo "== host: the client path on this machine ($(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg))" >>"$S"
	h() {   # harness ARGS: rank 0's table rows
		kr "$K/bin/mrc-nccl-harness" -r 1 -n 2 -R "$d/rdv" "$@" >"$d/h1" 2>&1 &
		local p=$!
		kr "$K/bin/mrc-nccl-harness" -r 0 -n 2 -R "$d/rdv" "$@" 2>&1 | grep -E '^\| [a-z]+ \| [0-9]+ \|' | sed 's/^/  /'
		wait $p
	}
	# base (the kit's mrcd-base and plugin-base, when built with them) and
	# new, one after the other on the same cores
	for v in base new; do
		m=mrcd P=$PWD/$K/plugin/libnccl-net-mrc.so
		if [ $v = base ]; then
			[ -x "$K/bin/mrcd-base" ] && [ -f "$K/plugin/libnccl-net-mrc-base.so" ] || continue
			m=mrcd-base P=$PWD/$K/plugin/libnccl-net-mrc-base.so
		fi
		mrcd_up $m || echo "  $v: mrcd did not start" >>"$S"
		export MRC_SOCKET=$d/s
		{
			echo "  $v: harness rows: | mode | bytes | ... (header in tools/nccl-harness/harness.c)"
			for z in 4096 4194304; do
				timeout 60 bash -c "$(declare -f h kr); K=$K d=$d h -b -z $z -p $P"
				timeout 60 bash -c "$(declare -f h kr); K=$K d=$d h -d -z $z"
				timeout 60 bash -c "$(declare -f h kr); K=$K d=$d h -T -z $z"
			done
			for w in "" -w; do
				sid=$((sid + 1))
				kr "$K/bin/mrc_pingpong" -S "$d/s" $w -s 64 -n 5000 -i $sid server >/dev/null 2>&1 &
				rp=$!
				sleep 0.3
				echo "  $v: mrc_pingpong 64 B ${w:-busy}: $(timeout 60 "$K/lib/ld-linux-x86-64.so.2" --library-path "$K/lib" \
					"$K/bin/mrc_pingpong" -S "$d/s" $w -s 64 -n 5000 -i $sid client 0 2>&1 | tail -1)"
				wait $rp
			done
			kr "$K/bin/pingpong" -s -u -p 47390 -n 5000 -b 64 >/dev/null 2>&1 &
			rp=$!
			sleep 0.3
			echo "  $v: raw UDP 64 B: $(timeout 60 "$K/lib/ld-linux-x86-64.so.2" --library-path "$K/lib" \
				"$K/bin/pingpong" -c ::1 -u -p 47390 -n 5000 -b 64 2>&1 | tail -1)"
			wait $rp
			sid=$((sid + 1))
			kr "$K/bin/mrc_bulk" -S "$d/s" -s 256M -i $sid recv >/dev/null 2>&1 &
			rp=$!
			sleep 0.3
			echo "  $v: mrc_bulk: $(kr "$K/bin/mrc_bulk" -S "$d/s" -s 256M -p 3 -i $sid send 0 2>&1 | tail -1)"
			wait $rp
		} >>"$S" 2>&1
		unset MRC_SOCKET
		mrcd_down
	done
	export MRC_SOCKET=$d/s
	P=$PWD/$K/plugin/libnccl-net-mrc.so
	# The same sleeping ping-pong and plugin round trip with mrcd sleeping
	# at once after its last work (busy_poll_us=0; the default, auto,
	# polls 50 us on 8 or more CPUs): the wake-ups auto saves
	mrcd_up mrcd --busy_poll_us=0 || echo "  mrcd (busy_poll_us=0) did not start" >>"$S"
	{
		sid=$((sid + 1))
		kr "$K/bin/mrc_pingpong" -S "$d/s" -w -s 64 -n 5000 -i $sid server >/dev/null 2>&1 &
		rp=$!
		sleep 0.3
		echo "  busy_poll_us=0: mrc_pingpong 64 B -w: $(timeout 60 "$K/lib/ld-linux-x86-64.so.2" \
			--library-path "$K/lib" "$K/bin/mrc_pingpong" -S "$d/s" -w -s 64 -n 5000 -i $sid \
			client 0 2>&1 | tail -1)"
		wait $rp
		echo "  busy_poll_us=0: $(timeout 60 bash -c "$(declare -f h kr); K=$K d=$d h -b -z 4096 -p $P")"
	} >>"$S" 2>&1
	unset MRC_SOCKET
	mrcd_down
	# The plugin's round trip with cross-QP ACKs (xack = 1): a comm pair is
	# two QPs, so without it every message's ACK is a datagram of its own,
	# the plugin's main extra per message over libmrc -d (docs/nccl.md "The
	# plugin's extra time per round trip"); with mrcd busy-polling the reply
	# comes within the 32 us hold and can carry it
	export MRC_SOCKET=$d/s
	mrcd_up mrcd --xack=1 || echo "  mrcd (xack=1) did not start" >>"$S"
	{
		echo "  xack=1: $(timeout 60 bash -c "$(declare -f h kr); K=$K d=$d h -b -z 4096 -p $P")"
		echo "  xack=1: $(timeout 60 bash -c "$(declare -f h kr); K=$K d=$d h -d -z 4096")"
	} >>"$S" 2>&1
	unset MRC_SOCKET
	mrcd_down
	for m in mrcd-base mrcd; do
		[ -x "$K/bin/$m" ] || continue
		printf '#!/bin/sh\nexec %s --library-path %s %s "$@"\n' "$PWD/$K/lib/ld-linux-x86-64.so.2" \
			"$PWD/$K/lib" "$PWD/$K/bin/$m" >"$d/mrcd-wrap"
		chmod +x "$d/mrcd-wrap"
		MRCD_BIN=$d/mrcd-wrap MRC_BENCH_RUNS=3 MRC_BENCH_RING_N=20000 MRC_BENCH_RING_PART=3 \
			timeout 120 "$K/lib/ld-linux-x86-64.so.2" --library-path "$K/lib" "$K/bin/bench_ring" 2>&1 |
			grep -E '^\| 64-byte' | sed "s/^/  $m: /" >>"$S"
	done
fi

step nccl &&
for sharing in sliced mps; do
	[ $sharing = mps ] && { mps on || continue; }
	echo "== nccl (scripts/nccl-gpu-run.sh), GPU $sharing, $(left) s left" >>"$S"
	OUT=$d/nccl-$sharing timeout $(( $(left) > 200 ? 200 : $(left) )) bash scripts/nccl-gpu-run.sh >/dev/null 2>&1
	echo "exit $?" >>"$S"
	cat "$d/nccl-$sharing/summary.txt" >>"$S" 2>/dev/null
	[ $sharing = mps ] && mps off
done
tar -C "$d" -czf "$OUT/nccl.tgz" nccl-sliced nccl-mps 2>/dev/null

if step check; then
	echo "== gpu-check (scripts/gpu-check.sh), $(left) s left" >>"$S"
	timeout $(( $(left) > 30 ? $(left) - 10 : 20 )) sh scripts/gpu-check.sh "$d/gc" >/dev/null 2>&1
	echo "exit $?" >>"$S"
	cat "$d/gc/summary.txt" >>"$S" 2>/dev/null
	rm -rf "$d/gc/build"
	tar -C "$d" -czf "$OUT/gpucheck.tgz" gc 2>/dev/null
fi
echo "total $(( $(date +%s) - T0 )) s" >>"$S"
cat "$S"
