/* The OpenMP runtime of a program compiled with `cables-cc -fopenmp`: the
 * GOMP_* entry points GCC's OpenMP lowering calls, the omp_* API, and the
 * __atomic_* / __sync_* library calls that `-fno-inline-atomics` makes of
 * the program's atomics (DESIGN 8).
 *
 * It is written as a plain POSIX threads library and linked into the
 * program itself (cables-cc puts this object among the program's own), so
 * that its static data is the program's static data: in the global address
 * space, one for the whole cluster, and its mutexes, condition variables
 * and barriers are cluster objects through the pthread shim.  A team's
 * threads are cluster threads, placed on nodes as any thread is; every
 * construct synchronizes through those objects, and so brings release
 * consistency's guarantees with it: what OpenMP calls a flush at a barrier,
 * a critical section, a lock or an atomic is an acquire and a release here.
 * GCC's libgomp synchronizes with futexes and inline atomics on one
 * machine's memory instead, which is why it is not used.
 *
 * What it leaves out (openmp/README.md): tasks with depend clauses run at
 * once on the thread that makes them; nested regions are active only up to
 * OMP_MAX_ACTIVE_LEVELS (default 1); no cancellation, target devices,
 * detached tasks, task reductions, doacross loops. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <omp.h>

#include "cables.h"

/* ---- settings (internal control variables) ---- */

typedef enum { S_STATIC = 1, S_DYNAMIC = 2, S_GUIDED = 3, S_AUTO = 4 } sched_t;
#define S_MONOTONIC 0x80000000u /* omp_sched_monotonic */

static struct {
    pthread_once_t once;
    int nthreads;          /* OMP_NUM_THREADS, or the cluster's CPUs */
    int thread_limit;      /* OMP_THREAD_LIMIT */
    int max_active_levels; /* OMP_MAX_ACTIVE_LEVELS (OMP_NESTED=true: unlimited) */
    int dynamic;           /* OMP_DYNAMIC */
    int run_sched;         /* OMP_SCHEDULE */
    long run_chunk;
    size_t stack;          /* OMP_STACKSIZE (0: the runtime's default) */
} g = { .once = PTHREAD_ONCE_INIT };

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("cables OpenMP: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

static long env_whole(const char *name, long lo, long hi, long dflt)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return dflt;
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    while (*end == ' ')
        end++;
    /* OMP_NUM_THREADS may be a list, one value a nesting level: the first */
    if (*end == ',' && !strcmp(name, "OMP_NUM_THREADS"))
        end = "";
    if (errno || end == v || *end || x < lo || x > hi)
        die("%s='%s' must be a whole number from %ld to %ld", name, v, lo, hi);
    return x;
}

static int env_bool(const char *name, int dflt)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return dflt;
    if (!strcasecmp(v, "true") || !strcmp(v, "1"))
        return 1;
    if (!strcasecmp(v, "false") || !strcmp(v, "0"))
        return 0;
    die("%s='%s' must be true or false", name, v);
}

/* "[monotonic:|nonmonotonic:]kind[,chunk]" */
static void env_schedule(void)
{
    g.run_sched = S_DYNAMIC, g.run_chunk = 1; /* libgomp's default */
    const char *v = getenv("OMP_SCHEDULE");
    if (!v || !*v)
        return;
    const char *p = v;
    unsigned mono = 0;
    if (!strncasecmp(p, "monotonic:", 10))
        mono = S_MONOTONIC, p += 10;
    else if (!strncasecmp(p, "nonmonotonic:", 13))
        p += 13;
    static const struct { const char *name; int kind; } kinds[] = {
        { "static", S_STATIC }, { "dynamic", S_DYNAMIC }, { "guided", S_GUIDED },
        { "auto", S_AUTO } };
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        size_t n = strlen(kinds[i].name);
        if (strncasecmp(p, kinds[i].name, n) || (p[n] && p[n] != ','))
            continue;
        g.run_sched = kinds[i].kind | mono;
        g.run_chunk = kinds[i].kind == S_STATIC ? 0 : 1;
        if (p[n] == ',') {
            char *end;
            errno = 0;
            long c = strtol(p + n + 1, &end, 10);
            if (errno || end == p + n + 1 || *end || c < 1)
                break;
            g.run_chunk = c;
        }
        return;
    }
    die("OMP_SCHEDULE='%s' must be static, dynamic, guided or auto, optionally with "
        "',CHUNK' (a whole number from 1) and a 'monotonic:' prefix", v);
}

static void settings_read(void)
{
    int cpus = cables_cpu_count();
    g.nthreads = (int)env_whole("OMP_NUM_THREADS", 1, 1 << 20, cpus > 0 ? cpus : 1);
    g.thread_limit = (int)env_whole("OMP_THREAD_LIMIT", 1, 1 << 20, 1 << 20);
    g.max_active_levels = env_bool("OMP_NESTED", 0) ? 255 : 1;
    g.max_active_levels = (int)env_whole("OMP_MAX_ACTIVE_LEVELS", 0, 255, g.max_active_levels);
    g.dynamic = env_bool("OMP_DYNAMIC", 0);
    env_schedule();
    const char *v = getenv("OMP_STACKSIZE");
    if (v && *v) {
        char *end;
        errno = 0;
        unsigned long long s = strtoull(v, &end, 10), unit = 1024;
        if (*end == 'B' || *end == 'b')
            unit = 1, end++;
        else if (*end == 'K' || *end == 'k')
            unit = 1024, end++;
        else if (*end == 'M' || *end == 'm')
            unit = 1024 * 1024, end++;
        else if (*end == 'G' || *end == 'g')
            unit = 1024ull * 1024 * 1024, end++;
        if (errno || end == v || *end || s == 0 || s > (1ull << 40) / unit)
            die("OMP_STACKSIZE='%s' must be a size such as 8M (B, K, M or G; K if none)", v);
        g.stack = (size_t)(s * unit);
    }
}

static void settings(void) { pthread_once(&g.once, settings_read); }

/* ---- teams ---- */

/* A worksharing construct's state (a loop, a single with copyprivate), in a ring
 * of RING slots per team: threads that left a construct with nowait may be
 * up to RING constructs ahead of the slowest. */
#define RING 8
struct ws {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    long idx;         /* the construct's number in its region */
    int left;         /* threads that have left it; the slot is free at nthreads */
    int sched;        /* S_* */
    unsigned long long n, next, chunk; /* iterations, the next not handed out, chunk */
    unsigned long long start, incr;    /* iteration k is start + k * incr */
    unsigned long long ord_next;       /* the first iteration of the chunk whose turn it is */
    bool copy_ready;  /* single copyprivate: copy_ptr is set */
    void *copy_ptr;
};


/* a thread's data environment: what a team's threads inherit from the
 * thread that made the team */
struct env {
    int nthreads_var, run_sched;
    long run_chunk;
};

/* A task.  A deferred one waits in its team's queue until a thread of the
 * team takes it at a task scheduling point (a barrier, taskwait, the end
 * of a taskgroup).  Its struct lives until it and its children are done. */
struct taskgroup {
    long count;              /* its tasks and their descendants not done */
    struct taskgroup *prev;  /* the one around it in the same task */
};
struct task {
    void (*fn)(void *);
    void *data;
    struct task *parent;
    struct taskgroup *in_group; /* the group it counts in */
    struct taskgroup *group;    /* the innermost open in it (for its children) */
    long children;              /* not done */
    bool done, implicit, had_children;
    struct task *next;          /* the queue */
};

struct thr;
struct team {
    unsigned nthreads;
    void (*fn)(void *);
    void *data;
    bool pre;               /* ring[0] holds a combined construct's loop */
    unsigned sections;      /* a combined construct's sections */
    bool pooled;            /* run by the pool's threads, else by its own */
    struct env env;         /* its master's */
    int level, active_level; /* of the region it runs */
    struct team *parent;    /* the master's team before, and its number there */
    unsigned parent_id;
    pthread_barrier_t *bar; /* nthreads > 1 */
    pthread_barrier_t own_bar;
    pthread_t *threads;     /* its own threads */
    struct ws ring[RING];
    /* deferred tasks: a queue, under task_mu */
    pthread_mutex_t task_mu;
    pthread_cond_t task_cv;
    struct task *head, *tail;
    long queued, running;
    int waiters;            /* threads waiting on task_cv */
    bool tasking;           /* a task was deferred in this region */
};

/* this thread: its team and place in it.  A thread outside any region is
 * the one member of an implicit team of its own. */
struct thr {
    struct team *team;
    unsigned id;
    long ws_count;          /* constructs entered in this region */
    struct ws *ws;          /* the construct it is in */
    unsigned long long trip; /* static loops: chunks taken */
    unsigned long long lo, hi; /* the chunk it runs (iteration numbers) */
    bool has_chunk;
    unsigned sec_next, sec_count; /* sections: the next this thread runs, of */
    struct env env;
    struct task *task;      /* the task it runs (in a team of more than one) */
    int final_depth;        /* inside final tasks */
};
static __thread struct thr self;
static __thread struct team *implicit;

static void ring_reset(struct team *t)
{
    for (int k = 0; k < RING; k++) {
        t->ring[k].idx = k - RING;
        t->ring[k].left = (int)t->nthreads;
    }
}

static struct thr *me(void)
{
    if (!self.team) {
        settings();
        if (!implicit) {
            implicit = calloc(1, sizeof *implicit);
            if (!implicit)
                die("out of memory for a thread's implicit team");
            implicit->nthreads = 1;
            ring_reset(implicit);
        }
        self = (struct thr){ .team = implicit,
                             .env = { g.nthreads, g.run_sched, g.run_chunk } };
    }
    return &self;
}

static void task_drain(void);

/* All the team's threads arrive; then, if tasks were deferred in the
 * region, they run them together until none is left (a task scheduling
 * point: every task made before the barrier is done after it). */
static void team_barrier(struct team *t)
{
    if (t->nthreads > 1) {
        int rc = pthread_barrier_wait(t->bar);
        if (rc && rc != PTHREAD_BARRIER_SERIAL_THREAD)
            die("a team barrier failed: %s", strerror(rc));
        if (t->tasking)
            task_drain();
    }
}

/* the calling thread becomes member id of team t, its implicit task k */
static void member_begin(struct team *t, unsigned id, struct task *k)
{
    self = (struct thr){ .team = t, .id = id, .env = t->env, .task = k };
    *k = (struct task){ .implicit = true };
    if (t->pre)
        self.ws_count = 1, self.ws = &t->ring[0];
    if (t->sections)
        self.sec_count = t->sections, self.sec_next = id + 1;
}

/* member id of team t: runs the region's function, then waits at its end */
static void member_run(struct team *t, unsigned id)
{
    struct task k;
    member_begin(t, id, &k);
    t->fn(t->data);
    team_barrier(t);
    self.team = NULL;
}

/* The pool: threads kept between regions for one team at a time (libgomp
 * keeps its threads the same way: starting a thread on another node costs
 * milliseconds).  A region starts with a round of the fork barrier, which
 * the master and all the pool's threads meet at (a cluster barrier: one
 * message each way a node, where a condition variable's waiters would each
 * take its mutex in turn); those of them the team numbers run it.  What a
 * round starts is in rounds[its number % 2]: the master writes the next
 * one's only after every thread has met it at this one, so a thread slow
 * to read its round's cannot read the next's.  A round without a team
 * moves the threads to a larger fork barrier (the pool grows).  A team
 * made while the pool is busy (a nested region, or regions of several
 * application threads at once) has threads of its own, joined at its end. */
struct round {
    struct team *team;          /* NULL: fork becomes fork_next */
    unsigned nthreads;
    pthread_barrier_t *fork_next;
};
static struct {
    pthread_mutex_t mu;         /* busy, cached, bars */
    pthread_barrier_t *fork;    /* workers + 1 meet there */
    struct round rounds[2];
    unsigned long round;        /* rounds the master started */
    unsigned workers;           /* its threads: members 1 to workers */
    bool busy;
    /* the teams it runs, kept: region k's is cached[k % 2], so that a
     * thread still leaving region k's team (its barrier's tasks) is out of
     * it before region k + 2 sets it up: region k + 1's fork round waits
     * for every thread */
    struct team *cached[2];
    unsigned long regions;
    pthread_barrier_t **bars;   /* a barrier for each team size, made once */
    unsigned nbars;
} pool = { .mu = PTHREAD_MUTEX_INITIALIZER };

struct worker_arg {
    unsigned id;
    unsigned long round;     /* pool threads: the next round, at */
    pthread_barrier_t *fork; /* this barrier */
    struct team *team;       /* a team's own threads */
};

static void fork_wait(pthread_barrier_t *b)
{
    int rc = pthread_barrier_wait(b);
    if (rc && rc != PTHREAD_BARRIER_SERIAL_THREAD)
        die("the pool's fork barrier failed: %s", strerror(rc));
}

static void *pool_worker(void *p)
{
    struct worker_arg a = *(struct worker_arg *)p;
    free(p);
    for (;;) {
        fork_wait(a.fork);
        struct round r = pool.rounds[a.round++ & 1];
        if (!r.team)
            a.fork = r.fork_next;
        else if (a.id < r.nthreads)
            member_run(r.team, a.id);
    }
    return NULL;
}

/* the master: a round of the fork barrier, starting team t of n (t NULL:
 * moving the pool to fork_next) */
static void pool_round(struct team *t, unsigned n, pthread_barrier_t *fork_next)
{
    pool.rounds[pool.round++ & 1] = (struct round){ t, n, fork_next };
    fork_wait(pool.fork);
}

static void *own_worker(void *p)
{
    struct worker_arg a = *(struct worker_arg *)p;
    free(p);
    member_run(a.team, a.id);
    return NULL;
}

static pthread_attr_t *worker_attr(pthread_attr_t *at)
{
    if (!g.stack)
        return NULL;
    pthread_attr_init(at);
    if (pthread_attr_setstacksize(at, g.stack))
        die("OMP_STACKSIZE=%zu is not a stack size this system takes", g.stack);
    return at;
}

static void start_thread(void *(*fn)(void *), const struct worker_arg *arg, pthread_t *out)
{
    unsigned id = arg->id;
    struct worker_arg *a = malloc(sizeof *a);
    if (!a)
        die("out of memory for a thread");
    *a = *arg;
    pthread_attr_t at;
    pthread_t th;
    int rc = pthread_create(&th, worker_attr(&at), fn, a);
    if (g.stack)
        pthread_attr_destroy(&at);
    if (rc)
        die("cannot start thread %u of a team: %s", id, strerror(rc));
    if (out)
        *out = th;
    else
        pthread_detach(th);
}

static pthread_barrier_t *pool_barrier(unsigned n)
{
    if (n >= pool.nbars) {
        unsigned m = n + 16;
        pthread_barrier_t **b = realloc(pool.bars, m * sizeof *b);
        if (!b)
            die("out of memory for a team barrier");
        memset(b + pool.nbars, 0, (m - pool.nbars) * sizeof *b);
        pool.bars = b, pool.nbars = m;
    }
    if (!pool.bars[n]) {
        pool.bars[n] = malloc(sizeof(pthread_barrier_t));
        if (!pool.bars[n] || pthread_barrier_init(pool.bars[n], NULL, n))
            die("cannot make a barrier for a team of %u", n);
    }
    return pool.bars[n];
}

/* The team of a region the calling thread meets: num_threads threads (0:
 * its nthreads-var), one if nesting is not active at this level. */
static struct team *team_make(void (*fn)(void *), void *data, unsigned num_threads)
{
    struct thr *s = me();
    struct team *cur = s->team;
    unsigned n = num_threads ? num_threads : (unsigned)s->env.nthreads_var;
    if (cur->active_level >= g.max_active_levels)
        n = 1;
    if (n > (unsigned)g.thread_limit)
        n = (unsigned)g.thread_limit;
    struct team *t = NULL;
    if (n > 1) {
        pthread_mutex_lock(&pool.mu);
        if (!pool.busy) {
            pool.busy = true;
            struct team **c = &pool.cached[pool.regions++ & 1];
            if (!*c && !(*c = calloc(1, sizeof **c)))
                die("out of memory for a team");
            t = *c;
            t->pooled = true;
            t->bar = pool_barrier(n);
        }
        pthread_mutex_unlock(&pool.mu);
    }
    if (!t) {
        if (!(t = calloc(1, sizeof *t)))
            die("out of memory for a team");
        if (n > 1) {
            if (pthread_barrier_init(&t->own_bar, NULL, n))
                die("cannot make a barrier for a team of %u", n);
            t->bar = &t->own_bar;
            if (!(t->threads = calloc(n, sizeof *t->threads)))
                die("out of memory for a team");
        }
    }
    t->nthreads = n;
    t->fn = fn, t->data = data;
    t->pre = false;
    t->sections = 0;
    t->env = s->env;
    t->level = cur->level + 1;
    t->active_level = cur->active_level + (n > 1);
    t->parent = cur, t->parent_id = s->id;
    ring_reset(t);
    t->head = t->tail = NULL;
    t->queued = t->running = 0;
    t->waiters = 0;
    t->tasking = false;
    return t;
}

/* what the thread that makes a team keeps until its end: its place before
 * and its implicit task in the team */
struct region {
    struct thr saved;
    struct task implicit;
};

/* its other threads start; the caller becomes member 0 */
static void team_start(struct team *t, struct region *r)
{
    r->saved = self;
    if (t->pooled) { /* the pool is this thread's until team_end */
        unsigned w = t->nthreads - 1;
        if (pool.workers < w) {
            /* (the old barrier stays: its threads may still be leaving it) */
            pthread_barrier_t *nb = malloc(sizeof *nb);
            if (!nb || pthread_barrier_init(nb, NULL, w + 1))
                die("cannot make the fork barrier of a pool of %u threads", w);
            if (pool.workers)
                pool_round(NULL, 0, nb);
            pool.fork = nb;
            for (unsigned i = pool.workers + 1; i <= w; i++)
                start_thread(pool_worker,
                             &(struct worker_arg){ .id = i, .round = pool.round, .fork = nb },
                             NULL);
            pool.workers = w;
        }
        pool_round(t, t->nthreads, NULL);
    } else {
        for (unsigned i = 1; i < t->nthreads; i++)
            start_thread(own_worker, &(struct worker_arg){ .id = i, .team = t },
                         &t->threads[i]);
    }
    member_begin(t, 0, &r->implicit);
}

static void team_end(struct team *t, const struct region *r)
{
    team_barrier(t);
    self = r->saved;
    if (t->pooled) {
        pthread_mutex_lock(&pool.mu);
        pool.busy = false;
        pthread_mutex_unlock(&pool.mu);
        return;
    }
    for (unsigned i = 1; i < t->nthreads; i++)
        pthread_join(t->threads[i], NULL);
    if (t->nthreads > 1)
        pthread_barrier_destroy(&t->own_bar);
    free(t->threads);
    free(t);
}

/* the calling thread makes team t's region: starts it, runs its part, ends it */
static void team_run(struct team *t)
{
    struct region r;
    team_start(t, &r);
    t->fn(t->data);
    team_end(t, &r);
}

/* ---- worksharing ---- */

/* Enters the calling thread's next construct: its slot, locked; *first if
 * this thread is the first there (it sets the construct up). */
static struct ws *ws_enter(struct thr *s, bool *first)
{
    struct team *t = s->team;
    long idx = s->ws_count++;
    struct ws *w = &t->ring[idx % RING];
    pthread_mutex_lock(&w->mu);
    *first = false;
    while (w->idx != idx) {
        if (w->idx == idx - RING && w->left == (int)t->nthreads) {
            w->idx = idx, w->left = 0;
            *first = true;
            break;
        }
        pthread_cond_wait(&w->cv, &w->mu);
    }
    s->ws = w;
    s->trip = 0, s->has_chunk = false;
    return w;
}

/* the calling thread is done with w (locked): the last one frees the slot */
static void ws_left_locked(struct team *t, struct ws *w)
{
    if (++w->left == (int)t->nthreads)
        pthread_cond_broadcast(&w->cv);
}

static void ws_leave(struct thr *s)
{
    struct ws *w = s->ws;
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    ws_left_locked(s->team, w);
    pthread_mutex_unlock(&w->mu);
    s->ws = NULL;
}

static void loop_setup(struct ws *w, int sched, unsigned long long n, unsigned long long start,
                       unsigned long long incr, long chunk, bool ordered)
{
    sched &= ~(int)S_MONOTONIC;
    if (sched == S_AUTO)
        sched = S_STATIC; /* the placement a cluster wants: each thread its block */
    w->sched = sched;
    w->n = n, w->next = 0;
    w->chunk = chunk > 0 ? (unsigned long long)chunk : sched == S_STATIC ? 0 : 1;
    w->start = start, w->incr = incr;
    w->ord_next = ordered ? 0 : ~0ull;
}

/* iterations of a loop from start by incr while below (above) end: the
 * span and the step in unsigned arithmetic, which cannot overflow */
static unsigned long long count_long(long start, long end, long incr)
{
    unsigned long long s = (unsigned long long)start, e = (unsigned long long)end;
    if (incr > 0)
        return end > start ? (e - s - 1) / (unsigned long long)incr + 1 : 0;
    return start > end ? (s - e - 1) / -(unsigned long long)incr + 1 : 0;
}

static unsigned long long count_ull(bool up, unsigned long long start, unsigned long long end,
                                    unsigned long long incr)
{
    if (up)
        return end > start ? (end - start - 1) / incr + 1 : 0;
    return start > end ? (start - end - 1) / -incr + 1 : 0;
}

/* ordered loops: the chunk this thread ran is done, the turn passes on */
static void ordered_pass(struct thr *s)
{
    struct ws *w = s->ws;
    if (!s->has_chunk || w->ord_next == ~0ull)
        return;
    pthread_mutex_lock(&w->mu);
    while (w->ord_next != s->lo)
        pthread_cond_wait(&w->cv, &w->mu);
    w->ord_next = s->hi;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    s->has_chunk = false;
}

/* the calling thread's next chunk of its loop, as iteration numbers [lo, hi) */
static bool chunk_next(struct thr *s)
{
    struct ws *w = s->ws;
    struct team *t = s->team;
    ordered_pass(s);
    unsigned long long lo, hi;
    if (w->sched == S_STATIC) {
        unsigned long long nt = t->nthreads, id = s->id;
        if (w->chunk == 0) {
            if (s->trip++)
                return false;
            unsigned long long q = w->n / nt, r = w->n % nt;
            lo = id * q + (id < r ? id : r);
            hi = lo + q + (id < r);
        } else {
            unsigned long long c = s->trip++ * nt + id; /* the chunk's number */
            if (w->n == 0 || c > (w->n - 1) / w->chunk)
                return false;
            lo = c * w->chunk;
            hi = w->n - lo < w->chunk ? w->n : lo + w->chunk;
        }
        if (lo >= hi)
            return false;
    } else {
        pthread_mutex_lock(&w->mu);
        lo = w->next;
        unsigned long long left = w->n - lo, q = w->chunk;
        if (w->sched == S_GUIDED) {
            q = (left + t->nthreads - 1) / t->nthreads;
            if (q < w->chunk)
                q = w->chunk;
        }
        hi = left < q ? w->n : lo + q;
        w->next = hi;
        pthread_mutex_unlock(&w->mu);
        if (lo >= hi)
            return false;
    }
    s->lo = lo, s->hi = hi, s->has_chunk = true;
    return true;
}

static bool next_long(long *istart, long *iend)
{
    struct thr *s = me();
    if (!chunk_next(s))
        return false;
    struct ws *w = s->ws;
    *istart = (long)(w->start + s->lo * w->incr);
    *iend = (long)(w->start + s->hi * w->incr);
    return true;
}

static bool next_ull(unsigned long long *istart, unsigned long long *iend)
{
    struct thr *s = me();
    if (!chunk_next(s))
        return false;
    struct ws *w = s->ws;
    *istart = w->start + s->lo * w->incr;
    *iend = w->start + s->hi * w->incr;
    return true;
}

static void resolve_runtime(struct thr *s, int *sched, long *chunk)
{
    if ((*sched & ~(int)S_MONOTONIC) == 0) /* GFS_RUNTIME */
        *sched = s->env.run_sched, *chunk = s->env.run_chunk;
}

static bool start_long(int sched, long start, long end, long incr, long chunk, bool ordered,
                       long *istart, long *iend)
{
    struct thr *s = me();
    resolve_runtime(s, &sched, &chunk);
    bool first;
    struct ws *w = ws_enter(s, &first);
    if (first)
        loop_setup(w, sched, count_long(start, end, incr), (unsigned long long)start,
                   (unsigned long long)incr, chunk, ordered);
    pthread_mutex_unlock(&w->mu);
    return next_long(istart, iend);
}

static bool start_ull(int sched, bool up, unsigned long long start, unsigned long long end,
                      unsigned long long incr, long chunk, bool ordered,
                      unsigned long long *istart, unsigned long long *iend)
{
    struct thr *s = me();
    resolve_runtime(s, &sched, &chunk);
    bool first;
    struct ws *w = ws_enter(s, &first);
    if (first)
        loop_setup(w, sched, count_ull(up, start, end, incr), start, incr, chunk, ordered);
    pthread_mutex_unlock(&w->mu);
    return next_ull(istart, iend);
}

/* a combined parallel loop: its team's first construct, set up before the
 * team starts */
static void parallel_loop(void (*fn)(void *), void *data, unsigned n, int sched, long start,
                          long end, long incr, long chunk)
{
    struct thr *s = me();
    resolve_runtime(s, &sched, &chunk);
    struct team *t = team_make(fn, data, n);
    struct ws *w = &t->ring[0];
    w->idx = 0, w->left = 0;
    loop_setup(w, sched, count_long(start, end, incr), (unsigned long long)start,
               (unsigned long long)incr, chunk, false);
    t->pre = true;
    team_run(t);
}

#define LOOP_KIND(name, sched)                                                                \
    bool GOMP_loop_##name##_start(long start, long end, long incr, long chunk, long *istart,   \
                                  long *iend)                                                 \
    {                                                                                         \
        return start_long(sched, start, end, incr, chunk, false, istart, iend);               \
    }                                                                                         \
    bool GOMP_loop_##name##_next(long *istart, long *iend) { return next_long(istart, iend); } \
    bool GOMP_loop_ordered_##name##_start(long start, long end, long incr, long chunk,        \
                                          long *istart, long *iend)                           \
    {                                                                                         \
        return start_long(sched, start, end, incr, chunk, true, istart, iend);                \
    }                                                                                         \
    bool GOMP_loop_ordered_##name##_next(long *istart, long *iend)                            \
    {                                                                                         \
        return next_long(istart, iend);                                                       \
    }                                                                                         \
    bool GOMP_loop_ull_##name##_start(bool up, unsigned long long start,                      \
                                      unsigned long long end, unsigned long long incr,        \
                                      unsigned long long chunk, unsigned long long *istart,   \
                                      unsigned long long *iend)                               \
    {                                                                                         \
        return start_ull(sched, up, start, end, incr, (long)chunk, false, istart, iend);      \
    }                                                                                         \
    bool GOMP_loop_ull_##name##_next(unsigned long long *istart, unsigned long long *iend)    \
    {                                                                                         \
        return next_ull(istart, iend);                                                        \
    }                                                                                         \
    bool GOMP_loop_ull_ordered_##name##_start(bool up, unsigned long long start,              \
                                              unsigned long long end, unsigned long long incr, \
                                              unsigned long long chunk,                       \
                                              unsigned long long *istart,                     \
                                              unsigned long long *iend)                       \
    {                                                                                         \
        return start_ull(sched, up, start, end, incr, (long)chunk, true, istart, iend);       \
    }                                                                                         \
    bool GOMP_loop_ull_ordered_##name##_next(unsigned long long *istart,                      \
                                             unsigned long long *iend)                        \
    {                                                                                         \
        return next_ull(istart, iend);                                                        \
    }                                                                                         \
    void GOMP_parallel_loop_##name(void (*fn)(void *), void *data, unsigned n, long start,    \
                                   long end, long incr, long chunk, unsigned flags)           \
    {                                                                                         \
        (void)flags;                                                                          \
        parallel_loop(fn, data, n, sched, start, end, incr, chunk);                           \
    }

LOOP_KIND(static, S_STATIC)
LOOP_KIND(dynamic, S_DYNAMIC)
LOOP_KIND(guided, S_GUIDED)
LOOP_KIND(nonmonotonic_dynamic, S_DYNAMIC)
LOOP_KIND(nonmonotonic_guided, S_GUIDED)

/* schedule(runtime): the run-sched-var (OMP_SCHEDULE, omp_set_schedule) */
#define LOOP_RUNTIME(name)                                                                    \
    bool GOMP_loop_##name##_start(long start, long end, long incr, long *istart, long *iend)  \
    {                                                                                         \
        return start_long(0, start, end, incr, 0, false, istart, iend);                       \
    }                                                                                         \
    bool GOMP_loop_##name##_next(long *istart, long *iend) { return next_long(istart, iend); } \
    bool GOMP_loop_ull_##name##_start(bool up, unsigned long long start,                      \
                                      unsigned long long end, unsigned long long incr,        \
                                      unsigned long long *istart, unsigned long long *iend)   \
    {                                                                                         \
        return start_ull(0, up, start, end, incr, 0, false, istart, iend);                    \
    }                                                                                         \
    bool GOMP_loop_ull_##name##_next(unsigned long long *istart, unsigned long long *iend)    \
    {                                                                                         \
        return next_ull(istart, iend);                                                        \
    }                                                                                         \
    void GOMP_parallel_loop_##name(void (*fn)(void *), void *data, unsigned n, long start,    \
                                   long end, long incr, unsigned flags)                       \
    {                                                                                         \
        (void)flags;                                                                          \
        parallel_loop(fn, data, n, 0, start, end, incr, 0);                                   \
    }

LOOP_RUNTIME(runtime)
LOOP_RUNTIME(nonmonotonic_runtime)
LOOP_RUNTIME(maybe_nonmonotonic_runtime)

bool GOMP_loop_ordered_runtime_start(long start, long end, long incr, long *istart, long *iend)
{
    return start_long(0, start, end, incr, 0, true, istart, iend);
}
bool GOMP_loop_ordered_runtime_next(long *istart, long *iend) { return next_long(istart, iend); }
bool GOMP_loop_ull_ordered_runtime_start(bool up, unsigned long long start,
                                         unsigned long long end, unsigned long long incr,
                                         unsigned long long *istart, unsigned long long *iend)
{
    return start_ull(0, up, start, end, incr, 0, true, istart, iend);
}
bool GOMP_loop_ull_ordered_runtime_next(unsigned long long *istart, unsigned long long *iend)
{
    return next_ull(istart, iend);
}

/* GCC 9's entry for loops it cannot name by schedule (sched: 0 runtime, 1
 * static, 2 dynamic, 3 guided, 4 auto, with the monotonic bit) */
static void no_reductions(uintptr_t *reductions, void **mem, const char *what)
{
    if (reductions || (mem && *mem))
        die("%s with task reductions, lastprivate(conditional:) or scan is not supported",
            what);
}

bool GOMP_loop_start(long start, long end, long incr, long sched, long chunk, long *istart,
                     long *iend, uintptr_t *reductions, void **mem)
{
    no_reductions(reductions, mem, "a worksharing loop");
    if (!istart)
        die("a worksharing loop with task reductions is not supported");
    return start_long((int)sched, start, end, incr, chunk, false, istart, iend);
}
bool GOMP_loop_ordered_start(long start, long end, long incr, long sched, long chunk,
                             long *istart, long *iend, uintptr_t *reductions, void **mem)
{
    no_reductions(reductions, mem, "an ordered loop");
    return start_long((int)sched, start, end, incr, chunk, true, istart, iend);
}
bool GOMP_loop_ull_start(bool up, unsigned long long start, unsigned long long end,
                         unsigned long long incr, long sched, unsigned long long chunk,
                         unsigned long long *istart, unsigned long long *iend,
                         uintptr_t *reductions, void **mem)
{
    no_reductions(reductions, mem, "a worksharing loop");
    return start_ull((int)sched, up, start, end, incr, (long)chunk, false, istart, iend);
}
bool GOMP_loop_ull_ordered_start(bool up, unsigned long long start, unsigned long long end,
                                 unsigned long long incr, long sched, unsigned long long chunk,
                                 unsigned long long *istart, unsigned long long *iend,
                                 uintptr_t *reductions, void **mem)
{
    no_reductions(reductions, mem, "an ordered loop");
    return start_ull((int)sched, up, start, end, incr, (long)chunk, true, istart, iend);
}

void GOMP_loop_end_nowait(void)
{
    struct thr *s = me();
    ordered_pass(s);
    ws_leave(s);
}
void GOMP_loop_end(void)
{
    GOMP_loop_end_nowait();
    team_barrier(self.team);
}
bool GOMP_loop_end_cancel(void)
{
    GOMP_loop_end();
    return false;
}

void GOMP_ordered_start(void)
{
    struct thr *s = me();
    struct ws *w = s->ws;
    if (!w || !s->has_chunk || w->ord_next == ~0ull)
        return;
    pthread_mutex_lock(&w->mu);
    while (w->ord_next != s->lo)
        pthread_cond_wait(&w->cv, &w->mu);
    pthread_mutex_unlock(&w->mu);
}
void GOMP_ordered_end(void) {}

/* ---- sections and single: dealt by thread number, with no message ----
 * Which thread runs a section or a single is the implementation's choice;
 * libgomp's (the first to come) costs a cluster mutex here, a round trip
 * or more between nodes.  Section k goes to thread (k - 1) % n; a single
 * without copyprivate to thread 0, as a master would. */

unsigned GOMP_sections_next(void)
{
    struct thr *s = me();
    if (s->sec_next > s->sec_count)
        return 0;
    unsigned k = s->sec_next;
    s->sec_next += s->team->nthreads;
    return k;
}
unsigned GOMP_sections_start(unsigned count)
{
    struct thr *s = me();
    s->sec_count = count, s->sec_next = s->id + 1;
    return GOMP_sections_next();
}
void GOMP_sections_end_nowait(void) { me()->sec_count = 0; }
void GOMP_sections_end(void)
{
    GOMP_sections_end_nowait();
    team_barrier(self.team);
}
bool GOMP_sections_end_cancel(void)
{
    GOMP_sections_end();
    return false;
}
void GOMP_parallel_sections(void (*fn)(void *), void *data, unsigned n, unsigned count,
                            unsigned flags)
{
    (void)flags;
    struct team *t = team_make(fn, data, n);
    t->sections = count;
    team_run(t);
}

bool GOMP_single_start(void) { return me()->id == 0; }

/* single copyprivate: the first thread to come runs it, the others wait
 * for its data (a slot of the ring: they synchronize anyway) */
void *GOMP_single_copy_start(void)
{
    struct thr *s = me();
    bool first;
    struct ws *w = ws_enter(s, &first);
    void *p = NULL;
    if (first) {
        w->copy_ready = false;
    } else {
        while (!w->copy_ready)
            pthread_cond_wait(&w->cv, &w->mu);
        p = w->copy_ptr;
        ws_left_locked(s->team, w);
        s->ws = NULL;
    }
    pthread_mutex_unlock(&w->mu);
    return p;
}

void GOMP_single_copy_end(void *data)
{
    struct thr *s = me();
    struct ws *w = s->ws;
    pthread_mutex_lock(&w->mu);
    w->copy_ptr = data;
    w->copy_ready = true;
    pthread_cond_broadcast(&w->cv);
    ws_left_locked(s->team, w);
    pthread_mutex_unlock(&w->mu);
    s->ws = NULL;
}

/* ---- regions, barriers ---- */

void GOMP_parallel(void (*fn)(void *), void *data, unsigned n, unsigned flags)
{
    (void)flags; /* proc_bind: the runtime places threads */
    struct team *t = team_make(fn, data, n);
    team_run(t);
}

/* the ABI before GCC 4.9: the encountering thread calls fn itself between
 * the two */
struct saved_link {
    struct region r;
    struct saved_link *prev;
};
static __thread struct saved_link *saved_stack; /* GOMP_parallel_start's, innermost first */
void GOMP_parallel_start(void (*fn)(void *), void *data, unsigned n)
{
    struct team *t = team_make(fn, data, n);
    struct saved_link *l = malloc(sizeof *l);
    if (!l)
        die("out of memory for a region");
    team_start(t, &l->r);
    l->prev = saved_stack;
    saved_stack = l;
}
void GOMP_parallel_end(void)
{
    struct saved_link *l = saved_stack;
    if (!l)
        die("GOMP_parallel_end without GOMP_parallel_start");
    saved_stack = l->prev;
    team_end(self.team, &l->r);
    free(l);
}

void GOMP_barrier(void) { team_barrier(me()->team); }
bool GOMP_barrier_cancel(void)
{
    GOMP_barrier();
    return false;
}
bool GOMP_cancel(int which, bool do_cancel)
{
    (void)which, (void)do_cancel;
    return false; /* cancel-var is false: cancellation is not active */
}
bool GOMP_cancellation_point(int which)
{
    (void)which;
    return false;
}

/* ---- critical, atomic ---- */

static pthread_mutex_t critical_default = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t critical_names = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t atomic_default = PTHREAD_MUTEX_INITIALIZER;

void GOMP_critical_start(void) { pthread_mutex_lock(&critical_default); }
void GOMP_critical_end(void) { pthread_mutex_unlock(&critical_default); }

/* *pptr: the program's pointer-sized variable for the name (in its static
 * data, so one for the cluster); it comes to hold a mutex made at the
 * name's first use */
void GOMP_critical_name_start(void **pptr)
{
    pthread_mutex_t *m = *(pthread_mutex_t *volatile *)pptr;
    if (!m) {
        pthread_mutex_lock(&critical_names);
        if (!(m = *pptr)) {
            if (!(m = calloc(1, sizeof *m)))
                die("out of memory for a critical section");
            pthread_mutex_init(m, NULL);
            *pptr = m;
        }
        pthread_mutex_unlock(&critical_names);
    }
    pthread_mutex_lock(m);
}
void GOMP_critical_name_end(void **pptr) { pthread_mutex_unlock(*pptr); }

void GOMP_atomic_start(void) { pthread_mutex_lock(&atomic_default); }
void GOMP_atomic_end(void) { pthread_mutex_unlock(&atomic_default); }

/* ---- tasks ----
 * A task is deferred (queued for any thread of the team) when its team has
 * more than one thread, and it has no if(0), final, depend or detach
 * clause; otherwise it runs at once on the thread that makes it (a task
 * with depend clauses then meets them in program order).  As libgomp
 * does, a task is not deferred either while 64 a thread are queued. */

#define TASK_FLAG_FINAL (1u << 1)
#define TASK_FLAG_DEPEND (1u << 3)
#define TASK_FLAG_GRAINSIZE (1u << 9)
#define TASK_FLAG_DETACH (1u << 13)

/* runs task k on the calling thread */
static void task_exec(struct thr *s, struct task *k)
{
    struct task *prev = s->task;
    s->task = k;
    k->fn(k->data);
    s->task = prev;
}

/* k (run) is done: its parent and group learn it, and its struct goes
 * unless children of its own are still running; under task_mu */
static bool task_done_locked(struct team *t, struct task *k)
{
    bool wake = false;
    struct task *p = k->parent;
    if (p && --p->children == 0) {
        wake = true;
        if (p->done && !p->implicit)
            free(p);
    }
    if (k->in_group && --k->in_group->count == 0)
        wake = true;
    if (--t->running == 0 && !t->head)
        wake = true;
    if (wake && t->waiters)
        pthread_cond_broadcast(&t->task_cv);
    k->done = true;
    return k->children == 0; /* free it */
}

/* takes the first queued task that ok accepts (NULL: any); under task_mu */
static struct task *task_take_locked(struct team *t, bool (*ok)(struct task *, void *), void *arg)
{
    struct task **pp = &t->head, *prev = NULL;
    for (struct task *k = t->head; k; prev = k, pp = &k->next, k = k->next) {
        if (ok && !ok(k, arg))
            continue;
        *pp = k->next;
        if (t->tail == k)
            t->tail = prev;
        t->queued--, t->running++;
        return k;
    }
    return NULL;
}

/* runs queued tasks that ok accepts until until(arg) holds */
static void task_run_until(struct thr *s, bool (*until)(struct team *, void *),
                           bool (*ok)(struct task *, void *), void *arg)
{
    struct team *t = s->team;
    pthread_mutex_lock(&t->task_mu);
    while (!until(t, arg)) {
        struct task *k = task_take_locked(t, ok, arg);
        if (!k) {
            t->waiters++;
            pthread_cond_wait(&t->task_cv, &t->task_mu);
            t->waiters--;
            continue;
        }
        pthread_mutex_unlock(&t->task_mu);
        task_exec(s, k);
        pthread_mutex_lock(&t->task_mu);
        if (task_done_locked(t, k)) {
            pthread_mutex_unlock(&t->task_mu);
            free(k);
            pthread_mutex_lock(&t->task_mu);
        }
    }
    pthread_mutex_unlock(&t->task_mu);
}

static bool none_left(struct team *t, void *arg)
{
    (void)arg;
    return !t->head && t->running == 0;
}

/* the calling thread's team's */
static void task_drain(void) { task_run_until(&self, none_left, NULL, NULL); }

/* makes a task running fn on its copy of data (cpyfn makes the copy, else
 * memcpy); bounds: a taskloop's, put as the copy's first two words */
static void task_make(void (*fn)(void *), void *data, void (*cpyfn)(void *, void *), long size,
                      long align, bool if_clause, unsigned flags, const uint64_t *bounds)
{
    if (flags & TASK_FLAG_DETACH)
        die("detached tasks (the detach clause) are not supported");
    struct thr *s = me();
    struct team *t = s->team;
    struct task *parent = s->task;
    bool deferred = if_clause && parent && t->nthreads > 1 && s->final_depth == 0 &&
                    !(flags & (TASK_FLAG_FINAL | TASK_FLAG_DEPEND)) &&
                    t->queued < 64 * (long)t->nthreads; /* read unlocked: a hint */
    if (align < 1)
        align = 1;
    bool copy = cpyfn || deferred || bounds;
    struct task *k = malloc(sizeof *k + (copy ? (size_t)size + (size_t)align : 0));
    if (!k)
        die("out of memory for a task");
    *k = (struct task){ .fn = fn, .parent = parent };
    char *arg = (char *)(((uintptr_t)(k + 1) + (uintptr_t)align - 1) & ~((uintptr_t)align - 1));
    k->data = copy ? arg : data;
    if (cpyfn)
        cpyfn(arg, data);
    else if (copy)
        memcpy(arg, data, (size_t)size);
    if (bounds)
        memcpy(arg, bounds, 2 * sizeof *bounds);
    if (!deferred) {
        /* its children (deferred ones) count in it; it is not counted in
         * its parent: it is done when this returns */
        k->parent = NULL;
        k->group = parent ? parent->group : NULL;
        s->final_depth += (flags & TASK_FLAG_FINAL) != 0;
        task_exec(s, k);
        s->final_depth -= (flags & TASK_FLAG_FINAL) != 0;
        if (k->had_children) {
            pthread_mutex_lock(&t->task_mu);
            k->done = true;
            bool last = k->children == 0;
            pthread_mutex_unlock(&t->task_mu);
            if (!last)
                return; /* its last child frees it */
        }
        free(k);
        return;
    }
    k->in_group = k->group = parent->group;
    parent->had_children = true;
    pthread_mutex_lock(&t->task_mu);
    parent->children++;
    if (k->in_group)
        k->in_group->count++;
    if (t->tail)
        t->tail->next = k;
    else
        t->head = k;
    t->tail = k;
    t->queued++;
    t->tasking = true;
    if (t->waiters)
        pthread_cond_broadcast(&t->task_cv);
    pthread_mutex_unlock(&t->task_mu);
}

void GOMP_task(void (*fn)(void *), void *data, void (*cpyfn)(void *, void *), long size,
               long align, bool if_clause, unsigned flags, void **depend, int priority,
               void *detach)
{
    (void)depend, (void)priority, (void)detach;
    task_make(fn, data, cpyfn, size, align, if_clause, flags, NULL);
}

static bool no_children(struct team *t, void *arg)
{
    (void)t;
    return ((struct task *)arg)->children == 0;
}
static bool child_of(struct task *k, void *arg) { return k->parent == arg; }

/* waits for the current task's children, running them meanwhile */
void GOMP_taskwait(void)
{
    struct thr *s = me();
    struct task *cur = s->task;
    if (!cur || !cur->had_children)
        return;
    task_run_until(s, no_children, child_of, cur);
}
void GOMP_taskwait_depend(void **depend)
{
    (void)depend;
    GOMP_taskwait();
}
void GOMP_taskyield(void) {}

void GOMP_taskgroup_start(void)
{
    struct thr *s = me();
    if (!s->task)
        return;
    struct taskgroup *g = malloc(sizeof *g);
    if (!g)
        die("out of memory for a taskgroup");
    *g = (struct taskgroup){ 0, s->task->group };
    s->task->group = g;
}

static bool group_empty(struct team *t, void *arg)
{
    (void)t;
    return ((struct taskgroup *)arg)->count == 0;
}
static bool in_group(struct task *k, void *arg) { return k->in_group == arg; }

/* waits for the group's tasks and their descendants, running them meanwhile */
void GOMP_taskgroup_end(void)
{
    struct thr *s = me();
    if (!s->task || !s->task->group)
        return;
    struct taskgroup *g = s->task->group;
    /* tasks counted in it may come from undeferred children: ask the team */
    if (s->team->tasking)
        task_run_until(s, group_empty, in_group, g);
    s->task->group = g->prev;
    free(g);
}

/* taskloop over n iterations from start by step (as 64-bit words: long
 * or unsigned long long): its tasks, each with a copy of data whose first
 * two words are its bounds; num_tasks tasks, or with grainsize g, n / g
 * tasks of g to 2g - 1 iterations (strict: g each, the last the rest); in
 * a taskgroup unless nogroup */
#define TASK_FLAG_NOGROUP (1u << 11)
#define TASK_FLAG_STRICT (1u << 14)
static void taskloop(void (*fn)(void *), void *data, void (*cpyfn)(void *, void *), long size,
                     long align, unsigned flags, unsigned long num_tasks,
                     unsigned long long n, uint64_t start, uint64_t step)
{
    if (!n)
        return;
    unsigned long long tasks, each = 0;
    if (flags & TASK_FLAG_GRAINSIZE) {
        unsigned long long g = num_tasks ? num_tasks : 1;
        if (flags & TASK_FLAG_STRICT)
            each = g, tasks = (n + g - 1) / g;
        else
            tasks = n / g;
    } else {
        tasks = num_tasks ? num_tasks : (unsigned long long)me()->team->nthreads;
    }
    if (tasks < 1)
        tasks = 1;
    if (tasks > n)
        tasks = n;
    if (!(flags & TASK_FLAG_NOGROUP))
        GOMP_taskgroup_start();
    unsigned long long q = n / tasks, r = n % tasks, lo = 0;
    for (unsigned long long k = 0; k < tasks; k++) {
        unsigned long long hi = each ? (n - lo < each ? n : lo + each) : lo + q + (k < r);
        uint64_t bounds[2] = { start + lo * step, start + hi * step };
        task_make(fn, data, cpyfn, size, align, true, flags & TASK_FLAG_FINAL, bounds);
        lo = hi;
    }
    if (!(flags & TASK_FLAG_NOGROUP))
        GOMP_taskgroup_end();
}

void GOMP_taskloop(void (*fn)(void *), void *data, void (*cpyfn)(void *, void *), long size,
                   long align, unsigned flags, unsigned long num_tasks, int priority,
                   long start, long end, long step)
{
    (void)priority;
    taskloop(fn, data, cpyfn, size, align, flags, num_tasks, count_long(start, end, step),
             (uint64_t)start, (uint64_t)step);
}

#define TASK_FLAG_UP (1u << 8)
void GOMP_taskloop_ull(void (*fn)(void *), void *data, void (*cpyfn)(void *, void *),
                       long size, long align, unsigned flags, unsigned long num_tasks,
                       int priority, unsigned long long start, unsigned long long end,
                       unsigned long long step)
{
    (void)priority;
    taskloop(fn, data, cpyfn, size, align, flags, num_tasks,
             count_ull(flags & TASK_FLAG_UP, start, end, step), start, step);
}

/* #pragma omp error at(execution) */
void GOMP_warning(const char *msg, size_t len)
{
    if (msg)
        fprintf(stderr, "cables OpenMP: warning: %.*s\n", (int)len, msg);
    else
        fprintf(stderr, "cables OpenMP: warning: 'pragma omp error' encountered\n");
}
void GOMP_error(const char *msg, size_t len)
{
    if (msg)
        fprintf(stderr, "cables OpenMP: fatal error: %.*s\n", (int)len, msg);
    else
        fprintf(stderr, "cables OpenMP: fatal error: 'pragma omp error' encountered\n");
    exit(EXIT_FAILURE);
}

/* ---- the omp_* API ---- */

int omp_get_num_threads(void) { return (int)me()->team->nthreads; }
int omp_get_thread_num(void) { return (int)me()->id; }
int omp_get_max_threads(void) { return me()->env.nthreads_var; }
void omp_set_num_threads(int n) { me()->env.nthreads_var = n > 0 ? n : 1; }
int omp_get_num_procs(void)
{
    int n = cables_cpu_count();
    return n > 0 ? n : 1;
}
int omp_in_parallel(void) { return me()->team->active_level > 0; }
int omp_get_level(void) { return me()->team->level; }
int omp_get_active_level(void) { return me()->team->active_level; }
int omp_get_ancestor_thread_num(int level)
{
    struct thr *s = me();
    struct team *t = s->team;
    unsigned id = s->id;
    if (level < 0 || level > t->level)
        return -1;
    while (t->level > level)
        id = t->parent_id, t = t->parent;
    return (int)id;
}
int omp_get_team_size(int level)
{
    struct team *t = me()->team;
    if (level < 0 || level > t->level)
        return -1;
    while (t->level > level)
        t = t->parent;
    return (int)t->nthreads;
}
int omp_get_thread_limit(void)
{
    settings();
    return g.thread_limit;
}
void omp_set_dynamic(int on)
{
    settings();
    g.dynamic = on != 0;
}
int omp_get_dynamic(void)
{
    settings();
    return g.dynamic;
}
void omp_set_nested(int on)
{
    settings();
    g.max_active_levels = on ? 255 : 1;
}
int omp_get_nested(void)
{
    settings();
    return g.max_active_levels > 1;
}
void omp_set_max_active_levels(int n)
{
    settings();
    if (n >= 0)
        g.max_active_levels = n > 255 ? 255 : n;
}
int omp_get_max_active_levels(void)
{
    settings();
    return g.max_active_levels;
}
int omp_get_supported_active_levels(void) { return 255; }
void omp_set_schedule(omp_sched_t kind, int chunk)
{
    struct thr *s = me();
    int k = (int)kind & ~(int)S_MONOTONIC;
    if (k < S_STATIC || k > S_AUTO)
        return;
    s->env.run_sched = (int)kind;
    s->env.run_chunk = chunk > 0 ? chunk : k == S_STATIC ? 0 : 1;
}
void omp_get_schedule(omp_sched_t *kind, int *chunk)
{
    struct thr *s = me();
    *kind = (omp_sched_t)s->env.run_sched;
    *chunk = (int)s->env.run_chunk;
}
int omp_in_final(void) { return me()->final_depth > 0; }
int omp_get_cancellation(void) { return 0; }
omp_proc_bind_t omp_get_proc_bind(void) { return omp_proc_bind_false; }
int omp_get_num_places(void) { return 0; }
int omp_get_place_num(void) { return -1; }
int omp_get_partition_num_places(void) { return 0; }
int omp_get_default_device(void) { return 0; }
void omp_set_default_device(int d) { (void)d; }
int omp_get_num_devices(void) { return 0; }
int omp_get_initial_device(void) { return 0; }
int omp_get_device_num(void) { return 0; }
int omp_is_initial_device(void) { return 1; }
int omp_get_num_teams(void) { return 1; }
int omp_get_team_num(void) { return 0; }
int omp_get_max_task_priority(void) { return 0; }
void omp_set_num_teams(int n) { (void)n; }
int omp_get_max_teams(void) { return 1; }
void omp_set_teams_thread_limit(int n) { (void)n; }
int omp_get_teams_thread_limit(void) { return omp_get_thread_limit(); }
int omp_get_place_num_procs(int place) { (void)place; return 0; }
void omp_get_place_proc_ids(int place, int *ids) { (void)place, (void)ids; }
void omp_get_partition_place_nums(int *nums) { (void)nums; }
int omp_pause_resource(omp_pause_resource_t kind, int device)
{
    (void)kind, (void)device;
    return 0;
}
int omp_pause_resource_all(omp_pause_resource_t kind)
{
    (void)kind;
    return 0;
}
void omp_display_env(int verbose)
{
    (void)verbose;
    settings();
    static const char *kinds[] = { "RUNTIME", "STATIC", "DYNAMIC", "GUIDED", "AUTO" };
    int k = g.run_sched & ~(int)S_MONOTONIC;
    fprintf(stderr,
            "\nOPENMP DISPLAY ENVIRONMENT BEGIN\n  _OPENMP = '201511'\n"
            "  OMP_DYNAMIC = '%s'\n  OMP_NESTED = '%s'\n  OMP_NUM_THREADS = '%d'\n"
            "  OMP_SCHEDULE = '%s%s,%ld'\n  OMP_STACKSIZE = '%zu'\n"
            "  OMP_MAX_ACTIVE_LEVELS = '%d'\n  OMP_THREAD_LIMIT = '%d'\n"
            "  OMP_CANCELLATION = 'FALSE'\n  OMP_PROC_BIND = 'FALSE'\n"
            "OPENMP DISPLAY ENVIRONMENT END\n",
            g.dynamic ? "TRUE" : "FALSE", g.max_active_levels > 1 ? "TRUE" : "FALSE",
            g.nthreads, g.run_sched & S_MONOTONIC ? "MONOTONIC:" : "",
            k >= 0 && k <= S_AUTO ? kinds[k] : "?", g.run_chunk, g.stack,
            g.max_active_levels, g.thread_limit);
}

/* memory allocators: every one is the shared heap (malloc is the shim's) */
omp_allocator_handle_t omp_get_default_allocator(void) { return omp_default_mem_alloc; }
void omp_set_default_allocator(omp_allocator_handle_t a) { (void)a; }
void *omp_alloc(size_t size, omp_allocator_handle_t a)
{
    (void)a;
    return malloc(size ? size : 1);
}
void *omp_aligned_alloc(size_t align, size_t size, omp_allocator_handle_t a)
{
    (void)a;
    void *p;
    if (align < sizeof(void *))
        align = sizeof(void *);
    return posix_memalign(&p, align, size ? size : 1) ? NULL : p;
}
void *omp_calloc(size_t n, size_t size, omp_allocator_handle_t a)
{
    (void)a;
    return calloc(n ? n : 1, size ? size : 1);
}
void *omp_aligned_calloc(size_t align, size_t n, size_t size, omp_allocator_handle_t a)
{
    if (size && n > SIZE_MAX / size)
        return NULL;
    void *p = omp_aligned_alloc(align, n * size, a);
    if (p)
        memset(p, 0, n * size);
    return p;
}
void *omp_realloc(void *p, size_t size, omp_allocator_handle_t a, omp_allocator_handle_t fa)
{
    (void)a, (void)fa;
    return realloc(p, size);
}
void omp_free(void *p, omp_allocator_handle_t a)
{
    (void)a;
    free(p);
}

double omp_get_wtime(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}
double omp_get_wtick(void)
{
    struct timespec ts;
    clock_getres(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- locks ----
 * omp_lock_t is 4 bytes: it holds the number (plus one) of a mutex in a
 * table of the runtime's; omp_nest_lock_t (16 bytes) the number, the depth
 * and the owner. */
#define LOCK_CHUNK 1024
struct lock_slot {
    pthread_mutex_t m;
    uint32_t next_free; /* plus one; 0: none */
};
static struct {
    pthread_mutex_t mu;
    struct lock_slot *chunk[LOCK_CHUNK];
    uint32_t used, free_head;
} locks = { .mu = PTHREAD_MUTEX_INITIALIZER };

struct nest_lock {
    uint32_t slot;
    int32_t depth;
    uint64_t owner;
};
_Static_assert(sizeof(struct nest_lock) <= 16, "omp_nest_lock_t is 16 bytes");

static struct lock_slot *slot_of(uint32_t n, const char *call)
{
    if (n == 0 || n > locks.used || !locks.chunk[(n - 1) / LOCK_CHUNK])
        die("%s on a lock that was not initialized (omp_init_lock)", call);
    return &locks.chunk[(n - 1) / LOCK_CHUNK][(n - 1) % LOCK_CHUNK];
}

static uint32_t lock_new(void)
{
    pthread_mutex_lock(&locks.mu);
    uint32_t n = locks.free_head;
    if (n) {
        locks.free_head = locks.chunk[(n - 1) / LOCK_CHUNK][(n - 1) % LOCK_CHUNK].next_free;
    } else {
        if (locks.used == LOCK_CHUNK * LOCK_CHUNK)
            die("more than %d OpenMP locks at once", LOCK_CHUNK * LOCK_CHUNK);
        n = ++locks.used;
        struct lock_slot **c = &locks.chunk[(n - 1) / LOCK_CHUNK];
        if (!*c && !(*c = calloc(LOCK_CHUNK, sizeof **c)))
            die("out of memory for OpenMP locks");
    }
    struct lock_slot *l = &locks.chunk[(n - 1) / LOCK_CHUNK][(n - 1) % LOCK_CHUNK];
    pthread_mutex_init(&l->m, NULL);
    l->next_free = 0;
    pthread_mutex_unlock(&locks.mu);
    return n;
}

static void lock_free(uint32_t n)
{
    struct lock_slot *l = slot_of(n, "omp_destroy_lock");
    pthread_mutex_lock(&locks.mu);
    pthread_mutex_destroy(&l->m);
    l->next_free = locks.free_head;
    locks.free_head = n;
    pthread_mutex_unlock(&locks.mu);
}

static uint32_t *lock_word(omp_lock_t *l) { return (uint32_t *)(void *)l; }

void omp_init_lock(omp_lock_t *l) { *lock_word(l) = lock_new(); }
void omp_init_lock_with_hint(omp_lock_t *l, omp_sync_hint_t hint)
{
    (void)hint;
    omp_init_lock(l);
}
void omp_destroy_lock(omp_lock_t *l)
{
    lock_free(*lock_word(l));
    *lock_word(l) = 0;
}
void omp_set_lock(omp_lock_t *l) { pthread_mutex_lock(&slot_of(*lock_word(l), "omp_set_lock")->m); }
void omp_unset_lock(omp_lock_t *l)
{
    pthread_mutex_unlock(&slot_of(*lock_word(l), "omp_unset_lock")->m);
}
int omp_test_lock(omp_lock_t *l)
{
    return pthread_mutex_trylock(&slot_of(*lock_word(l), "omp_test_lock")->m) == 0;
}

static struct nest_lock *nest(omp_nest_lock_t *l) { return (struct nest_lock *)(void *)l; }
static uint64_t owner_id(void) { return (uint64_t)pthread_self(); } /* a cluster thread's: unique */

void omp_init_nest_lock(omp_nest_lock_t *l) { *nest(l) = (struct nest_lock){ lock_new(), 0, 0 }; }
void omp_init_nest_lock_with_hint(omp_nest_lock_t *l, omp_sync_hint_t hint)
{
    (void)hint;
    omp_init_nest_lock(l);
}
void omp_destroy_nest_lock(omp_nest_lock_t *l)
{
    lock_free(nest(l)->slot);
    *nest(l) = (struct nest_lock){ 0 };
}
/* owner is written only by the thread holding the mutex, and cleared before
 * it lets go: a thread reading its own id there holds the lock */
void omp_set_nest_lock(omp_nest_lock_t *l)
{
    struct nest_lock *n = nest(l);
    if (n->owner != owner_id()) {
        pthread_mutex_lock(&slot_of(n->slot, "omp_set_nest_lock")->m);
        n->owner = owner_id();
    }
    n->depth++;
}
void omp_unset_nest_lock(omp_nest_lock_t *l)
{
    struct nest_lock *n = nest(l);
    if (n->owner != owner_id())
        die("omp_unset_nest_lock by a thread that does not hold the lock");
    if (--n->depth == 0) {
        n->owner = 0;
        pthread_mutex_unlock(&slot_of(n->slot, "omp_unset_nest_lock")->m);
    }
}
int omp_test_nest_lock(omp_nest_lock_t *l)
{
    struct nest_lock *n = nest(l);
    if (n->owner != owner_id()) {
        if (pthread_mutex_trylock(&slot_of(n->slot, "omp_test_nest_lock")->m))
            return 0;
        n->owner = owner_id();
    }
    return ++n->depth;
}
