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
 * The process id is the master's on every node: getpid gives a thread on
 * any node what it gives main (and getppid what it gives there), as a
 * process has one.  Before, each node's thread got its node process's, so
 * a name made of it in main (a file, a directory) was another on a thread
 * elsewhere, a pid a library kept to tell a fork (a pid that changed) said
 * so there, and the sender a signal named was another than getpid.  That
 * pid given to a call that takes one (kill, sigqueue, tgkill, pidfd_open,
 * prlimit, the scheduling and priority calls, getpgid, getsid,
 * process_vm_readv and _writev, /proc/PID opened) names the calling node's
 * process, as before (a signal goes where it is taken, and getpgid(getpid())
 * is getpgrp()): on another machine the master's pid would name a
 * stranger, or nothing.  Not where a child or thread of that node has the
 * number (on another machine one may).  /proc/self stays each node
 * process's.
 *
 * A run without the launcher (one process) and the runtime's own threads
 * get libc's calls unchanged. */
#include <dlfcn.h>
#include <link.h>
#include <errno.h>
#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <locale.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/pidfd.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "cables.h"
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
        char *c1 = s1 ? cb_malloc(strlen(s1) + 1) : NULL, *c2 = s2 ? cb_malloc(strlen(s2) + 1) : NULL;
        if ((s1 && !c1) || (s2 && !c2))
            rc = ENOMEM;
        else
            rc = cb_proc_change(op, arg, s1 ? strcpy(c1, s1) : NULL, s2 ? strcpy(c2, s2) : NULL, old);
        cb_free(c1);
        cb_free(c2);
    }
    return rc ? (errno = rc, -1) : 0;
}

/* the node process's id, taken at its start */
static pid_t node_pid;
__attribute__((constructor)) static void node_pid_init(void) { node_pid = cb_pid(); }

bool shim_std_ours(void) { return !cb.forked && cb_pid() == node_pid; }

void shim_std_moved(int fd)
{
    /* what a node's own stream held goes out where it was written, at its
     * next call (shim_remote_file) */
    if (shim_std_own(fd) && shared_change() && shim_std_ours())
        change(CB_PROC_STDIO, fd, NULL, NULL, NULL);
}

/* the master's pid is this thread's process's */
EARLY_FN static bool masters_pid(void)
{
    return cb_app_thread && cb.multi && cb.self != 0 && !cb.forked && cb.pids[0] > 0;
}

EARLY_FN pid_t getpid(void) { return masters_pid() ? cb.pids[0] : EARLY(getpid)(); }

/* the master's parent; in the child of a fork here, the master's pid for
 * its parent's */
pid_t getppid(void)
{
    if (masters_pid()) {
        cb_rsys_t q = shim_rq(SYS_getppid, 0, 0, 0, 0, 0, 0);
        return (pid_t)cb_rsys(&q);
    }
    pid_t p = REAL(getppid)();
    return cb.forked && cb.self != 0 && cb.pids[0] > 0 && p == node_pid ? cb.pids[0] : p;
}

/* the master's pid, given by getpid on this node, where no child or
 * thread of this node has that number (on another machine one may) */
EARLY_FN static bool masters_pid_given(pid_t pid)
{
    if (pid <= 0 || pid != cb.pids[0] || !masters_pid() || shim_is_own_child(pid))
        return false;
    int e = errno;
    bool thread_here = syscall(SYS_tgkill, node_pid, pid, 0) == 0;
    errno = e;
    return !thread_here;
}

EARLY_FN pid_t shim_pid(pid_t pid) { return masters_pid_given(pid) ? node_pid : pid; }

/* "/proc/PID..." of that pid: this node process's, in buf */
const char *shim_proc_path(const char *path, char *buf, size_t size)
{
    if (!masters_pid() || !path || strncmp(path, "/proc/", 6))
        return path;
    char *end;
    long pid = strtol(path + 6, &end, 10);
    if (end == path + 6 || (*end && *end != '/') || !masters_pid_given((pid_t)pid))
        return path;
    return snprintf(buf, size, "/proc/%d%s", (int)node_pid, end) < (int)size ? buf : path;
}

/* calls that name a process by its pid */
int tgkill(pid_t pid, pid_t tid, int sig) { return REAL(tgkill)(shim_pid(pid), tid, sig); }
int pidfd_open(pid_t pid, unsigned int flags) { return REAL(pidfd_open)(shim_pid(pid), flags); }
int sched_setscheduler(pid_t pid, int policy, const struct sched_param *p)
{
    return REAL(sched_setscheduler)(shim_pid(pid), policy, p);
}
int sched_getscheduler(pid_t pid) { return REAL(sched_getscheduler)(shim_pid(pid)); }
int sched_setparam(pid_t pid, const struct sched_param *p) { return REAL(sched_setparam)(shim_pid(pid), p); }
int setpriority(__priority_which_t which, id_t who, int prio)
{
    return REAL(setpriority)(which, which == PRIO_PROCESS ? (id_t)shim_pid((pid_t)who) : who, prio);
}
int getpriority(__priority_which_t which, id_t who)
{
    return REAL(getpriority)(which, which == PRIO_PROCESS ? (id_t)shim_pid((pid_t)who) : who);
}
pid_t getpgid(pid_t pid) { return REAL(getpgid)(shim_pid(pid)); }
pid_t getsid(pid_t pid) { return REAL(getsid)(shim_pid(pid)); }
ssize_t process_vm_readv(pid_t pid, const struct iovec *l, unsigned long nl, const struct iovec *r,
                         unsigned long nr, unsigned long flags)
{
    return REAL(process_vm_readv)(shim_pid(pid), l, nl, r, nr, flags);
}
ssize_t process_vm_writev(pid_t pid, const struct iovec *l, unsigned long nl, const struct iovec *r,
                          unsigned long nr, unsigned long flags)
{
    return REAL(process_vm_writev)(shim_pid(pid), l, nl, r, nr, flags);
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
    char *name = cb_malloc(n + 1);
    if (!name)
        return errno = ENOMEM, -1;
    memcpy(name, string, n);
    name[n] = 0;
    int rc = change(CB_PROC_SETENV, 1, name, eq + 1, NULL);
    cb_free(name);
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

/* ---- libraries loaded with dlopen ----
 * are the process's: loaded at the master, then on every other node, at
 * the same addresses (libcables/src/libs.c), so a function or object of
 * theirs that one node finds is the same on every node.  A handle is the
 * master's on every node: dlsym, dlvsym and dlinfo take the node's own for
 * it, and dlclose closes the library on every node.  A name without '/' is
 * looked for as ld.so would for the caller (its RUNPATH, LD_LIBRARY_PATH,
 * the default directories), else as libcables would (the cache).  A load or
 * close of the runtime's threads, or of a library's constructor or
 * destructor, is the node's alone. */

/* the number of symbols a GNU hash table covers: past the highest bucket's
 * chain */
__attribute__((no_sanitize("address", "undefined"))) static Elf32_Word gnu_hash_count(const Elf32_Word *gh)
{
    Elf32_Word nbuckets = gh[0], offset = gh[1], bloom = gh[2], last = 0;
    const Elf32_Word *buckets = (const Elf32_Word *)((const ElfW(Addr) *)(gh + 4) + bloom);
    const Elf32_Word *chain = buckets + nbuckets;
    for (Elf32_Word i = 0; i < nbuckets; i++)
        if (buckets[i] > last)
            last = buckets[i];
    if (last < offset)
        return offset;
    while (!(chain[last - offset] & 1))
        last++;
    return last + 1;
}

/* (no libc string functions: a sanitizer's may not be ready) */
__attribute__((no_sanitize("address", "undefined"))) static bool same_str(const char *a, const char *b, size_t n)
{
    size_t i = 0;
    while (i < n && a[i] && a[i] == b[i])
        i++;
    return i == n || (!a[i] && !b[i]);
}

/* libc's definition of name, from its symbol table (not through dlsym,
 * which is the shim's below, nor dl_iterate_phdr, which a sanitizer may
 * intercept before it can call libc's): the link maps from ld.so's
 * _r_debug; NULL if none */
__attribute__((no_sanitize("address", "undefined"))) static void *libc_sym(const char *name)
{
    for (struct link_map *l = _r_debug.r_map; l; l = l->l_next) {
        const char *base = NULL;
        for (const char *c = l->l_name; c && *c; c++)
            if (*c == '/')
                base = c;
        if (!base || !same_str(base, "/libc.so.", 9))
            continue;
        const ElfW(Sym) *sym = NULL;
        const char *str = NULL;
        const Elf32_Word *hash = NULL, *gnu = NULL;
        const ElfW(Half) *versym = NULL;
        for (const ElfW(Dyn) *d = l->l_ld; d && d->d_tag != DT_NULL; d++) {
            /* (ld.so made these absolute) */
            uintptr_t a = d->d_un.d_ptr < l->l_addr ? l->l_addr + d->d_un.d_ptr : d->d_un.d_ptr;
            if (d->d_tag == DT_SYMTAB)
                sym = (const ElfW(Sym) *)a;
            else if (d->d_tag == DT_STRTAB)
                str = (const char *)a;
            else if (d->d_tag == DT_HASH)
                hash = (const Elf32_Word *)a;
            else if (d->d_tag == DT_GNU_HASH)
                gnu = (const Elf32_Word *)a;
            else if (d->d_tag == DT_VERSYM)
                versym = (const ElfW(Half) *)a;
        }
        Elf32_Word n = hash ? hash[1] : gnu ? gnu_hash_count(gnu) : 0; /* hash[1]: the count */
        void *any = NULL;
        for (Elf32_Word i = 0; sym && str && i < n; i++)
            if (sym[i].st_value && sym[i].st_shndx != SHN_UNDEF && same_str(str + sym[i].st_name, name, SIZE_MAX)) {
                /* the default version, as dlsym gives: an older one may take
                 * other arguments (sched_getaffinity@GLIBC_2.3.3 takes two) */
                if (!versym || !(versym[i] & 0x8000))
                    return (void *)(l->l_addr + sym[i].st_value);
                any = (void *)(l->l_addr + sym[i].st_value);
            }
        return any;
    }
    return NULL;
}

/* libc's dl functions, published together (looked up before anything is
 * set up: a sanitizer's start, a library's constructor, so not
 * instrumented); the trampolines below jump to the first three */
typedef struct {
    void *dlsym, *dlvsym, *dlopen;
    int (*dlclose)(void *);
    char *(*dlerror)(void);
    int (*dlinfo)(void *, int, void *);
} libc_dl_t;
__attribute__((visibility("hidden"))) libc_dl_t shim_libc_dl;
static _Atomic bool libc_dl_found;

__attribute__((visibility("hidden"), no_sanitize("address", "undefined"))) void *shim_libc_sym(const char *name)
{
    return libc_sym(name);
}

__attribute__((no_sanitize("address", "undefined"))) static const libc_dl_t *libc_dl(void)
{
    if (!atomic_load_explicit(&libc_dl_found, memory_order_acquire)) {
        libc_dl_t f = { libc_sym("dlsym"), libc_sym("dlvsym"), libc_sym("dlopen"),
                        (int (*)(void *))libc_sym("dlclose"), (char *(*)(void))libc_sym("dlerror"),
                        (int (*)(void *, int, void *))libc_sym("dlinfo") };
        if (!f.dlsym || !f.dlvsym || !f.dlopen || !f.dlclose || !f.dlerror || !f.dlinfo)
            cb_die("cannot find libc's dl functions in its symbol table");
        shim_libc_dl = f;
        atomic_store_explicit(&libc_dl_found, true, memory_order_release);
    }
    return &shim_libc_dl;
}

/* this node's handle for h (the master's) */
__attribute__((visibility("hidden"), no_sanitize("address", "undefined"))) void *shim_dl_handle(void *h)
{
    libc_dl();
    void *l = h != RTLD_DEFAULT && h != RTLD_NEXT && cb_app_thread && cb.self != 0 ? cb_libs_local(h) : NULL;
    return l ? l : h;
}

/* whether a dlopen of file is the process's (else libc's, for its caller) */
__attribute__((visibility("hidden"), no_sanitize("address", "undefined"))) bool shim_dl_shared(const char *file)
{
    libc_dl();
    return file && shared_change() && !cb_libs_in_load();
}

static __thread char dl_error[CB_DLERROR_LEN]; /* ours, for dlerror, once */
static __thread bool dl_error_set;

/* a name without '/' as ld.so looks for it for the caller: its search path
 * (RUNPATH with $ORIGIN, LD_LIBRARY_PATH, the default directories) */
static bool dl_resolve(const char *file, void *caller, char *out, size_t outlen)
{
    Dl_info info;
    struct link_map *lm = NULL;
    Dl_serinfo size;
    if (!dladdr1(caller, &info, (void **)&lm, RTLD_DL_LINKMAP) || !lm ||
        libc_dl()->dlinfo(lm, RTLD_DI_SERINFOSIZE, &size))
        return false;
    Dl_serinfo *si = cb_malloc(size.dls_size);
    bool found = false;
    if (si && !libc_dl()->dlinfo(lm, RTLD_DI_SERINFOSIZE, si) && !libc_dl()->dlinfo(lm, RTLD_DI_SERINFO, si))
        for (unsigned i = 0; i < si->dls_cnt && !found; i++)
            found = (size_t)snprintf(out, outlen, "%s/%s", si->dls_serpath[i].dls_name, file) < outlen &&
                    !access(out, R_OK);
    cb_free(si);
    return found;
}

/* a dlopen that is the process's (the trampoline below gives its caller) */
__attribute__((visibility("hidden"))) void *shim_dlopen_shared(const char *file, int flags, void *caller)
{
    char path[PATH_MAX], err[CB_DLERROR_LEN] = "";
    /* in private memory: the kernel reads the path */
    char *f = cb_malloc(PATH_MAX);
    if (!f)
        return errno = ENOMEM, NULL;
    snprintf(f, PATH_MAX, "%s", strchr(file, '/') || !dl_resolve(file, caller, path, sizeof path) ? file : path);
    int64_t h = 0;
    int rc = cb.self == 0 ? cb_proc_change(CB_PROC_DLOPEN, flags, f, err, &h)
                          : shim_rs_dlopen(f, flags, err, sizeof err, &h);
    cb_free(f);
    if (!rc)
        return (void *)(uintptr_t)h;
    snprintf(dl_error, sizeof dl_error, "%s", err[0] ? err : "cables: the library could not be loaded");
    dl_error_set = true;
    return NULL;
}

int dlclose(void *handle)
{
    const libc_dl_t *d = libc_dl();
    void *local = cb_app_thread && cb.self != 0 ? cb_libs_local(handle) : NULL;
    if (!shared_change() || cb_libs_in_load() || (cb.self != 0 && !local))
        return d->dlclose(local ? local : handle);
    int rc = cb.self == 0 ? cb_proc_change(CB_PROC_DLCLOSE, (int64_t)(uintptr_t)handle, NULL, NULL, NULL)
                          : shim_rs_proc(CB_PROC_DLCLOSE, (int64_t)(uintptr_t)handle, NULL, NULL, NULL);
    if (rc) {
        snprintf(dl_error, sizeof dl_error, "cables: the library could not be closed");
        dl_error_set = true;
    }
    return rc ? -1 : 0;
}

char *dlerror(void)
{
    if (!dl_error_set)
        return libc_dl()->dlerror();
    dl_error_set = false;
    return dl_error;
}

int dlinfo(void *handle, int request, void *arg)
{
    return libc_dl()->dlinfo(shim_dl_handle(handle), request, arg);
}

/* dlsym and dlvsym: the handle made this node's, then libc's jumped to, so
 * that libc sees the caller's return address (RTLD_NEXT searches after the
 * object that called); dlopen: libc's jumped to for a load of the node's
 * own (its caller's RUNPATH and $ORIGIN), else the process's with the
 * caller.  (Three pushes keep the stack aligned at the call.) */
__asm__(".pushsection .text\n"
        ".globl dlsym\n.type dlsym,@function\n"
        "dlsym:\n"
        "    push %rdi\n    push %rsi\n    push %rdx\n"
        "    call shim_dl_handle\n"
        "    pop %rdx\n    pop %rsi\n    pop %rdi\n"
        "    mov %rax, %rdi\n"
        "    jmp *shim_libc_dl(%rip)\n"
        ".size dlsym, .-dlsym\n"
        ".globl dlvsym\n.type dlvsym,@function\n"
        "dlvsym:\n"
        "    push %rdi\n    push %rsi\n    push %rdx\n"
        "    call shim_dl_handle\n"
        "    pop %rdx\n    pop %rsi\n    pop %rdi\n"
        "    mov %rax, %rdi\n"
        "    jmp *shim_libc_dl+8(%rip)\n"
        ".size dlvsym, .-dlvsym\n"
        ".globl dlopen\n.type dlopen,@function\n"
        "dlopen:\n"
        "    push %rdi\n    push %rsi\n    push %rdx\n"
        "    call shim_dl_shared\n"
        "    pop %rdx\n    pop %rsi\n    pop %rdi\n"
        "    test %al, %al\n"
        "    jz 1f\n"
        "    mov (%rsp), %rdx\n"
        "    jmp shim_dlopen_shared\n"
        "1:  jmp *shim_libc_dl+16(%rip)\n"
        ".size dlopen, .-dlopen\n"
        ".popsection\n");

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
 * and copies the forking thread's stack
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
    uintptr_t lo, hi; /* the forking thread's GAS stack (0, 0: none known) */
    pid_t pid;
    int err, ready[2];
    bool active; /* a fork of ours is under way */
    struct handler *h; /* the program's fork handlers, a private copy */
    uint32_t nh;
} fk = { .mu = CB_MUTEX_INIT };

/* a page the node holds is the child's to read and write (its copy: no
 * runtime keeps it coherent); one it does not hold has no data here */
static int prot_of(uint32_t st)
{
    return st & PG_ACC ? PROT_READ | PROT_WRITE : PROT_NONE;
}

/* the view of GAS pages [first, first + n) at lo: private, each page as
 * prot_of its state (pages of page states never touched, by mincore, all
 * PG_NONE: skipped) */
static bool private_view(uintptr_t lo, uint64_t first, uint64_t n)
{
    if (cb_mmap((void *)lo, n * cb.ps, PROT_NONE, MAP_PRIVATE | MAP_FIXED | MAP_NORESERVE, cb.memfd,
                (off_t)(first * cb.ps)) != (void *)lo)
        return false;
    size_t os = (size_t)sysconf(_SC_PAGESIZE);
    size_t per = os / sizeof *cb.pst; /* page states on an OS page of them */
    bool in = false;
    uint64_t run = 0;
    int run_prot = PROT_NONE;
    for (uint64_t p = first; p <= first + n; p++) {
        int prot = PROT_NONE;
        if (p < first + n) {
            if (p == first || p % per == 0) {
                unsigned char v = 1;
                mincore((void *)((uintptr_t)&cb.pst[p] & ~(uintptr_t)(os - 1)), os, &v);
                in = v & 1;
            }
            if (in)
                prot = prot_of(atomic_load_explicit(&cb.pst[p], memory_order_relaxed));
            else if (p % per == 0 && p + per <= first + n && run_prot == PROT_NONE) {
                p += per - 1; /* an OS page of states never touched: all PG_NONE */
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

/* the program's static data is copied at fork (not too large) */
static bool statics_copied(void)
{
    size_t statics = 0;
    for (int i = 0; i < cb.nalias; i++)
        statics += cb.alias[i].hi - cb.alias[i].lo;
    return statics <= FORK_COPY_STATICS;
}

/* the pages of [lo, hi) this node holds, copied into the child's view (a
 * page written is the child's) */
static void own_copy(uintptr_t lo, uintptr_t hi)
{
    for (uintptr_t a = lo & ~(uintptr_t)(cb.ps - 1); a < hi; a += cb.ps)
        if (prot_of(atomic_load(&cb.pst[cb_page_of(a)])) != PROT_NONE)
            __atomic_fetch_add((volatile uint8_t *)a, 0, __ATOMIC_RELAXED);
}

/* The program's fork handlers (pthread_atfork, which calls
 * __register_atfork) are the process's: kept in the program's shared
 * static data, so that a fork on any node runs every one, as libc runs
 * its own (before, only the registering node's libc had them: a fork on
 * another node ran none).  fork takes a private copy (fk.h) first. */
struct handler { void (*prepare)(void), (*parent)(void), (*child)(void); };
struct handlers {
    struct handler *tab; /* GAS (cables_alloc) */
    uint32_t n, cap;
};

static struct handlers *handlers(void)
{
    _Static_assert(SHIM_PROGRAM_ATFORK + sizeof(struct handlers) <= SHIM_PROGRAM_SEEDS, "atfork");
    return cb.program ? (struct handlers *)((uint8_t *)cb.program + SHIM_PROGRAM_ATFORK) : NULL;
}

int __register_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void), void *dso)
{
    struct handlers *t = handlers();
    if (!cb_app_thread || !t)
        return REAL(__register_atfork)(prepare, parent, child, dso);
    int rc = 0;
    cables_lock(shim_program_lock());
    if (t->n == t->cap) {
        uint32_t cap = t->cap ? 2 * t->cap : 16;
        struct handler *tab = cables_alloc(cap * sizeof *tab);
        if (!tab)
            rc = ENOMEM;
        else {
            if (t->n)
                memcpy(tab, t->tab, t->n * sizeof *tab);
            t->tab = tab, t->cap = cap;
        }
    }
    if (!rc)
        t->tab[t->n++] = (struct handler){ prepare, parent, child };
    cables_unlock(shim_program_lock());
    return rc;
}

/* the child, on the runtime's stack, the parent waiting */
static void child_side(void)
{
    cb.forked = true;
    cb_app_thread = false;
    cb_fault_after_fork();
    cb_rsys_after_fork();
    bool ok = private_view(CB_GAS_BASE, 0, cb.npages);
    for (int i = 0; ok && i < cb.nalias; i++)
        ok = private_view(cb.alias[i].lo, cb.alias[i].first,
                          (cb.alias[i].hi - cb.alias[i].lo) / cb.ps);
    if (!ok) {
        static const char msg[] = "cables: fork: the child could not map its memory privately; it ends\n";
        syscall(SYS_write, 2, msg, sizeof msg - 1);
        syscall(SYS_exit_group, 127);
    }
    /* copied now: the stack, and the program's static data unless large */
    if (fk.hi)
        own_copy(fk.lo, fk.hi);
    for (int i = 0; statics_copied() && i < cb.nalias; i++)
        own_copy(cb.alias[i].lo, cb.alias[i].hi);
    syscall(SYS_write, fk.ready[1], "r", 1);
    syscall(SYS_close, fk.ready[0]);
    syscall(SYS_close, fk.ready[1]);
}

static void fork_on_runtime_stack(void)
{
    fk.active = true;
    fk.pid = REAL(fork)(); /* the child: fork_child made its memory its own */
    fk.err = errno;
    fk.active = false;
    if (fk.pid == 0)
        return;
    syscall(SYS_close, fk.ready[1]);
    char c;
    if (fk.pid > 0) /* the child's copy made (or the child gone) */
        while (syscall(SYS_read, fk.ready[0], &c, 1) < 0 && errno == EINTR)
            ;
    syscall(SYS_close, fk.ready[0]);
}

static pid_t fork_with(bool program_handlers)
{
    if (!cb_app_thread || cb.forked || !cb.app)
        return REAL(fork)();
    /* the thread's GAS stack (its record: no message), and what of it is
     * in use (none known when fork runs on a signal stack) */
    uintptr_t sp = (uintptr_t)__builtin_frame_address(0), lo = 0, hi = 0;
    if (cb_thr && cb_thr->stack && cb_in_gas((uintptr_t)cb_thr->stack)) {
        lo = (uintptr_t)cb_thr->stack, hi = lo + cb_thr->stack_size;
        if (sp > lo && sp < hi) /* made present here first: the child returns through it */
            for (uintptr_t a = (sp - 4096) & ~(uintptr_t)(cb.ps - 1); a < hi; a += cb.ps)
                (void)*(volatile const char *)a;
    }
    /* the program's static data held here (its GOT too, which the child's
     * calls write), unless it is large */
    for (int i = 0; statics_copied() && i < cb.nalias; i++)
        for (uintptr_t a = cb.alias[i].lo; a < cb.alias[i].hi; a += cb.ps)
            (void)*(volatile const char *)a;
    size_t rsize = 256 << 10;
    char *rstack = cb_malloc(rsize);
    if (!rstack)
        return errno = ENOMEM, -1;
    /* the program's handlers: prepare ones last registered first */
    struct handlers *t = program_handlers ? handlers() : NULL;
    struct handler *h = NULL;
    uint32_t nh = 0;
    if (t) {
        cables_lock(shim_program_lock());
        if (t->n && (h = cb_malloc(t->n * sizeof *h)))
            memcpy(h, t->tab, (nh = t->n) * sizeof *h);
        cables_unlock(shim_program_lock());
    }
    for (uint32_t i = nh; i-- > 0;)
        if (h[i].prepare)
            h[i].prepare();
    sigset_t all, mask; /* no handler runs while the child's memory changes under it */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &mask);
    cb_mutex_lock(&fk.mu);
    fk.lo = lo, fk.hi = hi;
    fk.h = h, fk.nh = nh;
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
    pthread_sigmask(SIG_SETMASK, &mask, NULL);
    cb_free(rstack);
    if (pid > 0 && cb.self != 0) /* waits for it are this node's (spawn.c) */
        shim_own_child(pid);
    for (uint32_t i = 0; pid > 0 && i < nh; i++) /* the child ran its own (fork_child) */
        if (h[i].parent)
            h[i].parent();
    cb_free(h);
    if (pid < 0)
        errno = err;
    return pid;
}

pid_t fork(void) { return fork_with(true); }

/* vfork is a fork (as POSIX allows), without the program's fork handlers
 * (vfork runs none).  Before, its child, which shares the parent's memory
 * and thread state, took itself for the program's thread: its exec
 * replaced the whole program, at the master (the run then hung). */
pid_t vfork(void) { return fork_with(false); }

/* The child's memory is made its own first thing in the child (libc's
 * child handlers run in the order they were registered; this one is
 * registered before the program runs), then the program's handlers run. */
static void fork_child(void)
{
    if (!fk.active)
        return;
    child_side();
    for (uint32_t i = 0; i < fk.nh; i++)
        if (fk.h[i].child)
            fk.h[i].child();
}

__attribute__((constructor)) static void fork_init(void) { pthread_atfork(NULL, NULL, fork_child); }

/* ---- exec ----
 * The exec family replaces the process's image, whichever thread calls it.
 * A relinked program's process is every node process: the new image runs
 * at the master (its descriptors are the process's, its file system the
 * program's), after the runtime ended as at exit but for the program's
 * exit handlers (the other nodes leave, MPI is finalized), with the
 * environment less the launcher's variables (OMPI_*, PMIX_*: a relinked
 * program exec'd starts alone); an application thread of another node asks
 * the master.  Before, the calling node
 * process alone became the new program and the launcher ended the run as
 * failed ("mpirun has exited due to process rank 1 ... exiting
 * improperly").  The file is looked up first (and the PATH for execvp and
 * execlp): an exec that cannot start returns its error to the program,
 * which goes on; one that fails after the runtime ended ends the process
 * with status 127, saying why. */
extern char **environ;

/* file an executable regular file for the effective ids: 0 or an error */
static int executable(const char *file)
{
    struct stat st;
    if (stat(file, &st))
        return errno;
    if (!S_ISREG(st.st_mode))
        return EACCES;
    return faccessat(AT_FDCWD, file, X_OK, AT_EACCESS) ? errno : 0;
}

/* the executable for file: the file itself, or (search, no '/') the first
 * in PATH (unset: /bin:/usr/bin; an empty element: the working directory),
 * as glibc's execvp looks; 0 and its path in out, or an error number */
static int find_exec(const char *file, bool search, char *out, size_t n)
{
    if (!*file)
        return ENOENT;
    if (!search || strchr(file, '/')) {
        if (snprintf(out, n, "%s", file) >= (int)n)
            return ENAMETOOLONG;
        return executable(out);
    }
    const char *path = getenv("PATH");
    int err = ENOENT;
    for (const char *p = path ? path : "/bin:/usr/bin"; p;) {
        const char *e = strchr(p, ':');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        int r = snprintf(out, n, "%.*s%s%s", (int)len, p, len ? "/" : "", file) < (int)n
                    ? executable(out) : ENAMETOOLONG;
        if (!r)
            return 0;
        if (r == EACCES)
            err = EACCES;
        else if (r != ENOENT && r != ENOTDIR && r != ENAMETOOLONG)
            return r;
        p = e ? e + 1 : NULL;
    }
    return err;
}

int shim_count(char *const v[])
{
    int n = 0;
    while (v && v[n])
        n++;
    return n;
}

size_t shim_strings_len(char *const v[], int n)
{
    size_t len = 0;
    for (int i = 0; i < n; i++)
        len += strlen(v[i]) + 1;
    return len;
}

char *shim_strings_put(char *p, char *const v[], int n)
{
    for (int i = 0; i < n; i++)
        p = stpcpy(p, v[i]) + 1;
    return p;
}

char **shim_private_copy(char *const v[], bool launchers)
{
    int n = shim_count(v), k = 0;
    size_t len = ((size_t)n + 1) * sizeof(char *);
    for (int i = 0; i < n; i++)
        len += launchers && cb_launcher_var(v[i]) ? 0 : strlen(v[i]) + 1;
    char **c = cb_malloc(len);
    if (!c)
        return NULL;
    char *p = (char *)(c + n + 1);
    for (int i = 0; i < n; i++)
        if (!(launchers && cb_launcher_var(v[i]))) {
            c[k++] = p;
            p = stpcpy(p, v[i]) + 1;
        }
    c[k] = NULL;
    return c;
}

/* at the master: the runtime ended, then the image replaced; an error
 * number where the exec cannot start (nothing ended) */
static int exec_here(const char *file, char *const argv[], char *const envp[], bool search)
{
    char path[PATH_MAX];
    int err = find_exec(file, search, path, sizeof path);
    if (err)
        return err;
    /* the arguments in private memory (the kernel reads them once the
     * runtime serves no page), and the new image no node of the run that
     * ended: the launcher's variables go (a relinked program starts alone) */
    char **args = shim_private_copy(argv, false), **env = shim_private_copy(envp, true);
    if (!args || !env)
        return ENOMEM;
    cb_node_finish();
    REAL(execve)(path, args, env);
    fprintf(stderr, "cables: exec of %s failed after the run ended: %s\n", path, strerror(errno));
    fflush(NULL);
    _exit(127);
}

/* nenv -1: the process's environment */
int shim_exec_strings(const char *strings, size_t len, int nargs, int nenv, bool search)
{
    int ne = nenv > 0 ? nenv : 0;
    if (nargs < 0 || !len || strings[len - 1] || (size_t)nargs + (size_t)ne >= len)
        return EINVAL;
    char **v = cb_malloc(((size_t)nargs + (size_t)ne + 2) * sizeof *v);
    if (!v)
        return ENOMEM;
    const char *p = strings, *end = strings + len;
    const char *file = p;
    p += strlen(p) + 1;
    int i = 0;
    for (; i < nargs + ne && p < end; i++) {
        v[i + (i >= nargs)] = (char *)p;
        p += strlen(p) + 1;
    }
    if (i < nargs + ne) /* fewer strings than said */
        p = end + 1;
    v[nargs] = NULL;
    v[nargs + 1 + ne] = NULL;
    int err = p != end ? EINVAL : exec_here(file, v, nenv >= 0 ? v + nargs + 1 : environ, search);
    cb_free(v);
    return err;
}

#define PROCESS_ENV ((char *const *)-1) /* exec_any: the process's environment */

/* exec of file with argv and envp (PROCESS_ENV: environ; NULL: none) */
static int exec_any(const char *file, char *const argv[], char *const envp[], bool search)
{
    if (cb.self == 0) {
        int err = exec_here(file, argv, envp == PROCESS_ENV ? environ : envp, search);
        return errno = err, -1;
    }
    bool own = envp == PROCESS_ENV;
    int nargs = shim_count(argv), nenv = own ? 0 : shim_count(envp);
    size_t len = strlen(file) + 1 + shim_strings_len(argv, nargs) + shim_strings_len(envp, nenv);
    char *buf = cb_malloc(len);
    if (!buf)
        return errno = ENOMEM, -1;
    shim_strings_put(shim_strings_put(stpcpy(buf, file) + 1, argv, nargs), envp, nenv);
    shim_rs_exec(buf, len, nargs, own ? -1 : nenv, search); /* returns only on failure */
    int err = errno;
    cb_free(buf);
    return errno = err, -1;
}

static bool exec_ours(void) { return cb_app_thread && cb.multi && !cb.forked && !atomic_load(&cb.ending); }

int execve(const char *path, char *const argv[], char *const envp[])
{
    if (!exec_ours())
        return REAL(execve)(path, argv, envp);
    return exec_any(path, argv, envp, false);
}

int execv(const char *path, char *const argv[])
{
    if (!exec_ours())
        return REAL(execv)(path, argv);
    return exec_any(path, argv, PROCESS_ENV, false);
}

int execvp(const char *file, char *const argv[])
{
    if (!exec_ours())
        return REAL(execvp)(file, argv);
    return exec_any(file, argv, PROCESS_ENV, true);
}

int execvpe(const char *file, char *const argv[], char *const envp[])
{
    if (!exec_ours())
        return REAL(execvpe)(file, argv, envp);
    return exec_any(file, argv, envp, true);
}

/* the file of a descriptor of the master's, named by the master's /proc
 * (a node's own descriptor: that node process's own exec, as before) */
int fexecve(int fd, char *const argv[], char *const envp[])
{
    if (!exec_ours() || shim_local_fd(fd))
        return REAL(fexecve)(fd, argv, envp);
    if (fd < 0)
        return errno = EBADF, -1;
    char path[32];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    return exec_any(path, argv, envp, false);
}

/* the list forms: their arguments as a vector (and execle's environment) */
#define EXEC_LIST(name, search, with_env)                                    \
    int name(const char *path, const char *arg, ...)                         \
    {                                                                        \
        va_list ap;                                                          \
        int n = 1;                                                           \
        va_start(ap, arg);                                                   \
        while (va_arg(ap, const char *))                                     \
            n++;                                                             \
        va_end(ap);                                                          \
        const char *v[n + 1];                                                \
        v[0] = arg;                                                          \
        va_start(ap, arg);                                                   \
        for (int i = 1; i <= n; i++)                                         \
            v[i] = va_arg(ap, const char *);                                 \
        char *const *env = with_env ? va_arg(ap, char *const *) : PROCESS_ENV; \
        va_end(ap);                                                          \
        if (!exec_ours())                                                    \
            return with_env ? REAL(execve)(path, (char *const *)v, env)      \
                   : search ? REAL(execvp)(path, (char *const *)v)           \
                            : REAL(execv)(path, (char *const *)v);           \
        return exec_any(path, (char *const *)v, env, search);                \
    }
EXEC_LIST(execl, false, false)
EXEC_LIST(execlp, true, false)
EXEC_LIST(execle, false, true)
