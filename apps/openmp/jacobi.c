/* jacobi: an OpenMP program as found in the wild, unmodified: Jacobi
 * relaxation of the Laplace equation on an N x N grid with fixed borders,
 * for a given number of sweeps.  Each sweep is a `parallel for` over rows
 * (static schedule) with a max reduction of the change; the grids swap.
 * Built with `cc -fopenmp` (libgomp) and with `cables-cc -fopenmp`, it
 * prints the same result: the checksum of the final grid (computed by one
 * thread, in order, so rounding is the same), the last sweep's change, and
 * a row-wise checksum made in a `parallel for` with a `+` reduction over
 * integers (exact whatever the order).
 *
 *   jacobi [N [SWEEPS [THREADS]]]     (default 512 200; THREADS: the
 *                                      team's size, else OMP_NUM_THREADS)
 * RESULT ok=1 n=N sweeps=S sum=... diff=... rows=... */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 512;
    int sweeps = argc > 2 ? atoi(argv[2]) : 200;
    if (argc > 3)
        omp_set_num_threads(atoi(argv[3]));
    if (n < 3 || sweeps < 1) {
        fprintf(stderr, "usage: jacobi [N>=3 [SWEEPS>=1 [THREADS]]]\n");
        return 2;
    }
    double *a = malloc(sizeof(double) * n * n), *b = malloc(sizeof(double) * n * n);
    if (!a || !b) {
        fprintf(stderr, "jacobi: out of memory for two %dx%d grids\n", n, n);
        return 1;
    }
#pragma omp parallel for
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double edge = i == 0 ? 100.0 : j == 0 ? 50.0 : (i == n - 1 || j == n - 1) ? 0.0 : -1;
            a[i * n + j] = b[i * n + j] = edge >= 0 ? edge : 0.0;
        }
    double diff = 0;
    double t0 = omp_get_wtime();
    int threads = 1;
    for (int s = 0; s < sweeps; s++) {
        diff = 0;
#pragma omp parallel for reduction(max : diff)
        for (int i = 1; i < n - 1; i++)
            for (int j = 1; j < n - 1; j++) {
                double v = 0.25 * (a[(i - 1) * n + j] + a[(i + 1) * n + j] + a[i * n + j - 1] +
                                   a[i * n + j + 1]);
                double d = fabs(v - a[i * n + j]);
                if (d > diff)
                    diff = d;
                b[i * n + j] = v;
            }
        double *t = a;
        a = b, b = t;
    }
    double t1 = omp_get_wtime();
#pragma omp parallel
#pragma omp single
    threads = omp_get_num_threads();
    long long rows = 0;
#pragma omp parallel for reduction(+ : rows)
    for (int i = 0; i < n; i++) {
        long long r = 0;
        for (int j = 0; j < n; j++)
            r += (long long)(a[i * n + j] * 1000.0);
        rows += r * (i + 1);
    }
    double sum = 0;
    for (int i = 0; i < n * n; i++)
        sum += a[i];
    fprintf(stderr, "jacobi: %d threads, %d sweeps of %dx%d in %.3f s\n", threads, sweeps, n,
            n, t1 - t0);
    printf("RESULT ok=%d n=%d sweeps=%d sum=%.6f diff=%.9f rows=%lld\n",
           isfinite(sum) && diff >= 0, n, sweeps, sum, diff, rows);
    free(a);
    free(b);
    return 0;
}
