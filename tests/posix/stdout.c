/* stdout: standard output is a terminal where the program's is, and only
 * there (isatty(1) in main and in a thread, which runs on another node),
 * and main's stdout is fully buffered on a file or a pipe, line-buffered
 * on a terminal, as the program's alone.  Main then prints LINES lines
 * and ends: the test counts that every one arrived.  (Only main prints
 * them: output of two nodes into one terminal or pipe is not kept in the
 * order of the program's, nor each line whole: see pthread_shim/README.md.)
 * RESULT ok=1 tty_main=T tty_thread=T linebuf_main=B */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <unistd.h>

#define LINES 2000

static int tty_thread;

static void *thread(void *arg)
{
    (void)arg;
    tty_thread = isatty(1);
    return NULL;
}

int main(void)
{
    int tty_main = isatty(1);
    printf("start\n"); /* (stdio decides the buffering at the first output) */
    int linebuf = __flbf(stdout) != 0;
    fflush(stdout);
    pthread_t t;
    pthread_create(&t, NULL, thread, NULL);
    pthread_join(t, NULL);
    for (int i = 0; i < LINES; i++)
        printf("line main %d\n", i);
    printf("RESULT ok=%d tty_main=%d tty_thread=%d linebuf_main=%d\n", tty_main == tty_thread, tty_main,
           tty_thread, linebuf);
    return 0;
}
