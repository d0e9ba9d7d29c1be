/* node.c: a node's life: start (MPI for process management and the first
 * address exchange), joining the master's node table over UCX, nodes
 * attached on demand, liveness of peers, and shutdown.  MPI is called by
 * the main thread at start and finish, and in between by the master's
 * attach thread alone (MPI_THREAD_SERIALIZED). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

static cb_waiter_t joined;     /* the node table has arrived */
static cb_waiter_t shutdown_w; /* non-master: the master said stop */
static cb_waiter_t exit_w;     /* non-master: every node has stopped: exit */
static int hellos;             /* master: launched nodes that said hello */
static cb_msg_t *hello_req[CB_MAX_NODES];
static _Atomic int byes;
static bool said_bye[CB_MAX_NODES]; /* comm thread only */
static uint64_t last_heard[CB_MAX_NODES];
static _Atomic bool table_ready;

/* what this node knows of each node number (a number is never reused) */
enum { NS_NONE, NS_ATTACHING, NS_UP, NS_LEAVING, NS_GONE };
static _Atomic uint8_t state[CB_MAX_NODES];
static _Atomic bool finishing; /* master: the program ends: no node comes or goes now */

bool cb_node_up(int k)
{
    if (k < 0 || k >= CB_MAX_NODES)
        return false;
    int s = atomic_load(&state[k]);
    return s == NS_UP || s == NS_LEAVING;
}
bool cb_node_open(int k) { return k >= 0 && k < CB_MAX_NODES && atomic_load(&state[k]) == NS_UP; }
bool cb_node_attaching(int k) { return atomic_load(&state[k]) == NS_ATTACHING; }

/* Where a node process runs: its machine (the kernel's boot id) and its
 * network namespace. */
typedef struct {
    char boot[40];
    uint64_t netns;
} place_t;

typedef struct {
    int32_t node, pid;
    uint64_t sum_seed; /* its checksums' (mark notices carry them) */
    char host[64];
    place_t place;
    uint32_t addr_len;
} cb_node_info_t; /* followed by the UCX address */

static place_t places[CB_MAX_NODES]; /* of the nodes this one knows (places_mu) */
static cb_mutex_t places_mu = CB_MUTEX_INIT;
static bool master_peer_errors; /* an attached node: the master's endpoints report them */

/* this process's: read once, at the start (node.c's init, before any
 * other thread) */
static const place_t *here(void)
{
    static place_t p;
    static bool known;
    if (known)
        return &p;
    int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t n = read(fd, p.boot, sizeof p.boot - 1);
        p.boot[n > 0 ? n : 0] = 0;
        p.boot[strcspn(p.boot, "\n")] = 0;
        close(fd);
    }
    struct stat st;
    if (!stat("/proc/self/ns/net", &st))
        p.netns = st.st_ino;
    known = true;
    return &p;
}

const char *cb_boot_id(void) { return here()->boot; }

/* Two nodes on one machine in different network namespaces (containers;
 * the test suite's stand-ins for machines) */
static bool netns_split(const place_t *a, const place_t *b)
{
    return a->boot[0] && !strcmp(a->boot, b->boot) && a->netns != b->netns;
}

/* the first of nodes [0, n) but node in such a place apart from node, or -1 */
static int split_from(int node, int n)
{
    for (int k = 0; k < n; k++)
        if (k != node && netns_split(&places[node], &places[k]))
            return k;
    return -1;
}

/* Such nodes can map each other's memory, so UCX offers them its
 * shared-memory transports, but those wake a peer through a socket of
 * its network namespace: across namespaces a message waits for a poll,
 * and with cma too the first one never arrived (the start hung).  So UCX
 * goes without them there (TCP, as between machines); transports named
 * in UCX_TLS that need them are refused (before UCX starts). */
static void netns_avoid_shm(int a, int b, bool peer_errors)
{
    const char *tls = getenv("UCX_TLS");
    if (!tls || !*tls) {
        cb_xport_leave_out_shm(peer_errors);
        return;
    }
    unsigned n;
    bool except;
    unsigned all = cb_ucx_tls_in((const char *const[]){ "all", NULL }, &n, &except),
             sm = cb_ucx_tls_in((const char *const[]){ "sm", "shm", NULL }, &n, &except),
             mm = cb_ucx_tls_in((const char *const[]){ "posix", "sysv", NULL }, &n, &except);
    if (except ? sm || mm == 2 : !all && !sm && !mm)
        return;
    cb_die("node %d: nodes %d and %d run on one machine in different network namespaces, "
           "where UCX's shared-memory transports cannot wake each other, and UCX_TLS=%s "
           "names them: use cables-run -t tcp or -t auto (which leaves them out there)",
           cb.self, a, b, tls);
}

/* A node's table entry, padded to 8 bytes (entries travel back to back). */
static size_t info_len(const cb_node_info_t *i) { return (sizeof *i + i->addr_len + 7) & ~(size_t)7; }

static cb_node_info_t *pack_info(int node, size_t *len)
{
    const void *addr;
    size_t alen;
    if (node == cb.self) {
        void *a;
        alen = cb_xport_address(&a);
        addr = a;
    } else {
        addr = cb_xport_peer_address(node, &alen);
    }
    cb_node_info_t *i = calloc(1, sizeof *i + alen + 8);
    if (!i)
        cb_die("out of memory for the node table");
    i->node = node;
    i->pid = cb.pids[node];
    i->sum_seed = cb.sum_seeds[node];
    memcpy(i->host, cb.hosts[node], sizeof i->host);
    i->place = places[node];
    i->addr_len = (uint32_t)alen;
    memcpy(i + 1, addr, alen);
    *len = info_len(i);
    return i;
}

static void add_node(const cb_node_info_t *i)
{
    if (i->node < 0 || i->node >= CB_MAX_NODES)
        cb_die("node %d: bad node number %d in the node table", cb.self, i->node);
    cb.pids[i->node] = i->pid;
    cb.sum_seeds[i->node] = i->sum_seed;
    memcpy(cb.hosts[i->node], i->host, sizeof cb.hosts[0]);
    cb_mutex_lock(&places_mu);
    places[i->node] = i->place;
    cb_mutex_unlock(&places_mu);
    if (i->node != cb.self)
        cb_xport_add_peer(i->node, i + 1, i->addr_len);
    last_heard[i->node] = cb_now_ns();
    atomic_store(&state[i->node], NS_UP);
    int n = atomic_load(&cb.nnodes);
    while (n <= i->node && !atomic_compare_exchange_weak(&cb.nnodes, &n, i->node + 1))
        ;
}

/* ---- attach on demand (master): its attach thread spawns the node
 * process, sends it its number and the master's address over the new
 * intercommunicator; the node then says hello over UCX like a launched one ---- */
static MPI_Comm inter[CB_MAX_NODES]; /* attach thread, then main at finish */
static MPI_Comm parent = MPI_COMM_NULL; /* an attached node: its link to the master */
static char spawn_exe[PATH_MAX];
static char **spawn_argv;
static cb_node_info_t *master_info;
static size_t master_info_len;
static pthread_t attach_tid;
static cb_mutex_t attach_mu = CB_MUTEX_INIT;
static _Atomic uint32_t attach_word; /* bumped for each request (futex) */
/* under attach_mu: k < CB_MAX_NODES: spawn node k; CB_MAX_NODES + k: leave
 * the intercommunicator of detached node k (each happens once per number) */
static int attach_q[2 * CB_MAX_NODES], attach_qn;
static bool attach_quit;
static int next_number; /* master comm thread: the number of the next attached node */
static uint64_t attach_t0[CB_MAX_NODES];
/* when node k's spawn returned: its hello has attach_timeout from then */
static _Atomic uint64_t spawned_t[CB_MAX_NODES];
/* An attach's spawn: SPAWNING until MPI_Comm_spawn returns (RETURNED), or
 * GIVEN_UP by the master's comm thread when it took over attach_timeout
 * (whichever comes first wins: compare-and-swap).  Open MPI 4.1 with PMIx
 * 4 (Debian 12's) hangs in MPI_Comm_spawn at times, the new process stuck
 * in MPI_Init and the master in PMIx_Lookup (openpmix issue 2735; 3 runs
 * in 55 of a plain MPI program spawning 8 processes, here), and a spawn
 * cannot be cancelled: the node's threads go to the nodes there are, and
 * no node is attached while the spawn is stuck (the attach thread is in
 * it).  A spawn that returns after all is told to leave. */
enum { SPAWNING, RETURNED, GIVEN_UP };
static _Atomic int spawn_phase[CB_MAX_NODES];
static _Atomic int spawn_stuck = -1; /* the node whose spawn was given up and has not returned */
static int table_acks[CB_MAX_NODES]; /* nodes yet to learn of an attached one */

static void spawn_node(int k)
{
    if (atomic_load(&spawn_phase[k]) == GIVEN_UP)
        return; /* queued behind a stuck spawn, and given up with it */
    MPI_Comm ic;
    int err = MPI_SUCCESS;
    int rc = MPI_Comm_spawn(spawn_exe, spawn_argv, 1, MPI_INFO_NULL, 0, MPI_COMM_SELF, &ic, &err);
    bool spawned = rc == MPI_SUCCESS && err == MPI_SUCCESS;
    atomic_store(&spawned_t[k], cb_now_ns()); /* before the swap: read once RETURNED */
    int was = SPAWNING;
    if (!atomic_compare_exchange_strong(&spawn_phase[k], &was, RETURNED)) {
        fprintf(stderr, "cables: node 0: the spawn of node %d, given up, ended after %.0f s; "
                "%s\n", k, (double)(cb_now_ns() - attach_t0[k]) / 1e9,
                spawned ? "the node leaves again" : "it failed");
        if (spawned) {
            uint64_t hdr[4] = { UINT64_MAX, 0, 0, 0 }; /* not needed: finalize and exit */
            MPI_Send(hdr, 4, MPI_UINT64_T, 0, 0, ic);
            MPI_Comm_disconnect(&ic);
        }
        atomic_store(&spawn_stuck, -1);
        return;
    }
    if (spawned) {
        uint64_t hdr[4] = { (uint64_t)k, (uint64_t)cb.launched, master_info_len,
                            cb_xport_peer_errors() };
        rc = MPI_Send(hdr, 4, MPI_UINT64_T, 0, 0, ic);
        if (rc == MPI_SUCCESS)
            rc = MPI_Send(master_info, (int)master_info_len, MPI_BYTE, 0, 0, ic);
        /* where the nodes numbered before it run (netns_split) */
        place_t *pl = malloc(k * sizeof *pl);
        if (!pl)
            cb_die("node 0: out of memory attaching node %d", k);
        cb_mutex_lock(&places_mu);
        memcpy(pl, places, k * sizeof *pl);
        cb_mutex_unlock(&places_mu);
        if (rc == MPI_SUCCESS)
            rc = MPI_Send(pl, (int)(k * sizeof *pl), MPI_BYTE, 0, 0, ic);
        free(pl);
        inter[k] = ic;
    }
    if (rc != MPI_SUCCESS || err != MPI_SUCCESS) {
        char why[MPI_MAX_ERROR_STRING] = "";
        int wl;
        MPI_Error_string(rc != MPI_SUCCESS ? rc : err, why, &wl);
        fprintf(stderr, "cables: node 0: could not attach node %d (MPI_Comm_spawn: %s); its "
                "threads go to the nodes there are\n", k, why);
        cb_msg_t f = { .type = M_ATTACH_FAILED, .a = (uint64_t)k };
        cb_send(0, &f, NULL, 0, false);
    }
}

static void *attach_main(void *unused)
{
    (void)unused;
    cb_block_process_signals();
    for (;;) {
        uint32_t w = atomic_load(&attach_word);
        cb_mutex_lock(&attach_mu);
        int k = attach_qn ? attach_q[0] : -1;
        if (attach_qn)
            memmove(attach_q, attach_q + 1, sizeof attach_q[0] * (size_t)--attach_qn);
        bool quit = attach_quit;
        cb_mutex_unlock(&attach_mu);
        if (k >= CB_MAX_NODES)
            MPI_Comm_disconnect(&inter[k - CB_MAX_NODES]); /* a detached node's */
        else if (k >= 0)
            spawn_node(k);
        else if (quit)
            return NULL;
        else
            cb_futex_wait(&attach_word, w);
    }
}

static void attach_post(int k, bool quit)
{
    cb_mutex_lock(&attach_mu);
    if (k >= 0)
        attach_q[attach_qn++] = k;
    attach_quit |= quit;
    cb_mutex_unlock(&attach_mu);
    atomic_fetch_add(&attach_word, 1);
    cb_futex_wake(&attach_word);
}

int cb_node_attach(void)
{
    int present = 0;
    for (int k = 0; k < CB_MAX_NODES; k++)
        present += state[k] != NS_NONE && state[k] != NS_GONE;
    if (!attach_tid || present >= cb.cfg.max_nodes || atomic_load(&spawn_stuck) >= 0)
        return -1;
    if (next_number >= CB_MAX_NODES) {
        static bool said;
        if (!said)
            fprintf(stderr, "cables: node 0: all %d node numbers were used (a number is not "
                    "reused); threads go to the nodes there are\n", CB_MAX_NODES);
        said = true;
        return -1;
    }
    int k = next_number;
    atomic_store(&state[k], NS_ATTACHING);
    if (atomic_load(&finishing)) { /* store, then check: the finish sees it or we see it */
        atomic_store(&state[k], NS_NONE);
        return -1;
    }
    next_number++;
    attach_t0[k] = cb_now_ns();
    atomic_store(&spawn_phase[k], SPAWNING);
    attach_post(k, false);
    return k;
}

/* master: the attach of node k failed: its number is not used again */
void cb_on_attach_failed(const cb_msg_t *m)
{
    atomic_store(&state[m->a], NS_GONE);
    cb_place_attached((int)m->a, false);
}

/* Program path and arguments for MPI_Comm_spawn, and the master's table
 * entry; the thread starts only when nodes may be attached. */
static void attach_init(int argc, char **argv, const cb_node_info_t *me, size_t len)
{
    next_number = cb.launched;
    if (!cb.multi || cb.self != 0 || cb.cfg.max_nodes <= cb.launched)
        return;
    ssize_t n = readlink("/proc/self/exe", spawn_exe, sizeof spawn_exe - 1);
    if (n <= 0)
        cb_die("cannot read /proc/self/exe to attach nodes: %s", strerror(errno));
    spawn_exe[n] = 0;
    spawn_argv = calloc((size_t)argc + 1, sizeof *spawn_argv);
    for (int i = 1; i < argc; i++)
        spawn_argv[i - 1] = argv[i];
    master_info = malloc(len);
    memcpy(master_info, me, len);
    master_info_len = len;
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    int rc = cb_thread_start(&attach_tid, attach_main, NULL, false);
    if (rc)
        cb_die("cannot start the attach thread: %s", strerror(rc));
}

/* master, at finish: no attach under way, then the attach thread ends
 * (unless it is stuck in a spawn: see cb_node_finish) */
static void attach_stop(void)
{
    if (!attach_tid)
        return;
    for (int k = 0; k < CB_MAX_NODES; k++)
        while (atomic_load(&state[k]) == NS_ATTACHING || atomic_load(&state[k]) == NS_LEAVING)
            usleep(1000); /* a spawn or a leave takes a fraction of a second */
    if (atomic_load(&spawn_stuck) >= 0)
        return;
    attach_post(-1, true);
    cb_thread_wait(attach_tid);
    attach_tid = 0;
}

/* The node table (the master: every launched node's hello) within the
 * attach timeout, or the run ends naming what did not come: UCX's
 * transports may not reach a node (UCX_TLS, UCX_NET_DEVICES) */
static void join_wait(void)
{
    if (cb_waiter_wait_until(&joined, cb_now_ns() + (uint64_t)(cb.cfg.attach_timeout * 1e9)))
        return;
    const char *tls = getenv("UCX_TLS");
    char missing[256] = "";
    for (int k = 1, n = 0; cb.self == 0 && k < cb.launched; k++)
        if (atomic_load(&state[k]) != NS_UP)
            n += snprintf(missing + n, sizeof missing - (size_t)n, " %d", k); /* fits: 64 nodes */
    if (cb.self == 0)
        cb_die("node 0: no hello from node(s)%s within %.0f s of the start over UCX "
               "(UCX_TLS=%s): its transports do not reach them (check UCX_TLS and "
               "UCX_NET_DEVICES)", missing, cb.cfg.attach_timeout, tls ? tls : "(all)");
    cb_die("node %d: no answer from node 0 to its hello within %.0f s of the start over UCX "
           "(UCX_TLS=%s): its transports do not reach it (check UCX_TLS and UCX_NET_DEVICES)",
           cb.self, cb.cfg.attach_timeout, tls ? tls : "(all)");
}

void cb_node_start(int *argc, char ***argv)
{
    cb_config_load(&cb.cfg);
    cb.multi = getenv("OMPI_COMM_WORLD_SIZE") != NULL;
    cb.self = 0;
    cb.launched = 1;
    atomic_store(&cb.nnodes, 1);
    void *m0 = NULL; /* the master's table entry, on the other nodes */
    if (cb.multi) {
        int prov, rank, size;
        if (cb.cfg.test_spawn_stall >= 0 && getenv("OMPI_PARENT_PORT")) { /* spawned */
            if (cb.cfg.test_spawn_stall == 0)
                for (;;)
                    pause();
            sleep((unsigned)cb.cfg.test_spawn_stall);
        }
        if (MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &prov) != MPI_SUCCESS)
            cb_die("MPI_Init_thread failed: the node processes could not be started");
        if (prov < MPI_THREAD_SERIALIZED)
            cb_die("this MPI does not let a second thread make calls (MPI_THREAD_SERIALIZED)");
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        MPI_Comm_size(MPI_COMM_WORLD, &size);
        MPI_Comm_get_parent(&parent);
        if (parent != MPI_COMM_NULL) { /* attached on demand: the master says who we are */
            uint64_t hdr[4];
            MPI_Recv(hdr, 4, MPI_UINT64_T, 0, 0, parent, MPI_STATUS_IGNORE);
            if (hdr[0] == UINT64_MAX) { /* our spawn took too long: given up */
                MPI_Comm_disconnect(&parent);
                MPI_Finalize();
                _exit(0);
            }
            m0 = malloc(hdr[2]);
            MPI_Recv(m0, (int)hdr[2], MPI_BYTE, 0, 0, parent, MPI_STATUS_IGNORE);
            rank = (int)hdr[0];
            size = (int)hdr[1];
            master_peer_errors = hdr[3] != 0;
            if (rank < 0 || rank >= CB_MAX_NODES)
                cb_die("node %d: bad node number from the master", rank);
            MPI_Recv(places, (int)(rank * sizeof *places), MPI_BYTE, 0, 0, parent,
                     MPI_STATUS_IGNORE);
        }
        if (size > CB_MAX_NODES)
            cb_die("%d nodes asked, at most %d supported", size, CB_MAX_NODES);
        cb.self = rank;
        cb.launched = size;
        /* before UCX starts: does a node known now share this one's
         * machine but not its network namespace?  (An attached node knows
         * those numbered before it; one attached later checks against
         * this one.)  Peer failures are reported on every node or none:
         * where every launched node goes without shared memory, they are
         * (as for UCX_TLS=tcp), and a node attached later follows the
         * master. */
        places[rank] = *here();
        if (parent == MPI_COMM_NULL)
            MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, places, sizeof *places, MPI_BYTE,
                          MPI_COMM_WORLD);
        int apart = split_from(rank, parent == MPI_COMM_NULL ? size : rank);
        bool all_apart = true;
        if (parent == MPI_COMM_NULL) {
            for (int a = 0; a < size && all_apart; a++)
                all_apart = split_from(a, size) >= 0;
        } else {
            if (master_peer_errors && apart < 0)
                apart = 0; /* none here, but the others went without it */
            all_apart = master_peer_errors;
        }
        if (apart >= 0)
            netns_avoid_shm(rank, apart, all_apart);
    }
    if (cb.cfg.max_nodes && cb.cfg.max_nodes < cb.launched)
        cb_die("CABLES_MAX_NODES=%d is less than the %d nodes launched", cb.cfg.max_nodes,
               cb.launched);
    cb_gas_init();
    cb_libs_init();
    cb_statics_init();
    if (cb.self == 0)
        cb_dir_add_heaps();
    const char *lr = getenv("OMPI_COMM_WORLD_LOCAL_RANK"), *ls = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    cb_numa_place(lr ? atoi(lr) : 0, lr && ls ? atoi(ls) : 1);
    cb_store_init();
    cb_proc_init();
    cb_rsys_init();
    if (cb.self != 0) /* before the thread that starts the program's threads here */
        cb_cxx_streams();
    cb_comm_start();
    cb.pids[cb.self] = cb_pid();
    gethostname(cb.hosts[cb.self], sizeof cb.hosts[0] - 1);
    atomic_store(&state[cb.self], NS_UP);
    size_t len;
    cb_node_info_t *me = pack_info(cb.self, &len);
    if (cb.multi && parent == MPI_COMM_NULL) {
        /* the master's address goes out through MPI; all else over UCX */
        uint64_t mlen = cb.self == 0 ? len : 0;
        MPI_Bcast(&mlen, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
        m0 = cb.self == 0 ? (void *)me : malloc(mlen);
        MPI_Bcast(m0, (int)mlen, MPI_BYTE, 0, MPI_COMM_WORLD);
    }
    if (cb.self != 0) {
        add_node(m0);
        free(m0);
    }
    attach_init(*argc, *argv, me, len);
    cb_fault_init();
    cb_comm_run();
    if (cb.multi && cb.self != 0) {
        cb_launcher_env_drop(); /* before the master's changes can come */
        cb_msg_t h = { .type = M_HELLO };
        cb_call_post(0, &h, me, len, &joined);
        join_wait();
    } else if (cb.multi && cb.launched > 1) {
        join_wait();
    }
    free(me);
    atomic_store(&table_ready, true);
    cb_propagate_start();
    if (cb.cfg.policy == CABLES_POLICY_FIXED && cb.cfg.policy_node >= atomic_load(&cb.nnodes))
        cb_die("CABLES_HOME_POLICY=fixed:%d names node %d, but the run has %d node(s)",
               cb.cfg.policy_node, cb.cfg.policy_node, atomic_load(&cb.nnodes));
}

bool cb_node_joined(void) { return atomic_load(&table_ready); }

/* the table entries of the nodes up, packed back to back (malloc'd) */
static void *pack_table(size_t *len)
{
    size_t tlen = 0;
    uint8_t *t = NULL;
    for (int n = 0; n < atomic_load(&cb.nnodes); n++) {
        if (!cb_node_up(n))
            continue;
        size_t il;
        cb_node_info_t *ni = pack_info(n, &il);
        t = realloc(t, tlen + il);
        memcpy(t + tlen, ni, il);
        tlen += il;
        free(ni);
    }
    *len = tlen;
    return t;
}

/* master: every node knows of attached node k: it gets the table */
static void attach_done(int k)
{
    atomic_store(&state[k], NS_UP);
    size_t tlen;
    void *t = pack_table(&tlen);
    cb_msg_t r = { .type = M_TABLE, .a = (uint64_t)atomic_load(&cb.nnodes) };
    cb_reply(hello_req[k], &r, t, tlen, true);
    free(hello_req[k]);
    hello_req[k] = NULL;
    STAT_ADD(nodes_attached, 1);
    STAT_ADD(attach_ns, cb_now_ns() - attach_t0[k]);
    cb_proc_replay(k); /* after the table, before its threads */
    cb_place_attached(k, true);
}

/* master: a node says hello.  Once all launched nodes are in, everyone
 * gets the table.  A node attached later is first made known to the
 * others (each acknowledges), then gets the table, then threads. */
void cb_on_hello(const cb_msg_t *m, const void *p, size_t len)
{
    (void)len;
    const cb_node_info_t *i = p;
    int k = i->node;
    if (k >= cb.launched && (k >= CB_MAX_NODES || state[k] != NS_ATTACHING))
        cb_die("node 0: hello from node %d, which is not being attached", k);
    hello_req[k] = malloc(sizeof *m);
    *hello_req[k] = *m;
    add_node(i);
    if (k >= cb.launched) {
        /* not up for us until every node knows it: placements on it wait */
        atomic_store(&state[k], NS_ATTACHING);
        table_acks[k] = 0;
        for (int n = 1; n < atomic_load(&cb.nnodes); n++)
            if (n != k && cb_node_up(n)) {
                cb_msg_t u = { .type = M_TABLE, .a = (uint64_t)atomic_load(&cb.nnodes),
                               .c = (uint64_t)k };
                cb_send(n, &u, i, info_len(i), false);
                table_acks[k]++;
            }
        if (!table_acks[k])
            attach_done(k);
        return;
    }
    if (++hellos < cb.launched - 1)
        return;
    size_t tlen;
    void *t = pack_table(&tlen);
    for (int n = 1; n < cb.launched; n++) {
        cb_msg_t r = { .type = M_TABLE, .a = (uint64_t)cb.launched };
        cb_reply(hello_req[n], &r, t, tlen, false);
        free(hello_req[n]);
        hello_req[n] = NULL;
    }
    free(t);
    cb_waiter_wake(&joined);
}

/* M_TABLE: the whole table (a reply to our hello), or the entry of a node
 * attached since (no waiter; c: its number), which we acknowledge */
void cb_on_table(const cb_msg_t *m, const void *p, size_t len)
{
    const uint8_t *q = p, *end = q + len;
    while (q < end) {
        const cb_node_info_t *i = (const cb_node_info_t *)q;
        add_node(i);
        q += info_len(i);
    }
    if (!m->waiter) {
        cb_msg_t a = { .type = M_TABLE_ACK, .a = m->c };
        cb_send(0, &a, NULL, 0, false);
        return;
    }
    cb_waiter_wake((cb_waiter_t *)(uintptr_t)m->waiter);
}

void cb_on_table_ack(const cb_msg_t *m)
{
    int k = (int)m->a;
    if (k < CB_MAX_NODES && hello_req[k] && --table_acks[k] == 0)
        attach_done(k);
}

/* ---- detach: an attached node whose threads have all ended and been
 * joined leaves.
 *   k -> master  M_NODE_IDLE   (no threads, no lock request outstanding)
 *   master       asks for the locks whose queues end at k (lock.c)
 *   master -> k  M_LEAVE       k hands the master each home page it holds
 *                              data for (M_MOVE_PAGE, d=0), names the master
 *                              as their home, then M_LEFT a=count,
 *                              payload: what k used (proc.c)
 *   master       once all are in: every page k was home of is the master's
 *                (directory); M_NODE_GONE to the other nodes, which say the
 *                same in their home caches, stop sending to k, and send k
 *                M_GONE_FLUSH behind all they sent it; the master's flush
 *                carries how many k must see
 *   k            leaves once it has them all (statistics, MPI, exit) ---- */
static bool leaving;         /* k: the master let us go */
static int flushes, flushes_due = -1;
static int64_t left_count[CB_MAX_NODES], handed[CB_MAX_NODES]; /* master */

void cb_node_idle(void)
{
    if (cb.self >= cb.launched && cb_thread_count() == 0 && !cb_lock_waiting()) {
        cb_msg_t m = { .type = M_NODE_IDLE };
        cb_send(0, &m, NULL, 0, false);
    }
}

void cb_on_node_idle(const cb_msg_t *m)
{
    int k = m->src;
    if (state[k] != NS_UP || cb_place_load(k) > 0)
        return; /* a thread was placed there meanwhile: it will say idle again */
    if (cb_moving_to(k)) { /* a page on its way there: once it landed */
        cb_defer(m, NULL, 0);
        return;
    }
    atomic_store(&state[k], NS_LEAVING);
    if (atomic_load(&finishing)) { /* the master's finish may not have seen it leave */
        atomic_store(&state[k], NS_UP);
        return;
    }
    left_count[k] = -1;
    handed[k] = 0;
    cb_lock_recall(k);
    cb_msg_t l = { .type = M_LEAVE };
    cb_send(k, &l, NULL, 0, false);
}

void cb_on_leave(const cb_msg_t *m)
{
    atomic_store(&cb.stopping, true); /* nobody watches us any more, nor we them */
    static int64_t sent; /* pages handed over, over the tries */
    if (atomic_load(&cb.diffs_out) || atomic_load(&cb.claims_out) || !cb_homes_hand_over(&sent)) {
        cb_defer(m, NULL, 0); /* diffs or claims of ours on their way, or a page busy: later */
        return;
    }
    cb_usage_t u; /* what this process used, which the master keeps (proc.c) */
    cb_proc_usage_final(&u);
    cb_msg_t l = { .type = M_LEFT, .a = (uint64_t)sent };
    cb_send(0, &l, &u, sizeof u, false);
}

static void leave_check(int k)
{
    if (left_count[k] < 0 || handed[k] < left_count[k])
        return;
    cb_dir_node_gone(k);
    cb_homes_forget(k);
    atomic_store(&state[k], NS_GONE);
    cb_gc_node_gone(k);
    int told = 0;
    for (int n = 1; n < atomic_load(&cb.nnodes); n++)
        if (cb_node_up(n)) {
            cb_msg_t g = { .type = M_NODE_GONE, .a = (uint64_t)k };
            cb_send(n, &g, NULL, 0, false);
            told++;
        }
    cb_msg_t f = { .type = M_GONE_FLUSH, .a = (uint64_t)told + 1 };
    cb_send(k, &f, NULL, 0, false);
    attach_post(CB_MAX_NODES + k, false); /* leave the intercommunicator with it */
    STAT_ADD(nodes_detached, 1);
}

void cb_on_left(const cb_msg_t *m, const void *p, size_t len)
{
    cb_proc_usage_gone(m->src, p, len); /* before the others learn it left */
    left_count[m->src] = (int64_t)m->a;
    leave_check(m->src);
}

void cb_node_handed(int k)
{
    handed[k]++;
    leave_check(k);
}

void cb_on_node_gone(const cb_msg_t *m)
{
    int k = (int)m->a;
    cb_homes_forget(k);
    atomic_store(&state[k], NS_GONE);
    cb_msg_t f = { .type = M_GONE_FLUSH };
    cb_send(k, &f, NULL, 0, false);
}

void cb_on_gone_flush(const cb_msg_t *m)
{
    flushes++;
    if (m->src == 0)
        flushes_due = (int)m->a;
    if (flushes == flushes_due) {
        leaving = true;
        cb_waiter_wake(&shutdown_w);
    }
}

/* ---- liveness ---- */
void cb_heard_from(int node)
{
    if (node >= 0 && node < CB_MAX_NODES)
        last_heard[node] = cb_now_ns();
}

/* An attach that took over CABLES_ATTACH_TIMEOUT: a spawn still under way
 * is given up (see spawn_phase), its node's threads go to the nodes there
 * are; a node that has not joined within as long again after its spawn
 * returned is dead.  Master, comm thread. */
static void check_attaching(uint64_t now)
{
    double limit_s = cb.cfg.attach_timeout;
    uint64_t limit = (uint64_t)(limit_s * 1e9);
    for (int k = cb.launched; k < CB_MAX_NODES; k++) {
        if (atomic_load(&state[k]) != NS_ATTACHING || !attach_t0[k])
            continue;
        int was = atomic_load(&spawn_phase[k]);
        if (was == SPAWNING) {
            if (now - attach_t0[k] <= limit)
                continue;
            atomic_store(&spawn_stuck, k); /* before the swap: a spawn returning after it clears it */
            if (atomic_compare_exchange_strong(&spawn_phase[k], &was, GIVEN_UP)) {
                fprintf(stderr, "cables: node 0: attaching node %d has not ended after %.0f s "
                        "(Open MPI's MPI_Comm_spawn hangs at times with PMIx 4: openpmix issue "
                        "2735); its threads go to the nodes there are, and no node is attached "
                        "while it is stuck\n", k, limit_s);
                atomic_store(&state[k], NS_GONE);
                cb_place_attached(k, false);
                continue;
            }
            int stuck = k; /* it returned just now: its hello has its time */
            atomic_compare_exchange_strong(&spawn_stuck, &stuck, -1);
            continue;
        }
        uint64_t t = atomic_load(&spawned_t[k]);
        if (was != RETURNED || now < t || now - t <= limit)
            continue;
        char buf[400];
        int n = snprintf(buf, sizeof buf, "cables: node 0: node %d, spawned, has not joined "
                         "%.0f s after its spawn returned; the application cannot continue\n",
                         k, limit_s);
        if (syscall(SYS_write, 2, buf, (size_t)n) < 0) {}
        _exit(3);
    }
}

/* Heartbeats go on while stopping (a slow node's bye may take a while);
 * a node that said bye, or any node once we stop, is no longer watched. */
void cb_check_peers(void)
{
    if (cb.self == 0 && !atomic_load(&cb.stopping))
        check_attaching(cb_now_ns());
    if (!atomic_load(&table_ready))
        return;
    bool watch = !atomic_load(&cb.stopping);
    uint64_t now = cb_now_ns(), limit = (uint64_t)(cb.cfg.dead_timeout * 1e9);
    int n = atomic_load(&cb.nnodes);
    for (int k = 0; k < n; k++) {
        if (k == cb.self || !cb_node_up(k))
            continue;
        if (watch && !said_bye[k] && now - last_heard[k] > limit) {
            char why[96];
            snprintf(why, sizeof why, "sent nothing for %.1f s", cb.cfg.dead_timeout);
            cb_peer_failed(k, why);
        }
        cb_msg_t hb = { .type = M_HEARTBEAT };
        cb_send(k, &hb, NULL, 0, false);
    }
}

static bool same_boot(int k)
{
    return here()->boot[0] && !strcmp(here()->boot, places[k].boot);
}

/* The process of node k, on this machine, is gone (or a zombie): it died */
static bool gone_here(int k)
{
    if (!same_boot(k) || cb.pids[k] <= 0)
        return false;
    char path[64], st[256];
    snprintf(path, sizeof path, "/proc/%d/stat", cb.pids[k]);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT;
    ssize_t n = read(fd, st, sizeof st - 1);
    close(fd);
    st[n > 0 ? n : 0] = 0;
    const char *e = strrchr(st, ')');
    return e && (e[2] == 'Z' || e[2] == 'X');
}

void cb_peer_failed(int node, const char *why)
{
    /* a peer of this machine that died (a signal, a crash): mpirun, which
     * saw it end, names it and how, unless this node's exit comes first
     * (over TCP it may: a reset is seen at once) */
    for (int i = 0; i < 20 && !gone_here(node) && same_boot(node); i++) /* still exiting */
        nanosleep(&(struct timespec){ 0, 50000000 }, NULL);
    if (gone_here(node))
        nanosleep(&(struct timespec){ 1, 0 }, NULL);
    char buf[400];
    int n = snprintf(buf, sizeof buf,
                     "cables: node %d: node %d (pid %d on %s) is dead or unreachable (%s); "
                     "the application cannot continue\n",
                     cb.self, node, cb.pids[node], cb.hosts[node][0] ? cb.hosts[node] : "?", why);
    if (syscall(SYS_write, 2, buf, (size_t)n) < 0) {}
    _exit(3);
}

/* ---- shutdown, in two phases so that no node takes another's exit for
 * a death: (a=0) every node stops watching its peers, prints its
 * statistics and says bye; once all have, (a=1) they all exit and leave
 * MPI together. ---- */
void cb_on_shutdown(const cb_msg_t *m)
{
    if (m->a == 0) {
        atomic_store(&cb.stopping, true);
        cb_waiter_wake(&shutdown_w);
    } else {
        cb_waiter_wake(&exit_w);
    }
}

void cb_on_bye(const cb_msg_t *m)
{
    said_bye[m->src] = true;
    atomic_fetch_add(&byes, 1);
}

void cb_node_serve(void)
{
    cb_psig_serving();
    cb_waiter_wait(&shutdown_w);
    cb_node_finish();
    exit(0);
}

bool cb_node_end_claim(void)
{
    static _Atomic pid_t ender;
    pid_t none = 0, me = gettid();
    if (cb.forked || atomic_compare_exchange_strong(&ender, &none, me) || none == me)
        return true; /* a child of fork ends alone */
    if (!cb_app_thread) /* one of the runtime's (a signal handler's exit): never parked */
        return false;
    for (;;) /* not a cancellation point: a raw system call */
        syscall(SYS_pause);
}

void cb_node_finish(void)
{
    static bool done; /* only the thread that ends the process gets here */
    if (!cb_node_end_claim() || done || cb.forked)
        return;
    done = true;
    atomic_store(&cb.ending, true);
    cb_propagate_stop(); /* (its pulls may wait for other nodes) */
    if (cb.self == 0)
        cb_maps_flush(); /* while every node still serves its pages */
    cb_app_thread = false; /* what follows (MPI's finalization too) is the runtime's */
    fflush(NULL); /* the program's output reaches the launcher before the node goes */
    if (cb.self == 0) {
        atomic_store(&finishing, true);
        attach_stop();
        int n = atomic_load(&cb.nnodes), up = 0;
        for (int k = 1; k < n; k++)
            if (state[k] == NS_UP) {
                cb_msg_t s = { .type = M_SHUTDOWN, .a = 0 };
                cb_send(k, &s, NULL, 0, false);
                up++;
            }
        /* a node that never answers is named by the peer check meanwhile */
        while (atomic_load(&byes) < up)
            usleep(1000);
        atomic_store(&cb.stopping, true);
        if (cb.cfg.stats)
            cables_stats_print();
        for (int k = 1; k < n; k++)
            if (state[k] == NS_UP) {
                cb_msg_t s = { .type = M_SHUTDOWN, .a = 1 };
                cb_send(k, &s, NULL, 0, false);
            }
    } else if (leaving) { /* detached: nobody waits for our bye */
        if (cb.cfg.stats)
            cables_stats_print();
    } else {
        if (cb.cfg.stats)
            cables_stats_print();
        cb_msg_t b = { .type = M_BYE };
        cb_send(0, &b, NULL, 0, false);
        if (!cb_waiter_wait_until(&exit_w, cb_now_ns() + 60000000000ull))
            fprintf(stderr, "cables: node %d: the master did not finish the shutdown within "
                    "60 s; leaving\n", cb.self);
    }
    cb_comm_stop();
    if (!cb.multi)
        return;
    /* attached nodes leave their intercommunicator with the master first */
    if (parent != MPI_COMM_NULL)
        MPI_Comm_disconnect(&parent);
    for (int k = 0; k < CB_MAX_NODES; k++)
        if (inter[k] != MPI_COMM_NULL && inter[k] != 0)
            MPI_Comm_disconnect(&inter[k]);
    MPI_Finalize();
    /* mpirun waits for the process of a stuck spawn, which never ends: a
     * status other than 0 makes it end the job; cables-run gives the
     * program's 0 back (tools/cables-run) */
    int k = atomic_load(&spawn_stuck);
    if (cb.self == 0 && k >= 0 && cb_exit_status == 0) {
        dprintf(cb_mpirun_stderr(), "cables: node 0: the program ended (exit status 0) with the spawn "
                "of node %d stuck; exit status %d ends mpirun\n", k, CB_EXIT_SPAWN_STUCK);
        fflush(NULL);
        _exit(CB_EXIT_SPAWN_STUCK);
    }
}
