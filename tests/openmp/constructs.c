/* constructs: an unmodified OpenMP C program, compiled with `cables-cc
 * -fopenmp` (and natively with `cc -fopenmp` and libgomp), checking what
 * each construct promises: the team and its ids, worksharing loops under
 * every schedule (each iteration once, ordered in order), reductions,
 * critical, atomic (update, capture, read, write), single (copyprivate),
 * master, barrier (a phase's writes seen by every thread after it),
 * sections, locks (simple and nested), tasks (taskwait, taskgroup, depend),
 * threadprivate with copyin, nested regions, omp_get_wtime.
 * Threads of a team run on several nodes under cables-run: every result
 * goes through the runtime's shared memory.  The team has
 * OMP_NUM_THREADS threads (4 unless set).
 * RESULT ok=1 checks=N (check.h) */
#include <omp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../posix/check.h"

#define N 10000
#define T_MAX 64

static int hits[N];
static long order_log[N];
static int order_len;
static int tp_value;
#pragma omp threadprivate(tp_value)

static long fib(int n)
{
    long a, b;
    if (n < 2)
        return n;
#pragma omp task shared(a) firstprivate(n)
    a = fib(n - 1);
#pragma omp task shared(b) firstprivate(n)
    b = fib(n - 2);
#pragma omp taskwait
    return a + b;
}

static int all_hit_once(void)
{
    for (int i = 0; i < N; i++)
        if (hits[i] != 1)
            return 0;
    return 1;
}

/* each iteration of a loop under schedule s marks hits[i] */
static void loop_with(omp_sched_t kind, int chunk, const char *name)
{
    memset(hits, 0, sizeof hits);
    omp_set_schedule(kind, chunk);
    int threads_seen = 0;
#pragma omp parallel reduction(+ : threads_seen)
    {
        threads_seen = 1;
#pragma omp for schedule(runtime)
        for (int i = 0; i < N; i++)
            hits[i]++;
    }
    CHECK(name, all_hit_once());
    CHECK_EQ("loop_team", threads_seen, omp_get_max_threads());
}

int main(void)
{
    check_start();
    int want = 4;
    const char *env = getenv("OMP_NUM_THREADS");
    if (env)
        want = atoi(env);
    else
        omp_set_num_threads(want);
    CHECK("want_in_range", want >= 1 && want <= T_MAX);
    CHECK_EQ("max_threads", omp_get_max_threads(), want);
    CHECK_EQ("serial_num_threads", omp_get_num_threads(), 1);
    CHECK_EQ("serial_thread_num", omp_get_thread_num(), 0);
    CHECK_EQ("serial_in_parallel", omp_in_parallel(), 0);
    CHECK_GE("num_procs", omp_get_num_procs(), 1);

    /* teams of changing sizes (the runtime's pool of threads grows under
     * them): each has its size */
    const int sizes[] = { 2, 1, want, 3, 2, want };
    int sizes_ok = 1;
    for (int k = 0; k < 6; k++) {
        int members = 0;
#pragma omp parallel num_threads(sizes[k])
        {
#pragma omp atomic
            members++;
        }
        sizes_ok &= members == sizes[k];
    }
    CHECK("team_sizes", sizes_ok);

    /* the team: ids 0..n-1, each once */
    int ids[T_MAX] = { 0 }, team = 0, in_par = 0, level = 0;
#pragma omp parallel
    {
        int me = omp_get_thread_num();
#pragma omp critical
        ids[me]++;
#pragma omp master
        {
            team = omp_get_num_threads();
            in_par = omp_in_parallel();
            level = omp_get_level();
        }
    }
    CHECK_EQ("team_size", team, want);
    CHECK_EQ("in_parallel", in_par, want > 1); /* a team of one is not active */
    CHECK_EQ("level", level, 1);
    int each_once = 1;
    for (int i = 0; i < T_MAX; i++)
        each_once &= ids[i] == (i < want);
    CHECK("ids_each_once", each_once);

    /* num_threads and if clauses */
    int small = 0, serial = 0;
#pragma omp parallel num_threads(2)
#pragma omp single
    small = omp_get_num_threads();
    CHECK_EQ("num_threads_clause", small, 2);
    int zero = 0;
#pragma omp parallel if (zero)
    serial = omp_get_num_threads();
    CHECK_EQ("if_false_serial", serial, 1);

    /* worksharing loops: each iteration once, under every schedule */
    memset(hits, 0, sizeof hits);
#pragma omp parallel for
    for (int i = 0; i < N; i++)
        hits[i]++;
    CHECK("for_static", all_hit_once());
    memset(hits, 0, sizeof hits);
#pragma omp parallel for schedule(static, 7)
    for (int i = 0; i < N; i++)
        hits[i]++;
    CHECK("for_static_chunk", all_hit_once());
    memset(hits, 0, sizeof hits);
#pragma omp parallel for schedule(dynamic, 13)
    for (int i = 0; i < N; i++)
        hits[i]++;
    CHECK("for_dynamic", all_hit_once());
    memset(hits, 0, sizeof hits);
#pragma omp parallel for schedule(guided, 5)
    for (int i = N - 1; i >= 0; i--)
        hits[i]++;
    CHECK("for_guided_down", all_hit_once());
    memset(hits, 0, sizeof hits);
#pragma omp parallel for schedule(monotonic : dynamic)
    for (int i = 0; i < N; i += 1)
        hits[i]++;
    CHECK("for_monotonic_dynamic", all_hit_once());
    memset(hits, 0, sizeof hits);
#pragma omp parallel for collapse(2) schedule(dynamic, 3)
    for (int i = 0; i < 100; i++)
        for (int j = 0; j < N / 100; j++)
            hits[i * (N / 100) + j]++;
    CHECK("for_collapse", all_hit_once());
    memset(hits, 0, sizeof hits);
#pragma omp parallel for schedule(dynamic, 3)
    for (unsigned long long i = 0; i < N; i++)
        hits[i]++;
    CHECK("for_dynamic_ull", all_hit_once());
    loop_with(omp_sched_static, 0, "runtime_static");
    loop_with(omp_sched_dynamic, 11, "runtime_dynamic");
    loop_with(omp_sched_guided, 1, "runtime_guided");
    loop_with(omp_sched_auto, 0, "runtime_auto");
    omp_sched_t kind;
    int chunk;
    omp_get_schedule(&kind, &chunk);
    CHECK_EQ("get_schedule", (int)kind, (int)omp_sched_auto);

    /* two loops with nowait in one region, then a third one */
    memset(hits, 0, sizeof hits);
#pragma omp parallel
    {
#pragma omp for schedule(dynamic, 50) nowait
        for (int i = 0; i < N / 2; i++)
            hits[i]++;
#pragma omp for schedule(guided) nowait
        for (int i = N / 2; i < N; i++)
            hits[i]++;
#pragma omp barrier
#pragma omp for schedule(dynamic)
        for (int i = 0; i < N; i++)
            hits[i] *= 3;
    }
    int threes = 1;
    for (int i = 0; i < N; i++)
        threes &= hits[i] == 3;
    CHECK("nowait_then_barrier", threes);

    /* ordered: iterations' ordered parts run in iteration order */
    order_len = 0;
#pragma omp parallel for ordered schedule(dynamic, 4)
    for (int i = 0; i < 1000; i++) {
#pragma omp ordered
        order_log[order_len++] = i;
    }
    int in_order = order_len == 1000;
    for (int i = 0; i < order_len; i++)
        in_order &= order_log[i] == i;
    CHECK("ordered", in_order);

    /* reductions */
    long sum = 0;
    double dsum = 0;
    int mx = -1, mn = N, all = 1, any = 0;
#pragma omp parallel for reduction(+ : sum, dsum) reduction(max : mx) reduction(min : mn) \
    reduction(&& : all) reduction(|| : any)
    for (int i = 0; i < N; i++) {
        sum += i;
        dsum += 0.5 * i;
        mx = i > mx ? i : mx;
        mn = i < mn ? i : mn;
        all = all && i >= 0;
        any = any || i == N - 1;
    }
    CHECK_EQ("reduction_sum", sum, (long)N * (N - 1) / 2);
    CHECK("reduction_double", dsum == 0.5 * ((double)N * (N - 1) / 2));
    CHECK_EQ("reduction_max", mx, N - 1);
    CHECK_EQ("reduction_min", mn, 0);
    CHECK_EQ("reduction_and", all, 1);
    CHECK_EQ("reduction_or", any, 1);

    /* critical, named critical and atomics, under contention */
    long crit = 0, crit2 = 0, at = 0, captured_sum = 0;
    int at32 = 0;
    double atd = 0;
#pragma omp parallel
    {
        for (int k = 0; k < 200; k++) {
#pragma omp critical
            crit++;
#pragma omp critical(other)
            crit2 += 2;
#pragma omp atomic
            at += 3;
#pragma omp atomic update
            at32++;
#pragma omp atomic
            atd += 0.25;
            long old;
#pragma omp atomic capture
            old = captured_sum++;
            (void)old;
        }
    }
    CHECK_EQ("critical", crit, 200L * want);
    CHECK_EQ("critical_named", crit2, 400L * want);
    CHECK_EQ("atomic_long", at, 600L * want);
    CHECK_EQ("atomic_int", at32, 200 * want);
    CHECK("atomic_double", atd == 50.0 * want);
    CHECK_EQ("atomic_capture", captured_sum, 200L * want);

    /* atomic capture hands out distinct tickets */
    memset(hits, 0, sizeof hits);
    int ticket = 0;
#pragma omp parallel
    for (int k = 0; k < 100; k++) {
        int mine;
#pragma omp atomic capture
        mine = ticket++;
        if (mine < N)
            hits[mine]++;
    }
    int tickets_ok = ticket == 100 * want;
    for (int i = 0; i < 100 * want && i < N; i++)
        tickets_ok &= hits[i] == 1;
    CHECK("atomic_tickets", tickets_ok);

    /* atomic write and read: a flag passed from thread 0 to the others */
    int flag = 0, payload = 0, saw = 0;
#pragma omp parallel
    {
        if (omp_get_thread_num() == 0) {
            payload = 42;
#pragma omp atomic write seq_cst
            flag = 1;
        } else {
            int f = 0;
            while (!f) {
#pragma omp atomic read seq_cst
                f = flag;
            }
            if (payload == 42) {
#pragma omp atomic
                saw++;
            }
        }
    }
    CHECK_EQ("atomic_flag", saw, want - 1);

    /* the same with plain variables and flush alone (OpenMP before 4.0):
     * the readers poll (up to 10 s) from before the flag is set */
    int pflag = 0, pdata = 0, psaw = 0;
#pragma omp parallel
    {
        if (omp_get_thread_num() == 0) {
            struct timespec ts = { 0, 100000000 };
            nanosleep(&ts, NULL);
            pdata = 7;
#pragma omp flush
            pflag = 1;
#pragma omp flush
        } else {
            int f = 0;
            double until = omp_get_wtime() + 10;
            while (!f && omp_get_wtime() < until) {
#pragma omp flush
                f = ((volatile int *)&pflag)[0];
            }
#pragma omp flush
            if (pdata == 7) {
#pragma omp atomic
                psaw++;
            }
        }
    }
    CHECK_EQ("flush_flag", psaw, want - 1);

    /* barrier: each thread writes its slot, then reads every slot */
    long slots[T_MAX] = { 0 };
    int barrier_ok = 1;
#pragma omp parallel reduction(&& : barrier_ok)
    {
        int me = omp_get_thread_num(), n = omp_get_num_threads();
        for (int round = 1; round <= 5; round++) {
            slots[me] = round * 100 + me;
#pragma omp barrier
            for (int t = 0; t < n; t++)
                barrier_ok = barrier_ok && slots[t] == round * 100 + t;
#pragma omp barrier
        }
    }
    CHECK("barrier_phases", barrier_ok);

    /* single: one thread; copyprivate: its value to all */
    int singles = 0, copied_ok = 1;
#pragma omp parallel reduction(&& : copied_ok)
    {
        int v = -1;
#pragma omp single copyprivate(v)
        {
            v = 1234;
            singles++;
        }
        copied_ok = copied_ok && v == 1234;
#pragma omp single nowait
        singles++;
    }
    CHECK_EQ("single", singles, 2);
    CHECK("copyprivate", copied_ok);

    /* sections: each once */
    int sec[4] = { 0 };
#pragma omp parallel sections
    {
#pragma omp section
        sec[0]++;
#pragma omp section
        sec[1]++;
#pragma omp section
        sec[2]++;
#pragma omp section
        sec[3]++;
    }
    CHECK("sections", sec[0] == 1 && sec[1] == 1 && sec[2] == 1 && sec[3] == 1);

    /* locks */
    omp_lock_t lk;
    omp_nest_lock_t nlk;
    omp_init_lock(&lk);
    omp_init_nest_lock(&nlk);
    long locked = 0, nested = 0;
    int depth_ok = 1;
#pragma omp parallel reduction(&& : depth_ok)
    for (int k = 0; k < 100; k++) {
        omp_set_lock(&lk);
        locked++;
        omp_unset_lock(&lk);
        omp_set_nest_lock(&nlk);
        int d = omp_test_nest_lock(&nlk);
        depth_ok = depth_ok && d == 2;
        nested++;
        omp_unset_nest_lock(&nlk);
        omp_unset_nest_lock(&nlk);
    }
    CHECK_EQ("lock", locked, 100L * want);
    CHECK_EQ("nest_lock", nested, 100L * want);
    CHECK("nest_lock_depth", depth_ok);
    omp_set_lock(&lk);
    int got = -1;
#pragma omp parallel num_threads(2)
    if (omp_get_thread_num() == 1)
        got = omp_test_lock(&lk);
    if (want >= 2)
        CHECK_EQ("test_lock_held", got, 0);
    omp_unset_lock(&lk);
    CHECK_EQ("test_lock_free", omp_test_lock(&lk), 1);
    omp_unset_lock(&lk);
    omp_destroy_lock(&lk);
    omp_destroy_nest_lock(&nlk);

    /* tasks */
    long f = 0;
#pragma omp parallel
#pragma omp single
    f = fib(20);
    CHECK_EQ("task_fib", f, 6765L);
    memset(hits, 0, sizeof hits);
#pragma omp parallel
#pragma omp single
    {
#pragma omp taskgroup
        for (int i = 0; i < 1000; i++) {
#pragma omp task firstprivate(i)
            hits[i]++;
        }
        int done = 1;
        for (int i = 0; i < 1000; i++)
            done &= hits[i] == 1;
        CHECK("taskgroup", done);
    }
    /* tasks made by one thread run on several (they sleep a little) */
    int ran_on[T_MAX] = { 0 };
#pragma omp parallel
#pragma omp single
    for (int i = 0; i < 8 * want; i++) {
#pragma omp task
        {
            struct timespec ts = { 0, 2000000 };
            nanosleep(&ts, NULL);
            int me = omp_get_thread_num();
#pragma omp atomic
            ran_on[me]++;
        }
    }
    int ran = 0, spread = 0;
    for (int i = 0; i < T_MAX; i++)
        ran += ran_on[i], spread += ran_on[i] > 0;
    CHECK_EQ("tasks_all_ran", ran, 8 * want);
    CHECK("tasks_spread", want == 1 || spread > 1);
    int stage = 0, dep_ok = 0;
#pragma omp parallel
#pragma omp single
    {
#pragma omp task depend(out : stage)
        stage = 1;
#pragma omp task depend(inout : stage)
        stage = stage * 10 + 2;
#pragma omp task depend(in : stage)
        dep_ok = stage == 12;
    }
    CHECK("task_depend", dep_ok);

    /* taskloops: each iteration once, long and unsigned long long */
    memset(hits, 0, sizeof hits);
#pragma omp parallel
#pragma omp single
    {
#pragma omp taskloop grainsize(100)
        for (int i = 0; i < N / 2; i++)
            hits[i]++;
#pragma omp taskloop num_tasks(7)
        for (unsigned long long i = N / 2; i < N; i++)
            hits[i]++;
    }
    CHECK("taskloop", all_hit_once());

    /* the program's own atomics: C11, GCC's __sync builtins, and a spin lock
     * made of an atomic_flag */
    _Atomic long c11 = 0;
    long synced = 0, spun = 0;
    atomic_flag spin = ATOMIC_FLAG_INIT;
#pragma omp parallel
    for (int k = 0; k < 50; k++) {
        atomic_fetch_add(&c11, 2);
        __sync_fetch_and_add(&synced, 1);
        while (atomic_flag_test_and_set(&spin))
            ;
        spun++;
        atomic_flag_clear(&spin);
    }
    CHECK_EQ("c11_atomic", (long)c11, 100L * want);
    CHECK_EQ("sync_builtin", synced, 50L * want);
    CHECK_EQ("atomic_flag_lock", spun, 50L * want);
    long cas = 0;
    int won = 0;
#pragma omp parallel reduction(+ : won)
    for (int k = 0; k < 20; k++)
        won += __sync_bool_compare_and_swap(&cas, (long)omp_get_thread_num() * 1000 + k,
                                            (long)omp_get_thread_num() * 1000 + k + 1) ||
               __sync_val_compare_and_swap(&cas, 0L, 0L) < 0;
    CHECK_LE("cas_at_most_one_chain", won, 20);

    /* memory from omp_alloc is shared by the team */
    long *shared = omp_alloc(sizeof(long) * T_MAX, omp_default_mem_alloc);
    CHECK("omp_alloc", shared != NULL);
    long alloc_sum = 0;
#pragma omp parallel
    shared[omp_get_thread_num()] = omp_get_thread_num() + 1;
    for (int i = 0; i < want; i++)
        alloc_sum += shared[i];
    CHECK_EQ("omp_alloc_shared", alloc_sum, (long)want * (want + 1) / 2);
    omp_free(shared, omp_default_mem_alloc);

    /* threadprivate and copyin */
    tp_value = 77;
    int tp_ok = 1;
#pragma omp parallel copyin(tp_value) reduction(&& : tp_ok)
    {
        tp_ok = tp_ok && tp_value == 77;
        tp_value = omp_get_thread_num();
#pragma omp barrier
        tp_ok = tp_ok && tp_value == omp_get_thread_num();
    }
    CHECK("threadprivate", tp_ok);

    /* a nested region is a team of one (nesting is off by default) */
    int inner = 0, inner_level = 0, active = 0;
#pragma omp parallel num_threads(2)
#pragma omp master
#pragma omp parallel num_threads(3)
    {
        inner = omp_get_num_threads();
        inner_level = omp_get_level();
        active = omp_get_active_level();
    }
    CHECK_EQ("nested_team", inner, 1);
    CHECK_EQ("nested_level", inner_level, 2);
    CHECK_EQ("nested_active_level", active, 1);

    double t0 = omp_get_wtime(), t1 = omp_get_wtime();
    CHECK("wtime", t1 >= t0 && t0 > 0 && omp_get_wtick() > 0);

    return check_finish();
}
