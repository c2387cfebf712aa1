#!/bin/bash
# Integration (root): mrcd's admin state survives a restart.  Two mrcd (h0,
# h7) on the emulated 2-plane fabric; h0 runs with --state_dir in the test's
# scratch dir (never /var/lib/mrcd):
#   - `plane disable 1` and `path deny h7 EV` write STATE/admin.json
#   - after SIGTERM and a new start, both are in effect again (planes show
#     plane 1 admin disabled, the path DENIED(admin) in `mrcctl paths`),
#     `status` says restored, `events` has the "restored from" note
#   - a corrupted file is kept aside (admin.json.bad-TIME), mrcd comes up
#     with no admin state and says why in status and events
#   - a file saved for another host, or naming a plane the topology does
#     not have, is refused the same way
#   - without state_dir, systemd's $STATE_DIRECTORY is where it is kept
# Bounded in time; cleans up on any exit.
set -u
B=${1:-build}
P=${P:-mrcA}
T=examples/topologies/fabric-2p-8h.json
F="$B/bin/mrc-fabric -p $P"
tmp=$(mktemp -d)
ST="$tmp/state"
declare -A dpid
fails=0
cleanup() {
	for p in "${dpid[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${dpid[@]}"; do wait "$p" 2>/dev/null; done
	$F down >/dev/null 2>&1
	rm -rf "$tmp"
}
# A signal ends the script (its EXIT trap cleans up); a trap that only
# cleaned up let it run on after TERM, holding the root lock.
trap cleanup EXIT
trap 'exit 143' INT TERM
UNTIL_POLL=0.1
. tests/root/lib.sh
die() { echo "FAIL $*"; for h in h0 h7; do echo "--- mrcd $h log"; tail -n 20 "$tmp/$h.log"; done; exit 1; }

$F down >/dev/null 2>&1
$F up "$T" >/dev/null || die "mrc-fabric up"
cp "$T" "$tmp/topo.json"
$B/bin/mrcd --genkey "$tmp/cluster.key" >/dev/null || die "mrcd --genkey"
start() {   # start HOST [EXTRA...]: mrcd in its namespace, waits for its sockets
	local h=$1; shift
	mkdir -p "$tmp/$h"
	rm -f "$tmp/$h/mrcctl.sock"
	ip netns exec $P-$h $B/bin/mrcd --topology "$tmp/topo.json" --host $h --socket "$tmp/$h/mrcd.sock" \
		--key_file "$tmp/cluster.key" --probe_interval_us 20000 "$@" 2>>"$tmp/$h.log" &
	dpid[$h]=$!
	until_t 10 test -S "$tmp/$h/mrcctl.sock" || die "mrcd on $h did not start"
}
stop() {    # stop HOST: SIGTERM, waits for it to exit (drain is bounded at 5 s)
	kill -TERM "${dpid[$1]}" && wait "${dpid[$1]}"
	local rc=$?
	unset "dpid[$1]"
	[ $rc = 0 ] || bad "mrcd $1 exited $rc on SIGTERM"
}
start h7
start h0 --state_dir "$ST"

st() { ctl h0 -j status | jq -c .admin_state; }
st | jq -e --arg f "$ST/admin.json" '.file == $f and .persisted and (.restored | not) and (has("error") | not)' >/dev/null &&
	ok "fresh start: status names $ST/admin.json, nothing restored" || bad "fresh start: admin_state $(st)"
[ ! -e "$ST/admin.json" ] && ok "no admin change: no file written" || bad "a file appeared without an admin change"

# An EV of h0 -> h7 on plane 0 (plane 1 gets disabled as a whole); a probe
# makes h7 a peer of h0.
ctl h0 -j probe h7 --timeout 500 >/dev/null || die "probe h7"
EV=$(ctl h0 -j paths h7 | jq '[.paths[] | select(.exists and .plane == 0)][0].ev')
[ "$EV" != null ] || die "no plane-0 path h0 -> h7: $(ctl h0 -j paths h7)"
ctl h0 -j plane disable 1 | jq -e '.changed' >/dev/null || bad "plane disable 1"
ctl h0 -j path deny h7 "$EV" | jq -e '.state == "DENIED"' >/dev/null || bad "path deny h7 $EV"
jq -e --argjson ev "$EV" '.version == 1 and .host == "h0" and .planes_disabled == [1] and
	.paths_denied == [{"peer": "h7", "ev": $ev}]' "$ST/admin.json" >/dev/null &&
	ok "admin.json after the changes: $(cat "$ST/admin.json")" || bad "admin.json: $(cat "$ST/admin.json" 2>&1)"
[ "$(stat -c %a "$ST/admin.json")" = 640 ] && ok "admin.json mode 0640" || bad "admin.json mode $(stat -c %a "$ST/admin.json")"

# ---- restart: both still in effect -------------------------------------------
stop h0
start h0 --state_dir "$ST"
in_effect() {
	ctl h0 -j planes | jq -e '.planes[1].admin == "disabled" and .planes[1].restored and (.planes[0].restored | not)' >/dev/null &&
	ctl h0 -j paths h7 | jq -e --argjson ev "$EV" '[.paths[] | select(.exists)] |
		all(if .plane == 1 then .state == "DENIED" and .admin_denied and (.denied_by | index("admin_plane"))
		    elif .ev == $ev then .state == "DENIED" and .admin_denied and .restored and .denied_by == ["admin_path"]
		    else (.denied_by | length) == 0 end)' >/dev/null
}
in_effect && ok "after restart: plane 1 admin disabled, h7 ev $EV DENIED(admin_path), marked restored" ||
	bad "after restart: planes $(ctl h0 -j planes | jq -c '[.planes[]|{plane,admin,restored}]') paths $(ctl h0 -j paths h7 | jq -c '[.paths[]|select(.exists)|{ev,plane,state,denied_by,restored}]')"
ctl h0 paths h7 | grep -E "^ *$EV " | grep -q 'DENIED(admin)' && ok "mrcctl paths (text): ev $EV DENIED(admin)" ||
	bad "mrcctl paths text: $(ctl h0 paths h7 | head -20)"
st | jq -e '.restored and .planes_disabled == [1] and .paths_denied == 1' >/dev/null &&
	ok "status: admin_state $(st)" || bad "status after restart: $(st)"
ctl h0 status | grep -q "admin state: $ST/admin.json, restored at start" && ok "status (text): restored" ||
	bad "status text: $(ctl h0 status)"
ctl h0 -j events | jq -e --arg f "$ST/admin.json" '[.events[] | select(.kind == "admin" and (.text | startswith("admin: restored from " + $f)))] | length == 1' >/dev/null &&
	ok "events: $(ctl h0 -j events | jq -r '[.events[]|select(.kind=="admin")][0].text')" || bad "events: no restore note"

# Undoing a restored setting is saved too.
ctl h0 -j plane enable 1 | jq -e '.changed' >/dev/null || bad "plane enable 1"
jq -e '.planes_disabled == []' "$ST/admin.json" >/dev/null && st | jq -e '.planes_disabled == [] and .paths_denied == 1' >/dev/null &&
	ok "plane enable 1 after restore: saved, no longer shown as restored" || bad "enable after restore: $(cat "$ST/admin.json") $(st)"

# ---- a corrupt file: kept aside, mrcd up without admin state -----------------
stop h0
printf '{"version":1,"host":"h0","saved":"x","planes_disabled":[1],"paths_denied":[{"peer":"h7","ev":"3"}]}\n' >"$ST/admin.json"
cp "$ST/admin.json" "$tmp/corrupt"
start h0 --state_dir "$ST"
ctl h0 -j probe h7 --timeout 500 >/dev/null || die "probe h7"
kept=$(ls "$ST"/admin.json.bad-* 2>/dev/null | head -1)
[ -n "$kept" ] && cmp -s "$kept" "$tmp/corrupt" && [ ! -e "$ST/admin.json" ] &&
	ok "corrupt file kept aside as $(basename "$kept"), byte for byte" || bad "corrupt file not kept: $(ls -la "$ST")"
ctl h0 -j planes | jq -e 'all(.planes[]; .admin == "enabled")' >/dev/null &&
	ctl h0 -j paths h7 | jq -e '[.paths[] | select(.exists)] | all(.admin_denied | not)' >/dev/null &&
	ok "corrupt file: mrcd up with no admin state" || bad "corrupt file: admin state applied anyway"
st | jq -e '(.restored | not) and (.error | test("paths_denied.*ev") and test("kept as"))' >/dev/null &&
	ok "status error: $(st | jq -r .error)" || bad "status after a corrupt file: $(st)"
ctl h0 -j events | jq -e '[.events[] | select(.kind == "admin" and (.text | test("refused")))] | length == 1' >/dev/null &&
	ok "events: the refusal is noted" || bad "events: no refusal note"
grep -q "admin: state file $ST/admin.json refused" "$tmp/h0.log" && ok "log: the refusal is logged" || bad "log: no refusal line"

# ---- a file of another host: refused the same way ---------------------------
stop h0
printf '{"version":1,"host":"h7","saved":"x","planes_disabled":[0],"paths_denied":[]}\n' >"$ST/admin.json"
start h0 --state_dir "$ST"
[ "$(ls "$ST"/admin.json.bad-* | wc -l)" = 2 ] && st | jq -e '.error | test("saved by host .h7., this is .h0.")' >/dev/null &&
	ctl h0 -j planes | jq -e '.planes[0].admin == "enabled"' >/dev/null &&
	ok "another host's file refused and kept ($(ls "$ST" | tr '\n' ' '))" || bad "another host's file: $(st) $(ls "$ST")"

# ---- a plane this topology does not have: refused --------------------------
stop h0
printf '{"version":1,"host":"h0","saved":"x","planes_disabled":[5],"paths_denied":[]}\n' >"$ST/admin.json"
start h0 --state_dir "$ST"
[ "$(ls "$ST"/admin.json.bad-* | wc -l)" = 3 ] && st | jq -e '.error | test("plane 5, this node has planes 0..1")' >/dev/null &&
	ok "a plane not in the topology: refused and kept" || bad "plane 5: $(st) $(ls "$ST")"

# ---- no state_dir: systemd's STATE_DIRECTORY is used --------------------------
stop h0
STATE_DIRECTORY="$tmp/sd" start h0
ctl h0 -j plane disable 0 >/dev/null
st | jq -e --arg f "$tmp/sd/admin.json" '.file == $f' >/dev/null && jq -e '.planes_disabled == [0]' "$tmp/sd/admin.json" >/dev/null &&
	ok "STATE_DIRECTORY=$tmp/sd without state_dir: saved there" || bad "STATE_DIRECTORY: $(st)"

echo "admin_state.sh: $fails failure(s)"
[ $fails = 0 ]
