/* fault.c: the fault path.  A SIGSEGV in the application view becomes a
 * protocol event of the page state machine.  It takes no lock that the
 * interrupted code may hold (no malloc, no stdio): it owns the page through
 * its state word, hands remote work to the communication thread and sleeps
 * until that is done.  Other threads faulting on the same page sleep on the
 * same word: one fetch serves them all. */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "internal.h"

static struct sigaction app_segv; /* what the application (or libc) had */

/* Fetch page p into the protocol view.  With the home unknown (-1) the
 * request goes through the master's directory, which names (or, on first
 * touch, chooses) the home and has it answer: one round trip, not two.
 * Returns the home, -1 if the page is not allocated, or FETCH_RETRY if the
 * page is moving to this node (the caller lets the move land, then
 * faults again). */
enum { FETCH_RETRY = -2 };
static int fetch(uint64_t p, int home)
{
    uint64_t t0 = cb_now_ns();
    if (atomic_load(&cb.comm_down))
        cb_die("node %d: shared page %llu accessed after the node left the cluster (at exit, "
               "after the runtime stopped); its data cannot be fetched", cb.self,
               (unsigned long long)p);
    for (;;) {
        cb_waiter_t w = { .dst = cb_proto_page(p) };
        cb_msg_t m = { .type = M_FETCH, .a = p, .b = home < 0 ? FETCH_VIA_DIR : 0 };
        cb_call(home < 0 ? 0 : home, &m, NULL, 0, &w);
        if (home < 0)
            STAT_ADD(dir_lookups, 1);
        if (w.value == PAGE_UNALLOCATED)
            return -1;
        home = (int)w.value2;
        if (home == cb.self && w.value == PAGE_MOVED)
            return FETCH_RETRY; /* the page is on its way here: only its arrival makes us home */
        cb_home_set(p, home);
        if (w.value == PAGE_YOURS) {
            STAT_ADD(homes_owned, 1);
            return home;
        }
        if (w.value == PAGE_DATA)
            break;
        /* PAGE_MOVED: follow the home */
    }
    STAT_ADD(pages_fetched, 1);
    STAT_ADD(fetch_ns, cb_now_ns() - t0);
    return home;
}

int cb_fault(uint64_t p, bool write)
{
    uint32_t s = cb_page_own(p);
    int home = cb_home_cached(p);
    bool fetched = false;
    if (home < 0 && (s & PG_ACC) == PG_NONE) {
        home = fetch(p, -1);
        fetched = home >= 0 && home != cb.self;
    }
    bool is_home = home == cb.self;
    cb_page_step_t st = cb_page_next(s, is_home, write ? EV_WRITE_FAULT : EV_READ_FAULT);
    if (home >= 0 && st.act & ACT_FETCH && !fetched)
        home = fetch(p, home);
    if (home == FETCH_RETRY) {
        cb_page_unown(p, s); /* the move waits for this page: let it in */
        struct timespec ts = { 0, 100000 };
        for (int i = 0; i < 100000 && cb_home_cached(p) != cb.self; i++)
            /* not owning the page meanwhile; the raw call, as libc's
             * nanosleep is a cancellation point: a pending cancellation
             * must not unwind the thread out of a fault */
            syscall(SYS_nanosleep, &ts, NULL);
        return 0; /* the access faults again */
    }
    if (home < 0) {
        cb_page_unown(p, s);
        return -1;
    }
    if (st.act & ACT_TWIN) {
        memcpy(cb.twins + p * cb.ps, cb_proto_page(p), cb.ps);
        STAT_ADD(twins, 1);
    }
    if (st.act & ACT_LIST)
        cb_dirty_push(p);
    if (st.act & ACT_PROTECT)
        cb_page_protect(p, 1, cb_page_prot(st.next));
    if (st.act) {
        if (write) STAT_ADD(write_faults, 1);
        else STAT_ADD(read_faults, 1);
        if (is_home) STAT_ADD(home_faults, 1);
    }
    cb_page_unown(p, st.next);
    return 0;
}

static void say(const char *s) { if (write(2, s, strlen(s)) < 0) {} }

static void on_segv(int sig, siginfo_t *si, void *ucv)
{
    uintptr_t a = (uintptr_t)si->si_addr;
    if (cb_in_gas(a) && si->si_code == SEGV_ACCERR) {
        int saved = errno;
        ucontext_t *uc = ucv;
        bool write = uc->uc_mcontext.gregs[REG_ERR] & 2;
        if (cb_fault(cb_page_of(a), write) == 0) {
            errno = saved;
            return;
        }
        say("cables: segmentation fault: access to unallocated shared memory\n");
    }
    /* not ours: what the program would have had without us */
    if (app_segv.sa_flags & SA_SIGINFO && app_segv.sa_sigaction) {
        app_segv.sa_sigaction(sig, si, ucv);
        return;
    }
    if (app_segv.sa_handler != SIG_DFL && app_segv.sa_handler != SIG_IGN) {
        app_segv.sa_handler(sig);
        return;
    }
    signal(SIGSEGV, SIG_DFL); /* returning re-executes the access and dies */
}

void cb_fault_init(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_NODEFER | SA_ONSTACK; /* stack.c */
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSEGV, &sa, &app_segv))
        cb_die("cannot install the SIGSEGV handler: %s", strerror(errno));
}
