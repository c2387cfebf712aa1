# Sourced by bench/sim_base.sh and bench/sim_speed.sh: builds mrcsim at
# commit $1 in a temporary git worktree ($wt/build/bin/mrcsim) and this
# tree's as $B/bin/mrcsim, and makes a scratch folder $res; both go away
# on exit.  Exits 0 with a SKIPPED line (name $2) without git history.
sim_build_base() {
	if ! git rev-parse -q --verify "$1^{commit}" >/dev/null 2>&1; then
		echo "$2: SKIPPED: commit $1 not in this checkout (needs git history)"; exit 0
	fi
	wt=$(mktemp -d /tmp/mrc-simbase.XXXXXX)
	res=$(mktemp -d /tmp/mrc-simres.XXXXXX)
	trap 'git worktree remove --force "$wt" >/dev/null 2>&1 || rm -rf "$wt"; rm -rf "$res"' EXIT
	git worktree add -q --detach "$wt" "$1"
	make -C "$wt" -s MRC_DEPS_DONE=1 build/bin/mrcsim >/dev/null
	make -s "$B/bin/mrcsim" >/dev/null
}
