#!/bin/bash
# Issue 31, "Names": one prefix per layer, no near-anagram or one-underscore
# pairs, "path" for one thing.  A record of the rename and the tool that did
# it: run it on a tree that may hold new code using the old names (other
# branches merged after it), then build and run scripts/check-layers.sh,
# whose rules 6-8 catch what it did not know about.
#
#   scripts/rename-names.sh [-n]     -n: list what would change, change nothing
#
# Idempotent: no new name is an old one, so a second run changes nothing
# (it checks both).  Rewrites tracked and untracked-but-not-ignored text
# files (C, CUDA, docs, man pages, make, shell, Python, Lua, linker maps);
# never .git, build*, shared/, bench/results/ (records of past runs, named
# by their commit) or this script.  Renames files with git mv.
#
# The map (old -> new; a trailing "_" is a whole family of names):
#   engine (transport/), so every name it defines says mrce:
#     every mrc__X / MRC__X that transport/ uses  -> mrce__X / MRCE__X
#     struct mrc__path, mrc__path_*            -> struct mrce__ev, mrce__ev_*
#     mrc__event (queue an event)              -> mrce__event_push
#     MRC_EV_ MRC_QPS_ MRC_WC_ MRC_EVT_ MRC_RSN_ MRC_TOK_ MRC_CC_ -> MRCE_...
#     MRC_MAX_PLANES/EVS/WINDOW/MSG, MRC_ACCESS_*, MRC_QP_PIN_EV,
#     MRC_QP_RNR_RETRY, MRC_RNR_RETRY_FOREVER, MRC_RX_ECN -> MRCE_...
#     and any other MRC_ constant engine.h / engine_wire.h define (found at
#     run time: MRC_TC_* of the traffic classes) -> MRCE_
#     mrc_wire_ mrc_cc_                        -> mrce_wire_ mrce_cc_
#     mrc_crc32c, mrc_op_name                  -> mrce_crc32c, mrce_op_name
#     mrce_qp_create/destroy                   -> mrce_qp_open/close
#     mrce_mr_reg/dereg                        -> mrce_mr_add/remove
#     mrce_poll_cq, mrce_poll_event            -> mrce_wc_drain, mrce_event_pop
#     transport/path.[ch]                      -> transport/evs.[ch]
#   srv6/:
#     srv6/path.c                              -> srv6/encap.c
#     struct mrc_srv6_path                     -> struct mrc_srv6_encap
#     mrc_srv6_path_encode/decode              -> mrc_srv6_encode/decode
#     MRC_SRV6_PATH_MAX_USIDS                  -> MRC_SRV6_ENCAP_MAX_USIDS
#     mrc__srv6_err (sets the message)         -> mrc__srv6_set_err
#     mrc__a6_  mrc__nla_nest                  -> mrc__usid_a6_  mrc__nl_nla_nest
#     mrc_netns_  mrc_link_                    -> mrc_nl_netns_  mrc_linkmon_
#   topology/: mrc_tier_name                   -> mrc_topo_tier_name
#   datapath/: mrc__xdp_ mrc__af_xdp_ mrc__dpdk_ mrc__frame_ mrc__nexthop_
#              mrc__verbs_                     -> mrc__dp_xdp_ ... mrc__dp_verbs_
#   gpu/:      mrc__cuda_                      -> mrc__gpu_cuda_
#   lib/:      mrc__call mrc__close_fds mrc__unlink_mr mrc__unlink_qp
#              mrc__free_mr                    -> mrc__lib_call ... mrc__lib_free_mr
#   coll/:     mrc__coll_alltoallv_2d          -> mrc__coll_a2a2d_run
#              mrc__coll_moe_dispatch          -> mrc__coll_moe_dispatch_run
#              mrc__sched_ mrc__shm_ mrc__tree_q_ mrc__seg
#                                              -> mrc__coll_sched_ mrc__coll_ring_
#                                                 mrc__coll_tree_q_ mrc__coll_seg
#   ctl/:      mrc_oper_render, mrc_oper_render_ -> mrc_ctl_render, mrc_ctl_render_
#              (codec keeps mrc_oper_)
set -euo pipefail
cd "$(dirname "$0")/.."
SELF=scripts/rename-names.sh
DRY=0
[ "${1:-}" = -n ] && DRY=1

files() {
	git ls-files -co --exclude-standard -- '*.c' '*.h' '*.cu' '*.md' '*.3' '*.5' \
		'*.7' '*.8' '*.map' '*.mk' '*.sh' '*.py' '*.lua' '*.def' '*.in' '*.conf' \
		'*.example' Makefile |
		grep -vE '^(build[^/]*|shared|bench/results)/' | grep -vxF "$SELF" |
		while IFS= read -r f; do [ -f "$f" ] && ! [ -L "$f" ] && echo "$f"; done
}

# ---- file renames ---------------------------------------------------------
mvf() {   # old new: once; a tree with both is an error for a person to settle
	if [ -e "$1" ] && [ -e "$2" ]; then
		echo "rename-names: both $1 and $2 exist" >&2
		exit 1
	fi
	[ -e "$1" ] || return 0
	echo "git mv $1 $2"
	[ $DRY = 1 ] || git mv "$1" "$2"
}
mvf transport/path.c transport/evs.c
mvf transport/path.h transport/evs.h
mvf srv6/path.c srv6/encap.c

# ---- the identifier map ---------------------------------------------------
# "old new" per line; old ending in "_" is a family (every name starting so).
# Specific lines come first: sed applies them in order.
MAP='
mrc__path_ mrce__ev_
mrc__path mrce__ev
mrc__event mrce__event_push
MRC_TRANSPORT_PATH_H MRC_TRANSPORT_EVS_H
MRC_EV_ MRCE_EV_
MRC_QPS_ MRCE_QPS_
MRC_WC_ MRCE_WC_
MRC_EVT_ MRCE_EVT_
MRC_RSN_ MRCE_RSN_
MRC_TOK_ MRCE_TOK_
MRC_CC_ MRCE_CC_
MRC_MAX_PLANES MRCE_MAX_PLANES
MRC_MAX_EVS MRCE_MAX_EVS
MRC_MAX_WINDOW MRCE_MAX_WINDOW
MRC_MAX_MSG MRCE_MAX_MSG
MRC_ACCESS_ MRCE_ACCESS_
MRC_QP_PIN_EV MRCE_QP_PIN_EV
MRC_QP_RNR_RETRY MRCE_QP_RNR_RETRY
MRC_RNR_RETRY_FOREVER MRCE_RNR_RETRY_FOREVER
MRC_RX_ECN MRCE_RX_ECN
mrc_wire_ mrce_wire_
mrc_cc_ mrce_cc_
mrc_crc32c mrce_crc32c
mrc_op_name mrce_op_name
mrce_qp_create mrce_qp_open
mrce_qp_destroy mrce_qp_close
mrce_mr_reg mrce_mr_add
mrce_mr_dereg mrce_mr_remove
mrce_poll_cq mrce_wc_drain
mrce_poll_event mrce_event_pop
MRC_SRV6_PATH_MAX_USIDS MRC_SRV6_ENCAP_MAX_USIDS
MRC_SRV6_PATH_H MRC_SRV6_ENCAP_H
mrc_srv6_path_encode mrc_srv6_encode
mrc_srv6_path_decode mrc_srv6_decode
mrc_srv6_path mrc_srv6_encap
mrc__srv6_err mrc__srv6_set_err
mrc__a6_ mrc__usid_a6_
mrc__nla_nest mrc__nl_nla_nest
mrc_netns_ mrc_nl_netns_
mrc_link_ mrc_linkmon_
mrc_tier_name mrc_topo_tier_name
mrc__xdp_ mrc__dp_xdp_
mrc__af_xdp_ mrc__dp_af_xdp_
mrc__dpdk_ mrc__dp_dpdk_
mrc__frame_ mrc__dp_frame_
mrc__nexthop_ mrc__dp_nexthop_
mrc__verbs_ mrc__dp_verbs_
mrc__cuda_ mrc__gpu_cuda_
mrc__call mrc__lib_call
mrc__close_fds mrc__lib_close_fds
mrc__unlink_mr mrc__lib_unlink_mr
mrc__unlink_qp mrc__lib_unlink_qp
mrc__free_mr mrc__lib_free_mr
mrc__coll_alltoallv_2d mrc__coll_a2a2d_run
mrc__coll_moe_dispatch mrc__coll_moe_dispatch_run
mrc__sched_ mrc__coll_sched_
mrc__shm_ mrc__coll_ring_
mrc__tree_q_ mrc__coll_tree_q_
mrc__seg mrc__coll_seg
mrc_oper_render_ mrc_ctl_render_
mrc_oper_render mrc_ctl_render
'
# The engine's own internal names, found in transport/ at run time so that
# code merged after this script was written is covered too: every mrc__X /
# MRC__X a transport/ file uses and no header outside transport/ declares.
# (On a renamed tree there are none left, so a second run adds nothing.)
outside_h=$(git ls-files -co --exclude-standard -- '*.h' | grep -v '^transport/' |
	grep -vE '^(tests|bench|fuzz)/' || true)
engine_ids=$(cat transport/*.c transport/*.h | { grep -ohE '\b(mrc|MRC)__[A-Za-z0-9_]+' || true; } | sort -u)
for id in $engine_ids; do
	[ -n "$outside_h" ] && printf '%s\n' "$outside_h" | xargs grep -qw -- "$id" && continue
	case "$id" in
	mrc__path | mrc__path_* | mrc__event) continue ;;   # in MAP above
	mrc__*) MAP+="$id mrce__${id#mrc__}"$'\n' ;;
	MRC__*) MAP+="$id MRCE__${id#MRC__}"$'\n' ;;
	esac
done

# Likewise every constant the engine's interface defines (a #define or an
# enum constant in transport/engine.h, engine_wire.h) as MRC_X: MRCE_X,
# unless include/ (the public ABI) names it too.  The lines above cover
# those at the time of writing; this, ones added since (traffic classes).
pub_h=$(git ls-files -co --exclude-standard -- 'include/*.h')
eng_consts=$( { cat transport/engine.h transport/engine_wire.h |
	grep -oE '^[[:space:]]*#[[:space:]]*define[[:space:]]+MRC_[A-Z0-9_]+' || true
	cat transport/engine.h transport/engine_wire.h |
	grep -oE '(^[[:space:]]*|\{[[:space:]]*|,[[:space:]]*)MRC_[A-Z0-9_]+[[:space:]]*(=|,|$|\})' || true
	} | grep -oE 'MRC_[A-Z0-9_]+' | grep -vE '^MRC_TRANSPORT_[A-Z0-9_]+_H$' | sort -u || true)
for c in $eng_consts; do
	[ -n "$pub_h" ] && printf '%s\n' "$pub_h" | xargs grep -qw -- "$c" && continue
	grep -qE "^$c " <<<"$MAP" && continue
	MAP+="$c MRCE_${c#MRC_}"$'\n'
done

# Idempotence: no new name may be (or start) an old one, else a second run
# would rename again.
olds=$(awk 'NF == 2 { print $1 }' <<<"$MAP")
news=$(awk 'NF == 2 { print $2 }' <<<"$MAP")
for n in $news; do
	for o in $olds; do
		case "$o" in
		*_) case "$n" in "$o"*) echo "rename-names: $n (new) starts with the old family $o" >&2; exit 1 ;; esac ;;
		*) [ "$n" = "$o" ] && { echo "rename-names: $n is both old and new" >&2; exit 1; } ;;
		esac
	done
done

# One sed program: a family matches at a word start, a name as a whole word.
prog=$(awk 'NF == 2 {
	if ($1 ~ /_$/) printf "s/\\<%s/%s/g\n", $1, $2
	else printf "s/\\<%s\\>/%s/g\n", $1, $2 }' <<<"$MAP")
# File names in text: transport/path.[ch] is evs.[ch], srv6/path.c is
# encap.c; a bare path.[ch] inside transport/ or the engine's docs is the
# engine's (srv6's row of the layer table and docs/srv6.md say srv6's).
prog+=$'\n''s|\<transport/path\.\([ch]\)\>|transport/evs.\1|g'
prog+=$'\n''s|\<srv6/path\.c\>|srv6/encap.c|g'
prog_bare_evs='s|\([^a-z_/.]\)path\.\([ch]\)\>|\1evs.\2|g'
prog_bare_encap='s|\([^a-z_/.]\)path\.c\>|\1encap.c|g'

changed=0
while IFS= read -r f; do
	p=$prog
	case "$f" in
	transport/*.[ch] | docs/sim.md) p+=$'\n'$prog_bare_evs ;;
	docs/srv6.md) p+=$'\n'$prog_bare_encap ;;
	docs/design.md) p+=$'\n''/^| 3 | `srv6\/`/'"$prog_bare_encap"$'\n''/^| 3 | `srv6\/`/!'"$prog_bare_evs" ;;
	esac
	if ! out=$(sed -e "$p" -- "$f"); then
		echo "rename-names: sed failed on $f" >&2
		exit 1
	fi
	# $(...) drops trailing newlines: compare against the file read the same way
	if [ "$out" != "$(cat -- "$f")" ]; then
		changed=$((changed + 1))
		if [ $DRY = 1 ]; then
			echo "would change $f"
		else
			sed -i -e "$p" -- "$f"
			echo "changed $f"
		fi
	fi
done < <(files)
echo "rename-names: $changed files $([ $DRY = 1 ] && echo would change || echo changed)"
