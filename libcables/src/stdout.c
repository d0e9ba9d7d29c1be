/* stdout.c: the program's standard output is cables-run's.  mpirun gives
 * each node process's standard output a pseudo-terminal of its own, which
 * it reads and copies to its own: so a program whose output went to a file
 * or a pipe found isatty(1) true (progress bars and colours written into
 * the file) and its stdout line-buffered; a thread's lines printed before
 * a join could come after what main printed after it (two nodes' output
 * reached cables-run in the order mpirun read it); and mpirun cut lines
 * where it read, putting another node's output inside a line (once in
 * about 4000 lines that two nodes wrote at once).
 *
 * cables-run names where the nodes on its machine write (CABLES_STDOUT,
 * with its machine's boot id and pid namespace in CABLES_STDOUT_AT): its
 * own terminal, or a fifo of its run that a cat of its copies to its
 * standard output in the order written.  Such a node opens it as its
 * descriptor 1: every write of every node goes there as the write is
 * made, whole (a pipe's writes up to PIPE_BUF are, a terminal's are), in
 * the program's order.  A node on another machine (or where the open
 * fails) keeps mpirun's, but where cables-run's output is no terminal
 * (CABLES_TTY lacks 1), its descriptor 1 becomes a pipe that a helper
 * process copies to mpirun's pseudo-terminal.  The helper is started by
 * a child that ends at once (so it is not the program's child: wait()
 * never sees it), holds only those two descriptors, blocks every signal,
 * and ends when every writer of the pipe has closed it (the node's end,
 * however it ends: nothing written is lost, and mpirun, which reads the
 * pseudo-terminal to its end, sees it all before the node's end) or when
 * mpirun no longer reads.  Each node's stdout (descriptor 1 is each
 * node's own: pthread_shim/src/remote.c) is buffered by lines, also where
 * it is no terminal (the program alone buffers it fully there): each
 * node's stream is its own, and whole lines written as printed keep the
 * program's order of lines across nodes (and a node other than the master
 * ends without flushing its streams).
 *
 * Standard error the same (CABLES_STDERR), but unbuffered and without
 * the helper: cables-run's terminal, a fifo of its own, or "1" where it is
 * cables-run's output too (2>&1: then the lines of both keep their order).
 * Before, it went through mpirun: no terminal (isatty(2) false where
 * cables-run's is one), and in another order than standard output.  The
 * runtime's words for cables-run itself still go to mpirun's
 * (cb_mpirun_stderr), which cables-run reads.
 *
 * Not done: standard input (a pipe from mpirun). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
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

/* this machine's boot id and pid namespace, as cables-run writes them */
static bool at_launcher(const char *at)
{
    struct stat st;
    if (!cb_boot_id()[0] || stat("/proc/self/ns/pid", &st))
        return false;
    char here[96];
    snprintf(here, sizeof here, "%s %llu", cb_boot_id(), (unsigned long long)st.st_ino);
    return !strcmp(here, at);
}

/* mpirun's standard error, where descriptor 2 went elsewhere */
static int mpirun_err = 2;

/* descriptor k copied onto fd (mpirun's error kept first) */
static bool moved(int k, int fd)
{
    if (fd == 2 && mpirun_err == 2) {
        int m = fcntl(2, F_DUPFD_CLOEXEC, 256);
        if (m < 0)
            m = fcntl(2, F_DUPFD_CLOEXEC, 3);
        if (m < 0)
            return false;
        mpirun_err = m;
    }
    return dup2(k, fd) == fd;
}

/* descriptor fd (1 or 2) the file cables-run named (path), if this node
 * can open it */
static bool launchers(int fd, const char *path)
{
    const char *at = getenv("CABLES_STDOUT_AT");
    if (!path || !at || getenv("CABLES_TEST_STDOUT_APART") || !at_launcher(at))
        return false;
    /* (a fifo: ENXIO, not a wait, if its reader is gone) */
    int k = open(path, O_WRONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
    if (k < 0)
        return false;
    /* a terminal that stops a background process's writes (stty tostop):
     * not from here, in a process group of mpirun's making */
    struct termios t;
    int fl = fcntl(k, F_GETFL);
    bool ok = fl >= 0 && !(tcgetattr(k, &t) == 0 && (t.c_lflag & TOSTOP)) &&
              fcntl(k, F_SETFL, fl & ~O_NONBLOCK) == 0 && moved(k, fd);
    close(k);
    return ok;
}

/* descriptor 1 a pipe to mpirun's, which the helper copies */
static void pipe_to_mpirun(void)
{
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

void cb_stdout_as_launcher(void)
{
    const char *tty = getenv("CABLES_TTY"), *rank = getenv("OMPI_COMM_WORLD_RANK");
    if (!tty || !rank)
        return; /* not a node of cables-run's */
    bool out = launchers(1, getenv("CABLES_STDOUT"));
    if (!out && !strchr(tty, '1') && isatty(1))
        pipe_to_mpirun();
    if (!isatty(1))
        setvbuf(stdout, NULL, _IOLBF, BUFSIZ);
    /* an error that is cables-run's output is this node's output */
    const char *err = getenv("CABLES_STDERR");
    if (err && !strcmp(err, "1")) {
        if (out)
            moved(1, 2);
    } else {
        launchers(2, err);
    }
}

int cb_mpirun_stderr(void) { return mpirun_err; }
