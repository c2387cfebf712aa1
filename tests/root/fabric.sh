#!/bin/sh
# Root integration test of mrc-fabric on the real kernel: builds a 2-plane
# fabric (4 leaves, 2 spines per plane, 8 hosts), proves with per-SID
# counters that UDP sent on each (plane, spine) path crosses exactly that
# path's leaf, spine and leaf and arrives, that each fault kind hits exactly
# the paths that cross its target and restore heals them, that bad input
# creates nothing, and that down leaves nothing behind.
# Expected path sets come from `mrc-fabric path -j` (the topology library),
# never from numbers written here.
# Usage: tests/root/fabric.sh BUILD_DIR   (needs root, jq)
set -eu
B=${1:-build}
F="$B/bin/mrc-fabric"
P=mrcT                         # namespace prefix of this test only
export MRC_FABRIC_PREFIX=$P
TOPO=examples/topologies/fabric-2p-8h.json
N=5                            # packets per path per probe
T="timeout 60"                 # no single step may hang the run
TMP=$(mktemp -d)
fails=0

cleanup() {
	$T "$F" -p $P down >/dev/null 2>&1 || true
	for ns in $(ip netns list | awk '{print $1}' | grep "^$P-" || true); do
		ip netns del "$ns" 2>/dev/null || true
	done
	rm -rf "$TMP"
}
trap cleanup EXIT INT TERM HUP

ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
check() { # check DESCRIPTION GOT WANT
	if [ "$2" = "$3" ]; then ok "$1"; else bad "$1: got '$2', want '$3'"; fi
}
die() { echo "FAIL $*"; exit 1; }

[ "$(id -u)" = 0 ] || die "needs root"
command -v jq >/dev/null || die "needs jq (scripts/deps.sh installs it)"
[ -x "$F" ] || die "$F not built"

# ---- root check, bad input, leftovers of a crash ---------------------------
if command -v setpriv >/dev/null; then
	out=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$F" down 2>&1 || true)
	case "$out" in *"needs root"*) ok "non-root is refused with a clear error" ;;
	*) bad "non-root: '$out'" ;; esac
fi

cat >"$TMP/dup.json" <<'EOF'
{"version":1,"planes":1,"hosts":[{"name":"h0","usid":"0x8000"}],
 "switches":[{"name":"p0l0","tier":"leaf","plane":0,"usid":"0x8000"}],
 "links":[{"a":"h0","b":"p0l0"}]}
EOF
printf '{"version":1,"generate":{"planes":2,"leaves_per_plane":2,"spines_per_plane":1,"hosts_per_leaf":70000}}' >"$TMP/big.json"
for c in "dup.json|p0l0: usid 0x8000 is already used by h0" \
	 "big.json|generate.hosts_per_leaf: 70000 is not in 1..32768"; do
	file=${c%%|*}; want=${c#*|}
	rc=0; err=$($T "$F" up "$TMP/$file" 2>&1 >/dev/null) || rc=$?
	check "bad topology $file exits 2" "$rc" 2
	case "$err" in *"$want"*) ok "bad topology $file: message names the problem" ;;
	*) bad "bad topology $file: message '$err' lacks '$want'" ;; esac
	check "bad topology $file: no namespace created" "$(ip netns list | grep -c "^$P-" || true)" 0
done

ip netns add $P-h0
ip netns add $P-leftover
rc=0; $T "$F" up $TOPO >/dev/null 2>&1 || rc=$?
check "up refuses while namespaces of the prefix exist" "$rc" 1
$T "$F" down >/dev/null
check "down removes a crashed fabric's namespaces" "$(ip netns list | grep -c "^$P-" || true)" 0

# ---- up ------------------------------------------------------------------
links_before=$(ip -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | sort | tr '\n' ' ')
$T "$F" -j up $TOPO >"$TMP/up.json" || die "up failed"
echo "     fabric up in $(jq .seconds "$TMP/up.json") s ($(jq .namespaces "$TMP/up.json") namespaces)"
check "one namespace per node" "$(ip netns list | grep -c "^$P-")" \
	"$("$F" -t $TOPO -j show | jq '.nodes | length')"

"$F" -j path h0 h7 >"$TMP/paths.json"
"$F" -j path h0 h1 >"$TMP/paths01.json"
"$F" -t $TOPO -j show >"$TMP/show.json"
check "h0->h7: one path per (plane, spine)" "$(jq length "$TMP/paths.json")" \
	"$(jq '.nodes | map(select(.tier == "spine")) | length' "$TMP/show.json")"

counters() { "$F" -j counters | jq -r '.[] | "\(.node) \(.packets)"' | sort; }

# Packets of probe $1 -> $2 on EV $3: each switch's SID counter must grow by
# N exactly on the path's switches (twice for a switch crossed twice) and by
# 0 elsewhere; all N must arrive.
path_by_counters() {
	src=$1 dst=$2 ev=$3 pathfile=$4
	counters >"$TMP/c0"
	$T "$F" -j probe "$src" "$dst" --ev "$ev" -c $N -w 1000 >"$TMP/probe.json"
	counters >"$TMP/c1"
	check "$src->$dst ev $ev: all $N arrived" "$(jq '.[0].received' "$TMP/probe.json")" $N
	jq -r --argjson ev "$ev" '.[] | select(.ev == $ev) | .switches[]' "$pathfile" \
		| sort | uniq -c | awk '{print $2, $1}' >"$TMP/on"
	join -a 1 "$TMP/c0" "$TMP/c1" | while read -r node before after; do
		times=$(awk -v n="$node" '$1 == n {print $2}' "$TMP/on")
		echo "$node $((after - before)) $((${times:-0} * N))"
	done >"$TMP/delta"
	wrong=$(awk '$2 != $3' "$TMP/delta")
	if [ -z "$wrong" ]; then
		ok "$src->$dst ev $ev crossed exactly $(jq -r --argjson ev "$ev" \
			'.[] | select(.ev == $ev) | .switches | join(" ")' "$pathfile")"
	else
		bad "$src->$dst ev $ev: counter deltas (node got want): $wrong"
	fi
}

for ev in $(jq '.[].ev' "$TMP/paths.json"); do
	path_by_counters h0 h7 "$ev" "$TMP/paths.json"
done
direct=$(jq '.[] | select(.spine == null) | .ev' "$TMP/paths01.json" | head -n 1)
[ -n "$direct" ] || bad "h0->h1 share a leaf but have no one-hop path"
[ -n "$direct" ] && path_by_counters h0 h1 "$direct" "$TMP/paths01.json"

# ---- faults --------------------------------------------------------------
# probe_all SRC DST PATHS KEY VALUE FIELD: every path whose KEY list
# (links/switches) holds VALUE must show FIELD == expect_hit, the others
# FIELD == expect_miss.
expect_paths() {
	desc=$1 src=$2 dst=$3 pathfile=$4 key=$5 value=$6 field=$7 hit=$8 miss=$9
	$T "$F" -j probe "$src" "$dst" -c $N -w 300 ${RAW:-} >"$TMP/pr.json"
	jq -r --arg k "$key" --arg v "$value" \
		'.[] | "\(.ev) \(if (.[$k] | index($v)) then 1 else 0 end)"' "$pathfile" >"$TMP/hit"
	n_hit=$(awk '$2 == 1' "$TMP/hit" | wc -l)
	[ "$n_hit" -gt 0 ] || bad "$desc: no path of $src->$dst crosses $value (test setup)"
	wrong=$(while read -r ev h; do
		got=$(jq --argjson ev "$ev" --arg f "$field" '.[] | select(.ev == $ev) | .[$f]' "$TMP/pr.json")
		want=$miss; [ "$h" = 1 ] && want=$hit
		[ "$got" = "$want" ] || echo "ev $ev $field=$got want $want;"
	done <"$TMP/hit")
	if [ -z "$wrong" ]; then ok "$desc: exactly the $n_hit paths crossing $value"; else bad "$desc: $wrong"; fi
}
all_healthy() {
	$T "$F" -j probe "$1" "$2" -c $N -w 1000 >"$TMP/pr.json"
	check "after restore: every path $1->$2 delivers all, none trimmed" \
		"$(jq "[.[] | select(.received != $N or .trimmed != 0)] | length" "$TMP/pr.json")" 0
}

# Link targets come from the path list: the uplink of the second path and a leaf-spine
# link of plane 1.  Node targets: the spine of the last EV.
L1=$(jq -r '.[1].links[1]' "$TMP/paths.json")
L2=$(jq -r '.[-1].links[2]' "$TMP/paths.json")
S1=$(jq -r '.[-1].switches[1]' "$TMP/paths.json")

for fault in "fail $L1|links|$L1" "fail $L2 --silent|links|$L2" "fail $S1|switches|$S1" \
	     "fail $S1 --silent|switches|$S1" "drop $L1 100|links|$L1"; do
	cmd=${fault%%|*}; rest=${fault#*|}; key=${rest%%|*}; target=${rest#*|}
	# shellcheck disable=SC2086
	$T "$F" $cmd >/dev/null || bad "$cmd failed"
	expect_paths "$cmd" h0 h7 "$TMP/paths.json" "$key" "$target" received 0 $N
	expect_paths "$cmd (reverse)" h7 h0 "$TMP/paths.json" "$key" "$target" received 0 $N
	$T "$F" restore >/dev/null || bad "restore after $cmd failed"
	all_healthy h0 h7
	all_healthy h7 h0
done

# Random loss: 50 % over 400 packets loses some and delivers some on the
# crossing path only (bounds far outside what a fair coin does: p < 1e-30).
$T "$F" drop "$L1" 50 >/dev/null || bad "drop failed"
$T "$F" -j probe h0 h7 -c 400 -w 300 >"$TMP/pr.json"
EV1=$(jq '.[1].ev' "$TMP/paths.json")
got=$(jq --argjson ev "$EV1" '.[] | select(.ev == $ev) | .received' "$TMP/pr.json")
if [ "$got" -gt 100 ] && [ "$got" -lt 300 ]; then ok "drop 50%: $got of 400 arrived on the lossy path"
else bad "drop 50%: $got of 400 arrived"; fi
check "drop 50%: other paths lossless" \
	"$(jq --argjson ev "$EV1" '[.[] | select(.ev != $ev and .received != 400)] | length' "$TMP/pr.json")" 0
$T "$F" restore >/dev/null || bad "restore after drop failed"

# Trimming: MRC data packets crossing the link arrive as 52-byte headers
# with TRIMMED set that the transport's decoder (mrce_wire_decode, used by
# probe) accepts as trimmed, in both directions; others whole; non-MRC
# packets are never trimmed.
$T "$F" trim "$L1" 100 >/dev/null || bad "trim failed"
expect_paths "trim $L1" h0 h7 "$TMP/paths.json" links "$L1" trimmed $N 0
expect_paths "trim $L1 (reverse)" h7 h0 "$TMP/paths.json" links "$L1" trimmed $N 0
expect_paths "trim $L1: all still arrive" h0 h7 "$TMP/paths.json" links "$L1" received $N $N
RAW=--raw expect_paths "trim $L1: non-MRC packets untouched" h0 h7 "$TMP/paths.json" links "$L1" trimmed 0 0
check "show lists the active fault" "$("$F" -j show | jq '.faults | length')" 1
$T "$F" restore >/dev/null || bad "restore after trim failed"
all_healthy h0 h7
check "restore clears the fault list" "$("$F" -j show | jq '.faults | length')" 0

# A fault on a spine uplink leaves the one-hop path of same-leaf hosts alone.
# The failure itself is checked: the path through that uplink delivers nothing.
UP=$(jq -r '.[0].links[1]' "$TMP/paths01.json"); EV_UP=$(jq '.[0].ev' "$TMP/paths01.json")
$T "$F" fail "$UP" >/dev/null || bad "fail $UP failed"
$T "$F" -j probe h0 h1 --ev "$EV_UP" -c $N -w 300 >"$TMP/pr.json"
check "uplink failure: the path through $UP delivers nothing" "$(jq '.[0].received' "$TMP/pr.json")" 0
$T "$F" -j probe h0 h1 --ev "$direct" -c $N -w 1000 >"$TMP/pr.json"
check "uplink failure: one-hop h0->h1 still delivers" "$(jq '.[0].received' "$TMP/pr.json")" $N
$T "$F" restore >/dev/null || bad "restore after fail $UP failed"

# ---- down ----------------------------------------------------------------
$T "$F" down >/dev/null
check "down: no namespace left" "$(ip netns list | grep -c "^$P-" || true)" 0
links_after=$(ip -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | sort | tr '\n' ' ')
check "down: links of this namespace unchanged" "$links_after" "$links_before"
check "down: no nftables table of the tool here" "$(nft list tables 2>/dev/null | grep -c mrcfab || true)" 0
check "down: no state left" "$(ls /run/mrc-fabric/$P 2>/dev/null | wc -l)" 0

# ---- speed of the 16-host fabric (reported, not asserted) ---------------
$T "$F" -j up examples/topologies/fabric-2p-16h.json >"$TMP/up16.json" || bad "16-host up failed"
echo "     2-plane 8-leaf 4-spine 16-host fabric up in $(jq .seconds "$TMP/up16.json") s"
$T "$F" down >/dev/null

if [ $fails -ne 0 ]; then echo "fabric.sh: $fails checks failed"; exit 1; fi
echo "fabric.sh: all checks passed"
