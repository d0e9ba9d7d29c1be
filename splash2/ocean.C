/* ocean.C: SPLASH-2 style multigrid kernel (the elliptic solver at the core
 * of OCEAN), written for the SPLASH-2 M4 macro set.
 *
 * Solves -(u_xx + u_yy) = f on the unit square, u = 0 on the boundary,
 * cell-centred on an (n+2) x (n+2) grid per level (n a power of 2, rows and
 * columns 0 and n+1 are the ghost cells of the zero boundary, folded into
 * the stencil).  Levels n, n/2, ..., 2; every thread owns the same
 * contiguous band of rows (proportional to the level size) of every level.
 * V(2,2) cycles: red/black Gauss-Seidel sweeps with a barrier after each
 * colour, residual, restriction (average of the four fine cells), recursion,
 * a coarsest level of 2 x 2 cells solved by a few sweeps, bilinear
 * prolongation of the correction, post-smoothing.  After each cycle the
 * squared residual of every fine row is stored in a slot per row; after a
 * barrier thread 0 sums the slots in row order, so the norm (and the cycle
 * count) is bit-identical for every P: red/black updates do not depend on
 * the order inside a colour.
 *
 * Manufactured problem: f = 2 pi^2 sin(pi x) sin(pi y), whose solution is
 * u = sin(pi x) sin(pi y).  Self-check: the relative residual falls below
 * TOL within MAXCYC cycles, and max |u - exact| is below 2 h^2 (second
 * order discretisation error; the measured constant is about 0.82).
 *
 * Usage: ocean [-n N] [-p P] [-e TOL]   (defaults 64, 1, 1e-7)
 * Prints OCEAN_RESIDUAL, OCEAN_ERROR and
 *   RESULT ok=1 n=N p=P converged=1 cycles=C */
MAIN_ENV
#include "args.h"
#include <math.h>

#define MAXLEV 16
#define MAXCYC 100
#define COARSE_SWEEPS 8

struct GlobalMemory {
    BARDEC(start)
} *Global;

long n = 64, P = 1;
double tol = 1e-7;
long nlev;               /* levels: sizes n, n/2, ..., 2 */
long msz[MAXLEV];        /* interior cells per side on each level */
double *uu[MAXLEV];      /* solution / correction per level, shared */
double *ff[MAXLEV];      /* right-hand side per level, shared */
double *rr[MAXLEV];      /* residual per level, shared */
double *rowsum;          /* n+2 slots: squared residual of each fine row */
double r0norm, rnorm;    /* written by thread 0 only */
long done, ncycles;      /* written by thread 0 only */

#define AT(a, l, i, j) ((a)[l][(i) * (msz[l] + 2) + (j)])

static void band(long l, long id, long *lo, long *hi)
{
    long m = msz[l];
    *lo = 1 + id * m / P;
    *hi = (id + 1) * m / P;
}

/* the off-diagonal sum and the diagonal (4 plus one per boundary side) */
static double nbsum(long l, long i, long j, double *diag)
{
    long m = msz[l];
    double s = 0, k = 4;
    if (i > 1) s += AT(uu, l, i - 1, j); else k += 1;
    if (i < m) s += AT(uu, l, i + 1, j); else k += 1;
    if (j > 1) s += AT(uu, l, i, j - 1); else k += 1;
    if (j < m) s += AT(uu, l, i, j + 1); else k += 1;
    *diag = k;
    return s;
}

static void sweep(long l, long colour, long lo, long hi)
{
    long m = msz[l];
    double h2 = 1.0 / ((double)m * m);
    for (long i = lo; i <= hi; i++)
        for (long j = 1 + ((i + 1 + colour) & 1); j <= m; j += 2) {
            double d, s = nbsum(l, i, j, &d);
            AT(uu, l, i, j) = (s + h2 * AT(ff, l, i, j)) / d;
        }
}

/* residual of the own rows of level l; returns nothing, fills rr */
static void residual(long l, long lo, long hi)
{
    long m = msz[l];
    double ih2 = (double)m * m;
    for (long i = lo; i <= hi; i++)
        for (long j = 1; j <= m; j++) {
            double d, s = nbsum(l, i, j, &d);
            AT(rr, l, i, j) = AT(ff, l, i, j) - (d * AT(uu, l, i, j) - s) * ih2;
        }
}

static void smooth(long l, long lo, long hi, long times)
{
    for (long t = 0; t < times; t++) {
        sweep(l, 0, lo, hi);
        BARRIER(Global->start, P)
        sweep(l, 1, lo, hi);
        BARRIER(Global->start, P)
    }
}

/* coarse value with the zero-boundary ghost reflection */
static double coarse(long l, long I, long J)
{
    long m = msz[l];
    double sg = 1;
    if (I < 1) { I = 1; sg = -sg; }
    if (I > m) { I = m; sg = -sg; }
    if (J < 1) { J = 1; sg = -sg; }
    if (J > m) { J = m; sg = -sg; }
    return sg * AT(uu, l, I, J);
}

static void vcycle(long l, long id)
{
    long lo, hi;
    band(l, id, &lo, &hi);
    if (l == nlev - 1) {
        smooth(l, lo, hi, COARSE_SWEEPS);
        return;
    }
    smooth(l, lo, hi, 2);
    residual(l, lo, hi);
    BARRIER(Global->start, P)
    long c = l + 1, clo, chi, mc = msz[c];
    band(c, id, &clo, &chi);
    for (long I = clo; I <= chi; I++)
        for (long J = 1; J <= mc; J++) {
            AT(ff, c, I, J) = 0.25 * (AT(rr, l, 2 * I - 1, 2 * J - 1) + AT(rr, l, 2 * I, 2 * J - 1) +
                                      AT(rr, l, 2 * I - 1, 2 * J) + AT(rr, l, 2 * I, 2 * J));
            AT(uu, c, I, J) = 0;
        }
    BARRIER(Global->start, P)
    vcycle(c, id);
    long m = msz[l];
    for (long i = lo; i <= hi; i++) {
        long I = (i + 1) / 2, Ip = (i & 1) ? I - 1 : I + 1;
        for (long j = 1; j <= m; j++) {
            long J = (j + 1) / 2, Jp = (j & 1) ? J - 1 : J + 1;
            AT(uu, l, i, j) += (9 * coarse(c, I, J) + 3 * coarse(c, Ip, J) + 3 * coarse(c, I, Jp) +
                                coarse(c, Ip, Jp)) / 16.0;
        }
    }
    BARRIER(Global->start, P)
    smooth(l, lo, hi, 2);
}

void SlaveStart(void)
{
    long id, lo, hi;
    GET_PID(id)
    band(0, id, &lo, &hi);

    /* every thread fills its own rows of the right-hand side */
    for (long i = lo; i <= hi; i++)
        for (long j = 1; j <= n; j++) {
            double x = (i - 0.5) / n, y = (j - 0.5) / n;
            AT(ff, 0, i, j) = 2 * M_PI * M_PI * sin(M_PI * x) * sin(M_PI * y);
        }
    BARRIER(Global->start, P)
    if (id == 0) {
        SPLASH3_ROI_BEGIN
    }

    for (long cyc = 0;; cyc++) {
        residual(0, lo, hi);
        for (long i = lo; i <= hi; i++) {
            double s = 0;
            for (long j = 1; j <= n; j++)
                s += AT(rr, 0, i, j) * AT(rr, 0, i, j);
            rowsum[i] = s;
        }
        BARRIER(Global->start, P)
        if (id == 0) {
            double s = 0;
            for (long i = 1; i <= n; i++)
                s += rowsum[i];
            s = sqrt(s);
            if (cyc == 0)
                r0norm = s;
            rnorm = s;
            ncycles = cyc;
            done = !(s > tol * r0norm) || cyc >= MAXCYC;
        }
        BARRIER(Global->start, P)
        if (done)
            break;
        vcycle(0, id);
    }

    if (id == 0) {
        SPLASH3_ROI_END
    }
}

static void usage(void)
{
    fprintf(stderr, "usage: ocean [-n N] [-p P] [-e TOL]  (N a power of 2, 2 <= N <= 4096, "
                    "1 <= P <= 64, 0 < TOL < 1)\n");
    exit(2);
}

int main(int argc, char **argv)
{
    parse_args(argc, argv,
               (const splash_arg_t[]){ { "-n", &n }, { "-p", &P }, { "-e", NULL, &tol }, { 0 } });
    if (n < 2 || n > 4096 || (n & (n - 1)) || P < 1 || P > 64 || !(tol > 0 && tol < 1))
        usage();
    nlev = 0;
    for (long m = n; m >= 2; m /= 2)
        msz[nlev++] = m;

    Global = (struct GlobalMemory *)G_MALLOC(sizeof(struct GlobalMemory));
    for (long l = 0; l < nlev; l++) {
        size_t sz = (size_t)(msz[l] + 2) * (msz[l] + 2) * sizeof(double);
        uu[l] = (double *)G_MALLOC(sz);
        ff[l] = (double *)G_MALLOC(sz);
        rr[l] = (double *)G_MALLOC(sz);
    }
    rowsum = (double *)G_MALLOC((size_t)(n + 2) * sizeof(double));
    MAIN_INITENV(, 1 << 20)
    BARINIT(Global->start, P)

    CREATE(SlaveStart, P)
    WAIT_FOR_END(P - 1)

    /* Check against the exact solution of the manufactured problem. */
    double err = 0, h = 1.0 / n;
    for (long i = 1; i <= n; i++)
        for (long j = 1; j <= n; j++) {
            double x = (i - 0.5) * h, y = (j - 0.5) * h;
            double e = fabs(AT(uu, 0, i, j) - sin(M_PI * x) * sin(M_PI * y));
            if (e > err)
                err = e;
        }
    int converged = !(rnorm > tol * r0norm);
    int err_ok = err < 2.0 * h * h;
    printf("OCEAN_RESIDUAL initial %.6e final %.6e relative %.3e\n", r0norm, rnorm,
           rnorm / r0norm);
    printf("OCEAN_ERROR max %.6e bound %.6e\n", err, 2.0 * h * h);
    printf("RESULT ok=%d n=%ld p=%ld converged=%d cycles=%ld\n", converged && err_ok, n, P,
           converged, ncycles);
    MAIN_END
}
