#!/usr/bin/env bash
# bench/run.sh: libcables microbenchmarks next to raw UCX, one table per
# transport.  Run by `make bench` (CABLES_BUILD = the absolute build dir).
#
# For each transport (shm, tcp; or those named in BENCH_TRANSPORTS):
#   1. ucx_pingpong under mpirun -n 2: UCX active-message round trip (8 B)
#      and 4 KiB request/reply, busy polling, medians;
#   2. cables_bench under cables-run -n 2: remote read fault, local and
#      remote lock acquire, 2-node barrier;
#   3. cables_bench under cables-run -n 4: 4-node barrier;
#   4. the CableS Table 4 operations: bench/pthreads/table4, a plain pthreads
#      program relinked with cables-cc, under cables-run -n 1 -m 2 with
#      CABLES_THREADS_PER_NODE=1 (its first thread attaches node 1), next to
#      the same program linked natively (run once) and this transport's UCX
#      round trip from step 1.
# The programs print "KEY value" lines, then "DONE n"; the raw output of
# every run is kept in $CABLES_BUILD/bench/logs.  A run that fails or hangs
# is stopped and named in a PROBLEM line under its table.  The exit status
# is 1 if a benchmark gave no results or wrong ones; a run that misbehaved
# only after printing all its results (at exit) is reported but counts as a
# failure only with BENCH_STRICT=1.
# Environment: BENCH_TRANSPORTS (default "shm tcp"), BENCH_TIMEOUT (s per
# run, 60), BENCH_GRACE (s allowed from the last result to the exit, 10).
set -uo pipefail

cd "$(dirname "$0")/.." || exit 2
: "${CABLES_BUILD:=$(pwd)/build}"
RUN=$CABLES_BUILD/bin/cables-run
BENCH=$CABLES_BUILD/bench/cables_bench
PP=$CABLES_BUILD/bench/ucx_pingpong
T4=$CABLES_BUILD/bench/pthreads/table4
T4N=$CABLES_BUILD/native/bench/pthreads/table4
LOGS=$CABLES_BUILD/bench/logs
TIMEOUT=${BENCH_TIMEOUT:-60}   # s, per run
GRACE=${BENCH_GRACE:-10}       # s, from a run's last result to its end
TRANSPORTS=${BENCH_TRANSPORTS:-shm tcp}

die() { echo "bench: $*" >&2; exit 2; }
[ -x "$RUN" ] || die "$RUN missing: run make first"
[ -x "$BENCH" ] || die "$BENCH missing: run make bench"
[ -x "$T4" ] && [ -x "$T4N" ] || die "$T4 or $T4N missing: run make"
command -v mpicc >/dev/null && command -v mpirun >/dev/null || die "mpicc/mpirun missing (scripts/setup.sh)"
mkdir -p "$LOGS" "$(dirname "$PP")"

# The raw baseline must not be linked with libcables (its start-up wrapper
# would run main on rank 0 only), so it is built here, not by the Makefile.
if [ ! -x "$PP" ] || [ bench/raw/ucx_pingpong.c -nt "$PP" ]; then
    mpicc -O2 -Wall bench/raw/ucx_pingpong.c -o "$PP" -lucp -lucs ||
        die "cannot build $PP"
fi

mpi_args=(--oversubscribe --bind-to none -n 2)
[ "$(id -u)" -eq 0 ] && mpi_args+=(--allow-run-as-root)
mpi_args+=(--mca pml ob1 --mca btl self,tcp --mca osc ^ucx)

failed=0     # a benchmark gave no results or wrong ones: exit status 1
declare -a problems   # per transport, printed under its table

# run LOG CMD...: run CMD in its own process group with stdout+stderr in
# LOG.  Each program prints "DONE n" once all its results are out; if the
# run has not ended GRACE s after that (the runtime hung in its shutdown),
# or has not ended within TIMEOUT s at all, its process group is stopped.
run() {
    local log=$1; shift
    local t0=$SECONDS done_at="" why="" rc
    setsid "$@" >"$log" 2>&1 </dev/null &
    local pid=$!
    while kill -0 "$pid" 2>/dev/null; do
        if [ -z "$done_at" ] && grep -q '^DONE' "$log" 2>/dev/null; then done_at=$SECONDS; fi
        if [ -n "$done_at" ] && [ $((SECONDS - done_at)) -ge "$GRACE" ]; then
            why="hung at exit: still running ${GRACE}s after printing all its results"
        elif [ $((SECONDS - t0)) -ge "$TIMEOUT" ]; then
            why="timed out after ${TIMEOUT}s"
        fi
        if [ -n "$why" ]; then
            kill -TERM -- "-$pid" 2>/dev/null
            for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
            kill -KILL -- "-$pid" 2>/dev/null
            break
        fi
        sleep 0.2
    done
    wait "$pid"; rc=$?
    echo "$((SECONDS - t0))" >"$log.secs"
    if [ -z "$why" ] && [ "$rc" -ne 0 ]; then why="exit status $rc"; fi
    if [ -n "$why" ]; then
        local msg="$(basename "$log" .log): $why"
        if grep -q '^DONE 0' "$log"; then
            case "$why" in hung*) ;; *) msg+=" (after all its results were printed)" ;; esac
            [ -n "${BENCH_STRICT:-}" ] && failed=1
        else
            failed=1
        fi
        local detail
        detail=$(grep -E '^ERROR|^cables:|UCX  ERROR|Error|error:' "$log" | grep -v 'no peer failure handler' | head -4)
        [ -n "$detail" ] && msg+=$'\n'"$(sed 's/^/        /' <<<"$detail")"
        problems+=("$msg")
        echo "bench: $msg" >&2
    fi
    return 0
}

# key FILE KEY: the value of "KEY value" in FILE, or empty
key() { awk -v k="$2" '$1 == k { v = $2 } END { if (v != "") print v }' "$1" 2>/dev/null; }

hostname=$(hostname 2>/dev/null || uname -n)
cores=$(nproc 2>/dev/null || echo '?')
ucxver=$(ucx_info -v 2>/dev/null | sed -n 's/^# Version *//p' | head -1)
mpiver=$(mpirun --version 2>/dev/null | head -1)
start=$SECONDS

# Table 4, native pthreads: once, the same for every transport
T4NL=$LOGS/table4.native.log
echo "bench: table4, native pthreads ..." >&2
problems=()
run "$T4NL" "$T4N"
native_problems=("${problems[@]}")

for tr in $TRANSPORTS; do
    case "$tr" in
        shm) tls=self,sm ;;
        tcp) tls=tcp ;;
        *) die "unknown transport '$tr' (shm or tcp)" ;;
    esac
    P=$LOGS/ucx_pingpong.$tr.log
    B2=$LOGS/cables_bench.$tr.n2.log
    B4=$LOGS/cables_bench.$tr.n4.log
    echo "bench: $tr: UCX baseline ..." >&2
    problems=("${native_problems[@]}")
    native_problems=()
    UCX_TLS=$tls run "$P" mpirun "${mpi_args[@]}" -x UCX_TLS "$PP"
    echo "bench: $tr: cables_bench -n 2 ..." >&2
    # one page per fault, none brought ahead (no page groups, no strided
    # prefetch, no copies refreshed at an acquire): the table is the cost
    # of one fault, not of what spares most of them (make bench-splash
    # shows those)
    CABLES_PAGE_GROUP=1 CABLES_FETCH_RUNS=1 CABLES_REFRESH=0 run "$B2" "$RUN" -n 2 -t "$tr" -- "$BENCH" fault lock barrier
    echo "bench: $tr: cables_bench -n 4 ..." >&2
    run "$B4" "$RUN" -n 4 -t "$tr" -- "$BENCH" barrier
    T4L=$LOGS/table4.$tr.log
    echo "bench: $tr: table4 (pthreads, relinked) -n 1 -m 2 ..." >&2
    CABLES_THREADS_PER_NODE=1 run "$T4L" "$RUN" -n 1 -m 2 -t "$tr" --stats -- "$T4"

    rtt=$(key "$P" UCX_RTT_US); k4=$(key "$P" UCX_4K_US)
    wrtt=$(key "$P" UCX_WAIT_RTT_US); wk4=$(key "$P" UCX_WAIT_4K_US)
    echo
    echo "=== libcables vs raw UCX -- transport: $tr (UCX_TLS=$tls) ==="
    echo "    $(date '+%Y-%m-%d %H:%M:%S %Z'), host $hostname, $cores cores," \
         "load $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)"
    echo "    UCX ${ucxver:-?}; ${mpiver:-MPI ?}; medians, times in microseconds"
    echo "    UCX baselines: 'polling' spins on the worker; 'sleeping' waits in ucp_worker_wait"
    echo "    when idle, as libcables must on 2 cores (its communication thread sleeps)"
    echo
    {
        printf 'operation|baseline|cables|UCX polling|ratio|UCX sleeping|ratio\n'
        printf 'remote read fault, cold|4 KiB req/reply|%s|%s|%s\n' "$(key "$B2" FAULT_US)" "$k4" "$wk4"
        printf 'remote read fault, refetch|4 KiB req/reply|%s|%s|%s\n' "$(key "$B2" FAULT_WARM_US)" "$k4" "$wk4"
        printf 'remote lock acquire|round trip|%s|%s|%s\n' "$(key "$B2" LOCK_REMOTE_US)" "$rtt" "$wrtt"
        printf 'local lock acquire+release|round trip|%s|%s|%s\n' "$(key "$B2" LOCK_LOCAL_US)" "$rtt" "$wrtt"
        printf 'barrier, 2 nodes|round trip|%s|%s|%s\n' "$(key "$B2" BARRIER2_US)" "$rtt" "$wrtt"
        printf 'barrier, 4 nodes|round trip|%s|%s|%s\n' "$(key "$B4" BARRIER4_US)" "$rtt" "$wrtt"
    } | awk -F'|' '
        function num(v) { return v == "" ? "FAILED" : sprintf("%.2f", v) }
        function ratio(a, b,   q) {
            if (a == "" || b == "" || b + 0 == 0) return "-"
            q = a / b; return sprintf(q < 0.1 ? "%.3fx" : q < 10 ? "%.2fx" : "%.1fx", q) }
        NR == 1 { printf "%-27s %-16s %10s %12s %8s %13s %8s\n", $1, $2, $3 " (us)", $4, $5, $6, $7
                  printf "%-27s %-16s %10s %12s %8s %13s %8s\n", "---------------------------",
                         "----------------", "----------", "------------", "--------",
                         "-------------", "--------"; next }
        { printf "%-27s %-16s %10s %12s %8s %13s %8s\n", $1, $2, num($3), num($4), ratio($3, $4),
                 num($5), ratio($3, $5) }'
    echo
    printf '    UCX raw (busy polling, %s/%s exchanges): round trip 8 B %s us (p10 %s, p90 %s); 4 KiB request/reply %s us (p10 %s, p90 %s)\n' \
        "$(key "$P" UCX_RTT_N)" "$(key "$P" UCX_4K_N)" "${rtt:-?}" "$(key "$P" UCX_RTT_P10_US)" \
        "$(key "$P" UCX_RTT_P90_US)" "${k4:-?}" "$(key "$P" UCX_4K_P10_US)" "$(key "$P" UCX_4K_P90_US)"
    printf '    UCX raw, both sides sleeping in ucp_worker_wait when idle: %s exchanges\n' \
        "$(key "$P" UCX_WAIT_N)"
    printf '    read fault: %s faults, %s pages fetched, p10 %s p90 %s us, mean fetch (message part) %s us\n' \
        "$(key "$B2" FAULT_COUNT)" "$(key "$B2" FAULT_FETCHED)" "$(key "$B2" FAULT_P10_US)" \
        "$(key "$B2" FAULT_P90_US)" "$(key "$B2" FAULT_FETCH_MEAN_US)"
    printf '    remote lock: %s remote acquires, p10 %s p90 %s us; median by acquirer: node 0 %s, node 1 %s us\n' \
        "$(key "$B2" LOCK_REMOTE_COUNT)" "$(key "$B2" LOCK_REMOTE_P10_US)" "$(key "$B2" LOCK_REMOTE_P90_US)" \
        "$(key "$B2" LOCK_REMOTE_NODE0_US)" "$(key "$B2" LOCK_REMOTE_NODE1_US)"
    printf '    barrier p90 of round means: 2 nodes %s us, 4 nodes %s us (4 node processes on %s cores)\n' \
        "$(key "$B2" BARRIER2_P90_US)" "$(key "$B4" BARRIER4_P90_US)" "$cores"
    printf '    wall time: UCX %ss, cables -n 2 %ss, cables -n 4 %ss; logs in %s\n' \
        "$(cat "$P.secs")" "$(cat "$B2.secs")" "$(cat "$B4.secs")" "$LOGS"

    echo
    echo "=== CableS Table 4 -- transport: $tr; a pthreads program relinked, 2 nodes (node 1 attached on demand) ==="
    echo "    medians in microseconds; native = the same program linked with glibc's pthreads (one process);"
    echo "    ratios to this transport's UCX round trip (8 B, above): polling and sleeping"
    echo
    {
        printf 'operation|cables|native|UCX polling|ratio|UCX sleeping|ratio\n'
        t4row() { printf '%s|%s|%s|%s|%s\n' "$1" "$(key "$T4L" "$2")" "$3" "$rtt" "$wrtt"; }
        t4row 'node attach' NODE_ATTACH_US '-'
        t4row 'first create (attach+remote)' ATTACH_CREATE_US "$(key "$T4NL" ATTACH_CREATE_US)"
        t4row 'thread create, local' CREATE_LOCAL_US "$(key "$T4NL" CREATE_LOCAL_US)"
        t4row 'thread create, remote' CREATE_REMOTE_US "$(key "$T4NL" CREATE_REMOTE_US)"
        t4row 'mutex lock first, local' LOCK_FIRST_LOCAL_US "$(key "$T4NL" LOCK_FIRST_LOCAL_US)"
        t4row 'mutex lock first, remote' LOCK_FIRST_REMOTE_US "$(key "$T4NL" LOCK_FIRST_REMOTE_US)"
        t4row 'mutex lock after, local' LOCK_AGAIN_LOCAL_US "$(key "$T4NL" LOCK_AGAIN_LOCAL_US)"
        t4row 'mutex lock after, remote' LOCK_AGAIN_REMOTE_US "$(key "$T4NL" LOCK_AGAIN_REMOTE_US)"
        t4row 'mutex unlock' UNLOCK_US "$(key "$T4NL" UNLOCK_US)"
        t4row 'cond signal (call)' COND_SIGNAL_US "$(key "$T4NL" COND_SIGNAL_US)"
        t4row 'cond wait, woken by signal' COND_WAKE_US "$(key "$T4NL" COND_WAKE_US)"
        t4row 'cond broadcast (call)' COND_BCAST_US "$(key "$T4NL" COND_BCAST_US)"
        t4row 'cond wait, woken by bcast' COND_BCAST_WAKE_US "$(key "$T4NL" COND_BCAST_WAKE_US)"
        t4row 'cond ping-pong, one way' COND_PINGPONG_US "$(key "$T4NL" COND_PINGPONG_US)"
        t4row 'barrier, 2 threads 2 nodes' BARRIER2_US "$(key "$T4NL" BARRIER2_US)"
    } | awk -F'|' '
        function num(v) { return v == "" ? "FAILED" : v == "-" ? "-" : sprintf("%.2f", v) }
        function ratio(a, b,   q) {
            if (a == "" || b == "" || b + 0 == 0) return "-"
            q = a / b; return sprintf(q < 0.1 ? "%.3fx" : q < 10 ? "%.2fx" : q < 1e4 ? "%.1fx" : "%.0fx", q) }
        NR == 1 { printf "%-29s %11s %12s %12s %9s %13s %9s\n", $1, $2 " (us)", $3 " (us)", $4, $5, $6, $7
                  printf "%-29s %11s %12s %12s %9s %13s %9s\n", "-----------------------------",
                         "-----------", "------------", "------------", "---------",
                         "-------------", "---------"; next }
        { printf "%-29s %11s %12s %12s %9s %13s %9s\n", $1, num($2), num($3), num($4), ratio($2, $4),
                 num($5), ratio($2, $5) }'
    echo
    printf '    placement seen: %s; %s\n' "$(grep '^NODE main' "$T4L" | head -1 | cut -d' ' -f2-)" \
        "$(grep '^NODE creates' "$T4L" | head -1 | cut -d' ' -f2-)"
    printf '    master: %s\n' "$(grep -o 'nodes attached=.*' "$T4L" | head -1)"
    printf '    wall time: table4 %ss (native %ss); logs %s, %s\n' \
        "$(cat "$T4L.secs")" "$(cat "$T4NL.secs")" "$T4L" "$T4NL"
    for m in "${problems[@]}"; do echo "    PROBLEM: $m"; done
done
echo
echo "bench: done in $((SECONDS - start))s$([ $failed -ne 0 ] && echo ', WITH FAILURES (see PROBLEM lines)')"
exit $failed
