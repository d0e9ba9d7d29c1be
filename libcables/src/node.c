/* node.c: a node's life: start (MPI for process management and the first
 * address exchange), joining the master's node table over UCX, liveness of
 * peers, and shutdown.  Only this file's start and finish make MPI calls,
 * from the main thread. */
#include <errno.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

static cb_waiter_t joined;     /* the node table has arrived */
static cb_waiter_t shutdown_w; /* non-master: the master said stop */
static cb_waiter_t exit_w;     /* non-master: every node has stopped: exit */
static int launched = 1;       /* nodes started by the launcher */
static int hellos;             /* master: nodes that said hello */
static cb_msg_t *hello_req[CB_MAX_NODES];
static _Atomic int byes;
static bool said_bye[CB_MAX_NODES]; /* comm thread only */
static uint64_t last_heard[CB_MAX_NODES];
static bool table_ready;

typedef struct {
    int32_t node, pid;
    char host[64];
    uint32_t addr_len;
} cb_node_info_t; /* followed by the UCX address */

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
    memcpy(i->host, cb.hosts[node], sizeof i->host);
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
    memcpy(cb.hosts[i->node], i->host, sizeof cb.hosts[0]);
    if (i->node != cb.self)
        cb_xport_add_peer(i->node, i + 1, i->addr_len);
    last_heard[i->node] = cb_now_ns();
}

void cb_node_start(int *argc, char ***argv)
{
    cb_config_load(&cb.cfg);
    cb.multi = getenv("OMPI_COMM_WORLD_SIZE") != NULL;
    cb.self = 0;
    atomic_store(&cb.nnodes, 1);
    if (cb.multi) {
        int prov, rank, size;
        if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &prov) != MPI_SUCCESS)
            cb_die("MPI_Init_thread failed: the node processes could not be started");
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        MPI_Comm_size(MPI_COMM_WORLD, &size);
        if (size > CB_MAX_NODES)
            cb_die("%d nodes asked, at most %d supported", size, CB_MAX_NODES);
        cb.self = rank;
        launched = size;
    }
    cb_gas_init();
    cb_statics_init();
    if (cb.self == 0)
        cb_dir_add_heaps();
    const char *lr = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    cb_numa_place(lr ? atoi(lr) : 0);
    cb_comm_start();
    cb.pids[cb.self] = getpid();
    gethostname(cb.hosts[cb.self], sizeof cb.hosts[0] - 1);
    size_t len;
    cb_node_info_t *me = pack_info(cb.self, &len);
    if (cb.multi) {
        /* the master's address goes out through MPI; all else over UCX */
        uint64_t mlen = cb.self == 0 ? len : 0;
        MPI_Bcast(&mlen, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
        void *m0 = cb.self == 0 ? (void *)me : malloc(mlen);
        MPI_Bcast(m0, (int)mlen, MPI_BYTE, 0, MPI_COMM_WORLD);
        if (cb.self != 0) {
            add_node(m0);
            free(m0);
        }
    }
    cb_fault_init();
    cb_comm_run();
    if (cb.multi && cb.self != 0) {
        cb_msg_t h = { .type = M_HELLO };
        cb_call(0, &h, me, len, &joined);
    } else if (cb.multi && launched > 1) {
        cb_waiter_wait(&joined);
    }
    free(me);
    table_ready = true;
    if (cb.cfg.policy == CABLES_POLICY_FIXED && cb.cfg.policy_node >= atomic_load(&cb.nnodes))
        cb_die("CABLES_HOME_POLICY=fixed:%d names node %d, but the run has %d node(s)",
               cb.cfg.policy_node, cb.cfg.policy_node, atomic_load(&cb.nnodes));
}

/* master: a node attaches.  Once all launched nodes are in, everyone gets
 * the table (later attaches will extend it the same way). */
void cb_on_hello(const cb_msg_t *m, const void *p, size_t len)
{
    (void)len;
    const cb_node_info_t *i = p;
    add_node(i);
    hello_req[i->node] = malloc(sizeof *m);
    *hello_req[i->node] = *m;
    if (++hellos < launched - 1)
        return;
    /* table: all nodes' info */
    size_t tlen = 0;
    uint8_t *t = NULL;
    for (int n = 0; n < launched; n++) {
        size_t il;
        cb_node_info_t *ni = pack_info(n, &il);
        t = realloc(t, tlen + il);
        memcpy(t + tlen, ni, il);
        tlen += il;
        free(ni);
    }
    atomic_store(&cb.nnodes, launched);
    for (int n = 1; n < launched; n++) {
        cb_msg_t r = { .type = M_TABLE, .a = (uint64_t)launched };
        cb_reply(hello_req[n], &r, t, tlen, false);
        free(hello_req[n]);
    }
    free(t);
    cb_waiter_wake(&joined);
}

void cb_on_table(const cb_msg_t *m, const void *p, size_t len)
{
    const uint8_t *q = p, *end = q + len;
    while (q < end) {
        const cb_node_info_t *i = (const cb_node_info_t *)q;
        add_node(i);
        q += info_len(i);
    }
    atomic_store(&cb.nnodes, (int)m->a);
    cb_waiter_wake((cb_waiter_t *)(uintptr_t)m->waiter);
}

/* ---- liveness ---- */
void cb_heard_from(int node)
{
    if (node >= 0 && node < CB_MAX_NODES)
        last_heard[node] = cb_now_ns();
}

/* Heartbeats go on while stopping (a slow node's bye may take a while);
 * a node that said bye, or any node once we stop, is no longer watched. */
void cb_check_peers(void)
{
    if (!table_ready)
        return;
    bool watch = !atomic_load(&cb.stopping);
    uint64_t now = cb_now_ns(), limit = (uint64_t)(cb.cfg.dead_timeout * 1e9);
    int n = atomic_load(&cb.nnodes);
    for (int k = 0; k < n; k++) {
        if (k == cb.self)
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

void cb_peer_failed(int node, const char *why)
{
    char buf[400];
    int n = snprintf(buf, sizeof buf,
                     "cables: node %d: node %d (pid %d on %s) is dead or unreachable (%s); "
                     "the application cannot continue\n",
                     cb.self, node, cb.pids[node], cb.hosts[node][0] ? cb.hosts[node] : "?", why);
    if (write(2, buf, (size_t)n) < 0) {}
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
    cb_waiter_wait(&shutdown_w);
    cb_node_finish();
    exit(0);
}

void cb_node_finish(void)
{
    static bool done;
    if (done)
        return;
    done = true;
    cb_app_thread = false; /* what follows (MPI's finalization too) is the runtime's */
    if (cb.self == 0) {
        int n = atomic_load(&cb.nnodes);
        for (int k = 1; k < n; k++) {
            cb_msg_t s = { .type = M_SHUTDOWN, .a = 0 };
            cb_send(k, &s, NULL, 0, false);
        }
        /* a node that never answers is named by the peer check meanwhile */
        while (atomic_load(&byes) < n - 1)
            usleep(1000);
        atomic_store(&cb.stopping, true);
        if (cb.cfg.stats)
            cables_stats_print();
        for (int k = 1; k < n; k++) {
            cb_msg_t s = { .type = M_SHUTDOWN, .a = 1 };
            cb_send(k, &s, NULL, 0, false);
        }
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
    if (cb.multi)
        MPI_Finalize();
}
