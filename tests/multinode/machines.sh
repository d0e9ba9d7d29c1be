#!/usr/bin/env bash
# Stand-in machines for the multi-node tests: node processes of one host in
# network namespaces of their own, each with one Ethernet link to a bridge
# of the host (DESIGN.md: "everything must still work with UCX_TLS=tcp and
# nodes in separate network namespaces").  Needs root and iproute2.
#   machines.sh up NAME N      namespaces NAME0..NAME(N-1) on a bridge NAMEb;
#                              prints the subnet (for PMIx: see below)
#   machines.sh down NAME N    removes them (and whatever of them is left)
#   machines.sh exec NAME PROGRAM [ARGS...]
#                              as a program for cables-run: the node of rank
#                              K (OMPI_COMM_WORLD_RANK) runs in NAMEK; with
#                              MACHINES_DISK=DIR, each node has a disk of its
#                              own there (a tmpfs over DIR in its own mount
#                              namespace, of 64+K MiB: statfs tells them
#                              apart), as machines have
# The node processes reach mpirun's PMIx server through the bridge, so it
# must listen there: PMIX_MCA_ptl_tcp_remote_connections=1 and
# PMIX_MCA_ptl_tcp_if_include=SUBNET in cables-run's environment.  Nodes
# attached later are spawned by mpirun itself, in the host's namespace.
set -euo pipefail
die() { echo "machines.sh: $*" >&2; exit 2; }
[ $# -ge 2 ] || die "usage: machines.sh up|down NAME N, or exec NAME PROGRAM [ARGS...]"
cmd=$1 name=$2; shift 2
[[ "$name" =~ ^[a-z][a-z0-9]{0,9}$ ]] || die "NAME '$name': a lowercase letter, then up to 9 letters or digits"
case "$cmd" in
    exec)
        [ $# -ge 1 ] || die "exec needs a program"
        # (ip netns exec runs it in a mount namespace of its own already)
        exec ip netns exec "$name${OMPI_COMM_WORLD_RANK:-0}" sh -c \
            '[ -z "${MACHINES_DISK:-}" ] || mount -t tmpfs -o "size=$((64 + ${OMPI_COMM_WORLD_RANK:-0}))m" machine "$MACHINES_DISK" || exit 2
             exec "$@"' machines.sh "$@" ;;
    up|down)
        [ $# -eq 1 ] && [[ "$1" =~ ^[0-9]+$ ]] && [ "$1" -ge 1 ] && [ "$1" -le 64 ] ||
            die "$cmd needs a number of namespaces from 1 to 64" ;;
    *) die "unknown command '$cmd'" ;;
esac
n=$1
if [ "$cmd" = down ]; then
    for ((k = 0; k < n; k++)); do
        ip netns del "$name$k" 2>/dev/null || true
        ip link del "${name}v$k" 2>/dev/null || true
    done
    ip link del "${name}b" 2>/dev/null || true
    exit 0
fi
command -v ip >/dev/null || die "ip (iproute2) is not installed: run scripts/setup.sh"
[ ! -e "/run/netns/${name}0" ] || die "namespaces $name* exist already: machines.sh down $name N first"
# a /24 of 10.0.0.0/8 that the host does not use (its routes), from the name
routes=$(ip -4 route show)
h=$(( $(printf '%s' "$name" | cksum | cut -d' ' -f1) % 250 + 2 ))
for ((i = 0; i < 250; i++)); do
    net=10.$h.$(( (h + i) % 250 + 2 ))
    case "$routes" in *"$net."*) ;; *) break ;; esac
done
case "$routes" in *"$net."*) die "no free subnet 10.$h.*.0/24 here; try another NAME" ;; esac
trap '"$0" down "$name" "$n" >/dev/null 2>&1' ERR
ip link add "${name}b" type bridge
ip addr add "$net.1/24" dev "${name}b"
ip link set "${name}b" up
for ((k = 0; k < n; k++)); do
    ip netns add "$name$k"
    ip link add "${name}v$k" type veth peer name eth0 netns "$name$k"
    ip link set "${name}v$k" master "${name}b" up
    ip -n "$name$k" addr add "$net.$((k + 10))/24" dev eth0
    ip -n "$name$k" link set eth0 up
    ip -n "$name$k" link set lo up
    # the host's other addresses (where nodes attached later listen too)
    # through the bridge, as a LAN's machines reach each other
    ip -n "$name$k" route add default via "$net.1"
done
echo "$net.0/24"
