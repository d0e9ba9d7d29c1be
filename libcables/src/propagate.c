/* propagate.c: writes reach pollers within a bounded delay.
 *
 * Release consistency shows a write only to a thread that acquires after
 * the writer's release.  Legacy code polls plain variables without either
 * (while (!done) usleep(100);, or a spin: while (!stop) work();), and on
 * nodes of their own such a thread would never see the write.  A pull
 * makes every other node release what it wrote (if its last release began
 * long enough ago) and answer with the write notices this node lacks,
 * which it then acquires (cb_acquire_pull: a copy written here that goes
 * is released with the rest of this node's writes first): its copies of
 * the pages written go, and their next reads fetch what the homes hold.
 * Pulls are made
 *  - by a thread that sleeps or yields without acquiring (pthread_shim's
 *    poll_point: after 200 us of that, then at gaps doubling up to
 *    CABLES_PROPAGATE, from 200 us again after news); the others release
 *    whatever they wrote;
 *  - every CABLES_PROPAGATE seconds (0.25; 0: no pulls) by this node's
 *    server thread while a program thread here runs (is not asleep in a
 *    wait of the runtime's: a spin makes no call); the others release if
 *    their last release began two periods ago or more (a long phase
 *    without a release pays one every half second, not more).  A join
 *    releases first (main: stop = 1; pthread_join, while the thread
 *    joined spins on stop).
 * So a write is seen within about one period, or within the poller's gap.
 *
 * In order: a thread shown writes by a pull must not read one before the
 * writes made ahead of it (data, then the flag that says it is there).
 * Three things kept it from that:
 *  - a release made for a pull diffed page after page while the
 *    program's threads wrote on: a flag written after its data, on a page
 *    diffed later, went with this release and the data with the next.
 *    Such releases now write-protect every page first (hlrc.c, snapshot);
 *  - a copy fetched (or refreshed in place) after an acquire may hold
 *    writes of intervals released since, whose notices this node has not
 *    acquired: the flag read, its data's copy still valid and old.  Now a
 *    copy a pull's acquire dropped (cb.pulled) is, once fetched again,
 *    followed by a pull that asks no release but of the page's home
 *    (cb_after_fetch; the third point): every
 *    interval whose diffs the fetch may have read was closed before the
 *    pull's answers (an answer waits for a release in progress there), so
 *    the data's copies go.  If that pull dropped the page just fetched, its
 *    next read fetches it again (AFTER_FETCH_MAX times in a row at most,
 *    then it is kept as it came: a page written on and on, whose next
 *    interval drops it again soon).  A pull's acquire refreshes no copy in
 *    place: it invalidates.  A program that synchronizes has its copies
 *    dropped by pulls rarely (periodic ones, two periods apart);
 *  - writes a node makes to its own home pages are read there in place,
 *    released or not: a flag whose home is its writer's node was seen
 *    before that node's data elsewhere.  So the pull after such a fetch,
 *    by a thread that polls (polled), asks the page's home to release,
 *    whatever the age of its last
 *    release, if it wrote pages other than that one since
 *    (cb_release_due_beside: its own writes, told apart from the diffs
 *    that landed there; the page itself came with its writes); its
 *    server, which makes releases for pulls at most a tenth of its time,
 *    holds the answer until it may (and at most AFTER_FETCH_MAX such
 *    pulls come in a row from a thread).  A home that writes nothing but
 *    the flag it polls (an ack) is asked no release: its handoffs with a
 *    writer elsewhere go as fast as before.
 *
 * A pull is answered by the asked node's server thread (a release waits
 * for the homes' acknowledgements, which the communication thread must
 * receive), which never waits for another node: its own pull's answers
 * come to its queue.  A program that synchronizes needs none of this; it
 * costs it a few messages a second, and a release of a node that did not
 * release for two periods. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct req {
    struct req *next;
    cb_msg_t m;
    cb_vc_t vc; /* the asker's: it lacks the notices after it */
} req_t;

/* The server's state (q_mu): the requests it has to answer, and its own
 * pull each period, whose answers the communication thread merges (they
 * come as M_PULL_REPLY, not to a waiter: the server waits for nothing
 * but its queue) */
static cb_mutex_t q_mu = CB_MUTEX_INIT;
static req_t *queue;
static bool serving;       /* the server takes requests */
static uint64_t tick_out;  /* the nodes its pull awaits */
static bool ticking;       /* its pull is out */
static cb_vc_t tick_vc;    /* what the answers so far released */
static _Atomic uint32_t q_seq; /* + 1 at each change the server waits for */
static pthread_t server;

static void server_wake(void)
{
    atomic_fetch_add(&q_seq, 1);
    cb_futex_wake(&q_seq);
}

/* M_PULL a=age (ns), b=answer by M_PULL_REPLY, c=the node that must
 * release, plus one (0: none), d=the page the asker fetched from it;
 * payload = the asker's vc */
static void answer(const cb_msg_t *m, const uint32_t *vc)
{
    size_t len;
    void *n = cb_notices_encode(vc, &len, NULL);
    cb_msg_t r = { .type = m->b ? M_PULL_REPLY : M_REPLY };
    if (m->b)
        cb_send(m->src, &r, n, len, true);
    else
        cb_reply(m, &r, n, len, true);
}

void cb_on_pull(const cb_msg_t *m, const void *p, size_t len)
{
    if (len != sizeof(cb_vc_t))
        cb_die("node %d: malformed pull (%zu bytes) from node %d", cb.self, len, m->src);
    cb_mutex_lock(&q_mu);
    if (!serving) { /* (propagation off here, or the node ends): no release */
        cb_mutex_unlock(&q_mu);
        answer(m, p);
        return;
    }
    req_t *r = malloc(sizeof *r);
    if (!r)
        cb_die("node %d: out of memory for a pull", cb.self);
    r->m = *m;
    memcpy(r->vc, p, sizeof r->vc);
    r->next = queue;
    queue = r;
    cb_mutex_unlock(&q_mu);
    server_wake();
}

/* node k's answer to a pull: its notices, merged; its vc in v */
static void take_answer(int k, const void *p, size_t len, uint32_t *v)
{
    cb_notices_merge(p, len, v);
    cb_known_update(k, v);
}

/* the answer to the server's pull from m->src */
void cb_on_pull_reply(const cb_msg_t *m, const void *p, size_t len)
{
    cb_vc_t v;
    take_answer(m->src, p, len, v);
    cb_mutex_lock(&q_mu);
    bool last = false;
    if (tick_out >> m->src & 1) { /* (else given up: the node left) */
        cb_vc_max(tick_vc, v);
        tick_out &= ~(1ull << m->src);
        last = !tick_out;
    }
    cb_mutex_unlock(&q_mu);
    if (last)
        server_wake();
}

/* an answer holds every interval closed before it: one closing now (its
 * diffs applied at their homes, its notices not logged yet) first, and an
 * unlock's that returned before its diffs were applied (hlrc.c: Intervals
 * closing) */
static void answer_all(req_t *r)
{
    cb_mutex_lock(&cb.release_mu);
    cb_mutex_unlock(&cb.release_mu);
    cb_closed_wait_all();
    while (r) {
        req_t *next = r->next;
        answer(&r->m, r->vc);
        free(r);
        r = next;
    }
}

static uint64_t open_nodes(void)
{
    uint64_t mask = 0;
    for (int k = 0; k < atomic_load(&cb.nnodes); k++)
        if (k != cb.self && cb_node_open(k))
            mask |= 1ull << k;
    return mask;
}

static bool pull_ok(void)
{
    return cb.multi && !cb.forked && cb_node_joined() && !atomic_load(&cb.ending) &&
           !atomic_load(&cb.stopping);
}

/* the server's pull: out to every node up (its answers come to
 * cb_on_pull_reply) */
static void tick_start(uint64_t age_ns)
{
    uint64_t mask = pull_ok() ? open_nodes() : 0;
    if (!mask)
        return;
    cb_vc_t mine;
    cb_vc_get(mine);
    cb_mutex_lock(&q_mu);
    memcpy(tick_vc, mine, sizeof tick_vc);
    tick_out = mask;
    ticking = true;
    cb_mutex_unlock(&q_mu);
    for (int k = 0; k < CB_MAX_NODES; k++)
        if (mask >> k & 1) {
            cb_msg_t m = { .type = M_PULL, .a = age_ns, .b = 1 };
            cb_send(k, &m, mine, sizeof mine, false);
        }
}

/* its answers all in (or their nodes gone): acquired */
static void tick_end(void)
{
    cb_vc_t target;
    cb_mutex_lock(&q_mu);
    tick_out &= open_nodes();
    bool done = ticking && !tick_out;
    if (done) {
        ticking = false;
        memcpy(target, tick_vc, sizeof target);
    }
    cb_mutex_unlock(&q_mu);
    if (done) {
        cb_acquire_pull(target);
        STAT_ADD(pulls, 1);
    }
}

static void *serve_main(void *arg)
{
    (void)arg;
    uint64_t period = (uint64_t)(cb.cfg.propagate * 1e9), next_tick = cb_now_ns() + period;
    /* releases for pulls take at most a tenth of the time (the next no
     * sooner than 9 times the last one's length after it) */
    uint64_t resume = 0;
    for (;;) {
        uint32_t seq = atomic_load(&q_seq);
        cb_mutex_lock(&q_mu);
        req_t *r = queue;
        queue = NULL;
        bool quit = !serving;
        cb_mutex_unlock(&q_mu);
        if (r) {
            uint64_t age = UINT64_MAX; /* one release for the requests at hand */
            bool must = false;         /* one of them must have it (cb_after_fetch) */
            for (req_t *q = r; q; q = q->next) {
                if (q->m.a < age)
                    age = q->m.a;
                /* (the asker read page d here as it is: if this node
                 * wrote no other page, all it wrote before that page's
                 * writes came with them) */
                if (!must && q->m.c == (uint64_t)cb.self + 1)
                    must = cb_release_due_beside(q->m.d); /* (one look answers them all) */
            }
            if (must)
                age = 0;
            uint64_t t0 = cb_now_ns();
            if (must && !quit && t0 < resume && cb_release_due(0)) {
                /* answered at resume, with the release: held until then */
                cb_mutex_lock(&q_mu);
                req_t **end = &r;
                while (*end)
                    end = &(*end)->next;
                *end = queue;
                queue = r;
                cb_mutex_unlock(&q_mu);
                cb_futex_wait_until(&q_seq, seq, resume);
                continue;
            }
            if ((must || t0 >= resume) && cb_release_due(age)) {
                cb_release_snapshot(); /* the program's threads run on */
                uint64_t t1 = cb_now_ns();
                resume = t1 + 9 * (t1 - t0);
                STAT_ADD(pull_releases, 1);
            }
            answer_all(r);
            continue;
        }
        if (quit)
            return NULL;
        tick_end();
        uint64_t now = cb_now_ns();
        if (now >= next_tick) {
            next_tick = now + period;
            if (!ticking && atomic_load(&cb.app_threads) > atomic_load(&cb.app_blocked))
                tick_start(2 * period);
        }
        /* a node that leaves never answers: looked at again in 100 ms */
        uint64_t until = next_tick;
        if (ticking && now + 100000000ull < until)
            until = now + 100000000ull;
        cb_futex_wait_until(&q_seq, seq, until);
    }
}

static void pulled(int k, const cb_waiter_t *w, void *arg)
{
    cb_vc_t v;
    take_answer(k, w->data, w->len, v);
    cb_vc_max(arg, v);
}

static __thread bool pulling CB_TLS; /* in cb_pull: not again (a handler that interrupted it) */
/* cb_acquires when this thread last pulled as a poller (poll_point: age
 * 0), plus one; 0: never.  Only a thread that polls, and has not acquired
 * since, has the pull after a fetch ask the page's home to release: a
 * program that synchronizes may have copies dropped by periodic pulls,
 * and releases asked after their fetches made more notices, whose pulls
 * dropped more copies (FFT at 2 nodes: 130 pulls a run, and 1.3-1.9 s
 * instead of 0.26) */
static __thread uint32_t polled CB_TLS;

bool cb_pull(uint64_t age_ns, int must, uint64_t page)
{
    uint64_t mask = pull_ok() && !pulling ? open_nodes() : 0;
    if (!mask)
        return false;
    pulling = true;
    if (age_ns == 0) {
        polled = cb_acquires + 1;
        atomic_store(&cb.poll_ns, cb_now_ns()); /* (before its releases' diffs land) */
    }
    cb_vc_t mine, target;
    cb_vc_get(mine);
    memcpy(target, mine, sizeof target);
    cb_msg_t m = { .type = M_PULL, .a = age_ns, .c = (uint64_t)(must + 1), .d = page };
    cb_ask_all(mask, &m, mine, sizeof mine, pulled, target);
    cb_acquire_pull(target);
    STAT_ADD(pulls, 1);
    pulling = false;
    return memcmp(target, mine, sizeof target) != 0;
}

/* how many fetches in a row the pull after them dropped */
static __thread uint32_t refetched CB_TLS;
enum { AFTER_FETCH_MAX = 4 };

void cb_after_fetch(uint64_t p)
{
    if (!cb_app_thread || cb_syncing || pulling)
        return;
    if (refetched >= AFTER_FETCH_MAX) { /* written on and on: kept as it came */
        refetched = 0;
        return;
    }
    int home = cb_home_cached(p);
    int must = polled == cb_acquires + 1 && home != cb.self ? home : -1;
    cb_app_thread = false; /* the runtime's allocations are its own */
    /* a release asked of p's home only, by a poller */
    cb_pull(UINT64_MAX, must, p);
    if (must >= 0)
        STAT_ADD(pulls_asking, 1);
    cb_app_thread = true;
    bool dropped = (atomic_load(&cb.pst[p]) & PG_ACC) == PG_NONE; /* fetched again next */
    refetched = dropped ? refetched + 1 : 0;
}

void cb_propagate_start(void)
{
    if (!cb.multi || cb.cfg.propagate <= 0)
        return;
    serving = true;
    int rc = cb_thread_start_sized(&server, serve_main, NULL, 1 << 20);
    if (rc)
        cb_die("node %d: cannot start the thread that propagates writes to pollers: %s "
               "(CABLES_PROPAGATE=0 runs without)", cb.self, strerror(rc));
}

void cb_propagate_stop(void)
{
    if (!server)
        return;
    cb_mutex_lock(&q_mu);
    serving = false; /* what is queued is answered first */
    cb_mutex_unlock(&q_mu);
    server_wake();
    cb_thread_wait(server);
    server = 0;
}
