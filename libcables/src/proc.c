/* proc.c: what a process has once, so every node process alike: its signal
 * dispositions, its working directory, its file mode creation mask, its
 * environment and its locale.  The kernel and libc keep each of them per process, so a
 * change one node makes is made on every other node up (M_PROC), and the
 * master keeps the current ones for each node attached later (replay).
 *
 * Each change is made at the master (the shim sends an application
 * thread's call from another node there; a signal disposition is made
 * where it was asked first, too), one change at a time: each is
 * made on every node before the next, and before the call returns, so a
 * thread that learns of the change through the program's synchronization
 * finds it on its own node.  A relative path is sent absolute, and a locale
 * as the master names all its categories after the change (a name from
 * its environment resolved there). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

enum { P_SIG, P_CWD, P_UMASK, P_SETENV, P_UNSETENV, P_CLEARENV, P_LOCALE, P_STDIO, P_DLOPEN, P_DLCLOSE,
       P_USAGE /* a question, not a change: cb_proc_usage */ };

typedef struct {
    char *name, *value; /* value NULL: unset */
} env_rec_t;

/* master: what a node attached later is given (rec_mu: short, never held
 * across a message's wait, so the communication thread may take it) */
static cb_mutex_t rec_mu = CB_MUTEX_INIT;
static struct sigaction sig_tab[NSIG];
static uint64_t sig_kept; /* bit s - 1: sig_tab[s] holds one */
static char *cwd_kept;    /* the working directory (NULL: the launch's) */
static char *locale_kept; /* setlocale(LC_ALL, NULL) after the last change (NULL: none) */
static int umask_kept = -1;
static int stdio_kept; /* CB_PROC_STDIO's bits */
static bool env_cleared;
static env_rec_t *env_kept;
static size_t env_n, env_cap;

/* master: one change at a time, on every node (held across the sends) */
static cb_mutex_t change_mu = CB_MUTEX_INIT;

/* ---- a change, made here ---- */

/* libc's, past the shim's (looked up at the start, not on the
 * communication thread) */
static int (*libc_setenv)(const char *, const char *, int);
static int (*libc_unsetenv)(const char *);
static int (*libc_clearenv)(void);
static int (*libc_putenv)(char *);
static char *(*libc_setlocale)(int, const char *);

static int apply(int kind, int64_t arg, const char *s)
{
    switch (kind) {
    case P_SIG: return cb_sigaction((int)arg, (const struct sigaction *)(const void *)s, NULL) ? errno : 0;
    case P_CWD: return syscall(SYS_chdir, s) ? errno : 0;
    case P_UMASK: syscall(SYS_umask, (mode_t)arg); return 0;
    case P_SETENV: return libc_setenv(s, s + strlen(s) + 1, 1) ? errno : 0;
    case P_UNSETENV: return libc_unsetenv(s) ? errno : 0;
    case P_CLEARENV: return libc_clearenv() ? errno : 0;
    case P_LOCALE: return libc_setlocale((int)arg, s) ? 0 : ENOENT;
    case P_STDIO: atomic_fetch_or(&cb.std_master, (int)arg); return 0;
    }
    return EINVAL;
}

static const char *kind_name(int kind)
{
    static const char *const names[] = { "a signal disposition", "the working directory",
                                         "the file mode mask", "an environment variable",
                                         "an environment variable", "the environment",
                                         "the locale", "the standard streams",
                                         "the libraries loaded", "the libraries loaded" };
    return names[kind];
}

/* made on every other node up, each acknowledging; a node that could not
 * (a directory its file system lacks) is named */
typedef struct {
    int kind, first;
    const void *p;
} change_t;

static void change_answer(int k, const cb_waiter_t *w, void *arg)
{
    change_t *c = arg;
    int rc = (int)w->value;
    if (rc && !c->first)
        c->first = rc;
    if (rc && c->kind != P_DLOPEN) /* (that node said why) */
        fprintf(stderr, "cables: node %d could not follow a change of %s%s%s: %s\n", k,
                kind_name(c->kind), c->kind == P_CWD || c->kind == P_LOCALE ? " to " : "",
                c->kind == P_CWD || c->kind == P_LOCALE ? (const char *)c->p : "", strerror(rc));
}

static int send_all(int kind, int64_t arg, const void *p, size_t len)
{
    uint64_t mask = 0;
    for (int k = 0; k < atomic_load(&cb.nnodes); k++)
        if (k != cb.self && cb_node_open(k))
            mask |= 1ull << k;
    cb_msg_t m = { .type = M_PROC, .a = (uint64_t)kind, .b = (uint64_t)arg };
    change_t c = { kind, 0, p };
    cb_ask_all(mask, &m, p, len, change_answer, &c);
    return c.first;
}

/* a private copy (libc's strdup would take the shim's malloc) */
static char *copy(const char *s)
{
    size_t n = strlen(s) + 1;
    char *c = malloc(n);
    if (!c)
        cb_die("out of memory for a record of the process's state");
    return memcpy(c, s, n);
}

/* master: the environment's record of name (value NULL: unset) */
static void env_keep(const char *name, const char *value)
{
    size_t i = 0;
    while (i < env_n && strcmp(env_kept[i].name, name))
        i++;
    if (i == env_n) {
        if (env_n == env_cap) {
            size_t cap = env_cap ? 2 * env_cap : 16;
            env_rec_t *n = realloc(env_kept, cap * sizeof *n);
            if (!n)
                cb_die("out of memory for the environment's record");
            env_kept = n, env_cap = cap;
        }
        env_kept[env_n].name = copy(name);
        env_kept[env_n].value = NULL;
        env_n++;
    }
    free(env_kept[i].value);
    env_kept[i].value = value ? copy(value) : NULL;
}

static void keep(int kind, int64_t arg, const char *s)
{
    cb_mutex_lock(&rec_mu);
    switch (kind) {
    case P_SIG:
        sig_tab[arg] = *(const struct sigaction *)(const void *)s;
        sig_kept |= 1ull << (arg - 1);
        break;
    case P_CWD:
        free(cwd_kept);
        cwd_kept = copy(s);
        break;
    case P_UMASK: umask_kept = (int)arg; break;
    case P_STDIO: stdio_kept |= (int)arg; break;
    case P_LOCALE:
        free(locale_kept);
        locale_kept = copy(s);
        break;
    case P_SETENV: env_keep(s, s + strlen(s) + 1); break;
    case P_UNSETENV: env_keep(s, NULL); break;
    case P_CLEARENV:
        for (size_t i = 0; i < env_n; i++)
            free(env_kept[i].name), free(env_kept[i].value);
        env_n = 0;
        env_cleared = true;
        break;
    }
    cb_mutex_unlock(&rec_mu);
}

/* the payload of an environment change: name, then its value (set) */
static char *env_payload(const char *name, size_t n, const char *value, size_t *len)
{
    size_t v = value ? strlen(value) + 1 : 0;
    char *b = malloc(n + 1 + v);
    if (!b)
        return NULL;
    memcpy(b, name, n);
    b[n] = 0;
    if (v)
        memcpy(b + n + 1, value, v);
    *len = n + 1 + v;
    return b;
}

/* master: a library loaded (or closed) here, then on every other node;
 * undone here if a node could not.  Under the libraries' lock, not
 * change_mu: the library's constructors may make changes of their own. */
static int libs_change(int op, int64_t arg, const char *file, char *err, int64_t *old)
{
    char mine[CB_DLERROR_LEN];
    if (!err)
        err = mine;
    err[0] = 0;
    int rc;
    cb_libs_lock();
    if (op == CB_PROC_DLOPEN) {
        void *h = NULL, *buf = NULL;
        size_t len = 0;
        if (!(rc = cb_libs_open(file, (int)arg, &h, &buf, &len, err, CB_DLERROR_LEN))) {
            *old = (int64_t)(uintptr_t)h;
            /* kept first: a node attached meanwhile gets it once or twice */
            size_t kept = cb_libs_opened(P_DLOPEN, buf, len);
            if ((rc = send_all(P_DLOPEN, arg, buf, len))) {
                snprintf(err, CB_DLERROR_LEN, "cables: %s could not be loaded on every node at the "
                         "addresses it has at the master (a node's message says why)", file);
                cb_libs_forget(kept);
                if (!cb_libs_close(P_DLCLOSE, h, false))
                    send_all(P_DLCLOSE, (int64_t)(uintptr_t)h, NULL, 0);
            }
        }
        free(buf);
    } else if (!(rc = cb_libs_close(P_DLCLOSE, (void *)(uintptr_t)arg, true))) {
        send_all(P_DLCLOSE, arg, NULL, 0);
    }
    cb_libs_unlock();
    return rc;
}

int cb_proc_change(int op, int64_t arg, const char *s1, const char *s2, int64_t *old)
{
    if (cb.self != 0)
        return ENOTSUP;
    if (op == CB_PROC_DLOPEN || op == CB_PROC_DLCLOSE)
        return libs_change(op, arg, s1, (char *)s2, old);
    char *buf = NULL;
    size_t len = 0;
    int rc = 0, kind = P_CLEARENV;
    bool changed = true;
    cb_mutex_lock(&change_mu);
    switch (op) {
    case CB_PROC_CHDIR:
    case CB_PROC_FCHDIR: { /* the directory as the master names it; if it
                            * cannot be named, the call fails where it was */
        kind = P_CWD;
        int back = (int)syscall(SYS_openat, AT_FDCWD, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (!(buf = malloc(PATH_MAX)))
            rc = ENOMEM;
        else if (op == CB_PROC_CHDIR ? syscall(SYS_chdir, s1) : syscall(SYS_fchdir, (int)arg))
            rc = errno;
        else if (syscall(SYS_getcwd, buf, PATH_MAX) < 0) {
            rc = errno;
            if (back >= 0)
                syscall(SYS_fchdir, back);
        } else {
            len = strlen(buf) + 1;
        }
        if (back >= 0)
            syscall(SYS_close, back);
        break;
    }
    case CB_PROC_SIGACTION: /* made already where it was asked: again here (same) */
        kind = P_SIG;
        len = sizeof(struct sigaction);
        if (arg <= 0 || arg >= NSIG)
            rc = EINVAL;
        else if (!(buf = malloc(len)))
            rc = ENOMEM;
        else
            rc = apply(kind, arg, memcpy(buf, s1, len));
        break;
    case CB_PROC_UMASK:
        kind = P_UMASK;
        arg &= 0777;
        *old = syscall(SYS_umask, (mode_t)arg);
        break;
    case CB_PROC_SETENV:
    case CB_PROC_UNSETENV:
    case CB_PROC_PUTENV: { /* putenv: s1 is the program's string, which stays the variable */
        const char *eq = op == CB_PROC_PUTENV ? strchr(s1, '=') : NULL;
        kind = op == CB_PROC_UNSETENV || (op == CB_PROC_PUTENV && !eq) ? P_UNSETENV : P_SETENV;
        if (!(buf = env_payload(s1, eq ? (size_t)(eq - s1) : strlen(s1),
                                kind == P_UNSETENV ? NULL : eq ? eq + 1 : s2, &len))) {
            rc = ENOMEM;
        } else if (!buf[0]) { /* no name: the shim keeps those to the node */
            rc = EINVAL;
        } else if (op == CB_PROC_PUTENV) {
            rc = libc_putenv((char *)s1) ? errno : 0;
        } else if (op == CB_PROC_SETENV && arg == 0 && getenv(buf)) {
            changed = false; /* not overwritten */
        } else {
            rc = apply(kind, 0, buf);
        }
        break;
    }
    case CB_PROC_CLEARENV:
        rc = apply(kind, 0, NULL);
        break;
    case CB_PROC_SETLOCALE: { /* sent as the master names it after: all categories */
        kind = P_LOCALE;
        const char *now;
        if ((rc = apply(kind, arg, s1)))
            break;
        if (!(now = libc_setlocale(LC_ALL, NULL)) || !(buf = malloc(strlen(now) + 1))) {
            rc = ENOMEM;
            break;
        }
        len = strlen(now) + 1;
        memcpy(buf, now, len);
        arg = LC_ALL;
        break;
    }
    case CB_PROC_STDIO:
        kind = P_STDIO;
        if (arg < 1 || arg > 3)
            rc = EINVAL;
        else if ((changed = (atomic_load(&cb.std_master) & arg) != arg))
            rc = apply(kind, arg, NULL);
        break;
    default:
        rc = EINVAL;
    }
    if (!rc && changed) {
        keep(kind, arg, buf);
        send_all(kind, arg, buf, len);
    }
    cb_mutex_unlock(&change_mu);
    free(buf);
    return rc;
}

/* master, comm thread: node k was attached (its table sent): it gets what
 * the program changed, in the order that gives the same result */
void cb_proc_replay(int k)
{
    cb_mutex_lock(&rec_mu);
    for (int s = 1; s < NSIG; s++)
        if (sig_kept >> (s - 1) & 1) {
            cb_msg_t m = { .type = M_PROC, .a = P_SIG, .b = (uint64_t)s };
            cb_send(k, &m, &sig_tab[s], sizeof sig_tab[s], false);
        }
    if (cwd_kept) {
        cb_msg_t m = { .type = M_PROC, .a = P_CWD };
        cb_send(k, &m, cwd_kept, strlen(cwd_kept) + 1, false);
    }
    if (umask_kept >= 0) {
        cb_msg_t m = { .type = M_PROC, .a = P_UMASK, .b = (uint64_t)umask_kept };
        cb_send(k, &m, NULL, 0, false);
    }
    if (stdio_kept) {
        cb_msg_t m = { .type = M_PROC, .a = P_STDIO, .b = (uint64_t)stdio_kept };
        cb_send(k, &m, NULL, 0, false);
    }
    if (locale_kept) {
        cb_msg_t m = { .type = M_PROC, .a = P_LOCALE, .b = LC_ALL };
        cb_send(k, &m, locale_kept, strlen(locale_kept) + 1, false);
    }
    if (env_cleared) {
        cb_msg_t m = { .type = M_PROC, .a = P_CLEARENV };
        cb_send(k, &m, NULL, 0, false);
    }
    for (size_t i = 0; i < env_n; i++) {
        size_t n = strlen(env_kept[i].name) + 1, v = env_kept[i].value ? strlen(env_kept[i].value) + 1 : 0;
        char *b = malloc(n + v);
        if (!b)
            cb_die("out of memory for the environment's record");
        memcpy(b, env_kept[i].name, n);
        if (v)
            memcpy(b + n, env_kept[i].value, v);
        cb_msg_t m = { .type = M_PROC, .a = v ? P_SETENV : P_UNSETENV };
        cb_send(k, &m, b, n + v, true);
    }
    cb_mutex_unlock(&rec_mu);
    cb_libs_replay(k);
    cb_psig_replay(k);
}

/* at the start: libc's functions; at the master, its working directory and
 * mask, which a node attached later (started by MPI_Comm_spawn) takes */
void cb_proc_init(void)
{
    libc_setenv = (int (*)(const char *, const char *, int))cb_libc("setenv");
    libc_unsetenv = (int (*)(const char *))cb_libc("unsetenv");
    libc_clearenv = (int (*)(void))cb_libc("clearenv");
    libc_putenv = (int (*)(char *))cb_libc("putenv");
    libc_setlocale = (char *(*)(int, const char *))cb_libc("setlocale");
    if (!libc_setenv || !libc_unsetenv || !libc_clearenv || !libc_putenv ||
        !libc_setlocale)
        cb_die("cannot find libc's setenv, unsetenv, clearenv, putenv or setlocale");
    if (cb.self != 0)
        return;
    char buf[PATH_MAX];
    if (syscall(SYS_getcwd, buf, sizeof buf) > 0)
        keep(P_CWD, 0, buf);
    mode_t m = (mode_t)syscall(SYS_umask, 022); /* read, and put back */
    syscall(SYS_umask, m);
    keep(P_UMASK, m, NULL);
}

/* ---- the process's use of its machines: each node process's, summed ----
 * The kernel counts CPU time, faults and context switches per process, so
 * a thread's clock() or getrusage saw its node's share only.  Every node
 * up is asked at once (M_PROC P_USAGE, answered by its communication
 * thread); the master adds what the nodes gone used, each sending its own
 * as it leaves (M_LEFT's payload), but not for a node whose answer the
 * asker has: none is counted twice, none left out, and the sum never goes
 * back. */
enum { USAGE_ALL = 0, USAGE_GONE = 1 }; /* P_USAGE b: c's nodes' own, or gone */
static cb_mutex_t usage_mu = CB_MUTEX_INIT; /* master: short, the comm thread takes it */
static cb_usage_t usage_gone[CB_MAX_NODES];

static void tv_add(struct timeval *a, const struct timeval *b)
{
    a->tv_sec += b->tv_sec;
    a->tv_usec += b->tv_usec;
    if (a->tv_usec >= 1000000) {
        a->tv_sec++;
        a->tv_usec -= 1000000;
    }
}

static void rusage_add(struct rusage *a, const struct rusage *b)
{
    tv_add(&a->ru_utime, &b->ru_utime);
    tv_add(&a->ru_stime, &b->ru_stime);
    /* the peak resident set of each process, summed: the most the cluster
     * can have held at once */
#define F(f) a->f += b->f;
    F(ru_maxrss) F(ru_ixrss) F(ru_idrss) F(ru_isrss) F(ru_minflt) F(ru_majflt) F(ru_nswap)
    F(ru_inblock) F(ru_oublock) F(ru_msgsnd) F(ru_msgrcv) F(ru_nsignals) F(ru_nvcsw) F(ru_nivcsw)
#undef F
}

void cb_usage_add(cb_usage_t *a, const cb_usage_t *b)
{
    rusage_add(&a->self, &b->self);
    rusage_add(&a->children, &b->children);
    a->cpu_ns += b->cpu_ns;
}

void cb_usage_local(cb_usage_t *u)
{
    memset(u, 0, sizeof *u);
    struct timespec ts;
    if (syscall(SYS_getrusage, RUSAGE_SELF, &u->self) ||
        syscall(SYS_getrusage, RUSAGE_CHILDREN, &u->children) ||
        syscall(SYS_clock_gettime, CLOCK_PROCESS_CPUTIME_ID, &ts))
        cb_die("node %d: cannot read the process's CPU time: %s", cb.self, strerror(errno));
    u->cpu_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* master: node k left, having used u */
void cb_proc_usage_gone(int k, const void *u, size_t len)
{
    if (len != sizeof(cb_usage_t))
        cb_die("node 0: node %d left with a malformed account of its use (%zu bytes)", k, len);
    cb_mutex_lock(&usage_mu);
    memcpy(&usage_gone[k], u, len); /* copied: the payload need not be aligned */
    cb_mutex_unlock(&usage_mu);
}

/* master: adds the nodes gone in mask (of those the asker asked) */
static void usage_gone_add(cb_usage_t *u, uint64_t mask)
{
    cb_mutex_lock(&usage_mu);
    for (int k = 1; k < CB_MAX_NODES; k++)
        if (mask >> k & 1)
            cb_usage_add(u, &usage_gone[k]);
    cb_mutex_unlock(&usage_mu);
}

/* this node's use, frozen once it left: as the master keeps it */
static bool usage_frozen;
static cb_usage_t usage_final;

void cb_proc_usage_final(cb_usage_t *u)
{
    cb_usage_local(&usage_final);
    usage_frozen = true; /* (the comm thread's, as the answers) */
    *u = usage_final;
}

/* M_PROC P_USAGE, b: USAGE_ALL (this node's use; the master's with the
 * nodes gone outside c), or USAGE_GONE (the master: the nodes gone in c) */
static void usage_answer(const cb_msg_t *m)
{
    cb_usage_t u;
    if (m->b == USAGE_GONE)
        memset(&u, 0, sizeof u);
    else if (usage_frozen)
        u = usage_final;
    else
        cb_usage_local(&u);
    if (cb.self == 0)
        usage_gone_add(&u, m->b == USAGE_GONE ? m->c : ~m->c);
    cb_msg_t r = { .type = M_REPLY };
    cb_reply(m, &r, &u, sizeof u, false);
}

static void usage_take(int k, const cb_waiter_t *w, void *sum)
{
    if (w->len != sizeof(cb_usage_t))
        cb_die("node %d: node %d answered a question of use with %zu bytes", cb.self, k, w->len);
    cb_usage_t u;
    memcpy(&u, w->data, sizeof u);
    cb_usage_add(sum, &u);
}

void cb_proc_usage(cb_usage_t *sum)
{
    cb_usage_local(sum);
    int n = atomic_load(&cb.nnodes);
    if (n <= 1) /* no node was ever attached */
        return;
    uint64_t asked = 1ull << cb.self, ask = 0;
    for (int k = 1; k < n; k++)
        if (k != cb.self && cb_node_up(k))
            asked |= 1ull << k;
    for (int k = 0; k < n; k++)
        if (k != cb.self && (k == 0 || asked >> k & 1))
            ask |= 1ull << k;
    cb_msg_t m = { .type = M_PROC, .a = P_USAGE, .b = USAGE_ALL, .c = asked };
    if (cb.self == 0)
        usage_gone_add(sum, ~asked);
    uint64_t missing = asked & ~(cb_ask_all(ask, &m, NULL, 0, usage_take, sum) | 1ull << cb.self);
    if (!missing) /* else those left meanwhile: counted as gone */
        return;
    if (cb.self == 0) {
        usage_gone_add(sum, missing);
        return;
    }
    cb_msg_t g = { .type = M_PROC, .a = P_USAGE, .b = USAGE_GONE, .c = missing };
    cb_ask_all(1, &g, NULL, 0, usage_take, sum);
}

/* M_PROC a=kind, b=its scalar, payload: its bytes; answered (the error
 * number) if asked with a waiter, not when replayed */
void cb_on_proc(const cb_msg_t *m, const void *p, size_t len)
{
    int kind = (int)m->a;
    const char *s = p;
    if (kind == P_DLOPEN || kind == P_DLCLOSE) { /* by the loader thread, which answers */
        cb_libs_request(m, p, len, kind == P_DLOPEN);
        return;
    }
    if (kind == P_USAGE) {
        usage_answer(m);
        return;
    }
    bool ok = kind == P_SIG ? len == sizeof(struct sigaction) && m->b > 0 && m->b < NSIG
            : kind == P_UMASK || kind == P_CLEARENV ? len == 0
            : kind == P_STDIO ? len == 0 && m->b >= 1 && m->b <= 3
            : kind == P_SETENV ? len >= 3 && s[len - 1] == 0 && strlen(s) + 1 < len
            : (kind == P_CWD || kind == P_UNSETENV || kind == P_LOCALE) && len >= 2 &&
              s[len - 1] == 0;
    if (!ok)
        cb_die("node %d: malformed process change (kind %d, %zu bytes) from node %d", cb.self,
               kind, len, m->src);
    struct sigaction act;
    if (kind == P_SIG) { /* aligned */
        memcpy(&act, p, len);
        s = (const char *)&act;
    }
    int rc = apply(kind, (int64_t)m->b, s);
    if (m->waiter) {
        cb_msg_t r = { .type = M_REPLY, .a = (uint64_t)(int64_t)rc };
        cb_reply(m, &r, NULL, 0, false);
    }
}
