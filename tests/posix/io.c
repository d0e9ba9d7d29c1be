/* io: system calls and stdio on buffers that another thread allocated and
 * filled (on 2 nodes that thread runs on the other node, so these buffers'
 * pages are homed there and not present where the call is made; the kernel
 * does not fault them in).  Main writes files from such buffers and reads
 * files into them with write/read, pread/pwrite, writev/readv (the iovec
 * arrays remote too), fwrite/fread (large transfers go straight to the
 * caller's buffer), a FILE whose setvbuf buffer is remote (fgets, fscanf,
 * getline, fgetc, fprintf, fputs, fputc), opens and unlinks a path the
 * other thread wrote, and sends and receives through a socketpair with
 * send/recv, sendto/recvfrom and sendmsg/recvmsg.  The other way round, the
 * thread does file I/O on buffers main filled, through paths main wrote.
 * A second thread then checks that what the kernel stored into its
 * buffers reached it.  File descriptors and FILEs are used only by the
 * thread that opened them (tests/posix/files.c shares them).
 * RESULT ok=1 checks=N (check.h) */
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <unistd.h>

#include "check.h"

#define SZ (8 * 4096 * 3 + 123) /* many pages, not a whole number of them */
#define OFF 100                 /* transfers start inside a page */
#define VB 16384                /* setvbuf buffers */
#define NS 20000                /* socket transfer */
#define NF 6

static char paths[NF][64];      /* made by main (shared static data) */

/* made and filled by the worker, used by main */
static struct {
    unsigned char *src, *dst, *pdst, *fsrc, *fdst, *vsrc[2], *vdst[2], *ssrc, *sdst, *mdst;
    struct iovec *iov_w, *iov_r, *iov_m;
    char *rvbuf, *wvbuf, *path;
} B;
/* made and filled by main, used by the worker */
static unsigned char *msrc, *mdst, *mfdst;

static unsigned char pat(size_t i, int seed)
{
    return (unsigned char)(i * 131u + (unsigned)seed * 7u + (i >> 9));
}

static unsigned char *filled(size_t n, int seed)
{
    unsigned char *p = malloc(n);
    for (size_t i = 0; i < n; i++)
        p[i] = pat(i, seed);
    return p;
}

static unsigned char *constant(size_t n, int c)
{
    unsigned char *p = malloc(n);
    memset(p, c, n);
    return p;
}

/* bytes of p[0..n) that are not pat(from + i, seed) */
static long wrong(const unsigned char *p, size_t n, size_t from, int seed)
{
    long bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += p[i] != pat(from + i, seed);
    return bad;
}

static long wrong_const(const unsigned char *p, size_t n, int c)
{
    long bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += p[i] != (unsigned char)c;
    return bad;
}

/* a file's content, read into private-enough memory of the caller (fresh) */
static unsigned char *slurp(const char *path, size_t *n)
{
    unsigned char *p = malloc(4 * SZ);
    int fd = open(path, O_RDONLY);
    ssize_t got = 0, r = 0;
    while (fd >= 0 && (r = read(fd, p + got, 4 * SZ - (size_t)got)) > 0)
        got += r;
    if (fd >= 0)
        close(fd);
    *n = (size_t)(got > 0 ? got : 0);
    return p;
}

static void spit(const char *path, const unsigned char *p, size_t n)
{
    int fd = open(path, O_WRONLY | O_TRUNC);
    if (fd < 0 || write(fd, p, n) != (ssize_t)n)
        fprintf(stderr, "io: cannot prepare %s\n", path);
    if (fd >= 0)
        close(fd);
}

static void *worker(void *arg)
{
    (void)arg;
    B.src = filled(SZ, 1);
    B.dst = constant(SZ, 0xEE);
    B.pdst = constant(SZ, 0xEE);
    B.fsrc = filled(SZ, 3);
    B.fdst = constant(SZ + 100, 0xEE);
    for (int k = 0; k < 2; k++) {
        B.vsrc[k] = filled(SZ, 4 + k);
        B.vdst[k] = constant(SZ, 0xEE);
    }
    B.iov_w = malloc(2 * sizeof *B.iov_w);
    B.iov_r = malloc(2 * sizeof *B.iov_r);
    B.iov_m = malloc(2 * sizeof *B.iov_m);
    for (int k = 0; k < 2; k++) {
        B.iov_w[k] = (struct iovec){ B.vsrc[k], SZ - 7 * k };
        B.iov_r[k] = (struct iovec){ B.vdst[k], SZ - 7 * k };
    }
    B.ssrc = filled(NS, 6);
    B.sdst = constant(NS, 0xEE);
    B.mdst = constant(NS, 0xEE);
    B.iov_m[0] = (struct iovec){ B.mdst, NS / 2 };
    B.iov_m[1] = (struct iovec){ B.mdst + NS / 2, NS - NS / 2 };
    B.rvbuf = (char *)constant(VB, 'r');
    B.wvbuf = (char *)constant(VB, 'w');
    B.path = malloc(64);
    strcpy(B.path, paths[2]);

    /* the other way round: main's buffers, main's paths, here */
    int fd = open(paths[0], O_WRONLY | O_TRUNC);
    CHECK_GE("w_open_main_path", fd, 0);
    CHECK_EQ("w_write_main_buffer", write(fd, msrc, SZ), SZ);
    close(fd);
    fd = open(paths[0], O_RDONLY);
    CHECK_EQ("w_read_into_main_buffer", read(fd, mdst, SZ), SZ);
    close(fd);
    CHECK_EQ("w_read_main_buffer_bytes", wrong(mdst, SZ, 0, 9), 0);
    FILE *f = fopen(paths[1], "w");
    CHECK("w_fopen_main_path", f != NULL);
    CHECK_EQ("w_fwrite_main_buffer", fwrite(msrc, 1, SZ, f), SZ);
    CHECK_EQ("w_fclose", fclose(f), 0);
    f = fopen(paths[1], "r");
    CHECK_EQ("w_fread_into_main_buffer", fread(mfdst, 1, SZ, f), SZ);
    fclose(f);
    CHECK_EQ("w_fread_main_buffer_bytes", wrong(mfdst, SZ, 0, 9), 0);
    return NULL;
}

/* after main's calls: what the kernel stored into the worker's buffers on
 * main's node is seen here */
static void *checker(void *arg)
{
    (void)arg;
    CHECK_EQ("c_read_bytes", wrong(B.dst + OFF, SZ - OFF, 0, 2), 0);
    CHECK_EQ("c_pread_bytes", wrong(B.pdst, 5000, 777, 2), 0);
    CHECK_EQ("c_readv_bytes", wrong(B.vdst[0], SZ, 0, 4) + wrong(B.vdst[1], SZ - 7, 0, 5), 0);
    CHECK_EQ("c_fread_bytes", wrong(B.fdst, SZ, 0, 3) + wrong(B.fdst + SZ, 100, 0, 3), 0);
    CHECK_EQ("c_recv_bytes", wrong(B.sdst, NS, 0, 6), 0);
    CHECK_EQ("c_recvmsg_bytes", wrong(B.mdst, NS, 0, 6), 0);
    return NULL;
}

static void files(void)
{
    size_t n;
    unsigned char *got;

    /* write(2) from a remote buffer, to a path the worker wrote */
    int fd = open(B.path, O_WRONLY | O_TRUNC);
    CHECK_GE("open_remote_path", fd, 0);
    CHECK_EQ("write_remote", write(fd, B.src + OFF, SZ - OFF), SZ - OFF);
    /* pwrite from a remote buffer, inside what was just written */
    CHECK_EQ("pwrite_remote", pwrite(fd, B.fsrc + 3, 9000, 3 * 4096 + 5), 9000);
    close(fd);
    got = slurp(paths[2], &n);
    CHECK_EQ("write_size", n, SZ - OFF);
    CHECK_EQ("write_bytes", wrong(got, 3 * 4096 + 5, OFF, 1) +
             wrong(got + 3 * 4096 + 9005, SZ - OFF - (3 * 4096 + 9005), OFF + 3 * 4096 + 9005, 1), 0);
    CHECK_EQ("pwrite_bytes", wrong(got + 3 * 4096 + 5, 9000, 3, 3), 0);
    free(got);

    /* read(2) and pread into remote buffers */
    unsigned char *mine = filled(SZ, 2);
    spit(paths[2], mine, SZ);
    free(mine);
    fd = open(paths[2], O_RDONLY);
    CHECK_EQ("read_remote", read(fd, B.dst + OFF, SZ - OFF), SZ - OFF);
    CHECK_EQ("read_bytes", wrong(B.dst + OFF, SZ - OFF, 0, 2), 0);
    CHECK_EQ("read_left_alone", wrong_const(B.dst, OFF, 0xEE), 0);
    CHECK_EQ("pread_remote", pread(fd, B.pdst, 5000, 777), 5000);
    CHECK_EQ("pread_bytes", wrong(B.pdst, 5000, 777, 2), 0);
    CHECK_EQ("pread_left_alone", wrong_const(B.pdst + 5000, SZ - 5000, 0xEE), 0);
    close(fd);

    /* writev and readv: remote iovec arrays pointing at remote buffers */
    fd = open(paths[3], O_RDWR | O_TRUNC);
    CHECK_EQ("writev_remote", writev(fd, B.iov_w, 2), 2 * SZ - 7);
    CHECK_EQ("lseek", lseek(fd, 0, SEEK_SET), 0);
    CHECK_EQ("readv_remote", readv(fd, B.iov_r, 2), 2 * SZ - 7);
    close(fd);
    CHECK_EQ("readv_bytes", wrong(B.vdst[0], SZ, 0, 4) + wrong(B.vdst[1], SZ - 7, 0, 5), 0);

    /* fwrite and fread: large (straight to the buffer) and small (through the FILE) */
    FILE *f = fopen(paths[3], "w");
    CHECK("fopen_w", f != NULL);
    CHECK_EQ("fwrite_remote_large", fwrite(B.fsrc, 1, SZ, f), SZ);
    CHECK_EQ("fwrite_remote_small", fwrite(B.fsrc, 1, 100, f), 100);
    CHECK_EQ("fclose_w", fclose(f), 0);
    got = slurp(paths[3], &n);
    CHECK_EQ("fwrite_size", n, SZ + 100);
    CHECK_EQ("fwrite_bytes", wrong(got, SZ, 0, 3) + wrong(got + SZ, 100, 0, 3), 0);
    free(got);
    f = fopen(paths[3], "r");
    CHECK_EQ("fread_remote_small", fread(B.fdst, 1, 50, f), 50);
    CHECK_EQ("fread_remote_large", fread(B.fdst + 50, 1, SZ + 50, f), SZ + 50);
    fclose(f);
    CHECK_EQ("fread_bytes", wrong(B.fdst, SZ, 0, 3) + wrong(B.fdst + SZ, 100, 0, 3), 0);

    /* a FILE whose buffer is remote: input (libc reads into the buffer) */
    f = fopen(paths[4], "w");
    for (int i = 0; i < 3000; i++)
        fprintf(f, "line %d\n", i);
    fclose(f);
    f = fopen(paths[4], "r");
    CHECK_EQ("setvbuf_r", setvbuf(f, B.rvbuf, _IOFBF, VB), 0);
    char line[64];
    CHECK("fgets_remote_buf", fgets(line, sizeof line, f) && strcmp(line, "line 0\n") == 0);
    int v = -1;
    CHECK_EQ("fscanf_remote_buf", fscanf(f, "line %d\n", &v), 1);
    CHECK_EQ("fscanf_value", v, 1);
    char *gl = NULL;
    size_t glen = 0;
    long ok = 0;
    for (int i = 2; i < 2990; i++) { /* through several refills of the buffer */
        ssize_t r = getline(&gl, &glen, f);
        snprintf(line, sizeof line, "line %d\n", i);
        ok += r > 0 && strcmp(gl, line) == 0;
    }
    CHECK_EQ("getline_remote_buf", ok, 2988);
    free(gl);
    CHECK_EQ("fgetc_remote_buf", fgetc(f), 'l');
    CHECK_EQ("getc_remote_buf", getc(f), 'i');
    CHECK_EQ("fseek_remote_buf", fseek(f, 7, SEEK_SET), 0);
    CHECK("fgets_after_seek", fgets(line, sizeof line, f) && strcmp(line, "line 1\n") == 0);
    fclose(f);

    /* ... and output (libc writes from the buffer) */
    f = fopen(paths[5], "w");
    CHECK_EQ("setvbuf_w", setvbuf(f, B.wvbuf, _IOFBF, VB), 0);
    for (int i = 0; i < 3000; i++)
        fprintf(f, "out %d\n", i);
    fputs("tail\n", f);
    fputc('!', f);
    putc('\n', f);
    CHECK_EQ("fflush_remote_buf", fflush(f), 0);
    fputs("end\n", f);
    CHECK_EQ("fclose_remote_buf", fclose(f), 0);
    f = fopen(paths[5], "r");
    ok = 0;
    for (int i = 0; i < 3000; i++) {
        char want[32];
        snprintf(want, sizeof want, "out %d\n", i);
        ok += fgets(line, sizeof line, f) && strcmp(line, want) == 0;
    }
    CHECK_EQ("fprintf_lines", ok, 3000);
    CHECK("fputs_fputc_lines", fgets(line, sizeof line, f) && strcmp(line, "tail\n") == 0 &&
          fgets(line, sizeof line, f) && strcmp(line, "!\n") == 0 &&
          fgets(line, sizeof line, f) && strcmp(line, "end\n") == 0);
    fclose(f);
}

static void sockets(void)
{
    int sv[2];
    CHECK_EQ("socketpair", socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    struct timeval tv = { WAIT_MS / 1000, 0 }; /* a receive never hangs */
    for (int k = 0; k < 2; k++)
        setsockopt(sv[k], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    CHECK_EQ("send_remote", send(sv[0], B.ssrc, NS, 0), NS);
    CHECK_EQ("recv_remote", recv(sv[1], B.sdst, NS, MSG_WAITALL), NS);
    CHECK_EQ("recv_bytes", wrong(B.sdst, NS, 0, 6), 0);
    memset(B.sdst, 0xEE, NS);
    CHECK_EQ("sendto_remote", sendto(sv[1], B.ssrc, NS, 0, NULL, 0), NS);
    CHECK_EQ("recvfrom_remote", recvfrom(sv[0], B.sdst, NS, MSG_WAITALL, NULL, NULL), NS);
    CHECK_EQ("recvfrom_bytes", wrong(B.sdst, NS, 0, 6), 0);
    struct iovec one = { B.ssrc, NS };
    struct msghdr sm = { .msg_iov = &one, .msg_iovlen = 1 };
    struct msghdr rm = { .msg_iov = B.iov_m, .msg_iovlen = 2 };
    CHECK_EQ("sendmsg_remote", sendmsg(sv[0], &sm, 0), NS);
    CHECK_EQ("recvmsg_remote", recvmsg(sv[1], &rm, MSG_WAITALL), NS);
    CHECK_EQ("recvmsg_bytes", wrong(B.mdst, NS, 0, 6), 0);
    close(sv[0]);
    close(sv[1]);
}

int main(void)
{
    check_start();
    for (int i = 0; i < NF; i++) {
        snprintf(paths[i], sizeof paths[i], "/tmp/cables-io-XXXXXX");
        int fd = mkstemp(paths[i]);
        CHECK_GE("mkstemp", fd, 0);
        if (fd >= 0)
            close(fd);
    }
    msrc = filled(SZ, 9);
    mdst = constant(SZ, 0xEE);
    mfdst = constant(SZ, 0xEE);

    pthread_t t;
    CHECK_ERR("create", pthread_create(&t, NULL, worker, NULL), 0);
    CHECK_ERR("join", pthread_join(t, NULL), 0);
    CHECK_EQ("main_sees_worker_read", wrong(mdst, SZ, 0, 9), 0);
    CHECK_EQ("main_sees_worker_fread", wrong(mfdst, SZ, 0, 9), 0);

    files();
    sockets();

    CHECK_ERR("create_checker", pthread_create(&t, NULL, checker, NULL), 0);
    CHECK_ERR("join_checker", pthread_join(t, NULL), 0);

    CHECK_EQ("unlink_remote_path", unlink(B.path), 0);
    long gone = 0;
    for (int i = 0; i < NF; i++)
        gone += remove(paths[i]) == 0 || i == 2; /* 2: unlinked above */
    CHECK_EQ("remove", gone, NF);
    return check_finish();
}
