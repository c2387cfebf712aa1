#!/bin/bash
# Integration (root): `mrcctl top` in a real terminal (tmux) on the emulated
# fabric while h0 ping-pongs with h7 (examples/mrc_pingpong):
#   - the screen shows the title, the plane table (both planes, their NICs)
#     and a row for peer h7 whose TX_PPS becomes a positive number;
#   - the screen refreshes (the peer's rate is seen to change, or a later
#     frame is drawn) and `q` ends mrcctl at once, restoring the terminal;
#   - without a terminal, `-n 2` prints two frames and exits 0.
# Bounded; cleans up tmux, daemons and the fabric on any exit.
set -u
B=${1:-build}
P=mrcT
T=examples/topologies/fabric-2p-8h.json
F="$B/bin/mrc-fabric -p $P"
S=mrc-top-$$
. tests/root/lib.sh
fab_head
on_cleanup 'tmux kill-session -t $S 2>/dev/null'
on_cleanup '[ -n "${pp:-}" ] && kill $pp 2>/dev/null'
on_cleanup '[ -n "${ps:-}" ] && kill $ps 2>/dev/null'
command -v tmux >/dev/null || { echo "SKIP tmux not installed (scripts/deps.sh installs it)"; exit 77; }

$F down >/dev/null 2>&1
$F up "$T" >/dev/null || die "mrc-fabric up"
jq .topology /run/mrc-fabric/$P/state.json >"$tmp/topo.json"
start_mrcd h0
start_mrcd h7
$B/bin/mrc_pingpong -S "$(sock h7)" -n 100000000 server >"$tmp/pp-s" 2>&1 &
ps=$!
$B/bin/mrc_pingpong -S "$(sock h0)" -n 100000000 client 7 >"$tmp/pp-c" 2>&1 &
pp=$!

tmux new-session -d -s $S -x 150 -y 40 "$B/bin/mrcctl -s $tmp/h0/mrcctl.sock top -d 0.3; echo mrcctl-exit=\$?; sleep 30"
screen() { tmux capture-pane -p -t $S; }
h7_rate() { screen | awk '$1 == "h7" {print $3}'; }
busy() { r=$(h7_rate); [ -n "$r" ] && [ "$r" != "-" ] && [ "$r" -gt 0 ] 2>/dev/null; }
until_t 20 busy || { screen; die "top never showed a positive TX_PPS for peer h7"; }
s1=$(screen)
grep -q "^mrcctl top: h0 (srv6), every 0.3 s" <<<"$s1" && ok "title names host h0, srv6 mode and the interval" || bad "title: $(head -1 <<<"$s1")"
[ "$(awk '$1 ~ /^[01]$/ && $2 ~ /^p[01]l0$/ && $3 == "up" {n++} END {print n + 0}' <<<"$s1")" = 2 ] &&
	ok "plane table: planes 0 and 1 on NICs p0l0/p1l0, link up" || bad "plane table: $s1"
ok "peer h7 row with TX_PPS $(h7_rate) pkt/s"
grep -q "(q quits)" <<<"$s1" && ok "a terminal gets the q hint" || bad "no q hint on a terminal"
changed() { [ "$(screen)" != "$s1" ]; }
until_t 10 changed && ok "the screen refreshes" || bad "the screen did not change in 10 s"
tmux send-keys -t $S q
quit() { screen | grep -q "mrcctl-exit=0"; }
until_t 5 quit && ok "q ends mrcctl top with status 0" || { bad "q did not end top"; screen; }

out=$($B/bin/mrcctl -s $tmp/h0/mrcctl.sock top -d 0.2 -n 2 </dev/null); rc=$?
[ $rc = 0 ] && [ "$(grep -c '^mrcctl top:' <<<"$out")" = 2 ] && ! grep -q $'\033' <<<"$out" &&
	ok "without a terminal, -n 2 prints 2 plain frames and exits 0" || bad "batch mode (rc $rc): $out"

[ $fails = 0 ] || { echo "ctl_top: $fails check(s) failed"; exit 1; }
echo "ctl_top: all checks passed"
