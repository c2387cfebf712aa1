#!/bin/bash
# Build-level layering check (issue 11).  No arguments; exits non-zero with
# one line per violation.  Four rules:
#
#  1. The engine is sans-IO: its objects (transport/*.c -> $B/transport/*.o,
#     built here through make when missing or stale) may leave undefined
#     only the symbols allowed below.  Everything else they need must be
#     defined by another transport object (the CRC code included).
#  2. The folders form layers (LAYERS below, lowest first).  A file may
#     include headers of its own folder and of lower layers only; folders
#     sharing a rank are peers and may not include each other.  A folder
#     with C sources that has no rank is an error too, so a new folder
#     gets its place decided when it is added.
#  3. Inside transport/ the files form a DAG (issue 31): no include circle
#     (X.c and X.h count as one file; engine.h, the public interface that
#     several files implement, counts as its own) and no call circle between
#     the engine objects (which object's undefined symbols another defines).
#     The store (store.c) is at the bottom, the front door (engine.c) on top.
#     No transport/ file over 600 lines, no function over 80.
#  4. The wire stays in transport/ (issue 31): no product file outside it
#     includes transport/wire.h; what callers need of the wire format is
#     in the engine's interface (engine.h, engine_wire.h).  Exceptions
#     (WIRE_H_OK below): tests/, bench/ and fuzz/, which check the codec
#     itself.
#  5. Only daemon/core/ includes daemon/core/core.h and node.h (the core's
#     private state); the rest uses daemon/core/mrcd.h (issue 31).
#  6. A prefix per layer (issue 31): every global symbol an object of a
#     library folder defines starts with a prefix that folder owns (PREFIXES
#     below, docs/design.md's layer table; the longest matching prefix
#     decides the owner, so mrc__ is common's and mrc__coll_ coll's).  The
#     engine's interface headers define only MRCE_ constants.
#  7. No one-underscore pairs: no name X__Y in a product file while X_Y is
#     one too (a libmrc struct and an internal twin one underscore apart).
#  8. No near-anagrams: no engine name mrce_A_B whose words, in any order,
#     are a libmrc name's (libmrc's mrc_poll_cq beside an engine
#     mrce_cq_poll).
#
# B selects the build directory (default build), as for make.
set -u
cd "$(dirname "$0")/.." || exit 2
B=${B:-build}
fail=0
err() { echo "check-layers: $*" >&2; fail=1; }

# ---- 1. what the engine links -----------------------------------------
# Every engine object: the libc string routines the compiler may call for
# struct copies, and what the toolchain adds (GOT base, stack protector,
# sanitizer instrumentation when B is a SAN=1 build).
ALLOW_ALL="memcpy memset memmove memcmp _GLOBAL_OFFSET_TABLE_ __stack_chk_fail"
ALLOW_ALL_PREFIX="__asan_ __ubsan_ __sanitizer_ __tsan_ __msan_ __lsan_"
# Allocation: only the objects that create and destroy the engine, peers
# and QPs (engine.c, peer.c, qp.c; timers.c sizes its heap at create; seal.c
# when the AEAD mode's keys are installed, never per packet).  The data path (sender, receiver,
# wire, congestion control) may not allocate; that nothing allocates after
# create is the engine's documented rule, which nm cannot see.
ALLOW_ALLOC_OBJS="engine peer qp timers seal"
ALLOW_ALLOC="calloc malloc realloc free"
# h-path64 (issue 33): zmem.c maps what a clean run may never write (the
# cold halves of path records, a QP's send or receive arrays) anonymously,
# zero pages until written; memory, like calloc's own large blocks, not I/O.
ALLOW_ALLOC_OBJS+=" zmem"
ALLOW_MAP_OBJS="zmem"
ALLOW_MAP="mmap munmap"
# crc32c.c picks its SSE4.2 / table implementation once at first use.
ALLOW_CRC="pthread_once __cpu_indicator_init __cpu_model"

objs=()
for c in transport/*.c; do
	objs+=("$B/${c%.c}.o")
done
if ! make -s --no-print-directory B="$B" "${objs[@]}" >/dev/null; then
	err "could not build the engine objects in $B"
	exit 1
fi
defined=$(nm -g --defined-only "${objs[@]}" | awk 'NF == 3 { print $3 }' | sort -u)
for o in "${objs[@]}"; do
	name=$(basename "$o" .o)
	allow=" $ALLOW_ALL "
	case " $ALLOW_ALLOC_OBJS " in *" $name "*) allow+=" $ALLOW_ALLOC ";; esac
	case " $ALLOW_MAP_OBJS " in *" $name "*) allow+=" $ALLOW_MAP ";; esac
	[ "$name" = crc32c ] && allow+=" $ALLOW_CRC "
	for sym in $(nm -u "$o" | awk '{ print $NF }'); do
		grep -qxF "$sym" <<<"$defined" && continue
		case "$allow" in *" $sym "*) continue;; esac
		ok=0
		for p in $ALLOW_ALL_PREFIX; do
			case "$sym" in "$p"*) ok=1;; esac
		done
		[ $ok = 1 ] && continue
		err "engine object transport/$name.o needs '$sym', which the sans-IO engine may not use (allowed: scripts/check-layers.sh)"
	done
done

# ---- 3. no circle inside transport/ ---------------------------------------
# tsort fails on a loop and names its members; each edge is "from to".
engine_node() {   # a transport file's node: its stem, engine.h apart
	case "$1" in
	transport/engine.h) echo engine.h ;;
	*) f=${1##*/}; echo "${f%.*}" ;;
	esac
}
loop_members() {   # tsort's complaint, as the files in loops
	sed -n 's/^tsort: //p' <<<"$1" | grep -v 'input contains a loop' | sort -u | tr '\n' ' '
}
inc_edges=$(for f in transport/*.c transport/*.h; do
	from=$(engine_node "$f")
	sed -nE 's|^[[:space:]]*#[[:space:]]*include[[:space:]]*"(transport/[^"]+)".*|\1|p' "$f" |
		while IFS= read -r h; do
			to=$(engine_node "$h")
			[ "$to" != "$from" ] && echo "$from $to"
		done
done | sort -u)
if ! loop=$(tsort <<<"$inc_edges" 2>&1 >/dev/null) || [ -n "$loop" ]; then
	err "include circle inside transport/ through: $(loop_members "$loop")"
fi
call_edges=$(for o in "${objs[@]}"; do
	nm -g --defined-only "$o" | awk -v n="$(basename "$o" .o)" 'NF == 3 { print "D", n, $3 }'
	nm -u "$o" | awk -v n="$(basename "$o" .o)" '{ print "U", n, $NF }'
done | awk '$1 == "D" { def[$3] = $2; next }
	{ use[NR] = $2 " " $3 }
	END { for (i in use) { split(use[i], u, " ")
		if ((u[2] in def) && def[u[2]] != u[1]) print u[1], def[u[2]] } }' | sort -u)
if ! loop=$(tsort <<<"$call_edges" 2>&1 >/dev/null) || [ -n "$loop" ]; then
	err "call circle between engine objects through: $(loop_members "$loop")"
fi

# And the size markers of issue 31 for transport/: no file over 600 lines,
# no function over 80 (a definition opens with "{" and closes with "}" at
# column 0, the tree's style).
for f in transport/*.c transport/*.h; do
	n=$(wc -l <"$f")
	[ "$n" -gt 600 ] && err "$f has $n lines (transport/ files: 600 at most)"
done
long=$(awk '/^\{/ { start = FNR; name = prev }
	/^\}/ && start { if (FNR - start + 1 > 80) printf "%s:%d %s (%d lines)\n", FILENAME, start, name, FNR - start + 1; start = 0 }
	/^[a-z].*\(/ { prev = $0; sub(/\(.*/, "", prev); sub(/.*[ *]/, "", prev) }' transport/*.c)
if [ -n "$long" ]; then
	while IFS= read -r l; do err "function over 80 lines: $l"; done <<<"$long"
fi

# ---- 2. includes go downward ---------------------------------------------
# rank  folders (a file belongs to the longest folder prefix that matches;
# daemon/core etc. exist once daemon/ is split, until then daemon/ is one
# layer; daemon/'s own top-level files are the mrcd program above them).
LAYERS='
0  include
1  common
2  codec
3  transport topology srv6 datapath
4  auth health
5  daemon/core
6  daemon/clients
7  daemon/oper
8  daemon lib
9  gpu
10 coll nccl fi
11 ctl tools sim examples
12 tests
13 bench fuzz
'
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	files=$(git ls-files -co --exclude-standard -- '*.c' '*.h' |
		while IFS= read -r f; do [ -f "$f" ] && echo "$f"; done)
else
	files=$(find . -path ./build -prune -o -path './.*' -prune -o \
		\( -name '*.c' -o -name '*.h' \) -print | sed 's|^\./||')
fi
# One pass: "file<TAB>#include line" for every include, then awk resolves
# each as the compiler does with -Iinclude -I. (the including file's folder
# first for quotes) against the repository's files; system headers resolve
# to nothing and are skipped.
viol=$( (printf '%s\n' "$files" | sed 's/^/F\t/'
	 printf '%s\n' "$files" | xargs -r grep -sHE '^[[:space:]]*#[[:space:]]*include' |
		sed -E 's/^([^:]+):.*include[[:space:]]*(["<][^">]+[">]).*/I\t\1\t\2/') |
	awk -F'\t' -v layers="$LAYERS" '
	function layer_of(p,   l, best) {
		best = ""
		for (l in rank)
			if (index(p, l "/") == 1 && length(l) > length(best))
				best = l
		return best
	}
	function norm(p,   n, i, parts, out, k) {
		n = split(p, parts, "/")
		k = 0
		for (i = 1; i <= n; i++) {
			if (parts[i] == "." || parts[i] == "") continue
			if (parts[i] == "..") { if (k) k--; continue }
			out[++k] = parts[i]
		}
		p = ""
		for (i = 1; i <= k; i++) p = p (i > 1 ? "/" : "") out[i]
		return p
	}
	BEGIN {
		n = split(layers, ln, "\n")
		for (i = 1; i <= n; i++) {
			m = split(ln[i], w, " ")
			for (j = 2; j <= m; j++) rank[w[j]] = w[1] + 0
		}
	}
	$1 == "F" {
		exists[$2] = 1
		split($2, top, "/")
		if (layer_of($2) == "" && !(top[1] in nolayer)) {
			nolayer[top[1]] = 1
			print $2 ": folder \x27" top[1] "\x27 has no layer: give it a rank in scripts/check-layers.sh"
		}
		next
	}
	$1 == "I" {
		f = $2; q = substr($3, 1, 1); h = substr($3, 2, length($3) - 2)
		fl = layer_of(f)
		if (fl == "")
			next
		dir = f; sub(/\/[^\/]*$/, "", dir)
		if (q == "\"" && (norm(dir "/" h) in exists)) t = norm(dir "/" h)
		else if (("include/" h) in exists) t = "include/" h
		else if (norm(h) in exists) t = norm(h)
		else next
		tl = layer_of(t)
		if (tl == "" || tl == fl) next
		if (rank[tl] > rank[fl])
			printf "%s includes %s: %s (layer %d) may not include from %s (layer %d, above it)\n", f, t, fl, rank[fl], tl, rank[tl]
		else if (rank[tl] == rank[fl])
			printf "%s includes %s: %s and %s are peers (layer %d) and may not include each other\n", f, t, fl, tl, rank[fl]
	}')
if [ -n "$viol" ]; then
	while IFS= read -r v; do err "$v"; done <<<"$viol"
fi
# ---- 4. the wire stays in transport/ ---------------------------------------
# Folders whose files may include transport/wire.h: the codec's own tests,
# benchmarks and fuzzers take it apart on purpose.  Nothing else may: a
# header change must touch transport/ (and the dissector) only.
WIRE_H_OK="tests bench fuzz"
wire_users=$(git ls-files -co --exclude-standard -- '*.c' '*.h' 2>/dev/null |
	grep -v '^transport/' |
	while IFS= read -r f; do
		[ -f "$f" ] || continue
		top=${f%%/*}
		case " $WIRE_H_OK " in *" $top "*) continue;; esac
		grep -lE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"transport/wire\.h"' "$f"
	done)
if [ -n "$wire_users" ]; then
	while IFS= read -r f; do
		err "$f includes transport/wire.h: outside transport/ the wire is the engine's API (engine.h); exceptions: $WIRE_H_OK (scripts/check-layers.sh, rule 4)"
	done <<<"$wire_users"
fi
# ---- 5. the core's private headers stay in the core ---------------------
# Above daemon/core/ the rooms (daemon/clients, daemon/oper) and programs
# (mrc-xfer) see the core through daemon/core/mrcd.h only, its read-only
# views included (issue 31).  core.h (struct mrcd) and node.h are the
# core's own.  The real exceptions: daemon/main.c, the mrcd program that
# owns the core's lifecycle (signals, drain, reload), and the core's unit
# test of its loop order (tests/test_loop_order.c).
CORE_PRIVATE_OK="daemon/main.c tests/test_loop_order.c"
priv=$(printf '%s\n' "$files" | grep -v '^daemon/core/' | xargs -r grep -sHoE \
	'^[[:space:]]*#[[:space:]]*include[[:space:]]*"daemon/core/(core|node)\.h"' |
	sed -E 's|^([^:]+):.*"(daemon/core/[a-z]+\.h)"$|\1 \2|')
while read -r f x; do
	[ -n "$f" ] || continue
	case " $CORE_PRIVATE_OK " in *" $f "*) continue;; esac
	err "$f includes $x, the core's private state: use daemon/core/mrcd.h (its views and calls)"
done <<<"$priv"

# ---- 6. a prefix per layer -------------------------------------------------
# folder  the prefixes its objects' global symbols may start with.  The
# longest prefix matching a symbol names the folder that owns it.  Names an
# ABI fixes are listed whole (fi_prov_ini: libfabric's external providers;
# ncclNetPlugin_v*: NCCL's net plugins; mrc_strerror: libmrc's, built from
# common/ so mrcd shares it).  Programs (ctl, sim, tools, examples, tests,
# bench, fuzz) may define main; tools/, examples/ and the tests are programs
# whose symbols no other folder links, so they are not checked; mrcsim's
# files share sim_ names among themselves (sim/sim_int.h).
PREFIXES='
common    mrc__ mrc_strerror
codec     mrc_oper_ mrc__cli_ mrc__sqe_
transport mrce_ MRCE_
topology  mrc_topo_ mrc__topo_
srv6      mrc_srv6_ mrc__srv6_ mrc_usid_ mrc__usid_ mrc_srh_ mrc_nl_ mrc__nl_ mrc_linkmon_
datapath  mrc_dp_ mrc__dp_
auth      mrc_auth_ mrc__auth_
health    mrc_health_ mrc__health_
daemon    mrcd_
lib       mrc_ mrc__lib_
gpu       mrc_gpu_ mrc__gpu_
coll      mrc_coll_ mrc__coll_
nccl      mrcn_ ncclNetPlugin_v
fi        mrcfi_ fi_prov_ini
ctl       mrc_ctl_
sim       mrc_sim_ sim_
'
# Objects: $B/<src>.o, or the PIC copies under $B/lib/pic/ and $B/gpu/pic/;
# only those whose source still exists (a renamed file leaves a stale one).
nobj=0
prefix_viol=$(find "$B" -name '*.o' -not -path "$B/tests/*" -not -path "$B/fuzz/*" -not -path "$B/bench/*" 2>/dev/null |
	sort | while IFS= read -r o; do
		rel=${o#"$B"/}
		rel=${rel#lib/pic/}
		rel=${rel#gpu/pic/}
		src=${rel%.o}
		[ -f "$src.c" ] || [ -f "$src.cu" ] || continue
		top=${src%%/*}
		grep -qE "^$top " <<<"$PREFIXES" || continue
		nm -g --defined-only "$o" | awk -v f="$src" -v o="$o" 'NF == 3 { print f, o, $3 }'
	done | awk -v table="$PREFIXES" '
	BEGIN {
		n = split(table, ln, "\n")
		for (i = 1; i <= n; i++) {
			m = split(ln[i], w, " ")
			for (j = 2; j <= m; j++) { owner[w[j]] = w[1]; list[w[1]] = list[w[1]] " " w[j] }
		}
	}
	{
		src = $1; sym = $3; top = src; sub(/\/.*/, "", top)
		objs[$2] = 1
		if (sym == "main" || sym ~ /^_/ || sym ~ /\./) next
		best = ""
		for (p in owner)
			if (index(sym, p) == 1 && length(p) > length(best)) best = p
		if (best != "" && owner[best] == top) next
		printf "%s defines %s, %s: %s/ names start with%s (rule 6; the table: scripts/check-layers.sh, docs/design.md)\n", \
			src, sym, best == "" ? "no layer'"'"'s prefix" : "which is " owner[best] "/'"'"'s (" best ")", top, list[top]
	}
	END { nobj = 0; for (o in objs) nobj++; print "#objs " nobj }')
nobj=$(sed -n 's/^#objs //p' <<<"$prefix_viol")
prefix_viol=$(grep -v '^#objs ' <<<"$prefix_viol" || true)
if [ "${nobj:-0}" = 0 ]; then
	err "rule 6 found no library objects in $B: build first (make all)"
fi
if [ -n "$prefix_viol" ]; then
	while IFS= read -r v; do err "$v"; done <<<"$prefix_viol"
fi
# The engine's interface defines MRCE_ constants only (its include guards
# apart): MRC_ is the public ABI's (include/mrc/).
eng_const=$(grep -nE '^#[[:space:]]*define[[:space:]]+MRC_|(^[[:space:]]*|\{[[:space:]]*|,[[:space:]]*)MRC_[A-Z0-9_]+[[:space:]]*(=|,|$|\})' \
	transport/engine.h transport/engine_wire.h | grep -vE 'define[[:space:]]+MRC_TRANSPORT_[A-Z_]+_H$' || true)
if [ -n "$eng_const" ]; then
	while IFS= read -r v; do err "$v: the engine's constants are MRCE_ (rule 6)"; done <<<"$eng_const"
fi

# ---- 7 and 8. names that differ by an underscore or by word order ---------
# Every identifier of the product's C/CUDA files (tests, bench and fuzz
# only use them).
product=$(git ls-files -co --exclude-standard -- '*.c' '*.h' '*.cu' 2>/dev/null |
	grep -vE '^(tests|bench|fuzz)/' | while IFS= read -r f; do [ -f "$f" ] && echo "$f"; done)
ids=$(printf '%s\n' "$product" | xargs -r cat | grep -ohE '\b[A-Za-z_][A-Za-z0-9_]*\b' | sort -u)
pairs=$(awk '
	{ seen[$0] = 1 }
	/^(mrc|mrce|mrcd|mrcn|mrcfi|MRC|MRCE)__[A-Za-z0-9]/ { dunder[$0] = 1 }
	END { for (d in dunder) { s = d; sub(/__/, "_", s); if (s in seen) print d, s } }' <<<"$ids" | sort)
if [ -n "$pairs" ]; then
	while read -r a b; do err "$a and $b differ by one underscore: rename the internal one (rule 7)"; done <<<"$pairs"
fi
anagrams=$(grep -E '^mrce?_[a-z0-9]' <<<"$ids" | awk '
	function key(n,   w, k, i, j, t) {   # the words after the prefix, sorted
		k = split(n, w, "_")
		for (i = 2; i <= k; i++)
			for (j = i + 1; j <= k; j++)
				if (w[j] < w[i]) { t = w[i]; w[i] = w[j]; w[j] = t }
		t = ""
		for (i = 2; i <= k; i++) t = t "_" w[i]
		return t
	}
	/^mrce_/ { e[key($0)] = e[key($0)] " " $0; next }
	{ l[key($0)] = l[key($0)] " " $0 }
	END { for (k in e) if (k in l) print substr(e[k], 2) " /" l[k] }' | sort)
if [ -n "$anagrams" ]; then
	while IFS= read -r v; do err "engine and libmrc names with the same words: $v (rule 8)"; done <<<"$anagrams"
fi

if [ $fail != 0 ]; then
	echo "check-layers: FAILED (see above)" >&2
	exit 1
fi
echo "check-layers: engine links only its allow-list; every include goes downward; transport/ files form a DAG (includes and calls), none over 600 lines, no function over 80; no product file outside transport/ includes wire.h; only the core includes its core.h/node.h; every library object's globals carry its folder's prefix ($nobj objects), the engine's constants MRCE_; no one-underscore pairs, no engine/libmrc near-anagrams"
