/* many_blocked: more calls of other nodes' threads blocked at the master
 * at once than the proxies the master ran before (256).  N threads on
 * node 1 each read a byte from a pipe (main's: the master's descriptors);
 * once they wait, one more thread on node 1 writes N bytes into it.
 * Every reader gets its byte and the run ends.  Before, the writer's call
 * queued behind the readers' at the master, and the run waited for ever.
 * usage: many_blocked [N]
 * RESULT ok=1 readers=N got=G written=W */
#include <cables.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct job { int fd; long n; }; /* (in the GAS: a program's statics are not shared here) */

static void *reader(void *a)
{
    char c = 0;
    return (void *)(long)(read(((struct job *)a)->fd, &c, 1) == 1 && c == 'x');
}

static void *writer(void *a)
{
    long n = ((struct job *)a)->n;
    char *b = malloc((size_t)n);
    if (!b)
        return (void *)-1L;
    memset(b, 'x', (size_t)n);
    long w = (long)write(((struct job *)a)->fd, b, (size_t)n);
    free(b);
    return (void *)w;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 300;
    cables_thread_t *t = malloc(((size_t)n + 1) * sizeof *t);
    struct job *rd = cables_alloc(sizeof *rd), *wr = cables_alloc(sizeof *wr);
    int p[2];
    if (n < 1 || !t || !rd || !wr || pipe(p)) {
        printf("RESULT ok=0 error=setup\n");
        return 1;
    }
    *rd = (struct job){ p[0], 1 };
    *wr = (struct job){ p[1], n };
    for (long i = 0; i < n; i++)
        if (cables_thread_create(&t[i], 1, reader, rd)) {
            printf("RESULT ok=0 error=create\n");
            return 1;
        }
    sleep(2); /* the readers' calls reach the master first */
    if (cables_thread_create(&t[n], 1, writer, wr)) {
        printf("RESULT ok=0 error=create_writer\n");
        return 1;
    }
    long got = 0;
    for (long i = 0; i < n; i++) {
        void *r = NULL;
        cables_thread_join(t[i], &r);
        got += (long)r;
    }
    void *w = NULL;
    cables_thread_join(t[n], &w);
    printf("RESULT ok=%d readers=%ld got=%ld written=%ld\n", got == n && (long)w == n, n, got, (long)w);
    return 0;
}
