#!/bin/bash
# Integration (root): fabric-link localisation (issue 34, docs/health.md)
# on the emulated SRv6 fabric (2 planes x 4 leaves x 2 spines, 8 hosts),
# one mrcd per host, mrc_alltoall on every host the whole time (so every
# leaf-spine link carries several hosts' flows).
#   - N times (MRC_HEALTH_N, default 3; 1 under MRC_ROOT_QUICK=1, make
#     check-fresh's short run): one random leaf-spine link
#     (seeded by MRC_HEALTH_SEED, printed) blackholed silently: within
#     MRC_HEALTH_BOUND s (20: a shared VM's load) some host has recorded
#     that link located or denied (`mrcctl fabric`'s convictions, every
#     one the daemons made: health/record.h), its health_located counter
#     moved, and no host recorded any other link located or denied from
#     the fault until the link healed; the time to located (and to
#     denied, if within the bound) is the daemons' own; the
#     blackhole must have dropped packets (the nftables counters of the
#     link's two ends moved: the fault happened); after `restore` no host
#     lists it within MRC_HEALTH_HEAL s (30), the time printed.  Before
#     the fix (h-hfeed) hosts held the restored link denied > 15 s, and
#     one host located a wrong link while the others denied the dead one.
#   - M times (MRC_HEALTH_M, default 1): a congested but healthy fabric
#     (mrc_bulk from every other host into h0, MRC_HEALTH_CONG_S s each):
#     no host's health_located or health_denied counter moved (every
#     conviction counted by the daemons, not what a poll happened to see;
#     the convictions' evidence printed if one did), and the congestion
#     happened (h0's ECN or trim counters moved).
#     Another link recorded fails the run only with MRC_HEALTH_STRICT=1
#     (the bench); else it is printed (a known brief conviction of the
#     dead link's far links, docs/health.md "Missing").
#   - each blackhole run: with mrcd's health_suspect on
#     (MRCD_EXTRA="--health_suspect 1"; off by default) the hosts' summed
#     health_suspects moved (a failure suspected its uplink), with it off
#     it did not.
# One line per run ("run I LINK located T_MS denied T_MS healed T_MS
# suspects N ok|wrong|missed|unhealed|dry",
# "cong I ... convicted none|LINKS") for bench/fabric/health.sh.  Bounded
# in time; cleans up on every exit.  Run it only under
# `flock /tmp/mrc-root.lock`.
set -u
B=${1:-build}
P=${MRC_HEALTH_PREFIX:-mrcH}
T=examples/topologies/fabric-2p-8h.json
F="$B/bin/mrc-fabric -p $P"
if [ "${MRC_ROOT_QUICK:-0}" = 1 ]; then N=${MRC_HEALTH_N:-1}; else N=${MRC_HEALTH_N:-3}; fi
M=${MRC_HEALTH_M:-1}
BOUND=${MRC_HEALTH_BOUND:-20}
CONG_S=${MRC_HEALTH_CONG_S:-5}
# 30 s: one poll of 8 mrcctl took 6-10 s on a loaded 2-core VM, and the
# slowest heal seen there was 12.5 s poll to poll (bench/results/health.md).
HEAL=${MRC_HEALTH_HEAL:-30}
SEED=${MRC_HEALTH_SEED:-$(date +%s)}
HOSTS=(h0 h1 h2 h3 h4 h5 h6 h7)
. tests/root/lib.sh
fab_head
ranks=()
bulks=()
on_cleanup 'for p in "${ranks[@]}" "${bulks[@]}"; do kill -9 "$p" 2>/dev/null; done'
echo "seed $SEED (MRC_HEALTH_SEED=$SEED reproduces the links)"
RANDOM=$SEED
now_ms() { echo $(($(date +%s%N) / 1000000)); }

fabric_up "$T" "${HOSTS[@]}"
# Every leaf-spine link of the fabric, as mrc-fabric and mrcctl name it.
mapfile -t LINKS < <($F -j show | jq -r '.links[] | [.a, .b] | sort |
	select((.[0] | test("^p[0-9]+l")) and (.[1] | test("^p[0-9]+s"))) | .[0] + "-" + .[1]')
[ ${#LINKS[@]} -gt 0 ] || die "no leaf-spine link in mrc-fabric show: $($F -j show | head -c 300)"

# Traffic: an endless all-to-all (256 KiB per peer per round) on every host.
for h in "${HOSTS[@]}"; do
	$B/bin/mrc_alltoall -S "$(sock $h)" -s 256K -r 1000000000 >"$tmp/a2a-$h" 2>&1 &
	ranks+=($!)
done
placed() { ctl $1 -j status 2>/dev/null | jq -r '.totals.bytes_placed // 0'; }
all_placing() { local h; for h in "${HOSTS[@]}"; do [ "$(placed $h)" -gt 0 ] || return 1; done; }
until_t 60 all_placing || die "all-to-all did not start on every host: $(tail -qn2 "$tmp"/a2a-*)"
ok "all-to-all running on ${#HOSTS[@]} hosts, ${#LINKS[@]} leaf-spine links"

# fab_all: every host's `fabric` links, one JSON array of {host, link, state}.
fab_all() {
	local h
	for h in "${HOSTS[@]}"; do
		ctl $h -j fabric 2>/dev/null | jq -c --arg h $h '[.links[] | {host: $h, link, state,
			at: ((.changed // "") | capture("^(?<s>[^.]+)[.](?<ms>[0-9]{3})") //
			     {s: "1970-01-01T00:00:00", ms: "0"} |
			     ((.s + "Z") | fromdateiso8601) * 1000 + (.ms | tonumber))}]'
	done | jq -sc 'add'
}
# drops LINK: packets the blackhole rules on LINK's two ends dropped
# (mrc-fabric's fail --silent counts them in its nftables table).
drops() {
	local n s=0
	for n in ${1/-/ }; do
		s=$((s + $(ip netns exec "$P-$n" nft -j list table netdev mrcfab 2>/dev/null |
			jq '[.nftables[] | .rule? // empty | .expr[] | .counter? // empty | .packets] | add // 0' \
			2>/dev/null || echo 0)))
	done
	echo $s
}
# suspects: EVs the suspected uplinks took out, all hosts together
# (mrcd_stats.health_suspects, docs/health.md "Suspected uplinks").
suspects() {
	local h n=0
	for h in "${HOSTS[@]}"; do n=$((n + $(ctl $h -j stats | jq '.daemon.health_suspects // 0'))); done
	echo $n
}
# mrcd's health_suspect (default 0) unless MRCD_EXTRA sets it.
[[ "${MRCD_EXTRA:-}" =~ health_suspect[=\ ]+1 ]] && SUSPECT=1 || SUSPECT=0
# conv_all: every host's recorded convictions (`mrcctl fabric`'s
# convictions: each time the daemon located or denied a link, kept after
# it healed), one JSON array of {host, seq, link, state, at, den (ms since
# the epoch), fail_hosts, good_paths, evidence}.
conv_all() {
	local h
	for h in "${HOSTS[@]}"; do
		ctl $h -j fabric 2>/dev/null | jq -c --arg h $h 'def ms: capture("^(?<s>[^.]+)[.](?<ms>[0-9]{3})") |
			((.s + "Z") | fromdateiso8601) * 1000 + (.ms | tonumber);
			[.convictions // [] | .[] | {host: $h, seq, link, state, fail_hosts, good_paths,
			 at: (.located | ms), den: (if .denied then (.denied | ms) else null end),
			 evidence: ([.evidence[] | "\(.src)->\(.dst)/ev\(.ev)"] | join(" "))}]'
	done | jq -sc 'add // []'
}
# seqs: each host's newest conviction's seq ({host: seq}), to tell new ones.
seqs() { conv_all | jq -c 'group_by(.host) | map({key: .[0].host, value: (map(.seq) | max)}) | from_entries'; }
# since SEQS: the convictions recorded after SEQS.
since() { conv_all | jq -c --argjson s "$1" '[.[] | select(.seq > ($s[.host] // -1))]'; }
# counts: health_located and health_denied, all hosts together.
counts() {
	local h l=0 d=0 j
	for h in "${HOSTS[@]}"; do
		j=$(ctl $h -j stats | jq -r '"\(.daemon.health_located // 0) \(.daemon.health_denied // 0)"')
		l=$((l + ${j% *})) d=$((d + ${j#* }))
	done
	echo "$l $d"
}
# conv LINKS_JSON: the links some host holds located or denied.
conv() { jq -r '[.[] | select(.state == "located" or .state == "denied") | .link] | unique | join(",")' <<<"$1"; }

# ---- N blackholes of one random leaf-spine link -----------------------------
# Baseline: a healthy fabric under the all-to-all convicts nothing.
until_t 10 eval '[ -z "$(conv "$(fab_all)")" ]' || die "links convicted before any fault: $(fab_all)"
for ((i = 1; i <= N; i++)); do
	link=${LINKS[RANDOM % ${#LINKS[@]}]}
	sus0=$(suspects) s0=$(seqs) n0=$(counts)
	t0=$(now_ms)
	$F fail "$link" --silent >/dev/null || die "mrc-fabric fail $link --silent"
	t_loc= t_den= snap=
	# Until some host has denied it (or the bound): the daemons' records
	# say when each host located or denied it, whatever the poll's pace.
	while [ $(($(now_ms) - t0)) -lt $((BOUND * 1000)) ]; do
		snap=$(since "$s0")
		jq -e --arg l "$link" 'any(.[]; .link == $l and .den != null)' <<<"$snap" >/dev/null && break
		sleep 0.05
	done
	dropped=$(drops "$link")
	sus=$(($(suspects) - sus0))
	$F restore >/dev/null || die "mrc-fabric restore"
	t1=$(now_ms) t_heal=
	# MRC_HEALTH_TRACE=1: what each poll saw of the link while it heals.
	gone() {
		local s; s=$(fab_all)
		[ -n "${MRC_HEALTH_TRACE:-}" ] && echo "trace +$(($(now_ms) - t1)) ms:" \
			"$(jq -c --arg l "$link" '[.[] | select(.link == $l) | [.host, .state]]' <<<"$s")"
		! jq -e --arg l "$link" 'any(.[]; .link == $l)' <<<"$s" >/dev/null
	}
	if until_t "$HEAL" gone; then
		t_heal=$(($(now_ms) - t1))
		ok "run $i: $t_heal ms after restore no host lists $link"
	else
		bad "run $i: $link still listed $HEAL s after restore: $(fab_all)"
	fi
	# Every conviction from the fault until it healed, counted and
	# recorded by the daemons (none missed between polls).
	snap=$(since "$s0") n1=$(counts)
	t_loc=$(jq --arg l "$link" --argjson t0 $t0 '[.[] | select(.link == $l) | .at - $t0] | min // empty' <<<"$snap")
	t_den=$(jq --arg l "$link" --argjson t0 $t0 '[.[] | select(.link == $l and .den != null) | .den - $t0] | min // empty' <<<"$snap")
	wrong=$(jq -r --arg l "$link" '[.[] | select(.link != $l) | .link] | unique | join(",")' <<<"$snap")
	nloc=$((${n1% *} - ${n0% *})) nden=$((${n1#* } - ${n0#* }))
	res="located ${t_loc:--} denied ${t_den:--} healed ${t_heal:--} suspects $sus counted $nloc/$nden"
	[ "$nloc" -gt 0 ] && ok "run $i: health_located moved by $nloc, health_denied by $nden (all hosts)" ||
		bad "run $i: no host's health_located moved"
	if [ $SUSPECT = 1 ] && [ "$sus" -le 0 ]; then
		bad "run $i: health_suspect on, and no host's health_suspects moved"
	elif [ $SUSPECT = 0 ] && [ "$sus" -ne 0 ]; then
		bad "run $i: health_suspect off, and health_suspects moved by $sus"
	else
		ok "run $i: health_suspects moved by $sus (health_suspect $SUSPECT)"
	fi
	if [ "$dropped" -le 0 ]; then
		echo "run $i $link $res dry"
		bad "run $i: the blackhole on $link dropped nothing (nft counters): no fault happened"
	elif [ -n "$wrong" ]; then
		echo "run $i $link $res wrong"
		# Known (docs/health.md "Missing"): far links of the dead one
		# located for a tick or two in 8 of 20 counted runs; the bench
		# (MRC_HEALTH_STRICT=1) counts them, make check prints them.
		w="run $i: blackholed $link, some host located $wrong; convictions: $(jq -c --arg l "$link" '[.[] | select(.link != $l)]' <<<"$snap")"
		[ "${MRC_HEALTH_STRICT:-0}" = 1 ] && bad "$w" || echo "note $w"
	elif [ -z "$t_loc" ]; then
		echo "run $i $link $res missed"
		bad "run $i: $link not located in $BOUND s; convictions: $snap; mrcctl fabric: $(fab_all)"
	elif [ -z "$t_heal" ]; then
		echo "run $i $link $res unhealed"
	else
		echo "run $i $link $res ok"
		ok "run $i: $link located in $t_loc ms${t_den:+, denied in $t_den ms}, no other link; blackhole dropped $dropped packets"
	fi
done

# ---- M runs of a congested, healthy fabric ---------------------------------
counter() { ctl h0 -j stats | jq '(.engine.rx_ecn // 0) + (.engine.rx_trimmed // 0)'; }
for ((i = 1; i <= M; i++)); do
	c0=$(counter) p0=$(placed h0) s0=$(seqs) n0=$(counts)
	bulks=()
	for ((j = 1; j < ${#HOSTS[@]}; j++)); do
		$B/bin/mrc_bulk -S "$(sock h0)" -s 16M -i $((7100 + j)) recv >"$tmp/bulk-r$j" 2>&1 &
		bulks+=($!)
	done
	for ((j = 1; j < ${#HOSTS[@]}; j++)); do
		$B/bin/mrc_bulk -S "$(sock h$j)" -s 16M -i $((7100 + j)) -p 1000 send 0 >"$tmp/bulk-s$j" 2>&1 &
		bulks+=($!)
	done
	t0=$(now_ms)
	# No poll judges it: the daemons count and record every conviction.
	sleep "$CONG_S"
	c1=$(counter) p1=$(placed h0)
	for p in "${bulks[@]}"; do kill -9 "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	bulks=()
	# The next run starts from a fabric that no host suspects; what was
	# convicted until then counts for this run.
	until_t 15 eval '[ "$(fab_all)" = "[]" ] || [ "$(fab_all)" = "null" ]' ||
		echo "note: links still listed 15 s after cong $i: $(fab_all)"
	cs=$(since "$s0") n1=$(counts)
	nloc=$((${n1% *} - ${n0% *})) nden=$((${n1#* } - ${n0#* }))
	convicted=$(jq -r '[.[] | .link] | unique | join(",")' <<<"$cs")
	echo "cong $i ecn+trims $((c1 - c0)) placed_at_h0 $(((p1 - p0) >> 20))MiB counted $nloc/$nden convicted ${convicted:-none}"
	[ $((c1 - c0)) -gt 0 ] && ok "cong $i: congestion seen at h0 ($((c1 - c0)) ECN+trims)" ||
		{ bad "cong $i: no ECN or trim at h0: the fabric was not congested"; tail -qn2 "$tmp"/bulk-*; }
	if [ $((nloc + nden)) = 0 ] && [ -z "$convicted" ]; then
		ok "cong $i: no link located or denied (health_located, health_denied: 0 on every host)"
	else
		bad "cong $i: $nloc located and $nden denied on a healthy fabric, links ${convicted:-?}"
		jq -c --argjson t0 $t0 '.[] | .at -= $t0 | .den = (if .den then .den - $t0 else null end)' <<<"$cs" |
			sed 's/^/  conviction (ms after the bulk start): /'
	fi
done
alive || bad "every all-to-all rank died: $(tail -qn2 "$tmp"/a2a-*)"
[ $fails = 0 ] && echo "health: all passed" || echo "health: $fails failed (seed $SEED)"
[ $fails = 0 ]
