/* ending_mask: a thread ends with the signal mask it has then, as
 * natively: a signal it blocks and holds pending (a pthread_kill) is
 * dropped with it, and main returns with a blocked signal pending: the
 * process exits with main's status.  Before, a thread (and main) went
 * back at its end to the mask it started with: the pending signal was let
 * in there and ended the process.
 * RESULT ok=1 checks=N (check.h) */
#include "check.h"

static struct gate stage = GATE_INITIALIZER;

static void *blocker(void *arg)
{
    (void)arg;
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGUSR1);
    CHECK_ERR("thread_block", pthread_sigmask(SIG_BLOCK, &s, NULL), 0);
    gate_set(&stage, 1);
    CHECK("killed", gate_wait(&stage, 2));
    CHECK("thread_pending", check_pending(SIGUSR1));
    return NULL; /* ends with SIGUSR1 blocked and pending */
}

int main(void)
{
    check_start();
    pthread_t t;
    if (!CHECK_ERR("create", pthread_create(&t, NULL, blocker, NULL), 0))
        return check_finish();
    CHECK("blocked", gate_wait(&stage, 1));
    CHECK_ERR("kill", pthread_kill(t, SIGUSR1), 0);
    struct timespec pause = { 0, 100000000 }; /* (it reaches the thread's node) */
    nanosleep(&pause, NULL);
    gate_set(&stage, 2);
    CHECK_ERR("join", pthread_join(t, NULL), 0);
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGUSR2);
    CHECK_ERR("main_block", pthread_sigmask(SIG_BLOCK, &s, NULL), 0);
    raise(SIGUSR2);
    CHECK("main_pending", check_pending(SIGUSR2));
    return check_finish(); /* returns with SIGUSR2 blocked and pending */
}
