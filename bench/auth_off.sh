#!/bin/bash
# The "authentication off" baseline of issue 12's benchmark.  In mrc it
# cannot be switched off (tokens are compared on every packet, CTRL is
# sealed), so the baseline is the engine as it was before authentication:
# commit cb92cd3 (wire v1: 52-byte data header, no tokens), against this
# build with bench/engine_vs.sh.
#   bench/auth_off.sh [BUILD]   (MRC_BENCH_REPS=3, MRC_BENCH_MB=256)
# Writes bench/results/auth_off.md.
set -eu
OUT=bench/results/auth_off.md
MRC_BENCH_VS_TITLE="## Authentication off vs on: the engine before authentication (wire v1, cb92cd3) and now (wire v2, tokens)" \
MRC_BENCH_VS_NOTE="'now' also includes the other engine changes since cb92cd3 (liveness, RNR, fence), so the ratio bounds the cost of authentication from above." \
	bench/engine_vs.sh cb92cd3 "${1:-build}" >"$OUT.new"
if grep -q SKIPPED "$OUT.new"; then cat "$OUT.new"; rm -f "$OUT.new"; exit 0; fi
mv "$OUT.new" "$OUT"
cat "$OUT"
