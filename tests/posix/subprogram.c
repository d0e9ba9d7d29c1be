/* subprogram: what the program starts is a process of its own, as
 * natively.  A relinked program it runs (here itself, with "child"), by
 * system, popen from main and from a thread (which runs on another node)
 * and posix_spawn, starts alone: before, it took itself for a node of the
 * run, from the launcher's variables it found in its environment, and
 * failed in MPI_Init.  Those variables (mpirun's OMPI_* and PMIX_*) are
 * not in the program's environment either, in main's or a thread's.
 * RESULT ok=1 checks=N (check.h) */
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include "check.h"

extern char **environ;
static const char *self;

static int launcher_vars(void)
{
    int n = 0;
    for (char **e = environ; *e; e++)
        n += !strncmp(*e, "OMPI_", 5) || !strncmp(*e, "PMIX_", 5);
    return n;
}

/* the child's line through popen, and its status */
static void run_popen(const char *who)
{
    char cmd[4200], line[128] = "", name[64];
    snprintf(cmd, sizeof cmd, "'%s' child", self);
    FILE *p = popen(cmd, "r");
    snprintf(name, sizeof name, "%s_popen", who);
    CHECK(name, p != NULL);
    if (!p)
        return;
    snprintf(name, sizeof name, "%s_popen_alone", who);
    CHECK(name, fgets(line, sizeof line, p) && !strcmp(line, "child alone 0\n"));
    int st = pclose(p);
    snprintf(name, sizeof name, "%s_pclose_status", who);
    CHECK_EQ(name, WIFEXITED(st) ? WEXITSTATUS(st) : -1, 7);
}

static void *thread(void *arg)
{
    (void)arg;
    CHECK_EQ("thread_launcher_vars", launcher_vars(), 0);
    run_popen("thread");
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "child")) {
        printf("child %s %d\n", getenv("OMPI_COMM_WORLD_SIZE") ? "in-run" : "alone", launcher_vars());
        return 7;
    }
    check_start();
    self = argv[0];
    CHECK_EQ("main_launcher_vars", launcher_vars(), 0);
    CHECK("main_getenv", getenv("OMPI_COMM_WORLD_SIZE") == NULL && getenv("PMIX_RANK") == NULL);
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "'%s' child > /dev/null", self);
    int st = system(cmd);
    CHECK_EQ("system_status", WIFEXITED(st) ? WEXITSTATUS(st) : -1, 7);
    pid_t pid;
    char *args[] = { (char *)self, "child", NULL };
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    CHECK_EQ("posix_spawn", posix_spawn(&pid, self, &fa, NULL, args, environ), 0);
    posix_spawn_file_actions_destroy(&fa);
    CHECK_EQ("posix_spawn_wait", waitpid(pid, &st, 0), pid);
    CHECK_EQ("posix_spawn_status", WIFEXITED(st) ? WEXITSTATUS(st) : -1, 7);
    run_popen("main");
    pthread_t t;
    CHECK_EQ("create", pthread_create(&t, NULL, thread, NULL), 0);
    CHECK_EQ("join", pthread_join(t, NULL), 0);
    return check_finish();
}
