/* fft.C: complex 1-D FFT of n = 2^m points by the six-step method.
 * The data is a sqrt(n) x sqrt(n) matrix; transpose, row FFTs, twiddle
 * multiply, transpose, row FFTs, transpose.  Rows are split contiguously
 * among the threads, with a barrier between steps.  The forward transform
 * is followed by the inverse one; the result is checked against the input.
 * Usage: fft -m M -p P   prints RESULT ok=1 m=M p=P err_ok=1 checksum=X */
MAIN_ENV

#include "args.h"
#include <math.h>
#include <stdint.h>

#define PAD 64 /* doubles: one line of results per thread on its own 512 bytes */

struct GlobalMemory {
    BARDEC(start)
    double err[64 * PAD];
    uint64_t hash[64 * PAD];
} *Global;

long M, P, N, R; /* R = sqrt(N) rows of R points */
double *x;       /* 2*N doubles: the data, complex interleaved */
double *tr;      /* 2*N doubles: the transpose target */
double *tw;      /* 2*N doubles: the twiddles w^(r*c), w = exp(-2 pi i / N) */
double *roots;   /* R doubles: exp(-2 pi i k / R), k < R/2 */
long *bitrev;    /* R entries */

static uint64_t mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* the input point j: deterministic, independent of the thread count */
static void input(long j, double *re, double *im)
{
    uint64_t a = mix64(2 * (uint64_t)j + 1), b = mix64(2 * (uint64_t)j + 2);
    *re = (double)(a >> 11) / 9007199254740992.0 * 2.0 - 1.0;
    *im = (double)(b >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

/* dst[r][c] = src[c][r] for the rows r of this thread */
static void transpose(double *dst, const double *src, long r0, long r1)
{
    for (long r = r0; r < r1; r++)
        for (long c = 0; c < R; c++) {
            dst[2 * (r * R + c)] = src[2 * (c * R + r)];
            dst[2 * (r * R + c) + 1] = src[2 * (c * R + r) + 1];
        }
}

/* in-place radix-2 FFT of one row of R points; dir = -1 forward, +1 inverse */
static void row_fft(double *a, int dir)
{
    for (long i = 0; i < R; i++) {
        long j = bitrev[i];
        if (i < j) {
            double t0 = a[2 * i], t1 = a[2 * i + 1];
            a[2 * i] = a[2 * j];
            a[2 * i + 1] = a[2 * j + 1];
            a[2 * j] = t0;
            a[2 * j + 1] = t1;
        }
    }
    for (long len = 2; len <= R; len <<= 1) {
        long half = len >> 1, step = R / len;
        for (long s = 0; s < R; s += len)
            for (long k = 0; k < half; k++) {
                double wr = roots[2 * (k * step)];
                double wi = dir < 0 ? roots[2 * (k * step) + 1] : -roots[2 * (k * step) + 1];
                double *u = a + 2 * (s + k), *v = a + 2 * (s + k + half);
                double vr = v[0] * wr - v[1] * wi, vi = v[0] * wi + v[1] * wr;
                v[0] = u[0] - vr;
                v[1] = u[1] - vi;
                u[0] += vr;
                u[1] += vi;
            }
    }
}

static void rows_fft(double *a, long r0, long r1, int dir)
{
    for (long r = r0; r < r1; r++)
        row_fft(a + 2 * r * R, dir);
}

static void twiddle(double *a, long r0, long r1, int dir)
{
    for (long r = r0; r < r1; r++)
        for (long c = 0; c < R; c++) {
            double *p = a + 2 * (r * R + c);
            double wr = tw[2 * (r * R + c)];
            double wi = dir < 0 ? tw[2 * (r * R + c) + 1] : -tw[2 * (r * R + c) + 1];
            double pr = p[0] * wr - p[1] * wi, pi = p[0] * wi + p[1] * wr;
            p[0] = pr;
            p[1] = pi;
        }
}

/* the six steps; the result is back in x, in natural order */
static void six_step(long r0, long r1, int dir)
{
    transpose(tr, x, r0, r1);
    BARRIER(Global->start, P)
    rows_fft(tr, r0, r1, dir);
    twiddle(tr, r0, r1, dir);
    BARRIER(Global->start, P)
    transpose(x, tr, r0, r1);
    BARRIER(Global->start, P)
    rows_fft(x, r0, r1, dir);
    BARRIER(Global->start, P)
    transpose(tr, x, r0, r1);
    BARRIER(Global->start, P)
    memcpy(x + 2 * r0 * R, tr + 2 * r0 * R, (size_t)(r1 - r0) * R * 2 * sizeof(double));
    BARRIER(Global->start, P)
}

void SlaveStart(void)
{
    long id;
    GET_PID(id)
    long r0 = id * (R / P), r1 = r0 + R / P;

    for (long j = r0 * R; j < r1 * R; j++)
        input(j, &x[2 * j], &x[2 * j + 1]);
    for (long r = r0; r < r1; r++)
        for (long c = 0; c < R; c++) {
            long e = (r * c) % N;
            tw[2 * (r * R + c)] = cos(2.0 * M_PI * (double)e / (double)N);
            tw[2 * (r * R + c) + 1] = -sin(2.0 * M_PI * (double)e / (double)N);
        }
    BARRIER(Global->start, P)
    if (id == 0) {
        SPLASH3_ROI_BEGIN
    }

    six_step(r0, r1, -1);

    if (id == 0) {
        SPLASH3_ROI_END
    }
    uint64_t h = 0;
    for (long j = r0 * R; j < r1 * R; j++) {
        int64_t qr = llround(x[2 * j] * 1e6), qi = llround(x[2 * j + 1] * 1e6);
        h += mix64((uint64_t)j * 0x100000001b3ULL ^ mix64((uint64_t)qr ^ mix64((uint64_t)qi)));
    }
    Global->hash[id * PAD] = h;

    six_step(r0, r1, +1);

    double err = 0;
    for (long j = r0 * R; j < r1 * R; j++) {
        double re, im;
        input(j, &re, &im);
        double er = fabs(x[2 * j] / (double)N - re), ei = fabs(x[2 * j + 1] / (double)N - im);
        if (er > err)
            err = er;
        if (ei > err)
            err = ei;
    }
    Global->err[id * PAD] = err;
    BARRIER(Global->start, P)
}

static void usage(void)
{
    fprintf(stderr, "usage: fft -m M -p P  (M even, 2..28; P 1..64 dividing 2^(M/2))\n");
    exit(2);
}

int main(int argc, char **argv)
{
    M = 16;
    P = 1;
    parse_args(argc, argv, (const splash_arg_t[]){ { "-m", &M }, { "-p", &P }, { 0 } });
    if (M < 2 || M > 28 || M % 2 || P < 1 || P > 64)
        usage();
    N = 1L << M;
    R = 1L << (M / 2);
    if (R % P)
        usage();

    Global = (struct GlobalMemory *)G_MALLOC(sizeof(struct GlobalMemory))
    x = (double *)G_MALLOC(2 * N * sizeof(double))
    tr = (double *)G_MALLOC(2 * N * sizeof(double))
    tw = (double *)G_MALLOC(2 * N * sizeof(double))
    roots = (double *)G_MALLOC(R * sizeof(double))
    bitrev = (long *)G_MALLOC(R * sizeof(long))
    MAIN_INITENV(, 1 << 20)
    BARINIT(Global->start, P)
    for (long k = 0; k < R / 2; k++) {
        roots[2 * k] = cos(2.0 * M_PI * (double)k / (double)R);
        roots[2 * k + 1] = -sin(2.0 * M_PI * (double)k / (double)R);
    }
    for (long i = 0; i < R; i++) {
        long b = 0;
        for (long v = i, k = 1; k < R; k <<= 1, v >>= 1)
            b = (b << 1) | (v & 1);
        bitrev[i] = b;
    }

    CREATE(SlaveStart, P)
    WAIT_FOR_END(P - 1)

    double err = 0;
    uint64_t h = 0;
    for (long i = 0; i < P; i++) {
        if (Global->err[i * PAD] > err)
            err = Global->err[i * PAD];
        h += Global->hash[i * PAD];
    }
    int ok = err < 1e-8;
    printf("FFT_ERR %.3e\n", err);
    printf("RESULT ok=%d m=%ld p=%ld err_ok=%d checksum=%016llx\n", ok, M, P, ok,
           (unsigned long long)h);
    MAIN_END
}
