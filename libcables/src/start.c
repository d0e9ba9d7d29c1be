/* start.c: how a relinked program starts.  libc's __libc_start_main is
 * wrapped: the master runs the program's constructors (they initialize
 * its shared data, once) and main; every other node serves the runtime
 * until the master ends.
 * Nodes of a multi-node run re-execute themselves once with address space
 * randomization off, so that code and data have the same addresses in
 * every node (a function pointer means the same thing everywhere). */

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/personality.h>
#include <unistd.h>

#include "internal.h"

/* C++'s standard streams on a node other than the master.  std::cout and
 * its kin are libstdc++'s objects copied into the program's per-node data;
 * libstdc++ before GCC 13 constructs them in the program's constructors
 * (each <iostream> file's ios_base::Init object), which run at the master
 * only, so a thread here found them unconstructed (its first `cout <<`
 * died of SIGSEGV).  ios_base::Init's constructor makes them once; a later
 * libstdc++, which made them at its load, only counts one more user.
 * Called by cb_node_start before the communication thread, which starts
 * the program's threads here, runs. */
void cb_cxx_streams(void)
{
    void (*init)(void *) = (void (*)(void *))dlsym(RTLD_DEFAULT, "_ZNSt8ios_base4InitC1Ev");
    static char ios_init; /* an empty object: its address only */
    if (init)
        init(&ios_init);
}

typedef int (*main_fn)(int, char **, char **);
static main_fn app_main;
static int app_argc;
static char **app_argv, **app_envp;

static void *run_main(void *unused)
{
    (void)unused;
    int rc = app_main(app_argc, app_argv, app_envp);
    if (cb.forked) /* a child of fork ends here, as a process whose main returned */
        exit(rc);
    return (void *)(intptr_t)rc;
}

static void at_exit(void) { cb_node_finish(); }

/* The runtime's end, on the master, comes after everything the program
 * runs at its exit, all of which may read shared data only the runtime
 * can fetch: its exit handlers (C++ static objects' destructors among
 * them) and then its destructor functions, which glibc's _dl_fini runs
 * after every exit handler.  head.o's first constructor says it will call
 * cables_end_from_fini from its last destructor (priority 101: after the
 * program's others); a program without head.o gets the end as an exit
 * handler when main starts.  Other nodes run no constructor or destructor
 * of the program, and end in cb_node_serve. */
static bool end_in_fini, end_registered;

static void register_end(void);

/* head.o's first constructor (not from a library's constructor, before the
 * runtime started) */
void cables_end_in_fini(void)
{
    if (app_main && cb.self == 0)
        end_in_fini = true;
}

/* the same of a program linked with an earlier head.o, which has no such
 * destructor: the end as an exit handler, registered first */
void cables_register_end(void)
{
    if (app_main)
        register_end();
}

void cables_end_from_fini(void)
{
    if (end_in_fini)
        cb_node_finish();
}

static void register_end(void)
{
    if (!end_in_fini && !end_registered && cb.self == 0) {
        end_registered = true;
        atexit(at_exit);
    }
}

int cb_exit_status;

/* The program's exit status, for cb_node_finish (an atexit handler does not
 * get it): calls of exit() come here first, main's return is seen below. */
void exit(int status)
{
    static void (*real_exit)(int);
    /* a thread of another node: the process ends at the master, which runs
     * the program's exit handlers once, with this status (remote.c) */
    if (cb_app_thread && cb.self != 0 && !atomic_load(&cb.comm_down) && !atomic_load(&cb.ending))
        cb_exit_at_master(status);
    cb_node_end_claim();
    cb_exit_status = status;
    if (!real_exit)
        real_exit = (void (*)(int))dlsym(RTLD_NEXT, "exit");
    real_exit(status);
    _exit(status); /* not reached */
}

static int cables_main(int argc, char **argv, char **envp)
{
    register_end();
    app_argc = argc;
    app_argv = argv;
    app_envp = envp;
    bool exited;
    void *rc = cb_run_on_gas_stack(run_main, NULL, 0, &exited); /* main's stack is shared too */
    if (exited) { /* pthread_exit in main: the program ends with its last thread */
        cb_threads_wait_all();
        exit(0);
    }
    /* main returned: libc's exit follows, past the shim's exit */
    cb_node_end_claim();
    cb_exit_status = (int)(intptr_t)rc;
    return cb_exit_status;
}

/* The launcher's variables: mpirun's and those cables-run passes the
 * runtime.  They leave the environment once the node has started: the
 * program alone has none of them, and a relinked program it starts
 * (system, popen, posix_spawn, fork and exec) then starts alone, where
 * before it took itself for a node of the run and failed in MPI_Init.
 * (The exec family's own environments leave them out too: process.c.) */
static const char *const launcher_env[] = { "OMPI_", "PMIX_", "CABLES_ASLR_OK=", "CABLES_RUN_INFO=",
                                     "CABLES_SIGIGN=", "CABLES_TTY=", "CABLES_STDOUT=",
                                     "CABLES_STDOUT_AT=", "CABLES_STDERR=", "CABLES_AS_LIMIT=", NULL };

bool cb_launcher_var(const char *e)
{
    for (int i = 0; launcher_env[i]; i++)
        if (!strncmp(e, launcher_env[i], strlen(launcher_env[i])))
            return true;
    return false;
}

/* In place, without libc's lock on the environment: on a node other than
 * the master, before it says hello (node.c), after which the master's
 * changes of the environment (proc.c) come on the communication thread.
 * Later, the two raced: libc's setenv of a change copied or reallocated
 * the array this compacted, and a variable was lost, or the heap broken
 * (an attached node's getenv failed, or it died of SIGSEGV). */
void cb_launcher_env_drop(void)
{
    char **out = environ;
    for (char **e = environ; *e; e++) {
        if (cb.cfg.test_env_drop_us) /* a test's: the window wider */
            usleep((useconds_t)cb.cfg.test_env_drop_us);
        if (!cb_launcher_var(*e))
            *out++ = *e;
    }
    *out = NULL;
}

typedef int (*start_fn)(main_fn, int, char **, void (*)(void), void (*)(void),
                        void (*)(void), void *);

/* Descriptors 0, 1 and 2 closed at the start (<&-, >&-, 2>&-) get
 * /dev/null, before the runtime opens anything: its files took those
 * numbers, and the program's writes to stderr went into the store that
 * backs the shared memory (it died of SIGSEGV).  The program's writes
 * there succeed and go nowhere, where alone they failed with EBADF. */
static void std_fds_open(void)
{
    for (int fd = 0; fd < 3; fd++) {
        if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
            continue;
        int k = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
        if (k >= 0 && k != fd) {
            dup2(k, fd);
            close(k);
        }
    }
}

/* The node starts before the program's constructors, which then run on
 * the master only, as application code: what they allocate and write is
 * shared.  The other nodes serve from here and never run them. */
int __libc_start_main(main_fn main, int argc, char **argv, void (*init)(void),
                      void (*fini)(void), void (*rtld_fini)(void), void *stack_end)
{
    std_fds_open();
    start_fn real = (start_fn)dlsym(RTLD_NEXT, "__libc_start_main");
    if (!real)
        cb_die("cannot find libc's __libc_start_main");
    /* A node of a multi-node run starts again, once, with address space
     * randomization off, without UCX's memory events and without UCX's
     * SIGHUP handler (UCX_DEBUG_SIGNO, unless set).  The program's
     * mmap family is the shim's (pthread_shim/src/mmap.c): UCX, as it is
     * loaded, would patch those functions' code into jumps to its hooks,
     * which call libc's.  The runtime needs no memory events (its pages are
     * registered once, no registration cache), and UCX reads
     * UCX_MEM_EVENTS only when it is loaded.  (A program started without
     * mpirun runs on one node, where its mappings need not be shared.)
     * Open MPI's memory patcher would patch them the same way at MPI_Init
     * (where it is used). */
    if (getenv("OMPI_COMM_WORLD_SIZE") && !getenv("CABLES_ASLR_OK")) {
        int pers = personality(0xffffffff);
        const char *ev = getenv("UCX_MEM_EVENTS");
        bool aslr = pers != -1 && !(pers & ADDR_NO_RANDOMIZE) &&
                    personality((unsigned long)pers | ADDR_NO_RANDOMIZE) != -1;
        if (aslr || !ev || strcmp(ev, "no") || !getenv("UCX_DEBUG_SIGNO")) {
            setenv("CABLES_ASLR_OK", "1", 1);
            setenv("UCX_MEM_EVENTS", "no", 1);
            setenv("UCX_DEBUG_SIGNO", "0", 0); /* SIGHUP is the program's (fault.c) */
            execv("/proc/self/exe", argv);
        }
    }
    setenv("OMPI_MCA_memory", "^patcher", 1);
    cb_stdout_as_launcher();
    app_main = main;
    /* the threads Open MPI, PMIx and UCX start in there inherit a mask
     * that takes no signal sent to the process: its handlers run on the
     * program's threads (or a node's main thread) */
    sigset_t procs, was;
    cb_process_signals(&procs);
    pthread_sigmask(SIG_BLOCK, &procs, &was);
    cb_node_start(&argc, &argv);
    pthread_sigmask(SIG_SETMASK, &was, NULL);
    if (cb.self != 0)
        cb_node_serve(); /* does not return; the program's destructors never run here */
    cb_thread_main_start();
    cb_psig_thread_start();
    cb_psig_announce();
    cb_launcher_env_drop();
    return real(cables_main, argc, argv, init, fini, rtld_fini, stack_end);
}
