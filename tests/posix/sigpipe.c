/* sigpipe: a write into a pipe or socket no one reads raises SIGPIPE for
 * the thread that writes, as in a process of its own (on libcables, a
 * thread on another node makes the write at the master, whose descriptors
 * these are).  One thread at a time:
 *   - with a handler: write returns EPIPE and the writing thread's handler
 *     ran once (a thread-local count);
 *   - with SIGPIPE blocked: EPIPE, and SIGPIPE is pending for that thread
 *     (sigtimedwait takes it);
 *   - send with MSG_NOSIGNAL on a socket whose peer closed: EPIPE, no
 *     signal;
 *   - fputs and fflush on a stream of a pipe no one reads: EOF with EPIPE,
 *     the handler ran once.
 * Before, on libcables, a thread on another node got EPIPE alone.
 * RESULT ok=1 checks=N (check.h).
 *
 * "flood": a thread prints lines for 60 s at most, with SIGPIPE's default:
 * into a pipe that head closes, the program ends killed by SIGPIPE. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

static __thread volatile sig_atomic_t handled;
static int broken[2], sock[2];
static FILE *stream;

static void on_pipe(int sig) { (void)sig; handled++; }

static void *with_handler(void *arg)
{
    (void)arg;
    errno = 0;
    CHECK_EQ("write_epipe", write(broken[1], "x", 1), -1);
    CHECK_ERR("write_errno", errno, EPIPE);
    CHECK_EQ("write_handled", handled, 1);
    return NULL;
}

static void *blocked(void *arg)
{
    (void)arg;
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGPIPE);
    CHECK_EQ("block", pthread_sigmask(SIG_BLOCK, &s, NULL), 0);
    errno = 0;
    CHECK_EQ("blocked_epipe", write(broken[1], "x", 1), -1);
    CHECK_ERR("blocked_errno", errno, EPIPE);
    sigset_t p;
    CHECK_EQ("sigpending", sigpending(&p), 0);
    CHECK_EQ("pending", sigismember(&p, SIGPIPE), 1);
    struct timespec zero = { 0, 0 };
    CHECK_EQ("taken", sigtimedwait(&s, NULL, &zero), SIGPIPE);
    CHECK_EQ("blocked_handled", handled, 0);
    return NULL;
}

static void *nosignal(void *arg)
{
    (void)arg;
    errno = 0;
    CHECK_EQ("send_epipe", send(sock[0], "x", 1, MSG_NOSIGNAL), -1);
    CHECK_ERR("send_errno", errno, EPIPE);
    CHECK_EQ("send_handled", handled, 0);
    return NULL;
}

static void *streamed(void *arg)
{
    (void)arg;
    CHECK_EQ("fputs", fputs("line\n", stream), 1);
    errno = 0;
    CHECK_EQ("fflush_eof", fflush(stream), EOF);
    CHECK_ERR("fflush_errno", errno, EPIPE);
    CHECK_EQ("fflush_handled", handled, 1);
    return NULL;
}

static void in_thread(const char *name, void *(*fn)(void *))
{
    pthread_t t;
    CHECK_EQ(name, pthread_create(&t, NULL, fn, NULL), 0);
    struct timespec ts = check_deadline(CLOCK_REALTIME, WAIT_MS);
    CHECK_EQ("join", pthread_timedjoin_np(t, NULL, &ts), 0);
}

static void *flood(void *arg)
{
    (void)arg;
    for (int i = 0; i < 6000; i++) {
        printf("line %d\n", i);
        fflush(stdout);
        usleep(10000);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "flood")) {
        pthread_t t;
        pthread_create(&t, NULL, flood, NULL);
        pthread_join(t, NULL);
        return 1;
    }
    check_start();
    struct sigaction sa = { .sa_handler = on_pipe };
    sigemptyset(&sa.sa_mask);
    CHECK_EQ("sigaction", sigaction(SIGPIPE, &sa, NULL), 0);
    CHECK_EQ("pipe", pipe(broken), 0);
    CHECK_EQ("close_reader", close(broken[0]), 0);
    CHECK_EQ("socketpair", socketpair(AF_UNIX, SOCK_STREAM, 0, sock), 0);
    CHECK_EQ("close_peer", close(sock[1]), 0);
    int sp[2];
    CHECK_EQ("pipe_stream", pipe(sp), 0);
    CHECK("fdopen", (stream = fdopen(sp[1], "w")) != NULL);
    CHECK_EQ("close_stream_reader", close(sp[0]), 0);

    in_thread("with_handler", with_handler);
    in_thread("blocked", blocked);
    in_thread("nosignal", nosignal);
    in_thread("streamed", streamed);
    CHECK_EQ("main_handled", handled, 0);
    fclose(stream);
    return check_finish();
}
