/* jump_out: a signal handler that leaves by siglongjmp, as legacy code
 * leaves a wait at a timeout.  A worker thread (on another node) counts in
 * a plain variable and writes the count into PAGES pages it allocated
 * (homed on its node, so main's reads fetch them), sleeping between
 * counts; main polls that count with usleep, reading the pages between
 * sleeps, and a timer's SIGUSR1, every 0.1-2 ms, jumps main out of its
 * poll, JUMPS times: out of usleep or a read, or out of whatever the
 * runtime did inside them (a pull, a fault's fetch).  Then SLEEPS sleeps
 * of main, each with the timer armed 0.1-0.5 ms ahead and the handler
 * returning, must each end by the signal (EINTR), as natively: never
 * sleep on past it (two may, as natively on a loaded machine).  Then main must still see the count move (polling),
 * take a mutex the worker takes, and hand the worker a block it
 * allocated, which the worker must read as main wrote it.  Last, a
 * reader thread (on another node: its reads of main's pipe are made at the
 * master) reads the pipe a byte at a time, and main, ROUNDS times, sends it
 * SIGUSR2 while the pipe is empty, whose handler jumps out of the read,
 * then writes the next byte: every byte must be read, in order, and most
 * signals must have jumped out of a read.  (Before, a jump out of a remote
 * read left the read running at the master: it took the next byte, and the
 * reader waited for ever.)  Then the reader reads a file main opened (its
 * reads made whole at the master), a byte at a time at the offset lseek
 * gives, sleeping 0.1 ms after each, while main sends it SIGUSR2 every
 * 0.1-0.3 ms until it is done: each jump leaves the file's offset and the
 * bytes read before it as natively (a call the kernel does not interrupt
 * ends before the handler runs), so every byte must be there.  (Before, a
 * jump during such a call left its byte unread though the offset had
 * moved past it, and the sixteenth such jump ended the node: its waits
 * ran out.)
 * RESULT ok=1 checks=N */
#include <fcntl.h>
#include <unistd.h>
#include <stdio.h>
#include <setjmp.h>
#include <stdbool.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>

#include "check.h"

enum { JUMPS = 300, SLEEPS = 300, PAGES = 64, ROUNDS = 100, FILE_BYTES = 2000 };

static sigjmp_buf env;
static volatile sig_atomic_t armed, caught;
static volatile long count;
static volatile long (*pages)[512]; /* (mu) the worker's block */
static volatile int stop;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static long locked_count;
static int *handed; /* (mu) main's block, and what the worker read in it */
static int got;

static void on_usr1(int sig)
{
    (void)sig;
    caught++;
    if (armed) {
        armed = 0;
        siglongjmp(env, 1);
    }
}

static void *worker(void *arg)
{
    (void)arg;
    check_block_signal(SIGUSR1); /* the timer's signals are main's */
    volatile long(*mine)[512] = calloc(PAGES, sizeof *mine);
    pthread_mutex_lock(&mu);
    pages = mine;
    pthread_mutex_unlock(&mu);
    while (!stop) {
        count++;
        for (int p = 0; p < PAGES; p++)
            mine[p][0] = count;
        pthread_mutex_lock(&mu);
        locked_count++;
        if (handed && !got)
            got = handed[1023];
        pthread_mutex_unlock(&mu);
        usleep(200);
    }
    return NULL;
}

static sigjmp_buf renv;
static volatile sig_atomic_t rarmed;
static int fds[2];
static int rjumps, rnext, rbad; /* (mu) */
static int ffd;
static unsigned char fbuf[FILE_BYTES];
static int fjumps, fdone; /* (mu) */

static void on_usr2(int sig)
{
    (void)sig;
    if (rarmed) {
        rarmed = 0;
        siglongjmp(renv, 1);
    }
}

static void *reader(void *arg)
{
    (void)arg;
    for (volatile int next = 0;;) {
        if (sigsetjmp(renv, 1) == 0) {
            unsigned char c;
            rarmed = 1;
            ssize_t n = read(fds[0], &c, 1);
            rarmed = 0;
            if (n <= 0)
                break; /* (main closed the pipe) */
            pthread_mutex_lock(&mu);
            rbad += c != (unsigned char)next;
            rnext = ++next;
            pthread_mutex_unlock(&mu);
        } else {
            pthread_mutex_lock(&mu);
            rjumps++;
            pthread_mutex_unlock(&mu);
        }
    }
    for (volatile int jumps = 0;;) {
        if (sigsetjmp(renv, 1) == 0) {
            rarmed = 1;
            for (off_t at; (at = lseek(ffd, 0, SEEK_CUR)) >= 0 && at < FILE_BYTES; usleep(100))
                if (read(ffd, &fbuf[at], 1) != 1)
                    break;
            rarmed = 0;
            pthread_mutex_lock(&mu);
            fjumps = jumps;
            fdone = 1;
            pthread_mutex_unlock(&mu);
            break;
        }
        jumps++;
    }
    return NULL;
}

/* *v (mu) passed was within ms */
static bool passes(const int *v, int was, int ms)
{
    long long end = check_now_ms(CLOCK_MONOTONIC) + ms;
    for (;;) {
        pthread_mutex_lock(&mu);
        int now = *v;
        pthread_mutex_unlock(&mu);
        if (now > was || check_now_ms(CLOCK_MONOTONIC) >= end)
            return now > was;
        usleep(500);
    }
}

/* the count moved by more than 5 within WAIT_MS, seen by polling */
static int count_moves(void)
{
    long c0 = count;
    long long end = check_now_ms(CLOCK_MONOTONIC) + WAIT_MS;
    while (count < c0 + 5 && check_now_ms(CLOCK_MONOTONIC) < end)
        usleep(100);
    return count >= c0 + 5;
}

int main(void)
{
    check_start();
    timer_t timer;
    if (!check_signal_timer(SIGUSR1, on_usr1, 0, &timer))
        return check_finish();
    pthread_t t;
    CHECK_EQ("create", pthread_create(&t, NULL, worker, NULL), 0);
    CHECK("moves_before", count_moves());
    pthread_mutex_lock(&mu);
    volatile long(*const block)[512] = pages;
    pthread_mutex_unlock(&mu);
    CHECK("block", block != NULL);
    if (!block)
        return check_finish();

    volatile int jumps = 0;
    unsigned seed = 1;
    while (jumps < JUMPS) {
        if (sigsetjmp(env, 1) == 0) {
            struct itimerspec its = { .it_value = { 0, 100000 + rand_r(&seed) % 1900000 } };
            armed = 1;
            timer_settime(timer, 0, &its, NULL);
            for (long sink = 0;; usleep(50))
                for (int p = 0; p < PAGES; p++)
                    sink += block[p][0];
        }
        jumps++;
    }
    struct itimerspec off = { { 0, 0 }, { 0, 0 } };
    timer_settime(timer, 0, &off, NULL);
    CHECK_EQ("jumps", jumps, JUMPS);

    int slept_on = 0; /* sleeps the signal did not end */
    for (int i = 0; i < SLEEPS; i++) {
        long ns = 100000 + rand_r(&seed) % 400000;
        struct itimerspec its = { .it_value = { 0, ns } };
        int before = caught;
        double armed_at = check_now_ms(CLOCK_MONOTONIC);
        timer_settime(timer, 0, &its, NULL);
        struct timespec nap = { 0, 200000000 }, left;
        /* (the thread held up before its call past half the delay, as a
         * loaded machine may: the signal may come first, natively too) */
        bool late = check_now_ms(CLOCK_MONOTONIC) - armed_at > ns / 2e6;
        int r = nanosleep(&nap, &left);
        slept_on += !late && (r != -1 || errno != EINTR);
        while (caught == before) /* (a signal that came before the sleep: it slept on) */
            usleep(100);
    }
    /* Natively too, on a loaded machine, the timer can fire in the instants
     * between that check and the call (the thread preempted there): beside
     * a busy loop, 1 of 300 slept on in 1 of 51 native runs and in 3 of 51
     * at 2 nodes.  The faults this catches slept on 5-20 of 300 (5111c01,
     * a4c569c). */
    CHECK_LE("slept_on", slept_on, 2);

    CHECK("moves_after", count_moves());
    long least = count; /* each page was written after that, or last */
    usleep(10000);
    for (int p = 0; p < PAGES; p++)
        CHECK_GE("page", block[p][0], least - 1);
    CHECK_EQ("lock", pthread_mutex_lock(&mu), 0);
    long seen = locked_count;
    CHECK_EQ("unlock", pthread_mutex_unlock(&mu), 0);
    CHECK_GT("locked_count", seen, 0);
    int *p = malloc(4096);
    CHECK("malloc", p != NULL);
    p[1023] = 42;
    pthread_mutex_lock(&mu);
    handed = p;
    pthread_mutex_unlock(&mu);
    long long end = check_now_ms(CLOCK_MONOTONIC) + WAIT_MS;
    int read = 0;
    while (!read && check_now_ms(CLOCK_MONOTONIC) < end) {
        usleep(1000);
        pthread_mutex_lock(&mu);
        read = got;
        pthread_mutex_unlock(&mu);
    }
    CHECK_EQ("handed_read", read, 42);
    stop = 1;
    CHECK_EQ("join", pthread_join(t, NULL), 0);
    free(p);
    free((void *)block);

    check_handler(SIGUSR2, on_usr2, 0);
    CHECK_EQ("pipe", pipe(fds), 0);
    char path[64];
    snprintf(path, sizeof path, "/tmp/cables-jump-out-%d", (int)getpid());
    ffd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    CHECK_GE("file", ffd, 0);
    unlink(path);
    for (int i = 0; i < FILE_BYTES; i++)
        fbuf[i] = (unsigned char)(i * 7 + 1);
    CHECK_EQ("file_write", write(ffd, fbuf, FILE_BYTES), FILE_BYTES);
    CHECK_EQ("file_rewind", lseek(ffd, 0, SEEK_SET), 0);
    memset(fbuf, 0, sizeof fbuf);
    CHECK_EQ("create_reader", pthread_create(&t, NULL, reader, NULL), 0);
    int sent = 0;
    for (bool ok = true; ok && sent < ROUNDS;) {
        pthread_mutex_lock(&mu);
        int jumped = rjumps;
        pthread_mutex_unlock(&mu);
        pthread_kill(t, SIGUSR2);
        passes(&rjumps, jumped, 50); /* (the signal may come before the read: no jump) */
        unsigned char c = (unsigned char)sent;
        ok = write(fds[1], &c, 1) == 1 && passes(&rnext, sent, WAIT_MS);
        sent += ok;
    }
    close(fds[1]);
    unsigned seed2 = 7;
    for (int done = 0, n = 0; !done && n < 50000; n++) { /* (at most 5-15 s) */
        pthread_kill(t, SIGUSR2);
        usleep(100 + rand_r(&seed2) % 200);
        pthread_mutex_lock(&mu);
        done = fdone;
        pthread_mutex_unlock(&mu);
    }
    CHECK_EQ("join_reader", pthread_join(t, NULL), 0);
    close(fds[0]);
    CHECK_EQ("bytes_read", rnext, ROUNDS);
    CHECK_EQ("bytes_in_order", rbad, 0);
    CHECK_GE("read_jumps", rjumps, ROUNDS / 2);
    int wrong = 0;
    for (int i = 0; i < FILE_BYTES; i++)
        wrong += fbuf[i] != (unsigned char)(i * 7 + 1);
    CHECK_EQ("file_bytes_wrong", wrong, 0);
    CHECK_EQ("file_offset", lseek(ffd, 0, SEEK_CUR), FILE_BYTES);
    CHECK_GE("file_jumps", fjumps, 20);
    close(ffd);
    return check_finish();
}
