/* signals.c: signal dispositions.  A process's dispositions are shared by
 * all its threads, and a relinked program's process is every node process:
 * an application thread's sigaction (signal, bsd_signal, sysv_signal) is
 * made here, then at the master and on every other node, one change at a
 * time (libcables/src/proc.c), so that a thread on
 * another node that gets the signal (pthread_kill, a timer, the kernel)
 * runs the handler main installed.  Handlers are addresses in the program,
 * the same in every node process (the runtime runs them all without
 * address randomization: libcables/src/start.c).
 *
 * SIGSEGV drives the fault path, so the program's handler for it is kept
 * beside the runtime's, which calls it for the faults that are not the
 * runtime's, and SIGSEGV stays unblocked in the kernel's masks: the
 * program's masks and its handlers' sa_mask only say it is blocked
 * (libcables/src/fault.c, cb_sigaction and cb_sigmask).  Before, a
 * program's SIGSEGV handler replaced the runtime's (its first access to a
 * shared page not mapped yet went to the program's handler), and a thread
 * that blocked every signal, or a handler whose sa_mask is full, died at
 * such an access.  A new thread starts with its creator's mask, on any
 * node (libcables/src/thread.c). */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>

#include "shim.h"

int sigaction(int sig, const struct sigaction *restrict act, struct sigaction *restrict old)
{
    int rc = cb_sigaction(sig, act, old);
    /* not from the program's SIGSEGV handler: a crash's (the messages'
     * locks and libc's malloc may be what crashed) */
    if (rc == 0 && act && cb_app_thread && cb.multi && !cb_in_segv_handler()) {
        struct sigaction copy = *act; /* a private copy: it travels in messages */
        if (!atomic_load(&cb.stopping))
            cb.self == 0 ? cb_proc_change(CB_PROC_SIGACTION, sig, (const char *)&copy, NULL, NULL)
                         : shim_rs_sigaction(sig, &copy);
    }
    return rc;
}

/* glibc's signal(): BSD semantics (the handler stays, interrupted calls
 * restart), the signal blocked while its handler runs */
static sighandler_t set_handler(int sig, sighandler_t h, int flags, bool block_self)
{
    struct sigaction act, old;
    memset(&act, 0, sizeof act);
    act.sa_handler = h;
    act.sa_flags = flags;
    sigemptyset(&act.sa_mask);
    if (block_self && sigaddset(&act.sa_mask, sig) < 0)
        return SIG_ERR;
    return sigaction(sig, &act, &old) ? SIG_ERR : old.sa_handler;
}

/* siginterrupt's signals: signal() installs their handlers without
 * SA_RESTART, as glibc's (this node's: the calls are main's, as a rule) */
static _Atomic uint64_t sigintr;

static int bsd_flags(int sig)
{
    return sig >= 1 && sig <= 64 && atomic_load(&sigintr) >> (sig - 1) & 1 ? 0 : SA_RESTART;
}

sighandler_t signal(int sig, sighandler_t h) { return set_handler(sig, h, bsd_flags(sig), true); }
sighandler_t bsd_signal(int sig, sighandler_t h) { return set_handler(sig, h, bsd_flags(sig), true); }
sighandler_t sysv_signal(int sig, sighandler_t h)
{
    return set_handler(sig, h, (int)(SA_RESETHAND | SA_NODEFER), false);
}
sighandler_t __sysv_signal(int sig, sighandler_t h); /* signal() under strict X/Open */
sighandler_t __sysv_signal(int sig, sighandler_t h) { return sysv_signal(sig, h); }

int pthread_sigmask(int how, const sigset_t *set, sigset_t *old) { return cb_sigmask(how, set, old); }

int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
    int rc = cb_sigmask(how, set, old);
    return rc ? (errno = rc, -1) : 0;
}

int sigsuspend(const sigset_t *mask)
{
    sigset_t m;
    const sigset_t *km = shim_kernel_mask(mask, &m);
    return SHIM_DURING(km, REAL(sigsuspend)(km));
}

/* The set, the timeout and the record are copied: the kernel cannot read
 * or write a shared page this node does not hold (a sigset_t global of the
 * program, on another node than main: EFAULT, and sigwait returned at
 * once for ever).  While a thread waits, its node takes those signals:
 * one sent to the process on another node comes here (psig.c). */
int sigtimedwait(const sigset_t *set, siginfo_t *info, const struct timespec *timeout)
{
    sigset_t s = *set;
    struct timespec t = timeout ? *timeout : (struct timespec){ 0, 0 };
    siginfo_t i;
    uint64_t was = cb_psig_waiting(&s);
    int r = REAL(sigtimedwait)(&s, info ? &i : NULL, timeout ? &t : NULL);
    int e = errno;
    cb_psig_restore(was);
    if (r > 0 && info)
        *info = i;
    errno = e;
    return r;
}

int sigwaitinfo(const sigset_t *set, siginfo_t *info) { return sigtimedwait(set, info, NULL); }

/* glibc's calls its own sigtimedwait, past the shim's */
int sigwait(const sigset_t *restrict set, int *restrict sig)
{
    int r;
    do
        r = sigtimedwait(set, NULL, NULL);
    while (r < 0 && errno == EINTR);
    if (r < 0)
        return errno;
    *sig = r;
    return 0;
}

/* sigaltstack: an application thread's alternate signal stack in the
 * kernel stays the runtime's, private to its node (libcables/src/stack.c),
 * and the program's is kept here, given back as the kernel would (its
 * handlers with SA_ONSTACK run on the runtime's, 64 KiB).  Before, a
 * program's stack in shared memory (a global, a heap block) became the
 * kernel's: a fault's signal frame went there, and on a page its node did
 * not hold the kernel could not write it: the node died of SIGSEGV. */
#ifndef SS_AUTODISARM
#define SS_AUTODISARM (1U << 31) /* (Linux's; not in every libc's headers) */
#endif
static __thread stack_t prog_alt = { .ss_flags = SS_DISABLE };

EARLY_FN int sigaltstack(const stack_t *restrict ss, stack_t *restrict old)
{
    if (!cb_app_thread || !cb_alt_ours)
        return EARLY(sigaltstack)(ss, old);
    stack_t k, n = { .ss_flags = SS_DISABLE };
    if (syscall(SYS_sigaltstack, NULL, &k))
        return -1;
    /* on the program's stack, as the kernel would say: a handler runs on
     * the runtime's, and the program has one (not disarmed as it runs) */
    bool on = k.ss_flags & SS_ONSTACK && !(prog_alt.ss_flags & (SS_DISABLE | (int)SS_AUTODISARM));
    if (ss) {
        if (on)
            return errno = EPERM, -1;
        n = *ss;
        int mode = n.ss_flags & ~(int)SS_AUTODISARM;
        if (mode != 0 && mode != SS_ONSTACK && mode != SS_DISABLE)
            return errno = EINVAL, -1;
        if (mode == SS_DISABLE)
            n = (stack_t){ .ss_flags = SS_DISABLE };
        else if (n.ss_size < (size_t)MINSIGSTKSZ)
            return errno = ENOMEM, -1;
        else
            n.ss_flags &= (int)SS_AUTODISARM; /* SS_ONSTACK: 0, as the kernel takes it */
    }
    if (old) {
        stack_t o = prog_alt;
        if (on)
            o.ss_flags |= SS_ONSTACK;
        *old = o;
    }
    if (ss)
        prog_alt = n;
    return 0;
}

bool shim_mask_enter(const sigset_t *mask, sigset_t *was)
{
    sigset_t pend;
    bool handled = false;
    if (REAL(sigpending)(&pend) == 0) /* the node's (not those the master keeps) */
        for (int sig = 1; sig < NSIG && !handled; sig++) {
            struct sigaction a;
            if (sigismember(&pend, sig) != 1 || sigismember(mask, sig) == 1 ||
                REAL(sigaction)(sig, NULL, &a))
                continue;
            handled = cb_sig_is_handler(&a);
        }
    cb_sigmask(SIG_SETMASK, mask, was); /* runs those handlers */
    return handled;
}

/* ---- the old interfaces (System V's and BSD's) ----
 * glibc's make their sigaction and sigprocmask inside libc, past the
 * shim's: a handler installed by sigset or ssignal stayed on its node (a
 * thread of another node that got the signal met the default action),
 * sigignore and siginterrupt likewise, and a mask set by sighold or
 * sigblock went to the kernel as it was (SIGSEGV blocked there: the
 * thread's next fault on a shared page killed the process; the signals
 * sent to the process not followed, psig.c).  Here each is made of the
 * shim's sigaction and sigprocmask, as glibc makes it of its own. */

sighandler_t ssignal(int sig, sighandler_t h) { return signal(sig, h); }

static int one_mask(int how, int sig, sigset_t *old)
{
    sigset_t s;
    sigemptyset(&s);
    return sigaddset(&s, sig) < 0 ? -1 : sigprocmask(how, &s, old);
}

int sighold(int sig) { return one_mask(SIG_BLOCK, sig, NULL); }
int sigrelse(int sig) { return one_mask(SIG_UNBLOCK, sig, NULL); }

int sigignore(int sig)
{
    struct sigaction a;
    memset(&a, 0, sizeof a);
    a.sa_handler = SIG_IGN;
    sigemptyset(&a.sa_mask);
    return sigaction(sig, &a, NULL);
}

sighandler_t sigset(int sig, sighandler_t h)
{
    sigset_t old;
    struct sigaction a, was;
    if (h == SIG_HOLD) {
        if (one_mask(SIG_BLOCK, sig, &old) || sigaction(sig, NULL, &was))
            return SIG_ERR;
        return sigismember(&old, sig) == 1 ? SIG_HOLD : was.sa_handler;
    }
    memset(&a, 0, sizeof a);
    a.sa_handler = h;
    sigemptyset(&a.sa_mask);
    if (sigaction(sig, &a, &was) || one_mask(SIG_UNBLOCK, sig, &old))
        return SIG_ERR;
    return sigismember(&old, sig) == 1 ? SIG_HOLD : was.sa_handler;
}

int siginterrupt(int sig, int interrupt)
{
    struct sigaction a;
    if (sigaction(sig, NULL, &a))
        return -1;
    uint64_t bit = sig >= 1 && sig <= 64 ? 1ull << (sig - 1) : 0;
    if (interrupt) {
        atomic_fetch_or(&sigintr, bit);
        a.sa_flags &= ~SA_RESTART;
    } else {
        atomic_fetch_and(&sigintr, ~bit);
        a.sa_flags |= SA_RESTART;
    }
    return sigaction(sig, &a, NULL);
}

/* BSD's masks: signals 1-32 as the bits of an int */
static void from_bits(int bits, sigset_t *s)
{
    sigemptyset(s);
    for (int sig = 1; sig <= 32; sig++)
        if ((unsigned)bits >> (sig - 1) & 1)
            sigaddset(s, sig);
}

static int to_bits(const sigset_t *s)
{
    unsigned bits = 0;
    for (int sig = 1; sig <= 32; sig++)
        if (sigismember(s, sig) == 1)
            bits |= 1u << (sig - 1);
    return (int)bits;
}

static int bsd_mask(int how, int bits)
{
    sigset_t s, old;
    from_bits(bits, &s);
    return sigprocmask(how, &s, &old) ? -1 : to_bits(&old);
}

int sigblock(int bits) { return bsd_mask(SIG_BLOCK, bits); }
int sigsetmask(int bits) { return bsd_mask(SIG_SETMASK, bits); }
int siggetmask(void) { return bsd_mask(SIG_BLOCK, 0); }

/* sigpause: is_sig, X/Open's (the mask less sig); else BSD's (bits) */
int __sigpause(int sig_or_bits, int is_sig);
int __sigpause(int sig_or_bits, int is_sig)
{
    sigset_t m;
    if (!is_sig)
        from_bits(sig_or_bits, &m);
    else if (sigprocmask(SIG_BLOCK, NULL, &m) || sigdelset(&m, sig_or_bits) < 0)
        return -1;
    return sigsuspend(&m);
}

int __xpg_sigpause(int sig);
int __xpg_sigpause(int sig) { return __sigpause(sig, 1); }
int bsd_sigpause(int bits) __asm__("sigpause"); /* (<signal.h> names X/Open's so) */
int bsd_sigpause(int bits) { return __sigpause(bits, 0); }
