/* futex.c: futexes on shared memory.  The kernel waits on a word of one
 * process's memory; a word in the GAS has a copy on each node, and one
 * node's kernel never sees another's wake.  Code that waits with
 * syscall(SYS_futex) hung when the thread that changed the word and woke
 * it ran on another node: libstdc++'s std::future (a promise set, an
 * std::async result), C++20's atomic wait, latch, barrier and semaphores,
 * a program's own futex code (tests/cxx/futures.cc).
 *
 * For an application thread of a multi-node run, on a GAS address:
 * - FUTEX_WAIT and FUTEX_WAIT_BITSET read the word after an acquire of
 *   the cluster lock of its address, so writes released by a wake are
 *   seen; unequal: EAGAIN.  Else the thread waits on its node's copy (its
 *   node's wake ends that at once) for steps growing from 0.1 to 5 ms,
 *   reading the word so after each, and returns 0 once it changed (or a
 *   wake of its node came), ETIMEDOUT at the deadline, EINTR when a
 *   signal's handler ran.
 *   Another node's change is seen once that node released it: through its
 *   FUTEX_WAKE, or any other release of its (an unlock, a barrier, its
 *   thread's end); a waker that skips FUTEX_WAKE because its node's copy
 *   showed no waiter (relinked code, whose atomics are its node's) may
 *   leave the waiter to its next release.  Code compiled with cables-cc
 *   makes its atomics across nodes.
 * - FUTEX_WAKE and FUTEX_WAKE_BITSET release through that lock first (the
 *   waker's writes before the wake reach the homes), then wake the
 *   node's own waiters.
 * Other operations and other system calls go to libc: their futexes are
 * the node's. */
#include <errno.h>
#include <linux/futex.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "shim.h"

#define LOCKS 64

typedef long (*syscall_fn)(long, ...);
static syscall_fn real_syscall;

/* looked up at the first call (the library's constructors make some) or
 * at the load, before any thread or signal handler of the program may */
static syscall_fn libc_syscall(void)
{
    if (!real_syscall)
        real_syscall = (syscall_fn)cb_libc("syscall");
    return real_syscall;
}
__attribute__((constructor)) static void futex_init(void) { libc_syscall(); }

static cables_lock_t *lock_of(const void *addr)
{
    _Static_assert(SHIM_PROGRAM_FUTEX + LOCKS * sizeof(cables_lock_t) <= SHIM_PROGRAM_SEEDS, "futex");
    uintptr_t a = (uintptr_t)addr >> 2;
    return (cables_lock_t *)((uint8_t *)cb.program + SHIM_PROGRAM_FUTEX) + ((a ^ a >> 6 ^ a >> 12) % LOCKS);
}

/* an acquire and a release of addr's lock */
static void pass(const void *addr)
{
    cables_lock(lock_of(addr));
    cables_unlock(lock_of(addr));
}

static bool ours(const void *addr)
{
    return cb_app_thread && cb.multi && cb.program && !cb.forked && cb_in_gas((uintptr_t)addr) &&
           !atomic_load(&cb.stopping);
}

/* the deadline of a wait in CLOCK_MONOTONIC ns (-1: none): relative for
 * FUTEX_WAIT, absolute for FUTEX_WAIT_BITSET (on CLOCK_REALTIME with
 * FUTEX_CLOCK_REALTIME); -2: an invalid time */
static int64_t deadline(int op, const struct timespec *t)
{
    if (!t)
        return -1;
    if (t->tv_sec < 0 || t->tv_nsec < 0 || t->tv_nsec >= 1000000000L)
        return -2;
    if (t->tv_sec > 1LL << 32) /* beyond 2106, or over a century from now: none */
        return -1;
    if ((op & FUTEX_CMD_MASK) == FUTEX_WAIT)
        return (int64_t)cb_now_ns() + t->tv_sec * 1000000000LL + t->tv_nsec;
    return shim_deadline(op & FUTEX_CLOCK_REALTIME ? CLOCK_REALTIME : CLOCK_MONOTONIC, t);
}

/* the word after an acquire of its lock (and a release) */
static uint32_t fresh(uint32_t *addr)
{
    cables_lock(lock_of(addr));
    uint32_t v = *(volatile uint32_t *)addr;
    cables_unlock(lock_of(addr));
    return v;
}

static long futex_wait(uint32_t *addr, int op, uint32_t val, const struct timespec *t)
{
    int64_t end = deadline(op, t);
    if (end == -2)
        return errno = EINVAL, -1;
    if (fresh(addr) != val)
        return errno = EAGAIN, -1;
    for (int64_t step = 100000;; step = step * 2 > 5000000 ? 5000000 : step * 2) {
        int64_t left = end < 0 ? step : end - (int64_t)cb_now_ns();
        if (left <= 0)
            return errno = ETIMEDOUT, -1;
        int64_t ns = left < step ? left : step;
        struct timespec s = { (time_t)(ns / 1000000000), (long)(ns % 1000000000) };
        long r = libc_syscall()(SYS_futex, addr, FUTEX_WAIT | (op & FUTEX_PRIVATE_FLAG), val, &s, NULL, 0);
        int e = errno;
        if (r < 0 && e == EFAULT) /* the copy went meanwhile (not a cancellation point) */
            libc_syscall()(SYS_nanosleep, &s, NULL);
        if (fresh(addr) != val || r == 0) /* changed, or woken on this node */
            return 0;
        if (r < 0 && e == EINTR)
            return errno = EINTR, -1;
    }
}

/* Six arguments read whatever the call had, as libc's syscall does (the
 * sixth from the caller's stack: AddressSanitizer would call that an
 * underflow) */
__attribute__((no_sanitize_address)) long syscall(long nr, ...)
{
    va_list ap;
    va_start(ap, nr);
    long a[6];
    for (int i = 0; i < 6; i++)
        a[i] = va_arg(ap, long);
    va_end(ap);
    if (nr == SYS_futex && ours((void *)a[0])) {
        uint32_t *addr = (uint32_t *)a[0];
        int op = (int)a[1];
        switch (op & FUTEX_CMD_MASK) {
        case FUTEX_WAIT:
        case FUTEX_WAIT_BITSET:
            return futex_wait(addr, op, (uint32_t)a[2], (const struct timespec *)a[3]);
        case FUTEX_WAKE:
        case FUTEX_WAKE_BITSET: {
            pass(addr);
            long r = libc_syscall()(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
            return r < 0 && errno == EFAULT ? 0 : r;
        }
        }
    }
    return libc_syscall()(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}
