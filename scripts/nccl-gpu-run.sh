#!/bin/bash
# On a GPU machine (nvcc/PyTorch, no network), from the repository root,
# with nccl-gpu-kit/ built by scripts/nccl-gpu-kit.sh carried along:
#   1. one mrcd on the loopback fabric (single host), from the kit
#   2. the harness's checks through the plugin on it (no GPU involved)
#   3. an NCCL all_reduce through the plugin (PyTorch's NCCL): two
#      processes on GPU 0 made distinct nodes by NCCL_HOSTID, so NCCL
#      connects them over its net transport, NCCL_NET=mrc; data checked,
#      busbw per size; "Loaded net plugin" must be in NCCL's INFO log
# Results under $OUT (summary.txt, rank logs, mrcd.log).  Exit 0 only if
# every step held.  For side-by-side runs: MRC_NCCL_MRCD (a binary of the
# kit's bin/, default mrcd; e.g. mrcd-base), MRC_NCCL_MRCD_ARGS (options
# added to mrcd's), MRC_NCCL_PLUGIN (a plugin file, default the kit's).
set -u
K=${MRC_NCCL_KIT:-nccl-gpu-kit}
OUT=${OUT:-/tmp/mrc-nccl-out}
mkdir -p "$OUT"
S="$OUT/summary.txt"
run() { "$K/lib/ld-linux-x86-64.so.2" --library-path "$K/lib" "$@"; }
d=$(mktemp -d)
cleanup() { [ -n "${mpid:-}" ] && kill "$mpid" 2>/dev/null; rm -rf "$d"; }
trap cleanup EXIT INT TERM
{
	echo "date: $(date -u +%FT%TZ)  host: $(uname -n)"
	nvidia-smi -L 2>&1 | head -n 2
	python3 -c 'import torch; print("torch", torch.__version__, "nccl", torch.cuda.nccl.version(), "cuda", torch.version.cuda)' 2>&1
} >"$S"
run "$K/bin/mrcd" --genkey "$d/key" >/dev/null || { echo "FAIL: the kit's mrcd does not run" >>"$S"; cat "$S"; exit 1; }
M=${MRC_NCCL_MRCD:-mrcd}
echo "mrcd: $M ${MRC_NCCL_MRCD_ARGS:-}" >>"$S"
# shellcheck disable=SC2086
"$K/lib/ld-linux-x86-64.so.2" --library-path "$K/lib" "$K/bin/$M" --socket="$d/mrcd.sock" --port=47311 --key_file="$d/key" --log_level=notice \
	${MRC_NCCL_MRCD_ARGS:-} 2>"$OUT/mrcd.log" &
mpid=$!
for _ in $(seq 200); do [ -S "$d/mrcd.sock" ] && break; sleep 0.05; done
[ -S "$d/mrcd.sock" ] || { echo "FAIL: mrcd did not start" >>"$S"; cat "$S"; exit 1; }
export MRC_SOCKET="$d/mrcd.sock"
rc=0
# 2. harness (the plugin alone, two processes)
# NCCL finds the plugin by its name (libnccl-net-mrc.so) on LD_LIBRARY_PATH
mkdir "$d/plugin"
cp "${MRC_NCCL_PLUGIN:-$PWD/$K/plugin/libnccl-net-mrc.so}" "$d/plugin/libnccl-net-mrc.so"
P="$d/plugin/libnccl-net-mrc.so"
echo "plugin: ${MRC_NCCL_PLUGIN:-kit}" >>"$S"
"$K/lib/ld-linux-x86-64.so.2" --library-path "$K/lib" "$K/bin/mrc-nccl-harness" -r 1 -n 2 -R "$d/rdv" -k 10 -p "$P" >"$OUT/harness1.log" 2>&1 &
h=$!
run "$K/bin/mrc-nccl-harness" -r 0 -n 2 -R "$d/rdv" -k 10 -p "$P" >"$OUT/harness0.log" 2>&1 || rc=1
wait $h || rc=1
echo "harness: $([ $rc = 0 ] && grep -h '^rank 0 ok' "$OUT/harness0.log" || echo FAIL)" >>"$S"
# 3. NCCL all_reduce through the plugin
export LD_LIBRARY_PATH="$d/plugin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NCCL_NET_PLUGIN=mrc NCCL_NET=mrc NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET \
	NCCL_IB_DISABLE=1 NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 MASTER_ADDR=127.0.0.1 \
	MASTER_PORT=29533 WORLD_SIZE=2
pids=()
for r in 0 1; do
	RANK=$r NCCL_HOSTID="mrc-node$r" timeout 300 python3 scripts/nccl-allreduce.py \
		>"$OUT/rank$r.log" 2>&1 &
	pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || rc=1; done
loaded=$(grep -h -m1 -E "Loaded net plugin|NET/Plugin.*mrc" "$OUT/rank0.log")
using=$(grep -h -m1 -E "Using network mrc" "$OUT/rank0.log")
[ -n "$loaded" ] && [ -n "$using" ] || rc=1
{
	echo "nccl: ${loaded:-FAIL: no 'Loaded net plugin' line}"
	echo "nccl: ${using:-FAIL: NCCL did not use network mrc}"
	grep -h -E "^(allreduce|FAIL)" "$OUT/rank0.log" "$OUT/rank1.log"
	[ $rc = 0 ] && echo "result: PASS" || echo "result: FAIL (logs in $OUT)"
} >>"$S"
cat "$S"
exit $rc
