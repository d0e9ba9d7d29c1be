/* tty.c: the program's standard output is a terminal when cables-run's is,
 * and only then.  mpirun gives each node process's standard output a
 * pseudo-terminal of its own, whatever cables-run's is: a program whose
 * output went to a file or a pipe found isatty(1) true (progress bars and
 * colours written into the file) and its stdout line-buffered (a write per
 * line) where alone it is fully buffered.
 *
 * cables-run says which of its descriptors 1 and 2 are terminals
 * (CABLES_TTY: "12", "1", "2" or ""); where it says 1 is not and a node's
 * is, the node's descriptor 1 becomes a pipe, which a helper process
 * copies to mpirun's pseudo-terminal.  The helper is started before the
 * runtime opens anything, by a child that ends at once (so it is not the
 * program's child: wait() never sees it), holds only those two
 * descriptors, blocks every signal, and ends when every writer of the pipe
 * has closed it (the node's end, however it ends: nothing written is lost,
 * and mpirun, which reads the pseudo-terminal to its end, sees it all
 * before the node's end) or when mpirun no longer reads.  The master's
 * stdout is then fully buffered, as the program's alone; another node's
 * (descriptor 1 is each node's own: pthread_shim/src/remote.c) stays
 * line-buffered, since such a node ends without flushing its streams.
 *
 * Not done: the other way (cables-run's standard error a terminal, which
 * mpirun gives a node as a pipe: isatty(2) is false), and standard input
 * (the master's is a pipe from mpirun). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"

/* a fork past the shim's fork and libc's atfork handlers: the child makes
 * system calls only */
static pid_t raw_fork(void) { return (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0); }

/* the helper: copies descriptor 0 to 1 until 0's writers have all closed
 * it or 1 takes no more */
static void helper_copy(void)
{
    static char buf[65536];
    for (;;) {
        ssize_t n = syscall(SYS_read, 0, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return;
        for (ssize_t off = 0; off < n;) {
            ssize_t w = syscall(SYS_write, 1, buf + off, (size_t)(n - off));
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                return;
            off += w;
        }
    }
}

/* (the child of raw_fork) the helper, from a child that ends at once */
static void helper(int from)
{
    sigset_t all;
    sigfillset(&all);
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, NULL, sizeof(uint64_t));
    pid_t g = raw_fork();
    if (g != 0)
        syscall(SYS_exit_group, g < 0);
    /* from on 0, mpirun's pseudo-terminal on 1 as it is, nothing else open */
    if (syscall(SYS_dup2, from, 0) < 0)
        syscall(SYS_exit_group, 1);
    if (syscall(SYS_close_range, 2, ~0u, 0) < 0)
        for (int fd = 2; fd < 65536; fd++)
            syscall(SYS_close, fd);
    helper_copy();
    syscall(SYS_exit_group, 0);
}

void cb_tty_as_launcher(void)
{
    const char *want = getenv("CABLES_TTY"), *rank = getenv("OMPI_COMM_WORLD_RANK");
    if (!want || !rank || strchr(want, '1') || !isatty(1))
        return; /* not a node of cables-run's, or as asked */
    if (strcmp(rank, "0") || getenv("OMPI_PARENT_PORT")) /* not the master */
        setvbuf(stdout, NULL, _IOLBF, BUFSIZ);
    int p[2];
    if (pipe2(p, O_CLOEXEC))
        cb_die("cannot make the pipe for the program's standard output: %s", strerror(errno));
    pid_t c = raw_fork();
    if (c < 0)
        cb_die("cannot start the helper for the program's standard output: %s", strerror(errno));
    if (c == 0)
        helper(p[0]);
    int st = 0;
    while (syscall(SYS_wait4, c, &st, 0, NULL) < 0 && errno == EINTR) {}
    if (!WIFEXITED(st) || WEXITSTATUS(st))
        cb_die("the helper for the program's standard output did not start");
    if (dup2(p[1], 1) < 0)
        cb_die("cannot give the program's standard output its pipe: %s", strerror(errno));
    close(p[0]);
    close(p[1]);
}
