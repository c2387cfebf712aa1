# Helpers of the libfabric clients on the emulated fabric, shared by
# tests/root/libfabric.sh and bench/fabric/libfabric.sh; sourced by bash,
# not run.  The caller sets B (build dir), P (namespace prefix of a fabric
# brought up with `mrc-fabric up ... --ecmp`), tmp (its scratch dir; host
# H's mrcd client socket is $tmp/H/mrcd.sock, as tests/root/lib.sh's
# start_mrcd makes it) and FT (fabtests' bin dir).  docs/libfabric-tests.md.
#
# Addresses.  libfabric's tcp provider lists every address of every
# interface and its users (fabtests, Open MPI's ofi mtl) take the first:
# on the IPv6-only fabric that is a link-local address, useless between
# hosts.  fi_ipv4_up gives the fabric an IPv4 twin of its --ecmp baseline
# (host H is 10.PLANE.0.H on its plane NIC; leaves hash flows over their
# spines on L4), routed over the fabric's IPv6 link-local next hops (RFC
# 5549: no ARP, the fabric's neighbour discovery), so that socket
# providers find a routable IPv4 address first (libfabric sorts AF_INET
# before AF_INET6), out-of-band exchanges (fabtests -E, fi_pingpong's
# control socket, mpirun's OOB) have IPv4 wildcards that work, and a
# single-path provider's traffic can be pinned to plane 1 (FI_TCP_IFACE),
# where the faults of the tests land.  The mrc provider does not use it:
# mrcd carries its bytes on SRv6 over both planes.

FI_PROV=${MRC_FI_PROV:-mrc}
FI_OOB_PLANE=0    # out-of-band sockets (fabtests -E, mpirun's OOB)
FI_DATA_PLANE=1   # a socket provider's plane (FI_TCP_IFACE)

# fi_is_mrc PROV: the provider under test is mrc's own.
fi_is_mrc() { [ "$1" = mrc ]; }

# fi_prov_why PROV: prints why PROV cannot run here; nothing when it can.
fi_prov_why() {
	command -v fi_info >/dev/null || { echo "fi_info missing (libfabric-bin: scripts/deps.sh)"; return; }
	if fi_is_mrc "$1"; then
		[ -f "$B/lib/libmrc-fi.so" ] ||
			{ echo "the mrc provider is not built ($B/lib/libmrc-fi.so missing)"; return; }
		FI_PROVIDER_PATH=$(cd "$B/lib" && pwd) fi_info -p mrc -l 2>/dev/null | grep -q '^mrc:' ||
			echo "fi_info -p mrc does not list the provider ($B/lib/libmrc-fi.so present, FI_PROVIDER_PATH=$B/lib)"
		return
	fi
	fi_info -p "$1" -t FI_EP_RDM >/dev/null 2>&1 || echo "fi_info -p '$1' -t FI_EP_RDM lists nothing"
}

# fi_links NS: the names of namespace NS's links besides lo.
fi_links() { ip -n "$1" -o link show 2>/dev/null | awk -F': ' '$2 != "lo" {sub(/@.*/, "", $2); print $2}'; }
# fi_nic H PLANE: host H's (hN) NIC in PLANE (named after its leaf, pPLANElY).
fi_nic() { fi_links "$P-$1" | grep "^p$2l" | head -n 1; }
# fi_addr4 H PLANE: host H's IPv4 address in PLANE.
fi_addr4() { echo "10.$2.0.${1#h}"; }

# fi_ipv4_up: the IPv4 twin of the --ecmp baseline (see the top).  Safe to
# run again: after `mrc-fabric restore` (a port that went down lost its
# routes, and restore re-adds only the IPv6 ones) it puts them back.
fi_ipv4_up() {
	local ns n l h pl y b
	local -A leaf_hosts=()   # "pX lY" -> host numbers behind that leaf
	for ns in $(ip netns list | awk '{print $1}' | grep "^$P-"); do
		n=${ns#"$P-"}
		case $n in h[0-9]*) ;; *) continue ;; esac
		h=${n#h}
		b="$tmp/ipv4.$n"; : >"$b"
		for l in $(fi_links "$ns"); do
			pl=${l#p}; pl=${pl%%l*}
			leaf_hosts["p${pl}l${l##*l}"]+=" $h"
			echo "address replace 10.$pl.0.$h/32 dev $l" >>"$b"
			echo "route replace 10.$pl.0.0/16 via inet6 fe80::2 dev $l" >>"$b"
		done
		ip -n "$ns" -b "$b" || return 1
	done
	for ns in $(ip netns list | awk '{print $1}' | grep "^$P-p"); do
		n=${ns#"$P-"}
		b="$tmp/ipv4.$n"; : >"$b"
		case $n in
		p*l*)   # leaf: its hosts, and the rest of its plane over every spine
			local hops=""
			for l in $(fi_links "$ns"); do
				case $l in
				h*) echo "route replace 10.${n:1:1}.0.${l#h}/32 via inet6 fe80::1 dev $l" >>"$b" ;;
				p*s*) hops="$hops nexthop via inet6 fe80::2 dev $l" ;;
				esac
			done
			pl=${n#p}; pl=${pl%%l*}
			[ -z "$hops" ] || echo "route replace 10.$pl.0.0/16$hops" >>"$b"
			;;
		p*s*)   # spine: every host behind each leaf it reaches
			for l in $(fi_links "$ns"); do
				pl=${l#p}; pl=${pl%%l*}
				for h in ${leaf_hosts[$l]:-}; do
					echo "route replace 10.$pl.0.$h/32 via inet6 fe80::1 dev $l" >>"$b"
				done
			done
			;;
		*) continue ;;
		esac
		ip netns exec "$ns" sysctl -qw net.ipv4.ip_forward=1 net.ipv4.fib_multipath_hash_policy=1 \
			net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0 >/dev/null || return 1
		[ ! -s "$b" ] || ip -n "$ns" -b "$b" || return 1
	done
}

# fi_env_write H: the environment of the libfabric processes on host H,
# as a file of exports ($tmp/fienv.H) that fi_on and the MPI rank wrapper
# read: mrcd's client socket (MRC_SOCKET, libmrc's), the provider path
# for mrc, the plane NIC for a socket provider.
fi_env_write() {
	local h=$1 f="$tmp/fienv.$1"
	{
		echo "export MRC_SOCKET='$tmp/$h/mrcd.sock'"
		if fi_is_mrc "$FI_PROV"; then
			echo "export FI_PROVIDER_PATH='$(cd "$B/lib" && pwd)'"
		else
			echo "export FI_TCP_IFACE='$(fi_nic "$h" $FI_DATA_PLANE)'"
		fi
	} >"$f"
	# The rank wrapper of mpirun: the namespace says which host it runs on.
	cat >"$tmp/fienv.sh" <<EOF
#!/bin/sh
h=\$(ip netns identify \$\$); h=\${h#$P-}
. '$tmp/fienv.'\$h
exec "\$@"
EOF
	chmod +x "$tmp/fienv.sh"
}

# fi_on H CMD...: runs CMD in host H's namespace with its environment.
fi_on() { local h=$1; shift; ip netns exec "$P-$h" "$tmp/fienv.sh" "$@"; }

# fi_node H: the node that the provider's fi_getinfo and fi_av_insertsvc
# take for host H (@SRC@ and @DST@ of tests/root/libfabric.tests): the
# data-plane IPv4 address for a socket provider; for mrc the host's index
# in mrcd's topology (its endpoint names are (host index, service id)),
# read from mrcd when tests/root/lib.sh's idx is at hand, else the number
# of the generated name hN.  MRC_FI_NODE=ip gives mrc the IPv4 address
# too, MRC_FI_NODE=name the host's name.
fi_node() {
	if ! fi_is_mrc "$FI_PROV" || [ "${MRC_FI_NODE:-index}" = ip ]; then
		fi_addr4 "$1" $FI_DATA_PLANE
	elif [ "${MRC_FI_NODE:-index}" = name ]; then
		echo "$1"
	elif declare -F idx >/dev/null && [ -S "$tmp/h0/mrcctl.sock" ] && [ -n "$(idx "$1" 2>/dev/null)" ]; then
		idx "$1"
	else
		echo "${1#h}"
	fi
}

# fi_listening H PORT: host H has a TCP socket listening on PORT.
fi_listening() { [ -n "$(ip netns exec "$P-$1" ss -Hltn "sport = :$2" 2>/dev/null)" ]; }

# fi_cs OUT SECONDS SRV CLI PORT CMD...: a fabtests (or fi_pingpong) pair:
# server CMD on host SRV, then, once it listens on its out-of-band PORT (or
# has exited), client CMD SRV's plane-0 IPv4 address on host CLI; each
# bounded by SECONDS.  Outputs: OUT.srv, OUT.cli.  Sets FI_SRC and FI_CRC
# (exit statuses, 124: timed out) and returns 0 when both are 0.
fi_cs() {
	local out=$1 t=$2 srv=$3 cli=$4 port=$5 sp; shift 5
	fi_on "$srv" timeout -k 2 "$t" "$@" >"$out.srv" 2>&1 &
	sp=$!
	FI_SRC=0; FI_CRC=0
	if ! until_t 15 eval "fi_listening $srv $port || ! kill -0 $sp 2>/dev/null"; then
		echo "server not listening on $port after 15 s" >>"$out.srv"
	fi
	if kill -0 $sp 2>/dev/null; then
		fi_on "$cli" timeout -k 2 "$t" "$@" "$(fi_addr4 "$srv" $FI_OOB_PLANE)" >"$out.cli" 2>&1 || FI_CRC=$?
	else
		echo "(not started: the server exited first)" >"$out.cli"; FI_CRC=-1
	fi
	wait $sp || FI_SRC=$?
	[ $FI_SRC = 0 ] && [ $FI_CRC = 0 ]
}

# fi_verdict RC...: pass, n/a or fail for the exit statuses of one test
# (fabtests exit with the positive errno: FI_ENODATA 61, FI_ENOSYS 38 mean
# that the provider offers nothing fitting the test's hints: runfabtests'
# "Notrun").  Prints "pass", "na CODE" or "fail WHY".
fi_verdict() {
	local r why="" na=""
	for r in "$@"; do
		case $r in
		0) ;;
		61) na="FI_ENODATA" ;;
		38) na="FI_ENOSYS" ;;
		124|137) why="${why:+$why, }timed out" ;;
		-1) ;;
		*) why="${why:+$why, }exit $r" ;;
		esac
	done
	if [ -n "$why" ]; then echo "fail $why"
	elif [ -n "$na" ]; then echo "na $na"
	else echo pass
	fi
}

# fi_mpi_reap: ends every session that bench/fabric/mpi_agent.sh started
# (orted and its ranks) in this fabric's namespaces.
. "$(dirname "${BASH_SOURCE[0]}")/../../bench/fabric/mpi_reap.sh"
fi_mpi_reap() { mpi_reap_sids "$tmp/mpi.sids" "$P"; }

# fi_mpirun OUT SECONDS TRANSPORT HOSTS PPN PROG ARGS...: mpirun in the
# first host's namespace, PPN ranks on each of HOSTS ("h0 h2 ..."), their
# orteds started through bench/fabric/mpi_agent.sh (ip netns exec instead
# of ssh), each rank through the host's environment (fi_env_write).
# TRANSPORT: ofi (pml cm, mtl ofi, the provider $FI_PROV) or tcp (pml ob1,
# the TCP BTL over both planes).  mpirun's OOB is pinned to plane 0's IPv4
# (the faults land on plane 1).  stdout+stderr to OUT; returns mpirun's
# status (124: killed after SECONDS).
fi_mpirun() {
	local out=$1 t=$2 tr=$3 hosts=$4 ppn=$5 h rc=0; shift 5
	local first=${hosts%% *}
	local agent; agent="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/bench/fabric/mpi_agent.sh"
	: >"$tmp/mpi.hosts"
	for h in $hosts; do echo "$h slots=$ppn" >>"$tmp/mpi.hosts"; done
	mkdir -p "$tmp/ompi"
	local -a sel
	if [ "$tr" = ofi ]; then
		sel=(--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include "$FI_PROV")
	else
		sel=(--mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_exclude lo)
	fi
	MRC_MPI_PREFIX=$P MRC_MPI_SIDS="$tmp/mpi.sids" MRC_MPI_TMP="$tmp/ompi" TMPDIR="$tmp/ompi" \
	OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
	timeout -k 5 "$t" ip netns exec "$P-$first" \
		mpirun --allow-run-as-root -np $(( $(echo $hosts | wc -w) * ppn )) --hostfile "$tmp/mpi.hosts" \
		--map-by node --bind-to none --mca plm_rsh_agent "$agent" --mca plm_rsh_no_tree_spawn 1 \
		--mca orte_leave_session_attached 1 --mca mpi_yield_when_idle 1 \
		--mca oob_tcp_if_include "10.$FI_OOB_PLANE.0.0/16" "${sel[@]}" \
		"$tmp/fienv.sh" "$@" >"$out" 2>&1 || rc=$?
	fi_mpi_reap
	return $rc
}

# fi_nft_drops NS: packets the fault tables of namespace NS dropped
# (mrc-fabric's `fail --silent` and `drop` rules count them).
fi_nft_drops() {
	ip netns exec "$P-$1" nft -j list table netdev mrcfab 2>/dev/null |
		jq '[.nftables[] | .rule? // empty | .expr[] | .counter? // empty | .packets] | add // 0' 2>/dev/null ||
		echo 0
}
# fi_nic_bytes H NIC: tx+rx bytes of host H's NIC.
fi_nic_bytes() {
	ip netns exec "$P-$1" sh -c "echo \$((\$(cat /sys/class/net/$2/statistics/tx_bytes) + \$(cat /sys/class/net/$2/statistics/rx_bytes)))" 2>/dev/null || echo 0
}
