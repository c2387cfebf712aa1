#!/usr/bin/env python3
"""Writes the seed corpus of fuzz/fuzz_engine_conn.c (records: ctl u8, dt u8,
len u16 little-endian, packet).  Every record sets ctl bits 0-3, so the
target itself puts in the QP number, the PSNs (relative: the low byte here
is the offset from the QP's starting PSN), the region keys (the low bits
here pick the region: 0 DST, 3 another client's) and the CRCs; the packets
below are otherwise well-formed wire-format v2 (transport/wire.h; tokens 0,
as the target's QP has none).  A piggybacked ACK's pb_cum_psn is relative
too (low 6 bits from the QP's first send PSN).
Run from the repository root: python3 fuzz/gen_engine_conn_corpus.py"""
import os
import struct

OUT = "fuzz/corpus/fuzz_engine_conn"
FIX = 0x0F
WRITE, WRITE_IMM, SEND, SEND_IMM, ATOMIC, ACK, PROBE, PROBE_REPLY = 1, 2, 3, 4, 5, 16, 32, 33
FIRST, LAST, PB_ACK, PB_ECN = 1, 2, 0x10, 0x20
V = 2


def data(op, psn, plen, mlen, off, key=0, flags=FIRST | LAST, ev=0, imm=0, msn=0,
         pb=None):
    pb_cum, pb_sack, pb_hold = pb if pb else (0, 0, 0)
    if pb:
        flags |= PB_ACK
    hdr = struct.pack(">BBHIIHHIIQQIIQIHH", V, op, flags, 0, psn, ev, plen, msn, key, off,
                      123456, mlen, imm, 0, pb_cum, pb_sack, pb_hold)
    payload = bytes((i * 13) & 0xFF for i in range(plen))
    return hdr + b"\0\0\0\0" + (payload + b"\0\0\0\0" if plen else b"")


def ack(cum, trig, base=0, nack=0, ev=0, sack=b""):
    sack = sack.ljust(32, b"\0")
    return struct.pack(">BBHIIHBBIIQQ", V, ACK, 0, 0, cum, ev, nack, 0, trig, base,
                       999, 0) + sack + b"\0\0\0\0"


def probe(op, seq, ev=0, ts=5, echo=0):
    return struct.pack(">BBHIIHHQQQ", V, op, 0, 0, seq, ev, 0, ts, echo, 0) + b"\0\0\0\0"


def rec(pkt, ctl=FIX, dt=1):
    return struct.pack("<BBH", ctl, dt, len(pkt)) + pkt


def write_file(name, recs):
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(b"".join(recs))


os.makedirs(OUT, exist_ok=True)
# A 3-packet WRITE into DST, in order, then its duplicate.
w = [data(WRITE, i, 1024 if i < 2 else 500, 2548, 100 + 1024 * i,
          flags=(FIRST if i == 0 else 0) | (LAST if i == 2 else 0)) for i in range(3)]
write_file("write_inorder", [rec(p) for p in w] + [rec(w[1])])
# WRITE_IMM out of order (its completion waits for the first packet).
wi = [data(WRITE_IMM, i, 1024 if i == 0 else 10, 1034, 1024 * i, imm=7,
           flags=FIRST if i == 0 else LAST) for i in range(2)]
write_file("write_imm_reorder", [rec(wi[1]), rec(wi[0])])
# SENDs into the two posted RECVs, then one with no RECV left (RNR).
write_file("send_recv", [rec(data(SEND, 0, 500, 500, 0, key=0)),
                         rec(data(SEND_IMM, 1, 900, 900, 0, key=1, imm=9)),
                         rec(data(SEND, 2, 10, 10, 0, key=2))])
# A SEND too big for its RECV (fails the QP), then more data.
write_file("send_too_big", [rec(data(SEND, 0, 1024, 3000, 0, flags=FIRST)),
                            rec(data(WRITE, 1, 8, 8, 0))])
# ATOMIC_ADD into DST, then a WRITE to the same word; one to another pd.
write_file("atomic", [rec(data(ATOMIC, 0, 8, 8, 64)), rec(data(WRITE, 1, 8, 8, 64)),
                      rec(data(ATOMIC, 2, 8, 8, 64, key=3))])
# Trimmed data packet (header only, TRIMMED flag).
t = bytearray(data(WRITE, 0, 1024, 1024, 0)[:68])
t[3] |= 8
write_file("trimmed", [rec(bytes(t))])
# ACKs of our sends (PSN 1000..1004; the fenced ATOMIC, 1004, leaves only
# once 1000..1003 are acknowledged): SACK, then cumulative; NACKs.
write_file("acks", [rec(ack(0, 2, 0, sack=b"\x06")), rec(ack(4, 3, 4)), rec(ack(5, 4, 5))])
write_file("nacks", [rec(ack(0, 0, 0, nack=1)), rec(ack(0, 3, 0, nack=4)),
                     rec(ack(0, 3, 0, nack=4), dt=10), rec(ack(0, 1, 0, nack=2)),
                     rec(ack(0, 0, 0, nack=3))])
write_file("noqp", [rec(ack(0, 0, 0, nack=5))])
# Probes: one to answer, a reply to nothing.
write_file("probes", [rec(probe(PROBE, 1, ev=2)), rec(probe(PROBE_REPLY, 1, ev=3, echo=4))])
# Every EV denied (ctl bit 5 toggles EV dt & 3), time passes: no-path bound.
write_file("deny_all", [rec(b"", ctl=0x20, dt=d) for d in range(4)] +
           [rec(b"", ctl=0, dt=250) for _ in range(2)] + [rec(ack(4, 3, 4))])
# Piggybacked ACKs on WRITE_IMMs (a ping-pong's replies): cumulative 3 with
# PSN 1004 SACKed and a hold; then ECN on one; then one acknowledging PSNs
# never sent (the packet is dropped whole); then a SACK bit past them.
write_file("pb_ack", [rec(data(WRITE_IMM, 0, 64, 64, 0, imm=1, pb=(3, 0, 100))),
                      rec(data(WRITE_IMM, 1, 64, 64, 64, imm=2, pb=(3, 1, 0), flags=FIRST | LAST | PB_ECN)),
                      rec(data(WRITE_IMM, 2, 64, 64, 128, imm=3, pb=(0x3f, 0, 0))),
                      rec(data(WRITE_IMM, 3, 64, 64, 192, imm=4, pb=(5, 0x8000, 0))),
                      rec(data(WRITE_IMM, 4, 64, 64, 256, imm=5, pb=(5, 0, 65535)))])
