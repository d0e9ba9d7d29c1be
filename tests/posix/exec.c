/* exec: the exec family replaces the process's image, whichever thread
 * calls it.  Main opens a file (kept across exec) and sets a variable; a
 * worker (on 2 nodes: on node 1) first execs a program that does not
 * exist (-1, ENOENT: the program goes on), a directory (EACCES) and
 * main's file by its descriptor (fexecve: not executable, EACCES), then
 * execs this program again
 * with "--after", the descriptor and its findings so far.  The new image
 * reads the file through the descriptor, finds the variable, its
 * arguments, that it runs alone (no launcher's variables) with the signals
 * the program had open, and prints
 * the result.  Before, on 2 nodes the worker's node process alone became
 * the new program and the launcher ended the run as failed.
 * RESULT ok=1 checks=N (check.h) */
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

extern char **environ;

#include "check.h"

static int fd;
static char dir[64], path[96];

static void *worker(void *arg)
{
    (void)arg;
    errno = 0;
    int r = execlp("cables-no-such-program", "cables-no-such-program", (char *)NULL);
    int missing_ok = r == -1 && errno == ENOENT;
    errno = 0;
    r = execl("/tmp", "tmp", (char *)NULL); /* a directory: EACCES, and on */
    missing_ok &= r == -1 && errno == EACCES;
    errno = 0; /* main's file, not executable: EACCES, and on */
    r = fexecve(fd, (char *const[]){ "f", NULL }, environ);
    missing_ok &= r == -1 && errno == EACCES;
    char fds[16], ok[4];
    snprintf(fds, sizeof fds, "%d", fd);
    snprintf(ok, sizeof ok, "%d", missing_ok);
    char *const argv[] = { "exec", "--after", fds, ok, path, dir, NULL };
    execv("/proc/self/exe", argv);
    CHECK("exec_returned_not", 0);
    return NULL;
}

static int after(char **argv)
{
    check_start();
    CHECK("after_missing_program_failed", !strcmp(argv[3], "1"));
    int f = atoi(argv[2]);
    char buf[16] = "";
    CHECK_EQ("after_fd_kept", pread(f, buf, sizeof buf - 1, 0), 6);
    CHECK("after_fd_data", !strcmp(buf, "before"));
    const char *v = getenv("CABLES_EXEC_TEST");
    CHECK("after_env", v && !strcmp(v, "set"));
    CHECK("after_alone", getenv("OMPI_COMM_WORLD_SIZE") == NULL);
    sigset_t now;
    CHECK("after_signals_open", !sigprocmask(SIG_BLOCK, NULL, &now) && !sigismember(&now, SIGINT) &&
                                    !sigismember(&now, SIGTERM));
    close(f);
    unlink(argv[4]);
    rmdir(argv[5]);
    return check_finish();
}

int main(int argc, char **argv)
{
    if (argc == 6 && !strcmp(argv[1], "--after"))
        return after(argv);
    check_start();
    snprintf(dir, sizeof dir, "/tmp/cables-exec-XXXXXX");
    CHECK("mkdtemp", mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/f", dir);
    fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    CHECK_GE("open", fd, 0);
    CHECK_EQ("write", write(fd, "before", 6), 6);
    CHECK_EQ("setenv", setenv("CABLES_EXEC_TEST", "set", 1), 0);
    pthread_t t;
    CHECK_EQ("create", pthread_create(&t, NULL, worker, NULL), 0);
    pthread_join(t, NULL); /* the process's image is replaced meanwhile */
    CHECK("not_reached", 0);
    return check_finish();
}
