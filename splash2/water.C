/* water.C: SPLASH-2 style N-squared molecular dynamics (WATER-NSQUARED
 * shape), written for the SPLASH-2 M4 macro set.
 *
 * N molecules, simplified to point particles with a Lennard-Jones pair
 * potential (epsilon = sigma = mass = 1) cut off at rc and shifted to zero
 * there, in a periodic cubic box (minimum image), integrated by velocity
 * Verlet.  The molecules are split into P contiguous ranges, one per
 * thread.  Each step every thread computes, for each of its molecules i,
 * the pairs (i, j) with j = i+1 .. i+N/2 (mod N) (for even N the pair at
 * distance N/2 only from the lower half), so every pair is done exactly
 * once, as in the SPLASH-2 N-squared code.  The pair force is added to the
 * private force slot of the thread (for i, and with the opposite sign for
 * j); the slots are shared; after a barrier every thread sums slots 0..P-1
 * for its own molecules.
 *
 * Forces and energies are accumulated in 64-bit fixed point (scale 2^32):
 * integer sums do not depend on the order of the terms, so the forces, and
 * with them every position, velocity and energy, depend on the arguments
 * only, not on P or on the node layout.  The pair force is rounded once
 * and added with both signs, so the total force is exactly zero.
 *
 * Initial state: a simple cubic lattice at density 0.8 with a small
 * deterministic jitter, velocities from an LCG, mean removed, scaled to
 * temperature 1.  Self-check: the total momentum stays ~0 and the total
 * energy stays within a relative 1e-3 of its start.
 *
 * Usage: water [-n N] [-p P] [-s STEPS]   (defaults 216, 1, 10)
 * Prints drifts, then
 *   RESULT ok=1 n=N p=P steps=S energy_ok=1 momentum_ok=1 e_final=X */
MAIN_ENV
#include "args.h"
#include <math.h>

#define FIX_SCALE 4294967296.0 /* 2^32 */
#define DT 0.001
#define DENSITY 0.8

struct GlobalMemory {
    BARDEC(start)
    double e0;
    double emax_drift;
    double e_final;
    int overflow;
} *Global;

long n = 216, P = 1, steps = 10;
double boxl, rc2, eshift;
double *pos;          /* n*3, shared */
double *vel;          /* n*3 */
double *frc;          /* n*3, the summed force */
long long *priv;      /* P*n*3, the force slot of every thread */
long long *pe_slot;   /* P potential energies */
long long *ke_slot;   /* P kinetic energies */
int *ovf_slot;        /* P overflow flags */

static unsigned long long lcg_state = 12345;
static double lcg_uniform(void) /* [0,1) */
{
    lcg_state = lcg_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(lcg_state >> 11) / 9007199254740992.0;
}

static long long to_fix(double v, int *ovf)
{
    if (!(fabs(v) < 1e5)) {
        *ovf = 1;
        return 0;
    }
    return llrint(v * FIX_SCALE);
}

static double wrap(double x)
{
    x = fmod(x, boxl);
    if (x < 0)
        x += boxl;
    if (x >= boxl)
        x -= boxl;
    return x;
}

/* Pair forces of this thread into its slot, its potential energy into its
 * energy slot. */
static void pair_forces(long id, long first, long last)
{
    long long *my = priv + (size_t)id * n * 3;
    long long pe = 0;
    int ovf = 0;
    for (long k = 0; k < n * 3; k++)
        my[k] = 0;
    long half = n / 2;
    for (long i = first; i < last; i++) {
        for (long d = 1; d <= half; d++) {
            if (n % 2 == 0 && d == half && i >= half)
                continue;
            long j = (i + d) % n;
            double dr[3], r2 = 0;
            for (int c = 0; c < 3; c++) {
                double x = pos[i * 3 + c] - pos[j * 3 + c];
                x -= boxl * nearbyint(x / boxl);
                dr[c] = x;
                r2 += x * x;
            }
            if (r2 >= rc2)
                continue;
            double ir2 = 1.0 / r2;
            double ir6 = ir2 * ir2 * ir2;
            double fr = 24.0 * ir6 * (2.0 * ir6 - 1.0) * ir2; /* force / r */
            pe += to_fix(4.0 * ir6 * (ir6 - 1.0) - eshift, &ovf);
            for (int c = 0; c < 3; c++) {
                long long q = to_fix(fr * dr[c], &ovf);
                my[i * 3 + c] += q;
                my[j * 3 + c] -= q;
            }
        }
    }
    pe_slot[id] = pe;
    ovf_slot[id] = ovf;
}

/* Sum the slots 0..P-1 for the own molecules into the shared force. */
static void sum_forces(long first, long last)
{
    for (long k = first * 3; k < last * 3; k++) {
        long long s = 0;
        for (long t = 0; t < P; t++)
            s += priv[(size_t)t * n * 3 + k];
        frc[k] = (double)s / FIX_SCALE;
    }
}

static void kinetic(long id, long first, long last)
{
    long long ke = 0;
    int ovf = 0;
    for (long i = first; i < last; i++) {
        double v2 = 0;
        for (int c = 0; c < 3; c++)
            v2 += vel[i * 3 + c] * vel[i * 3 + c];
        ke += to_fix(0.5 * v2, &ovf);
    }
    ke_slot[id] = ke;
    if (ovf)
        ovf_slot[id] = 1;
}

/* Thread 0: the total energy from the slots, in order 0..P-1. */
static void total_energy(int first_time)
{
    long long e = 0;
    for (long t = 0; t < P; t++) {
        e += pe_slot[t] + ke_slot[t];
        if (ovf_slot[t])
            Global->overflow = 1;
    }
    double ed = (double)e / FIX_SCALE;
    if (first_time)
        Global->e0 = ed;
    double drift = fabs(ed - Global->e0) / fabs(Global->e0);
    if (drift > Global->emax_drift)
        Global->emax_drift = drift;
    Global->e_final = ed;
}

void SlaveStart(void)
{
    long id;
    GET_PID(id)
    long first = id * n / P, last = (id + 1) * n / P;
    const double h = 0.5 * DT;

    BARRIER(Global->start, P)
    if (id == 0) {
        SPLASH3_ROI_BEGIN
    }

    pair_forces(id, first, last);
    BARRIER(Global->start, P)
    sum_forces(first, last);
    kinetic(id, first, last);
    BARRIER(Global->start, P)
    if (id == 0)
        total_energy(1);

    for (long s = 0; s < steps; s++) {
        for (long i = first; i < last; i++)
            for (int c = 0; c < 3; c++) {
                vel[i * 3 + c] += h * frc[i * 3 + c];
                pos[i * 3 + c] = wrap(pos[i * 3 + c] + DT * vel[i * 3 + c]);
            }
        BARRIER(Global->start, P)
        pair_forces(id, first, last);
        BARRIER(Global->start, P)
        sum_forces(first, last);
        for (long i = first; i < last; i++)
            for (int c = 0; c < 3; c++)
                vel[i * 3 + c] += h * frc[i * 3 + c];
        kinetic(id, first, last);
        BARRIER(Global->start, P)
        if (id == 0)
            total_energy(0);
    }

    if (id == 0) {
        SPLASH3_ROI_END
    }
}

static void usage(void)
{
    fprintf(stderr, "usage: water [-n N] [-p P] [-s STEPS]  (2 <= N <= 4096, 1 <= P <= min(N, 64), "
                    "0 <= STEPS <= 100000)\n");
    exit(2);
}

int main(int argc, char **argv)
{
    parse_args(argc, argv,
               (const splash_arg_t[]){ { "-n", &n }, { "-p", &P }, { "-s", &steps }, { 0 } });
    if (n < 2 || n > 4096 || P < 1 || P > 64 || P > n || steps < 0 || steps > 100000)
        usage();

    boxl = cbrt((double)n / DENSITY);
    double rc = 0.5 * boxl < 2.5 ? 0.5 * boxl : 2.5;
    rc2 = rc * rc;
    double irc6 = 1.0 / (rc2 * rc2 * rc2);
    eshift = 4.0 * irc6 * (irc6 - 1.0);

    Global = (struct GlobalMemory *)G_MALLOC(sizeof(struct GlobalMemory));
    pos = (double *)G_MALLOC((size_t)n * 3 * sizeof(double));
    vel = (double *)G_MALLOC((size_t)n * 3 * sizeof(double));
    frc = (double *)G_MALLOC((size_t)n * 3 * sizeof(double));
    priv = (long long *)G_MALLOC((size_t)P * n * 3 * sizeof(long long));
    pe_slot = (long long *)G_MALLOC((size_t)P * sizeof(long long));
    ke_slot = (long long *)G_MALLOC((size_t)P * sizeof(long long));
    ovf_slot = (int *)G_MALLOC((size_t)P * sizeof(int));
    MAIN_INITENV(, 1 << 20)
    BARINIT(Global->start, P)

    /* lattice with jitter, velocities with zero mean at temperature 1 */
    long m = 1;
    while (m * m * m < n)
        m++;
    double a = boxl / m;
    double vsum[3] = { 0, 0, 0 };
    for (long i = 0; i < n; i++) {
        long site[3] = { i % m, (i / m) % m, i / (m * m) };
        for (int c = 0; c < 3; c++) {
            pos[i * 3 + c] = wrap((site[c] + 0.5 + 0.1 * (lcg_uniform() - 0.5)) * a);
            vel[i * 3 + c] = lcg_uniform() - 0.5;
            vsum[c] += vel[i * 3 + c];
        }
    }
    double v2 = 0;
    for (long i = 0; i < n; i++)
        for (int c = 0; c < 3; c++) {
            vel[i * 3 + c] -= vsum[c] / n;
            v2 += vel[i * 3 + c] * vel[i * 3 + c];
        }
    double scale = sqrt(3.0 * n * 1.0 / v2);
    for (long i = 0; i < n * 3; i++)
        vel[i] *= scale;

    CREATE(SlaveStart, P)
    WAIT_FOR_END(P - 1)

    double mom[3] = { 0, 0, 0 }, vabs = 0;
    for (long i = 0; i < n; i++)
        for (int c = 0; c < 3; c++) {
            mom[c] += vel[i * 3 + c];
            vabs += fabs(vel[i * 3 + c]);
        }
    double mom_rel = (fabs(mom[0]) + fabs(mom[1]) + fabs(mom[2])) / vabs;
    int momentum_ok = mom_rel < 1e-10;
    int energy_ok = !Global->overflow && Global->emax_drift < 1e-3;
    int ok = momentum_ok && energy_ok;
    printf("WATER_ENERGY_DRIFT %.3e\n", Global->emax_drift);
    printf("WATER_MOMENTUM %.3e\n", mom_rel);
    printf("RESULT ok=%d n=%ld p=%ld steps=%ld energy_ok=%d momentum_ok=%d e_final=%.9e\n", ok, n,
           P, steps, energy_ok, momentum_ok, Global->e_final);
    MAIN_END
}
