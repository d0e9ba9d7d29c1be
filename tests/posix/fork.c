/* fork: the child of fork has memory of its own.  Main, then a worker (on
 * 2 nodes: on node 1), forks; the child checks that it sees the values
 * its parent had (a global, a local, a heap block), changes them, runs a
 * deep recursion (its stack), allocates and frees, and ends with exit
 * (its exit handlers run, the runtime's end does not) giving its findings
 * as its status; a pthread_atfork handler, released in the child, the lock
 * its prepare handler took.  The parent meanwhile changes the global and the local
 * and recurses too, then waits: its values, the heap block's too, are
 * what it made them, whatever the child did.  A second child execs a shell
 * that ends with status 5, a child of vfork one that ends with 6 (before,
 * on another node, its exec replaced the whole program at the master), a
 * third ends with exit(7), and one of the
 * worker's returns from the thread's function (status 0).  Before,
 * the child ran on the very stack its parent returned on: the program
 * hung or crashed.
 * RESULT ok=1 checks=N (check.h) */
#include <sys/wait.h>

#include "check.h"

static int global = 11;
/* pthread_atfork's usual use: the lock held across the fork, released in
 * both processes */
static pthread_mutex_t guard = PTHREAD_MUTEX_INITIALIZER;
static int prepared, in_parent, in_child;
static void prepare(void) { pthread_mutex_lock(&guard); prepared++; }
static void parent_after(void) { in_parent++; pthread_mutex_unlock(&guard); }
static void child_after(void) { in_child++; pthread_mutex_unlock(&guard); }
static int exit_code; /* the child's, given at its exit */

static void child_exit(void) { _exit(exit_code); }

static int deep(int n)
{
    volatile char buf[2048];
    memset((char *)buf, n, sizeof buf);
    return n ? deep(n - 1) + buf[7] : 0;
}

/* fork, the child's checks as its status bits, the parent's after */
static void fork_here(const char *who)
{
    char name[64];
    int local = 22;
    char *block = malloc(64);
    strcpy(block, "parent");
    global = 11;
    pid_t pid = fork();
    if (pid == 0) {
        int bits = (global == 11) | (local == 22) << 1 | (!strcmp(block, "parent")) << 2;
        global = 1, local = 2;
        strcpy(block, "child");
        char *more = malloc(100000);
        more = realloc(more, 200000);
        bits |= (more != NULL && in_child == 1 && !pthread_mutex_trylock(&guard)) << 3;
        free(more);
        block = realloc(block, 100);
        bits |= (block && !strcmp(block, "child")) << 5;
        free(block);
        bits |= (deep(100) == 100 * 101 / 2) << 4;
        exit_code = 64 + bits;
        atexit(child_exit);
        exit(1); /* child_exit ends it with the bits */
    }
    snprintf(name, sizeof name, "%s_fork", who);
    CHECK_GT(name, pid, 0);
    global = 33, local = 44;
    int d = deep(50);
    int st = 0;
    snprintf(name, sizeof name, "%s_waitpid", who);
    CHECK_EQ(name, waitpid(pid, &st, 0), pid);
    snprintf(name, sizeof name, "%s_child_saw_and_ran", who);
    CHECK_EQ(name, WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st), 64 + 63);
    snprintf(name, sizeof name, "%s_global_kept", who);
    CHECK_EQ(name, global, 33);
    snprintf(name, sizeof name, "%s_local_kept", who);
    CHECK_EQ(name, local, 44);
    snprintf(name, sizeof name, "%s_heap_kept", who);
    CHECK(name, !strcmp(block, "parent"));
    snprintf(name, sizeof name, "%s_stack_kept", who);
    CHECK_EQ(name, d, 50 * 51 / 2);
    free(block);
    /* a child that execs */
    pid = fork();
    if (pid == 0) {
        execlp("sh", "sh", "-c", "exit 5", (char *)NULL);
        _exit(127);
    }
    snprintf(name, sizeof name, "%s_exec_status", who);
    CHECK_EQ(name, waitpid(pid, &st, 0) == pid && WIFEXITED(st) ? WEXITSTATUS(st) : -1, 5);
    /* a child of vfork that execs (no fork handler runs) */
    pid = vfork();
    if (pid == 0) {
        execlp("sh", "sh", "-c", "exit 6", (char *)NULL);
        _exit(127);
    }
    snprintf(name, sizeof name, "%s_vfork_exec_status", who);
    CHECK_EQ(name, waitpid(pid, &st, 0) == pid && WIFEXITED(st) ? WEXITSTATUS(st) : -1, 6);
    /* a child that ends with exit, through libc's whole end */
    pid = fork();
    if (pid == 0)
        exit(7);
    snprintf(name, sizeof name, "%s_exit_status", who);
    CHECK_EQ(name, waitpid(pid, &st, 0) == pid && WIFEXITED(st) ? WEXITSTATUS(st) : -1, 7);
}

static void *worker(void *arg)
{
    (void)arg;
    fork_here("worker");
    /* a child whose only thread returns: it ends with status 0 */
    pid_t pid = fork();
    if (pid == 0)
        return NULL;
    int st = -1;
    CHECK_EQ("worker_return_status", waitpid(pid, &st, 0) == pid && WIFEXITED(st) ? WEXITSTATUS(st) : -1, 0);
    return NULL;
}

int main(void)
{
    check_start();
    CHECK_EQ("atfork", pthread_atfork(prepare, parent_after, child_after), 0);
    fork_here("main");
    pthread_t t;
    CHECK_EQ("create", pthread_create(&t, NULL, worker, NULL), 0);
    CHECK_EQ("join", pthread_join(t, NULL), 0);
    CHECK_EQ("global_after", global, 33);
    CHECK_EQ("atfork_prepared", prepared, 7);
    CHECK_EQ("atfork_parent", in_parent, 7);
    CHECK_EQ("atfork_child_not_here", in_child, 0);
    CHECK_EQ("guard_free", pthread_mutex_trylock(&guard), 0);
    return check_finish();
}
