/* commands: the process keeps the signals its threads block while a
 * command that system or popen started runs.  Every thread blocks SIGUSR1
 * (main, before it starts any); a thread (on another node) runs, by
 * system (ROUNDS times) and by popen, `kill -USR1 $PPID` (the program's
 * process): each signal waits, pending, for the thread's sigtimedwait, and
 * the process lives on.  Before, the master's thread that ran another
 * node's command let every signal in meanwhile, and the process died of a
 * SIGUSR1 (in 1 of 3 runs with one round, the master's communication
 * thread took the others first).  popen's and system's results are checked on the way, from
 * main and from the thread; a command that sends SIGINT and SIGQUIT to the
 * process leaves it alive, as glibc's system ignores them while it waits
 * (before, another node's command ended the process).
 * RESULT ok=1 checks=N (check.h) */
#include <sys/wait.h>

#include "check.h"

#define ROUNDS 8

static int exit_status(int st) { return WIFEXITED(st) ? WEXITSTATUS(st) : -1; }

/* the command's first line, and its status */
static void run_popen(const char *who, const char *cmd, const char *want)
{
    char name[64], line[128] = "";
    FILE *p = popen(cmd, "r");
    snprintf(name, sizeof name, "%s_popen", who);
    if (!CHECK(name, p != NULL))
        return;
    snprintf(name, sizeof name, "%s_popen_line", who);
    if (!fgets(line, sizeof line, p))
        strcpy(line, "(none)\n");
    check_report(name, __LINE__, !strcmp(line, want), "the command printed %s", line);
    snprintf(name, sizeof name, "%s_pclose", who);
    CHECK_EQ(name, exit_status(pclose(p)), 0);
}

/* fclose of popen's stream is its pclose (glibc's): the status, and no
 * child left; a shell that cannot start (an argument too long for exec)
 * is a status of 127 */
static void closes_and_failures(const char *who)
{
    char name[64];
    FILE *p = popen("exit 3", "r");
    snprintf(name, sizeof name, "%s_fclose_status", who);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-dealloc" /* (fclose, not pclose: the point) */
    CHECK_EQ(name, p ? exit_status(fclose(p)) : -1, 3);
#pragma GCC diagnostic pop
    snprintf(name, sizeof name, "%s_no_child_left", who);
    CHECK(name, waitpid(-1, NULL, WNOHANG) == -1 && errno == ECHILD);
    size_t n = 200000;
    char *cmd = malloc(n + 1);
    if (!cmd)
        return;
    memset(cmd, ':', n);
    cmd[n] = 0;
    snprintf(name, sizeof name, "%s_system_no_shell", who);
    CHECK_EQ(name, exit_status(system(cmd)), 127);
    free(cmd);
}

/* a cancellation asked during pclose acts after it: the child is reaped
 * and its status given (glibc waits with cancellation off) */
static struct gate in_pclose = GATE_INITIALIZER;
static volatile int cancelled_status = -1;

static void *pclosing(void *arg)
{
    (void)arg;
    FILE *p = popen("sleep 0.5; exit 4", "r");
    gate_set(&in_pclose, 1);
    if (p)
        cancelled_status = pclose(p);
    pthread_testcancel();
    return NULL;
}

static void cancel_in_pclose(void)
{
    pthread_t t;
    if (!CHECK_ERR("pclosing_create", pthread_create(&t, NULL, pclosing, NULL), 0))
        return;
    CHECK("pclosing_started", gate_wait(&in_pclose, 1));
    struct timespec pause = { 0, 100000000 };
    nanosleep(&pause, NULL);
    CHECK_ERR("pclosing_cancel", pthread_cancel(t), 0);
    void *ret = NULL;
    CHECK_ERR("pclosing_join", pthread_join(t, &ret), 0);
    CHECK("pclosing_cancelled", ret == PTHREAD_CANCELED);
    CHECK_EQ("pclosing_status", exit_status(cancelled_status), 4);
    CHECK("pclosing_no_child_left", waitpid(-1, NULL, WNOHANG) == -1 && errno == ECHILD);
}

static void took_usr1(const char *name)
{
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    struct timespec limit = { 20, 0 };
    CHECK_EQ(name, sigtimedwait(&usr1, NULL, &limit), SIGUSR1);
}

static void *thread(void *arg)
{
    (void)arg;
    run_popen("thread", "echo thread; exit 0", "thread\n");
    CHECK_EQ("thread_system_exit", exit_status(system("exit 5")), 5);
    /* the process ignores SIGINT and SIGQUIT while system waits (glibc's) */
    CHECK_EQ("thread_system_ignores_int",
             exit_status(system("kill -INT $PPID && kill -QUIT $PPID && exit 4")), 4);
    closes_and_failures("thread");
    for (int i = 0; i < ROUNDS; i++) { /* (each round could lose the process) */
        CHECK_EQ("thread_system_kill", exit_status(system("kill -USR1 $PPID")), 0);
        took_usr1("thread_took_usr1");
    }
    run_popen("thread_kill", "kill -USR1 $PPID && sleep 0.2 && echo sent", "sent\n");
    took_usr1("thread_took_usr1_again");
    return NULL;
}

int main(void)
{
    check_start();
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    CHECK_ERR("block", pthread_sigmask(SIG_BLOCK, &set, NULL), 0);
    run_popen("main", "echo main", "main\n");
    CHECK_EQ("main_system_exit", exit_status(system("exit 6")), 6);
    CHECK_EQ("main_system_ignores_int",
             exit_status(system("kill -INT $PPID && kill -QUIT $PPID && exit 4")), 4);
    closes_and_failures("main");
    FILE *bad = popen("true", "rw");
    CHECK("popen_rw_refused", bad == NULL && errno == EINVAL);
    pthread_t t;
    if (!CHECK_ERR("create", pthread_create(&t, NULL, thread, NULL), 0))
        return check_finish();
    CHECK_ERR("join", pthread_join(t, NULL), 0);
    cancel_in_pclose();
    return check_finish();
}
