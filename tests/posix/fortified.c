/* fortified: calls a program built with -D_FORTIFY_SOURCE=2 makes through
 * libc's checking entry points (__poll_chk, __ppoll_chk, __readlink_chk,
 * __readlinkat_chk, __getcwd_chk, __getgroups_chk: this file is built so),
 * from a thread started by main (on libcables, on another node): a poll
 * and a ppoll of main's pipe see the byte main wrote, and readlink,
 * readlinkat, getcwd and getgroups store into globals no thread touched
 * before, what main's calls give.  Before, on libcables, the polls asked
 * the node's own descriptors of those numbers and the others failed with
 * EFAULT.  RESULT ok=1 checks=N (check.h). */
#undef _FORTIFY_SOURCE
#define _FORTIFY_SOURCE 2
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

static int fds[2];
/* sizes not known when compiled: the checking calls */
static volatile int nfds = 1, ngroups = 64;
static volatile size_t path_max = PATH_MAX;
static struct {
    char pad[8192];
    char link[PATH_MAX], linkat[PATH_MAX], cwd[PATH_MAX];
    char pad2[8192];
    gid_t groups[64];
} untouched;
static char main_link[PATH_MAX], main_cwd[PATH_MAX];
static gid_t main_groups[64];
static int main_ngroups;
static ssize_t main_len;

static void *worker(void *arg)
{
    (void)arg;
    struct pollfd p[4] = { { .fd = fds[0], .events = POLLIN } };
    CHECK_EQ("poll", poll(p, nfds, 5000), 1);
    CHECK("poll_in", p[0].revents & POLLIN);
    p[0].revents = 0;
    struct timespec ts = { 5, 0 };
    CHECK_EQ("ppoll", ppoll(p, nfds, &ts, NULL), 1);
    CHECK("ppoll_in", p[0].revents & POLLIN);
    ssize_t n = readlink("/proc/self/exe", untouched.link, path_max);
    CHECK_EQ("readlink", n, main_len);
    CHECK("readlink_same", n == main_len && n > 0 && !memcmp(untouched.link, main_link, (size_t)n));
    n = readlinkat(AT_FDCWD, "/proc/self/exe", untouched.linkat, path_max);
    CHECK_EQ("readlinkat", n, main_len);
    CHECK("getcwd", getcwd(untouched.cwd, path_max) == untouched.cwd);
    CHECK("getcwd_same", !strcmp(untouched.cwd, main_cwd));
    CHECK_EQ("getgroups", getgroups(ngroups, untouched.groups), main_ngroups);
    CHECK("getgroups_same", main_ngroups < 0 ||
                                !memcmp(untouched.groups, main_groups, (size_t)main_ngroups * sizeof(gid_t)));
    return NULL;
}

int main(void)
{
    check_start();
    CHECK_EQ("pipe", pipe(fds), 0);
    main_len = readlink("/proc/self/exe", main_link, sizeof main_link);
    CHECK("main_readlink", main_len > 0);
    CHECK("main_getcwd", getcwd(main_cwd, sizeof main_cwd) == main_cwd);
    main_ngroups = getgroups(64, main_groups);
    CHECK("main_getgroups", main_ngroups >= 0);
    CHECK_EQ("write", write(fds[1], "x", 1), 1);
    pthread_t t;
    CHECK_EQ("create", pthread_create(&t, NULL, worker, NULL), 0);
    CHECK_EQ("join", pthread_join(t, NULL), 0);
    return check_finish();
}
