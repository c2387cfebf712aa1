#!/bin/bash
# Writes bench/results/daemon.md: the fabric part from
# bench/results/raw/daemon.jsonl (bench/fabric/daemon.sh) as tables of
# medians [min, max], followed by bench/results/bench_ring.md and
# bench/results/bench_qpmem.md as the benchmarks printed them.  Parts that
# are missing are named, not invented.  Usage: daemon_md.sh [RESULTS_DIR]
set -eu
RES=${1:-bench/results}
exec python3 - "$RES" <<'EOF'
import json, os, statistics, sys
res = sys.argv[1]
raw = os.path.join(res, "raw", "daemon.jsonl")
out = []
w = out.append

def s(v, fmt="%.1f"):
    v = [x for x in v if x is not None]
    if not v:
        return "n/a"
    return (fmt % statistics.median(v)) + " [" + (fmt % min(v)) + ", " + (fmt % max(v)) + "]"

def med(v):
    v = [x for x in v if x is not None]
    return statistics.median(v) if v else None

w("# mrcd and libmrc benchmarks (issue 4)\n")
w("Produced by `make bench` (`scripts/run-bench.sh`): the fabric part by "
  "`bench/fabric/daemon.sh` (root), the ring and memory parts by `bench/bench_ring` "
  "and `bench/bench_qpmem`; this file by `bench/fabric/daemon_md.sh`.  Medians "
  "[min, max] over the runs.\n")
rows = []
if os.path.exists(raw):
    rows = [json.loads(l) for l in open(raw) if l.strip()]
meta = next((r for r in rows if r.get("kind") == "meta"), None)
gp = [r for r in rows if r.get("kind") == "goodput"]
lat = [r for r in rows if r.get("kind") == "latency"]
w("## Over the emulated fabric, no rate limits\n")
if not meta:
    w("Not run (needs root; `bench/fabric/daemon.sh`).\n")
else:
    w("Machine: %s, %d CPUs (shared by every namespace: hosts, switches, daemons), "
      "kernel %s; %s; load average at start %s.  Topology "
      "`examples/topologies/fabric-2p-8h.json` (2 planes x 4 leaves x 2 spines, 8 hosts, "
      "unlimited veth links), mrcd on h0 and h7 with default configuration.\n"
      % (meta["cpu"], meta["ncpu"], meta["kernel"], meta["date"], meta["load"]))
    if gp:
        w("### Goodput, one QP, h0 -> h7 (%s per run, %d runs)\n" % (meta["bytes"], len({r["rep"] for r in gp})))
        w("mrc: `mrc_bulk -p 2` (64 x 1 MiB WRITEs in flight on one QP, verified by hash) through "
          "both daemons, sprayed over both planes, twice over the same registered regions: "
          "the goodput is the second pass (the steady state, as ib_write_bw iterates over one "
          "registration); the first pass also pays for the memory's first use, one page fault "
          "per page on each side unless huge pages serve it, and is shown on its own row.  Raw UDP: `iperf3 -u -b 0 -l 4096` "
          "from h0 to h7's plane-0 address over the kernel's ECMP routes (4096-byte "
          "datagrams like mrc's packets), 4 s; goodput = what h7 received.  The ratio is "
          "taken within each run, then the median.\n")
        modes = []
        for r in gp:
            if r.get("shmem_thp", "system") not in modes:
                modes.append(r.get("shmem_thp", "system"))
        if len(modes) > 1 or modes[0] != "system":
            w("Each rep moves the data once per setting of "
              "`/sys/kernel/mm/transparent_hugepage/shmem_enabled` (the machine's own: `%s`): "
              "`never` gives the regions 4 KiB pages, `advise` the huge pages libmrc and mrcd ask "
              "for (docs/client.md); the UDP run is the same for both.\n" % meta.get("shmem_thp_system", "?"))
        w("| | goodput Mbit/s | machine busy | of it softirq | CPU |")
        w("|---|--:|--:|--:|---|")
        for m in modes:
            g = [r for r in gp if r.get("shmem_thp", "system") == m]
            w("| mrc (mrcd + libmrc)%s | %s | %s | %s | mrcd h0 %s s, mrcd h7 %s s over both passes |" % (
                "" if m == "system" else ", shmem THP `%s`" % m,
                s([r["mrc_mbit"] for r in g]), s([r["mrc_busy"] for r in g], "%.2f"),
                s([r["mrc_softirq"] for r in g], "%.2f"),
                s([r["mrcd_h0_cpu_s"] for r in g], "%.2f"), s([r["mrcd_h7_cpu_s"] for r in g], "%.2f")))
            if any("mrc_first_mbit" in r for r in g):
                w("| mrc, first pass (memory's first use)%s | %s | | | |" % (
                    "" if m == "system" else ", shmem THP `%s`" % m,
                    s([r["mrc_first_mbit"] for r in g if "mrc_first_mbit" in r])))
        u1 = [r for r in gp if r.get("shmem_thp", "system") == modes[0]]   # one UDP run per rep
        w("| raw UDP (iperf3) | %s (sent %s, lost %s %%) | %s | %s | iperf3 sender %s %%, receiver %s %% of a core |" % (
            s([r["udp"].get("got") for r in u1]), s([r["udp"].get("sent") for r in u1], "%.0f"),
            s([r["udp"].get("lost") for r in u1], "%.0f"),
            s([r["udp_busy"] for r in u1], "%.2f"), s([r["udp_softirq"] for r in u1], "%.2f"),
            s([r["udp"].get("cpu_snd") for r in u1], "%.0f"), s([r["udp"].get("cpu_rcv") for r in u1], "%.0f")))
        for m in modes:
            g = [r for r in gp if r.get("shmem_thp", "system") == m]
            w("| **mrc / UDP%s** | **%s** | | | |" % ("" if m == "system" else ", shmem THP `%s`" % m,
                                                   s([r["ratio"] for r in g], "%.2f")))
            if any("first_ratio" in r for r in g):
                w("| mrc first pass / UDP%s | %s | | | |" % ("" if m == "system" else ", shmem THP `%s`" % m,
                                                          s([r["first_ratio"] for r in g if "first_ratio" in r], "%.2f")))
        w("")
        for m in modes:
            g = [r for r in gp if r.get("shmem_thp", "system") == m]
            if any("acks" in r for r in g):
                w("Per run%s (mrcctl stats): h0 sent %s data packets, h7 sent %s ACKs (%s ACKs per data "
                  "packet); %s retransmissions, %s RTO expiries; the daemons' CPU time was %s system "
                  "time.\n" % ("" if m == "system" else ", THP `%s`" % m,
                              s([r.get("data_pkts") for r in g], "%.0f"), s([r.get("acks") for r in g], "%.0f"),
                              s([r["acks"] / r["data_pkts"] for r in g if r.get("data_pkts")], "%.2f"),
                              s([r.get("retx") for r in g], "%.0f"), s([r.get("rto") for r in g], "%.0f"),
                              s([r.get("mrcd_sys_share") for r in g], "%.2f")))
        bad = [r["rep"] for r in gp if r.get("verified") != 1]
        if bad:
            w("Runs whose transfer was not verified: %s.\n" % bad)
    if lat:
        w("### Round trip, 64-byte ping-pong h0 <-> h7 (%d round trips per run, %d runs)\n"
          % (meta["pings"], len(lat)))
        w("mrc: `mrc_pingpong` (WRITE_WITH_IMM each way through both daemons; the clients "
          "busy-poll their CQ, the daemons sleep on their doorbells and sockets when idle).  "
          "UDP: `bench/pingpong -u` between the same namespaces (blocking sockets) to the "
          "plane-0 ECMP address.\n")
        w("| | min us | p50 us | p99 us |")
        w("|---|--:|--:|--:|")
        for k, name in (("mrc", "mrc WRITE_WITH_IMM, clients busy-poll"),
                        ("mrc_wait", "mrc WRITE_WITH_IMM, clients sleep (`-w`)"), ("udp", "UDP")):
            if not any(k in r for r in lat):
                continue
            w("| %s | %s | %s | %s |" % (name, s([r[k].get("min") for r in lat if k in r]),
                                       s([r[k].get("p50") for r in lat if k in r]), s([r[k].get("p99") for r in lat if k in r])))
        rp50 = [r["mrc"]["p50"] / r["udp"]["p50"] for r in lat if r["mrc"].get("p50") and r["udp"].get("p50")]
        rp99 = [r["mrc"]["p99"] / r["udp"]["p99"] for r in lat if r["mrc"].get("p99") and r["udp"].get("p99")]
        w("| **mrc (busy-poll) / UDP** | | **%s** | **%s** |" % (s(rp50, "%.2f"), s(rp99, "%.2f")))
        wp50 = [r["mrc_wait"]["p50"] / r["udp"]["p50"] for r in lat if r.get("mrc_wait", {}).get("p50") and r["udp"].get("p50")]
        wp99 = [r["mrc_wait"]["p99"] / r["udp"]["p99"] for r in lat if r.get("mrc_wait", {}).get("p99") and r["udp"].get("p99")]
        w("| **mrc (`-w`) / UDP** | | **%s** | **%s** |\n" % (s(wp50, "%.2f"), s(wp99, "%.2f")))
for name in ("bench_ring", "bench_qpmem"):
    p = os.path.join(res, name + ".md")
    if os.path.exists(p):
        w(open(p).read().replace("## ", "## ", 1))
    else:
        w("## %s\n\nNot run (`make bench` runs `build/bench/%s`).\n" % (name, name))
notes = os.path.join(res, "daemon-notes.md")   # hand-written analysis, dated
if os.path.exists(notes):
    w(open(notes).read())
open(os.path.join(res, "daemon.md"), "w").write("\n".join(out) + "\n")
print("daemon.md written: %s" % os.path.join(res, "daemon.md"))
EOF
