#!/bin/sh
# The GPU checks of gpu/ on a machine with a GPU and nvcc but not
# necessarily mrc's other dependencies (no libev, libsodium or cmocka
# needed): builds the CUDA parts with nvcc/gcc directly (not through make,
# whose first pass installs Debian packages), runs tests/gpu/gpucheck
# (staging with real CUDA copies, a kernel posting into a host-consumed
# ring, chan_to_device's registrations), tests/gpu/collcheck (libmrc-coll's
# CUDA reductions against the host table, and collectives on device
# buffers over the kit's mrcd when nccl-gpu-kit/ is carried) and the producer's
# tests/gpu/gpu_selftest, each plainly and under compute-sanitizer when
# present, and emits the PTX of the producer probe for sm_90 with that
# machine's nvcc.  Warnings are not errors here (make enforces them where
# the code is developed).  Everything goes to OUTDIR.
#   usage: scripts/gpu-check.sh OUTDIR        (from the repository root)
set -u
OUT=${1:?usage: scripts/gpu-check.sh OUTDIR}
mkdir -p "$OUT"
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
NVCC=$CUDA_HOME/bin/nvcc
if [ ! -x "$NVCC" ]; then   # nvcc elsewhere on PATH: its toolkit is one level up
	NVCC=$(command -v nvcc) || { echo "gpu-check: no nvcc" | tee "$OUT/summary.txt"; exit 1; }
	CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$NVCC")")")
fi
B=$OUT/build
mkdir -p "$B"
{ date -u; uname -a; nvidia-smi 2>&1 | head -20; "$NVCC" --version | tail -2; } >"$OUT/machine.txt" 2>&1
CF="-std=gnu11 -O2 -g -Wall -Wextra -Wno-unused-parameter -D_GNU_SOURCE -Iinclude -I. -isystem $CUDA_HOME/include"
NF="-std=c++17 -arch=sm_90 -O2 -Iinclude -I."
rc=0
step() { name=$1; shift; if "$@" >>"$OUT/build.log" 2>&1; then echo "$name: ok"; else echo "$name: FAILED (build.log)"; rc=1; fi; }
{
for f in gpu/stage.c gpu/cuda_err.c gpu/cuda_ops.c gpu/cuda_chan.c tests/gpu/gpucheck.c; do
	step "gcc $f" gcc $CF -c "$f" -o "$B/$(basename "$f" .c).o"
done
step "nvcc tests/gpu/gpucheck_kern.cu" "$NVCC" $NF -c tests/gpu/gpucheck_kern.cu -o "$B/gpucheck_kern.o"
step "link gpucheck" "$NVCC" -arch=sm_90 -o "$B/gpucheck" "$B"/*.o -L"$CUDA_HOME/lib64" -lcudart -lpthread
step "nvcc -ptx gpu/ptx_probe.cu" "$NVCC" $NF -ptx gpu/ptx_probe.cu -o "$OUT/ptx_probe.ptx"
step "nvcc -c examples/gpu_put.cu" "$NVCC" $NF -c examples/gpu_put.cu -o "$B/gpu_put.cu.o"
step "nvcc tests/gpu/gpu_selftest.cu" "$NVCC" $NF -o "$B/gpu_selftest" tests/gpu/gpu_selftest.cu -lpthread
# libmrc-coll on device buffers (tests/gpu/collcheck.c): libmrc and
# libmrc-coll from source (libc only), the reduction kernels by nvcc.
mkdir -p "$B/coll"
# mkvar FILE VAR: a simple ':=' list of a .mk file (continuations joined),
# so this list follows the build's without running make.
mkvar() { sed -e ':a' -e '/\\$/N; s/\\\n//; ta' "$1" | sed -n "s/^$2 *:= *//p" | head -1; }
for f in $(mkvar lib/lib.mk LIBMRC_SRCS) $(mkvar coll/coll.mk COLL_SRCS) $(mkvar coll/coll.mk COLL_LIB_EXTRA) \
	coll/memops_cuda.c gpu/cuda_err.c tests/gpu/collcheck.c; do
	step "gcc $f" gcc $CF -c "$f" -o "$B/coll/$(echo "$f" | tr / _ | sed 's/\.c$/.o/')"
done
step "nvcc coll/reduce_cuda.cu" "$NVCC" $NF -c coll/reduce_cuda.cu -o "$B/coll/reduce_cuda.o"
step "link collcheck" "$NVCC" -arch=sm_90 -o "$B/collcheck" "$B"/coll/*.o -L"$CUDA_HOME/lib64" -lcudart -lpthread -lm
if [ -x "$B/gpu_selftest" ]; then   # the producer's own GPU self-test (gpu.h)
	timeout 300 "$B/gpu_selftest" >"$OUT/gpu_selftest.txt" 2>&1; r=$?
	echo "gpu_selftest: exit $r"; [ $r = 0 ] || rc=1
	tail -4 "$OUT/gpu_selftest.txt"
fi
if [ -x "$B/collcheck" ]; then
	# its all-reduce needs a running mrcd: the one of nccl-gpu-kit/
	# (scripts/nccl-gpu-kit.sh, carried along), else that part says SKIP
	K=${MRC_NCCL_KIT:-nccl-gpu-kit}
	cd_sock= cd_pid= cd_dir=
	if [ -x "$K/bin/mrcd" ]; then
		cd_dir=$(mktemp -d)
		kr() { "$K/lib/ld-linux-x86-64.so.2" --library-path "$K/lib" "$@"; }
		kr "$K/bin/mrcd" --genkey "$cd_dir/key" >/dev/null 2>&1 &&
		{ "$K/lib/ld-linux-x86-64.so.2" --library-path "$K/lib" "$K/bin/mrcd" --socket="$cd_dir/mrcd.sock" --port=47312 --key_file="$cd_dir/key" \
			--log_level=notice 2>"$OUT/collcheck-mrcd.log" & cd_pid=$!; }
		for _ in $(seq 200); do [ -S "$cd_dir/mrcd.sock" ] && break; sleep 0.05; done
		[ -S "$cd_dir/mrcd.sock" ] && cd_sock=$cd_dir/mrcd.sock
	fi
	MRC_SOCKET=$cd_sock timeout 300 "$B/collcheck" >"$OUT/collcheck.txt" 2>&1; r=$?
	[ -n "$cd_pid" ] && kill "$cd_pid" 2>/dev/null
	[ -n "$cd_dir" ] && rm -rf "$cd_dir"
	echo "collcheck: exit $r"; [ $r = 0 ] || rc=1
	grep '^collcheck:' "$OUT/collcheck.txt"
fi
if [ -x "$B/gpucheck" ]; then
	timeout 300 "$B/gpucheck" >"$OUT/gpucheck.txt" 2>&1; r=$?
	echo "gpucheck: exit $r"; [ $r = 0 ] || rc=1
	grep '^gpucheck:' "$OUT/gpucheck.txt"
	CS=$(command -v compute-sanitizer || ls "$CUDA_HOME"/bin/compute-sanitizer 2>/dev/null)
	if [ -n "$CS" ]; then
		timeout 300 "$CS" --tool memcheck --error-exitcode 3 "$B/gpucheck" quick >"$OUT/memcheck.txt" 2>&1; r=$?
		echo "compute-sanitizer memcheck (quick): exit $r"; [ $r = 0 ] || rc=1
		tail -3 "$OUT/memcheck.txt"
		[ -x "$B/gpu_selftest" ] && { timeout 300 "$CS" --tool memcheck --error-exitcode 3 \
			"$B/gpu_selftest" -q >"$OUT/memcheck_selftest.txt" 2>&1; r=$?
			echo "compute-sanitizer memcheck gpu_selftest -q: exit $r"; [ $r = 0 ] || rc=1; }
	else
		echo "compute-sanitizer: not found (skipped)"
	fi
fi
} 2>&1 | tee "$OUT/summary.txt"
grep -q 'FAILED\|exit [1-9]' "$OUT/summary.txt" && exit 1
exit $rc
