/* syscalls: system calls beyond io.c's on buffers whose pages are not
 * present where the call is made (the kernel does not fault them in: it
 * fails with EFAULT).  A helper thread (on 2 nodes it runs on the other
 * node) makes a block of pages, one page for each buffer, and writes the
 * inputs into them: paths, a sockaddr, socket options, a sleep's length,
 * then (once main made its descriptors) pollfd entries, fd_sets and an
 * epoll_event.  Main passes those pages to the calls: the stat family,
 * pipe, pipe2, socketpair, bind, connect, accept, accept4, getsockname,
 * getpeername, setsockopt, getsockopt, nanosleep, clock_nanosleep, uname,
 * getcwd, readlink, getrusage, times, poll, ppoll, select, pselect,
 * epoll_ctl and epoll_wait, and the queries clock_gettime (of a CPU clock),
 * clock_getres, getrlimit, prlimit, sysinfo, getitimer, setitimer,
 * timer_settime, timer_gettime, sigpending, sched_getaffinity,
 * sched_getparam, sched_rr_get_interval, getgroups, getresuid, getresgid
 * and getentropy, and recvmmsg and sendmmsg (vector, headers and data).  The helper then checks that what the kernel stored
 * reached it.  Descriptors are used only by main (they are per
 * node process).
 * RESULT ok=1 checks=N (check.h) */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <sys/time.h>
#include <sys/times.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "check.h"

#define PGSZ 4096
/* the helper's pages, one buffer each */
enum {
    P_PATH, P_LINK, P_SOCKPATH, P_ST_STAT, P_ST_LSTAT, P_ST_FSTAT, P_ST_AT, P_STX,
    P_PIPE, P_PIPE2, P_SV, P_ADDR, P_PEER, P_PEERLEN, P_NAME, P_NAMELEN, P_PEER4, P_PEER4LEN,
    P_OPT_IN, P_OPT_OUT, P_OPTLEN, P_REQ, P_REM, P_REQ2, P_UTS, P_CWD, P_LBUF, P_RU, P_TMS,
    P_PFD, P_PFD2, P_TS, P_RSET, P_WSET, P_TV, P_RSET2, P_EV_CTL, P_EVS,
    P_CPUTS, P_RES, P_RL, P_PRL_NEW, P_PRL_OLD, P_SI, P_ITV, P_ITV_NEW, P_ITV_OLD, P_TM_NEW,
    P_TM_OLD, P_TM, P_SIGSET, P_AFF, P_SP, P_RR, P_GROUPS, P_UID, P_UID2, P_UID3, P_GID, P_GID2,
    P_GID3, P_ENTROPY, P_MMSG_IN, P_MMSG_OUT, NPG
};
/* a page of recvmmsg's or sendmmsg's: the vector, its iovecs, the data */
struct mmsg_page { struct mmsghdr v[2]; struct iovec io[2]; char buf[2][16]; };
static unsigned char *pg;
#define PG(i) ((void *)(pg + (size_t)(i) * PGSZ))

static char path[64], link_path[80], sock_path[108], cwd[4096]; /* main's */
static long file_size;
static int fdnum[4]; /* main's pipe ends, then its epoll descriptor */
static int fds_made[6]; /* what pipe, pipe2, socketpair returned, main's */
static struct rlimit core_rl; /* main's, read into its own memory */
static int ngroups;
static struct gate to_helper = GATE_INITIALIZER, to_main = GATE_INITIALIZER;

static void *helper(void *arg)
{
    (void)arg;
    if (posix_memalign((void **)&pg, PGSZ, NPG * PGSZ))
        return NULL;
    memset(pg, 0xEE, NPG * PGSZ);
    strcpy(PG(P_PATH), path);
    strcpy(PG(P_LINK), link_path);
    struct sockaddr_un *a = PG(P_SOCKPATH);
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    strcpy(a->sun_path, sock_path);
    *(socklen_t *)PG(P_PEERLEN) = sizeof(struct sockaddr_un);
    *(socklen_t *)PG(P_NAMELEN) = sizeof(struct sockaddr_un);
    *(socklen_t *)PG(P_PEER4LEN) = sizeof(struct sockaddr_un);
    *(struct timeval *)PG(P_OPT_IN) = (struct timeval){ 3, 0 };
    *(socklen_t *)PG(P_OPTLEN) = sizeof(struct timeval);
    *(struct timespec *)PG(P_REQ) = (struct timespec){ 0, 1000000 };
    *(struct timespec *)PG(P_REQ2) = (struct timespec){ 0, 1000000 };
    *(struct rlimit *)PG(P_PRL_NEW) = core_rl; /* the limit it has: no change */
    *(struct itimerval *)PG(P_ITV_NEW) = (struct itimerval){ { 0, 0 }, { 0, 0 } }; /* none */
    *(struct itimerspec *)PG(P_TM_NEW) = (struct itimerspec){ { 0, 0 }, { 100, 0 } };
    for (int d = 0; d < 2; d++) {
        struct mmsg_page *mp = PG(d ? P_MMSG_OUT : P_MMSG_IN);
        memset(mp, 0, sizeof *mp);
        for (int k = 0; k < 2; k++) {
            if (d)
                strcpy(mp->buf[k], k ? "de" : "abc");
            mp->io[k] = (struct iovec){ mp->buf[k], d ? strlen(mp->buf[k]) : sizeof mp->buf[k] };
            mp->v[k].msg_hdr = (struct msghdr){ .msg_iov = &mp->io[k], .msg_iovlen = 1 };
        }
    }
    gate_set(&to_main, 1);

    /* main's descriptors are known: the inputs of the waits */
    CHECK("h_gate_2", gate_wait(&to_helper, 2));
    for (int k = 0; k < 2; k++) {
        struct pollfd *p = PG(k ? P_PFD2 : P_PFD);
        p[0] = (struct pollfd){ fdnum[0], POLLIN, 0 };
        p[1] = (struct pollfd){ fdnum[1], POLLOUT, 0 };
    }
    *(struct timespec *)PG(P_TS) = (struct timespec){ 1, 0 };
    for (int k = 0; k < 2; k++) {
        fd_set *r = PG(k ? P_RSET2 : P_RSET);
        FD_ZERO(r);
        FD_SET(fdnum[0], r);
    }
    fd_set *w = PG(P_WSET);
    FD_ZERO(w);
    FD_SET(fdnum[1], w);
    *(struct timeval *)PG(P_TV) = (struct timeval){ 1, 0 };
    struct epoll_event *e = PG(P_EV_CTL);
    e->events = EPOLLIN;
    e->data.u64 = 0x1234567890ULL;
    gate_set(&to_main, 2);

    /* what the kernel stored on main's node reached this one */
    CHECK("h_gate_3", gate_wait(&to_helper, 3));
    CHECK_EQ("h_stat_size", ((struct stat *)PG(P_ST_STAT))->st_size, file_size);
    CHECK("h_lstat_link", S_ISLNK(((struct stat *)PG(P_ST_LSTAT))->st_mode));
    CHECK_EQ("h_fstat_ino", ((struct stat *)PG(P_ST_FSTAT))->st_ino,
             ((struct stat *)PG(P_ST_STAT))->st_ino);
    CHECK_EQ("h_fstatat_size", ((struct stat *)PG(P_ST_AT))->st_size, file_size);
    CHECK_EQ("h_statx_size", ((struct statx *)PG(P_STX))->stx_size, file_size);
    CHECK("h_pipe_fds", memcmp(PG(P_PIPE), fds_made, 2 * sizeof(int)) == 0);
    CHECK("h_pipe2_fds", memcmp(PG(P_PIPE2), fds_made + 2, 2 * sizeof(int)) == 0);
    CHECK("h_socketpair_fds", memcmp(PG(P_SV), fds_made + 4, 2 * sizeof(int)) == 0);
    CHECK_EQ("h_accept_family", ((struct sockaddr_un *)PG(P_PEER))->sun_family, AF_UNIX);
    CHECK_EQ("h_getsockname", strcmp(((struct sockaddr_un *)PG(P_NAME))->sun_path, sock_path), 0);
    CHECK_EQ("h_getsockopt", ((struct timeval *)PG(P_OPT_OUT))->tv_sec, 3);
    CHECK_EQ("h_uname", strcmp(((struct utsname *)PG(P_UTS))->sysname, "Linux"), 0);
    CHECK_EQ("h_getcwd", strcmp(PG(P_CWD), cwd), 0);
    CHECK_EQ("h_readlink", memcmp(PG(P_LBUF), path, strlen(path)), 0);
    CHECK_EQ("h_poll_revents", ((struct pollfd *)PG(P_PFD))[0].revents & POLLIN, POLLIN);
    CHECK_EQ("h_ppoll_revents", ((struct pollfd *)PG(P_PFD2))[1].revents & POLLOUT, POLLOUT);
    CHECK("h_select_set", FD_ISSET(fdnum[0], (fd_set *)PG(P_RSET)));
    CHECK("h_pselect_set", FD_ISSET(fdnum[0], (fd_set *)PG(P_RSET2)));
    CHECK_EQ("h_epoll_data", ((struct epoll_event *)PG(P_EVS))[0].data.u64, 0x1234567890ULL);
    CHECK_GT("h_clock_cpu", ((struct timespec *)PG(P_CPUTS))->tv_sec * 1000000000L +
                                ((struct timespec *)PG(P_CPUTS))->tv_nsec, 0);
    CHECK("h_clock_getres", ((struct timespec *)PG(P_RES))->tv_nsec > 0 &&
                            ((struct timespec *)PG(P_RES))->tv_nsec < 1000000);
    CHECK_EQ("h_getrlimit", ((struct rlimit *)PG(P_RL))->rlim_cur, core_rl.rlim_cur);
    CHECK_EQ("h_prlimit_old", ((struct rlimit *)PG(P_PRL_OLD))->rlim_max, core_rl.rlim_max);
    CHECK_GT("h_sysinfo_ram", ((struct sysinfo *)PG(P_SI))->totalram, 0);
    CHECK_EQ("h_getitimer", ((struct itimerval *)PG(P_ITV))->it_value.tv_sec, 0);
    CHECK_EQ("h_setitimer_old", ((struct itimerval *)PG(P_ITV_OLD))->it_value.tv_usec, 0);
    CHECK_EQ("h_timer_settime_old", ((struct itimerspec *)PG(P_TM_OLD))->it_value.tv_sec, 0);
    CHECK("h_timer_gettime", ((struct itimerspec *)PG(P_TM))->it_value.tv_sec > 90 &&
                             ((struct itimerspec *)PG(P_TM))->it_value.tv_sec <= 100);
    CHECK("h_sigpending", !sigismember((sigset_t *)PG(P_SIGSET), SIGUSR1));
    CHECK_GE("h_sched_getaffinity", CPU_COUNT((cpu_set_t *)PG(P_AFF)), 1);
    CHECK_EQ("h_sched_getparam", ((struct sched_param *)PG(P_SP))->sched_priority, 0);
    CHECK_GE("h_sched_rr", ((struct timespec *)PG(P_RR))->tv_nsec, 0);
    CHECK_EQ("h_getresuid", *(uid_t *)PG(P_UID), getuid());
    CHECK_EQ("h_getresgid", *(gid_t *)PG(P_GID3), getgid());
    if (ngroups > 0) /* (the list's own order: its first is some group of ours) */
        CHECK("h_getgroups", *(gid_t *)PG(P_GROUPS) != (gid_t)0xEEEEEEEE);
    struct mmsg_page *in = PG(P_MMSG_IN);
    CHECK("h_recvmmsg", in->v[1].msg_len == 2 && strcmp(in->buf[0], "xyz") == 0 &&
                        strcmp(in->buf[1], "uv") == 0);
    CHECK_EQ("h_sendmmsg_len", ((struct mmsg_page *)PG(P_MMSG_OUT))->v[0].msg_len, 3);
    CHECK("h_getentropy", memcmp(PG(P_ENTROPY), (unsigned char[16]){ [0 ... 15] = 0xEE }, 16) != 0);
    return NULL;
}

static void files(void)
{
    struct stat *st = PG(P_ST_STAT);
    CHECK_EQ("stat_remote", stat(PG(P_PATH), st), 0);
    CHECK_EQ("stat_size", st->st_size, file_size);
    CHECK_EQ("lstat_remote", lstat(PG(P_LINK), PG(P_ST_LSTAT)), 0);
    CHECK("lstat_is_link", S_ISLNK(((struct stat *)PG(P_ST_LSTAT))->st_mode));
    int fd = open(path, O_RDONLY);
    CHECK_GE("open", fd, 0);
    CHECK_EQ("fstat_remote", fstat(fd, PG(P_ST_FSTAT)), 0);
    CHECK_EQ("fstat_ino", ((struct stat *)PG(P_ST_FSTAT))->st_ino, st->st_ino);
    close(fd);
    CHECK_EQ("fstatat_remote", fstatat(AT_FDCWD, PG(P_PATH), PG(P_ST_AT), 0), 0);
    CHECK_EQ("statx_remote", statx(AT_FDCWD, PG(P_PATH), 0, STATX_SIZE, PG(P_STX)), 0);
    CHECK_EQ("statx_size", ((struct statx *)PG(P_STX))->stx_size, file_size);
    CHECK_EQ("readlink_remote", readlink(PG(P_LINK), PG(P_LBUF), 64), (long)strlen(path));
    CHECK("getcwd_remote", getcwd(PG(P_CWD), PGSZ) == PG(P_CWD));
    CHECK_EQ("getcwd_value", strcmp(PG(P_CWD), cwd), 0);
    CHECK_EQ("uname_remote", uname(PG(P_UTS)), 0);
    CHECK_EQ("getrusage_remote", getrusage(RUSAGE_SELF, PG(P_RU)), 0);
    CHECK("times_remote", times(PG(P_TMS)) != (clock_t)-1);
    CHECK_EQ("nanosleep_remote", nanosleep(PG(P_REQ), PG(P_REM)), 0);
    CHECK_EQ("clock_nanosleep_remote", clock_nanosleep(CLOCK_MONOTONIC, 0, PG(P_REQ2), PG(P_REM)), 0);
}

static void queries(void)
{
    CHECK_EQ("clock_gettime_cpu_remote", clock_gettime(CLOCK_THREAD_CPUTIME_ID, PG(P_CPUTS)), 0);
    CHECK_EQ("clock_getres_remote", clock_getres(CLOCK_MONOTONIC, PG(P_RES)), 0);
    CHECK_EQ("getrlimit_remote", getrlimit(RLIMIT_CORE, PG(P_RL)), 0);
    CHECK_EQ("prlimit_remote", prlimit(0, RLIMIT_CORE, PG(P_PRL_NEW), PG(P_PRL_OLD)), 0);
    CHECK_EQ("sysinfo_remote", sysinfo(PG(P_SI)), 0);
    CHECK_EQ("getitimer_remote", getitimer(ITIMER_VIRTUAL, PG(P_ITV)), 0);
    CHECK_EQ("setitimer_remote", setitimer(ITIMER_VIRTUAL, PG(P_ITV_NEW), PG(P_ITV_OLD)) /* (not alarm's: check.h's watchdog) */, 0);
    timer_t tm;
    struct sigevent ev = { .sigev_notify = SIGEV_NONE };
    CHECK_EQ("timer_create", timer_create(CLOCK_MONOTONIC, &ev, &tm), 0);
    CHECK_EQ("timer_settime_remote", timer_settime(tm, 0, PG(P_TM_NEW), PG(P_TM_OLD)), 0);
    CHECK_EQ("timer_gettime_remote", timer_gettime(tm, PG(P_TM)), 0);
    CHECK_EQ("timer_delete", timer_delete(tm), 0);
    CHECK_EQ("sigpending_remote", sigpending(PG(P_SIGSET)), 0);
    CHECK_EQ("sched_getaffinity_remote", sched_getaffinity(0, sizeof(cpu_set_t), PG(P_AFF)), 0);
    CHECK_EQ("sched_getparam_remote", sched_getparam(0, PG(P_SP)), 0);
    CHECK_EQ("sched_rr_get_interval_remote", sched_rr_get_interval(0, PG(P_RR)), 0);
    CHECK_EQ("getgroups_remote", getgroups(ngroups, PG(P_GROUPS)), ngroups);
    CHECK_EQ("getresuid_remote", getresuid(PG(P_UID), PG(P_UID2), PG(P_UID3)), 0);
    CHECK_EQ("getresgid_remote", getresgid(PG(P_GID), PG(P_GID2), PG(P_GID3)), 0);
    CHECK_EQ("getentropy_remote", getentropy(PG(P_ENTROPY), 16), 0);
}

static void descriptors(void)
{
    int *p = PG(P_PIPE), *p2 = PG(P_PIPE2), *sv = PG(P_SV);
    CHECK_EQ("pipe_remote", pipe(p), 0);
    CHECK_EQ("pipe2_remote", pipe2(p2, O_CLOEXEC), 0);
    CHECK_EQ("socketpair_remote", socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    memcpy(fds_made, p, 2 * sizeof(int));
    memcpy(fds_made + 2, p2, 2 * sizeof(int));
    memcpy(fds_made + 4, sv, 2 * sizeof(int));
    char c = 0;
    CHECK_EQ("pipe_works", write(p[1], "x", 1) == 1 && read(p[0], &c, 1) == 1 && c == 'x', 1);
    CHECK_EQ("socketpair_works", write(sv[0], "y", 1) == 1 && read(sv[1], &c, 1) == 1 && c == 'y', 1);
    close(p2[0]);
    close(p2[1]);
    close(sv[0]);
    close(sv[1]);

    /* a listening socket bound to, and connected to, a remote address */
    const struct sockaddr *a = PG(P_SOCKPATH);
    int l = socket(AF_UNIX, SOCK_STREAM, 0), c1 = socket(AF_UNIX, SOCK_STREAM, 0),
        c2 = socket(AF_UNIX, SOCK_STREAM, 0);
    CHECK_EQ("bind_remote", bind(l, a, sizeof(struct sockaddr_un)), 0);
    CHECK_EQ("listen", listen(l, 4), 0);
    CHECK_EQ("connect_remote", connect(c1, a, sizeof(struct sockaddr_un)), 0);
    CHECK_EQ("connect_remote_2", connect(c2, a, sizeof(struct sockaddr_un)), 0);
    int s1 = accept(l, PG(P_PEER), PG(P_PEERLEN));
    CHECK_GE("accept_remote", s1, 0);
    int s2 = accept4(l, PG(P_PEER4), PG(P_PEER4LEN), SOCK_CLOEXEC);
    CHECK_GE("accept4_remote", s2, 0);
    CHECK_EQ("getsockname_remote", getsockname(l, PG(P_NAME), PG(P_NAMELEN)), 0);
    CHECK_EQ("getsockname_value", strcmp(((struct sockaddr_un *)PG(P_NAME))->sun_path, sock_path), 0);
    CHECK_EQ("getpeername_remote", getpeername(c1, PG(P_PEER), PG(P_PEERLEN)), 0);
    CHECK_EQ("setsockopt_remote", setsockopt(s1, SOL_SOCKET, SO_RCVTIMEO, PG(P_OPT_IN),
                                             sizeof(struct timeval)), 0);
    CHECK_EQ("getsockopt_remote", getsockopt(s1, SOL_SOCKET, SO_RCVTIMEO, PG(P_OPT_OUT),
                                             PG(P_OPTLEN)), 0);
    CHECK_EQ("getsockopt_value", ((struct timeval *)PG(P_OPT_OUT))->tv_sec, 3);
    /* datagrams: both vectors in the helper's pages */
    int dg[2];
    CHECK_EQ("socketpair_dgram", socketpair(AF_UNIX, SOCK_DGRAM, 0, dg), 0);
    CHECK_EQ("send_xyz", send(dg[1], "xyz", 4, 0), 4);
    CHECK_EQ("send_uv", send(dg[1], "uv", 2, 0), 2);
    CHECK_EQ("recvmmsg_remote", recvmmsg(dg[0], ((struct mmsg_page *)PG(P_MMSG_IN))->v, 2, 0, NULL), 2);
    CHECK_EQ("sendmmsg_remote", sendmmsg(dg[1], ((struct mmsg_page *)PG(P_MMSG_OUT))->v, 2, 0), 2);
    char got[8] = "";
    CHECK_EQ("recv_abc", recv(dg[0], got, sizeof got, 0), 3);
    CHECK_EQ("recv_abc_data", memcmp(got, "abc", 3), 0);
    CHECK_EQ("recv_de", recv(dg[0], got, sizeof got, 0), 2);
    close(dg[0]);
    close(dg[1]);
    int all[] = { l, c1, c2, s1, s2 };
    for (int k = 0; k < 5; k++)
        if (all[k] >= 0)
            close(all[k]);
}

int main(void)
{
    check_start();
    snprintf(path, sizeof path, "/tmp/cables-sys-XXXXXX");
    int fd = mkstemp(path);
    CHECK_GE("mkstemp", fd, 0);
    file_size = 12345;
    CHECK_EQ("ftruncate", ftruncate(fd, file_size), 0);
    close(fd);
    snprintf(link_path, sizeof link_path, "%s.lnk", path);
    CHECK_EQ("symlink", symlink(path, link_path), 0);
    snprintf(sock_path, sizeof sock_path, "%s.sock", path);
    CHECK("cwd", getcwd(cwd, sizeof cwd) != NULL);
    CHECK_EQ("getrlimit", getrlimit(RLIMIT_CORE, &core_rl), 0);
    ngroups = getgroups(0, NULL);
    CHECK_GE("getgroups", ngroups, 0);
    if (ngroups > PGSZ / (int)sizeof(gid_t))
        ngroups = 0;

    pthread_t t;
    CHECK_ERR("create", pthread_create(&t, NULL, helper, NULL), 0);
    CHECK("gate_1", gate_wait(&to_main, 1));
    files();
    queries();
    descriptors();

    int pp[2];
    CHECK_EQ("pipe", pipe(pp), 0);
    int ep = epoll_create1(0);
    CHECK_GE("epoll_create1", ep, 0);
    fdnum[0] = pp[0];
    fdnum[1] = pp[1];
    fdnum[2] = ep;
    gate_set(&to_helper, 2);
    CHECK("gate_2", gate_wait(&to_main, 2));
    CHECK_EQ("pipe_write", write(pp[1], "z", 1), 1);
    CHECK_EQ("poll_remote", poll(PG(P_PFD), 2, 1000), 2);
    CHECK_EQ("ppoll_remote", ppoll(PG(P_PFD2), 2, PG(P_TS), NULL), 2);
    CHECK_EQ("select_remote", select(pp[1] + 1, PG(P_RSET), PG(P_WSET), NULL, PG(P_TV)), 2);
    CHECK_EQ("pselect_remote", pselect(pp[0] + 1, PG(P_RSET2), NULL, NULL, PG(P_TS), NULL), 1);
    CHECK_EQ("epoll_ctl_remote", epoll_ctl(ep, EPOLL_CTL_ADD, pp[0], PG(P_EV_CTL)), 0);
    CHECK_EQ("epoll_wait_remote", epoll_wait(ep, PG(P_EVS), 4, 1000), 1);
    gate_set(&to_helper, 3);
    CHECK_ERR("join", pthread_join(t, NULL), 0);
    close(pp[0]);
    close(pp[1]);
    close(ep);
    CHECK_EQ("unlink_sock", unlink(sock_path), 0);
    CHECK_EQ("unlink_link", unlink(link_path), 0);
    CHECK_EQ("unlink", unlink(path), 0);
    return check_finish();
}
