/* stdout: standard output and error are terminals where the program's
 * are, and only there (isatty(1) and isatty(2) in main and in a thread,
 * which runs on another node).  Then THREADS threads (on as many nodes as
 * there are) and main print LINES lines each, all at once, each line's
 * number from a counter under a mutex, every fifth on standard error
 * (after a flush of standard output): the lines must arrive whole, every
 * one, in the counter's order (the test checks).  Then each thread's last
 * words begin a line that main ends, after the joins, with the result:
 * they come before it (the test checks).
 * RESULT ok=1 tty_main=T tty_thread=T tty_err_main=T tty_err_thread=T lines=N */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#define THREADS 3
#define LINES 500 /* each */

static int tty_thread, tty_err_thread;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int next, tails; /* (mu) */
static pthread_barrier_t lines_done;

static void print_lines(void)
{
    for (int i = 0; i < LINES; i++) {
        pthread_mutex_lock(&mu);
        if (next % 5 == 4) {
            fflush(stdout);
            fprintf(stderr, "line %d\n", next++);
        } else {
            printf("line %d\n", next++);
        }
        pthread_mutex_unlock(&mu);
    }
}

static void *thread(void *arg)
{
    if (arg) {
        tty_thread = isatty(1);
        tty_err_thread = isatty(2);
    }
    print_lines();
    pthread_barrier_wait(&lines_done);
    /* a part of a line, which main ends after the join */
    pthread_mutex_lock(&mu);
    printf("tail%d ", tails++);
    pthread_mutex_unlock(&mu);
    return NULL;
}

int main(void)
{
    int tty_main = isatty(1), tty_err_main = isatty(2);
    printf("start\n");
    fflush(stdout);
    pthread_t t[THREADS];
    pthread_barrier_init(&lines_done, NULL, THREADS + 1);
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, thread, i == 0 ? &t : NULL);
    print_lines();
    pthread_barrier_wait(&lines_done);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    printf("\nRESULT ok=%d tty_main=%d tty_thread=%d tty_err_main=%d tty_err_thread=%d lines=%d\n",
           tty_main == tty_thread && tty_err_main == tty_err_thread, tty_main, tty_thread, tty_err_main,
           tty_err_thread, next);
    return 0;
}
