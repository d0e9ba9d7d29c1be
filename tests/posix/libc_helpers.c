/* libc_helpers: libc's helpers on descriptors main made, called by a
 * thread (on libcables, on another node than main): eventfd_write and
 * eventfd_read, fpathconf, futimes, fstatvfs, tcgetattr (on a pipe:
 * ENOTTY), a UDP socket pair (sendto and recvfrom with addresses), a unix
 * socket bound to a path by the thread and connected by main, SO_PEERCRED.
 * Before, on libcables, the first five were libc's on the thread's node,
 * which reaches the descriptor past the shim: EBADF, or -1.
 * RESULT ok=1 checks=N (check.h) */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/un.h>
#include <termios.h>
#include "check.h"

static int efd, ffd, pfd[2], udp_a, udp_b, ua_port, ub_port;
static char upath[108];
static struct gate back = GATE_INITIALIZER;

static void *worker(void *arg)
{
    (void)arg;
    CHECK_EQ("eventfd_write", eventfd_write(efd, 7), 0);
    eventfd_t v = 0;
    CHECK_EQ("eventfd_read", eventfd_read(efd, &v), 0);
    CHECK_EQ("eventfd_val", v, 7 + 2);
    errno = 0;
    long nm = fpathconf(ffd, _PC_NAME_MAX);
    CHECK_GT("fpathconf", nm, 0);
    struct timeval tv[2] = { { 3000000, 0 }, { 4000000, 0 } };
    CHECK_EQ("futimes", futimes(ffd, tv), 0);
    struct termios t;
    int r = tcgetattr(pfd[0], &t);
    CHECK_EQ("tcgetattr_pipe", r, -1);
    CHECK_ERR("tcgetattr_errno", errno, ENOTTY);
    /* udp */
    struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(ub_port) };
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK_EQ("sendto", sendto(udp_a, "dgram", 5, 0, (struct sockaddr *)&to, sizeof to), 5);
    char buf[16];
    struct sockaddr_in from; socklen_t fl = sizeof from;
    CHECK_EQ("recvfrom", recvfrom(udp_b, buf, sizeof buf, 0, (struct sockaddr *)&from, &fl), 5);
    CHECK_EQ("recvfrom_port", ntohs(from.sin_port), ua_port);
    /* unix socket */
    int l = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un un = { .sun_family = AF_UNIX };
    strcpy(un.sun_path, upath);
    CHECK_EQ("un_bind", bind(l, (struct sockaddr *)&un, sizeof un), 0);
    CHECK_EQ("un_listen", listen(l, 1), 0);
    gate_set(&back, 1);
    int c = accept(l, NULL, NULL);
    CHECK_GE("un_accept", c, 0);
    struct ucred cr; socklen_t cl = sizeof cr;
    CHECK_EQ("peercred", getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &cl), 0);
    CHECK_EQ("peercred_pid", cr.pid, getpid());
    CHECK_EQ("un_read", read(c, buf, 3), 3);
    close(c); close(l);
    return NULL;
}

int main(void)
{
    check_start();
    efd = eventfd(2, 0);
    char fp[] = "/tmp/h2hXXXXXX";
    ffd = mkstemp(fp);
    pipe(pfd);
    snprintf(upath, sizeof upath, "/tmp/h2un_%d", getpid());
    udp_a = socket(AF_INET, SOCK_DGRAM, 0);
    udp_b = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET };
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(udp_a, (struct sockaddr *)&a, sizeof a);
    bind(udp_b, (struct sockaddr *)&a, sizeof a);
    socklen_t al = sizeof a;
    getsockname(udp_a, (struct sockaddr *)&a, &al); ua_port = ntohs(a.sin_port);
    al = sizeof a;
    getsockname(udp_b, (struct sockaddr *)&a, &al); ub_port = ntohs(a.sin_port);
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    CHECK("b1", gate_wait(&back, 1));
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un un = { .sun_family = AF_UNIX };
    strcpy(un.sun_path, upath);
    CHECK_EQ("un_connect", connect(s, (struct sockaddr *)&un, sizeof un), 0);
    CHECK_EQ("un_write", write(s, "abc", 3), 3);
    pthread_join(t, NULL);
    close(s);
    struct stat st;
    fstat(ffd, &st);
    CHECK_EQ("futimes_mtime", st.st_mtime, 4000000);
    unlink(fp); unlink(upath);
    return check_finish();
}
