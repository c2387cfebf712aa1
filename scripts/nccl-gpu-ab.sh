#!/bin/bash
# NCCL all_reduce through the plugin (scripts/nccl-gpu-run.sh) for several
# mrcd builds, options or plugins, alternated, under MPS (both processes'
# kernels at once on the one GPU: docs/gpu.md), on a lent GPU machine with
# the kit of scripts/nccl-gpu-kit.sh carried.  Usage (repository root):
#   scripts/nccl-gpu-ab.sh REPS 'NAME|MRCD|PLUGIN|ARGS' ...
# MRCD: a binary of the kit's bin/ (mrcd, mrcd-base); PLUGIN: a file in
# the kit's plugin/ (empty: libnccl-net-mrc.so); ARGS: added to mrcd's.
# Prints, per variant and size, the median time and [min, max] over REPS;
# every run's summary in $OUT/NAME-REP/.
set -u
K=${MRC_NCCL_KIT:-nccl-gpu-kit}
OUT=${OUT:-/tmp/mrc-nccl-ab}
REPS=${1:?usage: scripts/nccl-gpu-ab.sh REPS 'NAME|MRCD|PLUGIN|ARGS' ...}
shift
mkdir -p "$OUT"
MPSC=$(command -v nvidia-cuda-mps-control) || { echo "no nvidia-cuda-mps-control: not run"; exit 1; }
export CUDA_MPS_PIPE_DIRECTORY=$OUT/.mps CUDA_MPS_LOG_DIRECTORY=$OUT/.mpslog
mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
"$MPSC" -d
trap 'echo quit | "$MPSC"' EXIT
for r in $(seq "$REPS"); do
	for v in "$@"; do
		IFS='|' read -r name m p a <<<"$v"
		MRC_NCCL_MRCD=$m MRC_NCCL_MRCD_ARGS=$a MRC_NCCL_PLUGIN=$PWD/$K/plugin/${p:-libnccl-net-mrc.so} \
			OUT=$OUT/$name-$r timeout 120 bash scripts/nccl-gpu-run.sh >/dev/null 2>&1
		echo "$name rep $r: $(tail -1 "$OUT/$name-$r/summary.txt" 2>/dev/null)"
	done
done
# the table (python3 is on the machine: PyTorch's)
python3 - "$OUT" "$@" <<'PY'
import glob, re, sys
out, variants = sys.argv[1], sys.argv[2:]
print("| variant | bytes | median us | min | max | runs |\n|---|---:|---:|---:|---:|---:|")
for v in variants:
    name = v.split("|")[0]
    t = {}
    for f in sorted(glob.glob(f"{out}/{name}-*/summary.txt")):
        for m in re.finditer(r"^allreduce (\d+) bytes: ([\d.]+) us", open(f).read(), re.M):
            t.setdefault(int(m[1]), []).append(float(m[2]))
    for size in sorted(t):
        x = sorted(t[size])
        print(f"| {name} | {size} | {x[(len(x) - 1) // 2]:.1f} | {x[0]:.1f} | {x[-1]:.1f} | {len(x)} |")
PY
