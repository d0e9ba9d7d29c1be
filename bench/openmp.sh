#!/usr/bin/env bash
# bench/openmp.sh: OpenMP programs built with cables-cc -fopenmp (build/...)
# next to the same source built with cc -fopenmp and GCC's libgomp
# (build/native/...).  Run by `make bench-openmp` (CABLES_BUILD = the
# absolute build dir).
#
# Two threads each time: natively, on libcables at 1 node (both threads on
# it) and at 2 nodes (one thread a node).
#   (a) bench/openmp/syncbench: microseconds per construct (EPCC's way: the
#       construct in a loop, its body's delay subtracted), median of
#       BENCH_REPS runs; the ratios say what a construct costs once its
#       threads are on two nodes.
#   (b) apps/openmp/jacobi: a stencil's sweeps (its own timing of them),
#       median of BENCH_REPS runs (default 3), interleaved; the cables
#       RESULT must equal the native one.
# A FAIL line says which run failed; the exit status is then 1.
# Environment: BENCH_REPS (3), BENCH_TRANSPORT (shm), BENCH_JACOBI ("1024
# 200": N and sweeps), BENCH_SYNC_REPS (200).
set -uo pipefail

cd "$(dirname "$0")/.." || exit 2
: "${CABLES_BUILD:=$(pwd)/build}"
RUN=$CABLES_BUILD/bin/cables-run
REPS=${BENCH_REPS:-3}
TRANSPORT=${BENCH_TRANSPORT:-shm}
read -r -a JAC <<< "${BENCH_JACOBI:-1024 200}"
SYNC_REPS=${BENCH_SYNC_REPS:-200}
export OMP_NUM_THREADS=2
status=0
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

# run KIND PROGRAM ARGS...: native, n1 or n2; output in $logs/out
run() {
    local kind=$1; shift
    case $kind in
        native) timeout 300 "$CABLES_BUILD/native/$1" "${@:2}" ;;
        n1) timeout 300 "$RUN" -n 1 -t "$TRANSPORT" -- "$CABLES_BUILD/$1" "${@:2}" ;;
        n2) timeout 300 "$RUN" -n 2 -t "$TRANSPORT" -- "$CABLES_BUILD/$1" "${@:2}" ;;
    esac > "$logs/out" 2>&1
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR ? v[int((NR + 1) / 2)] : "nan") }'; }

echo "load: $(cut -d' ' -f1-3 /proc/loadavg); transport $TRANSPORT; 2 threads"
echo
echo "(a) syncbench $SYNC_REPS: microseconds per construct, median of $REPS runs"
for ((r = 1; r <= REPS; r++)); do
    for kind in native n1 n2; do
        if ! run "$kind" bench/openmp/syncbench "$SYNC_REPS" || ! grep -q "RESULT ok=1" "$logs/out"; then
            echo "FAIL syncbench $kind run $r"; cat "$logs/out"; status=1
        fi
        grep '^construct ' "$logs/out" | awk '{ sub("us=", "", $3); print $2, $3 }' >> "$logs/all.$kind"
    done
done
for kind in native n1 n2; do
    for c in $(awk '{ print $1 }' "$logs/all.$kind" | awk '!seen[$0]++'); do
        echo "$c $(awk -v c="$c" '$1 == c { print $2 }' "$logs/all.$kind" | median)"
    done | sort > "$logs/sync.$kind"
done
printf '%-10s %10s %10s %8s %10s %8s\n' construct native "1 node" ratio "2 nodes" ratio
join "$logs/sync.native" "$logs/sync.n1" | join - "$logs/sync.n2" |
    awk '{ r1 = $2 > 0 ? $3 / $2 : 0; r2 = $2 > 0 ? $4 / $2 : 0
           printf "%-10s %10.2f %10.2f %7.1fx %10.2f %7.1fx\n", $1, $2, $3, r1, $4, r2 }'

echo
echo "(b) jacobi ${JAC[*]}: seconds of sweeps, median of $REPS"
want=
for ((r = 1; r <= REPS; r++)); do
    for kind in native n1 n2; do
        if ! run "$kind" apps/openmp/jacobi "${JAC[@]}"; then
            echo "FAIL jacobi $kind run $r"; cat "$logs/out"; status=1; continue
        fi
        res=$(grep '^RESULT' "$logs/out")
        [ "$kind" = native ] && want=$res
        if [ "$res" != "$want" ] || [[ "$res" != *"ok=1"* ]]; then
            echo "FAIL jacobi $kind run $r: '$res' (native: '$want')"; status=1
        fi
        sed -n 's/^jacobi: .* in \([0-9.]*\) s$/\1/p' "$logs/out" >> "$logs/jac.$kind"
    done
done
nat=$(median < "$logs/jac.native"); n1=$(median < "$logs/jac.n1"); n2=$(median < "$logs/jac.n2")
printf '%-10s %10s %10s %8s %10s %8s\n' program native "1 node" ratio "2 nodes" ratio
awk -v a="$nat" -v b="$n1" -v c="$n2" 'BEGIN { printf "%-10s %10.3f %10.3f %7.2fx %10.3f %7.2fx\n",
    "jacobi", a, b, b / a, c, c / a }'
echo
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
exit $status
