/* io.c: system calls on shared buffers.  The kernel does not raise SIGSEGV
 * when a system call touches a page of the application view that is not
 * present (or read-only): it fails with EFAULT, or transfers less.  So an
 * application thread's call whose buffers overlap the shared space (GAS or
 * the program's shared static data) first makes their pages present with
 * the access the kernel needs, by touching them as the program would (the
 * fault path serves the touch): a write that changes nothing (an atomic add
 * of 0) where the kernel stores, a read where it loads.  Between the touch
 * and the call, a concurrent acquire by another thread of this node may
 * invalidate a page again: a call failing with EFAULT is touched and retried
 * (TRIES times, then the EFAULT is returned).  Everything else (private
 * buffers, the runtime's, UCX's and Open MPI's threads) goes to libc at the
 * cost of a range check.
 *
 * Covered: read, write, pread, pwrite, readv, writev, preadv, pwritev
 * (and their 64 names), recv, send, recvfrom, sendto, recvmsg, sendmsg,
 * recvmmsg, sendmmsg, the
 * _FORTIFY_SOURCE entry points of the reads (__read_chk and the like; at
 * the end: __poll_chk, __ppoll_chk, __readlink_chk, __readlinkat_chk,
 * __getcwd_chk, __getgroups_chk), and
 * the path argument of open, openat, creat, fopen and the calls on paths
 * (below; on another node than the master they are made there).
 * stdio calls read(2) and write(2) inside libc, past any interposer, on the
 * FILE's buffer (and, for large fread/fwrite, directly on the caller's
 * buffer): the common entry points (fread, fwrite, fgets, fputs, fgetc,
 * getc, fputc, putc, getline, getdelim, fscanf, fprintf, fflush, fclose,
 * fseek, getchar, scanf) make that buffer present first; the FILE structure
 * itself is only touched by libc in user space and faults normally.
 *
 * Calls that store small results or wait (the stat family, pipe, accept,
 * socket options and addresses, sleeps, poll, select, epoll...) go
 * through copies instead (below: "other calls"), and so do the queries
 * (clock_getres, getrlimit, prlimit, sysinfo, getitimer, setitimer,
 * timer_gettime, timer_settime, sigpending, sched_getaffinity,
 * sched_getparam, sched_rr_get_interval, getgroups, getresuid, getresgid,
 * getentropy; cputime.c: clock_gettime, getrusage, times; signals.c:
 * sigtimedwait, sigwaitinfo, sigwait).
 *
 * Not covered: other system calls taking buffers (mincore, prctl,
 * ...), the unlocked and wide stdio variants,
 * fflush(NULL) and the flush of every stream at exit; a transfer that
 * comes back short because a page was invalidated mid-call is not redone
 * (it is a legal short count).  A buffer in unallocated shared memory is a
 * segmentation fault (as its first access would be), not EFAULT.
 *
 * On another node than the master, an application thread's calls on
 * descriptors and streams are made at the master (remote.c): each wrapper
 * here asks shim_remote_fd or shim_remote_file first. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/sysinfo.h>
#include <sys/random.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <dirent.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <sys/time.h>
#include <utime.h>
#include <unistd.h>

#include "shim.h"

#define TRIES 4
#define P(x) ((int64_t)(uintptr_t)(x))

/* ---- the shared ranges and the touch ---- */

/* [a, a+n) overlaps the shared space */
static inline __attribute__((always_inline)) bool overlaps(uintptr_t a, size_t n)
{
    if (n == 0)
        return false;
    uintptr_t e = a + n < a ? UINTPTR_MAX : a + n;
    if (cb.app && a < CB_GAS_BASE + cb.cfg.gas_size && e > CB_GAS_BASE)
        return true;
    for (int i = 0; i < cb.nalias; i++)
        if (a < cb.alias[i].hi && e > cb.alias[i].lo)
            return true;
    return false;
}

/* this thread's call on [p, p+n) needs preparing */
static inline __attribute__((always_inline)) bool ours(const void *p, size_t n)
{
    return overlaps((uintptr_t)p, n) && cb_app_thread;
}

/* touch the pages of [a, e), inside the region starting at base */
static void touch_region(uintptr_t a, uintptr_t e, uintptr_t base, bool write)
{
    while (a < e) {
        uint32_t acc = atomic_load_explicit(&cb.pst[cb_page_of(a)], memory_order_relaxed) & PG_ACC;
        if (write && acc != PG_RW)
            __atomic_fetch_add((volatile uint8_t *)a, 0, __ATOMIC_RELAXED);
        else if (!write && acc == PG_NONE)
            (void)*(volatile const uint8_t *)a;
        a += cb.ps - (a - base) % cb.ps; /* the next page of the region */
    }
}

/* Make the shared pages of [p, p+n) present here, writable if write. */
static void present(const void *p, size_t n, bool write)
{
    uintptr_t a = (uintptr_t)p, e = a + n < a ? UINTPTR_MAX : a + n;
    if (n == 0)
        return;
    if (cb.app) {
        uintptr_t lo = CB_GAS_BASE, hi = CB_GAS_BASE + cb.cfg.gas_size;
        if (a < hi && e > lo)
            touch_region(a > lo ? a : lo, e < hi ? e : hi, lo, write);
    }
    for (int i = 0; i < cb.nalias; i++) {
        uintptr_t lo = cb.alias[i].lo, hi = cb.alias[i].hi;
        if (a < hi && e > lo)
            touch_region(a > lo ? a : lo, e < hi ? e : hi, lo, write);
    }
}

static bool iov_ours(const struct iovec *v, int n)
{
    if (n <= 0 || !v)
        return false;
    if (overlaps((uintptr_t)v, (size_t)n * sizeof *v))
        return cb_app_thread;
    for (int i = 0; i < n; i++)
        if (overlaps((uintptr_t)v[i].iov_base, v[i].iov_len))
            return cb_app_thread;
    return false;
}

/* the kernel reads the array and stores into (write) or loads from the
 * buffers (those too long to be there are left to its EFAULT) */
static void iov_present(const struct iovec *v, int n, bool write)
{
    if (n > 0 && shim_iov_total(v, n) == SIZE_MAX)
        return;
    present(v, (size_t)n * sizeof *v, false);
    for (int i = 0; i < n; i++)
        present(v[i].iov_base, v[i].iov_len, write);
}

static bool msg_ours(const struct msghdr *m)
{
    return ours(m, sizeof *m) || iov_ours(m->msg_iov, (int)m->msg_iovlen) ||
           ours(m->msg_name, m->msg_namelen) || ours(m->msg_control, m->msg_controllen);
}

/* recvmsg stores into the header (lengths, flags) and its buffers */
static void msg_present(const struct msghdr *m, bool write)
{
    present(m, sizeof *m, write);
    iov_present(m->msg_iov, (int)m->msg_iovlen, write);
    present(m->msg_name, m->msg_namelen, write);
    present(m->msg_control, m->msg_controllen, write);
}

/* run call after prep; again after prep while it fails with EFAULT */
#define RETRY(prep, call) __extension__({                           \
        __typeof__(call) r_;                                        \
        for (int t_ = 0;; t_++) {                                   \
            prep;                                                   \
            r_ = (call);                                            \
            if (r_ != -1 || errno != EFAULT || t_ + 1 == TRIES)     \
                break;                                              \
        }                                                           \
        r_; })

/* libc's definition, resolved once; read and write eagerly (the runtime
 * calls them, possibly first inside its fault handler, where dlsym is not
 * safe) */
#define LIBC(fn) REAL(fn)
static ssize_t (*libc_read)(int, void *, size_t);
static ssize_t (*libc_write)(int, const void *, size_t);

__attribute__((constructor)) static void io_init(void)
{
    libc_read = (ssize_t (*)(int, void *, size_t))cb_libc("read");
    libc_write = (ssize_t (*)(int, const void *, size_t))cb_libc("write");
}

/* ---- file descriptors ---- */

ssize_t read(int fd, void *buf, size_t n)
{
    if (!libc_read)
        io_init();
    if (shim_remote_fd(fd))
        return shim_rs_read(fd, buf, n);
    if (!ours(buf, n))
        return libc_read(fd, buf, n);
    return RETRY(present(buf, n, true), libc_read(fd, buf, n));
}

ssize_t write(int fd, const void *buf, size_t n)
{
    if (!libc_write)
        io_init();
    if (shim_remote_fd(fd))
        return shim_rs_write(fd, buf, n);
    if (!ours(buf, n))
        return libc_write(fd, buf, n);
    return RETRY(present(buf, n, false), libc_write(fd, buf, n));
}

#define POS_IO(name, ptr, off_t_, write)                                     \
    ssize_t name(int fd, ptr buf, size_t n, off_t_ off)                      \
    {                                                                        \
        if (shim_remote_fd(fd))                                              \
            return write ? shim_rs_pread(fd, (void *)buf, n, off)            \
                         : shim_rs_pwrite(fd, buf, n, off);                  \
        if (!ours(buf, n))                                                   \
            return LIBC(name)(fd, buf, n, off);                              \
        return RETRY(present(buf, n, write), LIBC(name)(fd, buf, n, off));   \
    }
POS_IO(pread, void *, off_t, true)
POS_IO(pread64, void *, off64_t, true)
POS_IO(pwrite, const void *, off_t, false)
POS_IO(pwrite64, const void *, off64_t, false)

ssize_t readv(int fd, const struct iovec *v, int n)
{
    if (shim_remote_fd(fd))
        return shim_rs_readv(fd, v, n, false, 0);
    if (!iov_ours(v, n))
        return LIBC(readv)(fd, v, n);
    return RETRY(iov_present(v, n, true), LIBC(readv)(fd, v, n));
}

ssize_t writev(int fd, const struct iovec *v, int n)
{
    if (shim_remote_fd(fd))
        return shim_rs_writev(fd, v, n, false, 0);
    if (!iov_ours(v, n))
        return LIBC(writev)(fd, v, n);
    return RETRY(iov_present(v, n, false), LIBC(writev)(fd, v, n));
}

#define POS_IOV(name, off_t_, write)                                          \
    ssize_t name(int fd, const struct iovec *v, int n, off_t_ off)           \
    {                                                                        \
        if (shim_remote_fd(fd))                                              \
            return write ? shim_rs_readv(fd, v, n, true, off)                \
                         : shim_rs_writev(fd, v, n, true, off);              \
        if (!iov_ours(v, n))                                                 \
            return LIBC(name)(fd, v, n, off);                                \
        return RETRY(iov_present(v, n, write), LIBC(name)(fd, v, n, off));   \
    }
POS_IOV(preadv, off_t, true)
POS_IOV(preadv64, off64_t, true)
POS_IOV(pwritev, off_t, false)
POS_IOV(pwritev64, off64_t, false)

/* _FORTIFY_SOURCE's reads: the same, then libc's checking entry point */
ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen);
ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off, size_t buflen);
ssize_t __pread64_chk(int fd, void *buf, size_t n, off64_t off, size_t buflen);
ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags);
ssize_t __recvfrom_chk(int fd, void *buf, size_t n, size_t buflen, int flags,
                       struct sockaddr *from, socklen_t *fromlen);

ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen)
{
    if (shim_remote_fd(fd) && n <= buflen)
        return shim_rs_read(fd, buf, n);
    if (!ours(buf, n))
        return LIBC(__read_chk)(fd, buf, n, buflen);
    return RETRY(present(buf, n, true), LIBC(__read_chk)(fd, buf, n, buflen));
}

ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off, size_t buflen)
{
    if (shim_remote_fd(fd) && n <= buflen)
        return shim_rs_pread(fd, buf, n, off);
    if (!ours(buf, n))
        return LIBC(__pread_chk)(fd, buf, n, off, buflen);
    return RETRY(present(buf, n, true), LIBC(__pread_chk)(fd, buf, n, off, buflen));
}

ssize_t __pread64_chk(int fd, void *buf, size_t n, off64_t off, size_t buflen)
{
    if (shim_remote_fd(fd) && n <= buflen)
        return shim_rs_pread(fd, buf, n, off);
    if (!ours(buf, n))
        return LIBC(__pread64_chk)(fd, buf, n, off, buflen);
    return RETRY(present(buf, n, true), LIBC(__pread64_chk)(fd, buf, n, off, buflen));
}

/* ---- sockets ---- */

ssize_t recv(int fd, void *buf, size_t n, int flags)
{
    if (shim_remote_fd(fd))
        return shim_rs_recv(fd, buf, n, flags);
    if (!ours(buf, n))
        return LIBC(recv)(fd, buf, n, flags);
    return RETRY(present(buf, n, true), LIBC(recv)(fd, buf, n, flags));
}

ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags)
{
    if (shim_remote_fd(fd) && n <= buflen)
        return shim_rs_recv(fd, buf, n, flags);
    if (!ours(buf, n))
        return LIBC(__recv_chk)(fd, buf, n, buflen, flags);
    return RETRY(present(buf, n, true), LIBC(__recv_chk)(fd, buf, n, buflen, flags));
}

ssize_t send(int fd, const void *buf, size_t n, int flags)
{
    if (shim_remote_fd(fd))
        return shim_rs_send(fd, buf, n, flags);
    if (!ours(buf, n))
        return LIBC(send)(fd, buf, n, flags);
    return RETRY(present(buf, n, false), LIBC(send)(fd, buf, n, flags));
}

static bool from_ours(const void *buf, size_t n, const void *from, const socklen_t *len)
{
    return ours(buf, n) || ours(len, sizeof *len) || (len && ours(from, *len));
}

static void from_present(void *buf, size_t n, void *from, socklen_t *len)
{
    present(buf, n, true);
    if (len) {
        present(len, sizeof *len, true);
        present(from, *len, true);
    }
}

ssize_t recvfrom(int fd, void *restrict buf, size_t n, int flags, struct sockaddr *restrict from,
                 socklen_t *restrict len)
{
    if (shim_remote_fd(fd))
        return shim_rs_recvfrom(fd, buf, n, flags, from, len);
    if (!from_ours(buf, n, from, len))
        return LIBC(recvfrom)(fd, buf, n, flags, from, len);
    return RETRY(from_present(buf, n, from, len), LIBC(recvfrom)(fd, buf, n, flags, from, len));
}

ssize_t __recvfrom_chk(int fd, void *buf, size_t n, size_t buflen, int flags,
                       struct sockaddr *from, socklen_t *len)
{
    if (shim_remote_fd(fd) && n <= buflen)
        return shim_rs_recvfrom(fd, buf, n, flags, from, len);
    if (!from_ours(buf, n, from, len))
        return LIBC(__recvfrom_chk)(fd, buf, n, buflen, flags, from, len);
    return RETRY(from_present(buf, n, from, len),
                 LIBC(__recvfrom_chk)(fd, buf, n, buflen, flags, from, len));
}

ssize_t sendto(int fd, const void *buf, size_t n, int flags, const struct sockaddr *to,
               socklen_t len)
{
    if (shim_remote_fd(fd))
        return shim_rs_sendto(fd, buf, n, flags, to, len);
    if (!ours(buf, n) && !ours(to, to ? len : 0))
        return LIBC(sendto)(fd, buf, n, flags, to, len);
    return RETRY((present(buf, n, false), present(to, to ? len : 0, false)),
                 LIBC(sendto)(fd, buf, n, flags, to, len));
}

ssize_t recvmsg(int fd, struct msghdr *m, int flags)
{
    if (shim_remote_fd(fd) && m)
        return shim_rs_recvmsg(fd, m, flags);
    if (!m || !msg_ours(m))
        return LIBC(recvmsg)(fd, m, flags);
    return RETRY(msg_present(m, true), LIBC(recvmsg)(fd, m, flags));
}

ssize_t sendmsg(int fd, const struct msghdr *m, int flags)
{
    if (shim_remote_fd(fd) && m)
        return shim_rs_sendmsg(fd, m, flags);
    if (!m || !msg_ours(m))
        return LIBC(sendmsg)(fd, m, flags);
    return RETRY(msg_present(m, false), LIBC(sendmsg)(fd, m, flags));
}

/* sendmmsg and recvmmsg: each message's header and buffers, and the
 * lengths the kernel stores in the vector.  On a master's descriptor
 * (another node) one sendmsg or recvmsg at a time there, as the kernel
 * makes them: the count made, or -1 if none was (a later one's error
 * comes at the next call, as the kernel's); MSG_WAITFORONE waits for the
 * first only, and a timeout ends the receiving after a message. */
static bool mmsg_ours(const struct mmsghdr *v, unsigned n)
{
    if (ours(v, (size_t)n * sizeof *v))
        return true;
    for (unsigned i = 0; i < n; i++)
        if (msg_ours(&v[i].msg_hdr))
            return true;
    return false;
}

static void mmsg_present(const struct mmsghdr *v, unsigned n, bool write)
{
    present(v, (size_t)n * sizeof *v, true); /* the lengths */
    for (unsigned i = 0; i < n; i++)
        msg_present(&v[i].msg_hdr, write);
}

enum { MMSG_MAX = 1024 }; /* the kernel's UIO_MAXIOV: more are not made */

int sendmmsg(int fd, struct mmsghdr *v, unsigned n, int flags)
{
    if (n > MMSG_MAX)
        n = MMSG_MAX;
    if (shim_remote_fd(fd) && v) {
        unsigned i = 0;
        for (ssize_t r; i < n && (r = shim_rs_sendmsg(fd, &v[i].msg_hdr, flags)) >= 0; i++)
            v[i].msg_len = (unsigned)r;
        return i ? (int)i : -1;
    }
    if (!v || !mmsg_ours(v, n))
        return LIBC(sendmmsg)(fd, v, n, flags);
    return RETRY(mmsg_present(v, n, false), LIBC(sendmmsg)(fd, v, n, flags));
}

int recvmmsg(int fd, struct mmsghdr *v, unsigned n, int flags, struct timespec *timeout)
{
    if (n > MMSG_MAX)
        n = MMSG_MAX;
    if (shim_remote_fd(fd) && v) {
        uint64_t end = 0;
        if (timeout) {
            if (timeout->tv_sec < 0 || timeout->tv_nsec < 0 || timeout->tv_nsec >= 1000000000)
                return errno = EINVAL, -1;
            end = cb_now_ns() + (uint64_t)timeout->tv_sec * 1000000000ull + (uint64_t)timeout->tv_nsec;
        }
        unsigned i = 0;
        for (ssize_t r; i < n; i++) {
            int f = flags & ~MSG_WAITFORONE;
            if (i && flags & MSG_WAITFORONE)
                f |= MSG_DONTWAIT;
            if ((r = shim_rs_recvmsg(fd, &v[i].msg_hdr, f)) < 0)
                break;
            v[i].msg_len = (unsigned)r;
            if (timeout && cb_now_ns() >= end) {
                i++;
                break;
            }
        }
        if (timeout) { /* what is left, as the kernel stores it */
            uint64_t now = cb_now_ns(), left = now < end ? end - now : 0;
            *timeout = (struct timespec){ (time_t)(left / 1000000000ull), (long)(left % 1000000000ull) };
        }
        return i ? (int)i : -1;
    }
    if (!v || (!mmsg_ours(v, n) && !ours(timeout, sizeof *timeout)))
        return LIBC(recvmmsg)(fd, v, n, flags, timeout);
    return RETRY((mmsg_present(v, n, true), present(timeout, timeout ? sizeof *timeout : 0, true)),
                 LIBC(recvmmsg)(fd, v, n, flags, timeout));
}

/* ---- paths: the kernel reads the string; strlen reads it first ---- */

static inline bool path_ours(const char *path)
{
    return ours(path, 1);
}

#define PATH(path) present(path, strlen(path) + 1, false)
#define PATH_IF(path) (path_ours(path) ? PATH(path) : (void)0)

static bool open_has_mode(int flags)
{
    return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE;
}

#define OPEN(name)                                                           \
    int name(const char *path, int flags, ...)                               \
    {                                                                        \
        mode_t mode = 0;                                                     \
        if (open_has_mode(flags)) {                                          \
            va_list ap;                                                      \
            va_start(ap, flags);                                             \
            mode = va_arg(ap, mode_t);                                       \
            va_end(ap);                                                      \
        }                                                                    \
        if (shim_remote_fd(-1) && !shim_local_path(AT_FDCWD, path))          \
            return shim_rs_openat(AT_FDCWD, path, flags, mode);              \
        char proc_[256];                                                     \
        path = shim_proc_path(path, proc_, sizeof proc_);                    \
        if (!path_ours(path))                                                \
            return shim_local_opened(LIBC(name)(path, flags, mode));         \
        return shim_local_opened(RETRY(PATH(path), LIBC(name)(path, flags, mode))); \
    }
OPEN(open)
OPEN(open64)

#define OPENAT(name)                                                         \
    int name(int dir, const char *path, int flags, ...)                      \
    {                                                                        \
        mode_t mode = 0;                                                     \
        if (open_has_mode(flags)) {                                          \
            va_list ap;                                                      \
            va_start(ap, flags);                                             \
            mode = va_arg(ap, mode_t);                                       \
            va_end(ap);                                                      \
        }                                                                    \
        if (shim_remote_fd(dir == AT_FDCWD ? -1 : dir) && !shim_local_path(dir, path)) \
            return shim_rs_openat(dir, path, flags, mode);                   \
        char proc_[256];                                                     \
        path = shim_proc_path(path, proc_, sizeof proc_);                    \
        if (!path_ours(path))                                                \
            return shim_local_opened(LIBC(name)(dir, path, flags, mode));    \
        return shim_local_opened(RETRY(PATH(path), LIBC(name)(dir, path, flags, mode))); \
    }
OPENAT(openat)
OPENAT(openat64)

int creat(const char *path, mode_t mode)
{
    if (shim_remote_fd(-1))
        return shim_rs_openat(AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode);
    if (!path_ours(path))
        return LIBC(creat)(path, mode);
    return RETRY(PATH(path), LIBC(creat)(path, mode));
}

int creat64(const char *path, mode_t mode) { return creat(path, mode); }

/* _FORTIFY_SOURCE's opens of flags the compiler could not see (no mode):
 * flags that ask for a mode are glibc's (it ends the program, naming the
 * call); the others the shim's open.  Before, another node's thread opened
 * its own descriptor, whose number named another file at the master. */
#define OPEN_2(name, open_name)                                              \
    int name(const char *path, int flags)                                    \
    {                                                                        \
        if (open_has_mode(flags))                                            \
            return REAL(name)(path, flags);                                  \
        return open_name(path, flags);                                       \
    }
OPEN_2(__open_2, open)
OPEN_2(__open64_2, open64)
#define OPENAT_2(name, openat_name)                                          \
    int name(int dir, const char *path, int flags)                           \
    {                                                                        \
        if (open_has_mode(flags))                                            \
            return REAL(name)(dir, path, flags);                             \
        return openat_name(dir, path, flags);                                \
    }
OPENAT_2(__openat_2, openat)
OPENAT_2(__openat64_2, openat64)

/* ---- calls on paths ----
 * The file system is the master's, as the descriptors are: on another
 * node an application thread's call on a path (but /proc and /sys, which
 * are its node's, and a path relative to a descriptor of its node's own)
 * is made at the master.  On separate machines a file that open made there
 * is then found by stat, access, rename... of any thread, and a directory
 * made by one is there for every other's open.  Directory streams:
 * dirs.c. */
void shim_path_touch(const char *path)
{
    if (path_ours(path))
        PATH(path);
}

/* call with the paths a and b (b may be NULL) as the kernel reads them */
#define LOCAL2(a, b, call)                                                   \
    (path_ours(a) || path_ours(b) ? RETRY((PATH_IF(a), PATH_IF(b)), call) : (call))
#define LOCAL1(a, call) (path_ours(a) ? RETRY(PATH(a), call) : (call))
#ifndef SYS_fchmodat2
#define SYS_fchmodat2 452 /* Linux 6.6 (x86-64); Debian 12's headers lack it */
#endif
#define AT(dir) ((int64_t)(dir))
enum { PATH_A0 = 1 << 0, PATH_A1 = 1 << 1, PATH_A2 = 1 << 2, PATH_A3 = 1 << 3 };

int unlinkat(int dir, const char *path, int flags)
{
    if (shim_master_path(dir, path))
        return (int)shim_rs_path(SYS_unlinkat, AT(dir), P(path), flags, 0, 0, PATH_A1, -1, 0, -1, 0, 0);
    return LOCAL1(path, LIBC(unlinkat)(dir, path, flags));
}

int unlink(const char *path)
{
    if (shim_master_path(AT_FDCWD, path))
        return unlinkat(AT_FDCWD, path, 0);
    return LOCAL1(path, LIBC(unlink)(path));
}

int rmdir(const char *path)
{
    if (shim_master_path(AT_FDCWD, path))
        return unlinkat(AT_FDCWD, path, AT_REMOVEDIR);
    return LOCAL1(path, LIBC(rmdir)(path));
}

int remove(const char *path)
{
    if (shim_master_path(AT_FDCWD, path)) { /* as libc's: a directory is removed as one */
        int r = unlinkat(AT_FDCWD, path, 0);
        return r == -1 && errno == EISDIR ? unlinkat(AT_FDCWD, path, AT_REMOVEDIR) : r;
    }
    return LOCAL1(path, LIBC(remove)(path));
}

int mkdirat(int dir, const char *path, mode_t mode)
{
    if (shim_master_path(dir, path))
        return (int)shim_rs_path(SYS_mkdirat, AT(dir), P(path), mode, 0, 0, PATH_A1, -1, 0, -1, 0, 0);
    return LOCAL1(path, LIBC(mkdirat)(dir, path, mode));
}

int mkdir(const char *path, mode_t mode)
{
    if (shim_master_path(AT_FDCWD, path))
        return mkdirat(AT_FDCWD, path, mode);
    return LOCAL1(path, LIBC(mkdir)(path, mode));
}

int mknodat(int dir, const char *path, mode_t mode, dev_t dev)
{
    if (shim_master_path(dir, path)) {
        if ((unsigned)dev != dev) /* as libc: the kernel's is 32 bits */
            return errno = EINVAL, -1;
        return (int)shim_rs_path(SYS_mknodat, AT(dir), P(path), mode, (int64_t)dev, 0, PATH_A1, -1, 0,
                                 -1, 0, 0);
    }
    return LOCAL1(path, LIBC(mknodat)(dir, path, mode, dev));
}

int mknod(const char *path, mode_t mode, dev_t dev) { return mknodat(AT_FDCWD, path, mode, dev); }
int mkfifoat(int dir, const char *path, mode_t mode) { return mknodat(dir, path, mode | S_IFIFO, 0); }
int mkfifo(const char *path, mode_t mode) { return mknodat(AT_FDCWD, path, mode | S_IFIFO, 0); }

int faccessat(int dir, const char *path, int mode, int flags)
{
    if (shim_master_path(dir, path)) /* faccessat2 (Linux 5.8) only for flags */
        return (int)shim_rs_path(flags ? SYS_faccessat2 : SYS_faccessat, AT(dir), P(path), mode,
                                 flags, 0, PATH_A1, -1, 0, -1, 0, 0);
    return LOCAL1(path, LIBC(faccessat)(dir, path, mode, flags));
}

int access(const char *path, int mode) { return faccessat(AT_FDCWD, path, mode, 0); }
int euidaccess(const char *path, int mode) { return faccessat(AT_FDCWD, path, mode, AT_EACCESS); }
int eaccess(const char *path, int mode) { return faccessat(AT_FDCWD, path, mode, AT_EACCESS); }

int renameat2(int d1, const char *p1, int d2, const char *p2, unsigned flags)
{
    if (shim_master_path(d1, p1) && shim_master_path(d2, p2))
        return (int)shim_rs_path(SYS_renameat2, AT(d1), P(p1), AT(d2), P(p2), flags,
                                 PATH_A1 | PATH_A3, -1, 0, -1, 0, 0);
    return LOCAL2(p1, p2, LIBC(renameat2)(d1, p1, d2, p2, flags));
}

int renameat(int d1, const char *p1, int d2, const char *p2) { return renameat2(d1, p1, d2, p2, 0); }
int rename(const char *p1, const char *p2) { return renameat2(AT_FDCWD, p1, AT_FDCWD, p2, 0); }

int linkat(int d1, const char *p1, int d2, const char *p2, int flags)
{
    if (shim_master_path(d1, p1) && shim_master_path(d2, p2))
        return (int)shim_rs_path(SYS_linkat, AT(d1), P(p1), AT(d2), P(p2), flags,
                                 PATH_A1 | PATH_A3, -1, 0, -1, 0, 0);
    return LOCAL2(p1, p2, LIBC(linkat)(d1, p1, d2, p2, flags));
}

int link(const char *p1, const char *p2) { return linkat(AT_FDCWD, p1, AT_FDCWD, p2, 0); }

/* the target is a string kept in the link, not a path looked up */
int symlinkat(const char *target, int dir, const char *path)
{
    if (shim_master_path(dir, path))
        return (int)shim_rs_path(SYS_symlinkat, P(target), AT(dir), P(path), 0, 0, PATH_A0 | PATH_A2,
                                 -1, 0, -1, 0, 0);
    return LOCAL2(path, target, LIBC(symlinkat)(target, dir, path));
}

int symlink(const char *target, const char *path) { return symlinkat(target, AT_FDCWD, path); }

int fchmodat(int dir, const char *path, mode_t mode, int flags)
{
    if (shim_master_path(dir, path)) {
        if (flags) { /* AT_SYMLINK_NOFOLLOW: libc's goes through /proc, which is the node's */
            int r = (int)shim_rs_path(SYS_fchmodat2, AT(dir), P(path), mode, flags, 0, PATH_A1, -1,
                                      0, -1, 0, 0);
            if (r != -1 || errno != ENOSYS || flags != AT_SYMLINK_NOFOLLOW)
                return r;
            /* before Linux 6.6, as libc: a link cannot change its mode, a file can */
            struct stat st;
            if (fstatat(dir, path, &st, AT_SYMLINK_NOFOLLOW))
                return -1;
            if (S_ISLNK(st.st_mode))
                return errno = EOPNOTSUPP, -1;
        }
        return (int)shim_rs_path(SYS_fchmodat, AT(dir), P(path), mode, 0, 0, PATH_A1, -1, 0, -1, 0, 0);
    }
    return LOCAL1(path, LIBC(fchmodat)(dir, path, mode, flags));
}

int chmod(const char *path, mode_t mode) { return fchmodat(AT_FDCWD, path, mode, 0); }

int fchownat(int dir, const char *path, uid_t uid, gid_t gid, int flags)
{
    if (shim_master_path(dir, path))
        return (int)shim_rs_path(SYS_fchownat, AT(dir), P(path), uid, gid, flags, PATH_A1, -1, 0, -1,
                                 0, 0);
    return LOCAL1(path, LIBC(fchownat)(dir, path, uid, gid, flags));
}

int chown(const char *path, uid_t uid, gid_t gid) { return fchownat(AT_FDCWD, path, uid, gid, 0); }
int lchown(const char *path, uid_t uid, gid_t gid)
{
    return fchownat(AT_FDCWD, path, uid, gid, AT_SYMLINK_NOFOLLOW);
}

int truncate(const char *path, off_t len)
{
    if (shim_master_path(AT_FDCWD, path))
        return (int)shim_rs_path(SYS_truncate, P(path), len, 0, 0, 0, PATH_A0, -1, 0, -1, 0, 0);
    return LOCAL1(path, LIBC(truncate)(path, len));
}

int truncate64(const char *path, off64_t len) { return truncate(path, (off_t)len); }

#define TIMES_IF(t) (ours(t, 2 * sizeof *(t)) ? present(t, 2 * sizeof *(t), false) : (void)0)

int utimensat(int dir, const char *path, const struct timespec t[2], int flags)
{
    if (shim_master_path(dir, path))
        return (int)shim_rs_path(SYS_utimensat, AT(dir), P(path), P(t), flags, 0, PATH_A1, 2,
                                 2 * sizeof *t, -1, 0, 0);
    return RETRY((PATH_IF(path), TIMES_IF(t)), LIBC(utimensat)(dir, path, t, flags));
}


/* libc resolves the path itself (lstat, readlink inside libc): at the
 * master, all of it.  NULL resolved: in the program's malloc, as libc's. */
char *realpath(const char *restrict path, char *restrict resolved)
{
    if (!path || !shim_master_path(AT_FDCWD, path))
        return REAL(realpath)(path, resolved);
    char buf[PATH_MAX];
    if (shim_rs_realpath(path, buf))
        return NULL;
    if (!resolved && !(resolved = shim_malloc(strlen(buf) + 1)))
        return errno = ENOMEM, NULL;
    return strcpy(resolved, buf);
}

char *canonicalize_file_name(const char *path) { return realpath(path, NULL); }

char *__realpath_chk(const char *path, char *resolved, size_t len)
{
    if (len < PATH_MAX)
        __builtin_trap(); /* as libc's __chk_fail: the buffer is too small */
    return realpath(path, resolved);
}

int utimes(const char *path, const struct timeval tv[2])
{
    if (!shim_master_path(AT_FDCWD, path))
        return RETRY((PATH_IF(path), TIMES_IF(tv)), LIBC(utimes)(path, tv));
    struct timespec t[2];
    for (int i = 0; tv && i < 2; i++)
        t[i] = (struct timespec){ tv[i].tv_sec, tv[i].tv_usec * 1000 };
    return utimensat(AT_FDCWD, path, tv ? t : NULL, 0);
}

int utime(const char *path, const struct utimbuf *u)
{
    if (!shim_master_path(AT_FDCWD, path))
        return RETRY((PATH_IF(path), u && ours(u, sizeof *u) ? present(u, sizeof *u, false) : (void)0),
                     LIBC(utime)(path, u));
    struct timespec t[2] = { { u ? u->actime : 0, 0 }, { u ? u->modtime : 0, 0 } };
    return utimensat(AT_FDCWD, path, u ? t : NULL, 0);
}

/* fopen fails with EFAULT and returns NULL */
#define FOPEN(name)                                                          \
    FILE *name(const char *path, const char *mode)                           \
    {                                                                        \
        if (shim_remote_fd(-1) && !shim_local_path(AT_FDCWD, path))          \
            return shim_rs_fopen(path, mode);                                \
        char proc_[256];                                                     \
        path = shim_proc_path(path, proc_, sizeof proc_);                    \
        if (!path_ours(path))                                                \
            return shim_local_stream(LIBC(name)(path, mode));                \
        FILE *f = NULL;                                                      \
        for (int t = 0; t < TRIES && !f; t++) {                              \
            PATH(path);                                                      \
            f = LIBC(name)(path, mode);                                      \
            if (!f && errno != EFAULT)                                       \
                break;                                                       \
        }                                                                    \
        return shim_local_stream(f);                                         \
    }
FOPEN(fopen)
FOPEN(fopen64)

/* ---- other calls: through copies of ours ----
 * The kernel stores into and loads from copies on this thread's stack (or
 * in private memory when large), written first so that their pages are
 * present; the program's buffers are read before the call and written
 * after it by ordinary loads and stores, which fault as the program's own
 * would.  So a page invalidated meanwhile costs a fault, not what the call
 * did (a descriptor made, a connection accepted, events taken), and
 * nothing is done twice.  A path is read by the kernel in place: touched,
 * and the call made again while it fails with EFAULT (nothing happened). */

/* a zeroed copy of n bytes: local (cap bytes, on the caller's stack) when
 * they fit, else private memory (malloc here is libc's: internal.h); NULL
 * if there is none */
static void *copy_of(void *local, size_t cap, size_t n)
{
    void *c = n <= cap ? local : malloc(n);
    if (c)
        memset(c, 0, n);
    return c;
}

static void copy_done(void *c, void *local)
{
    if (c != local)
        free(c);
}


/* call(x) stores a T at x (returning -1 on failure): through a copy, then
 * into p */
#define STORE_T(T, p, call)                                                  \
    if (!ours(p, sizeof(T))) /* NULL: not ours */                            \
        return call(p);                                                      \
    T b_;                                                                    \
    memset(&b_, 0, sizeof b_);                                               \
    long r_ = call(&b_);                                                     \
    if (r_ != -1)                                                            \
        memcpy(p, &b_, sizeof b_);                                           \
    return r_;

/* the same, with a path the kernel reads in place */
#define STORE_T_PATH(T, p, path, call)                                       \
    if (!path_ours(path) && !ours(p, sizeof(T)))                             \
        return call(p);                                                      \
    T b_;                                                                    \
    memset(&b_, 0, sizeof b_);                                               \
    long r_ = RETRY(PATH_IF(path), call(&b_));                               \
    if (r_ != -1)                                                            \
        memcpy(p, &b_, sizeof b_);                                           \
    return r_;

#define CALL(x) LIBC(stat)(path, x)
int stat(const char *restrict path, struct stat *restrict st)
{
    if (shim_master_path(AT_FDCWD, path))
        return (int)shim_rs_store(SYS_newfstatat, AT_FDCWD, P(path), P(st), 0, 0, 2, sizeof *st);
    STORE_T_PATH(struct stat, st, path, CALL)
}
#undef CALL
#define CALL(x) LIBC(stat64)(path, x)
int stat64(const char *restrict path, struct stat64 *restrict st)
{
    if (shim_master_path(AT_FDCWD, path))
        return (int)shim_rs_store(SYS_newfstatat, AT_FDCWD, P(path), P(st), 0, 0, 2, sizeof *st);
    STORE_T_PATH(struct stat64, st, path, CALL)
}
#undef CALL
#define CALL(x) LIBC(lstat)(path, x)
int lstat(const char *restrict path, struct stat *restrict st)
{
    if (shim_master_path(AT_FDCWD, path))
        return (int)shim_rs_store(SYS_newfstatat, AT_FDCWD, P(path), P(st), AT_SYMLINK_NOFOLLOW, 0,
                                  2, sizeof *st);
    STORE_T_PATH(struct stat, st, path, CALL)
}
#undef CALL
#define CALL(x) LIBC(lstat64)(path, x)
int lstat64(const char *restrict path, struct stat64 *restrict st)
{
    if (shim_master_path(AT_FDCWD, path))
        return (int)shim_rs_store(SYS_newfstatat, AT_FDCWD, P(path), P(st), AT_SYMLINK_NOFOLLOW, 0,
                                  2, sizeof *st);
    STORE_T_PATH(struct stat64, st, path, CALL)
}
#undef CALL
#define CALL(x) LIBC(fstatat)(dir, path, x, flags)
int fstatat(int dir, const char *restrict path, struct stat *restrict st, int flags)
{
    if (shim_master_path(dir, path))
        return (int)shim_rs_store(SYS_newfstatat, dir, P(path), P(st), flags, 0, 2, sizeof *st);
    STORE_T_PATH(struct stat, st, path, CALL)
}
#undef CALL
#define CALL(x) LIBC(fstatat64)(dir, path, x, flags)
int fstatat64(int dir, const char *restrict path, struct stat64 *restrict st, int flags)
{
    if (shim_master_path(dir, path))
        return (int)shim_rs_store(SYS_newfstatat, dir, P(path), P(st), flags, 0, 2, sizeof *st);
    STORE_T_PATH(struct stat64, st, path, CALL)
}
#undef CALL
#define CALL(x) LIBC(statx)(dir, path, flags, mask, x)
int statx(int dir, const char *restrict path, int flags, unsigned mask, struct statx *restrict st)
{
    if (shim_master_path(dir, path))
        return (int)shim_rs_store(SYS_statx, dir, P(path), flags, mask, P(st), 4, sizeof *st);
    STORE_T_PATH(struct statx, st, path, CALL)
}
#undef CALL
#define CALL(x) LIBC(fstat)(fd, x)
int fstat(int fd, struct stat *st)
{
    if (shim_remote_fd(fd))
        return (int)shim_rs_store(SYS_fstat, fd, P(st), 0, 0, 0, 1, sizeof *st);
    STORE_T(struct stat, st, CALL)
}
#undef CALL
#define CALL(x) LIBC(fstat64)(fd, x)
int fstat64(int fd, struct stat64 *st)
{
    if (shim_remote_fd(fd))
        return (int)shim_rs_store(SYS_fstat, fd, P(st), 0, 0, 0, 1, sizeof *st);
    STORE_T(struct stat64, st, CALL)
}
#undef CALL
/* the file systems: the master's too (statvfs made there by libc) */
#define CALL(x) LIBC(statfs)(path, x)
int statfs(const char *path, struct statfs *st)
{
    if (shim_master_path(AT_FDCWD, path))
        return (int)shim_rs_path(SYS_statfs, P(path), P(st), 0, 0, 0, PATH_A0, -1, 0, 1, sizeof *st, 0);
    STORE_T_PATH(struct statfs, st, path, CALL)
}
#undef CALL
_Static_assert(sizeof(struct statfs64) == sizeof(struct statfs), "statfs64 is statfs");
int statfs64(const char *path, struct statfs64 *st) { return statfs(path, (struct statfs *)st); }
#define CALL(x) LIBC(fstatfs)(fd, x)
int fstatfs(int fd, struct statfs *st)
{
    if (shim_remote_fd(fd))
        return (int)shim_rs_store(SYS_fstatfs, fd, P(st), 0, 0, 0, 1, sizeof *st);
    STORE_T(struct statfs, st, CALL)
}
#undef CALL
int fstatfs64(int fd, struct statfs64 *st) { return fstatfs(fd, (struct statfs *)st); }
#define CALL(x) LIBC(statvfs)(path, x)
int statvfs(const char *restrict path, struct statvfs *restrict st)
{
    if (shim_master_path(AT_FDCWD, path))
        return shim_rs_statvfs(path, -1, st);
    STORE_T_PATH(struct statvfs, st, path, CALL)
}
#undef CALL
_Static_assert(sizeof(struct statvfs64) == sizeof(struct statvfs), "statvfs64 is statvfs");
int statvfs64(const char *restrict path, struct statvfs64 *restrict st)
{
    return statvfs(path, (struct statvfs *)st);
}
#define CALL(x) LIBC(fstatvfs)(fd, x)
int fstatvfs(int fd, struct statvfs *st)
{
    if (shim_remote_fd(fd))
        return shim_rs_statvfs(NULL, fd, st);
    STORE_T(struct statvfs, st, CALL)
}
#undef CALL
int fstatvfs64(int fd, struct statvfs64 *st) { return fstatvfs(fd, (struct statvfs *)st); }
#define CALL(x) LIBC(uname)(x)
int uname(struct utsname *u) { STORE_T(struct utsname, u, CALL) }
#undef CALL
typedef int fd_pair[2];
#define CALL(x) LIBC(pipe)((int *)(x))
int pipe(int fds[2])
{
    if (shim_remote_fd(-1))
        return shim_rs_pair(SYS_pipe2, 0, 0, 0, 0, fds);
    STORE_T(fd_pair, fds, CALL)
}
#undef CALL
#define CALL(x) LIBC(pipe2)((int *)(x), flags)
int pipe2(int fds[2], int flags)
{
    if (shim_remote_fd(-1))
        return shim_rs_pair(SYS_pipe2, 0, flags, 0, 0, fds);
    STORE_T(fd_pair, fds, CALL)
}
#undef CALL
#define CALL(x) LIBC(socketpair)(domain, type, proto, (int *)(x))
int socketpair(int domain, int type, int proto, int sv[2])
{
    if (shim_remote_fd(-1))
        return shim_rs_pair(SYS_socketpair, domain, type, proto, 3, sv);
    STORE_T(fd_pair, sv, CALL)
}
#undef CALL

ssize_t readlinkat(int dir, const char *restrict path, char *restrict buf, size_t n)
{
    if (shim_master_path(dir, path))
        return shim_rs_path(SYS_readlinkat, AT(dir), P(path), P(buf), (int64_t)n, 0, PATH_A1, -1, 0,
                            2, n, RSYS_UPTO_RES);
    if (!path_ours(path) && !ours(buf, n))
        return LIBC(readlinkat)(dir, path, buf, n);
    char local[256], *c = copy_of(local, sizeof local, n ? n : 1);
    if (!c)
        return errno = ENOMEM, -1;
    ssize_t r = RETRY(PATH_IF(path), LIBC(readlinkat)(dir, path, c, n));
    if (r > 0)
        memcpy(buf, c, (size_t)r);
    copy_done(c, local);
    return r;
}

ssize_t readlink(const char *restrict path, char *restrict buf, size_t n)
{
    return readlinkat(AT_FDCWD, path, buf, n);
}

/* getcwd(NULL, n) allocates the result with the program's malloc.  On
 * another node the directory is the master's (the process's: a node whose
 * machine lacks it stays where it was) */
char *getcwd(char *buf, size_t n)
{
    bool master = shim_remote_fd(-1);
    if (!cb_app_thread || (buf && !ours(buf, n) && !master))
        return LIBC(getcwd)(buf, n);
    if (buf && !n)
        return errno = EINVAL, NULL;
    size_t cap = buf || n ? n : PATH_MAX;
    if (master && cap > PATH_MAX) /* the kernel's longest */
        cap = PATH_MAX;
    char *c = copy_of(NULL, 0, cap);
    if (!c)
        return errno = ENOMEM, NULL;
    char *r = !master ? LIBC(getcwd)(c, cap)
                      : shim_rs_path(SYS_getcwd, P(c), (int64_t)cap, 0, 0, 0, 0, -1, 0, 0, cap,
                                     RSYS_STRING) < 0 ? NULL : c;
    if (r && r[0] != '/') /* "(unreachable)": libc's answer */
        r = NULL, errno = ENOENT;
    if (r) {
        size_t len = strlen(c) + 1;
        if ((r = buf ? buf : shim_malloc(n > len ? n : len)))
            memcpy(r, c, len);
        else
            errno = ENOMEM;
    }
    copy_done(c, NULL);
    return r;
}

/* glibc's: $PWD where it names the working directory, else getcwd's */
char *get_current_dir_name(void)
{
    if (!shim_remote_fd(-1))
        return LIBC(get_current_dir_name)();
    const char *pwd = getenv("PWD");
    struct stat dot, at;
    if (pwd && !stat(".", &dot) && !stat(pwd, &at) && dot.st_dev == at.st_dev &&
        dot.st_ino == at.st_ino) {
        char *r = shim_malloc(strlen(pwd) + 1);
        return r ? strcpy(r, pwd) : (errno = ENOMEM, NULL);
    }
    return getcwd(NULL, 0);
}

ssize_t getrandom(void *buf, size_t n, unsigned flags)
{
    if (!ours(buf, n))
        return LIBC(getrandom)(buf, n, flags);
    char local[256], *c = copy_of(local, sizeof local, n ? n : 1);
    if (!c)
        return errno = ENOMEM, -1;
    ssize_t r = LIBC(getrandom)(c, n, flags);
    if (r > 0)
        memcpy(buf, c, (size_t)r);
    copy_done(c, local);
    return r;
}

/* sleeps: the length read; what is left stored where the kernel stores it
 * (an interrupted relative sleep), else left alone (nanosleep(&t, &t)) */
#define SLEEP(call, interrupted)                                             \
    if (!req || (!ours(req, sizeof *req) && !(rem && ours(rem, sizeof *rem)))) \
        return call(req, rem);                                               \
    struct timespec q = *req, m = { 0, 0 };                                  \
    int r = call(&q, rem ? &m : NULL);                                       \
    if (rem && (interrupted))                                                \
        *rem = m;                                                            \
    return r;

/* A thread that sleeps or yields in a loop without any acquire may be
 * polling a variable another thread writes (while (!done) usleep(100);),
 * which release consistency alone never shows it: after 200 us of that it
 * pulls the other nodes' writes (propagate.c), then again at gaps doubling
 * up to CABLES_PROPAGATE while it goes on, or from 200 us again after a
 * pull that brought news (a handoff through plain flags: a new wait).
 * Not from a signal handler that interrupted its pull (cb_pull), whose
 * locks it holds.  The program's signals are held off during the pull (a
 * handler that leaves by a jump must not leave it halfway): true if they
 * still are, for the caller to let in (*was: the mask to put back).  A
 * sleep lets them in as it begins (held_sleep), so one that came during
 * the pull, or just after it, ends the sleep as it would have (before,
 * the sleep slept on past it: the handler ran inside the pull, or just
 * after it). */
static bool poll_point(sigset_t *was)
{
    static __thread uint32_t seen;
    static __thread uint64_t gap, next;
    if (!cb_app_thread || !cb.multi || cb.forked || cb_syncing ||
        cb.cfg.propagate <= 0 || atomic_load(&cb.nnodes) < 2)
        return false;
    uint64_t now = cb_now_ns();
    const uint64_t first = 200000, most = (uint64_t)(cb.cfg.propagate * 1e9);
    if (cb_acquires != seen || !gap) { /* it synchronized: not polling */
        seen = cb_acquires;
        gap = first;
        next = now + gap;
        return false;
    }
    if (now < next)
        return false;
    bool news;
    bool held = cb_app_signals_hold(was);
    AS_RUNTIME(news = cb_pull(0, -1, 0)); /* (a pull's acquire leaves cb_acquires as it was) */
    static _Atomic bool noted;
    if (news && cb.cfg.poll_note && !atomic_exchange(&noted, true))
        fprintf(stderr,
                "cables: node %d: a thread that sleeps or yields without taking a lock, a barrier "
                "or a join was shown other nodes' writes by propagation (within %g s): a flag it "
                "polls is seen, and the data written before it in order, but slowly, and not in "
                "every case (README, Known limits); publish such data under a mutex, or with C11 "
                "atomics compiled with cables-cc (CABLES_POLL_NOTE=0 silences this)\n",
                cb.self, cb.cfg.propagate);
    gap = news ? first : gap * 2 < most ? gap * 2 : most;
    next = cb_now_ns() + gap;
    return held;
}

/* After poll_point held them: a sleep of *req on the monotonic clock that lets the
 * program's signals in as it begins (ppoll, which sets the mask and
 * sleeps at once; the kernel's call leaves what is left in its timeout);
 * 0, or -1 and errno (EINTR: what is left in *left) */
static int held_sleep(struct timespec req, struct timespec *left, const sigset_t *was)
{
    long r = syscall(SYS_ppoll, NULL, 0, &req, was, _NSIG / 8);
    int e = errno;
    cb_app_signals_let(was);
    if (r == -1 && e == EINTR && left)
        *left = req;
    errno = e;
    return r == -1 ? -1 : 0;
}

#define CALL(q, m) LIBC(nanosleep)(q, m)
int nanosleep(const struct timespec *req, struct timespec *rem)
{
    sigset_t was;
    if (poll_point(&was)) {
        if (req) {
            int saved = errno;
            struct timespec m;
            if (held_sleep(*req, &m, &was) == 0)
                return errno = saved, 0;
            if (rem && errno == EINTR)
                *rem = m;
            return -1;
        }
        cb_app_signals_let(&was);
    }
    SLEEP(CALL, r == -1 && errno == EINTR)
}
#undef CALL
#define CALL(q, m) LIBC(clock_nanosleep)(clk, flags, q, m)
int clock_nanosleep(clockid_t clk, int flags, const struct timespec *req, struct timespec *rem)
{
    sigset_t was;
    if (poll_point(&was)) {
        if (req && clk == CLOCK_MONOTONIC && !(flags & TIMER_ABSTIME)) {
            int saved = errno;
            struct timespec m;
            int r = held_sleep(*req, &m, &was) == 0 ? 0 : errno;
            if (rem && r == EINTR)
                *rem = m;
            errno = saved;
            return r;
        }
        if (cb_app_signals_let(&was) && req) { /* another clock: a signal came, it ends now */
            if (rem && !(flags & TIMER_ABSTIME))
                *rem = *req;
            return EINTR;
        }
    }
    SLEEP(CALL, r == EINTR && !(flags & TIMER_ABSTIME))
}
#undef CALL
/* (libc's own sleeps, which call its nanosleep inside) */
int usleep(useconds_t us)
{
    sigset_t was;
    if (poll_point(&was))
        return held_sleep((struct timespec){ us / 1000000, us % 1000000 * 1000 }, NULL, &was);
    return LIBC(usleep)(us);
}
unsigned int sleep(unsigned int s)
{
    sigset_t was;
    if (poll_point(&was)) { /* what is left, rounded as glibc's */
        int saved = errno;
        struct timespec m;
        int r = held_sleep((struct timespec){ s, 0 }, &m, &was);
        errno = saved;
        return r == 0 ? 0 : (unsigned)m.tv_sec + (m.tv_nsec >= 500000000);
    }
    return LIBC(sleep)(s);
}
int sched_yield(void)
{
    sigset_t was;
    if (poll_point(&was))
        cb_app_signals_let(&was);
    return LIBC(sched_yield)();
}

/* socket addresses out (a descriptor of the master's: its call nr there):
 * a sockaddr_storage passed (the largest any family gives back); the
 * length the kernel gives back, and that many bytes out, at most the
 * program's length */
#define ADDR_OUT(nr, flags, call)                                            \
    if (shim_remote_fd(fd))                                                  \
        return shim_rs_addr(nr, fd, addr, len, flags);                       \
    if (!addr || !len || (!ours(len, sizeof *len) && !ours(addr, *len)))     \
        return call(addr, len); /* no address: the length is left alone */   \
    struct sockaddr_storage b;                                               \
    memset(&b, 0, sizeof b);                                                 \
    socklen_t have = *len, bl = sizeof b;                                    \
    int r = call((struct sockaddr *)&b, &bl);                                \
    if (r != -1) {                                                           \
        memcpy(addr, &b, have < bl ? have : bl);                             \
        *len = bl;                                                           \
    }                                                                        \
    return r;

#define CALL(a, l) LIBC(accept)(fd, a, l)
int accept(int fd, struct sockaddr *restrict addr, socklen_t *restrict len)
{
    ADDR_OUT(SYS_accept4, 0, CALL)
}
#undef CALL
#define CALL(a, l) LIBC(accept4)(fd, a, l, flags)
int accept4(int fd, struct sockaddr *restrict addr, socklen_t *restrict len, int flags)
{
    ADDR_OUT(SYS_accept4, flags, CALL)
}
#undef CALL
#define CALL(a, l) LIBC(getsockname)(fd, a, l)
int getsockname(int fd, struct sockaddr *restrict addr, socklen_t *restrict len)
{
    ADDR_OUT(SYS_getsockname, 0, CALL)
}
#undef CALL
#define CALL(a, l) LIBC(getpeername)(fd, a, l)
int getpeername(int fd, struct sockaddr *restrict addr, socklen_t *restrict len)
{
    ADDR_OUT(SYS_getpeername, 0, CALL)
}
#undef CALL

/* n bytes at p that the kernel only reads: a copy */
#define LOAD_N(p, n, call)                                                   \
    if (!ours(p, n))                                                         \
        return call(p);                                                      \
    char local[sizeof(struct sockaddr_storage)], *c = copy_of(local, sizeof local, n); \
    if (!c)                                                                  \
        return errno = ENOMEM, -1;                                           \
    memcpy(c, p, n);                                                         \
    int r = call((void *)c);                                                 \
    copy_done(c, local);                                                     \
    return r;

#define CALL(x) LIBC(bind)(fd, x, len)
int bind(int fd, const struct sockaddr *addr, socklen_t len)
{
    if (shim_remote_fd(fd))
        return shim_rs_load(SYS_bind, fd, P(addr), len, 0, 0, 1, len);
    LOAD_N(addr, len, CALL)
}
#undef CALL
#define CALL(x) LIBC(connect)(fd, x, len)
int connect(int fd, const struct sockaddr *addr, socklen_t len)
{
    if (shim_remote_fd(fd))
        return shim_rs_load(SYS_connect, fd, P(addr), len, 0, 0, 1, len);
    LOAD_N(addr, len, CALL)
}
#undef CALL
#define CALL(x) LIBC(setsockopt)(fd, level, name, x, len)
int setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
    if (shim_remote_fd(fd))
        return shim_rs_load(SYS_setsockopt, fd, level, name, P(val), len, 3, len);
    LOAD_N(val, len, CALL)
}
#undef CALL

int getsockopt(int fd, int level, int name, void *restrict val, socklen_t *restrict len)
{
    if (shim_remote_fd(fd))
        return shim_rs_getsockopt(fd, level, name, val, len);
    if (!val || !len || (!ours(len, sizeof *len) && !ours(val, *len)))
        return LIBC(getsockopt)(fd, level, name, val, len);
    socklen_t have = *len, got = have;
    char local[256], *c = copy_of(local, sizeof local, have ? have : 1);
    if (!c)
        return errno = ENOMEM, -1;
    memcpy(c, val, have); /* some options read their buffer first */
    int r = LIBC(getsockopt)(fd, level, name, c, &got);
    if (r == 0)
        memcpy(val, c, have < got ? have : got);
    if (r == 0 || got != have)
        *len = got; /* also the length an ERANGE asks for */
    copy_done(c, local);
    return r;
}

/* waits: the arrays and sets in, what the kernel set out */
#define POLL(call)                                                           \
    struct pollfd local[32], *c = copy_of(local, sizeof local, n * sizeof *fds); \
    if (!c)                                                                  \
        return errno = ENOMEM, -1;                                           \
    memcpy(c, fds, n * sizeof *fds);                                         \
    int r = call;                                                            \
    if (r != -1)                                                             \
        for (nfds_t i = 0; i < n; i++)                                       \
            fds[i].revents = c[i].revents;                                   \
    copy_done(c, local);                                                     \
    return r;

/* A poll or select of another node's thread is made at the master when it
 * names a descriptor of the master's; with none (a ppoll only waiting, a
 * node's own signalfd or pipe), here: at the master those numbers are
 * other descriptors, and a signal must interrupt the wait here (before,
 * a node's signalfd was polled as the master's descriptor of its number). */
static bool poll_there(struct pollfd *fds, nfds_t n) /* (not const: poll's fds are write_only to GCC) */
{
    if (!shim_remote_fd(-1))
        return false;
    for (nfds_t i = 0; fds && i < n; i++)
        if (fds[i].fd >= 0 && shim_remote_fd(fds[i].fd))
            return true;
    return false;
}

static bool select_there(int n, fd_set *const set[3])
{
    if (!shim_remote_fd(-1))
        return false;
    for (int k = 0; k < 3; k++) /* (a set of n > FD_SETSIZE descriptors is longer) */
        for (int fd = 0; set[k] && fd < n; fd++)
            if (__FDS_BITS(set[k])[fd / __NFDBITS] >> (fd % __NFDBITS) & 1 && shim_remote_fd(fd))
                return true;
    return false;
}

/* A poll naming descriptors of both kinds (a signalfd or a /proc file of
 * the node's own, and the master's) waits for both: the caller polls its
 * node's own and an eventfd (done) here, while a thread of the runtime
 * makes the poll of the master's at the master, with an eventfd there
 * (wake), then writes done.  Whichever comes first ends the other: done
 * ends the caller's poll, a write into wake the master's.  (The caller
 * polls its own: a signalfd gives the signals of the thread that reads
 * it.)  Before, the whole call was made at the master, where the node's
 * numbers name other descriptors. */
/* one mixed poll's, on the heap: a handler that leaves the poll by
 * siglongjmp leaves it behind, running, and the thread's next mixed poll
 * or its end ends it (active) */
struct watch {
    pthread_t t;
    bool started;
    int done, wake; /* eventfds: here, and at the master */
    int r, e;       /* the master's poll */
    nfds_t nown, nthere;
    struct timespec ts;
    bool timed;
    struct pollfd fds[]; /* the node's own and done, then the master's and wake */
};
static __thread struct watch *active;

static void *poll_there_for(void *arg)
{
    struct watch *w = arg;
    w->r = shim_rs_poll(w->fds + w->nown + 1, w->nthere + 1, w->timed ? &w->ts : NULL);
    w->e = errno;
    uint64_t one = 1;
    if (LIBC(write)(w->done, &one, sizeof one)) {}
    return NULL;
}

/* the master's poll ended (a write into wake: at once, if it waits yet),
 * its thread joined, the eventfds closed */
static void watch_stop(struct watch *w)
{
    if (w->started) {
        uint64_t one = 1;
        if (write(w->wake, &one, sizeof one)) {} /* (the master's) */
        cb_thread_wait(w->t);
        w->started = false;
    }
    if (w->done >= 0)
        LIBC(close)(w->done);
    if (w->wake >= 0)
        close(w->wake);
    w->done = w->wake = -1;
    if (active == w)
        active = NULL;
}

/* the caller unwinds, cancelled in its poll: its cleanup's calls wait (as
 * cb_cancel_act's mark) */
static void watch_cancelled(void *arg)
{
    if (cb_thr)
        cb_thr->cancel_off = true;
    watch_stop(arg);
    free(arg);
}

void shim_io_thread_end(void)
{
    struct watch *w = active;
    if (w) {
        watch_stop(w);
        free(w);
    }
}

static bool own_fd(int fd) { return fd >= 0 && !shim_remote_fd(fd); }

/* the node's own (and done) polled here, the master's (and wake) at the
 * master, until either is ready */
static int poll_watched(struct watch *w)
{
    struct pollfd *own = w->fds, *there = own + w->nown + 1;
    w->done = LIBC(eventfd)(0, EFD_CLOEXEC);
    w->wake = eventfd(0, EFD_CLOEXEC);
    own[w->nown] = (struct pollfd){ w->done, POLLIN, 0 };
    there[w->nthere] = (struct pollfd){ w->wake, POLLIN, 0 };
    active = w;
    volatile int r = -1, e = w->done < 0 || w->wake < 0 ? errno : 0;
    pthread_cleanup_push(watch_cancelled, w);
    if (!e) { /* (a thread of the runtime: the process's signals are not its) */
        sigset_t procs, was;
        cb_process_signals(&procs);
        syscall(SYS_rt_sigprocmask, SIG_BLOCK, &procs, &was, _NSIG / 8);
        e = cb_thread_start(&w->t, poll_there_for, w, false);
        syscall(SYS_rt_sigprocmask, SIG_SETMASK, &was, NULL, _NSIG / 8);
    }
    if (!e) {
        w->started = true;
        r = LIBC(poll)(own, w->nown + 1, -1); /* (a cancellation point; EINTR after a handler) */
        e = errno;
    }
    pthread_cleanup_pop(0);
    watch_stop(w);
    if (r >= 0 && w->r < 0) /* the master's poll failed */
        r = -1, e = w->e;
    errno = e;
    return r;
}

static int poll_mixed(struct pollfd *fds, nfds_t n, const struct timespec *ts)
{
    shim_io_thread_end(); /* one a handler's jump left */
    nfds_t nown = 0;
    for (nfds_t i = 0; i < n; i++)
        nown += own_fd(fds[i].fd);
    struct watch *w = malloc(sizeof *w + (n + 2) * sizeof *w->fds);
    if (!w)
        return errno = ENOMEM, -1;
    *w = (struct watch){ .done = -1, .wake = -1, .nown = nown, .nthere = n - nown, .timed = ts != NULL };
    if (ts)
        w->ts = *ts;
    struct pollfd *own = w->fds, *there = own + nown + 1;
    for (nfds_t i = 0, a = 0, b = 0; i < n; i++)
        *(own_fd(fds[i].fd) ? &own[a++] : &there[b++]) = (struct pollfd){ fds[i].fd, fds[i].events, 0 };
    int r = LIBC(poll)(own, nown, 0), e = errno;
    static const struct timespec zero = { 0, 0 };
    if (r > 0 || (r == 0 && ts && !ts->tv_sec && !ts->tv_nsec)) { /* the master's as they are now */
        r = shim_rs_poll(there, w->nthere, &zero);
        e = errno;
    } else if (r == 0) {
        r = poll_watched(w);
        e = errno;
        if (r >= 0) /* the node's own as they are now */
            r = LIBC(poll)(own, nown, 0) < 0 ? (e = errno, -1) : 1;
    }
    if (r >= 0) {
        r = 0;
        for (nfds_t i = 0, a = 0, b = 0; i < n; i++) {
            fds[i].revents = own_fd(fds[i].fd) ? own[a++].revents : there[b++].revents;
            r += fds[i].revents != 0;
        }
    }
    free(w);
    errno = e;
    return r;
}

static bool poll_own_too(struct pollfd *fds, nfds_t n)
{
    for (nfds_t i = 0; i < n; i++)
        if (own_fd(fds[i].fd))
            return true;
    return false;
}

/* the master's, with the node's own too where there are */
static int poll_remote(struct pollfd *fds, nfds_t n, const struct timespec *ts)
{
    return poll_own_too(fds, n) ? poll_mixed(fds, n, ts) : shim_rs_poll(fds, n, ts);
}

int poll(struct pollfd *fds, nfds_t n, int timeout)
{
    if (poll_there(fds, n)) {
        struct timespec t = { timeout / 1000, (long)(timeout % 1000) * 1000000 };
        return poll_remote(fds, n, timeout < 0 ? NULL : &t);
    }
    if (!ours(fds, n * sizeof *fds))
        return LIBC(poll)(fds, n, timeout);
    POLL(LIBC(poll)(c, n, timeout))
}

/* A call with a signal mask made at the master: the mask is this thread's
 * meanwhile.  A pending signal it unblocks runs its handler first, and the
 * call then gives EINTR, as the kernel's would. */
#define MASKED(mask, call) ({                                                \
        sigset_t was_;                                                       \
        int r_ = -1;                                                         \
        if (!(mask))                                                         \
            r_ = (call);                                                     \
        else if (shim_mask_enter(mask, &was_))                               \
            errno = EINTR;                                                   \
        else                                                                 \
            r_ = (call);                                                     \
        if (mask) {                                                          \
            int e_ = errno;                                                  \
            cb_sigmask(SIG_SETMASK, &was_, NULL);                            \
            errno = e_;                                                      \
        }                                                                    \
        r_; })

static int ppoll_masked(struct pollfd *fds, nfds_t n, const struct timespec *ts, const sigset_t *mask)
{
    if (poll_there(fds, n))
        return MASKED(mask, poll_remote(fds, n, ts));
    sigset_t m;
    const sigset_t *km = shim_kernel_mask(mask, &m);
    if (!ours(fds, n * sizeof *fds) && !(ts && ours(ts, sizeof *ts)))
        return LIBC(ppoll)(fds, n, ts, km);
    struct timespec t = ts ? *ts : (struct timespec){ 0, 0 };
    POLL(LIBC(ppoll)(c, n, ts ? &t : NULL, km))
}

int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *ts, const sigset_t *mask)
{
    return SHIM_DURING(mask, ppoll_masked(fds, n, ts, mask));
}

/* the bytes of an fd_set that n descriptors use (whole longs, as the kernel) */
static size_t set_bytes(int n)
{
    return n <= 0 ? 0 : ((size_t)n + 63) / 64 * 8;
}

static bool sets_ours(size_t s, fd_set *const set[3])
{
    for (int k = 0; k < 3; k++)
        if (set[k] && ours(set[k], s))
            return true;
    return false;
}

/* copies of the sets in one block (s bytes each), the program's in */
static char *sets_in(fd_set *local, size_t s, fd_set *const set[3], fd_set *copy[3])
{
    char *c = copy_of(local, 3 * sizeof *local, 3 * s + 1);
    for (int k = 0; c && k < 3; k++) {
        copy[k] = set[k] ? (fd_set *)(void *)(c + k * s) : NULL;
        if (set[k])
            memcpy(copy[k], set[k], s);
    }
    return c;
}

static void sets_out(size_t s, fd_set *const set[3], fd_set *const copy[3])
{
    for (int k = 0; k < 3; k++)
        if (set[k])
            memcpy(set[k], copy[k], s);
}

#define SELECT(time_ours, call)                                              \
    size_t s = set_bytes(n);                                                 \
    fd_set *const set[3] = { r, w, e };                                      \
    if (!sets_ours(s, set) && !(time_ours))                                  \
        return call(r, w, e);                                                \
    fd_set local[3], *copy[3];                                               \
    char *c = sets_in(local, s, set, copy);                                  \
    if (!c)                                                                  \
        return errno = ENOMEM, -1;                                           \
    int res = call(copy[0], copy[1], copy[2]);                               \
    if (res != -1)                                                           \
        sets_out(s, set, copy);                                              \
    copy_done(c, local);

/* select's sets as a poll's descriptors (poll_mixed), and back, as the
 * kernel's select reads poll's events; NULL where out of memory */
static struct pollfd *sets_to_poll(int n, fd_set *const set[3], nfds_t *k)
{
    struct pollfd *f = malloc(((size_t)n + 1) * sizeof *f);
    *k = 0;
    for (int fd = 0; f && fd < n; fd++) {
        short ev = (short)((set[0] && FD_ISSET(fd, set[0]) ? POLLIN : 0) |
                           (set[1] && FD_ISSET(fd, set[1]) ? POLLOUT : 0) |
                           (set[2] && FD_ISSET(fd, set[2]) ? POLLPRI : 0));
        if (ev)
            f[(*k)++] = (struct pollfd){ fd, ev, 0 };
    }
    return f;
}

static int select_mixed(int n, fd_set *const set[3], const struct timespec *ts)
{
    if (n < 0 || n > FD_SETSIZE)
        return errno = EINVAL, -1;
    nfds_t k;
    struct pollfd *f = sets_to_poll(n, set, &k);
    if (!f)
        return errno = ENOMEM, -1;
    int r = poll_mixed(f, k, ts);
    for (nfds_t i = 0; r > 0 && i < k; i++)
        if (f[i].revents & POLLNVAL)
            r = -1, errno = EBADF;
    if (r >= 0) {
        static const short ready[3] = { POLLIN | POLLHUP | POLLERR, POLLOUT | POLLERR, POLLPRI };
        for (int j = 0; j < 3; j++)
            if (set[j])
                for (nfds_t i = 0; i < k; i++)
                    FD_CLR(f[i].fd, set[j]);
        r = 0;
        for (nfds_t i = 0; i < k; i++)
            for (int j = 0; j < 3; j++)
                if (set[j] && f[i].events & (j == 0 ? POLLIN : j == 1 ? POLLOUT : POLLPRI) &&
                    f[i].revents & ready[j]) {
                    FD_SET(f[i].fd, set[j]);
                    r++;
                }
    }
    free(f);
    return r;
}

static bool select_own_too(int n, fd_set *const set[3])
{
    for (int k = 0; k < 3; k++)
        for (int fd = 0; set[k] && fd < n && fd < FD_SETSIZE; fd++)
            if (FD_ISSET(fd, set[k]) && own_fd(fd))
                return true;
    return false;
}

int select(int n, fd_set *restrict r, fd_set *restrict w, fd_set *restrict e,
           struct timeval *restrict tv)
{
    fd_set *const sets[3] = { r, w, e };
    if (select_there(n, sets) && select_own_too(n, sets)) {
        struct timespec t = tv ? (struct timespec){ tv->tv_sec, tv->tv_usec * 1000 } : (struct timespec){ 0, 0 };
        uint64_t t0 = cb_now_ns();
        int res = select_mixed(n, sets, tv ? &t : NULL);
        if (tv) { /* what was not slept, as Linux leaves there */
            uint64_t left = (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec, took = cb_now_ns() - t0;
            left = took < left ? left - took : 0;
            tv->tv_sec = (time_t)(left / 1000000000ull);
            tv->tv_usec = (suseconds_t)(left % 1000000000ull / 1000);
        }
        return res;
    }
    if (select_there(n, sets))
        return shim_rs_select(n, r, w, e, tv, NULL);
    struct timeval t = { 0, 0 };
    bool tv_ours = tv && ours(tv, sizeof *tv);
    if (tv_ours)
        t = *tv;
#define CALL(r_, w_, e_) LIBC(select)(n, r_, w_, e_, tv_ours ? &t : tv)
    SELECT(tv_ours, CALL)
#undef CALL
    if (tv_ours)
        *tv = t; /* Linux leaves the time not slept there, also after an error */
    return res;
}

static int pselect_masked(int n, fd_set *restrict r, fd_set *restrict w, fd_set *restrict e,
            const struct timespec *restrict ts, const sigset_t *restrict mask)
{
    fd_set *const sets[3] = { r, w, e };
    if (select_there(n, sets) && select_own_too(n, sets))
        return MASKED(mask, select_mixed(n, sets, ts));
    if (select_there(n, sets))
        return MASKED(mask, shim_rs_select(n, r, w, e, NULL, ts));
    struct timespec t = { 0, 0 };
    sigset_t m;
    const sigset_t *km = shim_kernel_mask(mask, &m);
    bool ts_ours = ts && ours(ts, sizeof *ts);
    if (ts_ours)
        t = *ts;
#define CALL(r_, w_, e_) LIBC(pselect)(n, r_, w_, e_, ts_ours ? &t : ts, km)
    SELECT(ts_ours, CALL)
#undef CALL
    return res;
}

int pselect(int n, fd_set *restrict r, fd_set *restrict w, fd_set *restrict e,
            const struct timespec *restrict ts, const sigset_t *restrict mask)
{
    return SHIM_DURING(mask, pselect_masked(n, r, w, e, ts, mask));
}

int epoll_ctl(int ep, int op, int fd, struct epoll_event *ev)
{
    if (shim_remote_fd(ep))
        return shim_rs_epoll_ctl(ep, op, fd, ev);
    if (!ev || !ours(ev, sizeof *ev))
        return LIBC(epoll_ctl)(ep, op, fd, ev);
    struct epoll_event c = *ev;
    return LIBC(epoll_ctl)(ep, op, fd, &c);
}

/* the events taken, out (the kernel refuses max <= 0) */
#define EPOLL(call)                                                          \
    struct epoll_event local[32];                                            \
    struct epoll_event *c = copy_of(local, sizeof local, (size_t)max * sizeof *evs); \
    if (!c)                                                                  \
        return errno = ENOMEM, -1;                                           \
    int r = call;                                                            \
    if (r > 0)                                                               \
        memcpy(evs, c, (size_t)r * sizeof *evs);                             \
    copy_done(c, local);                                                     \
    return r;

int epoll_wait(int ep, struct epoll_event *evs, int max, int timeout)
{
    if (shim_remote_fd(ep))
        return shim_rs_epoll_wait(ep, evs, max, timeout);
    if (max <= 0 || !ours(evs, (size_t)max * sizeof *evs))
        return LIBC(epoll_wait)(ep, evs, max, timeout);
    EPOLL(LIBC(epoll_wait)(ep, c, max, timeout))
}

static int epoll_pwait_masked(int ep, struct epoll_event *evs, int max, int timeout, const sigset_t *mask)
{
    if (shim_remote_fd(ep))
        return MASKED(mask, shim_rs_epoll_wait(ep, evs, max, timeout));
    sigset_t m;
    const sigset_t *km = shim_kernel_mask(mask, &m);
    if (max <= 0 || !ours(evs, (size_t)max * sizeof *evs))
        return LIBC(epoll_pwait)(ep, evs, max, timeout, km);
    EPOLL(LIBC(epoll_pwait)(ep, c, max, timeout, km))
}

int epoll_pwait(int ep, struct epoll_event *evs, int max, int timeout, const sigset_t *mask)
{
    return SHIM_DURING(mask, epoll_pwait_masked(ep, evs, max, timeout, mask));
}

/* ---- queries of the process, its scheduling and its clocks: a result
 * stored into a copy (STORE_T), an argument read into one (EARLY_FN: a
 * sanitizer's start makes some) ---- */

/* for calls of more than one: a T the kernel stores at p (p_k is what it
 * is given) */
#define OUT(T, p)                                                            \
    T p##_b;                                                                 \
    T *p##_k = ours(p, sizeof(T)) ? (memset(&p##_b, 0, sizeof p##_b), &p##_b) : (p)
#define OUT_END(p, ok)                                                       \
    if ((ok) && p##_k == &p##_b)                                             \
        *(p) = p##_b
/* a T the kernel reads at p */
#define IN(T, p) T p##_b; const T *p##_k = ours(p, sizeof(T)) ? (p##_b = *(p), &p##_b) : (p)

#define CALL(x) EARLY(clock_getres)(shim_cpuclock_here(c), x)
EARLY_FN int clock_getres(clockid_t c, struct timespec *res) { STORE_T(struct timespec, res, CALL) }
#undef CALL

#define CALL(x) EARLY(getrlimit)(res, x)
EARLY_FN int getrlimit(__rlimit_resource_t res, struct rlimit *rl) { STORE_T(struct rlimit, rl, CALL) }
#undef CALL

EARLY_FN int prlimit(pid_t pid, __rlimit_resource_t res, const struct rlimit *nw, struct rlimit *old)
{
    IN(struct rlimit, nw);
    OUT(struct rlimit, old);
    int r = EARLY(prlimit)(shim_pid(pid), res, nw_k, old_k);
    OUT_END(old, r == 0);
    return r;
}

/* struct rlimit64 is struct rlimit on 64-bit Linux (libc's *64 are aliases) */
_Static_assert(sizeof(struct rlimit64) == sizeof(struct rlimit), "rlimit64 is rlimit");
EARLY_FN int getrlimit64(__rlimit_resource_t res, struct rlimit64 *rl) { return getrlimit(res, (struct rlimit *)rl); }
EARLY_FN int prlimit64(pid_t pid, __rlimit_resource_t res, const struct rlimit64 *nw, struct rlimit64 *old)
{
    return prlimit(pid, res, (const struct rlimit *)nw, (struct rlimit *)old);
}

#define CALL(x) EARLY(sysinfo)(x)
EARLY_FN int sysinfo(struct sysinfo *si) { STORE_T(struct sysinfo, si, CALL) }
#undef CALL

#define CALL(x) EARLY(getitimer)(which, x)
EARLY_FN int getitimer(__itimer_which_t which, struct itimerval *v) { STORE_T(struct itimerval, v, CALL) }
#undef CALL

EARLY_FN int setitimer(__itimer_which_t which, const struct itimerval *restrict nw, struct itimerval *restrict old)
{
    IN(struct itimerval, nw);
    OUT(struct itimerval, old);
    int r = EARLY(setitimer)(which, nw_k, old_k);
    OUT_END(old, r == 0);
    return r;
}

#define CALL(x) EARLY(timer_gettime)(t, x)
EARLY_FN int timer_gettime(timer_t t, struct itimerspec *v) { STORE_T(struct itimerspec, v, CALL) }
#undef CALL

EARLY_FN int timer_settime(timer_t t, int flags, const struct itimerspec *restrict nw, struct itimerspec *restrict old)
{
    IN(struct itimerspec, nw);
    OUT(struct itimerspec, old);
    int r = EARLY(timer_settime)(t, flags, nw_k, old_k);
    OUT_END(old, r == 0);
    return r;
}

/* with the signals the master keeps pending for the process (psig.c), and
 * without the runtime's (a remote call's late wake, pending where the
 * program blocks it: libcables/src/rsys.c) */
EARLY_FN static int pending_of(sigset_t *set)
{
    int r = EARLY(sigpending)(set);
    uint64_t kept = cb_psig_parked(), b;
    if (r == 0 && (kept || cb_rsig)) {
        memcpy(&b, set, sizeof b);
        b |= kept;
        if (cb_rsig)
            b &= ~(1ull << (cb_rsig - 1));
        memcpy(set, &b, sizeof b);
    }
    return r;
}
#define CALL(x) pending_of(x)
EARLY_FN int sigpending(sigset_t *set) { STORE_T(sigset_t, set, CALL) }
#undef CALL

#define CALL(x) EARLY(sched_getparam)(shim_pid(pid), x)
EARLY_FN int sched_getparam(pid_t pid, struct sched_param *sp) { STORE_T(struct sched_param, sp, CALL) }
#undef CALL

#define CALL(x) EARLY(sched_rr_get_interval)(shim_pid(pid), x)
EARLY_FN int sched_rr_get_interval(pid_t pid, struct timespec *t) { STORE_T(struct timespec, t, CALL) }
#undef CALL

#define GETRES(name, T)                                                      \
    EARLY_FN int name(T *r, T *e, T *s)                                      \
    {                                                                        \
        OUT(T, r);                                                           \
        OUT(T, e);                                                           \
        OUT(T, s);                                                           \
        int rc = EARLY(name)(r_k, e_k, s_k);                                  \
        OUT_END(r, rc == 0);                                                 \
        OUT_END(e, rc == 0);                                                 \
        OUT_END(s, rc == 0);                                                 \
        return rc;                                                           \
    }
GETRES(getresuid, uid_t)
GETRES(getresgid, gid_t)

/* n bytes the kernel stores at p, returning what libc's call returns;
 * call(x) makes it on x: into a copy where p is ours (ok(r): stored) */
#define STORE_N(p, n, call, ok)                                              \
    if (!ours(p, n))                                                         \
        return call(p);                                                      \
    char local[512], *c = copy_of(local, sizeof local, (n) ? (n) : 1);      \
    if (!c)                                                                  \
        return errno = ENOMEM, -1;                                           \
    __typeof__(call(p)) r = call(c);                                         \
    if (ok)                                                                  \
        memcpy(p, c, n);                                                     \
    copy_done(c, local);                                                     \
    return r;

#define CALL(x) EARLY(sched_getaffinity)(shim_pid(pid), n, (cpu_set_t *)(x))
EARLY_FN int sched_getaffinity(pid_t pid, size_t n, cpu_set_t *set) { STORE_N(set, n, CALL, r == 0) }
#undef CALL
#define CALL(x) EARLY(getgroups)(size, (gid_t *)(x))
EARLY_FN int getgroups(int size, gid_t list[])
{
    size_t n = size > 0 ? (size_t)size * sizeof(gid_t) : 0;
    STORE_N(list, n, CALL, r > 0)
}
#undef CALL
#define CALL(x) EARLY(getentropy)(x, n)
EARLY_FN int getentropy(void *buf, size_t n) { STORE_N(buf, n, CALL, r == 0) }
#undef CALL

/* ---- stdio: the FILE's buffer (glibc's public struct _IO_FILE) ---- */

/* input: the kernel stores into the whole buffer when libc refills it */
static void file_in(FILE *f)
{
    if (!f || !cb_app_thread)
        return;
    char *b = f->_IO_buf_base, *e = f->_IO_buf_end;
    if (b && e > b && overlaps((uintptr_t)b, (size_t)(e - b)))
        present(b, (size_t)(e - b), true);
}

/* output: the kernel loads the pending output when libc flushes it */
static void file_out(FILE *f)
{
    if (!f || !cb_app_thread)
        return;
    char *b = f->_IO_write_base, *e = f->_IO_write_ptr;
    if (b && e > b && overlaps((uintptr_t)b, (size_t)(e - b)))
        present(b, (size_t)(e - b), false);
}

#undef getc
#undef putc
#undef fgetc
#undef fputc
#undef getchar

size_t fread(void *restrict p, size_t size, size_t n, FILE *restrict f)
{
    if (shim_remote_file(f))
        return shim_rs_fread(p, size, n, f);
    file_in(f);
    if (size && n <= SIZE_MAX / size && ours(p, size * n))
        present(p, size * n, true); /* large reads go straight into p */
    return LIBC(fread)(p, size, n, f);
}

size_t fwrite(const void *restrict p, size_t size, size_t n, FILE *restrict f)
{
    if (shim_remote_file(f))
        return shim_rs_fwrite(p, size, n, f);
    file_out(f);
    if (size && n <= SIZE_MAX / size && ours(p, size * n))
        present(p, size * n, false); /* large writes go straight from p */
    return LIBC(fwrite)(p, size, n, f);
}

/* _FORTIFY_SOURCE's: the check, then the call above */
char *__fgets_chk(char *s, size_t size, int n, FILE *f);
char *__fgets_unlocked_chk(char *s, size_t size, int n, FILE *f);
size_t __fread_chk(void *p, size_t plen, size_t size, size_t n, FILE *f);
size_t __fread_unlocked_chk(void *p, size_t plen, size_t size, size_t n, FILE *f);
void __chk_fail(void) __attribute__((noreturn));

char *__fgets_chk(char *s, size_t size, int n, FILE *f)
{
    if (n > 0 && (size_t)n > size)
        __chk_fail();
    return fgets(s, n, f);
}

char *__fgets_unlocked_chk(char *s, size_t size, int n, FILE *f)
{
    if (n > 0 && (size_t)n > size)
        __chk_fail();
    return fgets_unlocked(s, n, f);
}

static void fread_check(size_t plen, size_t size, size_t n)
{
    if (size && (n > SIZE_MAX / size || size * n > plen))
        __chk_fail();
}

size_t __fread_chk(void *p, size_t plen, size_t size, size_t n, FILE *f)
{
    fread_check(plen, size, n);
    return fread(p, size, n, f);
}

size_t __fread_unlocked_chk(void *p, size_t plen, size_t size, size_t n, FILE *f)
{
    fread_check(plen, size, n);
    return fread_unlocked(p, size, n, f);
}

char *fgets(char *restrict s, int n, FILE *restrict f)
{
    if (shim_remote_file(f))
        return shim_rs_fgets(s, n, f);
    file_in(f);
    return LIBC(fgets)(s, n, f);
}

/* a character at a time: only when the buffer is empty does libc read */
#define GETC(name)                                                           \
    int name(FILE *f)                                                        \
    {                                                                        \
        if (shim_remote_file(f))                                             \
            return shim_rs_fgetc(f);                                         \
        if (f->_IO_read_ptr >= f->_IO_read_end)                              \
            file_in(f);                                                      \
        return LIBC(name)(f);                                                \
    }
GETC(fgetc)
GETC(getc)
GETC(_IO_getc)

int getchar(void)
{
    if (shim_remote_file(stdin))
        return shim_rs_fgetc(stdin);
    if (stdin->_IO_read_ptr >= stdin->_IO_read_end)
        file_in(stdin);
    return LIBC(getchar)();
}

#define PUTC(name)                                                           \
    int name(int c, FILE *f)                                                 \
    {                                                                        \
        if (shim_remote_file(f))                                             \
            return shim_rs_fputc(c, f);                                      \
        file_out(f);                                                         \
        return LIBC(name)(c, f);                                             \
    }
PUTC(fputc)
PUTC(putc)
PUTC(_IO_putc)

int fputs(const char *restrict s, FILE *restrict f)
{
    if (shim_remote_file(f))
        return shim_rs_fputs(s, f);
    file_out(f);
    return LIBC(fputs)(s, f);
}

ssize_t getline(char **restrict line, size_t *restrict n, FILE *restrict f)
{
    if (shim_remote_file(f))
        return shim_rs_getdelim(line, n, '\n', f);
    file_in(f);
    return LIBC(getline)(line, n, f);
}

ssize_t getdelim(char **restrict line, size_t *restrict n, int delim, FILE *restrict f)
{
    if (shim_remote_file(f))
        return shim_rs_getdelim(line, n, delim, f);
    file_in(f);
    return LIBC(getdelim)(line, n, delim, f);
}

ssize_t __getdelim(char **restrict line, size_t *restrict n, int delim, FILE *restrict f);
ssize_t __getdelim(char **restrict line, size_t *restrict n, int delim, FILE *restrict f)
{
    if (shim_remote_file(f))
        return shim_rs_getdelim(line, n, delim, f);
    file_in(f);
    return LIBC(__getdelim)(line, n, delim, f);
}

int fflush(FILE *f)
{
    if (shim_remote_file(f))
        return shim_rs_fflush(f);
    if (!f && shim_remote_fd(-1) && shim_rs_fflush(NULL)) /* the master's streams too */
        return LIBC(fflush)(NULL), EOF;
    file_out(f); /* not fflush(NULL): libc's list of streams is its own */
    return LIBC(fflush)(f);
}

int shim_fclose_stream(FILE *f)
{
    shim_rs_forget(f);
    file_out(f);
    return LIBC(fclose)(f);
}

int fclose(FILE *f)
{
    if (shim_remote_file(f))
        return shim_rs_fclose(f);
    int st = shim_pclose_here(f); /* popen's: as glibc's, a pclose */
    return st != -2 ? st : shim_fclose_stream(f);
}

/* a seek flushes, and may read the block it lands in */
int fseek(FILE *f, long off, int whence)
{
    if (shim_remote_file(f))
        return shim_rs_fseek(f, off, whence);
    file_out(f);
    file_in(f);
    return LIBC(fseek)(f, off, whence);
}

int fseeko(FILE *f, off_t off, int whence)
{
    if (shim_remote_file(f))
        return shim_rs_fseek(f, off, whence);
    file_out(f);
    file_in(f);
    return LIBC(fseeko)(f, off, whence);
}

void rewind(FILE *f)
{
    if (shim_remote_file(f)) {
        int e = errno;
        if (shim_rs_fseek(f, 0, SEEK_SET) == 0)
            clearerr(f);
        errno = e;
        return;
    }
    file_out(f);
    file_in(f);
    LIBC(rewind)(f);
}

int vfprintf(FILE *restrict f, const char *restrict fmt, va_list ap)
{
    if (shim_remote_file(f))
        return shim_rs_vfprintf(f, fmt, ap);
    file_out(f);
    return LIBC(vfprintf)(f, fmt, ap);
}

int fprintf(FILE *restrict f, const char *restrict fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = vfprintf(f, fmt, ap);
    va_end(ap);
    return r;
}

int __vfprintf_chk(FILE *f, int flag, const char *fmt, va_list ap);
int __fprintf_chk(FILE *f, int flag, const char *fmt, ...);
int __vfprintf_chk(FILE *f, int flag, const char *fmt, va_list ap)
{
    if (shim_remote_file(f))
        return shim_rs_vfprintf(f, fmt, ap);
    file_out(f);
    return LIBC(__vfprintf_chk)(f, flag, fmt, ap);
}

int __fprintf_chk(FILE *f, int flag, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = __vfprintf_chk(f, flag, fmt, ap);
    va_end(ap);
    return r;
}

/* the standard output: the node's own until the program moves it
 * (shim_std_own), then the master's as any stream of its */
static int rs_printf(FILE *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = shim_rs_vfprintf(f, fmt, ap);
    va_end(ap);
    return r;
}

int vprintf(const char *restrict fmt, va_list ap) { return vfprintf(stdout, fmt, ap); }

int printf(const char *restrict fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = vfprintf(stdout, fmt, ap);
    va_end(ap);
    return r;
}

int __vprintf_chk(int flag, const char *fmt, va_list ap);
int __printf_chk(int flag, const char *fmt, ...);
int __vprintf_chk(int flag, const char *fmt, va_list ap) { return __vfprintf_chk(stdout, flag, fmt, ap); }

int __printf_chk(int flag, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = __vfprintf_chk(stdout, flag, fmt, ap);
    va_end(ap);
    return r;
}

int puts(const char *s)
{
    if (shim_remote_file(stdout))
        return rs_printf(stdout, "%s\n", s) < 0 ? EOF : 1;
    file_out(stdout);
    return LIBC(puts)(s);
}

int putchar(int c)
{
    if (shim_remote_file(stdout))
        return shim_rs_fputc(c, stdout);
    file_out(stdout);
    return LIBC(putchar)(c);
}

/* scanf: glibc's headers may name fscanf as __isoc99_fscanf (strict C99
 * and later), so the old names are defined under their assembler names */
int __isoc99_vfscanf(FILE *restrict f, const char *restrict fmt, va_list ap);
int __isoc99_fscanf(FILE *restrict f, const char *restrict fmt, ...);
int __isoc99_scanf(const char *restrict fmt, ...);
int gnu_vfscanf(FILE *restrict f, const char *restrict fmt, va_list ap) __asm__("vfscanf");
int gnu_fscanf(FILE *restrict f, const char *restrict fmt, ...) __asm__("fscanf");
int gnu_scanf(const char *restrict fmt, ...) __asm__("scanf");

typedef int (*vfscanf_fn)(FILE *, const char *, va_list);

int gnu_vfscanf(FILE *restrict f, const char *restrict fmt, va_list ap)
{
    static vfscanf_fn real;
    if (!real)
        real = (vfscanf_fn)cb_libc("vfscanf");
    if (shim_remote_file(f))
        return shim_rs_vfscanf(f, fmt, ap, real);
    file_in(f);
    return real(f, fmt, ap);
}

int __isoc99_vfscanf(FILE *restrict f, const char *restrict fmt, va_list ap)
{
    static vfscanf_fn real;
    if (!real)
        real = (vfscanf_fn)cb_libc("__isoc99_vfscanf");
    if (shim_remote_file(f))
        return shim_rs_vfscanf(f, fmt, ap, real);
    file_in(f);
    return real(f, fmt, ap);
}

int gnu_fscanf(FILE *restrict f, const char *restrict fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = gnu_vfscanf(f, fmt, ap);
    va_end(ap);
    return r;
}

int __isoc99_fscanf(FILE *restrict f, const char *restrict fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = __isoc99_vfscanf(f, fmt, ap);
    va_end(ap);
    return r;
}

int gnu_scanf(const char *restrict fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = gnu_vfscanf(stdin, fmt, ap);
    va_end(ap);
    return r;
}

int __isoc99_scanf(const char *restrict fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = __isoc99_vfscanf(stdin, fmt, ap);
    va_end(ap);
    return r;
}

/* ---- the _FORTIFY_SOURCE entry points of the calls above (a program
 * built with -D_FORTIFY_SOURCE=2 calls them, past the shim's call):
 * libc's when the buffer is too small (its __chk_fail), else the shim's.
 * Before, a fortified poll of another node's thread polled that node's
 * descriptors of the master's numbers, and the others stored into shared
 * pages the kernel cannot write (EFAULT). ---- */
int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t fdslen);
int __ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *ts, const sigset_t *mask,
                size_t fdslen);
ssize_t __readlink_chk(const char *path, char *buf, size_t n, size_t buflen);
ssize_t __readlinkat_chk(int dir, const char *path, char *buf, size_t n, size_t buflen);
char *__getcwd_chk(char *buf, size_t n, size_t buflen);
int __getgroups_chk(int size, gid_t list[], size_t listlen);

int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t fdslen)
{
    if (fdslen / sizeof *fds < n)
        return LIBC(__poll_chk)(fds, n, timeout, fdslen);
    return poll(fds, n, timeout);
}

int __ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *ts, const sigset_t *mask,
                size_t fdslen)
{
    if (fdslen / sizeof *fds < n)
        return LIBC(__ppoll_chk)(fds, n, ts, mask, fdslen);
    return ppoll(fds, n, ts, mask);
}

ssize_t __readlink_chk(const char *path, char *buf, size_t n, size_t buflen)
{
    if (n > buflen)
        return LIBC(__readlink_chk)(path, buf, n, buflen);
    return readlink(path, buf, n);
}

ssize_t __readlinkat_chk(int dir, const char *path, char *buf, size_t n, size_t buflen)
{
    if (n > buflen)
        return LIBC(__readlinkat_chk)(dir, path, buf, n, buflen);
    return readlinkat(dir, path, buf, n);
}

char *__getcwd_chk(char *buf, size_t n, size_t buflen)
{
    if (n > buflen)
        return LIBC(__getcwd_chk)(buf, n, buflen);
    return getcwd(buf, n);
}

int __getgroups_chk(int size, gid_t list[], size_t listlen)
{
    if (size > 0 && (size_t)size * sizeof(gid_t) > listlen)
        return LIBC(__getgroups_chk)(size, list, listlen);
    return getgroups(size, list);
}
