/* call_restart: a thread (on another node) blocked in a call made at the
 * master (recvmsg, sendto, fgets, an fopen of a FIFO) after a handler
 * with SA_RESTART ran on it stays interruptible, as natively:
 *   A  recvmsg, SIGUSR1 (SA_RESTART), then pthread_cancel: cancelled;
 *   B  recvmsg, SIGUSR1, then SIGUSR2 (no SA_RESTART): EINTR;
 *   C  recvmsg, SIGUSR1 whose handler leaves by siglongjmp: the datagram
 *      sent next is the thread's, not lost at the master;
 *   F  recvmsg, SIGUSR2 alone: EINTR;
 *   D  fgets, SIGUSR1, then cancel: cancelled;
 *   S  sendto into a full stream socket, SIGUSR1, then cancel: cancelled;
 *   O  fopen of a FIFO with no writer, SIGUSR1, then cancel: cancelled.
 * Before (b39a152 and 38588f0), those calls went on as calls made whole
 * once an SA_RESTART handler had run: no cancellation, no EINTR, and C's
 * datagram went nowhere.  A case that fails here unblocks the thread
 * itself (a datagram, a line, a reader) so that the run ends.
 * (A stream call's handler that leaves by siglongjmp still leaves what
 * that call reads at the master: README, Known limits.)
 * RESULT ok=1 checks=N (check.h) */
#define _GNU_SOURCE
#include <fcntl.h>
#include <setjmp.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "check.h"

static int dg[2], st[2];
static FILE *in;
static char fifo[64];
static volatile sig_atomic_t jump;
static sigjmp_buf env;
static volatile long rres;
static volatile int rerr;

static void on_usr1(int s)
{
    (void)s;
    if (jump) {
        jump = 0;
        siglongjmp(env, 1);
    }
}
static void on_usr2(int s) { (void)s; }

static void *receiver(void *jumps)
{
    char b[16];
    struct iovec v = { b, sizeof b };
    struct msghdr m = { .msg_iov = &v, .msg_iovlen = 1 };
    if (jumps && sigsetjmp(env, 1)) { /* jumped out: the next datagram is ours */
        check_sleep_ms(250);
        ssize_t r = recv(dg[1], b, sizeof b, MSG_DONTWAIT);
        rres = r, rerr = r < 0 ? errno : 0;
        return NULL;
    }
    jump = jumps != NULL;
    ssize_t r = recvmsg(dg[1], &m, 0);
    rres = r, rerr = r < 0 ? errno : 0;
    return NULL;
}

static void *line_reader(void *a)
{
    (void)a;
    char b[64];
    rres = fgets(b, sizeof b, in) ? 1 : -1;
    return NULL;
}

static void *sender(void *a)
{
    (void)a;
    static char buf[1 << 20];
    while (sendto(st[0], buf, sizeof buf, MSG_NOSIGNAL, NULL, 0) >= 0)
        ;
    return NULL;
}

static void *fifo_opener(void *a)
{
    (void)a;
    FILE *f = fopen(fifo, "r");
    if (f)
        fclose(f);
    return NULL;
}

static int joined(pthread_t t, void **ret)
{
    struct timespec d = check_deadline(CLOCK_REALTIME, 3000);
    return pthread_timedjoin_np(t, ret, &d);
}

/* fn's thread, signalled after 150 ms with first, then after 150 ms more
 * with then (0: cancelled): joined (0) within 3 s, or unblocked by
 * unblock and joined */
static int run(const char *name, void *(*fn)(void *), void *arg, int first, int then,
               void (*unblock)(void), void **ret)
{
    pthread_t t;
    if (!CHECK_ERR(name, pthread_create(&t, NULL, fn, arg), 0))
        return -1;
    check_sleep_ms(150);
    if (first) {
        pthread_kill(t, first);
        check_sleep_ms(150);
    }
    if (then)
        pthread_kill(t, then);
    else
        pthread_cancel(t);
    int j = joined(t, ret);
    CHECK_ERR(name, j, 0);
    if (j) {
        unblock();
        pthread_join(t, ret);
    }
    return j;
}

static void send_datagram(void) { send(dg[0], "x", 1, 0); }
static void drain(void)
{
    while (recv(dg[1], (char[16]){ 0 }, 16, MSG_DONTWAIT) > 0)
        ;
}
static int pipe_w = -1;
static void write_line(void) { write(pipe_w, "q\n", 2); }
static void read_all(void) { shutdown(st[1], SHUT_RD); close(st[1]); }
static void open_writer(void) { close(open(fifo, O_WRONLY | O_NONBLOCK)); }

int main(void)
{
    check_start();
    check_handler(SIGUSR1, on_usr1, SA_RESTART);
    check_handler(SIGUSR2, on_usr2, 0);
    CHECK_ERR("dgram_pair", socketpair(AF_UNIX, SOCK_DGRAM, 0, dg), 0);
    CHECK_ERR("stream_pair", socketpair(AF_UNIX, SOCK_STREAM, 0, st), 0);
    void *ret = NULL;

    if (!run("A_join", receiver, NULL, SIGUSR1, 0, send_datagram, &ret))
        CHECK("A_cancelled", ret == PTHREAD_CANCELED);
    drain();
    rres = 0;
    run("B_join", receiver, NULL, SIGUSR1, SIGUSR2, send_datagram, &ret);
    CHECK("B_eintr", rres == -1 && rerr == EINTR);
    drain();
    pthread_t t;
    if (CHECK_ERR("C_create", pthread_create(&t, NULL, receiver, (void *)1), 0)) {
        check_sleep_ms(150);
        pthread_kill(t, SIGUSR1);
        check_sleep_ms(100);
        send_datagram();
        CHECK_ERR("C_join", pthread_join(t, NULL), 0);
        CHECK_EQ("C_datagram_kept", rres, 1);
    }
    drain();
    run("F_join", receiver, NULL, 0, SIGUSR2, send_datagram, &ret);
    CHECK("F_eintr", rres == -1 && rerr == EINTR);

    int p[2];
    if (CHECK_ERR("pipe", pipe(p), 0)) {
        in = fdopen(p[0], "r");
        pipe_w = p[1];
        if (!run("D_join", line_reader, NULL, SIGUSR1, 0, write_line, &ret))
            CHECK("D_cancelled", ret == PTHREAD_CANCELED);
    }
    if (!run("S_join", sender, NULL, SIGUSR1, 0, read_all, &ret))
        CHECK("S_cancelled", ret == PTHREAD_CANCELED);
    snprintf(fifo, sizeof fifo, "call_restart.%d.fifo", (int)getpid());
    if (CHECK_ERR("mkfifo", mkfifo(fifo, 0600), 0)) {
        if (!run("O_join", fifo_opener, NULL, SIGUSR1, 0, open_writer, &ret))
            CHECK("O_cancelled", ret == PTHREAD_CANCELED);
        unlink(fifo);
    }
    return check_finish();
}
