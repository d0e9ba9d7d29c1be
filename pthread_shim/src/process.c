/* process.c: the working directory, the file mode creation mask, the
 * environment and the locale are the process's, so every node process's.
 * An application thread's chdir, fchdir, umask, setenv, unsetenv, putenv,
 * clearenv and setlocale are
 * made at the master (from another node, as a remote call), then on every
 * other node up, before they return (libcables/src/proc.c).  So a relative
 * path, a file's mode, getenv, and the character set and number formats
 * of libc's conversions give a thread on any node what they give main, also
 * inside libc (realpath, glob, scandir).  Before,
 * they changed the calling node only: after main's chdir, a thread on
 * another node opened its relative paths where the program started.
 *
 * The process id stays the node process's: /proc/self, kill, tgkill and
 * the other calls that take one act on this node process, and getpid must
 * name the same (tests/posix/files checks /proc/self against it).
 *
 * A run without the launcher (one process) and the runtime's own threads
 * get libc's calls unchanged. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <locale.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "shim.h"

static bool shared_change(void)
{
    return cb_app_thread && cb.multi && !atomic_load(&cb.stopping);
}

/* the change made at the master: 0, or -1 with errno */
static int change(int op, int64_t arg, const char *s1, const char *s2, int64_t *old)
{
    int rc;
    if (cb.self != 0) {
        rc = shim_rs_proc(op, arg, s1, s2, old);
    } else {
        /* private copies: the kernel reads a path, which may be on a
         * shared page this node does not hold (loads here fault as the
         * program's) */
        char *c1 = s1 ? __libc_malloc(strlen(s1) + 1) : NULL, *c2 = s2 ? __libc_malloc(strlen(s2) + 1) : NULL;
        if ((s1 && !c1) || (s2 && !c2))
            rc = ENOMEM;
        else
            rc = cb_proc_change(op, arg, s1 ? strcpy(c1, s1) : NULL, s2 ? strcpy(c2, s2) : NULL, old);
        __libc_free(c1);
        __libc_free(c2);
    }
    return rc ? (errno = rc, -1) : 0;
}

int chdir(const char *path)
{
    if (!shared_change())
        return REAL(chdir)(path);
    return change(CB_PROC_CHDIR, 0, path, NULL, NULL);
}

/* A descriptor of the master's, or of this node's own (a /proc
 * directory's): the process goes to the directory it names here. */
int fchdir(int fd)
{
    if (!shared_change())
        return REAL(fchdir)(fd);
    if (cb.self == 0 || shim_remote_fd(fd))
        return change(CB_PROC_FCHDIR, fd, NULL, NULL, NULL);
    char link[32], path[PATH_MAX];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = REAL(readlink)(link, path, sizeof path - 1);
    if (n < 0 || path[0] != '/')
        return REAL(fchdir)(fd); /* its error (EBADF, ENOTDIR), or no name */
    path[n] = 0;
    return change(CB_PROC_CHDIR, 0, path, NULL, NULL);
}

mode_t umask(mode_t mask)
{
    if (!shared_change())
        return REAL(umask)(mask);
    int64_t old = 0;
    if (change(CB_PROC_UMASK, mask, NULL, NULL, &old))
        return REAL(umask)(mask); /* the master could not be asked: this node's */
    return (mode_t)old;
}

static bool env_name_ok(const char *name)
{
    return name && *name && !strchr(name, '=');
}

int setenv(const char *name, const char *value, int overwrite)
{
    if (!shared_change())
        return REAL(setenv)(name, value, overwrite);
    if (!env_name_ok(name))
        return errno = EINVAL, -1;
    return change(CB_PROC_SETENV, overwrite != 0, name, value, NULL);
}

int unsetenv(const char *name)
{
    if (!shared_change())
        return REAL(unsetenv)(name);
    if (!env_name_ok(name))
        return errno = EINVAL, -1;
    return change(CB_PROC_UNSETENV, 0, name, NULL, NULL);
}

/* The string becomes the variable at the master (a later store into it
 * changes the master's environment, as putenv's does; the other nodes keep
 * the value it had).  From another node it is copied, as setenv. */
int putenv(char *string)
{
    if (!shared_change() || string[0] == '=' || !string[0]) /* no name: libc's (no variable) */
        return REAL(putenv)(string);
    if (cb.self == 0) {
        int rc = cb_proc_change(CB_PROC_PUTENV, 0, string, NULL, NULL);
        return rc ? (errno = rc, -1) : 0;
    }
    const char *eq = strchr(string, '=');
    if (!eq)
        return change(CB_PROC_UNSETENV, 0, string, NULL, NULL);
    size_t n = (size_t)(eq - string);
    char *name = __libc_malloc(n + 1);
    if (!name)
        return errno = ENOMEM, -1;
    memcpy(name, string, n);
    name[n] = 0;
    int rc = change(CB_PROC_SETENV, 1, name, eq + 1, NULL);
    __libc_free(name);
    return rc;
}

int clearenv(void)
{
    if (!shared_change())
        return REAL(clearenv)();
    return change(CB_PROC_CLEARENV, 0, NULL, NULL, NULL);
}

/* A query (NULL) is the node's, the same as the master's. */
char *setlocale(int category, const char *locale)
{
    if (!shared_change() || !locale)
        return REAL(setlocale)(category, locale);
    if (change(CB_PROC_SETLOCALE, category, locale, NULL, NULL))
        return NULL;
    return REAL(setlocale)(category, NULL);
}

/* ---- fork ----
 * The child of fork is a copy of its parent, its memory its own.  A
 * relinked program's memory (every thread's stack, the heap, the program's
 * static data) is the GAS: shared mappings of the node's page store, which
 * a plain fork leaves shared with the child.  The child then ran on the
 * very stack its parent returned on (each overwrote the other's frames:
 * the program hung or crashed), and its stores reached the parent's heap
 * and globals.  So the child maps the store privately at the same
 * addresses (MAP_PRIVATE of the memfd: copy-on-write), each page the node
 * holds readable and writable (no runtime keeps the child's copy coherent),
 * and copies the forking thread's stack in use
 * and the program's static data (up to FORK_COPY_STATICS, which the
 * parent makes present first: the child's calls write its GOT) while the
 * parent waits; then it returns 0 with the runtime off (cb.forked: every call is
 * libc's, as a runtime thread's, GAS memory it frees is left in place, a
 * page this node does not hold faults as without us, its exit runs no
 * runtime end).  Until the child writes a heap page, it may see later
 * stores of the parent's into it: a child that execs, or reads what its
 * parent left alone, sees no difference.  The child's descriptors are its
 * node process's (on another node than the master: that node's own).
 *
 * All this runs on a stack of the runtime's (private memory), so that
 * neither process writes the GAS stack while the child copies it. */
#define FORK_COPY_STATICS (64u << 20) /* static data copied at fork up to this size */

static struct {
    cb_mutex_t mu;
    ucontext_t back, run;
    uintptr_t lo, hi; /* the forking thread's stack in use */
    pid_t pid;
    int err, ready[2];
} fk = { .mu = CB_MUTEX_INIT };

/* a page the node holds is the child's to read and write (its copy: no
 * runtime keeps it coherent); one it does not hold has no data here */
static int prot_of(uint32_t st)
{
    return st & PG_ACC ? PROT_READ | PROT_WRITE : PROT_NONE;
}

/* the view of GAS pages [first, first + n) at lo: private, each page with
 * its protection (page states never touched, by mincore, are PG_NONE) */
static bool private_view(uintptr_t lo, uint64_t first, uint64_t n)
{
    if (cb_mmap((void *)lo, n * cb.ps, PROT_NONE, MAP_PRIVATE | MAP_FIXED | MAP_NORESERVE, cb.memfd,
                (off_t)(first * cb.ps)) != (void *)lo)
        return false;
    size_t per = cb.ps / sizeof *cb.pst; /* page states on a page of them */
    unsigned char in = 0;
    uint64_t run = 0;
    int run_prot = PROT_NONE;
    for (uint64_t p = first; p <= first + n; p++) {
        int prot = PROT_NONE;
        if (p < first + n) {
            if (p == first || p % per == 0) {
                uintptr_t sp = (uintptr_t)&cb.pst[p] & ~(uintptr_t)(cb.ps - 1);
                if (mincore((void *)sp, cb.ps, &in))
                    in = 1;
            }
            if (in & 1)
                prot = prot_of(atomic_load_explicit(&cb.pst[p], memory_order_relaxed));
            else if (p % per == 0 && p + per <= first + n && run_prot == PROT_NONE) {
                p += per - 1; /* a page of states never touched: all PG_NONE */
                continue;
            }
        }
        if (prot != run_prot || p == first + n) {
            if (run_prot != PROT_NONE &&
                cb_mprotect((void *)(lo + (run - first) * cb.ps), (p - run) * cb.ps, run_prot))
                return false;
            run = p, run_prot = prot;
        }
    }
    return true;
}

/* the pages of [lo, hi) this node holds, copied into the child's view (a
 * page written is the child's) */
static void own_copy(uintptr_t lo, uintptr_t hi)
{
    for (uintptr_t a = lo & ~(uintptr_t)(cb.ps - 1); a < hi; a += cb.ps)
        if (prot_of(atomic_load(&cb.pst[cb_page_of(a)])) != PROT_NONE)
            __atomic_fetch_add((volatile uint8_t *)a, 0, __ATOMIC_RELAXED);
}

/* the child, on the runtime's stack, the parent waiting */
static void child_side(void)
{
    cb.forked = true;
    cb_app_thread = false;
    bool ok = private_view(CB_GAS_BASE, 0, cb.npages);
    for (int i = 0; ok && i < cb.nalias; i++)
        ok = private_view(cb.alias[i].lo, cb.alias[i].first,
                          (cb.alias[i].hi - cb.alias[i].lo) / cb.ps);
    /* copied now: the stack in use, and the program's static data unless
     * it is large */
    own_copy(fk.lo, fk.hi);
    size_t statics = 0;
    for (int i = 0; i < cb.nalias; i++)
        statics += cb.alias[i].hi - cb.alias[i].lo;
    for (int i = 0; ok && statics <= FORK_COPY_STATICS && i < cb.nalias; i++)
        own_copy(cb.alias[i].lo, cb.alias[i].hi);
    if (!ok) {
        static const char msg[] = "cables: fork: the child could not map its memory privately; it ends\n";
        syscall(SYS_write, 2, msg, sizeof msg - 1);
        syscall(SYS_exit_group, 127);
    }
    syscall(SYS_write, fk.ready[1], "r", 1);
    syscall(SYS_close, fk.ready[0]);
    syscall(SYS_close, fk.ready[1]);
}

static void fork_on_runtime_stack(void)
{
    fk.pid = REAL(fork)();
    fk.err = errno;
    if (fk.pid == 0) {
        child_side();
        return;
    }
    syscall(SYS_close, fk.ready[1]);
    char c;
    if (fk.pid > 0) /* the child's copy made (or the child gone) */
        while (syscall(SYS_read, fk.ready[0], &c, 1) < 0 && errno == EINTR)
            ;
    syscall(SYS_close, fk.ready[0]);
}

pid_t fork(void)
{
    if (!cb_app_thread || cb.forked || !cb.app)
        return REAL(fork)();
    uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
    pthread_attr_t attr;
    void *stack = NULL;
    size_t size = 0;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
        pthread_attr_getstack(&attr, &stack, &size);
        pthread_attr_destroy(&attr);
    }
    if (!cb_in_gas(sp) || (uintptr_t)stack > sp || (uintptr_t)stack + size <= sp)
        stack = (void *)(sp & ~(uintptr_t)(cb.ps - 1)), size = cb.ps; /* not a GAS stack we know */
    /* the program's static data held here (its GOT too, which the child's
     * calls write), unless it is large */
    size_t statics = 0;
    for (int i = 0; i < cb.nalias; i++)
        statics += cb.alias[i].hi - cb.alias[i].lo;
    for (int i = 0; statics <= FORK_COPY_STATICS && i < cb.nalias; i++)
        for (uintptr_t a = cb.alias[i].lo; a < cb.alias[i].hi; a += cb.ps)
            (void)*(volatile const char *)a;
    size_t rsize = 256 << 10;
    char *rstack = __libc_malloc(rsize);
    if (!rstack)
        return errno = ENOMEM, -1;
    cb_mutex_lock(&fk.mu);
    fk.lo = (sp - 4096) & ~(uintptr_t)(cb.ps - 1); /* and the red zone below */
    fk.hi = (uintptr_t)stack + size;
    pid_t pid = -1;
    int err = 0;
    if (syscall(SYS_pipe2, fk.ready, O_CLOEXEC)) {
        err = errno;
    } else {
        getcontext(&fk.run);
        fk.run.uc_stack.ss_sp = rstack;
        fk.run.uc_stack.ss_size = rsize;
        fk.run.uc_link = &fk.back;
        makecontext(&fk.run, fork_on_runtime_stack, 0);
        swapcontext(&fk.back, &fk.run);
        pid = fk.pid, err = fk.err;
    }
    if (pid == 0) /* the child: its own copy of the lock, of the runtime's memory */
        fk.mu = (cb_mutex_t)CB_MUTEX_INIT;
    else
        cb_mutex_unlock(&fk.mu);
    __libc_free(rstack);
    if (pid < 0)
        errno = err;
    return pid;
}
