/* The pthread shim: the POSIX threads API of a relinked program, on the
 * runtime.  The rule (DESIGN 6): an object inside the global address space
 * is a cluster object; any other (libc's, UCX's, Open MPI's, a runtime
 * thread's) goes to libc unchanged.  Calls without an object decide by the
 * calling thread: an application thread gets the cluster's answer.
 * Cluster thread ids carry TID_TAG so that they are told from libc's. */
#ifndef CABLES_SHIM_H
#define CABLES_SHIM_H

#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>

#include "../../libcables/src/internal.h"

#define TID_TAG (1ull << 63)

/* libc's definition of fn (looked up once) */
#define REAL(fn) ({                                              \
        static __typeof__(&fn) real_;                            \
        if (!real_) real_ = (__typeof__(&fn))cb_libc(#fn);       \
        real_; })

/* Wrappers that a sanitizer's start calls through libc (AddressSanitizer
 * asks getrlimit before anything of its is ready): not instrumented, and
 * libc's found in its symbol table, not through dlsym (process.c) */
#define EARLY_FN __attribute__((no_sanitize("address", "undefined")))
void *shim_libc_sym(const char *name);
#define EARLY(fn) ({                                                     \
        static __typeof__(&fn) early_;                                   \
        if (!early_) early_ = (__typeof__(&fn))shim_libc_sym(#fn);       \
        early_; })

/* A cluster object: in the GAS, used by an application thread.  The
 * runtime's own code (its threads, and what it calls, such as MPI's
 * finalization on a main thread still on its GAS stack after exit() in
 * main) gets libc for objects there too. */
static inline __attribute__((always_inline)) bool shared_obj(const volatile void *p)
{
    return cb_app_thread && cb_in_gas((uintptr_t)p);
}

/* a signal mask as the kernel is given it: SIGSEGV, which drives the
 * fault path, never blocked (libcables/src/fault.c); NULL stays NULL */
static inline const sigset_t *shim_kernel_mask(const sigset_t *mask, sigset_t *m)
{
    if (!mask)
        return NULL;
    *m = *mask;
    sigdelset(m, SIGSEGV);
    return m;
}

/* call with a temporary signal mask (NULL: none), which its node's count
 * of the signals its threads take follows meanwhile (libcables/src/psig.c) */
#define SHIM_DURING(mask, call) ({                                           \
        uint64_t was_ = (mask) ? cb_psig_during(mask) : 0;                   \
        __typeof__(call) r_ = (call);                                        \
        if (mask) {                                                          \
            int e_ = errno;                                                  \
            cb_psig_restore(was_);                                           \
            errno = e_;                                                      \
        }                                                                    \
        r_; })

/* signals.c: before a call with a signal mask made at the master, the
 * mask made this thread's (*was: the one before); true if a pending signal
 * it unblocks ran its handler (the call is then EINTR) */
bool shim_mask_enter(const sigset_t *mask, sigset_t *was);

/* Allocator code runs as the runtime's: what it calls (malloc, pthread_*)
 * goes to libc. */
#define AS_RUNTIME(stmt) do {                                                 \
        bool app_ = cb_app_thread;                                           \
        cb_app_thread = false;                                               \
        stmt;                                                                \
        cb_app_thread = app_;                                                \
    } while (0)

/* The total length of n buffers, or SIZE_MAX past SSIZE_MAX: buffers that
 * cannot all be there, EFAULT as the kernel says (before, a total that
 * wrapped read 0 bytes remotely, as at the end of a file, and locally the
 * shim touched the GAS to its end and the node died) */
static inline size_t shim_iov_total(const struct iovec *v, int n)
{
    size_t t = 0;
    for (int i = 0; i < n; i++) {
        if (v[i].iov_len > (size_t)SSIZE_MAX - t)
            return SIZE_MAX;
        t += v[i].iov_len;
    }
    return t;
}

/* heap.c: a big block, a GAS range of its own: n bytes (cap: as many as it
 * may grow to in place) aligned to align, after a header page (size,
 * range, capacity); zero: it must read as zeros.  NULL: no space.
 * shim_big_free gives it back.  malloc's big blocks, and mmap.c's. */
void *shim_big_alloc(size_t n, size_t cap, size_t align, bool zero);
void shim_big_free(void *p);

/* The shim's words in the program's shared static data (cb.program, of
 * CB_PROGRAM_BYTES): the table of mappings (mmap.c); on a page of their
 * own, which every draw reads and only a seeding writes (so no acquire
 * invalidates it otherwise), the random number generators' seeds (rand.c) */
#define SHIM_PROGRAM_MAPS 0
#define SHIM_PROGRAM_ATFORK 64 /* the program's fork handlers (process.c) */
#define SHIM_PROGRAM_FUTEX 1024 /* the cluster locks of futex words (futex.c) */
#define SHIM_PROGRAM_SEEDS (4096 - 8)
/* one cluster lock for the program's rare process-wide changes (the
 * mappings' table, a seeding): the first word of cb.program */
static inline cables_lock_t *shim_program_lock(void) { return (cables_lock_t *)cb.program; }

/* An absolute time on clock c as a CLOCK_MONOTONIC deadline in ns; -1 when
 * the time is invalid (EINVAL). */
int64_t shim_deadline(clockid_t c, const struct timespec *abs);

/* remote.c: a call on descriptor fd that this thread makes at the master
 * (libcables/src/rsys.c): an application thread of another node, on any
 * descriptor but its node's standard output and error (-1: a call that
 * makes one) */
/* descriptors < 65536 opened here for a path of this node's own (/proc,
 * /sys: what they describe is this node process and machine) */
extern _Atomic uint64_t shim_local_fds[1024];
static inline bool shim_local_fd(int fd)
{
    return fd >= 0 && fd < 65536 &&
           (atomic_load_explicit(&shim_local_fds[fd >> 6], memory_order_relaxed) >> (fd & 63) & 1);
}
/* fd is 1 or 2 and still the node's own (cb.std_master) */
static inline bool shim_std_own(int fd)
{
    return (fd == 1 || fd == 2) &&
           !(atomic_load_explicit(&cb.std_master, memory_order_relaxed) >> (fd - 1) & 1);
}
static inline bool shim_remote_fd(int fd)
{
    return cb_app_thread && cb.self != 0 && !shim_std_own(fd) && !shim_local_fd(fd);
}
/* the program moved descriptor 1 or 2 (process.c): from now on it is the
 * master's on every node */
void shim_std_moved(int fd);
/* the calling process is the node process (not a fork or vfork child) */
bool shim_std_ours(void);
bool shim_local_path(int dir, const char *path); /* a path of /proc or /sys */
pid_t shim_pid(pid_t pid); /* process.c: the master's pid, which a program names, here */
const char *shim_proc_path(const char *path, char *buf, size_t size); /* /proc/PID: here */
/* a call on path relative to dir is made at the master (io.c: the file
 * system is the master's) */
static inline bool shim_master_path(int dir, const char *path)
{
    return path && shim_remote_fd(dir == AT_FDCWD ? -1 : dir) && !shim_local_path(dir, path);
}
void shim_path_touch(const char *path); /* present, if it is in shared memory */
/* directory streams at the master (dirs.c), made by cb_rsys_lib */
enum { SHIM_RS_OPENDIR = CB_RSYS_LIB + 0x100, SHIM_RS_FDOPENDIR, SHIM_RS_READDIR,
       SHIM_RS_SEEKDIR, SHIM_RS_REWINDDIR, SHIM_RS_CLOSEDIR };
long shim_dir_exec(int64_t op, int64_t a[6], int *err);
/* posix_spawn at the master (spawn.c), made by cb_rsys_lib */
enum { SHIM_RS_SPAWN = CB_RSYS_LIB + 0x200 };
long shim_spawn_exec(int64_t a[6], int *err);
/* system's and popen's commands, spawned here with mask (shim_mask_bits'
 * form) as their signal mask; pclose of any stream (spawn.c) */
int shim_system_here(const char *cmd, int64_t mask);
FILE *shim_popen_here(const char *cmd, const char *mode, int64_t mask);
int shim_pclose_here(FILE *f); /* -2: not popen's */
int shim_fclose_stream(FILE *f); /* io.c: fclose of a stream here */
/* the calling thread's signal mask, signals 1-64 (bit s - 1): for a request */
int64_t shim_mask_bits(void);
void shim_mask_of(int64_t bits, sigset_t *set);
void shim_io_thread_end(void); /* io.c: a mixed poll a handler's jump left, ended */
void shim_own_child(pid_t pid); /* this node's fork made child pid */
bool shim_is_own_child(pid_t pid); /* spawn.c: a child of this node's fork */
/* the program's malloc (heap.c), for what the program frees */
void *shim_malloc(size_t n) __asm__("malloc");
/* process.c: the strings of a NULL-ended vector; a private copy of one
 * (one block of libc's: cb_free it), less the strings starting with
 * one of skip's prefixes; NULL where out of memory */
int shim_count(char *const v[]);
char **shim_private_copy(char *const v[], bool launchers); /* launchers: less cb_launcher_var's */
/* for a request: the bytes of n strings of v, each with its NUL; and them
 * copied at p one after the other (the end returned) */
size_t shim_strings_len(char *const v[], int n);
char *shim_strings_put(char *p, char *const v[], int n);
/* a call made at the master (cb_rsys): op and its arguments; argument a is
 * a buffer of n bytes, sent (RSYS_IN) or written back (RSYS_OUT); a NULL
 * one is left alone */
static inline cb_rsys_t shim_rq(int64_t op, int64_t a0, int64_t a1, int64_t a2, int64_t a3,
                                int64_t a4, int64_t a5)
{
    cb_rsys_t r;
    memset(&r, 0, sizeof r);
    r.op = op;
    r.arg[0] = a0, r.arg[1] = a1, r.arg[2] = a2, r.arg[3] = a3, r.arg[4] = a4, r.arg[5] = a5;
    return r;
}
static inline void shim_rq_with(cb_rsys_t *r, int a, uint32_t flags, uint64_t n)
{
    if (!r->arg[a])
        return;
    r->buf[r->nbuf].arg = (uint32_t)a;
    r->buf[r->nbuf].flags = flags;
    r->buf[r->nbuf].len = n;
    r->nbuf++;
}
/* a set of pointers under its lock (the few streams open of a kind) */
typedef struct {
    cb_mutex_t mu;
    void **v;
    size_t n, cap;
} shim_set_t;
#define SHIM_SET_INIT { CB_MUTEX_INIT, NULL, 0, 0 }
void shim_set_add(shim_set_t *s, void *p);
bool shim_set_has(shim_set_t *s, const void *p, bool drop); /* drop: and take it out */
int shim_local_opened(int fd);                   /* fd is such a descriptor: fd */
void shim_local_closed(int fd);                  /* fd, if one, is no more */
FILE *shim_local_stream(FILE *f);                /* f is this node's: f */
#include <stdarg.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/uio.h>
/* a stream of the master's (every stream of another node's application
 * thread but its stdout, stderr and streams in memory) */
bool shim_remote_file(FILE *f);
/* the calls made at the master (remote.c) */
ssize_t shim_rs_read(int fd, void *buf, size_t n);
ssize_t shim_rs_write(int fd, const void *buf, size_t n);
ssize_t shim_rs_pread(int fd, void *buf, size_t n, off_t off);
ssize_t shim_rs_pwrite(int fd, const void *buf, size_t n, off_t off);
ssize_t shim_rs_readv(int fd, const struct iovec *v, int n, bool positioned, off_t off);
ssize_t shim_rs_writev(int fd, const struct iovec *v, int n, bool positioned, off_t off);
ssize_t shim_rs_recv(int fd, void *buf, size_t n, int flags);
ssize_t shim_rs_send(int fd, const void *buf, size_t n, int flags);
ssize_t shim_rs_recvfrom(int fd, void *buf, size_t n, int flags, struct sockaddr *from,
                         socklen_t *len);
ssize_t shim_rs_sendto(int fd, const void *buf, size_t n, int flags, const struct sockaddr *to,
                       socklen_t len);
ssize_t shim_rs_recvmsg(int fd, struct msghdr *m, int flags);
ssize_t shim_rs_sendmsg(int fd, const struct msghdr *m, int flags);
int shim_rs_openat(int dir, const char *path, int flags, mode_t mode);
int shim_rs_realpath(const char *path, char *out);
/* exec (process.c): at the master from another node (shim_rs_exec), and
 * there from the strings it sent (an error number: it returns only then) */
int shim_rs_exec(const char *strings, size_t len, int nargs, int nenv, bool search);
int shim_exec_strings(const char *strings, size_t len, int nargs, int nenv, bool search);
struct statvfs;
int shim_rs_statvfs(const char *path, int fd, struct statvfs *st); /* path NULL: of fd */
/* cb_proc_change made at the master: 0 or an error number */
int shim_rs_proc(int op, int64_t arg, const char *s1, const char *s2, int64_t *old);
int shim_rs_dlopen(const char *file, int flags, char *err, size_t errlen, int64_t *handle);
struct sigaction;
int shim_rs_sigaction(int sig, const struct sigaction *act);
long shim_rs_store(long nr, int64_t a0, int64_t a1, int64_t a2, int64_t a3, int64_t a4, int a,
                   size_t n);
long shim_rs_path(long nr, int64_t a0, int64_t a1, int64_t a2, int64_t a3, int64_t a4,
                  unsigned paths, int in, size_t in_len, int out, size_t out_len, uint32_t out_flags);
int shim_rs_addr(long nr, int fd, struct sockaddr *addr, socklen_t *len, int flags);
int shim_rs_load(long nr, int64_t a0, int64_t a1, int64_t a2, int64_t a3, int64_t a4, int a,
                 size_t n);
int shim_rs_getsockopt(int fd, int level, int name, void *val, socklen_t *len);
int shim_rs_pair(long nr, int64_t a0, int64_t a1, int64_t a2, int fds_arg, int fds[2]);
int shim_rs_poll(struct pollfd *fds, nfds_t n, const struct timespec *ts);
int shim_rs_select(int n, fd_set *rd, fd_set *wr, fd_set *ex, struct timeval *tv,
                   const struct timespec *ts);
int shim_rs_epoll_ctl(int ep, int op, int fd, struct epoll_event *ev);
int shim_rs_epoll_wait(int ep, struct epoll_event *evs, int max, int timeout);
FILE *shim_rs_fopen(const char *path, const char *mode);
int shim_rs_fclose(FILE *f);
void shim_rs_forget(FILE *f); /* a stream of this node's closed */
int shim_rs_fflush(FILE *f);
int shim_rs_fgetc(FILE *f);
int shim_rs_fputc(int c, FILE *f);
int shim_rs_fputs(const char *s, FILE *f);
int shim_rs_fseek(FILE *f, off_t off, int whence);
size_t shim_rs_fwrite(const void *p, size_t size, size_t n, FILE *f);
size_t shim_rs_fread(void *p, size_t size, size_t n, FILE *f);
char *shim_rs_fgets(char *s, int n, FILE *f);
ssize_t shim_rs_getdelim(char **line, size_t *cap, int delim, FILE *f);
int shim_rs_vfprintf(FILE *f, const char *fmt, va_list ap);
int shim_rs_vfscanf(FILE *f, const char *fmt, va_list ap,
                    int (*scan)(FILE *, const char *, va_list));

/* sync.c: a cancellation the runtime saw in a wait: act on it (glibc's
 * cancellation state is set; this unwinds when it is enabled) */

/* cputime.c: the CPU clock of a thread of another node (pthread_getcpuclockid) */
int shim_remote_cpuclock_id(uint64_t tid, clockid_t *clk);
clockid_t shim_cpuclock_here(clockid_t c); /* the clock clock_getres asks for c */

#endif
