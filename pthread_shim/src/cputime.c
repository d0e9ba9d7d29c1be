/* cputime.c: the process's CPU time and use are every node process's.
 * The kernel counts them per process, so before, a thread's clock() gave
 * its node's share only (a program timing its CPU use over 4 nodes saw a
 * quarter of it).  An application thread's clock(),
 * clock_gettime(CLOCK_PROCESS_CPUTIME_ID) (and the clock
 * clock_getcpuclockid gives for its process), times() and getrusage's
 * RUSAGE_SELF and RUSAGE_CHILDREN give the sums over every node process,
 * those that have left included (libcables/src/proc.c, cb_proc_usage),
 * the runtime's own threads in them as a process's are.  A thread's own
 * clock (CLOCK_THREAD_CPUTIME_ID, RUSAGE_THREAD) is its own anyway; the
 * clock pthread_getcpuclockid gives for a thread of another node is read
 * on that node (TOP_CPUTIME).  A run
 * of one node, the runtime's threads, and a child of fork get libc's.
 * Each call asks every other node: tens of microseconds, not the vDSO's
 * tens of nanoseconds, and not async-signal-safe.  These are EARLY_FN
 * (shim.h): a sanitizer's start or a library's constructor may read a
 * clock before anything is set up, and the runtime reads its own here. */
#include <errno.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/times.h>
#include <time.h>
#include <unistd.h>

#include "shim.h"

EARLY_FN static bool cluster(void)
{
    return cb_app_thread && cb.multi && !cb.forked && atomic_load(&cb.nnodes) > 1 &&
           !atomic_load(&cb.stopping);
}

/* The kernel's process CPU clocks of this process (its clock id
 * CLOCK_PROCESS_CPUTIME_ID, or pid 0 or a node's encoded as the kernel's
 * MAKE_PROCESS_CPUCLOCK does): 0 sched (the one clock_getcpuclockid
 * gives), 1 prof (user + system), 2 virt (user); -1 for any other. */
EARLY_FN static int process_clock(clockid_t c)
{
    if (c == CLOCK_PROCESS_CPUTIME_ID)
        return 0;
    if (c >= 0 || c & 4) /* another fixed clock, or a thread's */
        return -1;
    pid_t pid = (pid_t)~(c >> 3);
    bool ours = pid == 0 || pid == cb_pid();
    for (int k = 0; !ours && k < atomic_load(&cb.nnodes); k++) /* another node's getpid */
        ours = cb.pids[k] == pid;
    if (!ours)
        return -1;
    switch (c & 3) {
    case 2: return 0;
    case 0: return 1;
    case 1: return 2;
    }
    return -1;
}

/* A thread of another node's CPU clock: the kernel's per-thread layout
 * (~id << 3 | 4 | kind) with kind 3, which the kernel never makes, and as
 * id its cluster id folded into 28 bits: node 6, creating node 6, sequence
 * 16.  A thread whose id does not fit gets none (ENOENT). */
enum { RCLK_KIND = 3, RCLK_NODE = 22, RCLK_CREATOR = 16 };

int shim_remote_cpuclock_id(uint64_t tid, clockid_t *clk)
{
    uint64_t node = tid >> 48, creator = tid >> 32 & 0xffff, seq = tid & 0xffffffff;
    if (node >= 64 || creator >= 64 || seq >= 1u << RCLK_CREATOR)
        return ENOENT;
    int32_t x = (int32_t)(node << RCLK_NODE | creator << RCLK_CREATOR | seq);
    *clk = (clockid_t)(~x * 8 | 4 | RCLK_KIND);
    return 0;
}

/* such a clock's thread id, or 0 */
EARLY_FN static uint64_t remote_clock(clockid_t c)
{
    if (c >= 0 || (c & 7) != (4 | RCLK_KIND))
        return 0;
    uint64_t x = (uint32_t)~(c >> 3) & ((1u << 28) - 1);
    return (x >> RCLK_NODE) << 48 | (x >> RCLK_CREATOR & 63) << 32 | (x & 0xffff);
}

/* clock_getres's: a remote thread's clock has a thread CPU clock's */
EARLY_FN clockid_t shim_cpuclock_here(clockid_t c) { return remote_clock(c) ? CLOCK_THREAD_CPUTIME_ID : c; }

EARLY_FN static uint64_t tv_ns(struct timeval t) { return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_usec * 1000; }

EARLY_FN int clock_gettime(clockid_t c, struct timespec *ts)
{
    int k;
    uint64_t tid = remote_clock(c);
    if (tid && cluster()) { /* the clock of a thread of another node: read there */
        int64_t ns = 0;
        int rc = cb_thread_op(tid, TOP_CPUTIME, 2, 0, NULL, 0, NULL, 0, &ns);
        if (rc)
            return errno = rc == ESRCH ? EINVAL : rc, -1; /* the kernel's for an ended thread */
        ts->tv_sec = (time_t)(ns / 1000000000);
        ts->tv_nsec = (long)(ns % 1000000000);
        return 0;
    }
    if ((k = process_clock(c)) < 0 || !cluster()) {
        if (!shared_obj(ts))
            return EARLY(clock_gettime)(c, ts);
        /* shared memory (a global, a thread's stack): the CPU clocks are
         * system calls, which cannot store into a page not present here */
        struct timespec b;
        int r = EARLY(clock_gettime)(c, &b);
        if (!r)
            *ts = b; /* through the fault path */
        return r;
    }
    cb_usage_t u;
    cb_proc_usage(&u);
    uint64_t ns = k == 0 ? u.cpu_ns
                : k == 1 ? tv_ns(u.self.ru_utime) + tv_ns(u.self.ru_stime)
                         : tv_ns(u.self.ru_utime);
    ts->tv_sec = (time_t)(ns / 1000000000ull);
    ts->tv_nsec = (long)(ns % 1000000000ull);
    return 0;
}

/* glibc's reads its clock past the shim's */
EARLY_FN clock_t clock(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts))
        return (clock_t)-1;
    return (clock_t)(ts.tv_sec * CLOCKS_PER_SEC + ts.tv_nsec / (1000000000 / CLOCKS_PER_SEC));
}

EARLY_FN int getrusage(int who, struct rusage *ru)
{
    if (!cluster() || (who != RUSAGE_SELF && who != RUSAGE_CHILDREN) || !ru) {
        struct rusage b;
        if (!shared_obj(ru) && !shared_obj((char *)(ru + 1) - 1)) /* the kernel may store into it */
            return EARLY(getrusage)(who, ru);
        int r = EARLY(getrusage)(who, &b);
        if (!r)
            *ru = b; /* shared memory: through the fault path */
        return r;
    }
    cb_usage_t u;
    cb_proc_usage(&u);
    *ru = who == RUSAGE_SELF ? u.self : u.children;
    return 0;
}

EARLY_FN static clock_t ticks(struct timeval t)
{
    long hz = sysconf(_SC_CLK_TCK);
    return (clock_t)(t.tv_sec * hz + t.tv_usec / (1000000 / hz));
}

EARLY_FN clock_t times(struct tms *t)
{
    struct tms b;
    clock_t r = EARLY(times)(&b);
    if (r == (clock_t)-1 || !t)
        return r;
    if (cluster()) {
        cb_usage_t u;
        cb_proc_usage(&u);
        b = (struct tms){ ticks(u.self.ru_utime), ticks(u.self.ru_stime),
                          ticks(u.children.ru_utime), ticks(u.children.ru_stime) };
    }
    *t = b; /* shared memory: through the fault path */
    return r;
}
