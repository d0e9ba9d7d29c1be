/* files: descriptors and streams are the process's, whichever thread (on
 * 2 nodes: whichever node) opened them.  Main and a worker take turns
 * (gates): the worker writes through a descriptor main opened and the two
 * share its offset; it writes a FILE main opened (fprintf, fputs, fputc,
 * fwrite, then fflush(NULL)) and main reads it back (fgets); main writes a FILE the
 * worker opened and closes it; the worker scans a FILE main opened and
 * main reads on where the scan stopped (the character it gave back); pipes
 * and a socket pair made by one are used by the other (read, write, poll,
 * epoll, send, recv, sendmsg, recvmsg, sendmmsg, recvmmsg, dup2, fcntl,
 * fstat, lseek); a TCP
 * connection is made by the worker to main's listening socket; the worker
 * reads the stdin main reopened (scanf, getchar, fscanf, getc, fgets); a
 * descriptor closed by the worker is closed for main.  Descriptors of the
 * worker's node's own (a /proc file, directory and stream, a dup of one)
 * leave main's descriptors reachable, and its dup of stderr is a copy of
 * the process's (main's): main opens files (the
 * lowest numbers free, as a process's table gives them) past the worker's
 * numbers, and the worker reads each of them, and its own.
 * RESULT ok=1 checks=N (check.h) */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "check.h"

static struct stat main_stderr; /* the process's standard error, as main finds it */

#define LINES 200

static struct gate to_worker = GATE_INITIALIZER, to_main = GATE_INITIALIZER;
static char dir[64], path_a[96], path_b[96], path_c[96];
static int fd_a, pipe_m[2], pipe_w[2], sp[2], dg[2], lsock, dupfd;
static int port;
static FILE *f_main, *f_worker, *f_scan;
static int scanned[2];
static long c_len;
enum { OWN = 5, PROBES = 256 };
static int own_fds[OWN], probe_fds[PROBES], probes;

static void *worker(void *arg)
{
    (void)arg;
    char buf[256];
    /* 1: main's descriptor, its offset shared */
    CHECK("w_gate_1", gate_wait(&to_worker, 1));
    CHECK_EQ("w_write", write(fd_a, "0123456789", 10), 10);
    CHECK_EQ("w_offset_shared", lseek(fd_a, 0, SEEK_CUR), 20);
    CHECK_EQ("w_pwrite", pwrite(fd_a, "XY", 2, 3), 2);
    CHECK_EQ("w_pread", pread(fd_a, buf, 5, 0), 5);
    CHECK("w_pread_data", memcmp(buf, "abcXY", 5) == 0);
    char v1[3], v2[4];
    struct iovec pv[2] = { { v1, sizeof v1 }, { v2, sizeof v2 } };
    CHECK_EQ("w_preadv", preadv(fd_a, pv, 2, 1), 7);
    CHECK("w_preadv_data", memcmp(v1, "bcX", 3) == 0 && memcmp(v2, "Yfgh", 4) == 0);
    struct stat st;
    CHECK_EQ("w_fstat", fstat(fd_a, &st), 0);
    CHECK_EQ("w_fstat_size", (long)st.st_size, 20);
    CHECK_EQ("w_fcntl_getfl", fcntl(fd_a, F_GETFL) & O_ACCMODE, O_RDWR);
    CHECK_EQ("w_isatty", isatty(fd_a), 0);
    int dfd = open(dir, O_RDONLY | O_DIRECTORY);
    CHECK_GE("w_open_dir", dfd, 0);
    struct statx sx;
    CHECK_EQ("w_statx_dirfd", statx(dfd, "a", 0, STATX_SIZE, &sx), 0);
    CHECK_EQ("w_statx_size", (long)sx.stx_size, 20);
    CHECK_EQ("w_close_dir", close(dfd), 0);
    /* /proc/self is the thread's own process (on 2 nodes: its node's, the
     * one /proc/thread-self names with the thread; getpid is main's,
     * tests/posix/pid.c) */
    FILE *ps = fopen("/proc/self/stat", "r");
    int pid = 0, tgid = -1, tid = -1;
    char ts[64] = "";
    CHECK("w_proc_self", ps && fscanf(ps, "%d", &pid) == 1);
    if (ps)
        fclose(ps);
    CHECK_GT("w_proc_thread_self", readlink("/proc/thread-self", ts, sizeof ts - 1), 0);
    CHECK("w_proc_thread_self_ids", sscanf(ts, "%d/task/%d", &tgid, &tid) == 2 && tgid == pid && tid == gettid());
    /* a stream main opened */
    for (int i = 0; i < LINES; i++)
        fprintf(f_main, "line %d of the worker\n", i);
    CHECK_GE("w_fputs", fputs("fputs line\n", f_main), 0);
    CHECK_EQ("w_fputc", fputc('!', f_main), '!');
    CHECK_EQ("w_fwrite", fwrite("\nfwrite\n", 8, 1, f_main), 1);
    CHECK_EQ("w_fflush_all", fflush(NULL), 0); /* the master's streams too */
    c_len = ftell(f_main);
    CHECK_GT("w_ftell", c_len, 20L * LINES);
    /* a stream of the worker's */
    snprintf(path_b, sizeof path_b, "%s/b", dir);
    f_worker = fopen(path_b, "w+");
    CHECK("w_fopen", f_worker != NULL);
    /* a pipe of the worker's, for main */
    CHECK_EQ("w_pipe", pipe(pipe_w), 0);
    gate_set(&to_main, 1);

    /* 2: main's pipe: poll, then read what main wrote */
    CHECK("w_gate_2", gate_wait(&to_worker, 2));
    struct pollfd p = { .fd = pipe_m[0], .events = POLLIN };
    CHECK_EQ("w_poll", poll(&p, 1, WAIT_MS), 1);
    CHECK("w_poll_in", (p.revents & POLLIN) != 0);
    CHECK_EQ("w_read_pipe", read(pipe_m[0], buf, sizeof buf), 11);
    CHECK("w_read_pipe_data", memcmp(buf, "from main!", 11) == 0);
    /* epoll on main's pipe */
    int ep = epoll_create1(0);
    CHECK_GE("w_epoll_create", ep, 0);
    struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 77 };
    CHECK_EQ("w_epoll_ctl", epoll_ctl(ep, EPOLL_CTL_ADD, pipe_m[0], &ev), 0);
    CHECK_EQ("w_write_pipe_m", write(pipe_m[1], "e", 1), 1);
    struct epoll_event got[4];
    memset(got, 0, sizeof got);
    CHECK_EQ("w_epoll_wait", epoll_wait(ep, got, 4, WAIT_MS), 1);
    CHECK_EQ("w_epoll_data", (long)got[0].data.u64, 77);
    CHECK_EQ("w_read_e", read(pipe_m[0], buf, 1), 1);
    CHECK_EQ("w_epoll_close", close(ep), 0);
    /* dprintf writes through a FILE of libc's own on the descriptor */
    CHECK_EQ("w_dprintf_pipe", dprintf(pipe_m[1], "dp%d", 42), 4);
    memset(buf, 0, 8);
    CHECK_EQ("w_dprintf_read", read(pipe_m[0], buf, sizeof buf), 4);
    CHECK("w_dprintf_data", memcmp(buf, "dp42", 4) == 0);
    /* main's socket pair */
    CHECK_EQ("w_send", send(sp[1], "ping", 4, 0), 4);
    char a[3] = "", b[8] = "";
    struct iovec iov[2] = { { a, 2 }, { b, sizeof b } };
    struct msghdr m = { .msg_iov = iov, .msg_iovlen = 2 };
    CHECK_EQ("w_recvmsg", recvmsg(sp[1], &m, 0), 5);
    CHECK("w_recvmsg_data", memcmp(a, "po", 2) == 0 && memcmp(b, "ng!", 3) == 0);
    /* main's datagram pair: three messages a call each way */
    char o[3][8] = { "one", "two!", "three" }, in[3][8];
    memset(in, 0, sizeof in);
    struct iovec oi[3], ii[3];
    struct mmsghdr ov[3], iv[3];
    memset(ov, 0, sizeof ov);
    memset(iv, 0, sizeof iv);
    for (int k = 0; k < 3; k++) {
        oi[k] = (struct iovec){ o[k], strlen(o[k]) };
        ii[k] = (struct iovec){ in[k], sizeof in[k] };
        ov[k].msg_hdr = (struct msghdr){ .msg_iov = &oi[k], .msg_iovlen = 1 };
        iv[k].msg_hdr = (struct msghdr){ .msg_iov = &ii[k], .msg_iovlen = 1 };
    }
    CHECK_EQ("w_sendmmsg", sendmmsg(dg[1], ov, 3, 0), 3);
    CHECK_EQ("w_sendmmsg_len", ov[2].msg_len, 5);
    CHECK_EQ("w_recvmmsg", recvmmsg(dg[0], iv, 3, MSG_WAITFORONE, NULL), 3);
    CHECK("w_recvmmsg_data", iv[1].msg_len == 4 && strcmp(in[1], "two!") == 0 &&
                             strcmp(in[2], "three") == 0);
    CHECK_EQ("w_recvmmsg_empty", recvmmsg(dg[0], iv, 3, MSG_DONTWAIT, NULL), -1);
    CHECK_ERR("w_recvmmsg_eagain", errno, EAGAIN);
    /* dup2 onto a descriptor main chose */
    CHECK_EQ("w_dup2", dup2(fd_a, dupfd), dupfd);
    /* the scan: two numbers, then main reads on */
    CHECK_EQ("w_fscanf", fscanf(f_scan, "%d %d", &scanned[0], &scanned[1]), 2);
    /* TCP: connect to main's listening socket */
    int s = socket(AF_INET, SOCK_STREAM, 0);
    CHECK_GE("w_socket", s, 0);
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK_EQ("w_connect", connect(s, (struct sockaddr *)&sa, sizeof sa), 0);
    CHECK_EQ("w_tcp_send", send(s, "tcp!", 4, 0), 4);
    gate_set(&to_main, 2);

    /* 3: what main wrote into the worker's stream and pipe */
    CHECK("w_gate_3", gate_wait(&to_worker, 3));
    CHECK_EQ("w_tcp_recv", recv(s, buf, sizeof buf, 0), 5);
    CHECK("w_tcp_data", memcmp(buf, "back!", 5) == 0);
    CHECK_EQ("w_tcp_close", close(s), 0);
    FILE *r = fopen(path_b, "r");
    CHECK("w_fopen_r", r != NULL);
    char *line = NULL;
    size_t cap = 0;
    int lines = 0, good = 0;
    ssize_t len;
    while ((len = getline(&line, &cap, r)) > 0) {
        char want[64];
        snprintf(want, sizeof want, "main %d\n", lines);
        good += strcmp(line, want) == 0;
        lines++;
    }
    free(line);
    CHECK_EQ("w_getline_lines", lines, LINES);
    CHECK_EQ("w_getline_good", good, LINES);
    CHECK("w_feof", feof(r) != 0);
    char keep[8] = "keep"; /* fgets at the end leaves the buffer alone */
    CHECK("w_fgets_eof", fgets(keep, sizeof keep, r) == NULL && strcmp(keep, "keep") == 0);
    rewind(r);
    CHECK_EQ("w_fread", fread(buf, 7, 2, r), 2);
    CHECK("w_fread_data", memcmp(buf, "main 0\nmain 1\n", 14) == 0);
    CHECK_EQ("w_fclose_r", fclose(r), 0);
    CHECK_EQ("w_read_pipe_w", read(pipe_w[0], buf, sizeof buf), 6);
    CHECK("w_read_pipe_w_data", memcmp(buf, "pipe!", 6) == 0);
    /* stdin is the process's: main made it a file */
    int x = 0, y = 0;
    CHECK_EQ("w_scanf", scanf("%d", &x), 1);
    CHECK_EQ("w_scanf_x", x, 7);
    CHECK_EQ("w_getchar", getchar(), ' ');
    CHECK_EQ("w_fscanf_stdin", fscanf(stdin, "%d", &y), 1);
    CHECK_EQ("w_fscanf_stdin_y", y, 8);
    CHECK_EQ("w_getc_stdin", getc(stdin), '\n');
    CHECK("w_fgets_stdin", fgets(buf, sizeof buf, stdin) && strcmp(buf, "stdin line\n") == 0);
    /* closing main's descriptor */
    CHECK_EQ("w_close", close(pipe_m[1]), 0);
    /* the node's own descriptors */
    own_fds[0] = open("/proc/self/status", O_RDONLY);
    DIR *d = opendir("/proc/self/fd");
    own_fds[1] = d ? dirfd(d) : -1;
    FILE *own_st = fopen("/proc/self/stat", "r");
    own_fds[2] = own_st ? fileno(own_st) : -1;
    own_fds[3] = dup(own_fds[0]);
    own_fds[4] = dup(2);
    for (int i = 0; i < OWN; i++)
        CHECK_GE("w_own_fd", own_fds[i], 0);
    gate_set(&to_main, 3);

    /* 4: main's descriptors and the node's own, each reached */
    CHECK("w_gate_4", gate_wait(&to_worker, 4));
    int reached = 0;
    for (int i = 0; i < probes; i++)
        reached += pread(probe_fds[i], buf, 6, 0) == 6 && !memcmp(buf, "probe!", 6);
    CHECK_EQ("w_main_fds_reached", reached, probes);
    memset(buf, 0, sizeof buf);
    CHECK_EQ("w_own_pread", pread(own_fds[0], buf, 5, 0), 5);
    CHECK("w_own_pread_data", !strcmp(buf, "Name:"));
    memset(buf, 0, sizeof buf);
    CHECK_EQ("w_own_dup_pread", pread(own_fds[3], buf, 5, 0), 5);
    CHECK("w_own_dup_pread_data", !strcmp(buf, "Name:"));
    CHECK("w_own_readdir", d && readdir(d) != NULL);
    CHECK("w_own_stream", own_st && fscanf(own_st, "%d", &x) == 1 && x > 0);
    struct stat s2, sd;
    (void)s2; /* a copy of stderr is a copy of the process's (main's) */
    CHECK("w_dup_stderr_process", !fstat(own_fds[4], &sd) && main_stderr.st_ino == sd.st_ino &&
                                      main_stderr.st_dev == sd.st_dev);
    CHECK_EQ("w_own_close", close(own_fds[0]) | close(own_fds[3]) | close(own_fds[4]), 0);
    CHECK_EQ("w_own_closedir", d ? closedir(d) : -1, 0);
    CHECK_EQ("w_own_fclose", own_st ? fclose(own_st) : -1, 0);
    gate_set(&to_main, 4);
    return NULL;
}

int main(void)
{
    check_start();
    CHECK_EQ("fstat_stderr", fstat(2, &main_stderr), 0);
    char buf[512];
    snprintf(dir, sizeof dir, "/tmp/cables-files-XXXXXX");
    CHECK("mkdtemp", mkdtemp(dir) != NULL);
    snprintf(path_a, sizeof path_a, "%s/a", dir);
    snprintf(path_c, sizeof path_c, "%s/c", dir);
    fd_a = open(path_a, O_RDWR | O_CREAT | O_TRUNC, 0600);
    CHECK_GE("open", fd_a, 0);
    CHECK_EQ("write", write(fd_a, "abcdefghij", 10), 10);
    f_main = fopen(path_c, "w+");
    CHECK("fopen", f_main != NULL);
    CHECK_EQ("pipe", pipe(pipe_m), 0);
    CHECK_EQ("socketpair", socketpair(AF_UNIX, SOCK_STREAM, 0, sp), 0);
    CHECK_EQ("socketpair_dgram", socketpair(AF_UNIX, SOCK_DGRAM, 0, dg), 0);
    dupfd = open("/dev/null", O_RDONLY);
    CHECK_GE("open_devnull", dupfd, 0);
    /* the numbers the worker scans */
    char scan_path[96];
    snprintf(scan_path, sizeof scan_path, "%s/scan", dir);
    FILE *w = fopen(scan_path, "w");
    CHECK("fopen_scan", w != NULL);
    fputs("12 34xyz\n", w);
    fclose(w);
    f_scan = fopen(scan_path, "r");
    char in_path[96];
    snprintf(in_path, sizeof in_path, "%s/in", dir);
    w = fopen(in_path, "w");
    CHECK("fopen_in", w != NULL);
    fputs("7 8\nstdin line\n", w);
    fclose(w);
    CHECK("freopen_stdin", freopen(in_path, "r", stdin) != NULL);
    CHECK("fopen_scan_r", f_scan != NULL);
    /* a listening socket on the loopback */
    lsock = socket(AF_INET, SOCK_STREAM, 0);
    CHECK_GE("socket", lsock, 0);
    struct sockaddr_in sa = { .sin_family = AF_INET };
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK_EQ("bind", bind(lsock, (struct sockaddr *)&sa, sizeof sa), 0);
    socklen_t sl = sizeof sa;
    CHECK_EQ("getsockname", getsockname(lsock, (struct sockaddr *)&sa, &sl), 0);
    port = ntohs(sa.sin_port);
    CHECK_EQ("listen", listen(lsock, 4), 0);

    pthread_t t;
    CHECK_EQ("create", pthread_create(&t, NULL, worker, NULL), 0);
    gate_set(&to_worker, 1);
    CHECK("gate_1", gate_wait(&to_main, 1));
    CHECK_EQ("offset_after_worker", lseek(fd_a, 0, SEEK_CUR), 20);
    struct stat st;
    CHECK_EQ("stat_flushed", stat(path_c, &st), 0); /* the worker's fflush(NULL) wrote it */
    CHECK_EQ("stat_flushed_size", (long)st.st_size, c_len);
    CHECK_EQ("pread", pread(fd_a, buf, 20, 0), 20);
    CHECK("pread_data", memcmp(buf, "abcXYfghij0123456789", 20) == 0);
    /* the worker's lines, read back through the same stream */
    rewind(f_main);
    int lines = 0, good = 0;
    while (fgets(buf, sizeof buf, f_main)) {
        char want[64];
        snprintf(want, sizeof want, "line %d of the worker\n", lines);
        if (lines < LINES)
            good += strcmp(buf, want) == 0;
        lines++;
    }
    CHECK_EQ("fgets_lines", lines, LINES + 3);
    CHECK_EQ("fgets_good", good, LINES);
    CHECK_EQ("fclose_main", fclose(f_main), 0);
    /* the worker's stream, written here */
    for (int i = 0; i < LINES; i++)
        fprintf(f_worker, "main %d\n", i);
    CHECK_EQ("fclose_worker_stream", fclose(f_worker), 0);
    CHECK_EQ("write_pipe_w", write(pipe_w[1], "pipe!", 6), 6);

    CHECK_EQ("write_pipe_m", write(pipe_m[1], "from main!", 11), 11);
    CHECK_EQ("send_pong", send(sp[0], "pong!", 5, 0), 5);
    gate_set(&to_worker, 2);
    CHECK("gate_2", gate_wait(&to_main, 2));
    CHECK_EQ("recv_ping", recv(sp[0], buf, sizeof buf, 0), 4);
    CHECK("recv_ping_data", memcmp(buf, "ping", 4) == 0);
    /* dupfd is now fd_a's file */
    CHECK_EQ("dup2_seen", pread(dupfd, buf, 3, 0), 3);
    CHECK("dup2_data", memcmp(buf, "abc", 3) == 0);
    /* the scan stopped at 'x' and gave it back */
    CHECK_EQ("scanned_0", scanned[0], 12);
    CHECK_EQ("scanned_1", scanned[1], 34);
    CHECK_EQ("after_scan", fgetc(f_scan), 'x');
    fclose(f_scan);
    int c = accept(lsock, NULL, NULL);
    CHECK_GE("accept", c, 0);
    CHECK_EQ("tcp_recv", recv(c, buf, 4, MSG_WAITALL), 4);
    CHECK("tcp_data", memcmp(buf, "tcp!", 4) == 0);
    CHECK_EQ("tcp_send", send(c, "back!", 5, 0), 5);
    gate_set(&to_worker, 3);
    CHECK("gate_3", gate_wait(&to_main, 3));
    /* files, lowest numbers first, past the worker's node's own numbers */
    int top = 0;
    for (int i = 0; i < OWN; i++)
        top = own_fds[i] > top ? own_fds[i] : top;
    char probe_path[96];
    snprintf(probe_path, sizeof probe_path, "%s/probe", dir);
    int pf = open(probe_path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    CHECK_EQ("probe_write", write(pf, "probe!", 6), 6);
    probe_fds[probes++] = pf;
    while (probes < PROBES && probe_fds[probes - 1] <= top && probe_fds[probes - 1] >= 0)
        probe_fds[probes++] = open(probe_path, O_RDONLY);
    gate_set(&to_worker, 4);
    CHECK("gate_4", gate_wait(&to_main, 4));
    for (int i = 0; i < probes; i++)
        close(probe_fds[i]);
    unlink(probe_path);
    /* the worker closed pipe_m[1]: it is closed here */
    errno = 0;
    CHECK_EQ("closed_by_worker", write(pipe_m[1], "x", 1), -1);
    CHECK_ERR("closed_by_worker_errno", errno, EBADF);
    CHECK_EQ("join", pthread_join(t, NULL), 0);
    close(c);
    close(lsock);
    close(fd_a);
    unlink(path_a);
    unlink(path_b);
    unlink(path_c);
    unlink(scan_path);
    unlink(in_path);
    rmdir(dir);
    return check_finish();
}
