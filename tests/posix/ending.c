/* ending: the process ends while other threads still run, as a process's
 * exit or exec ends its threads wherever they are.  A writer (on 2 nodes:
 * on node 1) fills a 128 MiB array over and over, its pages homed there; a
 * reader (on 2 nodes: on the master, with main) reads the writer's latest
 * pass over and over, each a new fetch of every page.  Once the reader is under way, main ends the
 * process in one of three ways (the argument):
 *   exit       exit(3): the run's status is 3;
 *   exec       execl("/bin/sh", "sh", "-c", "exit 4"): the status is 4;
 *   exit-exec  a second reader calls exit(5) as main execs the shell:
 *              whichever comes first ends the process, 4 or 5.
 * The reader's faults after the runtime stopped serving pages must wait
 * for that end: before, the reader died there (status 2, "accessed after
 * the node left the cluster") and the exit's status or the exec was lost.
 * A destructor that sleeps 0.3 s makes an exit's window for them wide.
 * Nothing is printed on success; the test reads the status. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { SIZE = 128 << 20, PAGE = 4096 };

static char *array;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static int written, reading;

static void *writer(void *arg)
{
    (void)arg;
    for (int pass = 1;; pass++) { /* each pass's pages new to the reader */
        for (size_t i = 0; i < SIZE; i += PAGE)
            array[i] = (char)(pass + i / PAGE);
        pthread_mutex_lock(&m);
        written = pass;
        pthread_cond_broadcast(&c);
        pthread_mutex_unlock(&m);
    }
    return NULL;
}

static void *reader(void *arg)
{
    volatile long sum = 0;
    for (int pass = 0;; pass++) {
        pthread_mutex_lock(&m); /* the writer's latest pass */
        pthread_mutex_unlock(&m);
        for (size_t i = 0; i < SIZE; i += PAGE) {
            sum += array[i];
            if (pass == 0 && i == 64 * PAGE) {
                pthread_mutex_lock(&m);
                reading++;
                pthread_cond_broadcast(&c);
                pthread_mutex_unlock(&m);
            }
        }
        if (arg) /* the second reader */
            exit(5);
    }
    return NULL;
}

/* run after the runtime stopped (a destructor runs after the exit
 * handlers): the readers fault meanwhile */
__attribute__((destructor)) static void late(void) { usleep(300000); }

int main(int argc, char **argv)
{
    const char *how = argc > 1 ? argv[1] : "exit";
    int exec_too = !strcmp(how, "exit-exec");
    if (strcmp(how, "exit") && strcmp(how, "exec") && !exec_too) {
        fprintf(stderr, "usage: ending exit|exec|exit-exec\n");
        return 1;
    }
    array = malloc(SIZE);
    if (!array)
        return 1;
    pthread_t w, r[2];
    pthread_create(&w, NULL, writer, NULL);
    pthread_mutex_lock(&m);
    while (!written)
        pthread_cond_wait(&c, &m);
    pthread_mutex_unlock(&m);
    pthread_create(&r[0], NULL, reader, NULL);
    if (exec_too)
        pthread_create(&r[1], NULL, reader, "second");
    pthread_mutex_lock(&m);
    while (reading < 1 + exec_too)
        pthread_cond_wait(&c, &m);
    pthread_mutex_unlock(&m);
    if (!strcmp(how, "exit"))
        exit(3);
    execl("/bin/sh", "sh", "-c", "exit 4", (char *)NULL);
    perror("execl");
    return 1;
}
