/* commands: the process keeps the signals its threads block while a
 * command that system or popen started runs.  Every thread blocks SIGUSR1
 * (main, before it starts any); a thread (on another node) runs, by
 * system (ROUNDS times) and by popen, `kill -USR1 $PPID` (the program's
 * process): each signal waits, pending, for the thread's sigtimedwait, and
 * the process lives on.  Before, the master's thread that ran another
 * node's command let every signal in meanwhile, and the process died of a
 * SIGUSR1 (in 1 of 3 runs with one round, the master's communication
 * thread took the others first).  popen's and system's results are checked on the way, from
 * main and from the thread.
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
    FILE *bad = popen("true", "rw");
    CHECK("popen_rw_refused", bad == NULL && errno == EINVAL);
    pthread_t t;
    if (!CHECK_ERR("create", pthread_create(&t, NULL, thread, NULL), 0))
        return check_finish();
    CHECK_ERR("join", pthread_join(t, NULL), 0);
    return check_finish();
}
