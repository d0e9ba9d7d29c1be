/* remote.c: the master's descriptors and streams, for every node.  A
 * process has one table of file descriptors; a relinked program's process
 * is every node process, and its table is the master's.  So an application
 * thread on another node makes its calls on descriptors there
 * (libcables/src/rsys.c: a message, a proxy thread at the master, the bytes
 * the call reads and stores carried both ways): a file, pipe or socket
 * opened by any thread is used by every thread, with one offset, as in one
 * process.  Descriptors 1 and 2 are each node's own (the launcher gathers
 * every node's standard output and error onto its own) until the program
 * moves one (dup2 or dup3 onto it, close, freopen of its stream, on any
 * node): that call, and a dup of one, is made at the master, and from then
 * on that one is the master's on every node (shim_std_moved).
 *
 * Streams the same: a FILE of another node's thread is the master's (its
 * fopen is made there; the FILE pointer it gets is the master's, never
 * touched here), and each stdio call on it is made there, on the one
 * buffer, under the one lock of the stream.  stdin is the master's too;
 * stdout and stderr follow descriptors 1 and 2.  Streams in memory (fmemopen,
 * open_memstream, fopencookie) are the node's own: their buffers are the
 * program's memory.
 *
 * Calls that are not covered (io.c and this file name those that are) use
 * this node's descriptor of that number: see pthread_shim/README.md. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <termios.h>
#include <unistd.h>
#include <wchar.h>

#include "shim.h"

#define CHUNK (16u << 20) /* the most bytes one call carries */

/* ---- the requests ---- */

#define P(x) ((int64_t)(uintptr_t)(x))

/* calls of libc made at the master (lib_exec) */
enum {
    RS_FOPEN = CB_RSYS_LIB, RS_FDOPEN, RS_FREOPEN, RS_TMPFILE, RS_POPEN, RS_PCLOSE, RS_FCLOSE,
    RS_FFLUSH, RS_FWRITE, RS_FREAD, RS_FGETS, RS_FGETC, RS_UNGETC, RS_FPUTC, RS_GETDELIM,
    RS_FSEEK, RS_FTELL, RS_FEOF, RS_FERROR, RS_CLEARERR, RS_FILENO, RS_SETVBUF,
    RS_CXA_ATEXIT, RS_ON_EXIT, RS_EXIT, RS_PROC, RS_REALPATH, RS_TEMP, RS_SHM_OPEN, RS_SHM_UNLINK,
    RS_STATVFS, RS_FPATHCONF, RS_SYSTEM, RS_EXEC, RS_SENDMSG, RS_RECVMSG,
};

#define rq shim_rq
#define with shim_rq_with

static void with_path(cb_rsys_t *r, int a)
{
    with(r, a, RSYS_IN, strlen((const char *)(uintptr_t)r->arg[a]) + 1);
}

/* a system call without buffers */
static long sys6(long nr, int64_t a0, int64_t a1, int64_t a2, int64_t a3)
{
    cb_rsys_t r = rq(nr, a0, a1, a2, a3, 0, 0);
    return cb_rsys(&r);
}

/* ---- transfers: in pieces of CHUNK bytes, on while each piece is whole ---- */

/* nr(h, buf, n, a3) storing into buf (out) or loading from it; a3 is an
 * offset that advances with the bytes done (at), or flags */
static ssize_t transfer(long nr, int64_t h, void *buf, size_t n, int64_t a3, bool at, bool out)
{
    size_t done = 0;
    do {
        size_t k = n - done < CHUNK ? n - done : CHUNK;
        cb_rsys_t r = rq(nr, h, P((char *)buf + done), (int64_t)k, at ? a3 + (int64_t)done : a3, 0, 0);
        r.waits = nr == RS_FREAD || nr == RS_FWRITE ? CB_RSYS_STDIO : 0; /* a stream's read or write may wait */
        with(&r, 1, out ? RSYS_OUT | RSYS_UPTO_RES : RSYS_IN, k);
        long x = cb_rsys(&r);
        if (x < 0)
            return done ? (ssize_t)done : -1;
        done += (size_t)x;
        if ((size_t)x < k)
            break;
    } while (done < n);
    return (ssize_t)done;
}

ssize_t shim_rs_read(int fd, void *buf, size_t n) { return transfer(SYS_read, fd, buf, n, 0, false, true); }
ssize_t shim_rs_write(int fd, const void *buf, size_t n)
{
    return transfer(SYS_write, fd, (void *)buf, n, 0, false, false);
}
ssize_t shim_rs_pread(int fd, void *buf, size_t n, off_t off)
{
    if (off < 0)
        return errno = EINVAL, -1;
    return transfer(SYS_pread64, fd, buf, n, off, true, true);
}
ssize_t shim_rs_pwrite(int fd, const void *buf, size_t n, off_t off)
{
    if (off < 0)
        return errno = EINVAL, -1;
    return transfer(SYS_pwrite64, fd, (void *)buf, n, off, true, false);
}
ssize_t shim_rs_recv(int fd, void *buf, size_t n, int flags)
{
    return transfer(SYS_recvfrom, fd, buf, n, flags, false, true);
}
ssize_t shim_rs_send(int fd, const void *buf, size_t n, int flags)
{
    return transfer(SYS_sendto, fd, (void *)buf, n, flags, false, false);
}

/* vectors: gathered into one buffer, or read into one and scattered */
static void *gather(const struct iovec *v, int n, size_t *len)
{
    size_t t = shim_iov_total(v, n), at = 0;
    if (t == SIZE_MAX)
        return errno = EFAULT, NULL;
    char *b = malloc(t ? t : 1); /* libc's (internal.h) */
    if (!b)
        errno = ENOMEM;
    for (int i = 0; b && i < n; at += v[i].iov_len, i++)
        memcpy(b + at, v[i].iov_base, v[i].iov_len);
    *len = t;
    return b;
}

/* len bytes of b into the vector, from its byte off */
static void scatter(const struct iovec *v, int n, size_t off, const char *b, size_t len)
{
    for (int i = 0; i < n && len; i++) {
        if (off >= v[i].iov_len) {
            off -= v[i].iov_len;
            continue;
        }
        size_t k = v[i].iov_len - off < len ? v[i].iov_len - off : len;
        memcpy((char *)v[i].iov_base + off, b, k);
        b += k, len -= k, off = 0;
    }
}

ssize_t shim_rs_readv(int fd, const struct iovec *v, int n, bool positioned, off_t off)
{
    if (n < 0 || n > IOV_MAX)
        return errno = EINVAL, -1;
    size_t t = shim_iov_total(v, n);
    if (t == SIZE_MAX)
        return errno = EFAULT, -1;
    char *b = malloc(t ? t : 1);
    if (!b)
        return errno = ENOMEM, -1;
    ssize_t r = positioned ? shim_rs_pread(fd, b, t, off) : shim_rs_read(fd, b, t);
    if (r > 0)
        scatter(v, n, 0, b, (size_t)r);
    free(b);
    return r;
}

ssize_t shim_rs_writev(int fd, const struct iovec *v, int n, bool positioned, off_t off)
{
    if (n < 0 || n > IOV_MAX)
        return errno = EINVAL, -1;
    size_t t;
    char *b = gather(v, n, &t);
    if (!b)
        return -1;
    ssize_t r = positioned ? shim_rs_pwrite(fd, b, t, off) : shim_rs_write(fd, b, t);
    free(b);
    return r;
}

/* The room for an address the kernel writes: what the caller gives, up to
 * the largest address there is (an unset length asked gigabytes of the
 * master); written back only as long as the address (RSYS_UPTO_LEN: a
 * length too large for the caller's buffer overran it where the kernel
 * writes the address alone) */
static size_t addr_room(socklen_t len)
{
    return len < sizeof(struct sockaddr_storage) ? len : sizeof(struct sockaddr_storage);
}

ssize_t shim_rs_recvfrom(int fd, void *buf, size_t n, int flags, struct sockaddr *from,
                         socklen_t *len)
{
    if (n > CHUNK)
        n = CHUNK; /* a datagram is taken whole, once */
    cb_rsys_t r = rq(SYS_recvfrom, fd, P(buf), (int64_t)n, flags, P(from), P(len));
    with(&r, 1, RSYS_OUT | RSYS_UPTO_RES, n);
    if (from && len)
        with(&r, 4, RSYS_OUT | RSYS_UPTO_LEN, addr_room(*len));
    with(&r, 5, RSYS_IN | RSYS_OUT, sizeof *len);
    return cb_rsys(&r);
}

/* A message (sendmsg, recvmsg) is made at the master by recvmsg or
 * sendmsg there, from one buffer of its bytes, with its address and its
 * ancillary data (a descriptor passed is one of the master's, which the
 * process's descriptors are); rs_msg carries the lengths there and what
 * the kernel said back.  Before, the ancillary data was refused
 * (EOPNOTSUPP) or dropped, msg_flags always read 0 (no MSG_TRUNC), and a
 * message of more than CHUNK bytes on a stream socket failed with
 * EMSGSIZE: it goes in pieces of CHUNK bytes now (the ancillary data with
 * the first), on while each piece is whole, as a stream's send does. */
struct rs_msg {
    uint64_t len, controllen;
    uint32_t namelen;
    int32_t flags, msg_flags, pad;
};

#define CONTROL_MAX (1u << 20) /* far above the kernel's (optmem_max) */

static ssize_t send_pieces(int fd, const char *b, size_t t, const void *name, socklen_t namelen,
                           const void *control, size_t controllen, int flags)
{
    if (!name)
        namelen = 0; /* as the kernel's: no address, its length unread */
    if (namelen > sizeof(struct sockaddr_storage))
        return errno = EINVAL, -1;
    if (controllen > CONTROL_MAX)
        return errno = ENOBUFS, -1;
    if (t > CHUNK) { /* a datagram is sent whole or not at all */
        int type = 0;
        socklen_t tl = sizeof type;
        if (shim_rs_getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) || type != SOCK_STREAM)
            return errno = EMSGSIZE, -1;
    }
    size_t done = 0;
    do {
        size_t k = t - done < CHUNK ? t - done : CHUNK;
        bool first = done == 0;
        struct rs_msg h = { .len = k, .controllen = first && control ? controllen : 0,
                            .namelen = name ? namelen : 0, .flags = flags };
        cb_rsys_t r = rq(RS_SENDMSG, fd, P(b + done), P(name), h.controllen ? P(control) : 0,
                         0, P(&h));
        with(&r, 1, RSYS_IN, k);
        with(&r, 2, RSYS_IN, h.namelen);
        with(&r, 3, RSYS_IN, h.controllen);
        with(&r, 5, RSYS_IN, sizeof h);
        r.waits = true;
        long x = cb_rsys(&r);
        if (x < 0)
            return done ? (ssize_t)done : -1;
        done += (size_t)x;
        if ((size_t)x < k)
            break;
    } while (done < t);
    return (ssize_t)done;
}

ssize_t shim_rs_sendto(int fd, const void *buf, size_t n, int flags, const struct sockaddr *to,
                       socklen_t len)
{
    return send_pieces(fd, buf, n, to, len, NULL, 0, flags);
}

ssize_t shim_rs_recvmsg(int fd, struct msghdr *m, int flags)
{
    if (m->msg_iovlen > IOV_MAX)
        return errno = EMSGSIZE, -1;
    size_t total = shim_iov_total(m->msg_iov, (int)m->msg_iovlen);
    if (total == SIZE_MAX)
        return errno = EFAULT, -1;
    size_t t = total < CHUNK ? total : CHUNK; /* a datagram is taken whole, once */
    struct rs_msg h = { .len = t, .flags = flags,
                        .namelen = m->msg_name ? (uint32_t)addr_room(m->msg_namelen) : 0,
                        .controllen = !m->msg_control ? 0
                                      : m->msg_controllen < CONTROL_MAX ? m->msg_controllen
                                                                        : CONTROL_MAX };
    /* private: what the kernel wrote, copied into the program's as long as it is */
    char *b = malloc(t ? t : 1), *name = malloc(h.namelen + 1), *control = malloc(h.controllen + 1);
    ssize_t res = -1;
    if (!b || !name || !control) {
        errno = ENOMEM;
        goto out;
    }
    socklen_t room = h.namelen;
    cb_rsys_t r = rq(RS_RECVMSG, fd, P(b), m->msg_name ? P(name) : 0, h.controllen ? P(control) : 0,
                     0, P(&h));
    with(&r, 1, RSYS_OUT | RSYS_UPTO_RES, t);
    with(&r, 2, RSYS_OUT, h.namelen);
    with(&r, 3, RSYS_OUT, h.controllen);
    with(&r, 5, RSYS_IN | RSYS_OUT, sizeof h);
    r.waits = true;
    res = cb_rsys(&r);
    if (res < 0)
        goto out;
    size_t done = (size_t)res < t ? (size_t)res : t; /* (more than t: MSG_TRUNC's length) */
    scatter(m->msg_iov, (int)m->msg_iovlen, 0, b, done);
    /* MSG_WAITALL (a stream's): the rest in pieces, on while each is whole */
    for (long x = res, k = (long)t; flags & MSG_WAITALL && x == k && done < total; done += (size_t)x) {
        k = (long)(total - done < CHUNK ? total - done : CHUNK);
        struct rs_msg more = { .len = (uint64_t)k, .flags = flags };
        cb_rsys_t q = rq(RS_RECVMSG, fd, P(b), 0, 0, 0, P(&more));
        with(&q, 1, RSYS_OUT | RSYS_UPTO_RES, (uint64_t)k);
        with(&q, 5, RSYS_IN | RSYS_OUT, sizeof more);
        q.waits = true;
        if ((x = cb_rsys(&q)) <= 0)
            break; /* (what came before is the result) */
        scatter(m->msg_iov, (int)m->msg_iovlen, done, b, (size_t)x);
        h.msg_flags |= more.msg_flags;
        res = (ssize_t)(done + (size_t)x);
    }
    if (m->msg_name) {
        memcpy(m->msg_name, name, h.namelen < room ? h.namelen : room);
        m->msg_namelen = h.namelen; /* the address's: more than the room where it was cut */
    }
    if (m->msg_control)
        memcpy(m->msg_control, control, h.controllen);
    m->msg_controllen = m->msg_control ? h.controllen : 0;
    m->msg_flags = h.msg_flags;
out:
    free(b);
    free(name);
    free(control);
    return res;
}

ssize_t shim_rs_sendmsg(int fd, const struct msghdr *m, int flags)
{
    if (m->msg_iovlen > IOV_MAX)
        return errno = EMSGSIZE, -1;
    /* descriptors passed are the master's: not this node's own (a local
     * one's number names another descriptor there) */
    const char *end = (const char *)m->msg_control + m->msg_controllen;
    for (struct cmsghdr *c = m->msg_control ? CMSG_FIRSTHDR(m) : NULL; c;
         c = CMSG_NXTHDR((struct msghdr *)m, c)) {
        if (c->cmsg_len < sizeof *c || c->cmsg_len > (size_t)(end - (const char *)c))
            return errno = EINVAL, -1; /* as the kernel's */
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
            for (const int *fd = (const int *)(void *)CMSG_DATA(c);
                 (const char *)(fd + 1) <= (const char *)c + c->cmsg_len; fd++)
                if (shim_local_fd(*fd))
                    return errno = EOPNOTSUPP, -1;
    }
    size_t t;
    char *b = gather(m->msg_iov, (int)m->msg_iovlen, &t);
    if (!b)
        return -1;
    socklen_t nl = m->msg_namelen < sizeof(struct sockaddr_storage) ? m->msg_namelen
                                                                     : sizeof(struct sockaddr_storage);
    ssize_t r = send_pieces(fd, b, t, m->msg_name, nl, m->msg_control,
                            m->msg_controllen, flags);
    free(b);
    return r;
}

/* at the master: a message's call (send_pieces, shim_rs_recvmsg) */
static long msg_exec(int64_t op, int64_t a[6], int *err)
{
    struct rs_msg *h = (struct rs_msg *)(uintptr_t)a[5];
    if (!h)
        return *err = EINVAL, -1;
    struct iovec v = { (void *)(uintptr_t)a[1], h->len };
    struct msghdr m = { .msg_name = (void *)(uintptr_t)a[2], .msg_namelen = h->namelen,
                        .msg_iov = &v, .msg_iovlen = 1,
                        .msg_control = (void *)(uintptr_t)a[3], .msg_controllen = h->controllen };
    long r = syscall(op == RS_SENDMSG ? SYS_sendmsg : SYS_recvmsg, (int)a[0], &m, h->flags);
    if (r == -1)
        return *err = errno, -1;
    h->namelen = m.msg_namelen;
    h->controllen = m.msg_control ? m.msg_controllen : 0;
    h->msg_flags = m.msg_flags;
    return r;
}

int shim_rs_openat(int dir, const char *path, int flags, mode_t mode)
{
    cb_rsys_t r = rq(SYS_openat, dir, P(path), flags, mode, 0, 0);
    with_path(&r, 1);
    return (int)cb_rsys(&r);
}

/* A call on paths: the strings at the arguments of mask paths, in_len
 * bytes read at argument in and out_len stored at argument out (-1: none;
 * out_flags: RSYS_UPTO_RES for as many as the result) */
long shim_rs_path(long nr, int64_t a0, int64_t a1, int64_t a2, int64_t a3, int64_t a4,
                  unsigned paths, int in, size_t in_len, int out, size_t out_len, uint32_t out_flags)
{
    cb_rsys_t r = rq(nr, a0, a1, a2, a3, a4, 0);
    for (int a = 0; a < 5; a++)
        if (paths >> a & 1)
            with_path(&r, a);
    if (in >= 0)
        with(&r, in, RSYS_IN, in_len);
    if (out >= 0)
        with(&r, out, RSYS_OUT | out_flags, out_len);
    return cb_rsys(&r);
}

/* nr(a0, buf) or nr(a0, path, buf, flags) storing a struct: n bytes at arg a */
long shim_rs_store(long nr, int64_t a0, int64_t a1, int64_t a2, int64_t a3, int64_t a4, int a,
                   size_t n)
{
    cb_rsys_t r = rq(nr, a0, a1, a2, a3, a4, 0);
    if (nr == SYS_newfstatat || nr == SYS_statx)
        with_path(&r, 1);
    with(&r, a, RSYS_OUT, n);
    return cb_rsys(&r);
}

/* accept, getsockname, getpeername: an address and its length out */
int shim_rs_addr(long nr, int fd, struct sockaddr *addr, socklen_t *len, int flags)
{
    cb_rsys_t r = rq(nr, fd, P(addr), P(len), flags, 0, 0);
    if (addr && len)
        with(&r, 1, RSYS_OUT | RSYS_UPTO_LEN, addr_room(*len));
    with(&r, 2, RSYS_IN | RSYS_OUT, sizeof *len);
    return (int)cb_rsys(&r);
}

/* bind, connect, setsockopt (the value at arg a, n bytes, read) */
int shim_rs_load(long nr, int64_t a0, int64_t a1, int64_t a2, int64_t a3, int64_t a4, int a,
                 size_t n)
{
    cb_rsys_t r = rq(nr, a0, a1, a2, a3, a4, 0);
    with(&r, a, RSYS_IN, n);
    return (int)cb_rsys(&r);
}

int shim_rs_getsockopt(int fd, int level, int name, void *val, socklen_t *len)
{
    cb_rsys_t r = rq(SYS_getsockopt, fd, level, name, P(val), P(len), 0);
    if (val && len)
        with(&r, 3, RSYS_IN | RSYS_OUT, *len);
    with(&r, 4, RSYS_IN | RSYS_OUT, sizeof *len);
    return (int)cb_rsys(&r);
}

int shim_rs_pair(long nr, int64_t a0, int64_t a1, int64_t a2, int fds_arg, int fds[2])
{
    cb_rsys_t r = rq(nr, a0, a1, a2, 0, 0, 0);
    r.arg[fds_arg] = P(fds);
    with(&r, fds_arg, RSYS_OUT, 2 * sizeof(int));
    return (int)cb_rsys(&r);
}

int shim_rs_poll(struct pollfd *fds, nfds_t n, const struct timespec *ts)
{
    struct timespec t;
    if (ts)
        t = *ts;
    cb_rsys_t r = rq(SYS_ppoll, P(fds), (int64_t)n, ts ? P(&t) : 0, 0, 8, 0);
    with(&r, 0, RSYS_IN | RSYS_OUT, n * sizeof *fds);
    with(&r, 2, RSYS_IN | RSYS_OUT, sizeof t);
    return (int)cb_rsys(&r);
}

/* select and pselect: the sets in and out, the time in (and, for select, out) */
int shim_rs_select(int n, fd_set *rd, fd_set *wr, fd_set *ex, struct timeval *tv,
                   const struct timespec *ts)
{
    if (n < 0 || n > FD_SETSIZE)
        return errno = EINVAL, -1;
    size_t s = ((size_t)n + 63) / 64 * 8;
    struct timespec t;
    if (ts)
        t = *ts;
    cb_rsys_t r = tv ? rq(SYS_select, n, P(rd), P(wr), P(ex), P(tv), 0)
                     : rq(SYS_pselect6, n, P(rd), P(wr), P(ex), ts ? P(&t) : 0, 0);
    for (int k = 1; k <= 3; k++)
        with(&r, k, RSYS_IN | RSYS_OUT, s);
    with(&r, 4, RSYS_IN | RSYS_OUT, tv ? sizeof *tv : sizeof t);
    return (int)cb_rsys(&r);
}

int shim_rs_epoll_ctl(int ep, int op, int fd, struct epoll_event *ev)
{
    cb_rsys_t r = rq(SYS_epoll_ctl, ep, op, fd, P(ev), 0, 0);
    with(&r, 3, RSYS_IN, sizeof *ev);
    return (int)cb_rsys(&r);
}

int shim_rs_epoll_wait(int ep, struct epoll_event *evs, int max, int timeout)
{
    if (max <= 0 || (size_t)max > CHUNK / sizeof *evs)
        return errno = EINVAL, -1;
    cb_rsys_t r = rq(SYS_epoll_wait, ep, P(evs), max, timeout, 0, 0);
    with(&r, 1, RSYS_OUT | RSYS_UPTO_RES | RSYS_UNIT(sizeof *evs), (size_t)max * sizeof *evs);
    return (int)cb_rsys(&r);
}

/* ---- calls on descriptors only: here for every node, made at the master
 * for another node's application thread ---- */

/* name(args) made at the master as system call nr(args) */
#define FD_CALL(ret, name, params, args, fd, nr, ...)                        \
    ret name params                                                          \
    {                                                                        \
        if (shim_remote_fd(fd))                                              \
            return (ret)sys6(nr, __VA_ARGS__);                               \
        return REAL(name) args;                                              \
    }

_Atomic uint64_t shim_local_fds[1024];

static void local_mark(int fd, bool on)
{
    if (fd < 0 || fd >= 65536)
        return;
    uint64_t bit = 1ull << (fd & 63);
    if (on)
        atomic_fetch_or(&shim_local_fds[fd >> 6], bit);
    else
        atomic_fetch_and(&shim_local_fds[fd >> 6], ~bit);
}

bool shim_local_path(int dir, const char *path)
{
    return (dir == AT_FDCWD || path[0] == '/') &&
           (!strncmp(path, "/proc/", 6) || !strncmp(path, "/sys/", 5));
}

/* A descriptor of the node's own is moved to a number from 512 up (half
 * the descriptor limit where that is less), so still below FD_SETSIZE for
 * select where the limit allows: the master's table hands out the
 * lowest free numbers first, as any process's, so the node's own do not
 * take a number the master's may have (while open, a node's descriptor
 * hides a master's of the same number on that node; before, a node's first
 * /proc file took one of the numbers the program's next files got at the
 * master).  fd, or its new number (the old one closed); fd where no number
 * is free up there. */
static int move_up(int fd)
{
    static _Atomic int base;
    if (!base) {
        struct rlimit rl;
        rlim_t half = getrlimit(RLIMIT_NOFILE, &rl) ? 0 : rl.rlim_cur / 2;
        base = half < 64 ? -1 : half > 512 ? 512 : (int)half;
    }
    if (fd < 0 || base < 0 || fd >= base)
        return fd;
    int saved = errno, cloexec = REAL(fcntl)(fd, F_GETFD) & FD_CLOEXEC;
    int up = REAL(fcntl)(fd, cloexec ? F_DUPFD_CLOEXEC : F_DUPFD, base);
    if (up >= 0)
        REAL(close)(fd);
    errno = saved;
    return up >= 0 ? up : fd;
}

int shim_local_opened(int fd)
{
    if (fd < 0 || !shim_remote_fd(-1))
        return fd;
    fd = move_up(fd);
    local_mark(fd, true);
    return fd;
}

void shim_local_closed(int fd)
{
    if (shim_local_fd(fd))
        local_mark(fd, false);
}

/* 1 and 2 are the process's: closing, copying or replacing one, on any
 * node, acts at the master (shim_std_moved then makes the one moved the
 * master's on every node) */
static bool std_to_master(int fd)
{
    return cb_app_thread && cb.self != 0 && shim_std_own(fd) && shim_std_ours();
}

int close(int fd)
{
    if (shim_remote_fd(fd) || std_to_master(fd)) {
        int r = (int)sys6(SYS_close, fd, 0, 0, 0);
        if (!r)
            shim_std_moved(fd);
        return r;
    }
    if (shim_local_fd(fd) && cb_app_thread)
        local_mark(fd, false);
    int r = REAL(close)(fd);
    if (!r && cb.self == 0)
        shim_std_moved(fd);
    return r;
}

/* a copy of a node's own descriptor is the node's own; of 1 or 2, the
 * master's (the process's standard output and error) */
int dup(int fd)
{
    if (shim_remote_fd(fd) || std_to_master(fd))
        return (int)sys6(SYS_dup, fd, 0, 0, 0);
    return shim_local_opened(REAL(dup)(fd));
}

/* both descriptors the master's (1 and 2 count as the master's), or both
 * this node's own; not one of each */
#define DUP_TO(name, params, args, nr, ...)                                  \
    int name params                                                          \
    {                                                                        \
        bool rf = shim_remote_fd(fd) || std_to_master(fd);                   \
        bool rt = shim_remote_fd(to) || std_to_master(to);                   \
        if (rf != rt)                                                        \
            return errno = EBADF, -1;                                        \
        int r = rf ? (int)sys6(nr, __VA_ARGS__) : REAL(name) args;          \
        if (r >= 0 && (rf || cb.self == 0))                                  \
            shim_std_moved(to);                                              \
        return r;                                                            \
    }
DUP_TO(dup2, (int fd, int to), (fd, to), SYS_dup2, fd, to, 0, 0)
DUP_TO(dup3, (int fd, int to, int flags), (fd, to, flags), SYS_dup3, fd, to, flags, 0)
FD_CALL(off_t, lseek, (int fd, off_t off, int whence), (fd, off, whence), fd, SYS_lseek, fd, off,
        whence, 0)
FD_CALL(off64_t, lseek64, (int fd, off64_t off, int whence), (fd, off, whence), fd, SYS_lseek, fd,
        off, whence, 0)
FD_CALL(int, ftruncate, (int fd, off_t len), (fd, len), fd, SYS_ftruncate, fd, len, 0, 0)
FD_CALL(int, ftruncate64, (int fd, off64_t len), (fd, len), fd, SYS_ftruncate, fd, len, 0, 0)
FD_CALL(int, fsync, (int fd), (fd), fd, SYS_fsync, fd, 0, 0, 0)
FD_CALL(int, fdatasync, (int fd), (fd), fd, SYS_fdatasync, fd, 0, 0, 0)
FD_CALL(int, flock, (int fd, int op), (fd, op), fd, SYS_flock, fd, op, 0, 0)
FD_CALL(int, fchmod, (int fd, mode_t mode), (fd, mode), fd, SYS_fchmod, fd, mode, 0, 0)
FD_CALL(int, fchown, (int fd, uid_t u, gid_t g), (fd, u, g), fd, SYS_fchown, fd, u, g, 0)
FD_CALL(int, listen, (int fd, int backlog), (fd, backlog), fd, SYS_listen, fd, backlog, 0, 0)
FD_CALL(int, shutdown, (int fd, int how), (fd, how), fd, SYS_shutdown, fd, how, 0, 0)
FD_CALL(int, fallocate, (int fd, int mode, off_t off, off_t len), (fd, mode, off, len), fd,
        SYS_fallocate, fd, mode, off, len)
FD_CALL(int, fallocate64, (int fd, int mode, off64_t off, off64_t len), (fd, mode, off, len), fd,
        SYS_fallocate, fd, mode, off, len)

/* calls that make a descriptor from nothing: the master's, for another
 * node's application thread (descriptor -1 is never 1 or 2) */
FD_CALL(int, socket, (int domain, int type, int proto), (domain, type, proto), -1, SYS_socket,
        domain, type, proto, 0)
FD_CALL(int, eventfd, (unsigned count, int flags), (count, flags), -1, SYS_eventfd2, count, flags,
        0, 0)
FD_CALL(int, epoll_create1, (int flags), (flags), -1, SYS_epoll_create1, flags, 0, 0, 0)

int epoll_create(int size)
{
    if (!shim_remote_fd(-1))
        return REAL(epoll_create)(size);
    if (size <= 0)
        return errno = EINVAL, -1;
    return (int)sys6(SYS_epoll_create1, 0, 0, 0, 0);
}

/* Descriptors libc makes inside itself, past the shim (its own open): the
 * temporary files of mkstemp and its kin, shm_open's.  On another node
 * they are made at the master, so the descriptor is the master's as every
 * other (before, it was the node's own, and every later call on it, made
 * at the master, missed it: a write failed with EBADF, or reached whatever
 * the master had of that number).  mkdtemp and mktemp, which look names
 * up, and shm_unlink too (lib_exec_fs).  memfd_create, timerfd and
 * inotify descriptors are the master's; a signalfd is the node's own (the
 * signals it reads are the node process's). */
enum { TEMP_FD, TEMP_DIR, TEMP_NAME };

static long rs_temp(int kind, char *tmpl, int suffix, int flags)
{
    cb_rsys_t r = rq(RS_TEMP, P(tmpl), kind, suffix, flags, 0, 0);
    with(&r, 0, RSYS_IN | RSYS_OUT, strlen(tmpl) + 1);
    return cb_rsys(&r);
}

#define MKSTEMP(name, params, args, suffix, flags)                           \
    int name params                                                          \
    {                                                                        \
        if (!shim_remote_fd(-1))                                             \
            return REAL(name) args;                                          \
        return (int)rs_temp(TEMP_FD, t, suffix, flags);                      \
    }
MKSTEMP(mkstemp, (char *t), (t), 0, 0)
MKSTEMP(mkstemp64, (char *t), (t), 0, 0)
MKSTEMP(mkostemp, (char *t, int flags), (t, flags), 0, flags)
MKSTEMP(mkostemp64, (char *t, int flags), (t, flags), 0, flags)
MKSTEMP(mkstemps, (char *t, int suffix), (t, suffix), suffix, 0)
MKSTEMP(mkstemps64, (char *t, int suffix), (t, suffix), suffix, 0)
MKSTEMP(mkostemps, (char *t, int suffix, int flags), (t, suffix, flags), suffix, flags)
MKSTEMP(mkostemps64, (char *t, int suffix, int flags), (t, suffix, flags), suffix, flags)

char *mkdtemp(char *t)
{
    if (!shim_remote_fd(-1))
        return REAL(mkdtemp)(t);
    return rs_temp(TEMP_DIR, t, 0, 0) == -1 ? NULL : t;
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
char *mktemp(char *t)
{
    if (!shim_remote_fd(-1))
        return REAL(mktemp)(t);
    rs_temp(TEMP_NAME, t, 0, 0); /* t is "" where no name was found */
    return t;
}

/* tmpnam and tempnam look names up inside libc: made here as glibc makes
 * them, with mktemp's lookup at the master */
static bool dir_exists(const char *d)
{
    struct stat st;
    return d && *d && !stat(d, &st) && S_ISDIR(st.st_mode); /* stat: the shim's, at the master */
}

static char *temp_name(char *out, size_t n, const char *dir, const char *pfx)
{
    size_t dlen = strlen(dir), plen = pfx && *pfx ? strnlen(pfx, 5) : 4;
    while (dlen > 1 && dir[dlen - 1] == '/')
        dlen--;
    if (dlen + plen + 8 > n)
        return errno = EINVAL, NULL;
    snprintf(out, n, "%.*s/%.*sXXXXXX", (int)dlen, dir, (int)plen, pfx && *pfx ? pfx : "file");
    rs_temp(TEMP_NAME, out, 0, 0);
    return out[0] ? out : NULL;
}

char *tmpnam(char s[L_tmpnam])
{
    static char buf[L_tmpnam]; /* libc's is as shared */
    if (!shim_remote_fd(-1))
        return REAL(tmpnam)(s);
    char t[L_tmpnam];
    if (!temp_name(t, sizeof t, P_tmpdir, NULL))
        return NULL;
    return strcpy(s ? s : buf, t);
}

char *tmpnam_r(char s[L_tmpnam])
{
    if (!shim_remote_fd(-1) || !s)
        return REAL(tmpnam_r)(s);
    return temp_name(s, L_tmpnam, P_tmpdir, NULL);
}

/* the directory: $TMPDIR, dir, P_tmpdir, then /tmp, the first that is one */
char *tempnam(const char *dir, const char *pfx)
{
    if (!shim_remote_fd(-1))
        return REAL(tempnam)(dir, pfx);
    const char *d = getenv("TMPDIR");
    if (!dir_exists(d))
        d = dir_exists(dir) ? dir : dir_exists(P_tmpdir) ? P_tmpdir : "/tmp";
    if (!dir_exists(d))
        return errno = ENOENT, NULL;
    char t[PATH_MAX];
    if (!temp_name(t, sizeof t, d, pfx))
        return NULL;
    char *r = shim_malloc(strlen(t) + 1); /* the program frees it */
    return r ? strcpy(r, t) : (errno = ENOMEM, NULL);
}
#pragma GCC diagnostic pop

/* statvfs of path (NULL: of descriptor fd) at the master */
int shim_rs_statvfs(const char *path, int fd, struct statvfs *st)
{
    return (int)shim_rs_path(RS_STATVFS, P(path), fd, P(st), 0, 0, path ? 1 : 0, -1, 0, 2, sizeof *st, 0);
}

int shm_open(const char *name, int flags, mode_t mode)
{
    if (!shim_remote_fd(-1) || !name)
        return REAL(shm_open)(name, flags, mode);
    return (int)shim_rs_path(RS_SHM_OPEN, P(name), flags, mode, 0, 0, 1, -1, 0, -1, 0, 0);
}

int shm_unlink(const char *name)
{
    if (!shim_remote_fd(-1) || !name)
        return REAL(shm_unlink)(name);
    return (int)shim_rs_path(RS_SHM_UNLINK, P(name), 0, 0, 0, 0, 1, -1, 0, -1, 0, 0);
}

int memfd_create(const char *name, unsigned flags)
{
    if (!shim_remote_fd(-1) || !name)
        return REAL(memfd_create)(name, flags);
    return (int)shim_rs_path(SYS_memfd_create, P(name), flags, 0, 0, 0, 1, -1, 0, -1, 0, 0);
}

FD_CALL(int, timerfd_create, (int clock, int flags), (clock, flags), -1, SYS_timerfd_create, clock,
        flags, 0, 0)

int timerfd_settime(int fd, int flags, const struct itimerspec *t, struct itimerspec *old)
{
    if (!shim_remote_fd(fd))
        return REAL(timerfd_settime)(fd, flags, t, old);
    cb_rsys_t r = rq(SYS_timerfd_settime, fd, flags, P(t), P(old), 0, 0);
    with(&r, 2, RSYS_IN, sizeof *t);
    with(&r, 3, RSYS_OUT, sizeof *old);
    return (int)cb_rsys(&r);
}

int timerfd_gettime(int fd, struct itimerspec *t)
{
    if (!shim_remote_fd(fd))
        return REAL(timerfd_gettime)(fd, t);
    return (int)shim_rs_store(SYS_timerfd_gettime, fd, P(t), 0, 0, 0, 1, sizeof *t);
}

FD_CALL(int, inotify_init1, (int flags), (flags), -1, SYS_inotify_init1, flags, 0, 0, 0)
FD_CALL(int, inotify_init, (void), (), -1, SYS_inotify_init1, 0, 0, 0, 0)
FD_CALL(int, inotify_rm_watch, (int fd, int wd), (fd, wd), fd, SYS_inotify_rm_watch, fd, wd, 0, 0)

int inotify_add_watch(int fd, const char *path, uint32_t mask)
{
    if (!shim_remote_fd(fd) || !path)
        return REAL(inotify_add_watch)(fd, path, mask);
    return (int)shim_rs_path(SYS_inotify_add_watch, fd, P(path), mask, 0, 0, 2, -1, 0, -1, 0, 0);
}

int signalfd(int fd, const sigset_t *mask, int flags)
{
    sigset_t m = *mask; /* (a shared page the kernel cannot read) */
    int r = REAL(signalfd)(fd, &m, flags);
    if (r >= 0) /* its signals are this node's for good (psig.c) */
        cb_psig_signalfd(&m);
    return fd == -1 ? shim_local_opened(r) : r;
}

ssize_t sendfile(int out, int in, off_t *off, size_t n)
{
    if (!shim_remote_fd(out) && !shim_remote_fd(in))
        return REAL(sendfile)(out, in, off, n);
    cb_rsys_t r = rq(SYS_sendfile, out, in, P(off), (int64_t)n, 0, 0);
    with(&r, 2, RSYS_IN | RSYS_OUT, sizeof *off);
    return cb_rsys(&r);
}

ssize_t sendfile64(int out, int in, off64_t *off, size_t n)
{
    return sendfile(out, in, (off_t *)off, n);
}

/* Calls libc makes past the shim (a system call of its own, or its own
 * fcntl, read, write): on a master's descriptor, made at the master.
 * Before, another node's thread made them on its own descriptor of that
 * number (EBADF, or another file). */
static ssize_t move_two(long nr, int in, loff_t *off_in, int out, loff_t *off_out, size_t n,
                        unsigned flags)
{
    cb_rsys_t r = rq(nr, in, P(off_in), out, P(off_out), (int64_t)n, flags);
    with(&r, 1, RSYS_IN | RSYS_OUT, sizeof *off_in);
    with(&r, 3, RSYS_IN | RSYS_OUT, sizeof *off_out);
    return cb_rsys(&r);
}

ssize_t copy_file_range(int in, loff_t *off_in, int out, loff_t *off_out, size_t n, unsigned flags)
{
    if (!shim_remote_fd(in) && !shim_remote_fd(out))
        return REAL(copy_file_range)(in, off_in, out, off_out, n, flags);
    return move_two(SYS_copy_file_range, in, off_in, out, off_out, n, flags);
}

ssize_t splice(int in, loff_t *off_in, int out, loff_t *off_out, size_t n, unsigned flags)
{
    if (!shim_remote_fd(in) && !shim_remote_fd(out))
        return REAL(splice)(in, off_in, out, off_out, n, flags);
    return move_two(SYS_splice, in, off_in, out, off_out, n, flags);
}

ssize_t tee(int in, int out, size_t n, unsigned flags)
{
    if (!shim_remote_fd(in) && !shim_remote_fd(out))
        return REAL(tee)(in, out, n, flags);
    return sys6(SYS_tee, in, out, (int64_t)n, flags);
}

FD_CALL(int, syncfs, (int fd), (fd), fd, SYS_syncfs, fd, 0, 0, 0)
FD_CALL(ssize_t, readahead, (int fd, off64_t off, size_t n), (fd, off, n), fd, SYS_readahead, fd,
        off, (int64_t)n, 0)

/* these two give the error number */
#define FD_ERR(name, params, args, fd, nr, ...)                              \
    int name params                                                          \
    {                                                                        \
        if (!shim_remote_fd(fd))                                             \
            return REAL(name) args;                                          \
        int saved = errno, r = sys6(nr, __VA_ARGS__) ? errno : 0;            \
        errno = saved;                                                       \
        return r;                                                            \
    }
FD_ERR(posix_fallocate, (int fd, off_t off, off_t len), (fd, off, len), fd, SYS_fallocate, fd, 0,
       off, len)
FD_ERR(posix_fallocate64, (int fd, off64_t off, off64_t len), (fd, off, len), fd, SYS_fallocate,
       fd, 0, off, len)
FD_ERR(posix_fadvise, (int fd, off_t off, off_t len, int advice), (fd, off, len, advice), fd,
       SYS_fadvise64, fd, off, len, advice)
FD_ERR(posix_fadvise64, (int fd, off64_t off, off64_t len, int advice), (fd, off, len, advice), fd,
       SYS_fadvise64, fd, off, len, advice)

int futimens(int fd, const struct timespec t[2])
{
    if (!shim_remote_fd(fd))
        return REAL(futimens)(fd, t);
    cb_rsys_t r = rq(SYS_utimensat, fd, 0, P(t), 0, 0, 0);
    with(&r, 2, RSYS_IN, 2 * sizeof *t);
    return (int)cb_rsys(&r);
}

int futimes(int fd, const struct timeval tv[2])
{
    if (!shim_remote_fd(fd))
        return REAL(futimes)(fd, tv);
    struct timespec t[2];
    for (int i = 0; tv && i < 2; i++)
        t[i] = (struct timespec){ tv[i].tv_sec, tv[i].tv_usec * 1000 };
    return futimens(fd, tv ? t : NULL);
}

/* as glibc's, with the shim's fcntl */
int lockf(int fd, int cmd, off_t len)
{
    if (!shim_remote_fd(fd))
        return REAL(lockf)(fd, cmd, len);
    struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_CUR, .l_start = 0, .l_len = len };
    switch (cmd) {
    case F_TEST:
        fl.l_type = F_RDLCK;
        if (fcntl(fd, F_GETLK, &fl) < 0)
            return -1;
        if (fl.l_type == F_UNLCK || fl.l_pid == getpid())
            return 0;
        return errno = EACCES, -1;
    case F_ULOCK:
        fl.l_type = F_UNLCK;
        return fcntl(fd, F_SETLK, &fl);
    case F_LOCK:
        return fcntl(fd, F_SETLKW, &fl);
    case F_TLOCK:
        return fcntl(fd, F_SETLK, &fl);
    }
    return errno = EINVAL, -1;
}

int lockf64(int fd, int cmd, off64_t len) { return lockf(fd, cmd, (off_t)len); }

/* (libc's reads the file system's statfs itself) */
long fpathconf(int fd, int name)
{
    if (!shim_remote_fd(fd))
        return REAL(fpathconf)(fd, name);
    return shim_rs_path(RS_FPATHCONF, 0, fd, name, 0, 0, 0, -1, 0, -1, 0, 0);
}

/* with the shim's read and write */
int eventfd_read(int fd, eventfd_t *v)
{
    if (!shim_remote_fd(fd))
        return REAL(eventfd_read)(fd, v);
    return read(fd, v, sizeof *v) == sizeof *v ? 0 : -1;
}

int eventfd_write(int fd, eventfd_t v)
{
    if (!shim_remote_fd(fd))
        return REAL(eventfd_write)(fd, v);
    return write(fd, &v, sizeof v) == sizeof v ? 0 : -1;
}

/* fcntl: an int, a struct flock (locks) or a struct f_owner_ex, by command */
static long fcntl_remote(int fd, int cmd, void *arg)
{
    size_t n = 0;
    switch (cmd) {
    case F_GETLK: case F_SETLK: case F_SETLKW:
    case F_OFD_GETLK: case F_OFD_SETLK: case F_OFD_SETLKW:
        n = sizeof(struct flock);
        break;
    case F_GETOWN_EX: case F_SETOWN_EX:
        n = sizeof(struct f_owner_ex);
        break;
    case F_GET_RW_HINT: case F_SET_RW_HINT: case F_GET_FILE_RW_HINT: case F_SET_FILE_RW_HINT:
        n = sizeof(uint64_t);
        break;
    default:
        return sys6(SYS_fcntl, fd, cmd, P(arg), 0);
    }
    cb_rsys_t r = rq(SYS_fcntl, fd, cmd, P(arg), 0, 0, 0);
    with(&r, 2, RSYS_IN | RSYS_OUT, n);
    return cb_rsys(&r);
}

#define FCNTL(name)                                                          \
    int name(int fd, int cmd, ...)                                           \
    {                                                                        \
        va_list ap;                                                          \
        va_start(ap, cmd);                                                   \
        void *arg = va_arg(ap, void *);                                      \
        va_end(ap);                                                          \
        bool copy = cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC;                \
        if (shim_remote_fd(fd) || (copy && std_to_master(fd)))               \
            return (int)fcntl_remote(fd, cmd, arg);                          \
        int r = REAL(name)(fd, cmd, arg);                                    \
        return copy ? shim_local_opened(r) : r;                              \
    }
FCNTL(fcntl)
FCNTL(fcntl64)

#define KERNEL_TERMIOS 36 /* the kernel's struct termios (asm/termbits.h), not glibc's */

/* ioctl: what the request number says of its argument (_IOC), or the
 * requests of the terminal and of sockets that say nothing; others are
 * refused (ENOTTY) rather than guessed */
int ioctl(int fd, unsigned long req, ...)
{
    va_list ap;
    va_start(ap, req);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    if (!shim_remote_fd(fd))
        return REAL(ioctl)(fd, req, arg);
    uint32_t flags = 0;
    size_t n = _IOC_SIZE(req);
    if (_IOC_DIR(req) & _IOC_WRITE)
        flags |= RSYS_IN;
    if (_IOC_DIR(req) & _IOC_READ)
        flags |= RSYS_OUT;
    if (!_IOC_DIR(req) && !n) {
        switch (req) {
        case FIONREAD: case TIOCOUTQ: n = sizeof(int), flags = RSYS_OUT; break;
        case FIONBIO: case FIOASYNC: n = sizeof(int), flags = RSYS_IN; break;
        case TIOCGWINSZ: n = sizeof(struct winsize), flags = RSYS_OUT; break;
        case TIOCSWINSZ: n = sizeof(struct winsize), flags = RSYS_IN; break;
        case TCGETS: n = KERNEL_TERMIOS, flags = RSYS_OUT; break;
        case TCSETS: case TCSETSW: case TCSETSF: n = KERNEL_TERMIOS, flags = RSYS_IN; break;
        case FIOCLEX: case FIONCLEX: case TIOCNOTTY: case TIOCEXCL: case TIOCNXCL: break;
        default: return errno = ENOTTY, -1;
        }
    }
    cb_rsys_t r = rq(SYS_ioctl, fd, (int64_t)req, P(arg), 0, 0, 0);
    if (flags && n)
        with(&r, 2, flags, n);
    return (int)cb_rsys(&r);
}

int isatty(int fd)
{
    if (!shim_remote_fd(fd))
        return REAL(isatty)(fd);
    char t[KERNEL_TERMIOS];
    cb_rsys_t r = rq(SYS_ioctl, fd, TCGETS, P(t), 0, 0, 0);
    with(&r, 2, RSYS_OUT, sizeof t);
    if (cb_rsys(&r) == 0)
        return 1;
    if (errno == EINVAL)
        errno = ENOTTY;
    return 0;
}

/* glibc's termios from the kernel's, as its tcgetattr (its own ioctl) */
struct kernel_termios {
    tcflag_t c_iflag, c_oflag, c_cflag, c_lflag;
    cc_t c_line, c_cc[19];
};
_Static_assert(sizeof(struct kernel_termios) == KERNEL_TERMIOS, "the kernel's struct termios");

int tcgetattr(int fd, struct termios *t)
{
    if (!shim_remote_fd(fd))
        return REAL(tcgetattr)(fd, t);
    struct kernel_termios k;
    if (ioctl(fd, TCGETS, &k))
        return -1;
    memset(t, 0, sizeof *t);
    t->c_iflag = k.c_iflag, t->c_oflag = k.c_oflag, t->c_cflag = k.c_cflag;
    t->c_lflag = k.c_lflag, t->c_line = k.c_line;
    t->c_ispeed = t->c_ospeed = k.c_cflag & (CBAUD | CBAUDEX);
    memcpy(t->c_cc, k.c_cc, sizeof k.c_cc);
    memset(t->c_cc + sizeof k.c_cc, _POSIX_VDISABLE, sizeof t->c_cc - sizeof k.c_cc);
    return 0;
}

int tcsetattr(int fd, int how, const struct termios *t)
{
    if (!shim_remote_fd(fd))
        return REAL(tcsetattr)(fd, how, t);
    unsigned long req = how == TCSANOW ? TCSETS : how == TCSADRAIN ? TCSETSW
                        : how == TCSAFLUSH ? TCSETSF : 0;
    if (!req)
        return errno = EINVAL, -1;
    /* (glibc's drops IBAUD0, the bit of cfsetispeed's speed 0) */
    struct kernel_termios k = { .c_iflag = t->c_iflag & ~020000000000u, .c_oflag = t->c_oflag,
                                .c_cflag = t->c_cflag, .c_lflag = t->c_lflag, .c_line = t->c_line };
    memcpy(k.c_cc, t->c_cc, sizeof k.c_cc);
    return ioctl(fd, req, &k);
}

/* ---- streams ---- */

void shim_set_add(shim_set_t *s, void *p)
{
    cb_mutex_lock(&s->mu);
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 16;
        void **v = realloc(s->v, cap * sizeof *v);
        if (!v)
            cb_die("node %d: out of memory for a table of open streams", cb.self);
        s->v = v, s->cap = cap;
    }
    s->v[s->n++] = p;
    cb_mutex_unlock(&s->mu);
}

bool shim_set_has(shim_set_t *s, const void *p, bool drop)
{
    bool has = false;
    cb_mutex_lock(&s->mu);
    for (size_t i = 0; i < s->n && !has; i++)
        if (s->v[i] == p) {
            has = true;
            if (drop)
                s->v[i] = s->v[--s->n];
        }
    cb_mutex_unlock(&s->mu);
    return has;
}

/* the node's own streams in memory */
static shim_set_t own = SHIM_SET_INIT;

static FILE *own_add(FILE *f)
{
    if (f && shim_remote_fd(-1))
        shim_set_add(&own, f);
    return f;
}

FILE *shim_local_stream(FILE *f)
{
    if (f && shim_remote_fd(-1)) {
        f->_fileno = move_up(f->_fileno); /* glibc's FILE: the stream reads the new number */
        local_mark(f->_fileno, true);
    }
    return own_add(f);
}

bool shim_remote_file(FILE *f)
{
    if (!f || !shim_remote_fd(-1))
        return false;
    int std = f == stdout ? 1 : f == stderr ? 2 : 0;
    if (std && shim_std_own(std))
        return false;
    /* what this node's own stream still holds from before the move goes
     * out first, to where it was written (on the program's thread: never
     * the communication thread, which a thread holding the stream's lock
     * may wait for) */
    if (std && f->_IO_write_ptr > f->_IO_write_base)
        REAL(fflush)(f);
    return std || !shim_set_has(&own, f, false);
}

FILE *fmemopen(void *buf, size_t n, const char *mode) { return own_add(REAL(fmemopen)(buf, n, mode)); }
FILE *open_memstream(char **p, size_t *n) { return own_add(REAL(open_memstream)(p, n)); }
FILE *open_wmemstream(wchar_t **p, size_t *n) { return own_add(REAL(open_wmemstream)(p, n)); }
FILE *fopencookie(void *c, const char *mode, cookie_io_functions_t io)
{
    return own_add(REAL(fopencookie)(c, mode, io));
}

/* the master's stream: a FILE pointer of the master, or its stdin */
enum { RS_STDIN = 1 };
static int64_t handle(FILE *f) { return f == stdin ? RS_STDIN : P(f); }

/* realpath at the master: the name into out (PATH_MAX bytes); 0 or -1 */
int shim_rs_realpath(const char *path, char *out)
{
    return (int)shim_rs_path(RS_REALPATH, P(path), P(out), 0, 0, 0, 1, -1, 0, 1, PATH_MAX, RSYS_STRING);
}

static long rs_file(int op, FILE *f, int64_t a1, int64_t a2)
{
    cb_rsys_t r = rq(op, handle(f), a1, a2, 0, 0, 0);
    /* a read or a write of the stream may wait (a pipe's): interruptible */
    r.waits = op == RS_FGETC || op == RS_FPUTC || op == RS_FFLUSH ? CB_RSYS_STDIO : 0;
    return cb_rsys(&r);
}

/* an open of a FIFO waits for its other end: interruptible, as open's;
 * interrupted, the master's answer is -1 (EINTR), then made again or not
 * as the handler says (cb_rsys), and the program gets NULL */
FILE *shim_rs_fopen(const char *path, const char *mode)
{
    cb_rsys_t r = rq(RS_FOPEN, P(path), P(mode), 0, 0, 0, 0);
    with_path(&r, 0);
    with_path(&r, 1);
    r.waits = true;
    long f = cb_rsys(&r);
    return f == -1 ? NULL : (FILE *)(uintptr_t)f;
}

FILE *fdopen(int fd, const char *mode)
{
    if (!shim_remote_fd(fd)) /* the master's, or this node's own (1 and 2 until moved) */
        return own_add(REAL(fdopen)(fd, mode));
    cb_rsys_t r = rq(RS_FDOPEN, fd, P(mode), 0, 0, 0, 0);
    with_path(&r, 1);
    return (FILE *)(uintptr_t)cb_rsys(&r);
}

#define FREOPEN(name)                                                        \
    FILE *name(const char *path, const char *mode, FILE *f)                  \
    {                                                                        \
        int std = f == stdout ? 1 : f == stderr ? 2 : 0;                     \
        FILE *g;                                                             \
        if (!shim_remote_file(f) && !(std && std_to_master(std))) {          \
            g = REAL(name)(path, mode, f);                                   \
        } else {                                                             \
            cb_rsys_t r = rq(RS_FREOPEN, P(path), P(mode), handle(f), 0, 0, 0); \
            if (path)                                                        \
                with_path(&r, 0);                                            \
            with_path(&r, 1);                                                \
            g = (FILE *)(uintptr_t)cb_rsys(&r);                              \
        }                                                                    \
        if (g && std)                                                        \
            shim_std_moved(std);                                             \
        return g;                                                            \
    }
FREOPEN(freopen)
FREOPEN(freopen64)

#define TMPFILE(name)                                                        \
    FILE *name(void)                                                         \
    {                                                                        \
        if (!shim_remote_fd(-1))                                             \
            return REAL(name)();                                             \
        return (FILE *)(uintptr_t)rs_file(RS_TMPFILE, NULL, 0, 0);           \
    }
TMPFILE(tmpfile)
TMPFILE(tmpfile64)

/* popen's command runs at the master, with the caller's signal mask
 * (spawn.c) */
FILE *popen(const char *cmd, const char *mode)
{
    if (!shim_remote_fd(-1) || !cmd || !mode)
        return shim_popen_here(cmd, mode, shim_mask_bits());
    cb_rsys_t r = rq(RS_POPEN, P(cmd), P(mode), shim_mask_bits(), 0, 0, 0);
    with_path(&r, 0);
    with_path(&r, 1);
    return (FILE *)(uintptr_t)cb_rsys(&r);
}

/* system's command runs at the master, as popen's: in the process's
 * working directory, on the machine whose file system the program has */
int system(const char *cmd)
{
    if (!shim_remote_fd(-1) || !cmd)
        return REAL(system)(cmd);
    return (int)shim_rs_path(RS_SYSTEM, P(cmd), shim_mask_bits(), 0, 0, 0, 1, -1, 0, -1, 0, 0);
}

int pclose(FILE *f)
{
    if (shim_remote_file(f))
        return (int)rs_file(RS_PCLOSE, f, 0, 0);
    int st = shim_pclose_here(f);
    return st != -2 ? st : REAL(pclose)(f); /* no popen's stream: glibc's (an fclose) */
}

int shim_rs_fclose(FILE *f) { return (int)rs_file(RS_FCLOSE, f, 0, 0); }
int shim_rs_fflush(FILE *f) { return (int)rs_file(RS_FFLUSH, f, 0, 0); }
int shim_rs_fgetc(FILE *f) { return (int)rs_file(RS_FGETC, f, 0, 0); }
int shim_rs_fputc(int c, FILE *f) { return (int)rs_file(RS_FPUTC, f, c, 0); }
int shim_rs_fseek(FILE *f, off_t off, int whence) { return (int)rs_file(RS_FSEEK, f, off, whence); }

/* fwrite's and fread's bytes, in pieces (transfer): the items done */
static size_t items(int op, void *p, size_t size, size_t n, FILE *f, bool out)
{
    if (!size || !n)
        return 0;
    if (n > SIZE_MAX / size)
        return errno = EOVERFLOW, 0;
    ssize_t done = transfer(op, handle(f), p, size * n, 0, false, out);
    return done < 0 ? 0 : (size_t)done / size;
}

size_t shim_rs_fwrite(const void *p, size_t size, size_t n, FILE *f)
{
    return items(RS_FWRITE, (void *)p, size, n, f, false);
}

size_t shim_rs_fread(void *p, size_t size, size_t n, FILE *f) { return items(RS_FREAD, p, size, n, f, true); }

char *shim_rs_fgets(char *s, int n, FILE *f)
{
    if (n <= 0)
        return errno = EINVAL, NULL;
    cb_rsys_t r = rq(RS_FGETS, handle(f), P(s), n, 0, 0, 0);
    r.waits = CB_RSYS_STDIO;
    with(&r, 1, RSYS_OUT | RSYS_STRING, (size_t)n);
    return cb_rsys(&r) > 0 ? s : NULL;
}

int shim_rs_fputs(const char *s, FILE *f)
{
    size_t n = strlen(s);
    return n == 0 || shim_rs_fwrite(s, n, 1, f) == 1 ? 1 : EOF;
}

void *program_realloc(void *p, size_t n) __asm__("realloc"); /* heap.c's */

/* getdelim: the line in pieces the master takes up to the delimiter */
ssize_t shim_rs_getdelim(char **line, size_t *cap, int delim, FILE *f)
{
    if (!line || !cap)
        return errno = EINVAL, -1;
    if (!*line)
        *cap = 0;
    size_t len = 0;
    for (;;) {
        char piece[4096];
        cb_rsys_t r = rq(RS_GETDELIM, handle(f), P(piece), (int64_t)sizeof piece, delim, 0, 0);
        r.waits = CB_RSYS_STDIO;
        with(&r, 1, RSYS_OUT | RSYS_UPTO_RES, sizeof piece);
        long x = cb_rsys(&r);
        if (x <= 0) {
            if (len == 0)
                return -1;
            break;
        }
        if (!*line || *cap < len + (size_t)x + 1) {
            size_t want = len + (size_t)x + 1 > 2 * *cap ? len + (size_t)x + 1 : 2 * *cap;
            char *l = program_realloc(*line, want);
            if (!l)
                return errno = ENOMEM, -1;
            *line = l, *cap = want;
        }
        memcpy(*line + len, piece, (size_t)x);
        len += (size_t)x;
        (*line)[len] = 0;
        if ((size_t)x < sizeof piece || piece[x - 1] == (char)delim)
            break;
    }
    return (ssize_t)len;
}

int shim_rs_vfprintf(FILE *f, const char *fmt, va_list ap)
{
    char local[1024], *b = local;
    va_list aq;
    va_copy(aq, ap);
    int n = vsnprintf(local, sizeof local, fmt, aq);
    va_end(aq);
    if (n < 0)
        return n;
    if ((size_t)n >= sizeof local) {
        if (!(b = malloc((size_t)n + 1)))
            return errno = ENOMEM, -1;
        vsnprintf(b, (size_t)n + 1, fmt, ap);
    }
    size_t w = n ? shim_rs_fwrite(b, (size_t)n, 1, f) : 1;
    if (b != local)
        free(b);
    return w == 1 ? n : -1;
}

/* fscanf: a stream of this node, unbuffered, whose reads take the
 * master's characters one at a time; what the scan read ahead and gave
 * back goes back to the master's stream */
static ssize_t scan_read(void *c, char *buf, size_t n)
{
    (void)n;
    int ch = (int)rs_file(RS_FGETC, (FILE *)c, 0, 0);
    if (ch == EOF)
        return 0;
    buf[0] = (char)ch;
    return 1;
}

int shim_rs_vfscanf(FILE *f, const char *fmt, va_list ap,
                    int (*scan)(FILE *, const char *, va_list))
{
    cookie_io_functions_t io = { .read = scan_read };
    FILE *tmp = REAL(fopencookie)(f, "r", io);
    if (!tmp)
        return errno = ENOMEM, EOF;
    REAL(setvbuf)(tmp, NULL, _IONBF, 0);
    int r = scan(tmp, fmt, ap);
    /* given back: the character read and not used (the scan's ungetc of
     * the character it read last steps back in the one-byte buffer) */
    for (char *e = tmp->_IO_read_end; e > tmp->_IO_read_ptr;)
        rs_file(RS_UNGETC, f, (unsigned char)*--e, 0);
    REAL(fclose)(tmp);
    return r;
}

#undef getc_unlocked
#undef putc_unlocked
#undef fgetc_unlocked
#undef fputc_unlocked
#undef feof_unlocked
#undef ferror_unlocked
#undef fileno_unlocked
#undef fwrite_unlocked
#undef fread_unlocked
#undef fputs_unlocked
#undef fgets_unlocked
#undef clearerr_unlocked
#undef fflush_unlocked

#define F_CALL(ret, name, params, f, call, ...)                              \
    ret name params                                                          \
    {                                                                        \
        if (shim_remote_file(f))                                             \
            return (ret)(call);                                              \
        return REAL(name)(__VA_ARGS__);                                      \
    }

F_CALL(long, ftell, (FILE *f), f, rs_file(RS_FTELL, f, 0, 0), f)
F_CALL(off_t, ftello, (FILE *f), f, rs_file(RS_FTELL, f, 0, 0), f)
F_CALL(off64_t, ftello64, (FILE *f), f, rs_file(RS_FTELL, f, 0, 0), f)
F_CALL(int, fseeko64, (FILE *f, off64_t off, int whence), f, shim_rs_fseek(f, off, whence), f, off, whence)
F_CALL(int, feof, (FILE *f), f, rs_file(RS_FEOF, f, 0, 0), f)
F_CALL(int, ferror, (FILE *f), f, rs_file(RS_FERROR, f, 0, 0), f)
F_CALL(int, fileno, (FILE *f), f, rs_file(RS_FILENO, f, 0, 0), f)
F_CALL(int, ungetc, (int c, FILE *f), f, rs_file(RS_UNGETC, f, c, 0), c, f)
F_CALL(int, feof_unlocked, (FILE *f), f, rs_file(RS_FEOF, f, 0, 0), f)
F_CALL(int, ferror_unlocked, (FILE *f), f, rs_file(RS_FERROR, f, 0, 0), f)
F_CALL(int, fileno_unlocked, (FILE *f), f, rs_file(RS_FILENO, f, 0, 0), f)
F_CALL(int, fflush_unlocked, (FILE *f), f, shim_rs_fflush(f), f)
F_CALL(int, fgetc_unlocked, (FILE *f), f, shim_rs_fgetc(f), f)
F_CALL(int, getc_unlocked, (FILE *f), f, shim_rs_fgetc(f), f)
F_CALL(int, fputc_unlocked, (int c, FILE *f), f, shim_rs_fputc(c, f), c, f)
F_CALL(int, putc_unlocked, (int c, FILE *f), f, shim_rs_fputc(c, f), c, f)
F_CALL(int, fputs_unlocked, (const char *s, FILE *f), f, shim_rs_fputs(s, f), s, f)
F_CALL(char *, fgets_unlocked, (char *s, int n, FILE *f), f, shim_rs_fgets(s, n, f), s, n, f)
F_CALL(size_t, fwrite_unlocked, (const void *p, size_t s, size_t n, FILE *f), f,
       shim_rs_fwrite(p, s, n, f), p, s, n, f)
F_CALL(size_t, fread_unlocked, (void *p, size_t s, size_t n, FILE *f), f,
       shim_rs_fread(p, s, n, f), p, s, n, f)
F_CALL(int, setvbuf, (FILE *f, char *buf, int mode, size_t n), f,
       rs_file(RS_SETVBUF, f, mode, (int64_t)n), f, buf, mode, n) /* the master's own buffer */

void clearerr(FILE *f)
{
    if (shim_remote_file(f))
        rs_file(RS_CLEARERR, f, 0, 0);
    else
        REAL(clearerr)(f);
}

void clearerr_unlocked(FILE *f) { clearerr(f); }

void setbuf(FILE *f, char *buf) { setvbuf(f, buf, buf ? _IOFBF : _IONBF, BUFSIZ); }
void setbuffer(FILE *f, char *buf, size_t n) { setvbuf(f, buf, buf ? _IOFBF : _IONBF, n); }
void setlinebuf(FILE *f) { setvbuf(f, NULL, _IOLBF, 0); }

int fgetpos(FILE *f, fpos_t *pos)
{
    if (!shim_remote_file(f))
        return REAL(fgetpos)(f, pos);
    long p = rs_file(RS_FTELL, f, 0, 0);
    if (p < 0)
        return -1;
    memset(pos, 0, sizeof *pos);
    pos->__pos = p;
    return 0;
}

int fsetpos(FILE *f, const fpos_t *pos)
{
    if (!shim_remote_file(f))
        return REAL(fsetpos)(f, pos);
    return shim_rs_fseek(f, pos->__pos, SEEK_SET);
}

/* (the same layout on 64-bit Linux; programs built with
 * _FILE_OFFSET_BITS=64 call these names) */
int fgetpos64(FILE *f, fpos64_t *pos)
{
    if (!shim_remote_file(f))
        return REAL(fgetpos64)(f, pos);
    return fgetpos(f, (fpos_t *)pos);
}

int fsetpos64(FILE *f, const fpos64_t *pos)
{
    if (!shim_remote_file(f))
        return REAL(fsetpos64)(f, pos);
    return fsetpos(f, (const fpos_t *)pos);
}

/* each call on the master's stream is whole there, under its lock; a
 * lock across calls is not made (the master's proxies are a pool) */
void flockfile(FILE *f)
{
    if (!shim_remote_file(f))
        REAL(flockfile)(f);
}

void funlockfile(FILE *f)
{
    if (!shim_remote_file(f))
        REAL(funlockfile)(f);
}

int ftrylockfile(FILE *f)
{
    return shim_remote_file(f) ? 0 : REAL(ftrylockfile)(f);
}

void shim_rs_forget(FILE *f)
{
    if (!shim_remote_fd(-1))
        return;
    shim_set_has(&own, f, true);
    int fd = REAL(fileno)(f);
    if (shim_local_fd(fd))
        local_mark(fd, false);
}

/* Exit handlers are the process's, and the process ends at the master: a
 * handler of the program's (atexit, which is __cxa_atexit of the program's
 * module, a C++ static object's destructor, on_exit) that a thread of
 * another node registers is registered there.  A function's address is the
 * same on every node, and so is the program's shared data its argument
 * points to.  Before, it went into its node's list, which ran in that
 * node's exit after the runtime had stopped there (stale copies, that
 * node's status).  A handler of a library's code for a library's data
 * stays its node's: that data is the node's.  Decided by address (the
 * program's image, cb.image_lo..hi; no loader lock taken). */
static bool programs(const void *fn, const void *arg)
{
    return cb_app_thread && cb.self != 0 && cb.program &&
           (cb_in_gas((uintptr_t)arg) || (uintptr_t)fn - cb.image_lo < cb.image_hi - cb.image_lo);
}

int __cxa_atexit(void (*fn)(void *), void *arg, void *dso)
{
    if (!programs((const void *)fn, arg))
        return REAL(__cxa_atexit)(fn, arg, dso);
    cb_rsys_t r = rq(RS_CXA_ATEXIT, P(fn), P(arg), P(dso), 0, 0, 0);
    return (int)cb_rsys(&r);
}

int on_exit(void (*fn)(int, void *), void *arg)
{
    if (!programs((const void *)fn, arg))
        return REAL(on_exit)(fn, arg);
    cb_rsys_t r = rq(RS_ON_EXIT, P(fn), P(arg), 0, 0, 0, 0);
    return (int)cb_rsys(&r);
}

/* exit() of an application thread of another node: the process ends at
 * the master, with this status, its handlers run once there (start.c).
 * Returns only if the master could not be asked. */
int shim_rs_proc(int op, int64_t arg, const char *s1, const char *s2, int64_t *old)
{
    int64_t o = 0;
    cb_rsys_t r = rq(RS_PROC, op, arg, P(s1), P(s2), P(&o), 0);
    if (s1)
        with_path(&r, 2);
    if (s2)
        with_path(&r, 3);
    with(&r, 4, RSYS_OUT, sizeof o);
    int rc = cb_rsys(&r) ? errno : 0;
    if (old)
        *old = o;
    return rc;
}

/* a dlopen at the master: 0 and *handle, or an error number and why in err */
int shim_rs_dlopen(const char *file, int flags, char *err, size_t errlen, int64_t *handle)
{
    int64_t h = 0;
    cb_rsys_t r = rq(RS_PROC, CB_PROC_DLOPEN, flags, P(file), P(err), P(&h), 0);
    with_path(&r, 2);
    with(&r, 3, RSYS_OUT | RSYS_STRING, errlen);
    with(&r, 4, RSYS_OUT, sizeof h);
    long rc = cb_rsys(&r); /* (the error number is the result: err comes back) */
    *handle = h;
    return rc < 0 ? errno : (int)rc;
}

int shim_rs_sigaction(int sig, const struct sigaction *act)
{
    cb_rsys_t r = rq(RS_PROC, CB_PROC_SIGACTION, sig, P(act), 0, 0, 0);
    with(&r, 2, RSYS_IN, sizeof *act);
    return cb_rsys(&r) ? errno : 0;
}

/* exec at the master: the strings (file, then nargs arguments, then nenv
 * variables, each with its NUL) in one buffer; returns only on failure */
int shim_rs_exec(const char *strings, size_t len, int nargs, int nenv, bool search)
{
    cb_rsys_t r = rq(RS_EXEC, P(strings), (int64_t)len, nargs, nenv, search, shim_mask_bits());
    with(&r, 0, RSYS_IN, len);
    return (int)cb_rsys(&r);
}

/* with this node's writes: the exit handlers see them (before, a thread's
 * last writes before its exit could be missed there) */
void cb_exit_at_master(int status)
{
    size_t len;
    cb_release();
    void *n = cb_notices_for(0, &len);
    cb_rsys_t r = rq(RS_EXIT, status, P(n), (int64_t)len, cb.self, 0, 0);
    with(&r, 1, RSYS_IN, len);
    cb_rsys(&r);
    free(n);
}

/* ---- at the master: the streams' calls (cb_rsys_lib) ---- */

static FILE *file_of(int64_t h) { return h == RS_STDIN ? stdin : (FILE *)(uintptr_t)h; }

/* libc's list of open streams (exported by glibc: the list fflush(NULL) walks) */
extern FILE *_IO_list_all;
void _IO_list_lock(void);
void _IO_list_unlock(void);

/* a stream open here: another node's pointer is never dereferenced blindly */
static bool stream_here(FILE *f)
{
    bool found = false;
    _IO_list_lock();
    for (FILE *p = _IO_list_all; p && !found; p = p->_chain)
        found = p == f;
    _IO_list_unlock();
    return found;
}

/* calls on the file system libc makes inside itself (the descriptor-making
 * ones, statvfs, system's command): r, and *err where r is -1 */
static long lib_exec_fs(int64_t op, int64_t a[6], int *err)
{
    char *s = (char *)(uintptr_t)a[0];
    long r = -1;
    errno = 0;
    if (op == RS_SYSTEM)
        r = shim_system_here(s, a[1]);
    else if (op == RS_TEMP && a[1] == TEMP_FD)
        r = mkostemps(s, (int)a[2], (int)a[3]);
    else if (op == RS_TEMP && a[1] == TEMP_DIR)
        r = mkdtemp(s) ? 0 : -1;
    else if (op == RS_TEMP && !(REAL(mktemp)(s)[0])) /* no name: "" and why */
        return *err = errno, 0;
    else if (op == RS_TEMP)
        r = 0;
    else if (op == RS_SHM_OPEN)
        r = shm_open(s, (int)a[1], (mode_t)a[2]);
    else if (op == RS_SHM_UNLINK)
        r = shm_unlink(s);
    else if (op == RS_STATVFS)
        r = s ? statvfs(s, (struct statvfs *)(uintptr_t)a[2])
              : fstatvfs((int)a[1], (struct statvfs *)(uintptr_t)a[2]);
    else if (op == RS_FPATHCONF)
        r = fpathconf((int)a[1], (int)a[2]);
    *err = r == -1 ? errno : 0;
    return r;
}

static long lib_exec(int64_t op, int64_t a[6], int *err)
{
    FILE *f = op == RS_FREOPEN ? file_of(a[2]) : file_of(a[0]);
    bool opens = op == RS_FOPEN || op == RS_FDOPEN || op == RS_TMPFILE || op == RS_POPEN;
    if (op == RS_EXEC) { /* a proxy replaces the process's image, for the program's thread */
        sigset_t mask, own; /* the new image's: the caller's (SIGSEGV: the fault path's) */
        shim_mask_of(a[5], &mask);
        sigdelset(&mask, SIGSEGV);
        pthread_sigmask(SIG_SETMASK, &mask, &own);
        *err = shim_exec_strings((const char *)(uintptr_t)a[0], (size_t)a[1], (int)a[2], (int)a[3],
                                 a[4] != 0);
        pthread_sigmask(SIG_SETMASK, &own, NULL);
        return -1;
    }
    if (op == RS_EXIT) { /* a proxy ends the process, as the program's thread */
        cb_acquire_from((int)a[3], (const void *)(uintptr_t)a[1], (size_t)a[2]);
        cb_app_thread = true;
        exit((int)a[0]);
    }
    /* no stream; none once the program ends here (a handler added then
     * would run after the runtime stopped) */
    if ((op == RS_CXA_ATEXIT || op == RS_ON_EXIT) && atomic_load(&cb.ending))
        return *err = ENOMEM, -1;
    if (op == RS_CXA_ATEXIT)
        return REAL(__cxa_atexit)((void (*)(void *))(uintptr_t)a[0], (void *)(uintptr_t)a[1],
                                  (void *)(uintptr_t)a[2]) ? (*err = ENOMEM, -1) : 0;
    if (op == RS_PROC && a[0] == CB_PROC_DLOPEN) /* its error number, with why */
        return cb_proc_change((int)a[0], a[1], (const char *)(uintptr_t)a[2], (char *)(uintptr_t)a[3],
                              (int64_t *)(uintptr_t)a[4]);
    if (op == RS_PROC) /* a process change (process.c) */
        return (*err = cb_proc_change((int)a[0], a[1], (const char *)(uintptr_t)a[2],
                                      (const char *)(uintptr_t)a[3], (int64_t *)(uintptr_t)a[4]))
                   ? -1 : 0;
    if (op == SHIM_RS_SPAWN)
        return shim_spawn_exec(a, err);
    if (op >= SHIM_RS_OPENDIR)
        return shim_dir_exec(op, a, err);
    if (op == RS_REALPATH)
        return realpath((const char *)(uintptr_t)a[0], (char *)(uintptr_t)a[1]) ? 0
                                                                                : (*err = errno, -1);
    if (op >= RS_TEMP && op <= RS_SYSTEM)
        return lib_exec_fs(op, a, err);
    if (op == RS_SENDMSG || op == RS_RECVMSG)
        return msg_exec(op, a, err);
    if (op == RS_ON_EXIT)
        return REAL(on_exit)((void (*)(int, void *))(uintptr_t)a[0], (void *)(uintptr_t)a[1])
                   ? (*err = ENOMEM, -1) : 0;
    if (!opens && !(op == RS_FFLUSH && !f) && !stream_here(f)) {
        *err = EBADF;
        return -1;
    }
    long r = 0;
    errno = 0;
    switch (op) {
    case RS_FOPEN: r = P(fopen64((const char *)(uintptr_t)a[0], (const char *)(uintptr_t)a[1])); break;
    case RS_FDOPEN: r = P(fdopen((int)a[0], (const char *)(uintptr_t)a[1])); break;
    case RS_FREOPEN:
        r = P(freopen64((const char *)(uintptr_t)a[0], (const char *)(uintptr_t)a[1], file_of(a[2])));
        break;
    case RS_TMPFILE: r = P(tmpfile64()); break;
    case RS_POPEN: r = P(shim_popen_here((const char *)(uintptr_t)a[0], (const char *)(uintptr_t)a[1], a[2])); break;
    case RS_PCLOSE: r = pclose(f); break;
    case RS_FCLOSE: r = fclose(f); break;
    case RS_FFLUSH: r = fflush(f); break;
    case RS_FWRITE: r = (long)fwrite((const void *)(uintptr_t)a[1], 1, (size_t)a[2], f); break;
    case RS_FREAD: r = (long)fread((void *)(uintptr_t)a[1], 1, (size_t)a[2], f); break;
    case RS_FGETS: r = fgets((char *)(uintptr_t)a[1], (int)a[2], f) ? 1 : -1; break;
    case RS_FGETC: r = fgetc(f); break;
    case RS_UNGETC: r = ungetc((int)a[1], f); break;
    case RS_FPUTC: r = fputc((int)a[1], f); break;
    case RS_GETDELIM: { /* up to the delimiter, at most a[2] bytes */
        char *b = (char *)(uintptr_t)a[1];
        int c = 0;
        flockfile(f);
        while (r < a[2] && (c = getc_unlocked(f)) != EOF) {
            b[r++] = (char)c;
            if (c == (int)a[3])
                break;
        }
        funlockfile(f);
        if (r == 0)
            r = -1;
        break;
    }
    case RS_FSEEK: r = fseeko64(f, a[1], (int)a[2]); break;
    case RS_FTELL: r = (long)ftello64(f); break;
    case RS_FEOF: r = feof(f); break;
    case RS_FERROR: r = ferror(f); break;
    case RS_CLEARERR: clearerr(f); break;
    case RS_FILENO: r = fileno(f); break;
    case RS_SETVBUF: r = setvbuf(f, NULL, (int)a[1], (size_t)a[2]); break;
    default: r = -1, errno = ENOSYS;
    }
    /* errno where the call failed: -1 (EOF), a NULL stream, a short
     * transfer, a refused buffering */
    bool failed = r == -1 || ((opens || op == RS_FREOPEN) && r == 0) ||
                  ((op == RS_FWRITE || op == RS_FREAD) && r < a[2]) || (op == RS_SETVBUF && r);
    *err = failed ? errno : 0;
    if (op == RS_FOPEN && r == 0 && *err == EINTR) /* interrupted: as a call that waits */
        r = -1;
    if (failed && !*err && (opens || op == RS_FREOPEN))
        *err = EINVAL;
    return r;
}

/* At a release, what this node's stdout holds goes out (a part of a line,
 * or a buffer's worth where it is no terminal): what a thread printed
 * before it then comes before what a thread of another node prints after
 * its acquire (an unlock, a barrier, its end before a join), as in one
 * process's one buffer.  Before, a line begun without its end stayed in
 * its node's buffer, to come out after the program's last words (at that
 * node's end), or never.  (Glibc's FILE: its write pointers tell what it
 * holds, read without its lock; a stdout moved to the master holds
 * nothing here.) */
static void flush_own_stdout(void)
{
    if (cb.multi && stdout->_IO_write_ptr > stdout->_IO_write_base)
        REAL(fflush)(stdout);
}

__attribute__((constructor)) static void remote_init(void)
{
    cb_rsys_lib = lib_exec;
    cb_release_hook = flush_own_stdout;
}
