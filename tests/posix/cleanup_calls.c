/* cleanup_calls: a thread cancelled in a sleep (where glibc itself acts on
 * the cancellation; on libcables, on another node than main) runs its
 * cleanup handler, whose calls on main's pipes are made whole, as
 * natively: a read that waits for main's byte gets it, a write of a line
 * after it is read by main.  Before, on libcables, a call of that handler
 * still counted as cancelled: the read waited 200 ms, then gave EINTR.
 * RESULT ok=1 checks=N (check.h) */
#include "check.h"

#include <time.h>
#include <unistd.h>

static int in[2], out[2];
static struct gate stage = GATE_INITIALIZER;
static ssize_t got_n = -2, wrote_n = -2;
static int got_errno;
static char got;

static void cleanup(void *arg)
{
    (void)arg;
    errno = 0;
    got_n = read(in[0], &got, 1); /* main writes it 300 ms after the cancel */
    got_errno = errno;
    wrote_n = write(out[1], "cleaned\n", 8);
}

static void *sleeper(void *arg)
{
    (void)arg;
    pthread_cleanup_push(cleanup, NULL);
    gate_set(&stage, 1);
    struct timespec t = { 30, 0 };
    nanosleep(&t, NULL); /* cancelled here */
    pthread_cleanup_pop(0);
    return NULL;
}

int main(void)
{
    check_start();
    if (!CHECK_ERR("pipe_in", pipe(in), 0) || !CHECK_ERR("pipe_out", pipe(out), 0))
        return check_finish();
    pthread_t t;
    if (!CHECK_ERR("create", pthread_create(&t, NULL, sleeper, NULL), 0))
        return check_finish();
    CHECK("sleeping", gate_wait(&stage, 1));
    check_sleep_ms(100); /* in its sleep */
    CHECK_ERR("cancel", pthread_cancel(t), 0);
    check_sleep_ms(300); /* its handler waits in its read */
    CHECK_EQ("write_in", write(in[1], "x", 1), 1);
    void *ret = NULL;
    CHECK_ERR("join", pthread_join(t, &ret), 0);
    CHECK("cancelled", ret == PTHREAD_CANCELED);
    CHECK_EQ("cleanup_read", got_n, 1);
    CHECK_EQ("cleanup_read_errno", got_errno, 0);
    CHECK_EQ("cleanup_byte", got, 'x');
    CHECK_EQ("cleanup_write", wrote_n, 8);
    char line[16] = { 0 };
    CHECK_EQ("line_read", read(out[0], line, sizeof line - 1), 8);
    CHECK("line", strcmp(line, "cleaned\n") == 0);
    return check_finish();
}
