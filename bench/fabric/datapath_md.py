#!/usr/bin/env python3
"""Writes bench/results/datapath.md from bench/results/raw/datapath.jsonl
(bench/fabric/datapath.sh): per datapath, medians [min, max] over the reps
and the ratio of each median to udp's.  Usage: datapath_md.py [RESULTS_DIR]"""
import json, os, statistics, sys

res = sys.argv[1] if len(sys.argv) > 1 else "bench/results"
rows = [json.loads(l) for l in open(os.path.join(res, "raw", "datapath.jsonl")) if l.strip()]
meta = next(r for r in rows if r["kind"] == "meta")
end = next((r for r in rows if r["kind"] == "end"), {})
dps = meta["datapaths"].split()


def vals(kind, dp, f):
    out = []
    for r in rows:
        if r["kind"] == kind and r["dp"] == dp and r["r"].get("error") is None:
            v = f(r["r"])
            if v is not None:
                out.append(v)
    return out


def gbit(r):
    return r["bytes"] * 8 / 1e9


METRICS = [
    ("goodput (Mbit/s)", "bulk", lambda r: r["goodput_mbit"], "%.0f"),
    ("sender packets/s per core", "bulk", lambda r: r["pkts"] / r["cli_cpu_s"] if r["cli_cpu_s"] else None, "%.0f"),
    ("receiver packets/s per core (process CPU)", "bulk", lambda r: r["pkts"] / r["srv_cpu_s"] if r["srv_cpu_s"] else None, "%.0f"),
    ("packets/s per core, both processes", "bulk", lambda r: r["pkts"] / (r["cli_cpu_s"] + r["srv_cpu_s"]) if r["cli_cpu_s"] + r["srv_cpu_s"] else None, "%.0f"),
    ("CPU s per Gbit, both processes", "bulk", lambda r: (r["cli_cpu_s"] + r["srv_cpu_s"]) / gbit(r), "%.3f"),
    ("CPU s per Gbit, whole machine", "bulk", lambda r: float(r["machine_busy_s"]) / gbit(r), "%.3f"),
    ("retransmitted packets", "bulk", lambda r: r["retx"], "%.0f"),
    ("datapath drops (tx_eagain + rx_dropped, both ends)", "bulk", lambda r: r.get("dp_drops"), "%.0f"),
    ("packets lost between the datapaths (h0 sent - h7 received)", "bulk", lambda r: r.get("dp_lost"), "%.0f"),
    ("ping-pong RTT p50 (us)", "pingpong", lambda r: r["p50"], "%.1f"),
    ("ping-pong RTT p99 (us)", "pingpong", lambda r: r["p99"], "%.1f"),
    ("ping-pong RTT min (us)", "pingpong", lambda r: r["min"], "%.1f"),
]


def cell(v, fmt):
    if not v:
        return "n/a"
    return (fmt % statistics.median(v)) + " [" + (fmt % min(v)) + ", " + (fmt % max(v)) + "]"


out = ["# Datapaths side by side (issue 17)\n",
       "Produced by `bench/fabric/datapath.sh` (root; `make bench`, scenario `datapath` of "
       "`bench/fabric/run.sh`); this file by `bench/fabric/datapath_md.py`.  One run, one "
       "unlimited emulated fabric (veth, 2 planes x 2 spines, 8 hosts), datapaths interleaved "
       "rep by rep; medians [min, max] over the reps, ratio = median / udp's median.\n",
       "Machine: %s, kernel %s; %s to %s, %s reps.  Load average (1, 5, 15 min) at the start "
       "%s, at the end %s: the machine's 2 cores are shared with other engineers' builds and "
       "tests, so absolute figures are noisy; compare the ratios.  Bulk: %s h0 -> h7 (mrc-xfer, "
       "one QP); ping-pong: %d round trips of 64 bytes.\n" % (
           meta["machine"], meta["kernel"], meta.get("date", "?"), end.get("date", "?"),
           meta.get("reps", "?"), meta.get("load_start", "?"), end.get("load_end", "?"),
           meta["bytes"], meta["pings"]),
       "Packets/s per core: data packets sent / CPU seconds (user+sys) of that process.  "
       "\"Whole machine\" is every busy CPU second while the transfer ran: it holds the "
       "softirq work no process is charged with (XDP and the kernel's receive path, the "
       "emulated switches' forwarding) and whatever else ran on the machine.  dpdk runs "
       "af_packet vdevs on the veth plane NICs (every frame still crosses the kernel: this "
       "measures DPDK's structure here, not kernel bypass); plain `dpdk` waits on the driver's "
       "socket (wait=auto); `dpdk:ARGS` runs it with those datapath_args (`wait=poll`: polled "
       "every loop turn, idle rounds sleeping idle_us=50, as it ran before wait= existed); af_xdp runs in copy mode (veth).  Lost between the datapaths: "
       "0 means every retransmission was spurious (a late ACK, not a lost packet).\n"]
hdr = "| metric | " + " | ".join(dps) + " | " + " | ".join("%s / udp" % d for d in dps if d != "udp") + " |"
out.append(hdr)
out.append("|" + "---|" * (1 + len(dps) + len([d for d in dps if d != "udp"])))
for name, kind, f, fmt in METRICS:
    cells = [cell(vals(kind, d, f), fmt) for d in dps]
    base = vals(kind, "udp", f)
    ratios = []
    for d in dps:
        if d == "udp":
            continue
        v = vals(kind, d, f)
        ratios.append("%.2f" % (statistics.median(v) / statistics.median(base))
                      if v and base and statistics.median(base) else "n/a")
    out.append("| %s | %s | %s |" % (name, " | ".join(cells), " | ".join(ratios)))
errs = [r for r in rows if r["kind"] in ("bulk", "pingpong") and r["r"].get("error")]
if errs:
    out.append("\nFailed runs:\n")
    for r in errs:
        out.append("- %s %s rep %d: %s" % (r["dp"], r["kind"], r["rep"], r["r"]["error"].strip()))
open(os.path.join(res, "datapath.md"), "w").write("\n".join(out) + "\n")
print("bench/fabric/datapath: wrote %s" % os.path.join(res, "datapath.md"))
