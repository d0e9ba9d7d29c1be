/* fork_unheld: a child of fork reads shared data its node never held.
 * Main fills an array; a worker (on 2 nodes: on node 1, which never reads
 * it) forks, and the child reads the array and exits 0.  It prints
 * "CHILD exited=E status=S signal=G".  Natively the child exits 0; on
 * another node than the master the child has only the pages its node
 * held (README: known limits), and it dies of SIGSEGV with a message
 * naming that (tests/multinode/shim_test.cc reads both). */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

enum { SIZE = 1 << 20 };
static volatile char *array;

static void *worker(void *arg)
{
    (void)arg;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        long sum = 0;
        for (size_t i = 0; i < SIZE; i += 4096)
            sum += array[i];
        _exit(sum == (long)(SIZE / 4096) ? 0 : 1);
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid)
        printf("CHILD fork or wait failed\n");
    else
        printf("CHILD exited=%d status=%d signal=%d\n", WIFEXITED(st), WIFEXITED(st) ? WEXITSTATUS(st) : -1,
               WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    return NULL;
}

int main(void)
{
    array = malloc(SIZE);
    if (!array)
        return 1;
    memset((char *)array, 1, SIZE);
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    pthread_join(t, NULL);
    return 0;
}
