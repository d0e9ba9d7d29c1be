/* barnes.C: SPLASH-2 style Barnes-Hut N-body simulation (BARNES), written
 * for the SPLASH-2 M4 macro set.
 *
 * N bodies of mass 1/N (gravitational constant 1, Plummer softening EPS;
 * EPS and DT are SPLASH-2's defaults)
 * start as a Plummer sphere in N-body units (total energy -1/4), generated
 * by a fixed-seed 64-bit LCG, centre of mass and its velocity removed.
 * Each step is a kick-drift-kick leapfrog (velocity Verlet) of time step DT
 * with forces from an octree, rebuilt every step:
 *
 * - The bodies are split into P contiguous index ranges, one per thread.
 *   The root box is the bounding box of all bodies (per-thread minima and
 *   maxima in slots, combined by thread 0).
 * - Tree building as in SPLASH-2: every thread inserts its own bodies into
 *   the one shared tree; cells come from a pool of the thread (N + 64
 *   cells, a whole tree, allocated once from shared memory) and a leaf
 *   holds one body.  A cell slot goes
 *   empty -> body -> cell and never back; it is changed only under the lock
 *   of its cell (an array of NLOCK locks, cell id modulo NLOCK).  A thread
 *   reads a slot under that lock, except a slot it has already seen hold a
 *   cell (such a slot is final): a private table remembers, per cell, the
 *   slots the thread knows to be cells.  Splitting a leaf makes the chain of
 *   new cells down to where the two bodies part, fills it, then links it,
 *   all under the lock of the parent.  So every read of the tree is ordered
 *   after the write it reads by a lock (release consistency is enough: no
 *   unsynchronized reads, unlike the original code), and the tree's shape
 *   (a cell exists iff its box holds two bodies or more) depends on the
 *   positions only, not on the order of the insertions.
 * - Mass, centre of mass and quadrupole moment bottom-up, children in
 *   octant order: the cells at depth 2 are dealt round-robin to the
 *   threads, then thread 0 does depths 1 and 0.
 * - Forces by a tree walk per body (children in octant order): a cell is
 *   opened if its side exceeds THETA times the distance from the body to
 *   its centre of mass, or if the body lies in its box; otherwise its
 *   monopole and quadrupole act.
 *
 * So every force, position and velocity is the same for any P and any
 * timing.  The kinetic and potential energy of each body go to a slot per
 * body, summed by thread 0 in index order.
 *
 * Self-check, after the last step: the final tree holds every body exactly
 * once; for 64 bodies spread over the index range, the tree force is
 * compared with the direct N^2 sum: the largest relative error must be
 * below 0.25 theta^3 (plus 1e-12; measured up to 0.11 theta^3 for N from
 * 16 to 16384 and theta up to 1, typically 0.05 at theta 1 and 0.003 at
 * 0.5); the total energy must stay within a relative 1e-2 of its start
 * (measured: below 5e-3 for N >= 32 over 400 steps, 3e-5 to 7e-4 over 3
 * steps), and the total momentum below 1e-4 (STEPS + 10) of the sum of the
 * bodies' |m v| (it starts at zero and grows with the tree's force errors).
 *
 * Usage: barnes [-n N] [-p P] [-s STEPS] [-t THETA]   (defaults 1024, 1, 3, 1.0)
 * Prints BARNES_FORCE_ERR, BARNES_ENERGY_DRIFT, BARNES_MOMENTUM, then
 *   RESULT ok=1 n=N p=P steps=S theta=T cells=C tree_ok=1 force_ok=1
 *          energy_ok=1 momentum_ok=1 force_err=X e_final=Y */
MAIN_ENV
#include "args.h"
#include <math.h>
#include <stdint.h>

#define NLOCK 2048
#define MAXDEPTH 60
#define DT 0.025
#define EPS 0.05
#define NSAMPLE 64

struct cell {
    long id;          /* 0: the root; lock id % NLOCK */
    long depth;
    double center[3]; /* of the box */
    double half;      /* half the side */
    uintptr_t child[8]; /* 0 empty; (i << 1) | 1 body i; else a cell */
    double mass;
    double com[3];
    double quad[6];   /* xx xy xz yy yz zz, about com */
};

#define IS_BODY(v) ((v) & 1)
#define BODY(i) (((uintptr_t)(i) << 1) | 1)
#define BODY_INDEX(v) ((long)((v) >> 1))

struct GlobalMemory {
    BARDEC(start)
    ALOCKDEC(CellLock, NLOCK)
    double e0;
    double emax_drift;
    double e_final;
} *Global;

long n = 1024, P = 1, steps = 3;
double theta = 1.0, theta2;
long pool_cap;        /* cells per thread pool */
struct cell *root;    /* shared, rebuilt by thread 0 every step */
double *pos;          /* n*3, shared */
double *vel;          /* n*3 */
double *acc;          /* n*3 */
double *phi;          /* n: the potential at each body */
double *mass;         /* n */
double *ke_slot;      /* n: 0.5 m v^2 per body */
double *pe_slot;      /* n: 0.5 m phi per body */
double *bbox;         /* P*6: min x y z, max x y z of each thread */

/* What a thread keeps to itself: its pool and its table of known cells. */
struct worker {
    long id;
    struct cell *pool;
    long used;
    size_t tsize;         /* a power of 2 */
    size_t tused;
    long *tkey;           /* cell id + 1, 0 free */
    unsigned char *tmask; /* slots known to be cells */
};

static unsigned long long lcg_state = 20240601;
static double lcg_uniform(void) /* [0,1) */
{
    lcg_state = lcg_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(lcg_state >> 11) / 9007199254740992.0;
}

static void fatal(const char *msg)
{
    fprintf(stderr, "barnes: %s\n", msg);
    exit(1);
}

/* The slot of cell id in the table of known cells (inserted if absent). */
static size_t known_slot(struct worker *w, long id)
{
    size_t mask = w->tsize - 1;
    size_t h = ((unsigned long long)id * 0x9E3779B97F4A7C15ULL >> 20) & mask;
    while (w->tkey[h] && w->tkey[h] != id + 1)
        h = (h + 1) & mask;
    if (!w->tkey[h]) {
        if (++w->tused > w->tsize / 2)
            fatal("table of known cells full");
        w->tkey[h] = id + 1;
        w->tmask[h] = 0;
    }
    return h;
}

/* The slots of cell id that this thread knows to hold cells. */
static int known(struct worker *w, long id)
{
    size_t mask = w->tsize - 1;
    size_t h = ((unsigned long long)id * 0x9E3779B97F4A7C15ULL >> 20) & mask;
    while (w->tkey[h] && w->tkey[h] != id + 1)
        h = (h + 1) & mask;
    return w->tkey[h] ? w->tmask[h] : 0;
}

static void set_known(struct worker *w, long id, int o)
{
    w->tmask[known_slot(w, id)] |= 1 << o;
}

static int octant(const struct cell *c, const double *x)
{
    return (x[0] >= c->center[0]) | (x[1] >= c->center[1]) << 1 | (x[2] >= c->center[2]) << 2;
}

/* A new cell of the pool: child o of parent. */
static struct cell *new_cell(struct worker *w, const struct cell *parent, int o)
{
    if (w->used >= pool_cap)
        fatal("cell pool exhausted");
    if (parent->depth + 1 > MAXDEPTH)
        fatal("tree too deep (bodies too close together)");
    struct cell *c = &w->pool[w->used];
    c->id = w->id * pool_cap + w->used + 1;
    w->used++;
    c->depth = parent->depth + 1;
    c->half = 0.5 * parent->half;
    for (int k = 0; k < 3; k++)
        c->center[k] = parent->center[k] + ((o >> k) & 1 ? c->half : -c->half);
    for (int k = 0; k < 8; k++)
        c->child[k] = 0;
    return c;
}

static void insert_body(struct worker *w, long i)
{
    const double *x = pos + i * 3;
    struct cell *c = root;
    for (;;) {
        int o = octant(c, x);
        if (known(w, c->id) & (1 << o)) { /* a final slot: no lock needed */
            c = (struct cell *)c->child[o];
            continue;
        }
        long l = c->id % NLOCK;
        ALOCK(Global->CellLock, l)
        uintptr_t v = c->child[o];
        if (v == 0) {
            c->child[o] = BODY(i);
            AULOCK(Global->CellLock, l)
            return;
        }
        if (!IS_BODY(v)) {
            set_known(w, c->id, o);
            AULOCK(Global->CellLock, l)
            c = (struct cell *)v;
            continue;
        }
        /* a leaf: the chain of new cells down to where i and j part */
        long j = BODY_INDEX(v);
        const double *y = pos + j * 3;
        struct cell *top = new_cell(w, c, o), *d = top;
        for (;;) {
            int oi = octant(d, x), oj = octant(d, y);
            if (oi != oj) {
                d->child[oi] = BODY(i);
                d->child[oj] = BODY(j);
                break;
            }
            struct cell *e = new_cell(w, d, oi);
            d->child[oi] = (uintptr_t)e;
            set_known(w, d->id, oi);
            d = e;
        }
        c->child[o] = (uintptr_t)top;
        set_known(w, c->id, o);
        AULOCK(Global->CellLock, l)
        return;
    }
}

/* Mass, centre of mass and quadrupole of c from its children, in octant
 * order.  top: the cells of depth 2 are done already. */
static void cofm(struct cell *c, int top)
{
    double m = 0, mx[3] = { 0, 0, 0 };
    for (int o = 0; o < 8; o++) {
        uintptr_t v = c->child[o];
        if (!v)
            continue;
        if (IS_BODY(v)) {
            long j = BODY_INDEX(v);
            m += mass[j];
            for (int k = 0; k < 3; k++)
                mx[k] += mass[j] * pos[j * 3 + k];
        } else {
            struct cell *d = (struct cell *)v;
            if (!top || d->depth < 2)
                cofm(d, top);
            m += d->mass;
            for (int k = 0; k < 3; k++)
                mx[k] += d->mass * d->com[k];
        }
    }
    c->mass = m;
    for (int k = 0; k < 3; k++)
        c->com[k] = mx[k] / m;
    double q[6] = { 0, 0, 0, 0, 0, 0 };
    for (int o = 0; o < 8; o++) {
        uintptr_t v = c->child[o];
        if (!v)
            continue;
        double mc, s[3];
        const double *qc = NULL;
        if (IS_BODY(v)) {
            long j = BODY_INDEX(v);
            mc = mass[j];
            for (int k = 0; k < 3; k++)
                s[k] = pos[j * 3 + k] - c->com[k];
        } else {
            struct cell *d = (struct cell *)v;
            mc = d->mass;
            qc = d->quad;
            for (int k = 0; k < 3; k++)
                s[k] = d->com[k] - c->com[k];
        }
        double s2 = s[0] * s[0] + s[1] * s[1] + s[2] * s[2];
        q[0] += mc * (3 * s[0] * s[0] - s2);
        q[1] += mc * 3 * s[0] * s[1];
        q[2] += mc * 3 * s[0] * s[2];
        q[3] += mc * (3 * s[1] * s[1] - s2);
        q[4] += mc * 3 * s[1] * s[2];
        q[5] += mc * (3 * s[2] * s[2] - s2);
        if (qc)
            for (int k = 0; k < 6; k++)
                q[k] += qc[k];
    }
    for (int k = 0; k < 6; k++)
        c->quad[k] = q[k];
}

/* The cells of depth 2 dealt to this thread (k-th in octant order, k = id
 * mod P). */
static void cofm_share(long id)
{
    long k = 0;
    for (int o = 0; o < 8; o++) {
        uintptr_t v = root->child[o];
        if (!v || IS_BODY(v))
            continue;
        struct cell *c1 = (struct cell *)v;
        for (int o2 = 0; o2 < 8; o2++) {
            uintptr_t v2 = c1->child[o2];
            if (!v2 || IS_BODY(v2))
                continue;
            if (k++ % P == id)
                cofm((struct cell *)v2, 0);
        }
    }
}

static void walk(uintptr_t v, long i, const double *x, double *a, double *ph)
{
    if (IS_BODY(v)) {
        long j = BODY_INDEX(v);
        if (j == i)
            return;
        double dx[3], r2 = EPS * EPS;
        for (int k = 0; k < 3; k++) {
            dx[k] = pos[j * 3 + k] - x[k];
            r2 += dx[k] * dx[k];
        }
        double r = sqrt(r2);
        double mr = mass[j] / r;
        double mr3 = mr / r2;
        *ph -= mr;
        for (int k = 0; k < 3; k++)
            a[k] += mr3 * dx[k];
        return;
    }
    const struct cell *c = (const struct cell *)v;
    double dx[3], d2 = 0;
    for (int k = 0; k < 3; k++) {
        dx[k] = c->com[k] - x[k];
        d2 += dx[k] * dx[k];
    }
    double side = 2 * c->half;
    int inside = fabs(x[0] - c->center[0]) <= c->half && fabs(x[1] - c->center[1]) <= c->half &&
                 fabs(x[2] - c->center[2]) <= c->half;
    if (inside || side * side > theta2 * d2) {
        for (int o = 0; o < 8; o++)
            if (c->child[o])
                walk(c->child[o], i, x, a, ph);
        return;
    }
    /* monopole and quadrupole, r = x - com = -dx */
    double r2 = d2 + EPS * EPS;
    double r = sqrt(r2);
    double ir2 = 1.0 / r2;
    double mr = c->mass / r;
    double mr3 = mr * ir2;
    const double *q = c->quad;
    double qd[3] = { q[0] * dx[0] + q[1] * dx[1] + q[2] * dx[2],
                     q[1] * dx[0] + q[3] * dx[1] + q[4] * dx[2],
                     q[2] * dx[0] + q[4] * dx[1] + q[5] * dx[2] };
    double dqd = dx[0] * qd[0] + dx[1] * qd[1] + dx[2] * qd[2];
    double ir5 = ir2 * ir2 / r;
    *ph -= mr + 0.5 * dqd * ir5;
    for (int k = 0; k < 3; k++)
        a[k] += mr3 * dx[k] - qd[k] * ir5 + 2.5 * dqd * ir5 * ir2 * dx[k];
}

/* Build the tree from the current positions and compute the forces on this
 * thread's bodies; with kick, then the second half kick.  Ends with the
 * energy slots of its bodies written and a barrier. */
static void build_and_force(struct worker *w, long first, long last, int kick)
{
    long id = w->id;
    double *bb = bbox + id * 6;
    for (int k = 0; k < 3; k++) {
        bb[k] = INFINITY;
        bb[3 + k] = -INFINITY;
    }
    for (long i = first; i < last; i++)
        for (int k = 0; k < 3; k++) {
            double x = pos[i * 3 + k];
            if (x < bb[k])
                bb[k] = x;
            if (x > bb[3 + k])
                bb[3 + k] = x;
        }
    BARRIER(Global->start, P)

    if (id == 0) {
        double lo[3], hi[3], ext = 0;
        for (int k = 0; k < 3; k++) {
            lo[k] = INFINITY;
            hi[k] = -INFINITY;
        }
        for (long t = 0; t < P; t++)
            for (int k = 0; k < 3; k++) {
                if (bbox[t * 6 + k] < lo[k])
                    lo[k] = bbox[t * 6 + k];
                if (bbox[t * 6 + 3 + k] > hi[k])
                    hi[k] = bbox[t * 6 + 3 + k];
            }
        for (int k = 0; k < 3; k++) {
            root->center[k] = 0.5 * (lo[k] + hi[k]);
            if (hi[k] - lo[k] > ext)
                ext = hi[k] - lo[k];
        }
        root->half = 0.5 * ext * 1.0001 + 1e-12;
        root->id = 0;
        root->depth = 0;
        for (int o = 0; o < 8; o++)
            root->child[o] = 0;
    }
    w->used = 0;
    w->tused = 0;
    memset(w->tkey, 0, w->tsize * sizeof *w->tkey);
    BARRIER(Global->start, P)

    for (long i = first; i < last; i++)
        insert_body(w, i);
    BARRIER(Global->start, P)

    cofm_share(id);
    BARRIER(Global->start, P)
    if (id == 0)
        cofm(root, 1);
    BARRIER(Global->start, P)

    const double h = 0.5 * DT;
    for (long i = first; i < last; i++) {
        double a[3] = { 0, 0, 0 }, ph = 0;
        walk((uintptr_t)root, i, pos + i * 3, a, &ph);
        double v2 = 0;
        for (int k = 0; k < 3; k++) {
            acc[i * 3 + k] = a[k];
            if (kick)
                vel[i * 3 + k] += h * a[k];
            v2 += vel[i * 3 + k] * vel[i * 3 + k];
        }
        phi[i] = ph;
        ke_slot[i] = 0.5 * mass[i] * v2;
        pe_slot[i] = 0.5 * mass[i] * ph;
    }
    BARRIER(Global->start, P)
}

/* Thread 0: the total energy from the slots, in index order. */
static void total_energy(int first_time)
{
    double e = 0;
    for (long i = 0; i < n; i++)
        e += ke_slot[i] + pe_slot[i];
    if (first_time)
        Global->e0 = e;
    double drift = fabs(e - Global->e0) / fabs(Global->e0);
    if (drift > Global->emax_drift)
        Global->emax_drift = drift;
    Global->e_final = e;
}

void SlaveStart(void)
{
    long id;
    GET_PID(id)
    long first = id * n / P, last = (id + 1) * n / P;
    const double h = 0.5 * DT;
    struct worker w;
    w.id = id;
    w.pool = (struct cell *)G_MALLOC((size_t)pool_cap * sizeof(struct cell))
    w.used = 0;
    w.tused = 0;
    w.tsize = 1024;
    while (w.tsize < 2 * (size_t)pool_cap)
        w.tsize *= 2;
    w.tkey = malloc(w.tsize * sizeof *w.tkey);
    w.tmask = malloc(w.tsize);
    if (!w.tkey || !w.tmask)
        fatal("out of memory");

    BARRIER(Global->start, P)
    if (id == 0) {
        SPLASH3_ROI_BEGIN
    }

    build_and_force(&w, first, last, 0);
    if (id == 0)
        total_energy(1);

    for (long s = 0; s < steps; s++) {
        for (long i = first; i < last; i++)
            for (int k = 0; k < 3; k++) {
                vel[i * 3 + k] += h * acc[i * 3 + k];
                pos[i * 3 + k] += DT * vel[i * 3 + k];
            }
        build_and_force(&w, first, last, 1);
        if (id == 0)
            total_energy(0);
    }

    if (id == 0) {
        SPLASH3_ROI_END
    }
    free(w.tkey);
    free(w.tmask);
}

/* The cells under c (c included); seen[i] counts the visits of body i. */
static long count_cells(const struct cell *c, long *seen)
{
    long k = 1;
    for (int o = 0; o < 8; o++) {
        uintptr_t v = c->child[o];
        if (!v)
            continue;
        if (IS_BODY(v)) {
            long j = BODY_INDEX(v);
            if (j >= 0 && j < n)
                seen[j]++;
        } else
            k += count_cells((const struct cell *)v, seen);
    }
    return k;
}

/* Plummer sphere (Aarseth, Henon and Wielen 1974), N-body units. */
static void plummer(void)
{
    const double rsc = 3 * M_PI / 16, vsc = sqrt(1.0 / rsc);
    double cm[3] = { 0, 0, 0 }, cv[3] = { 0, 0, 0 };
    for (long i = 0; i < n; i++) {
        double r;
        do {
            double x = lcg_uniform();
            r = x > 0 ? 1.0 / sqrt(pow(x, -2.0 / 3.0) - 1.0) : 0;
        } while (!(r > 0 && r < 9.0)); /* 9: about 99.9% of the mass */
        double x, y;
        do {
            x = lcg_uniform();
            y = 0.1 * lcg_uniform();
        } while (y > x * x * pow(1 - x * x, 3.5));
        double v = x * sqrt(2.0) * pow(1 + r * r, -0.25);
        for (int pass = 0; pass < 2; pass++) {
            double u[3], u2;
            do {
                for (int k = 0; k < 3; k++)
                    u[k] = 2 * lcg_uniform() - 1;
                u2 = u[0] * u[0] + u[1] * u[1] + u[2] * u[2];
            } while (u2 > 1 || u2 < 1e-6);
            double s = (pass == 0 ? r * rsc : v * vsc) / sqrt(u2);
            for (int k = 0; k < 3; k++)
                (pass == 0 ? pos : vel)[i * 3 + k] = s * u[k];
        }
        mass[i] = 1.0 / n;
        for (int k = 0; k < 3; k++) {
            cm[k] += mass[i] * pos[i * 3 + k];
            cv[k] += mass[i] * vel[i * 3 + k];
        }
    }
    for (long i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) {
            pos[i * 3 + k] -= cm[k];
            vel[i * 3 + k] -= cv[k];
        }
}

static void usage(void)
{
    fprintf(stderr, "usage: barnes [-n N] [-p P] [-s STEPS] [-t THETA]  (32 <= N <= 1048576, "
                    "1 <= P <= min(N, 64), 0 <= STEPS <= 100000, 0 <= THETA <= 1)\n");
    exit(2);
}

int main(int argc, char **argv)
{
    parse_args(argc, argv, (const splash_arg_t[]){ { "-n", &n }, { "-p", &P },
                                                   { "-s", &steps }, { "-t", NULL, &theta }, { 0 } });
    if (n < 32 || n > 1048576 || P < 1 || P > 64 || P > n || steps < 0 || steps > 100000 ||
        !(theta >= 0 && theta <= 1))
        usage();
    theta2 = theta * theta;
    pool_cap = n + 64; /* a whole tree (about n / 2 cells for a Plummer sphere) */

    Global = (struct GlobalMemory *)G_MALLOC(sizeof(struct GlobalMemory));
    root = (struct cell *)G_MALLOC(sizeof(struct cell));
    pos = (double *)G_MALLOC((size_t)n * 3 * sizeof(double));
    vel = (double *)G_MALLOC((size_t)n * 3 * sizeof(double));
    acc = (double *)G_MALLOC((size_t)n * 3 * sizeof(double));
    phi = (double *)G_MALLOC((size_t)n * sizeof(double));
    mass = (double *)G_MALLOC((size_t)n * sizeof(double));
    ke_slot = (double *)G_MALLOC((size_t)n * sizeof(double));
    pe_slot = (double *)G_MALLOC((size_t)n * sizeof(double));
    bbox = (double *)G_MALLOC((size_t)P * 6 * sizeof(double));
    MAIN_INITENV(, 1 << 20)
    BARINIT(Global->start, P)
    ALOCKINIT(Global->CellLock, NLOCK)

    plummer();

    CREATE(SlaveStart, P)
    WAIT_FOR_END(P - 1)

    /* the tree force of the last step against the direct sum */
    long ns = n < NSAMPLE ? n : NSAMPLE;
    double max_err = 0;
    for (long s = 0; s < ns; s++) {
        long i = s * n / ns;
        double a[3] = { 0, 0, 0 };
        for (long j = 0; j < n; j++) {
            if (j == i)
                continue;
            double dx[3], r2 = EPS * EPS;
            for (int k = 0; k < 3; k++) {
                dx[k] = pos[j * 3 + k] - pos[i * 3 + k];
                r2 += dx[k] * dx[k];
            }
            double r = sqrt(r2);
            double mr3 = mass[j] / (r * r2);
            for (int k = 0; k < 3; k++)
                a[k] += mr3 * dx[k];
        }
        double d2 = 0, a2 = 0;
        for (int k = 0; k < 3; k++) {
            double d = acc[i * 3 + k] - a[k];
            d2 += d * d;
            a2 += a[k] * a[k];
        }
        double err = sqrt(d2 / a2);
        if (!(err <= max_err))
            max_err = err;
    }
    double mom[3] = { 0, 0, 0 }, mabs = 0;
    for (long i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) {
            mom[k] += mass[i] * vel[i * 3 + k];
            mabs += mass[i] * fabs(vel[i * 3 + k]);
        }
    double mom_rel = (fabs(mom[0]) + fabs(mom[1]) + fabs(mom[2])) / mabs;
    long *seen = calloc(n, sizeof *seen);
    if (!seen)
        fatal("out of memory");
    long cells = count_cells(root, seen);
    int tree_ok = 1;
    for (long i = 0; i < n; i++)
        if (seen[i] != 1)
            tree_ok = 0;
    free(seen);

    int force_ok = max_err < 0.25 * theta2 * theta + 1e-12;
    int energy_ok = Global->emax_drift < 1e-2;
    int momentum_ok = mom_rel < 1e-4 * (steps + 10);
    int ok = tree_ok && force_ok && energy_ok && momentum_ok;
    printf("BARNES_FORCE_ERR %.3e\n", max_err);
    printf("BARNES_ENERGY_DRIFT %.3e\n", Global->emax_drift);
    printf("BARNES_MOMENTUM %.3e\n", mom_rel);
    printf("RESULT ok=%d n=%ld p=%ld steps=%ld theta=%g cells=%ld tree_ok=%d force_ok=%d "
           "energy_ok=%d momentum_ok=%d force_err=%.3e e_final=%.9e\n",
           ok, n, P, steps, theta, cells, tree_ok, force_ok, energy_ok, momentum_ok, max_err,
           Global->e_final);
    MAIN_END
}
