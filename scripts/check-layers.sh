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
4  auth
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

if [ $fail != 0 ]; then
	echo "check-layers: FAILED (see above)" >&2
	exit 1
fi
echo "check-layers: engine links only its allow-list; every include goes downward; transport/ files form a DAG (includes and calls), none over 600 lines, no function over 80; no product file outside transport/ includes wire.h; only the core includes its core.h/node.h"
