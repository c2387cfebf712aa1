#!/usr/bin/env python3
"""Turns bench/results/raw/*.jsonl (written by bench/fabric/*.sh) into
bench/results/fabric.md (markdown tables: median and [min, max] over the
repetitions) and PNG plots (gnuplot) next to it.

usage: report.py RESULTS_DIR"""
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

RES = sys.argv[1] if len(sys.argv) > 1 else "bench/results"
RAW = os.path.join(RES, "raw")
ORDER = ["mrc", "mrc-pinned", "tcp", "mptcp", "udp"]
NAMES = {"mrc": "mrc (spraying)", "mrc-pinned": "mrc pinned (1 EV/QP)",
         "tcp": "TCP (kernel ECMP)", "mptcp": "MPTCP (subflow/plane)", "udp": "raw UDP",
         "udp-srv6": "raw UDP on the SRv6 path"}


def load(scen):
    p = os.path.join(RAW, scen + ".jsonl")
    if not os.path.exists(p):
        return None
    return [json.loads(line) for line in open(p) if line.strip()]


def med(v):
    v = [x for x in v if x is not None]
    return statistics.median(v) if v else None


def spread(v, fmt):
    v = [x for x in v if x is not None]
    if not v:
        return "n/a"
    m = statistics.median(v)
    return (fmt % m) + " [" + (fmt % min(v)) + ", " + (fmt % max(v)) + "]"


def order(rows):
    cs = []
    for c in ORDER + sorted({r["contender"] for r in rows if "contender" in r}):
        if c not in cs and any(r.get("contender") == c for r in rows):
            cs.append(c)
    return cs


TMPD = tempfile.mkdtemp(prefix="mrcbench-plot.")


def gnuplot(name, script, data):
    """Writes data files {name: text} and runs gnuplot; returns the PNG name
    or None when gnuplot fails (the tables are still written)."""
    for fn, text in data.items():
        with open(os.path.join(TMPD, fn), "w") as f:
            f.write(text)
    png = name + ".png"
    full = ("set terminal pngcairo size 900,520 noenhanced font 'sans,10'\n"
            "set output '%s'\nset grid\n" % os.path.abspath(os.path.join(RES, png))) + script
    r = subprocess.run(["gnuplot"], input=full, text=True, cwd=TMPD,
                       capture_output=True)
    if r.returncode:
        sys.stderr.write("report: gnuplot %s: %s\n" % (name, r.stderr))
        return None
    return png


def bulk(out):
    rows = load("bulk")
    if not rows:
        return
    data = [r for r in rows if "contender" in r]
    cap = data[0]["cap_mbit"]
    out.append("## 1. One-to-one bulk (h0 -> h7)\n")
    out.append("Goodput as a share of h0's plane capacity (%d Mbit/s = 2 planes x %d); "
               "median [min, max] of %d runs.  *plane 1* is the share of h0's bytes that "
               "left on its plane-1 NIC.\n" % (cap, cap // 2, max(r["rep"] for r in data)))
    out.append("| contender | goodput Mbit/s | share of capacity | vs TCP | plane 1 | machine CPU busy |")
    out.append("|---|---|---|---|---|---|")
    tcp = med([r["mbit"] for r in data if r["contender"] == "tcp"])
    dat = ""
    for i, c in enumerate(order(data)):
        rs = [r for r in data if r["contender"] == c]
        m = [r["mbit"] for r in rs]
        sh = [100 * r["share"] for r in rs]
        ratio = "%.2fx" % (med(m) / tcp) if tcp else "n/a"
        out.append("| %s | %s | %s %% | %s | %.2f | %.0f %% |" % (
            NAMES.get(c, c), spread(m, "%.0f"), spread(sh, "%.1f"), ratio,
            med([r.get("plane1_share") for r in rs]) or 0,
            100 * (med([r.get("machine_busy") for r in rs]) or 0)))
        dat += '%d "%s" %.2f %.2f %.2f\n' % (i, c, med(sh), min(sh), max(sh))
    ev = [r for r in data if r["contender"] == "mrc" and "lost_pkts" in r]
    if ev:
        out.append("\nmrc lost packets per run (congestion drops at the tbf queues, "
                   "counted per path): %s; EV states at the end: %s\n" % (
                       [r["lost_pkts"] for r in ev], [r["ev_state"] for r in ev][-1]))
    ns = [r["mptcp_nstat"] for r in rows if "mptcp_nstat" in r]
    if ns:
        out.append("\nMPTCP counters on h0 after all runs: `%s`\n" % ns[0])
    png = gnuplot("bulk", """
set title 'one-to-one bulk: goodput / plane capacity (median, min-max)'
set ylabel '% of 2-plane capacity'
set yrange [0:110]
set style fill solid 0.5
set boxwidth 0.6
set xtics rotate by 0
plot 'bulk.dat' using 1:3:xtic(2) with boxes notitle, '' using 1:3:4:5 with yerrorbars lc 'black' notitle, 90 title 'target 90 %' dt 2 lc 'red'
""", {"bulk.dat": dat})
    if png:
        out.append("\n![bulk](%s)\n" % png)


def failover(out):
    rows = load("failover")
    if not rows:
        return
    meta = next(r for r in rows if "t1" in r)
    data = [r for r in rows if "contender" in r]
    ideal = meta["ideal_s"]
    out.append("## 2. Failover (h0 -> h7, %d MiB)\n" % (meta["bytes"] >> 20))
    out.append("At %.1f s the spine link p0s1-p0l3 is blackholed silently; at %.1f s h0's "
               "plane-1 NIC goes down.  Ideal finish with the surviving capacity: %.2f s.  "
               "*stall*: mrc's longest gap between completions (sub-ms resolution); "
               "*zero-delivery run*: the longest run of 100 ms intervals with no delivered "
               "byte (mrc: its own report; TCP/MPTCP: the iperf3 receiver's intervals), the "
               "only stall measure iperf3 gives.  A run not finished after %d s is cut "
               "(*dnf*).  Median [min, max].\n" % (meta["t1"], meta["t2"], ideal, meta["cap_s"]))
    out.append("| contender | healthy finish s | finish with faults s | vs ideal | "
               "vs healthy | stall ms | zero-delivery run ms | dnf |")
    out.append("|---|---|---|---|---|---|---|---|")
    plots, dats, aligned = [], {}, []
    for c in order(data):
        h = [r for r in data if r["contender"] == c and r["mode"] == "healthy"]
        fr = [r for r in data if r["contender"] == c and r["mode"] == "faults"]
        hf = med([r["finish_s"] for r in h])
        ff = [r["finish_s"] for r in fr]
        dnf = sum(1 for x in ff if x is None)
        fm = med(ff)
        # mrc's time line starts at its connection, ~0.3 s after the fault
        # timer (process start, core init): place the NIC-down fault where
        # its series shows it (delivery stays at one plane's rate from then
        # on) and compute the ideal finish from there.
        al = []
        for r in fr:
            v, rate = r["mbit"], meta["rate"]
            if c != "mrc" or r["finish_s"] is None or len(v) < 3:
                continue
            k = len(v) - 1
            while k > 0 and v[k - 1] <= 1.15 * rate:
                k -= 1
            t2 = k * r["series_ms"] / 1000.0
            bits = meta["bytes"] * 8 / 1e6
            al.append(r["finish_s"] / (t2 + max(0.0, bits - 2 * rate * t2) / rate))
        if al:
            aligned.append("%s: %.2fx" % (c, med(al)))
        out.append("| %s | %s | %s | %s | %s | %s | %s | %d of %d |" % (
            NAMES.get(c, c), spread([r["finish_s"] for r in h], "%.2f"), spread(ff, "%.2f"),
            "%.2fx" % (fm / ideal) if fm else "n/a",
            "%.2fx" % (fm / hf) if fm and hf else "n/a",
            spread([r["stall_ms"] for r in fr], "%.1f"),
            spread([r["zero_ms"] for r in fr], "%.0f"), dnf, len(fr)))
        for mode, rs in (("faults", fr), ("healthy", h)):
            if not rs or (mode == "healthy" and c != "mrc"):
                continue
            r = rs[0]
            fn = "fo_%s_%s.dat" % (c, mode)
            step = r["series_ms"] / 1000.0
            dats[fn] = "".join("%.2f %.1f\n" % ((i + 1) * step, v) for i, v in enumerate(r["mbit"]))
            plots.append("'%s' using 1:2 with steps lw %d title '%s%s'" % (
                fn, 2 if mode == "faults" else 1, c, "" if mode == "faults" else " (healthy)"))
    if aligned:
        out.append("\nFinish vs ideal with the NIC-down fault placed where the series shows it "
                   "(mrc's time line starts ~0.3 s after the fault timer): %s.\n" % ", ".join(aligned))
    out.append("")
    png = gnuplot("failover", """
set title 'failover: goodput every 100 ms (run 1); faults at the dashed lines'
set xlabel 'seconds'
set ylabel 'Mbit/s'
set yrange [0:%d]
set arrow from %f, graph 0 to %f, graph 1 nohead dt 2 lc 'red'
set arrow from %f, graph 0 to %f, graph 1 nohead dt 2 lc 'red'
plot %s
""" % (int(2.6 * meta["rate"]), meta["t1"], meta["t1"], meta["t2"], meta["t2"],
       ", ".join(plots)), dats)
    if png:
        out.append("![failover](%s)\n" % png)


def pct(v, p):
    v = sorted(v)
    k = max(0, min(len(v) - 1, -(-len(v) * p // 100) - 1))
    return v[int(k)]


def collisions(out):
    rows = load("collisions")
    if not rows:
        return
    meta = next(r for r in rows if "perm" in r)
    data = [r for r in rows if "contender" in r]
    ideal = meta["ideal_s"]
    out.append("## 3. Flow collisions (permutation, 8 hosts)\n")
    out.append("Host i sends %d MiB to host [%s][i], all at once, %d Mbit/s links; ideal FCT "
               "= size / (2 planes x %d Mbit/s) = %.2f s.  *slowest*: median [min, max] over "
               "runs of the slowest flow; p50/p99 over every flow of every run "
               "(a flow that did not finish counts as the 120 s cut-off).\n" % (
                   meta["bytes"] >> 20, meta["perm"].replace(" ", ","), meta["rate"],
                   meta["rate"], ideal))
    out.append("| contender | slowest / ideal | p99 / ideal | p50 / ideal | unfinished | machine CPU busy |")
    out.append("|---|---|---|---|---|---|")
    dat = ""
    for i, c in enumerate(order(data)):
        rs = [r for r in data if r["contender"] == c]
        allf = [x if x is not None else 120.0 for r in rs for x in r["fct_s"]]
        slow = [max(x if x is not None else 120.0 for x in r["fct_s"]) / ideal for r in rs]
        unf = sum(1 for r in rs for x in r["fct_s"] if x is None)
        out.append("| %s | %s | %.2f | %.2f | %d | %.0f %% |" % (
            NAMES.get(c, c), spread(slow, "%.2f"), pct(allf, 99) / ideal,
            pct(allf, 50) / ideal, unf, 100 * med([r["machine_busy"] for r in rs])))
        dat += '%d "%s" %.3f %.3f %.3f %.3f\n' % (i, c, med(slow), min(slow), max(slow),
                                                   pct(allf, 50) / ideal)
    out.append("")
    png = gnuplot("collisions", """
set title 'permutation traffic: flow completion time / ideal'
set ylabel 'FCT / ideal'
set yrange [0:*]
set style fill solid 0.5
set boxwidth 0.35
plot 'coll.dat' using ($1-0.2):3:xtic(2) with boxes title 'slowest (median of runs)', '' using ($1-0.2):3:4:5 with yerrorbars lc 'black' notitle, '' using ($1+0.2):6 with boxes title 'p50 flow', 1.3 title 'target 1.3x' dt 2 lc 'red'
""", {"coll.dat": dat})
    if png:
        out.append("![collisions](%s)\n" % png)


def latency(out):
    rows = load("latency")
    if not rows:
        return
    data = [r for r in rows if "contender" in r]
    out.append("## 4. Small messages (ping-pong h0 <-> h7)\n")
    out.append("%d round trips of %d bytes per run; median [min, max] over runs of each "
               "run's p50 / p99.  msgs/s counts both directions.\n" % (data[0]["n"], data[0]["size"]))
    out.append("| contender | p50 us | p99 us | min us | msgs/s | p50 vs UDP |")
    out.append("|---|---|---|---|---|---|")
    udp = med([r["r"]["p50"] for r in data if r["contender"] == "udp"])
    dat = ""
    for i, c in enumerate(order(data)):
        rs = [r["r"] for r in data if r["contender"] == c]
        p50 = med([r["p50"] for r in rs])
        out.append("| %s | %s | %s | %s | %s | %s |" % (
            NAMES.get(c, c), spread([r["p50"] for r in rs], "%.1f"),
            spread([r["p99"] for r in rs], "%.1f"), spread([r["min"] for r in rs], "%.1f"),
            spread([r["mps"] for r in rs], "%.0f"),
            "%.2fx" % (p50 / udp) if p50 and udp else "n/a"))
        dat += '%d "%s" %.1f %.1f\n' % (i, c, p50 or 0, med([r["p99"] for r in rs]) or 0)
    out.append("")
    png = gnuplot("latency", """
set title 'ping-pong round trip (median of runs)'
set ylabel 'microseconds'
set yrange [0:*]
set style fill solid 0.5
set boxwidth 0.35
plot 'lat.dat' using ($1-0.2):3:xtic(2) with boxes title 'p50', '' using ($1+0.2):4 with boxes title 'p99'
""", {"lat.dat": dat})
    if png:
        out.append("![latency](%s)\n" % png)


def manyqps(out):
    rows = load("manyqps")
    if not rows:
        return
    data = [r for r in rows if "qps" in r]
    cap = data[0]["cap_mbit"]
    out.append("## 5. Many connections (mrc, h0 -> h7)\n")
    out.append("The same bytes split over N QPs.  CPU: user + system time of each mrc-xfer "
               "process as %% of one core over its run (the sender's system time includes the "
               "kernel forwarding through the emulated switches).  Capacity %d Mbit/s.  "
               "Median [min, max].\n" % cap)
    out.append("| QPs | goodput Mbit/s | share | sender CPU % | of which system % | receiver CPU % |")
    out.append("|---|---|---|---|---|---|")
    dat = ""
    for q in sorted({r["qps"] for r in data}):
        rs = [r for r in data if r["qps"] == q]
        m = [r["mbit"] for r in rs]
        out.append("| %d | %s | %.1f %% | %s | %s | %s |" % (
            q, spread(m, "%.0f"), 100 * med(m) / cap,
            spread([r["client_cpu_pct"] for r in rs], "%.1f"),
            spread([r["client_sys_pct"] for r in rs], "%.1f"),
            spread([r["server_cpu_pct"] for r in rs], "%.1f")))
        dat += "%d %.1f %.1f %.1f\n" % (q, med(m), med([r["client_cpu_pct"] for r in rs]),
                                        med([r["server_cpu_pct"] for r in rs]))
    out.append("")
    png = gnuplot("manyqps", """
set title 'mrc with many QPs: goodput and CPU'
set logscale x 2
set xlabel 'QPs'
set ylabel 'Mbit/s'
set y2label '%% of one core'
set yrange [0:%d]
set y2range [0:100]
set ytics nomirror
set y2tics
plot 'mq.dat' using 1:2 with linespoints lw 2 title 'goodput', '' using 1:3 axes x1y2 with linespoints title 'sender CPU', '' using 1:4 axes x1y2 with linespoints title 'receiver CPU'
""" % (int(cap * 1.1)), {"mq.dat": dat})
    if png:
        out.append("![manyqps](%s)\n" % png)


def machine():
    cpu = "unknown"
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    return "%s, %d cores, kernel %s, %s" % (cpu, os.cpu_count(), platform.release(),
                                            subprocess.run(["iperf3", "--version"], capture_output=True,
                                                           text=True).stdout.split("\n")[0])


def main():
    out = ["# Fabric benchmarks: mrc vs TCP, MPTCP, single-path and raw UDP\n",
           "Generated by `make bench` (bench/fabric/run.sh) on %s; machine: %s.  "
           "Fabric: 2 planes, 4 leaves x 2 spines per plane, 8 hosts, SRv6 in network "
           "namespaces, tbf on every link; TCP congestion control `%s`.  The machine is "
           "shared, so other work may perturb runs (*machine CPU busy* is the whole "
           "machine's, not only ours).\n" % (
               time.strftime("%Y-%m-%d %H:%M %Z"), machine(),
               open("/proc/sys/net/ipv4/tcp_congestion_control").read().strip())]
    for f in (bulk, failover, collisions, latency, manyqps):
        f(out)
    with open(os.path.join(RES, "fabric.md"), "w") as f:
        f.write("\n".join(out) + "\n")
    shutil.rmtree(TMPD, ignore_errors=True)
    print("report: %s" % os.path.join(RES, "fabric.md"))


main()
