/* poll_mixed: a thread (on another node) polls a descriptor of its own (a
 * signalfd: its node's signals) together with the process's (a pipe of
 * main's), as natively:
 *   - the signal main sends it makes the signalfd readable: poll says so,
 *     and not the pipe;
 *   - main writes into the pipe: poll says the pipe, not the signalfd;
 *   - nothing comes: poll times out (0);
 *   - both ready: both said (2);
 *   - a handled signal (SA_RESTART or not) ends it: EINTR;
 *   - select over the same two says the signalfd, or times out (0, with
 *     the time left in the timeval).
 * Before, the whole poll was made at the master, where the signalfd's
 * number names another descriptor (or none: POLLNVAL at once).
 * RESULT ok=1 checks=N (check.h) */
#include <poll.h>
#include <sys/select.h>
#include <sys/signalfd.h>

#include "check.h"

static int p[2];
static volatile sig_atomic_t usr2;
static void on_usr2(int sig) { (void)sig; usr2++; }
static struct gate stage = GATE_INITIALIZER;

static void *poller(void *arg)
{
    (void)arg;
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &usr1, NULL);
    int sfd = signalfd(-1, &usr1, SFD_CLOEXEC);
    if (!CHECK("signalfd", sfd >= 0))
        return NULL;
    struct pollfd f[2] = { { sfd, POLLIN, 0 }, { p[0], POLLIN, 0 } };
    struct signalfd_siginfo si;
    char c;

    gate_set(&stage, 1); /* main sends SIGUSR1 */
    CHECK_EQ("signal_poll", poll(f, 2, 10000), 1);
    CHECK("signal_revents", f[0].revents == POLLIN && f[1].revents == 0);
    CHECK_EQ("signal_read", read(sfd, &si, sizeof si), (long)sizeof si);
    CHECK_EQ("signal_number", si.ssi_signo, SIGUSR1);

    gate_set(&stage, 2); /* main writes a byte */
    CHECK_EQ("pipe_poll", poll(f, 2, 10000), 1);
    CHECK("pipe_revents", f[0].revents == 0 && f[1].revents == POLLIN);
    CHECK_EQ("pipe_read", read(p[0], &c, 1), 1);

    CHECK_EQ("timeout_poll", poll(f, 2, 200), 0);
    CHECK("timeout_revents", f[0].revents == 0 && f[1].revents == 0);

    gate_set(&stage, 3); /* main sends SIGUSR1 and writes a byte */
    CHECK("both_ready", gate_wait(&stage, 4));
    CHECK_EQ("both_poll", poll(f, 2, 10000), 2);
    CHECK("both_revents", f[0].revents == POLLIN && f[1].revents == POLLIN);
    CHECK_EQ("both_read", read(sfd, &si, sizeof si), (long)sizeof si);
    CHECK_EQ("both_read_pipe", read(p[0], &c, 1), 1);

    gate_set(&stage, 5); /* main sends SIGUSR2, handled: the poll ends */
    errno = 0;
    CHECK("handled_poll", poll(f, 2, 10000) == -1 && errno == EINTR);
    CHECK_EQ("handled", usr2, 1);

    gate_set(&stage, 6); /* main sends SIGUSR1: select says the signalfd */
    fd_set rd;
    FD_ZERO(&rd);
    FD_SET(sfd, &rd);
    FD_SET(p[0], &rd);
    int top = (sfd > p[0] ? sfd : p[0]) + 1;
    struct timeval tv = { 10, 0 };
    CHECK_EQ("select_signal", select(top, &rd, NULL, NULL, &tv), 1);
    CHECK("select_sets", FD_ISSET(sfd, &rd) && !FD_ISSET(p[0], &rd));
    CHECK_EQ("select_read", read(sfd, &si, sizeof si), (long)sizeof si);
    FD_ZERO(&rd);
    FD_SET(sfd, &rd);
    FD_SET(p[0], &rd);
    tv = (struct timeval){ 0, 200000 };
    CHECK_EQ("select_timeout", select(top, &rd, NULL, NULL, &tv), 0);
    CHECK("select_timeout_sets", !FD_ISSET(sfd, &rd) && !FD_ISSET(p[0], &rd));
    CHECK("select_time_left", tv.tv_sec == 0 && tv.tv_usec < 200000);
    close(sfd);
    return NULL;
}

int main(void)
{
    check_start();
    check_handler(SIGUSR2, on_usr2, SA_RESTART); /* (poll ends all the same) */
    if (!CHECK_ERR("pipe", pipe(p), 0))
        return check_finish();
    pthread_t t;
    if (!CHECK_ERR("create", pthread_create(&t, NULL, poller, NULL), 0))
        return check_finish();
    CHECK("stage1", gate_wait(&stage, 1));
    check_sleep_ms(200); /* (its poll waits) */
    CHECK_ERR("kill", pthread_kill(t, SIGUSR1), 0);
    CHECK("stage2", gate_wait(&stage, 2));
    check_sleep_ms(200);
    CHECK_EQ("write", write(p[1], "x", 1), 1);
    CHECK("stage3", gate_wait(&stage, 3));
    CHECK_ERR("kill_again", pthread_kill(t, SIGUSR1), 0);
    CHECK_EQ("write_again", write(p[1], "y", 1), 1);
    check_sleep_ms(200); /* (the signal reached its node) */
    gate_set(&stage, 4);
    CHECK("stage5", gate_wait(&stage, 5));
    check_sleep_ms(200);
    CHECK_ERR("kill_usr2", pthread_kill(t, SIGUSR2), 0);
    CHECK("stage6", gate_wait(&stage, 6));
    check_sleep_ms(200);
    CHECK_ERR("kill_select", pthread_kill(t, SIGUSR1), 0);
    CHECK_ERR("join", pthread_join(t, NULL), 0);
    return check_finish();
}
