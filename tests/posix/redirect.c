/* redirect: descriptors 1 and 2 and the streams on them are the process's.
 * Main sends its standard output to a file (dup2 onto 1); a worker (on 2
 * nodes: on node 1) then prints with printf, puts and write(1), and sends
 * the standard error to a second file itself (freopen of stderr) and
 * prints to it; main puts both back and finds every line in the files, in
 * order, and none of them on the terminal.  Before, on 2 nodes the
 * worker's lines went to node 1's own output (the launcher's terminal),
 * and its freopen replaced node 1's stderr only.
 * RESULT ok=1 checks=N (check.h) */
#define _GNU_SOURCE
#include <fcntl.h>

#include "check.h"

static char dir[64], out_path[96], err_path[96];

static void *worker(void *arg)
{
    (void)arg;
    printf("w-printf %d\n", 1);
    puts("w-puts");
    fflush(stdout);
    CHECK_EQ("w_write", write(1, "w-write\n", 8), 8);
    printf("w-buffered\n"); /* flushed by main's fflush */
    CHECK("w_freopen", freopen(err_path, "w", stderr) == stderr);
    fprintf(stderr, "w-stderr\n");
    fflush(stderr);
    CHECK_EQ("w_write2", write(2, "w-write2\n", 9), 9);
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
    pthread_t t;
    CHECK_EQ("create", pthread_create(&t, NULL, worker, NULL), 0);
    CHECK_EQ("join", pthread_join(t, NULL), 0);
    printf("m-after\n");
    fflush(stdout);
    fflush(stderr);
    CHECK_EQ("restore_out", dup2(saved_out, 1), 1);
    CHECK_EQ("restore_err", dup2(saved_err, 2), 2);
    close(saved_out);
    close(saved_err);
    char buf[512];
    contents(out_path, buf, sizeof buf);
    const char *want = "m-before\nw-printf 1\nw-puts\nw-write\nw-buffered\nm-after\n";
    CHECK("stdout_file", !strcmp(buf, want));
    if (strcmp(buf, want))
        fprintf(stderr, "redirect: stdout file [%s]\n", buf);
    contents(err_path, buf, sizeof buf);
    CHECK("stderr_file", !strcmp(buf, "w-stderr\nw-write2\n"));
    if (strcmp(buf, "w-stderr\nw-write2\n"))
        fprintf(stderr, "redirect: stderr file [%s]\n", buf);
    unlink(out_path);
    unlink(err_path);
    rmdir(dir);
    return check_finish();
}
