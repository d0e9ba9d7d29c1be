/* signals.c: signal dispositions.  A process's dispositions are shared by
 * all its threads, and a relinked program's process is every node process:
 * an application thread's sigaction (signal, bsd_signal, sysv_signal) is
 * made here, then at the master and on every other node, one change at a
 * time (libcables/src/proc.c), so that a thread on
 * another node that gets the signal (pthread_kill, a timer, the kernel)
 * runs the handler main installed.  Handlers are addresses in the program,
 * the same in every node process (the runtime runs them all without
 * address randomization: libcables/src/start.c).  SIGSEGV and SIGBUS stay
 * each node's own (SIGSEGV drives the fault path, which hands faults that
 * are not its own to the handler that was there before it). */
#include <signal.h>
#include <string.h>

#include "shim.h"

int sigaction(int sig, const struct sigaction *restrict act, struct sigaction *restrict old)
{
    int rc = REAL(sigaction)(sig, act, old);
    if (rc == 0 && act && cb_app_thread && cb.multi && sig != SIGSEGV && sig != SIGBUS) {
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

sighandler_t signal(int sig, sighandler_t h) { return set_handler(sig, h, SA_RESTART, true); }
sighandler_t bsd_signal(int sig, sighandler_t h) { return set_handler(sig, h, SA_RESTART, true); }
sighandler_t sysv_signal(int sig, sighandler_t h)
{
    return set_handler(sig, h, (int)(SA_RESETHAND | SA_NODEFER), false);
}
sighandler_t __sysv_signal(int sig, sighandler_t h); /* signal() under strict X/Open */
sighandler_t __sysv_signal(int sig, sighandler_t h) { return sysv_signal(sig, h); }
