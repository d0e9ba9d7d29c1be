/* pid: the process has one process id, the same for main and for a thread
 * (which runs on another node): getpid and getppid; a name made of it in
 * main (a file) is the thread's too; the thread's kill and sigqueue to it
 * reach the program's handler (sigqueue's in main, which sees getpid as
 * the sender); the calls
 * that take a pid take it there (sched_getaffinity, getpriority,
 * getpgid, getsid, pidfd_open, /proc/PID/stat); and the child of a fork made
 * by the thread has a pid of its own and getpid's as its parent's.
 * RESULT ok=1 checks=N (check.h) */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/pidfd.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "check.h"

static pid_t main_pid, main_ppid;
static char path[128];
static volatile sig_atomic_t usr1_seen, usr2_seen, usr2_value;
static volatile pid_t usr2_sender;

static void on_usr1(int s) { (void)s; usr1_seen++; }

static void on_usr2(int s, siginfo_t *si, void *uc)
{
    (void)s;
    (void)uc;
    usr2_sender = si->si_pid;
    usr2_value = si->si_value.sival_int;
    usr2_seen++;
}

/* the command's name in a stat file (in comm, 16 bytes) */
static int comm_of(const char *file, char *comm)
{
    char buf[512];
    int fd = open(file, O_RDONLY);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = 0;
    char *a = strchr(buf, '('), *b = strrchr(buf, ')');
    if (!a || !b || b - a - 1 > 15)
        return -1;
    memcpy(comm, a + 1, (size_t)(b - a - 1));
    comm[b - a - 1] = 0;
    return 0;
}

static int wait_until(volatile sig_atomic_t *v, int want)
{
    for (int i = 0; i < WAIT_MS && *v < want; i++)
        usleep(1000);
    return *v >= want;
}

static void *thread(void *arg)
{
    (void)arg;
    CHECK_EQ("t_getpid", getpid(), main_pid);
    CHECK_EQ("t_getppid", getppid(), main_ppid);
    /* a name made of the pid, as main made it */
    char mine[128];
    snprintf(mine, sizeof mine, "%s/pid-test.%d", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
    CHECK("t_same_name", strcmp(mine, path) == 0);
    CHECK_EQ("t_file_found", access(mine, F_OK), 0);
    /* signals to the process by its pid */
    CHECK_EQ("t_kill", kill(getpid(), SIGUSR1), 0);
    /* (taken by main, which checks: this thread blocks it) */
    sigset_t usr2;
    sigemptyset(&usr2);
    sigaddset(&usr2, SIGUSR2);
    CHECK_EQ("t_block", pthread_sigmask(SIG_BLOCK, &usr2, NULL), 0);
    CHECK_EQ("t_sigqueue", sigqueue(getpid(), SIGUSR2, (union sigval){ .sival_int = 42 }), 0);
    /* calls that take the pid */
    cpu_set_t set;
    CHECK_EQ("t_sched_getaffinity", sched_getaffinity(getpid(), sizeof set, &set), 0);
    errno = 0;
    getpriority(PRIO_PROCESS, (id_t)getpid());
    CHECK_ERR("t_getpriority", errno, 0);
    CHECK_EQ("t_getpgid", getpgid(getpid()), getpgid(0));
    CHECK_EQ("t_getsid", getsid(getpid()), getsid(0));
    int pfd = pidfd_open(getpid(), 0);
    CHECK_GE("t_pidfd_open", pfd, 0);
    if (pfd >= 0)
        close(pfd);
    char proc[64], comm[16] = "", self_comm[16] = "?";
    snprintf(proc, sizeof proc, "/proc/%d/stat", (int)getpid());
    CHECK_EQ("t_proc_pid_stat", comm_of(proc, comm), 0);
    CHECK_EQ("t_proc_self_stat", comm_of("/proc/self/stat", self_comm), 0);
    CHECK("t_proc_pid_is_self", strcmp(comm, self_comm) == 0);
    /* a fork's child: its own pid, getpid's as its parent's */
    pid_t c = fork();
    if (c == 0)
        _exit(getpid() != main_pid && getppid() == main_pid ? 0 : 1);
    CHECK_GT("t_fork", c, 0);
    CHECK("t_fork_pid_new", c != main_pid);
    int st = -1;
    CHECK_EQ("t_waitpid", waitpid(c, &st, 0), c);
    CHECK_EQ("t_child_saw_parent", WIFEXITED(st) ? WEXITSTATUS(st) : -1, 0);
    return NULL;
}

int main(void)
{
    check_start();
    main_pid = getpid();
    main_ppid = getppid();
    snprintf(path, sizeof path, "%s/pid-test.%d", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
    int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0600);
    CHECK_GE("m_create", fd, 0);
    close(fd);
    struct sigaction a = { 0 };
    a.sa_handler = on_usr1;
    sigaction(SIGUSR1, &a, NULL);
    a.sa_handler = NULL;
    a.sa_sigaction = on_usr2;
    a.sa_flags = SA_SIGINFO;
    sigaction(SIGUSR2, &a, NULL);
    pthread_t t;
    CHECK_EQ("m_create_thread", pthread_create(&t, NULL, thread, NULL), 0);
    CHECK_EQ("m_join", pthread_join(t, NULL), 0);
    /* (the handlers' flags are polled here, on main's node: a flag a
     * handler on another node sets is seen there at an acquire) */
    CHECK("m_kill_arrived", wait_until(&usr1_seen, 1));
    CHECK("m_sigqueue_arrived", wait_until(&usr2_seen, 1));
    CHECK_EQ("m_sigqueue_value", usr2_value, 42);
    CHECK_EQ("m_sigqueue_sender", usr2_sender, main_pid);
    CHECK_EQ("m_getpid_after", getpid(), main_pid);
    unlink(path);
    return check_finish();
}
