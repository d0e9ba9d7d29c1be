/* churn.c: phases of many threads alive at once (plain POSIX threads).
 *
 * Usage: churn [THREADS [PHASES [PAUSE_MS]]]   defaults: 8 2 500
 *
 * Each phase, main fills a shared array, then creates THREADS threads that
 * all stay alive together: each sums its slice of the array and writes the
 * sum, and the slice negated, into shared memory, then waits at a barrier
 * for all the others.  Main joins them all, checks every sum and every
 * negated element against a serial computation, and pauses PAUSE_MS before
 * the next phase.  Relinked, with CABLES_THREADS_PER_NODE below THREADS,
 * the threads of a phase need nodes attached on demand, and the pause lets
 * the nodes whose threads all ended be detached before the next phase.
 * Each thread prints one line on stdout: none may be lost on detach. */
#include "check.h"

#define SLICE 4096

static long *data; /* THREADS * SLICE, shared heap */
static long sums[1024];
static pthread_barrier_t all_here;
static long phase;

static void *work(void *arg)
{
    long i = (long)arg, s = 0;
    for (long j = i * SLICE; j < (i + 1) * SLICE; j++) {
        s += data[j];
        data[j] = -data[j];
    }
    sums[i] = s;
    printf("churn: phase %ld thread %ld sum %ld\n", phase, i, s); /* on its node's stdout */
    int rc = pthread_barrier_wait(&all_here);
    return (void *)(long)(rc == 0 || rc == PTHREAD_BARRIER_SERIAL_THREAD);
}

int main(int argc, char **argv)
{
    check_start();
    long nt = argc > 1 ? atol(argv[1]) : 8, phases = argc > 2 ? atol(argv[2]) : 2;
    long pause_ms = argc > 3 ? atol(argv[3]) : 500;
    if (nt < 1 || nt > 1024 || phases < 1 || pause_ms < 0) {
        fprintf(stderr, "usage: churn [THREADS (1-1024) [PHASES [PAUSE_MS]]]\n");
        return 2;
    }
    data = malloc(sizeof *data * (size_t)(nt * SLICE));
    CHECK("malloc", data != NULL);
    pthread_t *t = malloc(sizeof *t * (size_t)nt);
    for (long ph = 0; ph < phases; ph++) {
        phase = ph;
        for (long j = 0; j < nt * SLICE; j++)
            data[j] = (j * 7 + ph * 13) % 1000;
        CHECK_ERR("barrier_init", pthread_barrier_init(&all_here, NULL, (unsigned)nt), 0);
        long created = 0;
        for (long i = 0; i < nt; i++)
            created += pthread_create(&t[i], NULL, work, (void *)i) == 0;
        CHECK_EQ("all_created", created, nt);
        long through = 0;
        for (long i = 0; i < created; i++) {
            void *r;
            if (pthread_join(t[i], &r) == 0)
                through += (long)r;
        }
        CHECK_EQ("all_passed_the_barrier", through, nt);
        long bad_sum = 0, bad_elem = 0;
        for (long i = 0; i < nt; i++) {
            long s = 0;
            for (long j = i * SLICE; j < (i + 1) * SLICE; j++) {
                s += (j * 7 + ph * 13) % 1000;
                bad_elem += data[j] != -((j * 7 + ph * 13) % 1000);
            }
            bad_sum += sums[i] != s;
        }
        CHECK_EQ("sums", bad_sum, 0);
        CHECK_EQ("elements", bad_elem, 0);
        CHECK_ERR("barrier_destroy", pthread_barrier_destroy(&all_here), 0);
        if (ph + 1 < phases)
            usleep((useconds_t)pause_ms * 1000);
    }
    free(t);
    free(data);
    return check_finish();
}
