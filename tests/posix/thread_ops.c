/* thread_ops: the calls that take a thread besides create, join, detach
 * and cancel, made by main on a worker (on 2 nodes it runs on the other
 * node, launched or attached for it): pthread_kill (0, and a signal whose
 * handler main installed with signal(): the worker runs it), pthread_sigqueue
 * (to a handler main installed with sigaction: its value arrives), pthread_setname_np and
 * pthread_getname_np (the worker sees its name), pthread_setaffinity_np
 * and pthread_getaffinity_np (the worker runs on the one CPU set),
 * pthread_setschedparam, pthread_getschedparam, pthread_setschedprio
 * (SCHED_BATCH, which needs no privilege), pthread_getattr_np (the stack
 * holds the worker's locals), pthread_getcpuclockid on itself and on the
 * worker (main reads at least the CPU time the worker read), and the
 * joins that give up: pthread_tryjoin_np (EBUSY while the worker runs, 0
 * once a second one ended), pthread_timedjoin_np (ETIMEDOUT, then the
 * worker's value once it ends), pthread_clockjoin_np; and a join is a
 * cancellation point: a thread cancelled while it joins another ends
 * PTHREAD_CANCELED, and the other can still be joined; and a cleanup
 * handler of a cancelled thread that joins a helper waits for it (under
 * libcables, once a cancellation had acted every runtime wait of the
 * thread returned at once: the join gave EINTR, the helper unjoined).
 * RESULT ok=1 checks=N (check.h) */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

static struct gate to_worker = GATE_INITIALIZER, to_main = GATE_INITIALIZER;
static uintptr_t local_addr; /* where one of the worker's locals is */
static int cpu;              /* the CPU main puts the worker on */
/* what the worker's handlers saw: in its own thread's TLS (private memory) */
static __thread volatile sig_atomic_t got_usr1, got_value, got_code;

static void on_usr1(int sig)
{
    (void)sig;
    got_usr1 = 1;
}

static void on_usr2(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    got_value = si->si_value.sival_int;
    got_code = si->si_code;
}

/* wait (bounded) for a flag a handler sets */
static int flag_set(volatile sig_atomic_t *f)
{
    for (int i = 0; i < WAIT_MS && !*f; i++)
        usleep(1000);
    return *f != 0;
}

static long long thread_ns(clockid_t c)
{
    struct timespec ts;
    return clock_gettime(c, &ts) ? -1 : ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static long long worker_cpu_ns; /* the worker's CPU time, as it read it */

static void *worker(void *arg)
{
    (void)arg;
    volatile int here = 1;
    local_addr = (uintptr_t)&here;
    while (thread_ns(CLOCK_THREAD_CPUTIME_ID) < 20000000) /* 20 ms of CPU */
        here++;
    worker_cpu_ns = thread_ns(CLOCK_THREAD_CPUTIME_ID);
    gate_set(&to_main, 1);

    CHECK("w_gate_2", gate_wait(&to_worker, 2));
    CHECK("w_usr1", flag_set(&got_usr1));
    CHECK("w_sigqueue", flag_set(&got_value));
    CHECK_EQ("w_sigqueue_value", got_value, 42);
    CHECK_EQ("w_sigqueue_code", got_code, SI_QUEUE);
    char name[32] = "";
    CHECK_ERR("w_getname_self", pthread_getname_np(pthread_self(), name, sizeof name), 0);
    CHECK_EQ("w_name", strcmp(name, "cables-w1"), 0);
    cpu_set_t set;
    CHECK_EQ("w_affinity", sched_getaffinity(0, sizeof set, &set), 0);
    CHECK_EQ("w_affinity_one_cpu", CPU_COUNT(&set), 1);
    CHECK("w_affinity_cpu", CPU_ISSET(cpu, &set));
    CHECK_EQ("w_sched_batch", sched_getscheduler(0), SCHED_BATCH);
    gate_set(&to_main, 2);

    CHECK("w_gate_3", gate_wait(&to_worker, 3)); /* main's joins give up meanwhile */
    return (void *)(uintptr_t)0x5eed;
}

static void *quick(void *arg)
{
    return arg;
}

static struct gate to_blocker = GATE_INITIALIZER, joining = GATE_INITIALIZER;
static pthread_t blocker;

static void *blocked(void *arg)
{
    (void)arg;
    CHECK("b_gate", gate_wait(&to_blocker, 1));
    return (void *)(uintptr_t)0xb10c;
}

static void *joiner(void *arg)
{
    (void)arg;
    gate_set(&joining, 1);
    pthread_join(blocker, NULL); /* cancelled here */
    CHECK("j_not_cancelled", 0);
    return NULL;
}

static struct gate cleaning = GATE_INITIALIZER, to_helper = GATE_INITIALIZER,
                   to_blocker2 = GATE_INITIALIZER;
static pthread_t helper, blocker2;
static int cleanup_rc = -1;
static void *cleanup_value;

static void *helper_fn(void *arg)
{
    (void)arg;
    CHECK("h_gate", gate_wait(&to_helper, 1));
    return (void *)(uintptr_t)0x4e1f;
}

static void *blocked2(void *arg)
{
    (void)arg;
    CHECK("b2_gate", gate_wait(&to_blocker2, 1));
    return NULL;
}

static void cleanup_join(void *arg)
{
    (void)arg;
    cleanup_rc = pthread_join(helper, &cleanup_value);
}

static void *cleaner(void *arg)
{
    (void)arg;
    pthread_cleanup_push(cleanup_join, NULL);
    gate_set(&cleaning, 1);
    pthread_join(blocker2, NULL); /* cancelled here */
    CHECK("c_not_cancelled", 0);
    pthread_cleanup_pop(0);
    return NULL;
}

int main(void)
{
    check_start();
    /* the process's dispositions, so the worker's too, wherever it runs */
    CHECK("signal_usr1", signal(SIGUSR1, on_usr1) != SIG_ERR);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_usr2;
    sa.sa_flags = SA_SIGINFO;
    CHECK_EQ("sigaction_usr2", sigaction(SIGUSR2, &sa, NULL), 0);
    pthread_t w;
    CHECK_ERR("create", pthread_create(&w, NULL, worker, NULL), 0);
    CHECK("gate_1", gate_wait(&to_main, 1));

    CHECK_ERR("kill_0", pthread_kill(w, 0), 0);
    CHECK_ERR("kill_bad_signal", pthread_kill(w, 100000), EINVAL);
    CHECK_ERR("kill_glibc_signal", pthread_kill(w, SIGRTMIN - 2), EINVAL); /* cancellation's */
    CHECK_ERR("kill_usr1", pthread_kill(w, SIGUSR1), 0);
    CHECK_ERR("sigqueue", pthread_sigqueue(w, SIGUSR2, (union sigval){ .sival_int = 42 }), 0);

    CHECK_ERR("setname_too_long", pthread_setname_np(w, "a-name-of-more-than-15"), ERANGE);
    CHECK_ERR("setname", pthread_setname_np(w, "cables-w1"), 0);
    char name[32] = "";
    CHECK_ERR("getname", pthread_getname_np(w, name, sizeof name), 0);
    CHECK_EQ("getname_value", strcmp(name, "cables-w1"), 0);
    CHECK_ERR("getname_small", pthread_getname_np(w, name, 4), ERANGE);

    cpu_set_t set;
    CPU_ZERO(&set);
    CHECK_ERR("getaffinity", pthread_getaffinity_np(w, sizeof set, &set), 0);
    CHECK_GE("getaffinity_cpus", CPU_COUNT(&set), 1);
    for (cpu = 0; cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &set); cpu++) {}
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    CHECK_ERR("setaffinity", pthread_setaffinity_np(w, sizeof set, &set), 0);
    CPU_ZERO(&set);
    CHECK_ERR("getaffinity_again", pthread_getaffinity_np(w, sizeof set, &set), 0);
    CHECK_EQ("getaffinity_one", CPU_COUNT(&set), 1);

    int pol = -1;
    struct sched_param sp = { .sched_priority = 7 };
    CHECK_ERR("getschedparam", pthread_getschedparam(w, &pol, &sp), 0);
    CHECK_EQ("getschedparam_policy", pol, SCHED_OTHER);
    CHECK_EQ("getschedparam_prio", sp.sched_priority, 0);
    sp.sched_priority = 0;
    CHECK_ERR("setschedparam", pthread_setschedparam(w, SCHED_BATCH, &sp), 0);
    CHECK_ERR("setschedprio", pthread_setschedprio(w, 0), 0);
    CHECK_ERR("getschedparam_again", pthread_getschedparam(w, &pol, &sp), 0);
    CHECK_EQ("getschedparam_batch", pol, SCHED_BATCH);

    pthread_attr_t attr;
    CHECK_ERR("getattr", pthread_getattr_np(w, &attr), 0);
    int ds = -1;
    pthread_attr_getdetachstate(&attr, &ds);
    CHECK_EQ("getattr_joinable", ds, PTHREAD_CREATE_JOINABLE);
    void *stk = NULL;
    size_t ssz = 0;
    CHECK_ERR("getattr_stack", pthread_attr_getstack(&attr, &stk, &ssz), 0);
    CHECK("getattr_stack_holds_locals",
          local_addr >= (uintptr_t)stk && local_addr < (uintptr_t)stk + ssz);
    pthread_attr_destroy(&attr);

    clockid_t clk;
    CHECK_ERR("getcpuclockid_self", pthread_getcpuclockid(pthread_self(), &clk), 0);
    struct timespec ts = { 0, 0 };
    CHECK_EQ("cpuclock_reads", clock_gettime(clk, &ts), 0);
    CHECK("cpuclock_ran", ts.tv_sec > 0 || ts.tv_nsec > 0);
    /* the worker's clock, read by main: at least what the worker read */
    clockid_t wclk;
    CHECK_ERR("getcpuclockid_worker", pthread_getcpuclockid(w, &wclk), 0);
    CHECK_GE("worker_cpuclock_ms", thread_ns(wclk) / 1000000, worker_cpu_ns / 1000000);
    CHECK_GE("worker_cpuclock_20ms", worker_cpu_ns / 1000000, 20);
    CHECK_EQ("worker_cpuclock_res", clock_getres(wclk, &ts), 0);

    gate_set(&to_worker, 2);
    CHECK("gate_2", gate_wait(&to_main, 2));

    /* the worker waits for gate 3: the joins give up */
    void *ret = NULL;
    CHECK_ERR("tryjoin_running", pthread_tryjoin_np(w, &ret), EBUSY);
    double t0 = check_now_ms(CLOCK_MONOTONIC);
    struct timespec dl = check_deadline(CLOCK_REALTIME, 100);
    CHECK_ERR("timedjoin_times_out", pthread_timedjoin_np(w, &ret, &dl), ETIMEDOUT);
    CHECK_GE("timedjoin_waited_ms", (long)(check_now_ms(CLOCK_MONOTONIC) - t0), 90);
    dl = check_deadline(CLOCK_MONOTONIC, 50);
    CHECK_ERR("clockjoin_times_out", pthread_clockjoin_np(w, &ret, CLOCK_MONOTONIC, &dl), ETIMEDOUT);
    CHECK_ERR("clockjoin_bad_clock",
              pthread_clockjoin_np(w, &ret, CLOCK_PROCESS_CPUTIME_ID, &dl), EINVAL);
    gate_set(&to_worker, 3);
    dl = check_deadline(CLOCK_REALTIME, WAIT_MS);
    CHECK_ERR("timedjoin", pthread_timedjoin_np(w, &ret, &dl), 0);
    CHECK_EQ("timedjoin_value", (uintptr_t)ret, 0x5eed);

    /* a thread that ended: tryjoin takes it */
    pthread_t q;
    CHECK_ERR("create_quick", pthread_create(&q, NULL, quick, (void *)(uintptr_t)77), 0);
    int rc = EBUSY;
    for (int i = 0; i < WAIT_MS && rc == EBUSY; i++) {
        rc = pthread_tryjoin_np(q, &ret);
        if (rc == EBUSY)
            usleep(1000);
    }
    CHECK_ERR("tryjoin_ended", rc, 0);
    CHECK_EQ("tryjoin_value", (uintptr_t)ret, 77);

    /* a join is a cancellation point; the joined thread stays joinable */
    pthread_t j;
    CHECK_ERR("create_blocker", pthread_create(&blocker, NULL, blocked, NULL), 0);
    CHECK_ERR("create_joiner", pthread_create(&j, NULL, joiner, NULL), 0);
    CHECK("joining", gate_wait(&joining, 1));
    usleep(50000); /* most likely inside the join by now (if not, it acts there) */
    CHECK_ERR("cancel_joiner", pthread_cancel(j), 0);
    CHECK_ERR("join_joiner", pthread_join(j, &ret), 0);
    CHECK("joiner_cancelled", ret == PTHREAD_CANCELED);
    gate_set(&to_blocker, 1);
    CHECK_ERR("join_blocker", pthread_join(blocker, &ret), 0);
    CHECK_EQ("blocker_value", (uintptr_t)ret, 0xb10c);

    /* a cancelled thread's cleanup handler joins a helper: it waits */
    pthread_t c;
    CHECK_ERR("create_helper", pthread_create(&helper, NULL, helper_fn, NULL), 0);
    CHECK_ERR("create_blocker2", pthread_create(&blocker2, NULL, blocked2, NULL), 0);
    CHECK_ERR("create_cleaner", pthread_create(&c, NULL, cleaner, NULL), 0);
    CHECK("cleaning", gate_wait(&cleaning, 1));
    usleep(50000);
    CHECK_ERR("cancel_cleaner", pthread_cancel(c), 0);
    usleep(100000); /* its cleanup handler joins the helper meanwhile */
    gate_set(&to_helper, 1);
    CHECK_ERR("join_cleaner", pthread_join(c, &ret), 0);
    CHECK("cleaner_cancelled", ret == PTHREAD_CANCELED);
    CHECK_ERR("cleanup_join_rc", cleanup_rc, 0);
    CHECK_EQ("cleanup_join_value", (uintptr_t)cleanup_value, 0x4e1f);
    gate_set(&to_blocker2, 1);
    CHECK_ERR("join_blocker2", pthread_join(blocker2, NULL), 0);
    return check_finish();
}
