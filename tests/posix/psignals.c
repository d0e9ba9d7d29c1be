/* psignals: a signal sent to the process reaches the thread that takes it,
 * wherever it runs.  Main blocks SIGUSR1, SIGUSR2, SIGHUP, SIGTERM,
 * SIGWINCH and SIGRTMIN before it starts two threads, which inherit that
 * mask (on libcables, on other nodes than main: each node is a process of
 * its own, and kill(getpid()) names the caller's):
 *   - W waits with sigtimedwait, sigwaitinfo and sigwait, on sets and
 *     records that are globals main wrote (shared pages its node never
 *     held): SIGUSR1 from main's kill (its sender main); SIGUSR2, sent
 *     before W waited for it (pending for the process: main's sigpending
 *     shows it); SIGRTMIN from sigqueue with its value; three SIGRTMIN + 1,
 *     sent before, each once with its value; a bounded wait
 *     for nothing ends with EAGAIN; SIGWINCH through a signalfd it made;
 *     SIGTERM last, from main.
 *   - H takes SIGHUP while it waits in ppoll, then sigsuspend, with masks
 *     that let it in: one sent by W (to W's node process) and one by main,
 *     each running the handler main installed on H's thread.
 * Before, on libcables, W's waits failed with EFAULT, and a signal sent to
 * a node process where no thread took it stayed there.  RESULT ok=1
 * checks=N (check.h). */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "check.h"

static sigset_t blocked, w_first, w_second, w_rt1, w_none, w_term, winch, hup_in;
static siginfo_t got;
static struct timespec bound = { WAIT_MS / 1000, 0 }, brief = { 0, 200000000 };
static pid_t main_pid;
static struct gate g = GATE_INITIALIZER; /* W's steps, main's answers */
static struct gate gh = GATE_INITIALIZER; /* the hang-ups H took */
static __thread volatile sig_atomic_t hups_here;

static void on_hup(int sig)
{
    if (sig == SIGHUP)
        hups_here++;
}

/* W's alternate signal stack: a global its node never held (on
 * libcables, before: the kernel wrote a fault's signal frame there, could
 * not, and W's node died) */
static char alt_mem[64 * 1024];

static void *w_main(void *arg)
{
    (void)arg;
    stack_t ss = { .ss_sp = alt_mem, .ss_size = sizeof alt_mem }, o;
    CHECK_EQ("sigaltstack", sigaltstack(&ss, NULL), 0);
    CHECK_EQ("sigaltstack_query", sigaltstack(NULL, &o), 0);
    CHECK("sigaltstack_is", o.ss_sp == alt_mem && o.ss_size == sizeof alt_mem && o.ss_flags == 0);
    gate_set(&g, 1);
    CHECK_EQ("usr1", sigtimedwait(&w_first, &got, &bound), SIGUSR1);
    CHECK_EQ("usr1_sender", got.si_pid, main_pid);
    CHECK_EQ("usr2_kept", sigwaitinfo(&w_second, &got), SIGUSR2);
    gate_set(&g, 2);
    CHECK_EQ("rtmin", sigtimedwait(&w_second, &got, &bound), SIGRTMIN);
    CHECK_EQ("rtmin_code", got.si_code, SI_QUEUE);
    CHECK_EQ("rtmin_value", got.si_value.sival_int, 42);
    CHECK_EQ("rtmin_sender", got.si_pid, main_pid);
    int seen = 0; /* queued: each once (libcables may change their order: psig.c) */
    for (int i = 1; i <= 3; i++) {
        CHECK_EQ("rtmin1", sigtimedwait(&w_rt1, &got, &bound), SIGRTMIN + 1);
        int v = got.si_value.sival_int;
        CHECK("rtmin1_value", v >= 1 && v <= 3 && !(seen & 1 << v));
        seen |= 1 << (v & 7);
    }
    errno = 0;
    CHECK_EQ("nothing", sigtimedwait(&w_none, NULL, &brief), -1);
    CHECK_ERR("nothing_errno", errno, EAGAIN);
    int fd = signalfd(-1, &winch, SFD_NONBLOCK | SFD_CLOEXEC);
    CHECK("signalfd", fd >= 0);
    gate_set(&g, 3);
    struct pollfd p = { .fd = fd, .events = POLLIN };
    CHECK_EQ("winch_poll", poll(&p, 1, WAIT_MS), 1);
    struct signalfd_siginfo si;
    CHECK_EQ("winch_read", read(fd, &si, sizeof si), (long)sizeof si);
    CHECK_EQ("winch", si.ssi_signo, SIGWINCH);
    close(fd);
    CHECK_EQ("hup_from_w", kill(getpid(), SIGHUP), 0);
    CHECK("hup_from_w_taken", gate_wait(&gh, 1));
    gate_set(&g, 4);
    int sig = 0;
    CHECK_EQ("sigwait", sigwait(&w_term, &sig), 0);
    CHECK_EQ("term", sig, SIGTERM);
    return NULL;
}

static void *h_main(void *arg)
{
    (void)arg;
    errno = 0;
    CHECK_EQ("ppoll_hup", ppoll(NULL, 0, &bound, &hup_in), -1);
    CHECK_ERR("ppoll_hup_errno", errno, EINTR);
    CHECK_EQ("ppoll_handler", hups_here, 1);
    gate_set(&gh, 1);
    errno = 0;
    CHECK_EQ("sigsuspend_hup", sigsuspend(&hup_in), -1);
    CHECK_ERR("sigsuspend_hup_errno", errno, EINTR);
    CHECK_EQ("sigsuspend_handler", hups_here, 2);
    gate_set(&gh, 2);
    return NULL;
}

static int pending(int sig)
{
    sigset_t p;
    return sigpending(&p) == 0 && sigismember(&p, sig) == 1;
}

int main(void)
{
    check_start();
    main_pid = getpid();
    int sigs[] = { SIGUSR1, SIGUSR2, SIGHUP, SIGTERM, SIGWINCH, SIGRTMIN, SIGRTMIN + 1 };
    sigemptyset(&blocked);
    for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++)
        sigaddset(&blocked, sigs[i]);
    sigemptyset(&w_first);
    sigaddset(&w_first, SIGUSR1);
    sigemptyset(&w_second);
    sigaddset(&w_second, SIGUSR2);
    sigaddset(&w_second, SIGRTMIN);
    sigemptyset(&w_rt1);
    sigaddset(&w_rt1, SIGRTMIN + 1);
    sigemptyset(&w_none);
    sigaddset(&w_none, SIGUSR2);
    sigemptyset(&w_term);
    sigaddset(&w_term, SIGTERM);
    sigemptyset(&winch);
    sigaddset(&winch, SIGWINCH);
    hup_in = blocked;
    sigdelset(&hup_in, SIGHUP);
    struct sigaction sa = { .sa_handler = on_hup };
    sigemptyset(&sa.sa_mask);
    CHECK_EQ("sigaction", sigaction(SIGHUP, &sa, NULL), 0);
    CHECK_EQ("block", pthread_sigmask(SIG_BLOCK, &blocked, NULL), 0);

    pthread_t w, h;
    CHECK_EQ("create_w", pthread_create(&w, NULL, w_main, NULL), 0);
    CHECK_EQ("create_h", pthread_create(&h, NULL, h_main, NULL), 0);
    CHECK("w_started", gate_wait(&g, 1));

    /* no thread takes SIGUSR2 yet: pending for the process */
    CHECK_EQ("kill_usr2", kill(getpid(), SIGUSR2), 0);
    double end = check_now_ms(CLOCK_MONOTONIC) + WAIT_MS;
    int seen;
    while (!(seen = pending(SIGUSR2)) && check_now_ms(CLOCK_MONOTONIC) < end)
        usleep(1000);
    CHECK("usr2_pending", seen);
    CHECK_EQ("kill_usr1", kill(getpid(), SIGUSR1), 0);
    CHECK("w_took_usr2", gate_wait(&g, 2));
    CHECK("usr2_taken", !pending(SIGUSR2));
    for (int i = 1; i <= 3; i++) /* no thread takes it yet: three queued */
        CHECK_EQ("sigqueue_rtmin1", sigqueue(getpid(), SIGRTMIN + 1, (union sigval){ .sival_int = i }), 0);
    end = check_now_ms(CLOCK_MONOTONIC) + WAIT_MS;
    while (!(seen = pending(SIGRTMIN + 1)) && check_now_ms(CLOCK_MONOTONIC) < end)
        usleep(1000);
    CHECK("rtmin1_pending", seen);
    CHECK_EQ("sigqueue", sigqueue(getpid(), SIGRTMIN, (union sigval){ .sival_int = 42 }), 0);
    CHECK("w_signalfd", gate_wait(&g, 3));
    CHECK_EQ("kill_winch", kill(getpid(), SIGWINCH), 0);
    CHECK("w_hup_sent", gate_wait(&g, 4));
    CHECK_EQ("kill_hup", kill(getpid(), SIGHUP), 0);
    CHECK("h_took_two", gate_wait(&gh, 2));
    CHECK_EQ("kill_term", kill(getpid(), SIGTERM), 0);
    CHECK_EQ("join_w", pthread_join(w, NULL), 0);
    CHECK_EQ("join_h", pthread_join(h, NULL), 0);
    return check_finish();
}
