#!/bin/sh
# The main job on its built-in default: bring up a 2-plane SRv6 fabric in
# network namespaces (8 hosts, 4 leaves and 2 spines per plane, 400 Mbit/s
# links), move 256 MiB from h0 to h7 sprayed over every plane and spine,
# fail a spine link silently mid-transfer and then a plane NIC loudly,
# verify every byte (CRC-32C on both ends), print goodput per interval,
# packets per plane, the longest stall, and tear everything down.
set -eu
B=${1:-build}
TOPO=${MRC_DEMO_TOPO:-examples/topologies/demo.json}
BYTES=${MRC_DEMO_BYTES:-256M}
P=mrcdemo
F="$B/bin/mrc-fabric -p $P"
X="$B/bin/mrc-xfer --topology $TOPO"
if [ "$(id -u)" != 0 ]; then
	echo "make demo: needs root (it builds network namespaces); run it as root" >&2
	exit 1
fi
tmp=$(mktemp -d)
cleanup() {
	[ -n "${spid:-}" ] && kill "$spid" 2>/dev/null || true
	$F down >/dev/null 2>&1 || true
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
$F down >/dev/null 2>&1 || true
echo "== fabric: $TOPO"
$F up "$TOPO"
echo "== paths h0 -> h7 (one uSID destination address per plane and spine)"
$F path h0 h7
echo "== transfer $BYTES h0 -> h7; at 1.0 s spine link p0s1-p0l3 is blackholed silently,"
echo "   at 2.5 s the plane-1 NIC of h0 goes down (loud)"
mkfifo "$tmp/ready"
ip netns exec $P-h7 $X --host h7 --listen --bytes "$BYTES" >"$tmp/server" 2>&1 &
spid=$!
(
	sleep 1.0; $F fail p0s1-p0l3 --silent
	sleep 1.5; $F fail h0-p1l0
) &
fpid=$!
# The server is listening once its process is up; the connection manager
# retries for 2 s, so a connect that races its start still succeeds.
ip netns exec $P-h0 timeout 120 $X --host h0 --connect h7 --bytes "$BYTES" --report-ms 250 >"$tmp/client"
wait "$spid" || { cat "$tmp/server"; exit 1; }
spid=
wait "$fpid" || true
python3 - "$tmp/client" "$tmp/server" <<'PY'
import json, sys
c = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
s = [json.loads(l) for l in open(sys.argv[2]) if l.startswith("{")]
summary = next(x for x in c if "goodput_mbit" in x)
planes = next(x for x in c if "planes_tx_pkts" in x)
series = next(x for x in c if "mbit" in x)
got = next(x for x in s if "crc32c" in x)
ok = got["crc32c"] == summary["crc32c"] and got["bytes"] == summary["bytes"]
print("== goodput every %d ms (Mbit/s):" % series["interval_ms"])
print("   " + " ".join("%.0f" % v for v in series["mbit"]))
print("== %d bytes in %.2f s: %.0f Mbit/s; longest stall %.1f ms" % (
    summary["bytes"], summary["seconds"], summary["goodput_mbit"], summary["longest_stall_ms"]))
print("== data packets sent per plane: %s; packets lost on bad paths: %d; paths still ASSUMED_BAD: %d" % (
    planes["planes_tx_pkts"], planes["paths_lost_pkts"], planes["paths_assumed_bad"]))
print("== CRC-32C sender %s receiver %s: %s" % (summary["crc32c"], got["crc32c"],
      "every byte arrived" if ok else "MISMATCH"))
sys.exit(0 if ok else 1)
PY
echo "== tearing down"
