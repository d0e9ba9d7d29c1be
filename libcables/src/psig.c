/* psig.c: signals sent to the process.  A relinked program's process is
 * every node process, but kill(pid), sigqueue, alarm, a timer or a
 * terminal sends a signal to one of them: where no application thread of
 * that node process took it (each blocked it, none waited for it), it
 * stayed pending there for ever, though a thread on another node waited
 * for it (the usual thread that sigwaits for SIGTERM and SIGHUP while
 * every other thread blocks them).
 *
 * Each node counts which signals its application threads take: those
 * their masks let in, those they wait for (sigwait and its kin), and a
 * temporary mask's (sigsuspend, ppoll, pselect, epoll_pwait) while it is in
 * force; a signalfd the program made takes its signals for good.  The
 * communication thread reads, from a signalfd of its own, only the signals
 * no thread here takes, so the kernel alone delivers the others, as it did
 * before.  A signal read goes to the master (M_SIGNAL S_PARK), which
 * sends it to its own process again (rt_sigqueueinfo) if a thread there
 * takes it and none of its number waits before it, else keeps it pending
 * (a standard signal once, a real-time one queued in order), and every
 * node learns which signals it keeps (S_PARKED): a node whose thread takes
 * one asks for it (S_WANT) and gets every one kept of its number, in order
 * (S_OFFER), which it sends to its own process again, whose kernel gives
 * each to a thread that takes it (one taken no more goes back to the
 * master).  Real-time signals of one number keep their order, but for a
 * race: with some pending on a node, a thread there that stops taking them
 * and takes them again may get a later one while the communication thread
 * sends an earlier one to the master.
 * sigpending reports the kept ones too.
 *
 * Forwarded: the signals a program directs at its process (hang-up,
 * interrupt, quit, terminate, alarm, the user and real-time signals, I/O,
 * window changes...).  Not: a thread's own faults, SIGABRT, job control,
 * SIGCHLD (a node process's children are its own), the profiling timers
 * (each node's CPU time) and glibc's internal signals.  The signal
 * delivered keeps its number, sender, value and timer; a code no thread
 * may fake (SI_USER from kill, the kernel's own) arrives as SI_QUEUE.
 *
 * The counts are atomics and the signalfd's mask is set again by the
 * thread that changes them (both async-signal-safe: a handler may change
 * its thread's mask); only the communication thread reads the signalfd,
 * sends and keeps.  Not followed: a mask the kernel puts back as a handler
 * returns (a handler that changed its thread's mask leaves the count at
 * its change), and the masks of calls past the shim (epoll_pwait2,
 * sigpause, setcontext).  A run of one node (none attached later) forwards
 * nothing. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

enum { S_OFFER, S_PARK, S_WANT, S_PARKED };

#define BIT(s) (1ull << ((s) - 1))
#define KEPT_MAX 4096 /* real-time signals the master keeps at most */

static bool active;
static uint64_t fwd; /* the signals forwarded */
static int sfd = -1; /* the communication thread's signalfd */

/* an application thread's: the signals of fwd it takes now (its kernel
 * id: a child of fork or vfork, whose memory this is too, counts none) */
static __thread _Atomic uint64_t my_accept CB_TLS;
static __thread pid_t my_tid CB_TLS;
static _Atomic int count[64];        /* threads here taking signal b + 1 */
static _Atomic uint64_t sticky;      /* the program's signalfds' signals */
static _Atomic uint32_t gen;         /* changes of the counts */
static _Atomic bool poke;            /* for the comm thread: read, then ask */
static _Atomic uint64_t parked_mask; /* the signals the master keeps, as last heard */

/* master, comm thread: the signals kept, oldest first */
typedef struct kept {
    struct kept *next;
    siginfo_t si;
} kept_t;
static kept_t *kept_head;
static int kept_n;
static uint64_t kept_sent; /* the mask last sent to the nodes */

static uint64_t taken_here(void)
{
    uint64_t m = atomic_load(&sticky);
    for (int b = 0; b < 64; b++)
        if (atomic_load(&count[b]) > 0)
            m |= 1ull << b;
    return m;
}

/* the comm thread's signalfd reads what no thread here takes; set again
 * until no count changed meanwhile (a later change's mask is the last) */
static void sfd_update(void)
{
    for (;;) {
        uint32_t g = atomic_load(&gen);
        uint64_t u = fwd & ~taken_here();
        if (syscall(SYS_signalfd4, sfd, &u, sizeof u, 0) < 0)
            cb_die("node %d: cannot set the signals the runtime forwards: %s", cb.self,
                   strerror(errno));
        if (atomic_load(&gen) == g)
            break;
    }
    /* a signal left pending here by a thread that stopped taking it */
    atomic_store(&poke, true);
    cb_comm_kick();
}

static bool counted(void) { return my_tid && my_tid == gettid(); }

static void set_accept(uint64_t now)
{
    if (!counted())
        return;
    now &= fwd;
    uint64_t was = atomic_exchange(&my_accept, now), d = was ^ now;
    if (!d)
        return;
    bool edge = false;
    for (int b = 0; b < 64; b++)
        if (d >> b & 1) {
            if (now >> b & 1)
                edge |= atomic_fetch_add(&count[b], 1) == 0;
            else
                edge |= atomic_fetch_sub(&count[b], 1) == 1;
        }
    if (edge) {
        atomic_fetch_add(&gen, 1);
        sfd_update();
    }
    if (now & ~was & atomic_load(&parked_mask)) { /* the master keeps one: ask */
        atomic_store(&poke, true);
        cb_comm_kick();
    }
}

static uint64_t mask_bits(const sigset_t *m)
{
    uint64_t b;
    memcpy(&b, m, sizeof b); /* signals 1 to 64, as the kernel's */
    return b;
}

void cb_psig_mask(int how, const sigset_t *set, const sigset_t *old)
{
    if (!active)
        return;
    uint64_t s = mask_bits(set), o = mask_bits(old);
    set_accept(~(how == SIG_BLOCK ? o | s : how == SIG_UNBLOCK ? o & ~s : s));
}

uint64_t cb_psig_during(const sigset_t *mask)
{
    if (!active || !counted())
        return 0;
    uint64_t was = atomic_load(&my_accept);
    set_accept(~mask_bits(mask));
    return was;
}

uint64_t cb_psig_waiting(const sigset_t *set)
{
    if (!active || !counted())
        return 0;
    uint64_t was = atomic_load(&my_accept);
    set_accept(was | mask_bits(set));
    return was;
}

void cb_psig_restore(uint64_t was)
{
    if (active)
        set_accept(was);
}

void cb_psig_signalfd(const sigset_t *mask)
{
    if (!active || cb.forked || !(mask_bits(mask) & fwd & ~atomic_load(&sticky)))
        return; /* (a child of vfork: the signalfd is the child's) */
    atomic_fetch_or(&sticky, mask_bits(mask) & fwd);
    atomic_fetch_add(&gen, 1);
    sfd_update();
}

/* (sigpending's, which a sanitizer's start may call: not instrumented) */
__attribute__((no_sanitize("address", "undefined"))) uint64_t cb_psig_parked(void)
{
    return active && !cb.forked ? atomic_load(&parked_mask) : 0;
}

void cb_psig_thread_start(void)
{
    if (!active)
        return;
    atomic_store(&my_accept, 0);
    my_tid = gettid();
    uint64_t cur;
    if (syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &cur, sizeof cur) == 0)
        set_accept(~cur);
}

void cb_psig_thread_end(void)
{
    set_accept(0);
    my_tid = 0;
}

/* ---- the communication thread's ---- */

/* A thread here takes it: sent to this process, whose thread that takes
 * it when it comes gets it from the kernel (none left: the signalfd,
 * whose mask then has it, reads it again).  At the kernel's limit of
 * queued signals it is dropped, as a sender's sigqueue would fail. */
static bool deliver_here(const siginfo_t *si)
{
    int s = si->si_signo;
    if (!(taken_here() & BIT(s)))
        return false;
    if (syscall(SYS_rt_sigqueueinfo, cb_pid(), s, si) && errno == EAGAIN) {
        static bool said;
        if (!said)
            fprintf(stderr, "cables: node %d: signal %d sent to the process is dropped: the "
                    "limit of queued signals is reached (RLIMIT_SIGPENDING)\n", cb.self, s);
        said = true;
    }
    return true;
}

static void park(const siginfo_t *si);

/* no thread here takes it: to the master, in the order read (one
 * node's messages to another arrive in order) */
static void to_master(const siginfo_t *si)
{
    if (cb.self == 0) {
        park(si);
    } else {
        cb_msg_t m = { .type = M_SIGNAL, .a = S_PARK };
        cb_send(0, &m, si, sizeof *si, false);
    }
}

/* this node's threads take signals the master keeps: ask for each */
static void want_check(void)
{
    uint64_t w = atomic_load(&parked_mask) & taken_here();
    for (int s = 1; s <= 64; s++)
        if (w & BIT(s)) {
            cb_msg_t m = { .type = M_SIGNAL, .a = S_WANT, .b = (uint64_t)s };
            cb_send(0, &m, NULL, 0, false);
        }
}

/* master: the mask of the signals kept, to every node up if it changed */
static void kept_changed(void)
{
    uint64_t m = 0;
    for (kept_t *k = kept_head; k; k = k->next)
        m |= BIT(k->si.si_signo);
    atomic_store(&parked_mask, m);
    if (m == kept_sent)
        return;
    kept_sent = m;
    int n = atomic_load(&cb.nnodes);
    for (int k = 1; k < n; k++)
        if (cb_node_up(k)) {
            cb_msg_t p = { .type = M_SIGNAL, .a = S_PARKED, .b = m };
            cb_send(k, &p, NULL, 0, false);
        }
    want_check();
}

/* master: a thread here takes it, unless earlier ones of its number are
 * kept (they go first); else kept, and the nodes told */
static void park(const siginfo_t *si)
{
    int s = si->si_signo;
    bool earlier = false;
    for (kept_t *k = kept_head; k && !earlier; k = k->next)
        earlier = k->si.si_signo == s;
    if (earlier && s < SIGRTMIN)
        return; /* a standard signal pending already: one */
    if (!earlier && deliver_here(si))
        return;
    if (kept_n >= KEPT_MAX) {
        static bool said;
        if (!said)
            fprintf(stderr, "cables: %d signals sent to the process are pending with no thread "
                    "taking them; signal %d and those after it are dropped\n", kept_n, s);
        said = true;
        return;
    }
    kept_t *k = malloc(sizeof *k), **p = &kept_head;
    if (!k)
        cb_die("node 0: out of memory keeping a signal");
    k->si = *si;
    k->next = NULL;
    while (*p)
        p = &(*p)->next;
    *p = k;
    kept_n++;
    kept_changed();
}

/* master: node src has a thread taking s: those kept offered there, in
 * their order (none: taken meanwhile) */
static void on_want(int src, int s)
{
    kept_t *mine = NULL, **tail = &mine;
    for (kept_t **p = &kept_head; *p;)
        if ((*p)->si.si_signo == s) {
            *tail = *p;
            *p = (*p)->next;
            tail = &(*tail)->next;
            *tail = NULL;
            kept_n--;
        } else {
            p = &(*p)->next;
        }
    if (!mine)
        return;
    kept_changed();
    while (mine) {
        kept_t *k = mine;
        mine = k->next;
        if (src == 0) {
            park(&k->si);
        } else {
            cb_msg_t m = { .type = M_SIGNAL, .a = S_OFFER };
            cb_send(src, &m, &k->si, sizeof k->si, false);
        }
        free(k);
    }
}

/* what the program's thread gets: the signalfd's record as a siginfo */
static void from_fd(const struct signalfd_siginfo *f, siginfo_t *si)
{
    memset(si, 0, sizeof *si);
    si->si_signo = (int)f->ssi_signo;
    si->si_errno = f->ssi_errno;
    si->si_code = f->ssi_code;
    if (si->si_code == SI_TIMER) { /* _timer: the same offsets as _rt */
        si->si_pid = (pid_t)f->ssi_tid;
        si->si_uid = f->ssi_overrun;
    } else {
        /* sent by this node's thread: by the program, whose pid is the
         * master's (pthread_shim/src/process.c) */
        si->si_pid = (pid_t)f->ssi_pid == cb_pid() ? cb_program_pid() : (pid_t)f->ssi_pid;
        si->si_uid = f->ssi_uid;
    }
    si->si_value.sival_ptr = (void *)(uintptr_t)f->ssi_ptr;
    if (si->si_code >= 0 || si->si_code == SI_TKILL)
        si->si_code = SI_QUEUE; /* another thread may not send those */
}

static void read_signals(void)
{
    struct signalfd_siginfo in[8];
    ssize_t r;
    while ((r = syscall(SYS_read, sfd, in, sizeof in)) > 0)
        for (size_t i = 0; i < (size_t)r / sizeof *in; i++) {
            if (atomic_load(&cb.stopping))
                continue; /* the process ends */
            siginfo_t si;
            from_fd(&in[i], &si);
            to_master(&si);
        }
}

bool cb_psig_poked(void) { return active && atomic_load(&poke); }

void cb_psig_tick(bool readable)
{
    if (!active || !(readable || atomic_exchange(&poke, false)))
        return;
    read_signals();
    want_check();
}

void cb_on_signal(const cb_msg_t *m, const void *p, size_t len)
{
    bool info = m->a == S_OFFER || m->a == S_PARK;
    if (!active || (info ? len != sizeof(siginfo_t) : len != 0) || m->a > S_PARKED)
        cb_die("node %d: malformed signal message (kind %d, %zu bytes) from node %d", cb.self,
               (int)m->a, len, m->src);
    siginfo_t si;
    if (info)
        memcpy(&si, p, sizeof si); /* aligned */
    switch (m->a) {
    case S_OFFER: /* asked for (S_WANT): kept again if taken no more */
        if (!deliver_here(&si))
            to_master(&si);
        break;
    case S_PARK: park(&si); break;
    case S_WANT: on_want(m->src, (int)m->b); break;
    case S_PARKED:
        atomic_store(&parked_mask, m->b);
        want_check();
        break;
    }
}

/* master, comm thread: a node attached later learns what is kept */
void cb_psig_replay(int k)
{
    if (!active || !kept_sent)
        return;
    cb_msg_t p = { .type = M_SIGNAL, .a = S_PARKED, .b = kept_sent };
    cb_send(k, &p, NULL, 0, false);
}

int cb_psig_init(void)
{
    if (!cb.multi || (cb.launched <= 1 && cb.cfg.max_nodes <= 1))
        return -1;
    static const int out[] = { SIGSEGV, SIGBUS,  SIGFPE,  SIGILL,  SIGTRAP, SIGSYS,
                               SIGABRT, SIGKILL, SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU,
                               SIGCONT, SIGCHLD, SIGPROF, SIGVTALRM };
    fwd = ~0ull;
    for (size_t i = 0; i < sizeof out / sizeof *out; i++)
        fwd &= ~BIT(out[i]);
    for (int s = 32; s < SIGRTMIN; s++) /* glibc's own */
        fwd &= ~BIT(s);
    if (cb_rsig)
        fwd &= ~BIT(cb_rsig); /* the runtime's (rsys.c) */
    uint64_t none = 0;
    sfd = (int)syscall(SYS_signalfd4, -1, &none, sizeof none, SFD_NONBLOCK | SFD_CLOEXEC);
    if (sfd < 0)
        cb_die("node %d: cannot make a signalfd for the signals sent to the process: %s",
               cb.self, strerror(errno));
    active = true;
    sfd_update();
    return sfd;
}

/* a node's main thread serves until the end: a signal no program thread
 * here takes goes to a node whose thread takes it, not to it */
void cb_psig_serving(void)
{
    if (active)
        syscall(SYS_rt_sigprocmask, SIG_BLOCK, &fwd, NULL, sizeof fwd);
}

/* The launcher (tools/cables-run) gives the signals a terminal or a user
 * sends it (interrupt, quit, terminate, hang-up) to the master's process,
 * from which they reach the thread that takes them as above; mpirun, which
 * would have ended every node process with SIGTERM, has them blocked.  The
 * master says where it is in the file CABLES_RUN_INFO names: its process
 * id, the machine's boot id and its pid namespace, so the launcher signals
 * it only where that id is the master's.  O_EXCL: a relinked program
 * the program starts (which inherits the variable) does not take its
 * place. */
void cb_psig_announce(void)
{
    const char *path = getenv("CABLES_RUN_INFO");
    if (cb.self != 0 || !path || !*path || !getenv("OMPI_COMM_WORLD_SIZE"))
        return;
    char line[160];
    struct stat st;
    if (!cb_boot_id()[0] || stat("/proc/self/ns/pid", &st))
        return;
    int len = snprintf(line, sizeof line, "%d %s %llu\n", (int)cb_pid(), cb_boot_id(),
                       (unsigned long long)st.st_ino);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return; /* no such directory: the launcher runs on another machine */
    if (write(fd, line, (size_t)len) != len)
        fprintf(stderr, "cables: node 0: cannot write %s: %s (signals sent to cables-run end the run)\n", path,
                strerror(errno));
    close(fd);
}
