/* rsys.c: remote system calls.  The master's descriptor table is the
 * program's, as a process has one: an application thread on another node
 * makes its calls on descriptors (and on the stdio streams above them, the
 * shim's io.c decides which) at the master.  The call goes by message
 * (M_RSYS) with the bytes the call reads; a proxy thread at the master makes
 * it with those bytes in private buffers and answers with its result, its
 * errno and the bytes it stored.  So a file opened by main is written by a
 * thread on any node, with the one file offset, the one stdio buffer and
 * the one lock of the stream; a socket accepted anywhere is served
 * anywhere.
 *
 * The proxies are a pool: a call takes one for as long as it runs, so a
 * call that blocks (a read of a pipe, an accept) holds one as it would hold
 * its own thread, and the calls of other threads go on.  A proxy is started
 * when a call finds none idle; it then waits for the next call, and ends
 * after PROXY_IDLE_NS idle while more than PROXY_KEEP others are idle.  At
 * most PROXY_MAX run (beyond them, or where no thread can be started, calls
 * queue, and a message says so once).  Before, at most 256 ran: a program
 * whose threads of other nodes blocked more calls at once (a thread per
 * connection) waited for ever where the call that would end them queued
 * behind them.  Proxies block the
 * signals sent to the process (not theirs to take), not those a fault
 * raises: a stream of the master's may be in the shared memory, and its
 * page faults go to the fault path as anyone's.
 *
 * A call is interrupted as the caller's own would be: when a handler
 * without SA_RESTART runs on the waiting thread, or its cancellation is
 * asked, the caller asks the master (M_RSYS, a = RSYS_INTR), which takes
 * the call out of the queue or sends the proxy making it cb_rsig, whose
 * handler (without SA_RESTART) makes its system call return EINTR; until
 * the call ends, the signal is sent again every 250 ms (it may come just
 * before the proxy enters the call).  A call that ended first answers as
 * it ended (no data is lost); one that was interrupted answers EINTR, and
 * a cancelled caller then acts on its cancellation (those calls are
 * cancellation points, as their kernel calls).  Only calls that wait are
 * interrupted (interruptible()).  Before, a thread blocked
 * in a read of a master's pipe could be neither interrupted nor
 * cancelled: its join waited for ever.  The SIGPIPE or SIGXFSZ a call
 * raises is the caller's (raised_here).
 *
 * While a call waits, the program's signals are held, so that a handler
 * that leaves by siglongjmp finds the call ended: the wait takes a signal
 * that comes (cb_waiter_wait_held: the reply's wake is cb_rsig, ignored
 * off the master).  A call that waits (interruptible()) is interrupted as
 * above; when it has ended the signal is queued again (its siginfo kept)
 * and let in, and a call a handler with SA_RESTART interrupted is then
 * made again, as the kernel restarts its own (a system call; a stream's
 * call then goes on as one made whole: stdio would lose what it read).  A
 * call made whole is waited for GRACE_NS first, then the signal is let in while it goes on
 * (a long one: a pclose, a watchdog's handler).  Before, a jump out of a
 * read left the read running at the master, and the bytes it read went
 * nowhere. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h> /* (snprintf) */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"

#define PROXY_MAX 4096
#define PROXY_KEEP 16
#define PROXY_IDLE_NS 30000000000ull
#define GRACE_NS 50000000ull /* (cb_rsys) */
enum { RSYS_CALL, RSYS_INTR }; /* M_RSYS a */

long (*cb_rsys_lib)(int64_t op, int64_t arg[6], int *err);
int cb_rsig;

/* ---- the caller's side ---- */

/* The calls a handler or a cancellation interrupts: those that wait (on a
 * pipe, a socket, a lock, a child, a FIFO's other end), all cancellation
 * points but flock's, and the shim's reads and writes of a stream (fgets,
 * fgetc, getdelim, fread, fwrite, fputc, fflush: libc's read or write
 * inside ends with EINTR, and the stream says so); the others (the
 * runtime's, the rest of stdio's, a file's) are made whole. */
static bool interruptible(const cb_rsys_t *r, bool *restart)
{
    *restart = true;
    if (r->op >= CB_RSYS_LIB)
        return r->waits;
    switch (r->op) {
    case SYS_poll: case SYS_ppoll: case SYS_select: case SYS_pselect6:
    case SYS_epoll_wait: case SYS_epoll_pwait:
        *restart = false; /* EINTR after any handler, as the kernel's */
        return true;
    case SYS_read: case SYS_readv: case SYS_write: case SYS_writev:
    case SYS_pread64: case SYS_pwrite64: case SYS_preadv: case SYS_pwritev:
    case SYS_recvfrom: case SYS_recvmsg: case SYS_recvmmsg:
    case SYS_sendto: case SYS_sendmsg: case SYS_sendmmsg:
    case SYS_accept: case SYS_accept4: case SYS_connect:
    case SYS_wait4: case SYS_waitid: case SYS_flock:
    case SYS_splice: case SYS_tee: case SYS_copy_file_range: case SYS_sendfile:
    case SYS_openat: /* (a FIFO's waits for the other end) */
        return true;
    case SYS_fcntl:
        return r->arg[1] == F_SETLKW || r->arg[1] == F_OFD_SETLKW;
    }
    return false;
}

void cb_sig_pend_again(const siginfo_t *si)
{
    syscall(SYS_rt_tgsigqueueinfo, cb_pid(), syscall(SYS_gettid), si->si_signo, si);
}

bool cb_sig_restarts(int sig)
{
    struct sigaction sa;
    return cb_sigaction(sig, NULL, &sa) == 0 && (sa.sa_flags & SA_RESTART);
}

long cb_rsys(cb_rsys_t *r)
{
    int saved = errno; /* a call that succeeds leaves it (the wait may not) */
    size_t inlen = sizeof *r;
    for (uint32_t i = 0; i < r->nbuf; i++)
        if (r->buf[i].flags & RSYS_IN)
            inlen += r->buf[i].len;
    uint8_t *req = malloc(inlen);
    if (!req)
        return errno = ENOMEM, -1;
    memcpy(req, r, sizeof *r);
    size_t at = sizeof *r;
    for (uint32_t i = 0; i < r->nbuf; i++)
        if (r->buf[i].flags & RSYS_IN) { /* the program's memory: loads that fault as its own */
            memcpy(req + at, (const void *)(uintptr_t)r->arg[r->buf[i].arg], r->buf[i].len);
            at += r->buf[i].len;
        }
    cb_waiter_t *w = cb_waiter_new();
    cb_msg_t m = { .type = M_RSYS, .a = RSYS_CALL };
    bool restart, intr = cb_app_thread && cb_thr && interruptible(r, &restart);
    /* the program's handlers wait for the call's end (one may leave by
     * siglongjmp), as the kernel's wait for a call it does not interrupt */
    sigset_t was, take;
    bool held = cb_app_thread && cb_thr && cb.self != 0 &&
                cb_app_signals_hold_taking(cb_rsig, &was, &take);
    if (held)
        w->wake_tid = (pid_t)syscall(SYS_gettid);
    siginfo_t si;
    bool took = false; /* si, to queue again once the call has ended */
    uint64_t t0 = cb_now_ns();
    cb_call_post(0, &m, req, inlen, w);
    int how;
    if (!held) {
        how = intr ? cb_waiter_wait_intr(w, restart) : (cb_waiter_wait(w), 1);
    } else {
        how = cb_waiter_wait_held(w, &take, &si, intr);
        took = how == -2;
        /* a stream's call (stdio's, made by libc at the master) whose
         * handler has SA_RESTART goes on, as where stdio's read or write
         * is restarted by the kernel: interrupted, stdio takes the EINTR,
         * and what it read already (a part of fgets' line) or the error
         * it keeps is lost to the call made again.  Before, a thread of
         * another node reading lines from a pipe missed parts of them. */
        bool goes_on = took && intr && r->waits == CB_RSYS_STDIO && cb_sig_restarts(si.si_signo);
        /* a call made whole (or going on) that a signal found waiting: its
         * handler waits for the call's end a while (a file's is quick),
         * then runs meanwhile, as it did before the signals were held (a
         * watchdog's handler during a pclose; one that leaves by siglongjmp
         * then leaves this call's wait behind, and what a stream's call
         * read goes nowhere); a stream's call still ends for a
         * cancellation or a handler without SA_RESTART */
        if (took && (!intr || goes_on)) {
            how = 1;
            if (!cb_waiter_wait_until(w, cb_now_ns() + GRACE_NS)) {
                cb_sig_pend_again(&si);
                took = held = false;
                cb_app_signals_let(&was);
                if (goes_on)
                    how = cb_waiter_wait_intr(w, true);
                else
                    cb_waiter_wait(w);
            }
        }
    }
    /* a cancellation: a call that ends soon is left to end (a cleanup
     * handler's, once the cancellation is acted on) */
    if (how == -1 && cb_waiter_wait_until(w, cb_now_ns() + 200000000ull))
        how = 1;
    if (how != 1) {
        cb_msg_t i = { .type = M_RSYS, .a = RSYS_INTR, .b = (uintptr_t)w };
        cb_send(0, &i, NULL, 0, false);
        cb_waiter_wait(w);
    }
    STAT_ADD(remote_calls, 1);
    STAT_ADD(remote_call_ns, cb_now_ns() - t0);
    free(req);
    long res = (long)w->value;
    int err = (int)w->value2;
    /* a signal taken from the wait, its handler with SA_RESTART: the call
     * interrupted before it did anything is made again once it ran */
    bool again = took && intr && restart && res == -1 && err == EINTR && w->value3 == 0 &&
                 cb_sig_restarts(si.si_signo);
    /* cancelled (the cancellation's own signal may have ended the wait
     * first): acted on below, which unwinds; if it does not, glibc acts on
     * the cancellation already (the thread was cancelled at one of glibc's
     * own cancellation points, and this is a call of its cleanup handler):
     * the call, interrupted before it did anything, is made again, whole,
     * as natively.  Before, it gave EINTR (a cleanup's read lost). */
    bool cancelled = how != 1 && res == -1 && err == EINTR && w->value3 == 0 &&
                     atomic_load(&cb_thr->cancel) && !cb_thr->cancel_off && r->op != SYS_flock;
    /* the answer: the length of each buffer's bytes, then the bytes */
    const uint8_t *p = w->data;
    size_t left = w->len, need = (size_t)r->nbuf * sizeof(uint64_t);
    if (!again && !cancelled && w->value3 == 0 && left >= need) {
        const uint64_t *lens = (const uint64_t *)(const void *)p;
        at = need;
        for (uint32_t i = 0; i < r->nbuf; i++) {
            uint64_t n = lens[i];
            if (n > r->buf[i].len || n > left - at)
                cb_die("node %d: remote call %lld: answer of %zu bytes does not fit", cb.self,
                       (long long)r->op, left);
            r->buf[i].len = n;
            if (n)
                memcpy((void *)(uintptr_t)r->arg[r->buf[i].arg], p + at, n);
            at += n;
        }
    } else if (w->value3 != 0) {
        res = -1;
        err = (int)w->value3; /* the master could not take the call (ENOMEM) */
    }
    uint64_t raised = (uint64_t)w->value4;
    free(w->data);
    cb_waiter_free(w);
    if (took) /* its handler may jump out: nothing is left to do */
        cb_sig_pend_again(&si);
    if (held)
        cb_app_signals_let(&was);
    if (cancelled)
        cb_cancel_act(); /* (marks the thread: the call made again waits) */
    if (again || cancelled) {
        errno = saved;
        return cb_rsys(r);
    }
    for (int sig = 1; sig < 64 && cb_app_thread; sig++) /* the call's own signals (raised_here) */
        if (raised >> (sig - 1) & 1)
            syscall(SYS_tgkill, cb_pid(), syscall(SYS_gettid), sig);
    /* err: also a failure that is not -1 (a NULL stream) */
    errno = err ? err : saved;
    return res;
}

/* ---- the master's side: the proxies ---- */

typedef struct job {
    struct job *next;
    struct job *run_next; /* in the list of the running */
    pid_t proxy;          /* the proxy making it (running) */
    _Atomic bool intr;    /* its caller asked to interrupt it */
    cb_msg_t m;
    size_t len;
    uint8_t p[]; /* the request */
} job_t;

static cb_mutex_t pool_mu = CB_MUTEX_INIT;
static job_t *head, *tail;
static job_t *running; /* (pool_mu) */
static uint32_t queued, idle, started; /* a job is taken by an idle proxy, or one started */
static _Atomic uint32_t jobs_seq; /* proxies sleep on it */

/* raised: the signals the call raised for its thread (bit s - 1) */
static void answer(const cb_msg_t *req, long res, int err, int refused, uint64_t raised, void *payload,
                   size_t len)
{
    cb_msg_t r = { .type = M_REPLY, .a = (uint64_t)(int64_t)res, .b = (uint64_t)err,
                   .c = (uint64_t)refused, .d = raised };
    cb_reply(req, &r, payload, len, payload != NULL);
}

/* The signals a call raises for the thread that makes it (a write into a
 * pipe or socket no one reads: SIGPIPE; past RLIMIT_FSIZE: SIGXFSZ) are
 * its caller's, which raises them for itself (cb_rsys): its handler runs
 * there, its mask keeps them pending, or they end the process, as where
 * the caller made the call itself.  A proxy blocks them, so they wait on
 * its thread until taken here.  Before, a thread of another node writing
 * into a pipe whose reader had gone got EPIPE alone. */
static uint64_t raised_here(void)
{
    uint64_t set = 1ull << (SIGPIPE - 1) | 1ull << (SIGXFSZ - 1), got = 0;
    struct timespec zero = { 0, 0 };
    long s;
    while ((s = syscall(SYS_rt_sigtimedwait, &set, NULL, &zero, sizeof set)) > 0)
        got |= 1ull << (s - 1);
    return got;
}

static void run(job_t *j)
{
    cb_rsys_t r;
    if (j->len < sizeof r || (memcpy(&r, j->p, sizeof r), r.nbuf > CB_RSYS_BUFS)) {
        answer(&j->m, -1, 0, EINVAL, 0, NULL, 0);
        return;
    }
    void *b[CB_RSYS_BUFS] = { 0 };
    size_t at = sizeof r, outlen = (size_t)r.nbuf * sizeof(uint64_t);
    int refused = 0;
    for (uint32_t i = 0; i < r.nbuf && !refused; i++) {
        uint64_t n = r.buf[i].len;
        if (r.buf[i].arg >= 6 || (r.buf[i].flags & RSYS_IN && n > j->len - at)) {
            refused = EINVAL;
            break;
        }
        if (!(b[i] = calloc(1, n ? n : 1))) {
            refused = ENOMEM;
            break;
        }
        if (r.buf[i].flags & RSYS_IN) {
            memcpy(b[i], j->p + at, n);
            at += n;
        }
        if (r.buf[i].flags & RSYS_OUT)
            outlen += n;
        r.arg[r.buf[i].arg] = (int64_t)(uintptr_t)b[i];
    }
    long res = -1;
    int err = 0;
    if (!refused && atomic_load(&j->intr)) {
        err = EINTR; /* interrupted before it began */
    } else if (!refused) {
        if (r.op < CB_RSYS_LIB) {
            res = syscall(r.op, r.arg[0], r.arg[1], r.arg[2], r.arg[3], r.arg[4], r.arg[5]);
            err = res == -1 ? errno : 0;
        } else {
            res = cb_rsys_lib ? cb_rsys_lib(r.op, r.arg, &err) : (err = ENOSYS, -1);
        }
    }
    uint8_t *out = refused ? NULL : malloc(outlen ? outlen : 1);
    if (!refused && !out)
        refused = ENOMEM;
    if (!refused) {
        uint64_t *lens = (uint64_t *)(void *)out;
        at = (size_t)r.nbuf * sizeof(uint64_t);
        for (uint32_t i = 0; i < r.nbuf; i++) {
            uint64_t n = 0;
            if (r.buf[i].flags & RSYS_OUT && res != -1) {
                n = r.buf[i].len;
                if (r.buf[i].flags & RSYS_UPTO_RES) { /* as many as the result says */
                    uint64_t unit = r.buf[i].flags >> 16 ? r.buf[i].flags >> 16 : 1;
                    n = res < 0 ? 0 : (uint64_t)res <= n / unit ? (uint64_t)res * unit : n;
                }
                else if (r.buf[i].flags & RSYS_STRING) {
                    size_t s = strnlen(b[i], n);
                    n = s < n ? s + 1 : n;
                } else if (r.buf[i].flags & RSYS_UPTO_LEN && i + 1 < r.nbuf &&
                           r.buf[i + 1].len >= sizeof(socklen_t)) {
                    socklen_t l; /* the address's length: the kernel wrote no more */
                    memcpy(&l, b[i + 1], sizeof l);
                    n = l < n ? l : n;
                }
            }
            lens[i] = n;
            memcpy(out + at, b[i], n);
            at += n;
        }
        outlen = at;
    }
    for (uint32_t i = 0; i < r.nbuf; i++)
        free(b[i]);
    answer(&j->m, res, err, refused, raised_here(), out, refused ? 0 : outlen);
}

static void on_rsig(int sig) { (void)sig; } /* its call returns EINTR */

static void *proxy_main(void *arg)
{
    (void)arg;
    cb_block_process_signals();
    sigset_t r;
    sigemptyset(&r);
    sigaddset(&r, cb_rsig);
    pthread_sigmask(SIG_UNBLOCK, &r, NULL);
    for (;;) {
        cb_mutex_lock(&pool_mu);
        while (!head) {
            uint32_t seen = atomic_load(&jobs_seq);
            idle++;
            cb_mutex_unlock(&pool_mu);
            bool waited = cb_futex_wait_until(&jobs_seq, seen, cb_now_ns() + PROXY_IDLE_NS) == -1 &&
                          errno == ETIMEDOUT;
            cb_mutex_lock(&pool_mu);
            idle--;
            if (waited && !head && idle > PROXY_KEEP) { /* one of many idle for long: it ends */
                started--;
                cb_mutex_unlock(&pool_mu);
                return NULL;
            }
        }
        job_t *j = head;
        if (!(head = j->next))
            tail = NULL;
        queued--;
        j->proxy = gettid();
        j->run_next = running;
        running = j;
        cb_mutex_unlock(&pool_mu);
        run(j);
        cb_mutex_lock(&pool_mu);
        for (job_t **p = &running; *p; p = &(*p)->run_next)
            if (*p == j) {
                *p = j->run_next;
                break;
            }
        cb_mutex_unlock(&pool_mu);
        free(j);
    }
    return NULL;
}

/* comm thread (master): node src's call of waiter w interrupted */
static void interrupt(int src, uint64_t w)
{
    job_t *gone = NULL;
    cb_mutex_lock(&pool_mu);
    for (job_t **p = &head, *prev = NULL; *p; prev = *p, p = &(*p)->next)
        if ((*p)->m.src == src && (*p)->m.waiter == w) { /* not begun: out of the queue */
            gone = *p;
            if (!(*p = gone->next))
                tail = prev;
            queued--;
            break;
        }
    for (job_t *j = running; j && !gone; j = j->run_next)
        if (j->m.src == src && j->m.waiter == w) {
            atomic_store(&j->intr, true);
            syscall(SYS_tgkill, cb_pid(), j->proxy, cb_rsig);
            break;
        }
    cb_mutex_unlock(&pool_mu);
    if (gone) {
        answer(&gone->m, -1, EINTR, 0, 0, NULL, 0);
        free(gone);
    }
}

void cb_rsys_tick(void)
{
    if (cb.self != 0)
        return;
    cb_mutex_lock(&pool_mu);
    for (job_t *j = running; j; j = j->run_next)
        if (atomic_load(&j->intr))
            syscall(SYS_tgkill, cb_pid(), j->proxy, cb_rsig);
    cb_mutex_unlock(&pool_mu);
}

/* a child of fork: an exec's image finds cb_rsig as a process's (an
 * ignored signal stays ignored) */
void cb_rsys_after_fork(void)
{
    struct { void *handler; unsigned long flags; void *restorer; uint64_t mask; } dfl = { 0 };
    if (cb_rsig) /* the kernel's call: the shim's sigaction refuses it */
        syscall(SYS_rt_sigaction, cb_rsig, &dfl, NULL, sizeof dfl.mask);
}

void cb_rsys_init(void)
{
    /* (the program's SIGRTMAX is one less) */
    int s = ((int (*)(int))cb_libc("__libc_allocate_rtsig"))(1);
    if (s <= 0)
        cb_die("node %d: no real-time signal left for the runtime", cb.self);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    /* no SA_RESTART; off the master, where it only wakes a held wait
     * (cb_waiter_wait_held), ignored: one that comes after its wait ended
     * ends no call of the program's */
    sa.sa_handler = cb.self == 0 ? on_rsig : SIG_IGN;
    sigemptyset(&sa.sa_mask);
    if (cb_sigaction(s, &sa, NULL))
        cb_die("node %d: cannot set the handler of signal %d: %s", cb.self, s, strerror(errno));
    cb_rsig = s;
}

/* comm thread (master): M_RSYS, a call to make here, or to interrupt */
void cb_on_rsys(const cb_msg_t *m, const void *p, size_t len)
{
    if (m->a == RSYS_INTR) {
        interrupt(m->src, m->b);
        return;
    }
    job_t *j = malloc(sizeof *j + len);
    if (!j) {
        answer(m, -1, 0, ENOMEM, 0, NULL, 0);
        return;
    }
    j->next = NULL;
    j->run_next = NULL;
    j->proxy = 0;
    atomic_store(&j->intr, false);
    j->m = *m;
    j->len = len;
    memcpy(j->p, p, len);
    cb_mutex_lock(&pool_mu);
    if (tail) tail->next = j; else head = j;
    tail = j;
    queued++;
    /* idle counts proxies until they take a job: one woken may not have
     * taken its job yet, so a proxy is started when the jobs outnumber them */
    bool start = queued > idle && started < PROXY_MAX, waits = queued > idle && !start;
    if (start)
        started++;
    uint32_t busy = started - idle;
    atomic_fetch_add(&jobs_seq, 1);
    cb_mutex_unlock(&pool_mu);
    int rc = 0;
    if (start && (rc = cb_thread_start(&(pthread_t){ 0 }, proxy_main, NULL, true))) {
        cb_mutex_lock(&pool_mu);
        started--;
        busy = started - idle;
        bool none = started == 0;
        cb_mutex_unlock(&pool_mu);
        if (none)
            cb_die("cannot start a thread for the system calls of other nodes: %s", strerror(rc));
    }
    static bool said; /* (the communication thread's: not stdio's lock, which a
                       * program's thread may hold while it faults) */
    if ((rc || waits) && !said) {
        said = true;
        char msg[256];
        int n = snprintf(msg, sizeof msg,
                         "cables: node 0: %u calls of other nodes' threads run at the master at "
                         "once (at most %d%s%s); the next ones wait until one of them ends\n",
                         busy, PROXY_MAX, rc ? "; no thread could be started for more: " : "",
                         rc ? strerror(rc) : "");
        if (n > 0 && write(2, msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1)) {}
    }
    syscall(SYS_futex, (uint32_t *)&jobs_seq, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0); /* one proxy */
}

/* ---- a wait at another node, for this node's application thread ---- */

/* comm thread: M_WAIT a = SYS_wait4 or SYS_waitid, b = its pid (or idtype),
 * c = its id (waitid), d = its options; made here without waiting (WNOHANG
 * added), a quick call.  Answer: a = result, b = errno, payload: the
 * status, rusage and siginfo (cb_wait_out_t). */
void cb_on_wait(const cb_msg_t *m)
{
    cb_wait_out_t o;
    memset(&o, 0, sizeof o);
    int opt = (int)m->d | WNOHANG;
    long r;
    if (m->a == SYS_wait4)
        r = syscall(SYS_wait4, (pid_t)(int64_t)m->b, &o.status, opt, &o.ru);
    else if (m->a == SYS_waitid)
        r = syscall(SYS_waitid, (int)m->b, (id_t)m->c, &o.si, opt, NULL);
    else
        r = -1, errno = EINVAL;
    int err = r == -1 ? errno : 0;
    cb_msg_t rep = { .type = M_REPLY, .a = (uint64_t)(int64_t)r, .b = (uint64_t)err };
    cb_reply(m, &rep, &o, sizeof o, false);
}

struct wait_ans {
    long r;
    int err;
    cb_wait_out_t *out;
};

static void wait_answer(int k, const cb_waiter_t *w, void *arg)
{
    (void)k;
    struct wait_ans *a = arg;
    a->r = (long)w->value;
    a->err = (int)w->value2;
    if (w->data)
        memcpy(a->out, w->data, w->len < sizeof *a->out ? w->len : sizeof *a->out);
}

long cb_wait_at(int node, int64_t op, int64_t b, int64_t c, int options, cb_wait_out_t *out)
{
    memset(out, 0, sizeof *out);
    struct wait_ans a = { .r = -1, .err = ECHILD, .out = out }; /* a node gone has no child */
    cb_msg_t m = { .type = M_WAIT, .a = (uint64_t)op, .b = (uint64_t)b, .c = (uint64_t)c,
                   .d = (uint64_t)(int64_t)options };
    if (node >= 0 && node < CB_MAX_NODES && cb_node_up(node))
        cb_ask_all(1ull << node, &m, NULL, 0, wait_answer, &a);
    if (a.r == -1)
        errno = a.err;
    return a.r;
}
