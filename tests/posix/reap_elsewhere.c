/* reap_elsewhere: a child is waited for from any thread, wherever the
 * thread that forked it runs.  A worker (on 2 nodes: on node 1) forks five
 * children (each ends a set time after the worker's SIGUSR2, sent once all
 * are forked), sees none ended yet (waitpid(-1, WNOHANG) 0) and stays
 * while the first three end, their SIGCHLD taken by the program's handler
 * (on 2 nodes at node 1, whose process is their parent: README, signals).
 * Main (the master) then reaps them: waitpid(c1), waitid(P_PID, c2), wait()
 * (c3, the one ended, not c4, still running), waitpid(-1, WNOHANG) and
 * waitid(P_ALL, WNOHANG) 0 while c4 runs; then it forks a child of its own
 * that ends first: wait() gets it, then c4 (children on two nodes: a
 * blocking wait for any child); a blocking waitpid(c5) is ended by a
 * handler without SA_RESTART (EINTR), not by one with SA_RESTART (it then
 * reaps c5); last, no child is left (wait, waitpid WNOHANG, waitid WNOHANG:
 * ECHILD).  Before, on 2 nodes main's waits were made at the master alone,
 * which is not the parent of node 1's children: waitpid(c1), waitid and
 * wait failed with ECHILD, waitpid(-1, WNOHANG) gave -1 (16 of 51 checks
 * failed).
 * RESULT ok=1 checks=N (check.h) */
#define _GNU_SOURCE
#include <signal.h>
#include <sys/wait.h>

#include "check.h"

static pid_t c[5];
static volatile sig_atomic_t chld, usr1;

static void on_chld(int sig) { (void)sig; chld++; }
static void on_usr1(int sig) { (void)sig; usr1++; }

/* sleeps ms, whatever handler runs meanwhile */
static void sleep_whole(long ms)
{
    if (ms <= 0)
        return;
    struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };
    while (nanosleep(&t, &t) == -1 && errno == EINTR)
        ;
}

/* a child that ends with code ms after its parent's SIGUSR2 (go: a fork
 * on another node takes a while, so the time is not counted from the
 * fork; the parent blocks SIGUSR2 before) */
static pid_t child(long ms, int code)
{
    pid_t p = fork();
    if (p == 0) {
        sigset_t go;
        sigemptyset(&go);
        sigaddset(&go, SIGUSR2);
        struct timespec most = { 20, 0 };
        if (sigtimedwait(&go, NULL, &most) != SIGUSR2)
            _exit(99);
        sleep_whole(ms);
        _exit(code);
    }
    return p;
}

static void go(pid_t p) { CHECK_EQ("go", kill(p, SIGUSR2), 0); }

static void *worker(void *arg)
{
    (void)arg;
    check_block_signal(SIGUSR2);
    c[0] = child(50, 5);
    c[1] = child(100, 6);
    c[2] = child(150, 7);
    c[3] = child(1500, 8);
    c[4] = child(3000, 10);
    for (int i = 0; i < 5; i++)
        CHECK_GT("fork", c[i], 0);
    int st;
    CHECK_EQ("worker_nohang", waitpid(-1, &st, WNOHANG), 0);
    for (int i = 0; i < 5; i++)
        go(c[i]);
    sleep_whole(400); /* c1-c3 end meanwhile */
    return NULL;
}

static int status_is(int st, int code) { return WIFEXITED(st) && WEXITSTATUS(st) == code; }

int main(void)
{
    check_start();
    check_handler(SIGCHLD, on_chld, SA_RESTART);
    pthread_t t;
    CHECK_EQ("create", pthread_create(&t, NULL, worker, NULL), 0);
    CHECK_EQ("join", pthread_join(t, NULL), 0);
    CHECK_GE("sigchld", chld, 1);

    int st = -1;
    pid_t r = waitpid(c[0], &st, 0);
    CHECK_EQ("waitpid_c1", r, c[0]);
    if (r < 0)
        fprintf(stderr, "waitpid(c1): %s\n", strerror(errno));
    CHECK("status_c1", status_is(st, 5));

    siginfo_t si;
    memset(&si, 0, sizeof si);
    CHECK_EQ("waitid_c2", waitid(P_PID, (id_t)c[1], &si, WEXITED), 0);
    CHECK_EQ("waitid_pid", si.si_pid, c[1]);
    CHECK("waitid_status", si.si_code == CLD_EXITED && si.si_status == 6);

    st = -1;
    CHECK_EQ("wait_c3", wait(&st), c[2]);
    CHECK("status_c3", status_is(st, 7));
    CHECK_EQ("nohang_c4_runs", waitpid(-1, &st, WNOHANG), 0);
    memset(&si, 0, sizeof si);
    CHECK_EQ("waitid_nohang", waitid(P_ALL, 0, &si, WEXITED | WNOHANG), 0);
    CHECK_EQ("waitid_nohang_none", si.si_pid, 0);

    /* children on both nodes: main's own ends first */
    check_block_signal(SIGUSR2);
    pid_t m = child(300, 9);
    CHECK_GT("fork_main", m, 0);
    go(m);
    st = -1;
    CHECK_EQ("wait_main_child", wait(&st), m);
    CHECK("status_main_child", status_is(st, 9));
    st = -1;
    CHECK_EQ("wait_c4", wait(&st), c[3]);
    CHECK("status_c4", status_is(st, 8));

    /* a blocking wait for another node's child, interrupted by a handler */
    timer_t tm;
    if (check_signal_timer(SIGUSR1, on_usr1, 0, &tm)) {
        check_timer_every(tm, 200000);
        errno = 0;
        r = waitpid(c[4], &st, 0);
        check_timer_every(tm, 0);
        CHECK_EQ("waitpid_intr", r, -1);
        CHECK_ERR("waitpid_eintr", errno, EINTR);
        CHECK_GE("usr1", usr1, 1);
        timer_delete(tm);
    }
    /* ... and not by one with SA_RESTART: the wait goes on */
    usr1 = 0;
    if (check_signal_timer(SIGUSR1, on_usr1, SA_RESTART, &tm)) {
        check_timer_every(tm, 100000);
        st = -1;
        CHECK_EQ("waitpid_c5", waitpid(c[4], &st, 0), c[4]);
        check_timer_every(tm, 0);
        CHECK_GE("usr1_restart", usr1, 1);
        timer_delete(tm);
    }
    CHECK("status_c5", status_is(st, 10));

    errno = 0;
    CHECK_EQ("none_wait", wait(&st), -1);
    CHECK_ERR("none_wait_errno", errno, ECHILD);
    errno = 0;
    CHECK_EQ("none_nohang", waitpid(-1, &st, WNOHANG), -1);
    CHECK_ERR("none_nohang_errno", errno, ECHILD);
    errno = 0;
    CHECK_EQ("none_waitid", waitid(P_ALL, 0, &si, WEXITED | WNOHANG), -1);
    CHECK_ERR("none_waitid_errno", errno, ECHILD);
    return check_finish();
}
