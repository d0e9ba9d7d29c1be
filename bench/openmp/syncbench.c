/* syncbench: what each OpenMP construct costs, as EPCC's syncbench measures
 * it: the construct run REPS times in a loop (inside one region where it is
 * not a region itself), a short delay in its body; the time per run in
 * microseconds, minus the delay's own time.  Built natively (cc -fopenmp,
 * libgomp) and with cables-cc -fopenmp; bench/openmp.sh compares them.
 *
 *   syncbench [REPS]        (default 200; the team: OMP_NUM_THREADS)
 * prints "construct NAME us=T" lines, then RESULT ok=1 threads=N */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

static volatile long sink;

static void delay(int n)
{
    long a = 0;
    for (int i = 0; i < n; i++)
        a += i;
    sink = a;
}

#define DELAY 100

static void report(const char *name, double t, int reps, double ref)
{
    printf("construct %s us=%.2f\n", name, (t / reps) * 1e6 - ref);
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 200;
    if (reps < 1) {
        fprintf(stderr, "usage: syncbench [REPS>=1]\n");
        return 2;
    }
    /* the delay alone, per run */
    double t0 = omp_get_wtime();
    for (int r = 0; r < reps * 10; r++)
        delay(DELAY);
    double ref = (omp_get_wtime() - t0) / (reps * 10) * 1e6;
    int n = omp_get_max_threads();
    long x = 0;
    int ok = 1;
    omp_lock_t lk;
    omp_init_lock(&lk);

    t0 = omp_get_wtime();
    for (int r = 0; r < reps; r++) {
#pragma omp parallel
        delay(DELAY);
    }
    report("parallel", omp_get_wtime() - t0, reps, ref);

    double t = 0;
#pragma omp parallel
    {
        double s = omp_get_wtime();
        for (int r = 0; r < reps; r++) {
#pragma omp for schedule(static)
            for (int i = 0; i < n; i++)
                delay(DELAY);
        }
#pragma omp master
        t = omp_get_wtime() - s;
    }
    report("for", t, reps, ref);

#pragma omp parallel
    {
        double s = omp_get_wtime();
        for (int r = 0; r < reps; r++) {
            delay(DELAY);
#pragma omp barrier
        }
#pragma omp master
        t = omp_get_wtime() - s;
    }
    report("barrier", t, reps, ref);

#pragma omp parallel
    {
        double s = omp_get_wtime();
        for (int r = 0; r < reps; r++) {
#pragma omp single
            delay(DELAY);
        }
#pragma omp master
        t = omp_get_wtime() - s;
    }
    report("single", t, reps, ref);

    /* each thread reps/n times: reps in all, one at a time */
#pragma omp parallel
    {
        double s = omp_get_wtime();
        for (int r = 0; r < reps / n; r++) {
#pragma omp critical
            {
                delay(DELAY);
                x++;
            }
        }
#pragma omp barrier
#pragma omp master
        t = omp_get_wtime() - s;
    }
    report("critical", t, reps / n * n, ref);
    ok &= x == reps / n * n;

    x = 0;
#pragma omp parallel
    {
        double s = omp_get_wtime();
        for (int r = 0; r < reps / n; r++) {
            omp_set_lock(&lk);
            delay(DELAY);
            x++;
            omp_unset_lock(&lk);
        }
#pragma omp barrier
#pragma omp master
        t = omp_get_wtime() - s;
    }
    report("lock", t, reps / n * n, ref);
    ok &= x == reps / n * n;

    x = 0;
#pragma omp parallel
    {
        double s = omp_get_wtime();
        for (int r = 0; r < reps / n; r++) {
            delay(DELAY);
#pragma omp atomic
            x++;
        }
#pragma omp barrier
#pragma omp master
        t = omp_get_wtime() - s;
    }
    report("atomic", t, reps / n * n, ref);
    ok &= x == reps / n * n;

    x = 0;
    t0 = omp_get_wtime();
    for (int r = 0; r < reps; r++) {
#pragma omp parallel reduction(+ : x)
        {
            delay(DELAY);
            x++;
        }
    }
    report("reduction", omp_get_wtime() - t0, reps, ref);
    ok &= x == (long)reps * n;
    omp_destroy_lock(&lk);
    printf("RESULT ok=%d threads=%d\n", ok, n);
    return !ok;
}
