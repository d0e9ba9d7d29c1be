/* redirect: descriptors 1 and 2 and the streams on them are the process's.
 * Main sends its standard output to a file (dup2 onto 1); a worker (on 2
 * nodes: on node 1) then prints with printf, puts and write(1), and sends
 * the standard error to a second file itself (freopen of stderr) and
 * prints to it; main puts both back and finds every line in the files, in
 * order, and none of them on the terminal.  First, another worker saves
 * both itself (dup), sends them to a third file (dup2, 2>&1) and puts
 * them back: the RESULT line then reaches the terminal.  Before, on 2 nodes the
 * worker's lines went to node 1's own output (the launcher's terminal),
 * and its freopen replaced node 1's stderr only.
 * RESULT ok=1 checks=N (check.h) */
#define _GNU_SOURCE
#include <err.h>
#include <error.h>
#include <fcntl.h>
#include <signal.h>

#include "check.h"

static char dir[64], out_path[96], err_path[96];

static void *worker(void *arg)
{
    (void)arg;
    printf("w-printf %d\n", 1);
    puts("w-puts");
    fflush(stdout);
    CHECK_EQ("w_write", write(1, "w-write\n", 8), 8);
    CHECK_EQ("w_dprintf", dprintf(1, "w-dprintf %d\n", 7), 12);
    printf("w-buffered\n"); /* flushed by main's fflush */
    CHECK("w_freopen", freopen(err_path, "w", stderr) == stderr);
    fprintf(stderr, "w-stderr\n");
    fflush(stderr);
    CHECK_EQ("w_write2", write(2, "w-write2\n", 9), 9);
    errno = ENOENT;
    perror("w-perror");
    warnx("w-warnx %d", 3);
    errno = EACCES;
    warn("w-warn");
    error(0, ENOENT, "w-error %d", 4);
    psignal(SIGUSR1, "w-psignal");
    fflush(stderr);
    return NULL;
}

/* a worker's own save, redirect (2>&1 too) and restore */
static char out2_path[96];
static void *worker2(void *arg)
{
    (void)arg;
    fflush(stdout);
    int saved = dup(1), saved_err = dup(2);
    CHECK_GE("w2_dup", saved, 0);
    CHECK_GE("w2_dup_err", saved_err, 0);
    int fd = open(out2_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CHECK_GE("w2_open", fd, 0);
    CHECK_EQ("w2_dup2", dup2(fd, 1), 1);
    CHECK_EQ("w2_close", close(fd), 0);
    CHECK_EQ("w2_2to1", dup2(1, 2), 2);
    printf("w2-line\n");
    fflush(stdout);
    fprintf(stderr, "w2-err\n");
    fflush(stderr);
    CHECK_EQ("w2_restore", dup2(saved, 1), 1);
    CHECK_EQ("w2_restore_err", dup2(saved_err, 2), 2);
    close(saved);
    close(saved_err);
    return NULL;
}

static void contents(const char *path, char *buf, size_t n)
{
    buf[0] = 0;
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return;
    ssize_t r = read(fd, buf, n - 1);
    buf[r > 0 ? r : 0] = 0;
    close(fd);
}

int main(void)
{
    check_start();
    snprintf(dir, sizeof dir, "/tmp/cables-redirect-XXXXXX");
    CHECK("mkdtemp", mkdtemp(dir) != NULL);
    snprintf(out_path, sizeof out_path, "%s/out", dir);
    snprintf(err_path, sizeof err_path, "%s/err", dir);
    /* first a worker's own save, redirect and restore, while 1 and 2 are
     * still each node's own */
    char buf[2048];
    pthread_t t;
    snprintf(out2_path, sizeof out2_path, "%s/out2", dir);
    CHECK_EQ("create2", pthread_create(&t, NULL, worker2, NULL), 0);
    CHECK_EQ("join2", pthread_join(t, NULL), 0);
    contents(out2_path, buf, sizeof buf);
    CHECK("worker_file", !strcmp(buf, "w2-line\nw2-err\n"));
    if (strcmp(buf, "w2-line\nw2-err\n"))
        fprintf(stderr, "redirect: worker's file [%s]\n", buf);
    fflush(stdout);
    fflush(stderr);
    int saved_out = dup(1), saved_err = dup(2);
    CHECK_GE("dup_out", saved_out, 0);
    CHECK_GE("dup_err", saved_err, 0);
    int fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CHECK_GE("open_out", fd, 0);
    CHECK_EQ("dup2_out", dup2(fd, 1), 1);
    close(fd);
    printf("m-before\n");
    fflush(stdout);
    CHECK_EQ("create", pthread_create(&t, NULL, worker, NULL), 0);
    CHECK_EQ("join", pthread_join(t, NULL), 0);
    printf("m-after\n");
    fflush(stdout);
    fflush(stderr);
    CHECK_EQ("restore_out", dup2(saved_out, 1), 1);
    CHECK_EQ("restore_err", dup2(saved_err, 2), 2);
    close(saved_out);
    close(saved_err);
    contents(out_path, buf, sizeof buf);
    const char *want = "m-before\nw-printf 1\nw-puts\nw-write\nw-dprintf 7\nw-buffered\nm-after\n";
    CHECK("stdout_file", !strcmp(buf, want));
    if (strcmp(buf, want))
        fprintf(stderr, "redirect: stdout file [%s]\n", buf);
    contents(err_path, buf, sizeof buf);
    char want_err[1024];
    snprintf(want_err, sizeof want_err,
             "w-stderr\nw-write2\nw-perror: %s\n%s: w-warnx 3\n%s: w-warn: %s\n%s: w-error 4: %s\n"
             "w-psignal: %s\n",
             strerror(ENOENT), program_invocation_short_name, program_invocation_short_name,
             strerror(EACCES), program_invocation_name, strerror(ENOENT), strsignal(SIGUSR1));
    CHECK("stderr_file", !strcmp(buf, want_err));
    if (strcmp(buf, want_err))
        fprintf(stderr, "redirect: stderr file [%s]\n", buf);
    unlink(out_path);
    unlink(err_path);
    unlink(out2_path);
    rmdir(dir);
    return check_finish();
}
