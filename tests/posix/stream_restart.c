/* stream_restart: a thread (on another node) reads lines with fgets from
 * a pipe that main writes, each line in two parts with a pause between;
 * in each pause main sends the reader SIGUSR1, whose handler has
 * SA_RESTART.  As natively, every line arrives whole and in order, the
 * stream shows no error, and the handler ran once per line.  Before, the
 * fgets made at the master for the reader was interrupted there: stdio
 * took the EINTR, the first part of the line was lost to the fgets made
 * again, and the stream kept the error.
 * RESULT ok=1 checks=N (check.h) */
#include "check.h"

#define LINES 40

static FILE *in;
static volatile sig_atomic_t handled; /* (the reader's handler; read after the join) */
static struct gate ready = GATE_INITIALIZER;

static void on_usr1(int sig) { (void)sig; handled++; }

static void *reader(void *arg)
{
    (void)arg;
    long bad = 0, got = 0;
    char line[128], want[128];
    gate_set(&ready, 1);
    while (got < LINES && fgets(line, sizeof line, in)) {
        snprintf(want, sizeof want, "line %ld first part, second part\n", got);
        if (strcmp(line, want) && bad++ == 0)
            fprintf(stderr, "line %ld: %s", got, line);
        got++;
    }
    CHECK_EQ("lines", got, LINES);
    CHECK_EQ("lines_whole", bad, 0);
    CHECK_EQ("no_error", ferror(in), 0);
    return NULL;
}

int main(void)
{
    check_start();
    check_handler(SIGUSR1, on_usr1, SA_RESTART);
    int fds[2];
    if (!CHECK_ERR("pipe", pipe(fds), 0))
        return check_finish();
    in = fdopen(fds[0], "r");
    FILE *out = fdopen(fds[1], "w");
    if (!CHECK("fdopen", in && out))
        return check_finish();
    setvbuf(out, NULL, _IONBF, 0);
    pthread_t t;
    if (!CHECK_ERR("create", pthread_create(&t, NULL, reader, NULL), 0))
        return check_finish();
    CHECK("reader_ready", gate_wait(&ready, 1));
    for (int i = 0; i < LINES; i++) {
        fprintf(out, "line %d first part,", i);
        check_sleep_ms(20); /* the reader's fgets waits for the rest */
        pthread_kill(t, SIGUSR1);
        check_sleep_ms(20);
        fprintf(out, " second part\n");
    }
    CHECK_ERR("join", pthread_join(t, NULL), 0);
    CHECK_EQ("handled", handled, LINES);
    fclose(out);
    fclose(in);
    return check_finish();
}
