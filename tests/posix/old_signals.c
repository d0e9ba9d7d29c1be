/* old_signals: the System V and BSD signal calls act for the whole
 * program, as natively.  Main installs handlers with sigset (SIGUSR1) and
 * ssignal (SIGUSR2), ignores SIGHUP with sigignore, and makes SIGURG's
 * handler, installed by signal after siginterrupt, interrupt calls; a
 * thread (on another node)
 * then:
 *   - raises each: the handlers run, SIGHUP is ignored, SIGURG's flags
 *     say no SA_RESTART;
 *   - holds SIGUSR1 with sighold (raised: pending, not handled), lets it
 *     in with sigrelse (handled); the same with sigblock and sigsetmask
 *     (SIGUSR2);
 *   - holds SIGSEGV with sighold and reads a page of main's it never
 *     held, then sigrelse;
 *   - waits in sigpause for the SIGUSR1 main sends it.
 * Before, the handlers stayed on main's node (the thread's raise ended
 * the process), and sighold's mask went to the kernel as it was (SIGSEGV
 * blocked: the thread's read of main's page killed the process).
 * RESULT ok=1 checks=N (check.h) */
#define _GNU_SOURCE /* (X/Open's sigset, sighold, sigpause...) */
#include "check.h"

#pragma GCC diagnostic ignored "-Wdeprecated-declarations" /* (old: the point) */

#define PAGES 64
#define USR2_BIT (1 << (SIGUSR2 - 1)) /* (BSD's sigmask) */

static volatile sig_atomic_t usr1, usr2, urg;
static void on_usr1(int sig) { (void)sig; usr1++; }
static void on_usr2(int sig) { (void)sig; usr2++; }
static void on_urg(int sig) { (void)sig; urg++; }

static struct gate paused = GATE_INITIALIZER;
static char *pages;

static void *thread(void *arg)
{
    (void)arg;
    raise(SIGUSR1);
    CHECK_EQ("sigset_handled", usr1, 1);
    raise(SIGUSR2);
    CHECK_EQ("ssignal_handled", usr2, 1);
    raise(SIGHUP);
    CHECK("sigignore_lived", 1);
    struct sigaction a;
    CHECK_ERR("urg_query", sigaction(SIGURG, NULL, &a), 0);
    CHECK("siginterrupt_flags", a.sa_handler == on_urg && !(a.sa_flags & SA_RESTART));
    raise(SIGURG);
    CHECK_EQ("urg_handled", urg, 1);

    CHECK_ERR("sighold", sighold(SIGUSR1), 0);
    raise(SIGUSR1);
    CHECK("sighold_pending", usr1 == 1 && check_pending(SIGUSR1));
    CHECK_ERR("sigrelse", sigrelse(SIGUSR1), 0);
    CHECK_EQ("sigrelse_handled", usr1, 2);

    int old = sigblock(USR2_BIT);
    CHECK("sigblock_old", old != -1 && !(old & USR2_BIT));
    CHECK("sigblock_reads", (sigblock(0) & USR2_BIT) != 0);
    raise(SIGUSR2);
    CHECK("sigblock_pending", usr2 == 1 && check_pending(SIGUSR2));
    sigsetmask(old);
    CHECK_EQ("sigsetmask_handled", usr2, 2);

    CHECK_ERR("sighold_segv", sighold(SIGSEGV), 0);
    long sum = 0;
    for (int i = 0; i < PAGES; i++)
        sum += pages[i * 4096];
    CHECK_ERR("sigrelse_segv", sigrelse(SIGSEGV), 0);
    CHECK_EQ("pages_read", sum, PAGES * 7);

    CHECK_ERR("sighold_again", sighold(SIGUSR1), 0);
    gate_set(&paused, 1);
    errno = 0;
    int r = sigpause(SIGUSR1); /* X/Open's: the mask less SIGUSR1 */
    CHECK("sigpause_returned", r == -1 && errno == EINTR);
    CHECK_EQ("sigpause_handled", usr1, 3);
    CHECK_ERR("sigrelse_again", sigrelse(SIGUSR1), 0);
    return NULL;
}

int main(void)
{
    check_start();
    pages = malloc(PAGES * 4096);
    if (!CHECK("alloc", pages != NULL))
        return check_finish();
    for (int i = 0; i < PAGES; i++)
        pages[i * 4096] = 7;
    CHECK("sigset", sigset(SIGUSR1, on_usr1) == SIG_DFL);
    CHECK("ssignal", ssignal(SIGUSR2, on_usr2) == SIG_DFL);
    CHECK_ERR("sigignore", sigignore(SIGHUP), 0);
    CHECK_ERR("siginterrupt", siginterrupt(SIGURG, 1), 0);
    CHECK("signal_urg", signal(SIGURG, on_urg) == SIG_DFL); /* (after: remembered) */
    pthread_t t;
    if (!CHECK_ERR("create", pthread_create(&t, NULL, thread, NULL), 0))
        return check_finish();
    CHECK("paused", gate_wait(&paused, 1));
    struct timespec pause = { 0, 50000000 };
    nanosleep(&pause, NULL);
    CHECK_ERR("kill_paused", pthread_kill(t, SIGUSR1), 0);
    CHECK_ERR("join", pthread_join(t, NULL), 0);
    return check_finish();
}
