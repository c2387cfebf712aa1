#!/bin/bash
# Urgent ping-pong p99 while a bulk transfer runs through ONE loopback
# mrcd (no root, no fabric): the same contenders as bench/fabric/tclass.sh
# (idle p99, bulk alone, both at once with classes), for a baseline build
# and this one, alternated per rep (the order flips every rep).  On
# loopback the bulk's data and the ping-pong's share mrcd's receive
# sockets and its loop, which is what the urgent receive queue and the
# ring polling change; the fabric's band plays no part.
# Usage: bench/loop_tclass.sh BASE_BUILD [BUILD]; env REPS (5), BULK
# (512M), PINGS (500), PORT (34580).  JSON lines on stdout.
set -u
BASE=$1 THIS=${2:-build} REPS=${REPS:-5} BULK=${BULK:-512M} N=${PINGS:-500} PORT=${PORT:-34580}
tmp=$(mktemp -d)
mp=
trap '[ -n "$mp" ] && kill $mp 2>/dev/null; rm -rf "$tmp"' EXIT
"$THIS/bin/mrcd" --genkey "$tmp/key" >/dev/null
sid=500
up() {   # up BUILD: a fresh mrcd of BUILD
	[ -n "$mp" ] && { kill $mp; wait $mp 2>/dev/null; }
	rm -f "$tmp/mrcd.sock" "$tmp/mrcctl.sock"
	"$1/bin/mrcd" --key_file "$tmp/key" --socket "$tmp/mrcd.sock" --port $PORT 2>>"$tmp/log" &
	mp=$!
	for _ in $(seq 1 100); do [ -S "$tmp/mrcctl.sock" ] && return; sleep 0.1; done
	echo "mrcd did not start" >&2; exit 1
}
ping() {  # ping BUILD: p99 (us) of N urgent round trips
	sid=$((sid + 1))
	"$1/bin/mrc_pingpong" -S "$tmp/mrcd.sock" -s 64 -n $N -i $sid -w -t urgent server >/dev/null 2>&1 &
	local sp=$!
	timeout 120 "$1/bin/mrc_pingpong" -S "$tmp/mrcd.sock" -s 64 -n $N -i $sid -w -t urgent client 0 2>&1 |
		sed -n 's/.* p99 \([0-9.]*\) us.*/\1/p'
	wait $sp
}
bulk_bg() {  # bulk_bg BUILD OUT
	sid=$((sid + 1))
	"$1/bin/mrc_bulk" -S "$tmp/mrcd.sock" -s $BULK -i $sid -t bulk recv >/dev/null 2>&1 &
	brp=$!
	timeout 300 "$1/bin/mrc_bulk" -S "$tmp/mrcd.sock" -s $BULK -i $sid -t bulk send 0 >"$2" 2>&1 &
	bsp=$!
}
placed() { "$B/bin/mrcctl" -s "$tmp/mrcctl.sock" -j status | jq -r '.totals.bytes_placed // 0'; }
mbs() { sed -n 's/.* \([0-9.]*\) MB\/s.*/\1/p' "$1"; }
for r in $(seq 1 "$REPS"); do
	order="base this"; [ $((r % 2)) = 0 ] && order="this base"
	for name in $order; do
		B=$THIS; [ $name = base ] && B=$BASE
		up "$B"
		idle=$(ping "$B")
		bulk_bg "$B" "$tmp/alone"; wait $bsp $brp; alone=$(mbs "$tmp/alone")
		p0=$(placed)
		bulk_bg "$B" "$tmp/both"
		want=$(( $(numfmt --from=iec $BULK) / 20 ))
		for _ in $(seq 1 600); do [ $(( $(placed) - p0 )) -ge $want ] && break; sleep 0.05; done
		p99=$(ping "$B")
		kill -0 $bsp 2>/dev/null && inside=1 || inside=0
		wait $bsp $brp; both=$(mbs "$tmp/both")
		# urgent services inside bulk turns (urgent_turn_us; null before it)
		ut=$("$B/bin/mrcctl" -s "$tmp/mrcctl.sock" -j stats | jq -r '.rings.urgent_turns // "null"')
		printf '{"rep":%d,"build":"%s","load1":%s,"idle_p99_us":%s,"alone_mb_s":%s,"classes_p99_us":%s,"classes_mb_s":%s,"inside":%d,"urgent_turns":%s}\n' \
			"$r" $name "$(cut -d' ' -f1 /proc/loadavg)" "${idle:-null}" "${alone:-null}" "${p99:-null}" "${both:-null}" $inside "${ut:-null}"
	done
done
