#!/bin/bash
# Writes bench/results/auth.md from bench/results/raw/auth.jsonl
# (bench/fabric/auth.sh): goodput and 64-byte ping-pong RTT, default
# (tokens) vs AES-256-GCM vs raw UDP, medians [min, max] and ratios, with
# the per-packet figures of bench/results/bench_auth.md appended when
# present.  Runs whose AEAD mode was not in use are named as such.
# Usage: auth_md.sh [RESULTS_DIR]
set -eu
RES=${1:-bench/results}
exec python3 - "$RES" <<'EOF'
import json, os, statistics, sys
res = sys.argv[1]
raw = os.path.join(res, "raw", "auth.jsonl")
rows = [json.loads(l) for l in open(raw) if l.strip()] if os.path.exists(raw) else []
meta = next((r for r in rows if r.get("kind") == "meta"), None)
out = []
w = out.append

def vals(kind, mode, f):
    return [f(r) for r in rows if r.get("kind") == kind and r.get("mode") == mode
            and f(r) is not None]

def s(v, fmt="%.1f"):
    if not v:
        return "n/a"
    return (fmt % statistics.median(v)) + " [" + (fmt % min(v)) + ", " + (fmt % max(v)) + "]"

def ratio(a, b, fmt="%.2f"):
    if not a or not b or not statistics.median(b):
        return "n/a"
    return fmt % (statistics.median(a) / statistics.median(b))

w("# The cost of authentication (issue 12)\n")
w("Produced by `MRC_BENCH_FABRIC=auth make bench` (`bench/fabric/auth.sh`, root), this "
  "file by `bench/fabric/auth_md.sh`.  Medians [min, max] over the repetitions; the "
  "three contenders run one after the other inside each repetition.\n")
if not meta:
    w("Not run (needs root; `bench/fabric/auth.sh`).\n")
else:
    w("Machine: %s, %d CPUs shared by every namespace (AES-NI/PCLMUL: %s), kernel %s; "
      "%s; load average at start %s.  %d repetitions; goodput: %s per run, one QP; "
      "latency: %d round trips of 64 bytes.\n" % (
          meta["cpu"], meta["ncpu"], "yes" if meta.get("aesni") else "no", meta["kernel"],
          meta["date"], meta["load"], meta["reps"], meta["bytes"], meta["pings"]))
    w("Emulated fabric without rate limits (`examples/topologies/fabric-2p-8h.json`, "
      "h0 -> h7), `mrc-xfer` on both ends (the daemon's core built in).  *default*: "
      "tokens in every packet and the MAC'd CTRL envelope at setup, as mrcd runs (there "
      "is no authentication-off mode); *aes-gcm*: `payload_encryption = aes-gcm`, every "
      "payload encrypted and authenticated with its header; *raw UDP*: iperf3 -u -b 0 "
      "(4096-byte datagrams) and `bench/pingpong -u` between the same namespaces.\n")
    used = all(r["aead"]["sealed"] > 0 and r["aead"]["opened"] > 0
               for r in rows if r.get("mode") == "aes-gcm")
    anyg = [r for r in rows if r.get("mode") == "aes-gcm"]
    if anyg and not used:
        w("**The aes-gcm rows are not AEAD results:** mrc-xfer reported no packets sealed "
          "and opened in some runs, i.e. connection setup did not give the connections "
          "their AEAD keys (`mrcd_node_set_aead`, daemon/core/cm.c).\n")
    elif anyg:
        sealed = sum(r["aead"]["sealed"] for r in anyg)
        dropped = sum(r["aead"]["dropped"] for r in anyg)
        w("AEAD in use in every aes-gcm run: %d packets sealed and opened in all, %d "
          "dropped by the mode.\n" % (sealed, dropped))
    # With a base build (MRC_BENCH_BASE_XFER): its two modes, and now / base.
    base = meta.get("base") or ""
    names = [("off", "default (tokens)"), ("aes-gcm", "aes-gcm")]
    if base:
        w("Base contender (same repetitions, run right after *now*'s): `%s`.\n" % base)
        names += [("off@base", "default, base"), ("aes-gcm@base", "aes-gcm, base")]
    g = {m: vals("goodput", m, lambda r: r.get("mbit")) for m, _ in names + [("udp", "")]}
    bad = [r for r in rows if r.get("kind") == "goodput" and r.get("verified") is False]
    w("## Goodput, one QP\n")
    w("| contender | Mbit/s | vs default | vs raw UDP | now / base |\n|---|---:|---:|---:|---:|")
    for m, name in names:
        nb = ratio(g[m], g[m + "@base"]) if base and "@" not in m else ""
        w("| %s | %s | %s | %s | %s |" % (name, s(g[m]), ratio(g[m], g["off"]),
                                          ratio(g[m], g["udp"]), nb))
    w("| raw UDP (received) | %s | %s | 1 | |\n" % (s(g["udp"]), ratio(g["udp"], g["off"])))
    w("Every byte verified (CRC-32C of both buffers): %s.\n" %
      ("yes" if not bad else "NO, %d run(s) failed" % len(bad)))
    w("## Round trip, 64-byte ping-pong (us)\n")
    w("| contender | min | median | p99 | median vs default | now / base |\n"
      "|---|---:|---:|---:|---:|---:|")
    p50 = lambda m: vals("latency", m, lambda r: (r.get("rtt") or {}).get("p50"))
    for m, name in names + [("udp", "raw UDP")]:
        f = lambda k: vals("latency", m, lambda r: (r.get("rtt") or {}).get(k))
        nb = ratio(p50(m), p50(m + "@base")) if base and m != "udp" and "@" not in m else ""
        w("| %s | %s | %s | %s | %s | %s |" % (name, s(f("min")), s(f("p50")), s(f("p99")),
              ratio(f("p50"), p50("off")), nb))
    w("")
ba = os.path.join(res, "bench_auth.md")
w("## Per packet, one core (bench/bench_auth)\n")
if os.path.exists(ba):
    w(open(ba).read().replace("## bench_auth", "### bench_auth").replace("\n### ", "\n#### "))
else:
    w("Not run (`build/bench/bench_auth`).\n")
open(os.path.join(res, "auth.md"), "w").write("\n".join(out) + "\n")
print("bench/fabric/auth_md.sh: wrote %s" % os.path.join(res, "auth.md"))
EOF
