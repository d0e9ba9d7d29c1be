/* spawn.c: posix_spawn and the wait family.  The process's children are
 * the master's, as its descriptors and its working directory are: an
 * application thread of another node spawns at the master (a remote call
 * carrying the file, arguments, environment, file actions and attributes),
 * so the child runs on the master's machine, in the process's working
 * directory, its file actions on the process's descriptors (a pipe of the
 * program's dup2'd onto its output), its parent the master's process.
 * Before, the child was the calling node process's, and a file action
 * naming one of the master's descriptors reached whatever that node had of
 * that number.
 *
 * A wait for a child is made where the child is: at the node whose fork
 * made it (a fork copies the calling node process, which only that node
 * can do), at the master for the spawned ones; a wait for any child looks
 * at every node (wait_spread).
 *
 * The file actions are glibc's record (posix_spawn_file_actions_t's
 * actions are internal to glibc); the layout is checked once against
 * actions made by glibc itself, and where it differs the spawn stays at
 * the calling node, as before, with a message. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shim.h"

#define P(x) ((int64_t)(uintptr_t)(x))

/* ---- glibc's file actions (posix/spawn_int.h, glibc 2.35 and later) ---- */

struct glibc_action {
    enum { DO_CLOSE, DO_DUP2, DO_OPEN, DO_CHDIR, DO_FCHDIR, DO_CLOSEFROM, DO_TCSETPGRP } tag;
    union {
        struct { int fd; } close;
        struct { int fd, newfd; } dup2;
        struct { int fd; char *path; int oflag; mode_t mode; } open;
        struct { char *path; } chdir;
        struct { int fd; } fchdir;
        struct { int from; } closefrom;
        struct { int fd; } tcsetpgrp;
    } a;
};

/* one action as sent: its path, if it has one, among the strings */
struct action {
    int32_t tag, fd, newfd, oflag;
    uint32_t mode, has_path;
};

static struct action decode(const struct glibc_action *g)
{
    struct action x = { .tag = (int32_t)g->tag };
    switch (g->tag) {
    case DO_CLOSE: x.fd = g->a.close.fd; break;
    case DO_DUP2: x.fd = g->a.dup2.fd, x.newfd = g->a.dup2.newfd; break;
    case DO_OPEN:
        x.fd = g->a.open.fd, x.oflag = g->a.open.oflag, x.mode = g->a.open.mode, x.has_path = 1;
        break;
    case DO_CHDIR: x.has_path = 1; break;
    case DO_FCHDIR: x.fd = g->a.fchdir.fd; break;
    case DO_CLOSEFROM: x.fd = g->a.closefrom.from; break;
    case DO_TCSETPGRP: x.fd = g->a.tcsetpgrp.fd; break;
    default: x.tag = -1;
    }
    return x;
}

static const char *path_of(const struct glibc_action *g)
{
    return g->tag == DO_OPEN ? g->a.open.path : g->tag == DO_CHDIR ? g->a.chdir.path : NULL;
}

/* glibc's record is what this file reads: one action of each kind, made
 * by glibc, decoded as made */
static bool layout_known(void)
{
    static _Atomic int known = -1; /* two first calls make the same check */
    if (known >= 0)
        return known;
    posix_spawn_file_actions_t fa;
    bool ok = !posix_spawn_file_actions_init(&fa) && !posix_spawn_file_actions_addclose(&fa, 11) &&
              !posix_spawn_file_actions_adddup2(&fa, 12, 13) &&
              !posix_spawn_file_actions_addopen(&fa, 14, "/o", 0101, 0640) &&
              !posix_spawn_file_actions_addchdir_np(&fa, "/c") &&
              !posix_spawn_file_actions_addfchdir_np(&fa, 15) &&
              !posix_spawn_file_actions_addclosefrom_np(&fa, 16) &&
              !posix_spawn_file_actions_addtcsetpgrp_np(&fa, 17) && fa.__used == 7;
    static const struct action want[7] = {
        { DO_CLOSE, 11, 0, 0, 0, 0 },        { DO_DUP2, 12, 13, 0, 0, 0 },
        { DO_OPEN, 14, 0, 0101, 0640, 1 },   { DO_CHDIR, 0, 0, 0, 0, 1 },
        { DO_FCHDIR, 15, 0, 0, 0, 0 },       { DO_CLOSEFROM, 16, 0, 0, 0, 0 },
        { DO_TCSETPGRP, 17, 0, 0, 0, 0 },
    };
    const struct glibc_action *g = (const struct glibc_action *)(void *)fa.__actions;
    for (int i = 0; ok && i < 7; i++) {
        struct action x = decode(&g[i]);
        ok = !memcmp(&x, &want[i], sizeof x);
    }
    ok = ok && !strcmp(path_of(&g[2]), "/o") && !strcmp(path_of(&g[3]), "/c");
    posix_spawn_file_actions_destroy(&fa);
    if (!ok)
        fprintf(stderr, "cables: this libc's posix_spawn file actions are not the layout the "
                "shim reads: a spawn on a node other than the master stays there\n");
    known = ok;
    return ok;
}

/* the children this node's threads spawned at the master, not yet waited
 * for: a signal to one is sent there (kill) */
static shim_set_t spawned = SHIM_SET_INIT;

/* ---- the request ---- */

struct spawn_req {
    int32_t nargs, nenv, nacts, search; /* nenv -1: the process's environment */
    int32_t has_attr, flags, pgrp, policy;
    sigset_t sigdefault, sigmask, caller_mask;
    struct sched_param param;
};

/* the strings one after the other, each with its NUL */
static char *put(char *p, const char *s) { return stpcpy(p, s) + 1; }

static int spawn_at_master(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
                           const posix_spawnattr_t *attr, char *const argv[],
                           char *const envp[], bool search)
{
    int nacts = fa ? fa->__used : 0;
    const struct glibc_action *g = fa ? (const struct glibc_action *)(void *)fa->__actions : NULL;
    struct spawn_req q = { .nargs = shim_count(argv), .nenv = envp == environ ? -1 : shim_count(envp),
                           .nacts = nacts, .search = search, .has_attr = attr != NULL };
    if (attr) {
        short flags;
        posix_spawnattr_getflags(attr, &flags);
        q.flags = flags;
        posix_spawnattr_getpgroup(attr, &q.pgrp);
        posix_spawnattr_getschedpolicy(attr, &q.policy);
        posix_spawnattr_getschedparam(attr, &q.param);
        posix_spawnattr_getsigdefault(attr, &q.sigdefault);
        posix_spawnattr_getsigmask(attr, &q.sigmask);
    }
    pthread_sigmask(SIG_BLOCK, NULL, &q.caller_mask); /* the child's, unless the attributes say */
    size_t len = sizeof q + (size_t)nacts * sizeof(struct action) + strlen(file) + 1 +
                 shim_strings_len(argv, q.nargs) + shim_strings_len(envp, q.nenv);
    for (int i = 0; i < nacts; i++)
        if (path_of(&g[i]))
            len += strlen(path_of(&g[i])) + 1;
    char *buf = cb_malloc(len);
    if (!buf)
        return ENOMEM;
    memcpy(buf, &q, sizeof q);
    struct action *acts = (struct action *)(void *)(buf + sizeof q);
    char *p = (char *)(acts + nacts);
    p = shim_strings_put(shim_strings_put(put(p, file), argv, q.nargs), envp, q.nenv);
    for (int i = 0; i < nacts; i++) {
        acts[i] = decode(&g[i]);
        if (path_of(&g[i]))
            p = put(p, path_of(&g[i]));
    }
    pid_t got = 0;
    long rc = shim_rs_path(SHIM_RS_SPAWN, P(buf), (int64_t)len, P(&got), 0, 0, 0, 0, len, 2,
                           sizeof got, 0);
    int err = rc < 0 ? errno : 0;
    cb_free(buf);
    if (!err)
        shim_set_add(&spawned, (void *)(intptr_t)got);
    if (!err && pid)
        *pid = got;
    return err;
}

/* at the master, for another node's thread: the spawn made here */
long shim_spawn_exec(int64_t a[6], int *err)
{
    const char *buf = (const char *)(uintptr_t)a[0], *end = buf + a[1];
    struct spawn_req q;
    if (!a[0] || !a[2] || (size_t)a[1] < sizeof q || end[-1])
        return *err = EINVAL, -1;
    memcpy(&q, buf, sizeof q);
    if (q.nargs < 0 || q.nargs > a[1] || q.nenv < -1 || q.nenv > a[1] ||
        q.nacts < 0 || (size_t)q.nacts > ((size_t)a[1] - sizeof q) / sizeof(struct action))
        return *err = EINVAL, -1;
    struct action *acts = (struct action *)(void *)(buf + sizeof q);
    const char *p = (const char *)(acts + q.nacts);
    int nenv = q.nenv > 0 ? q.nenv : 0, nstr = 1 + q.nargs + nenv;
    for (int i = 0; i < q.nacts; i++) { /* a path where the kind has one */
        acts[i].has_path = acts[i].tag == DO_OPEN || acts[i].tag == DO_CHDIR;
        nstr += (int)acts[i].has_path;
    }
    const char **s = cb_malloc(((size_t)nstr + 2) * sizeof *s);
    if (!s)
        return *err = ENOMEM, -1;
    int k = 0;
    for (; k < nstr && p < end; k++, p += strlen(p) + 1)
        s[k] = p;
    long r = -1;
    if (k < nstr || p != end) {
        *err = EINVAL;
        goto out;
    }
    /* argv and the environment as vectors, NULL-ended */
    char **argv = cb_malloc(((size_t)q.nargs + 1) * sizeof *argv);
    char **envp = cb_malloc(((size_t)nenv + 1) * sizeof *envp);
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    int e = !argv || !envp ? ENOMEM : posix_spawn_file_actions_init(&fa);
    if (!e && !(e = posix_spawnattr_init(&at))) {
        memcpy(argv, s + 1, (size_t)q.nargs * sizeof *argv);
        argv[q.nargs] = NULL;
        memcpy(envp, s + 1 + q.nargs, (size_t)nenv * sizeof *envp);
        envp[nenv] = NULL;
        int sp = 1 + q.nargs + nenv;
        for (int i = 0; !e && i < q.nacts; i++) {
            const struct action *x = &acts[i];
            const char *path = x->has_path ? s[sp++] : NULL;
            switch (x->tag) {
            case DO_CLOSE: e = posix_spawn_file_actions_addclose(&fa, x->fd); break;
            case DO_DUP2: e = posix_spawn_file_actions_adddup2(&fa, x->fd, x->newfd); break;
            case DO_OPEN:
                e = posix_spawn_file_actions_addopen(&fa, x->fd, path, x->oflag, (mode_t)x->mode);
                break;
            case DO_CHDIR: e = posix_spawn_file_actions_addchdir_np(&fa, path); break;
            case DO_FCHDIR: e = posix_spawn_file_actions_addfchdir_np(&fa, x->fd); break;
            case DO_CLOSEFROM: e = posix_spawn_file_actions_addclosefrom_np(&fa, x->fd); break;
            case DO_TCSETPGRP: e = posix_spawn_file_actions_addtcsetpgrp_np(&fa, x->fd); break;
            default: e = EINVAL;
            }
        }
        /* the calling thread's signal mask, not this proxy's (all blocked) */
        short flags = (short)(q.has_attr ? q.flags : 0);
        if (!(flags & POSIX_SPAWN_SETSIGMASK))
            q.sigmask = q.caller_mask, flags |= POSIX_SPAWN_SETSIGMASK;
        if (!e && q.has_attr) {
            posix_spawnattr_setpgroup(&at, q.pgrp);
            posix_spawnattr_setschedpolicy(&at, q.policy);
            posix_spawnattr_setschedparam(&at, &q.param);
            posix_spawnattr_setsigdefault(&at, &q.sigdefault);
        }
        if (!e)
            e = posix_spawnattr_setsigmask(&at, &q.sigmask);
        if (!e)
            e = posix_spawnattr_setflags(&at, flags);
        /* the process's environment copied first: its strings may be in
         * the shared memory, which the child must not fault on */
        char **env = !e && q.nenv < 0 ? shim_private_copy(environ, false) : envp;
        if (!e && !env)
            e = ENOMEM;
        pid_t pid = 0;
        if (!e)
            e = (q.search ? posix_spawnp : posix_spawn)(&pid, s[0], &fa, &at, argv, env);
        if (env != envp)
            cb_free(env);
        posix_spawnattr_destroy(&at);
        posix_spawn_file_actions_destroy(&fa);
        if (!e) {
            memcpy((void *)(uintptr_t)a[2], &pid, sizeof pid);
            r = 0;
        }
    } else if (argv && envp) { /* the file actions made, not the attributes */
        posix_spawn_file_actions_destroy(&fa);
    }
    cb_free(argv);
    cb_free(envp);
    if (e)
        *err = e;
out:
    cb_free(s);
    return r;
}

/* ---- commands: system's and popen's ---- */

/* A command (system's, popen's) is /bin/sh -c spawned where the process's
 * descriptors are, with the calling thread's signal mask given to the
 * spawn, as the caller's own fork would have it.  At the master, for
 * another node's thread, a proxy spawns it and keeps its own mask (every
 * signal sent to the process blocked).  Before, glibc's system and popen
 * ran there with the proxy's mask emptied for the while: a signal sent to
 * the process (one every program thread blocks, for the thread that
 * sigwaits for it) could land on the proxy, run the program's handler on a
 * runtime thread or end the process, and the command ran with no signal
 * blocked, whatever its caller blocked.  glibc's system also ignores
 * SIGINT and SIGQUIT in the process while it waits, and so does the
 * master while it runs another node's command (before, a command that sent
 * SIGINT to the process ended it: tests/posix/commands.c).
 *
 * popen's streams are all made here, none by glibc's popen, so that a
 * command closes the pipes of the others, as POSIX asks, and pclose,
 * made at the master for any node's thread, finds its child. */

int64_t shim_mask_bits(void)
{
    sigset_t m;
    int64_t bits;
    pthread_sigmask(SIG_BLOCK, NULL, &m); /* the program's view (cb_sigmask) */
    memcpy(&bits, &m, sizeof bits);
    return bits;
}

void shim_mask_of(int64_t bits, sigset_t *set)
{
    sigemptyset(set);
    memcpy(set, &bits, sizeof bits);
}

struct piped {
    struct piped *next;
    FILE *f;
    int fd;
    pid_t pid;
};
static struct piped *piped; /* (piped_mu) */
static _Atomic int npiped;   /* its entries: fclose looks only where there are */
static cb_mutex_t piped_mu = CB_MUTEX_INIT;

/* The process ignores SIGINT and SIGQUIT while system's commands run (the
 * first to start saves their actions, the last to end puts them back, as
 * glibc's system); the command gets back those the process did not ignore
 * before (dfl). */
static cb_mutex_t quiet_mu = CB_MUTEX_INIT;
static int quiet_n;
static struct sigaction quiet_was[2];
static const int quiet_sig[2] = { SIGINT, SIGQUIT };

static void quiet_begin(sigset_t *dfl)
{
    struct sigaction ign;
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    sigemptyset(dfl);
    cb_mutex_lock(&quiet_mu);
    for (int i = 0; i < 2; i++) {
        if (quiet_n == 0)
            REAL(sigaction)(quiet_sig[i], &ign, &quiet_was[i]);
        if (quiet_was[i].sa_handler != SIG_IGN)
            sigaddset(dfl, quiet_sig[i]);
    }
    quiet_n++;
    cb_mutex_unlock(&quiet_mu);
}

static void quiet_end(void)
{
    cb_mutex_lock(&quiet_mu);
    if (--quiet_n == 0)
        for (int i = 0; i < 2; i++)
            REAL(sigaction)(quiet_sig[i], &quiet_was[i], NULL);
    cb_mutex_unlock(&quiet_mu);
}

/* dfl: signals the command takes with their default actions (or NULL) */
static int spawn_sh(pid_t *pid, const char *cmd, int64_t mask, const posix_spawn_file_actions_t *fa,
                    const sigset_t *dfl)
{
    /* private copies: the child runs in this memory until its exec, and
     * must not fault on the shared memory */
    size_t n = strlen(cmd) + 1;
    char *c = cb_malloc(n);
    char **env = shim_private_copy(environ, false);
    posix_spawnattr_t at;
    int e = !c || !env ? ENOMEM : posix_spawnattr_init(&at);
    if (!e) {
        memcpy(c, cmd, n);
        char *argv[] = { "sh", "-c", c, NULL };
        sigset_t m;
        shim_mask_of(mask, &m);
        e = posix_spawnattr_setsigmask(&at, &m);
        if (!e && dfl)
            e = posix_spawnattr_setsigdefault(&at, dfl);
        if (!e)
            e = posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK |
                                                  (dfl ? POSIX_SPAWN_SETSIGDEF : 0));
        if (!e)
            e = REAL(posix_spawn)(pid, "/bin/sh", fa, &at, argv, env);
        posix_spawnattr_destroy(&at);
    }
    cb_free(c);
    cb_free(env);
    return e;
}

/* no cancellation point (glibc's pclose waits with cancellation off):
 * the child is reaped */
static int wait_command(pid_t pid)
{
    int st;
    long w;
    while ((w = syscall(SYS_wait4, pid, &st, 0, NULL)) == -1 && errno == EINTR)
        ;
    return w == pid ? st : -1;
}

int shim_system_here(const char *cmd, int64_t mask)
{
    pid_t pid;
    sigset_t dfl;
    quiet_begin(&dfl);
    int e = spawn_sh(&pid, cmd, mask, NULL, &dfl);
    /* as glibc's: a shell that could not start ended with 127 */
    int st = e ? (errno = e, W_EXITCODE(127, 0)) : wait_command(pid);
    quiet_end();
    return st;
}

FILE *shim_popen_here(const char *cmd, const char *mode, int64_t mask)
{
    bool rd = false, wr = false, cloexec = false, bad = !cmd || !mode;
    for (const char *m = mode; !bad && *m; m++) {
        rd |= *m == 'r';
        wr |= *m == 'w';
        cloexec |= *m == 'e';
        bad = !strchr("rwe", *m);
    }
    if (bad || rd == wr)
        return errno = EINVAL, NULL;
    struct piped *p = cb_malloc(sizeof *p);
    int fds[2];
    if (!p || REAL(pipe2)(fds, O_CLOEXEC)) {
        if (!p)
            errno = ENOMEM;
        cb_free(p);
        return NULL;
    }
    int mine = fds[!rd], its = fds[rd], std = rd ? 1 : 0;
    FILE *f = REAL(fdopen)(mine, rd ? "r" : "w");
    posix_spawn_file_actions_t fa;
    int e = !f ? errno : posix_spawn_file_actions_init(&fa);
    if (!e) {
        cb_mutex_lock(&piped_mu); /* no stream closed while its pipe is named */
        e = posix_spawn_file_actions_adddup2(&fa, its, std); /* (its close-on-exec cleared) */
        for (struct piped *q = piped; q && !e; q = q->next)
            if (q->fd != std) /* (that one the dup2 closed) */
                e = posix_spawn_file_actions_addclose(&fa, q->fd);
        pid_t pid = 0;
        if (!e)
            e = spawn_sh(&pid, cmd, mask, &fa, NULL);
        if (!e) {
            *p = (struct piped){ .next = piped, .f = f, .fd = mine, .pid = pid };
            piped = p;
            npiped++;
        }
        cb_mutex_unlock(&piped_mu);
        posix_spawn_file_actions_destroy(&fa);
    }
    syscall(SYS_close, its);
    if (e) {
        if (f)
            REAL(fclose)(f);
        else
            syscall(SYS_close, mine);
        cb_free(p);
        return errno = e, NULL;
    }
    if (!cloexec) /* as glibc's: a later child of the program's has it */
        syscall(SYS_fcntl, mine, F_SETFD, 0);
    return f;
}

/* pclose, and fclose of popen's stream (glibc's is a pclose too): its
 * status, once its child ended; -2 where f is no stream of popen's */
int shim_pclose_here(FILE *f)
{
    if (!atomic_load(&npiped))
        return -2;
    cb_mutex_lock(&piped_mu);
    struct piped **pp = &piped, *p;
    while ((p = *pp) && p->f != f)
        pp = &p->next;
    if (p) {
        *pp = p->next;
        npiped--;
    }
    cb_mutex_unlock(&piped_mu);
    if (!p)
        return -2;
    pid_t pid = p->pid;
    cb_free(p);
    shim_fclose_stream(f);
    return wait_command(pid);
}

/* ---- the calls ---- */

/* the children this node's own fork made, not yet waited for */
static shim_set_t own_children = SHIM_SET_INIT;

void shim_own_child(pid_t pid) { shim_set_add(&own_children, (void *)(intptr_t)pid); }
bool shim_is_own_child(pid_t pid) { return shim_set_has(&own_children, (void *)(intptr_t)pid, false); }

/* a call of another node's application thread, made at the master */
static bool to_master(void)
{
    return cb_app_thread && cb.multi && cb.self != 0 && !cb.forked && !atomic_load(&cb.ending);
}

static int spawn_any(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
                     const posix_spawnattr_t *attr, char *const argv[], char *const envp[],
                     bool search)
{
    if (to_master() && layout_known())
        return spawn_at_master(pid, file, fa, attr, argv, envp, search);
    pid_t child = 0;
    int e = (search ? REAL(posix_spawnp) : REAL(posix_spawn))(&child, file, fa, attr, argv, envp);
    if (!e && to_master()) /* this node's own child */
        shim_own_child(child);
    if (!e && pid)
        *pid = child;
    return e;
}

int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
                const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
    return spawn_any(pid, path, fa, attr, argv, envp, false);
}

int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
                 const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
    return spawn_any(pid, file, fa, attr, argv, envp, true);
}

/* a wait of an application thread in a run of several nodes: made where
 * the children are (wait_spread) */
static bool spread(void)
{
    return cb_app_thread && cb.multi && !cb.forked && !atomic_load(&cb.ending);
}

/* a wait for child pid found no child: child pid, or (-1) every child of
 * this node's own, is gone (reaped by the kernel: SIGCHLD ignored, or
 * waited for by another node's thread) */
static void forget_children(pid_t pid)
{
    if (pid > 0)
        shim_set_has(&own_children, (void *)(intptr_t)pid, true);
    if (pid != -1)
        return;
    cb_mutex_lock(&own_children.mu);
    own_children.n = 0;
    cb_mutex_unlock(&own_children.mu);
}

/* child pid, waited for, ended: it is no more (of this node's own, or
 * spawned at the master for this node's threads) */
static void gone(pid_t pid)
{
    shim_set_has(&own_children, (void *)(intptr_t)pid, true);
    shim_set_has(&spawned, (void *)(intptr_t)pid, true);
}

/* One wait: wait4's (b its pid) or waitid's (b its idtype, c its id). */
struct wait_call {
    int64_t op, b, c;
    int options;
    int status;
    struct rusage ru;
    siginfo_t si;
};

static bool waited_one(const struct wait_call *w, long r)
{
    return w->op == SYS_wait4 ? r > 0 : r == 0 && w->si.si_pid != 0;
}

/* the wait made here, with options */
static long wait_local(struct wait_call *w, int options)
{
    memset(&w->si, 0, sizeof w->si);
    if (w->op == SYS_wait4)
        return REAL(wait4)((pid_t)w->b, &w->status, options, &w->ru);
    return REAL(waitid)((idtype_t)w->b, (id_t)w->c, &w->si, options);
}

/* the wait made at node k without waiting (WNOHANG) */
static long wait_once(int k, struct wait_call *w)
{
    if (k == cb.self)
        return wait_local(w, w->options | WNOHANG);
    cb_wait_out_t o;
    long r = cb_wait_at(k, w->op, w->b, w->c, w->options, &o);
    w->status = o.status;
    w->ru = o.ru;
    w->si = o.si;
    return r;
}

/* the wait made at node k (this one, or the master), waiting there */
static long wait_block(int k, struct wait_call *w)
{
    if (k == cb.self)
        return wait_local(w, w->options);
    memset(&w->si, 0, sizeof w->si);
    cb_rsys_t q;
    if (w->op == SYS_wait4) {
        q = shim_rq(SYS_wait4, w->b, P(&w->status), w->options, P(&w->ru), 0, 0);
        shim_rq_with(&q, 1, RSYS_OUT, sizeof w->status);
        shim_rq_with(&q, 3, RSYS_OUT, sizeof w->ru);
    } else {
        q = shim_rq(SYS_waitid, w->b, w->c, P(&w->si), w->options, 0, 0);
        shim_rq_with(&q, 2, RSYS_IN | RSYS_OUT, sizeof w->si);
    }
    return cb_rsys(&q);
}

/* A wait for a child is made where the child is: a fork copies the
 * calling node's process, so its child is that node's (the master's for
 * spawns and commands).  The wait is tried at each node without waiting,
 * this one first, then the master, then the others (a wait for one pid
 * stops at the first node that has it): a child that ended is taken where
 * it is found; no node with a child is ECHILD; WNOHANG answers 0.  Else,
 * where the children are at one node, this one or the master, the wait
 * waits there (as the caller's own wait, or a remote call at the master:
 * a handler or a cancellation interrupts it); where they are elsewhere or
 * at several nodes, the rounds are made again with a pause between them
 * (1 ms, doubled up to 10 ms), the program's signals held meanwhile: one
 * that comes is taken (in the pause, or after a round that waits next)
 * and let in, its handler runs, and the wait ends with EINTR unless the
 * handler has SA_RESTART, after one more round (as the kernel's wait, which
 * looks at the children first: a child that ended is returned); a
 * cancellation is acted on at the next round.  Before, a wait went to the master
 * unless the calling node had children of its own: main's wait for a
 * child a thread of another node forked gave ECHILD
 * (tests/posix/reap_elsewhere.c). */
/* a signal of take, come while held: pending again (let in, its handler
 * runs); 1 if that handler ends a wait (no SA_RESTART), else 0; -1: none */
static int took_signal(const sigset_t *take, const struct timespec *ts)
{
    siginfo_t si;
    long s = syscall(SYS_rt_sigtimedwait, take, &si, ts, _NSIG / 8);
    if (s <= 0 || s == cb_rsig)
        return -1;
    cb_sig_pend_again(&si);
    return !cb_sig_restarts((int)s);
}

static long wait_spread(struct wait_call *w, bool by_pid)
{
    static const struct timespec zero;
    long ms = 1;
    bool intr = false; /* a handler without SA_RESTART ran: the round after ends it */
    for (;;) {
        cb_thr_t *t = cb_thr;
        if (t && atomic_load(&t->cancel) && !t->cancel_off)
            cb_cancel_act(); /* (unwinds; if not, the wait goes on) */
        /* the program's signals held through the round and the pause:
         * one that comes meanwhile is taken in the pause */
        sigset_t was, take;
        bool held = cb_app_signals_hold_taking(cb_rsig, &was, &take);
        int n = atomic_load(&cb.nnodes), where = -1, nwhere = 0;
        long r = 0;
        bool done = false;
        for (int i = -1; i < n && !done; i++) {
            int k = i < 0 ? cb.self : i;
            if (i >= 0 && (k == cb.self || !cb_node_up(k)))
                continue;
            r = wait_once(k, w);
            if (r == -1 && errno == ECHILD)
                continue;
            if (r == -1 || waited_one(w, r)) {
                done = true;
                break;
            }
            where = k, nwhere++;
            if (by_pid)
                break;
        }
        if (!done && !nwhere)
            r = -1, errno = ECHILD, done = true;
        else if (!done && w->options & WNOHANG)
            r = 0, done = true; /* (waitid's siginfo zeroed) */
        int e = errno;
        if (done || intr || (nwhere == 1 && (where == cb.self || where == 0))) {
            /* waiting next: a signal that came in the round ends it as one
             * that comes while it waits */
            if (held && !done && !intr)
                intr = took_signal(&take, &zero) == 1;
            if (held)
                cb_app_signals_let(&was); /* (a handler that was held runs now) */
            if (!done && intr)
                return errno = EINTR, -1;
            errno = e;
            return done ? r : wait_block(where, w);
        }
        /* the pause: a signal taken ends it, and is let in (its handler
         * runs); one whose handler has no SA_RESTART ends the wait */
        struct timespec ts = { 0, ms * 1000000 };
        ms = ms < 5 ? ms * 2 : 10;
        if (!held) { /* no handler of the program's */
            syscall(SYS_nanosleep, &ts, NULL);
            continue;
        }
        intr = took_signal(&take, &ts) == 1;
        cb_app_signals_let(&was);
    }
}

/* a child of this node's own that ended is no more */
static void reaped(pid_t pid, int status)
{
    if (pid > 0 && (WIFEXITED(status) || WIFSIGNALED(status)))
        gone(pid);
}

pid_t wait4(pid_t pid, int *status, int options, struct rusage *ru)
{
    int st = 0, saved = errno;
    pid_t r;
    if (!spread()) {
        r = REAL(wait4)(pid, &st, options, ru);
        if (r < 0 && errno == ECHILD) /* reaped by the kernel (SIGCHLD ignored) */
            forget_children(pid);
        reaped(r, st);
    } else {
        struct wait_call w = { .op = SYS_wait4, .b = pid, .options = options };
        r = (pid_t)wait_spread(&w, pid > 0);
        if (r < 0 && errno == ECHILD)
            forget_children(pid);
        if (r == 0)
            errno = saved; /* (WNOHANG: another node's ECHILD not left) */
        if (r > 0) {
            st = w.status;
            reaped(r, st);
            if (ru)
                *ru = w.ru;
            errno = saved;
        }
    }
    if (r > 0 && status)
        *status = st;
    return r;
}

pid_t waitpid(pid_t pid, int *status, int options) { return wait4(pid, status, options, NULL); }
pid_t wait(int *status) { return wait4(-1, status, 0, NULL); }
pid_t wait3(int *status, int options, struct rusage *ru) { return wait4(-1, status, options, ru); }

/* A signal to a child this node's threads spawned at the master is sent
 * there (on its machine); any other pid is this node's to name. */
static bool spawned_there(pid_t pid)
{
    return pid > 0 && to_master() && shim_set_has(&spawned, (void *)(intptr_t)pid, false);
}

int kill(pid_t pid, int sig)
{
    pid = shim_pid(pid);
    if (!spawned_there(pid))
        return REAL(kill)(pid, sig);
    cb_rsys_t q = shim_rq(SYS_kill, pid, sig, 0, 0, 0, 0);
    return (int)cb_rsys(&q);
}

/* sigqueue's: the kernel takes a queued signal's record from any sender */
int sigqueue(pid_t pid, int sig, const union sigval value)
{
    pid = shim_pid(pid);
    if (!spawned_there(pid))
        return REAL(sigqueue)(pid, sig, value);
    siginfo_t info;
    memset(&info, 0, sizeof info);
    info.si_signo = sig;
    info.si_code = SI_QUEUE;
    info.si_pid = getpid(); /* the program's */
    info.si_uid = getuid();
    info.si_value = value;
    cb_rsys_t q = shim_rq(SYS_rt_sigqueueinfo, pid, sig, P(&info), 0, 0, 0);
    shim_rq_with(&q, 2, RSYS_IN, sizeof info);
    return (int)cb_rsys(&q);
}

int waitid(idtype_t type, id_t id, siginfo_t *info, int options)
{
    pid_t pid = type == P_PID ? (pid_t)id : type == P_PGID ? -(pid_t)id : -1;
    siginfo_t mine;
    siginfo_t *in = info ? info : &mine;
    int saved = errno;
    long r;
    if (!spread() || (type != P_PID && type != P_PGID && type != P_ALL)) {
        memset(in, 0, sizeof *in);
        r = REAL(waitid)(type, id, in, options);
    } else {
        struct wait_call w = { .op = SYS_waitid, .b = type, .c = (int64_t)id, .options = options };
        r = wait_spread(&w, type == P_PID);
        if (r == 0) {
            *in = w.si;
            errno = saved;
        }
    }
    if (r && errno == ECHILD && type != P_PIDFD)
        forget_children(type == P_ALL ? -1 : type == P_PID ? pid : 0);
    if (!r && !(options & WNOWAIT) && in->si_pid > 0 &&
        (in->si_code == CLD_EXITED || in->si_code == CLD_KILLED || in->si_code == CLD_DUMPED))
        gone(in->si_pid);
    return r ? -1 : 0;
}
