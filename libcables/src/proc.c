/* proc.c: what a process has once, so every node process alike: its signal
 * dispositions, its working directory, its file mode creation mask, its
 * environment and its locale.  The kernel and libc keep each of them per process, so a
 * change one node makes is made on every other node up (M_PROC), and the
 * master keeps the current ones for each node attached later (replay).
 *
 * Signal dispositions are made where they are asked (any node), then sent.
 * The others are made at the master first (the shim sends an application
 * thread's call from another node there), one change at a time: each is
 * made on every node before the next, and before the call returns, so a
 * thread that learns of the change through the program's synchronization
 * finds it on its own node.  A relative path is sent absolute, and a locale
 * as the master names all its categories after the change (a name from
 * its environment resolved there). */
#include <errno.h>
#include <limits.h>
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

enum { P_SIG, P_CWD, P_UMASK, P_SETENV, P_UNSETENV, P_CLEARENV, P_LOCALE };

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
static bool env_cleared;
static env_rec_t *env_kept;
static size_t env_n, env_cap;

/* master: one change at a time, on every node (held across the sends) */
static cb_mutex_t change_mu = CB_MUTEX_INIT;

/* ---- a change, made here ---- */

static int apply(int kind, int64_t arg, const char *s)
{
    static int (*sigact)(int, const struct sigaction *, struct sigaction *);
    static int (*set)(const char *, const char *, int);
    static int (*unset)(const char *);
    static int (*clear)(void);
    static char *(*setloc)(int, const char *);
    switch (kind) {
    case P_SIG:
        if (!sigact)
            sigact = (int (*)(int, const struct sigaction *, struct sigaction *))cb_libc("sigaction");
        return sigact((int)arg, (const struct sigaction *)(const void *)s, NULL) ? errno : 0;
    case P_CWD:
        return syscall(SYS_chdir, s) ? errno : 0;
    case P_UMASK:
        syscall(SYS_umask, (mode_t)arg);
        return 0;
    case P_SETENV:
        if (!set)
            set = (int (*)(const char *, const char *, int))cb_libc("setenv");
        return set(s, s + strlen(s) + 1, 1) ? errno : 0;
    case P_UNSETENV:
        if (!unset)
            unset = (int (*)(const char *))cb_libc("unsetenv");
        return unset(s) ? errno : 0;
    case P_CLEARENV:
        if (!clear)
            clear = (int (*)(void))cb_libc("clearenv");
        return clear() ? errno : 0;
    case P_LOCALE:
        if (!setloc)
            setloc = (char *(*)(int, const char *))cb_libc("setlocale");
        return setloc((int)arg, s) ? 0 : ENOENT;
    }
    return EINVAL;
}

/* the locale of every category, as setlocale names it */
static const char *apply_query(void)
{
    static char *(*setloc)(int, const char *);
    if (!setloc)
        setloc = (char *(*)(int, const char *))cb_libc("setlocale");
    return setloc(LC_ALL, NULL);
}

static const char *kind_name(int kind)
{
    static const char *const names[] = { "a signal disposition", "the working directory",
                                         "the file mode mask", "an environment variable",
                                         "an environment variable", "the environment",
                                         "the locale" };
    return names[kind];
}

/* made on every other node up, each acknowledging; a node that could not
 * (a directory its file system lacks) is named, once per change */
static void send_all(int kind, int64_t arg, const void *p, size_t len)
{
    for (int k = 0; k < atomic_load(&cb.nnodes); k++)
        if (k != cb.self && cb_node_up(k)) {
            cb_msg_t m = { .type = M_PROC, .a = (uint64_t)kind, .b = (uint64_t)arg };
            cb_waiter_t *w = cb_waiter_new();
            cb_call(k, &m, p, len, w);
            int rc = (int)w->value;
            cb_waiter_free(w);
            if (rc)
                fprintf(stderr, "cables: node %d could not follow %s of node %d%s%s: %s\n", k,
                        kind_name(kind), cb.self, kind == P_CWD || kind == P_LOCALE ? " to " : "",
                        kind == P_CWD || kind == P_LOCALE ? (const char *)p : "", strerror(rc));
        }
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

void cb_sig_share(int sig, const void *act)
{
    if (sig <= 0 || sig >= NSIG || atomic_load(&cb.stopping))
        return;
    if (cb.self == 0)
        keep(P_SIG, sig, act); /* made here already: kept for the nodes to come */
    send_all(P_SIG, sig, act, sizeof(struct sigaction));
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

int cb_proc_change(int op, int64_t arg, const char *s1, const char *s2, int64_t *old)
{
    static int (*put)(char *);
    if (cb.self != 0)
        return ENOTSUP;
    char *buf = NULL;
    size_t len = 0;
    int rc = 0, kind = P_CLEARENV;
    bool changed = true;
    cb_mutex_lock(&change_mu);
    switch (op) {
    case CB_PROC_CHDIR:
    case CB_PROC_FCHDIR: /* the directory as the master names it */
        kind = P_CWD;
        if (op == CB_PROC_CHDIR ? syscall(SYS_chdir, s1) : syscall(SYS_fchdir, (int)arg))
            rc = errno;
        else if (!(buf = malloc(PATH_MAX)))
            rc = ENOMEM;
        else if (syscall(SYS_getcwd, buf, PATH_MAX) < 0)
            rc = errno;
        else
            len = strlen(buf) + 1;
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
        } else if (op == CB_PROC_PUTENV) {
            if (!put)
                put = (int (*)(char *))cb_libc("putenv");
            rc = put((char *)s1) ? errno : 0;
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
        if (!(now = apply_query()) || !(buf = malloc(strlen(now) + 1))) {
            rc = ENOMEM;
            break;
        }
        len = strlen(now) + 1;
        memcpy(buf, now, len);
        arg = LC_ALL;
        break;
    }
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
}

/* master, at its start: its working directory, which a node attached later
 * (started by MPI_Comm_spawn, in the launcher's) takes */
void cb_proc_init(void)
{
    char buf[PATH_MAX];
    if (cb.self == 0 && syscall(SYS_getcwd, buf, sizeof buf) > 0)
        keep(P_CWD, 0, buf);
}

/* M_PROC a=kind, b=its scalar, payload: its bytes; answered (the error
 * number) if asked with a waiter, not when replayed */
void cb_on_proc(const cb_msg_t *m, const void *p, size_t len)
{
    int kind = (int)m->a;
    const char *s = p;
    bool ok = kind == P_SIG ? len == sizeof(struct sigaction) && m->b > 0 && m->b < NSIG
            : kind == P_UMASK || kind == P_CLEARENV ? len == 0
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
        if (cb.self == 0)
            keep(P_SIG, (int64_t)m->b, s);
    }
    int rc = apply(kind, (int64_t)m->b, s);
    if (m->waiter) {
        cb_msg_t r = { .type = M_REPLY, .a = (uint64_t)(int64_t)rc };
        cb_reply(m, &r, NULL, 0, false);
    }
}
