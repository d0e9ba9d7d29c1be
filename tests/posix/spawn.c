/* spawn: posix_spawn's children are the process's, whichever thread
 * spawns, and a wait finds them from any thread.  Main (the master) makes
 * a directory, goes there, writes a file, makes a pipe and sets a
 * variable; a worker (on 2 nodes: on node 1) spawns shells whose file
 * actions put the pipe on their output and the file on their input, and
 * reads what they print: their parent is main's process, their directory
 * main's, their input the file, their environment the one given (or the
 * process's), with a chdir action or attributes too.  It waits for each
 * with waitpid, wait and waitid, signals one, gets ENOENT for a missing
 * program, and
 * waits for a child of its own fork.  Before, on 2 nodes the children
 * were node 1's: the pipe's number there was another descriptor, and
 * their parent node 1's process.
 * RESULT ok=1 checks=N (check.h) */
#define _GNU_SOURCE /* posix_spawn_file_actions_addchdir_np, environ */
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include "check.h"

static int pipe_fd[2];
static pid_t main_pid;
static char dir[64], cwd[256];

/* what the children wrote into the pipe, up to the end (the write end
 * closed here first) */
static void drain(char *out, size_t n)
{
    close(pipe_fd[1]);
    size_t got = 0;
    ssize_t r;
    while (got + 1 < n && (r = read(pipe_fd[0], out + got, n - 1 - got)) > 0)
        got += (size_t)r;
    out[got] = 0;
    close(pipe_fd[0]);
}

static void *worker(void *arg)
{
    (void)arg;
    char want[512], out[512];
    /* 1: the pipe on its output, the file on its input, an environment */
    posix_spawn_file_actions_t fa;
    CHECK_EQ("fa_init", posix_spawn_file_actions_init(&fa), 0);
    CHECK_EQ("fa_dup2", posix_spawn_file_actions_adddup2(&fa, pipe_fd[1], 1), 0);
    CHECK_EQ("fa_close_r", posix_spawn_file_actions_addclose(&fa, pipe_fd[0]), 0);
    CHECK_EQ("fa_close_w", posix_spawn_file_actions_addclose(&fa, pipe_fd[1]), 0);
    CHECK_EQ("fa_open", posix_spawn_file_actions_addopen(&fa, 0, "in", O_RDONLY, 0), 0);
    char *const argv1[] = { "sh", "-c", "echo ppid=$PPID; pwd; cat; echo var=$CABLES_SPAWN_VAR; exit 7",
                            NULL };
    char *const env1[] = { "CABLES_SPAWN_VAR=given", "PATH=/usr/bin:/bin", NULL };
    pid_t p1 = -1;
    CHECK_EQ("spawn", posix_spawn(&p1, "/bin/sh", &fa, NULL, argv1, env1), 0);
    posix_spawn_file_actions_destroy(&fa);
    CHECK_GT("spawn_pid", p1, 0);
    int st = -1;
    CHECK_EQ("waitpid", waitpid(p1, &st, 0), p1);
    CHECK("waitpid_status", WIFEXITED(st) && WEXITSTATUS(st) == 7);
    drain(out, sizeof out);
    snprintf(want, sizeof want, "ppid=%d\n%s\ninput line\nvar=given\n", (int)main_pid, cwd);
    CHECK("spawn_output", !strcmp(out, want));
    if (strcmp(out, want))
        fprintf(stderr, "spawn: got [%s] want [%s]\n", out, want);

    /* 2: found on PATH, the process's environment (main's variable) */
    char *const argv2[] = { "sh", "-c", "test \"$CABLES_SPAWN_MAIN\" = m", NULL };
    pid_t p2 = -1;
    CHECK_EQ("spawnp", posix_spawnp(&p2, "sh", NULL, NULL, argv2, environ), 0);
    st = -1;
    CHECK_EQ("wait", wait(&st), p2);
    CHECK("wait_status", WIFEXITED(st) && WEXITSTATUS(st) == 0);

    /* 3: a chdir action and attributes (a process group of its own) */
    CHECK_EQ("pipe2", pipe(pipe_fd), 0);
    CHECK_EQ("fa_init3", posix_spawn_file_actions_init(&fa), 0);
    CHECK_EQ("fa_dup2_3", posix_spawn_file_actions_adddup2(&fa, pipe_fd[1], 1), 0);
    CHECK_EQ("fa_chdir", posix_spawn_file_actions_addchdir_np(&fa, "/"), 0);
    posix_spawnattr_t at;
    CHECK_EQ("attr_init", posix_spawnattr_init(&at), 0);
    CHECK_EQ("attr_flags", posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP), 0);
    CHECK_EQ("attr_pgroup", posix_spawnattr_setpgroup(&at, 0), 0);
    char *const argv3[] = { "sh", "-c", "pwd; read p c s pp g x < /proc/$$/stat; test $g -eq $$ && echo own-group",
                            NULL };
    pid_t p3 = -1;
    CHECK_EQ("spawn_attr", posix_spawn(&p3, "/bin/sh", &fa, &at, argv3, environ), 0);
    posix_spawnattr_destroy(&at);
    posix_spawn_file_actions_destroy(&fa);
    siginfo_t info;
    memset(&info, 0, sizeof info);
    CHECK_EQ("waitid", waitid(P_PID, (id_t)p3, &info, WEXITED), 0);
    CHECK_EQ("waitid_pid", info.si_pid, p3);
    CHECK("waitid_status", info.si_code == CLD_EXITED && info.si_status == 0);
    drain(out, sizeof out);
    CHECK("chdir_output", !strcmp(out, "/\nown-group\n"));
    if (strcmp(out, "/\nown-group\n"))
        fprintf(stderr, "spawn: got [%s]\n", out);

    /* a signal to a child reaches it */
    char *const argv_sleep[] = { "sleep", "30", NULL };
    pid_t ps = -1;
    CHECK_EQ("spawn_sleep", posix_spawnp(&ps, "sleep", NULL, NULL, argv_sleep, environ), 0);
    union sigval v = { .sival_int = 5 };
    CHECK_EQ("sigqueue_exists", sigqueue(ps, 0, v), 0);
    CHECK_EQ("kill", kill(ps, SIGTERM), 0);
    st = -1;
    CHECK_EQ("kill_waitpid", waitpid(ps, &st, 0), ps);
    CHECK("kill_status", WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);

    /* 4: a program that is not there; then no child is left */
    pid_t p4 = -1;
    char *const argv4[] = { "cables-no-such-program", NULL };
    CHECK_EQ("spawn_missing", posix_spawn(&p4, "/cables-no-such-program", NULL, NULL, argv4, environ),
             ENOENT);
    errno = 0;
    CHECK_EQ("no_child_left", waitpid(-1, &st, WNOHANG), -1);
    CHECK_EQ("no_child_errno", errno, ECHILD);

    /* 5: this thread's own fork: its child is waited for here */
    pid_t f = fork();
    if (f == 0)
        _exit(9);
    CHECK_GT("fork", f, 0);
    st = -1;
    CHECK_EQ("fork_waitpid", waitpid(f, &st, 0), f);
    CHECK("fork_status", WIFEXITED(st) && WEXITSTATUS(st) == 9);
    return NULL;
}

int main(void)
{
    check_start();
    main_pid = getpid();
    snprintf(dir, sizeof dir, "/tmp/cables-spawn-XXXXXX");
    CHECK("mkdtemp", mkdtemp(dir) != NULL);
    CHECK_EQ("chdir", chdir(dir), 0);
    CHECK("getcwd", getcwd(cwd, sizeof cwd) != NULL);
    FILE *f = fopen("in", "w");
    CHECK("fopen", f != NULL);
    if (f) {
        fputs("input line\n", f);
        fclose(f);
    }
    CHECK_EQ("pipe", pipe(pipe_fd), 0);
    CHECK_EQ("setenv", setenv("CABLES_SPAWN_MAIN", "m", 1), 0);
    pthread_t t;
    CHECK_EQ("create", pthread_create(&t, NULL, worker, NULL), 0);
    CHECK_EQ("join", pthread_join(t, NULL), 0);
    unlink("in");
    CHECK_EQ("chdir_back", chdir("/"), 0);
    rmdir(dir);
    return check_finish();
}
