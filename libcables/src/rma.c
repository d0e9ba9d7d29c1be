/* rma.c: remote reads.  Where a node can read another node's memory in
 * place (UCX's cma transport: processes of one host), a faulting thread
 * reads a home's pages itself: no message, and no thread woken at either
 * end.  UCX's ucp layer emulates such reads with messages in 1.13 (its cma
 * lanes serve only rendezvous), so this talks to the cma transport through
 * UCX's uct layer.  Elsewhere (other hosts, UCX_TLS without shared memory)
 * pages are fetched with messages (fault.c).
 *
 * A home sends its keys (its cma address, where its page store and move
 * epoch lie) with the first page a node fetches from it; that node's comm
 * thread connects.  Reads are made by application threads, one at a time. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <uct/api/uct.h>

#include "internal.h"

static uct_component_h comp;
static uct_md_h md;
static ucs_async_context_t *async;
static uct_worker_h uworker;
static uct_iface_h iface;
static uct_iface_attr_t attr;
static size_t rkey_len;
static uct_mem_h store_mh, moves_mh;
static cb_mutex_t mu = CB_MUTEX_INIT;
/* under mu: pages new here are read into this, then written into the page
 * store's file (cb_rma_read_served), CB_MAX_FETCH_PAGES of them */
static uint8_t *bounce;

typedef struct {
    uct_ep_h ep;
    uct_rkey_bundle_t store, moves;
    uint64_t store_base, moves_at;
} peer_t;
static peer_t peers[CB_MAX_NODES];
static _Atomic bool ready[CB_MAX_NODES];

/* UCX_TLS decides which transports run, cma included */
static bool tls_allow_cma(void)
{
    unsigned n;
    bool except;
    unsigned in = cb_ucx_tls_in((const char *const[]){ "cma", "sm", "shm", "all", NULL }, &n,
                                &except);
    return !n || (except ? !in : in);
}

/* A read from a node that has died fails (process_vm_readv: no such
 * process).  Without a handler UCX aborts the process; with this one the
 * read returns the error, and the node's pages come by messages, whose
 * failure names the dead node (node.c). */
static ucs_status_t read_failed(void *arg, uct_ep_h ep, ucs_status_t status)
{
    (void)arg, (void)ep, (void)status;
    return UCS_OK;
}

/* opens cma's interface; false (no remote reads) where it cannot */
static bool open_cma(void)
{
    uct_component_h *comps;
    unsigned nc;
    if (uct_query_components(&comps, &nc) != UCS_OK)
        return false;
    for (unsigned i = 0; i < nc && !comp; i++) {
        uct_component_attr_t ca = { .field_mask = UCT_COMPONENT_ATTR_FIELD_NAME };
        if (uct_component_query(comps[i], &ca) == UCS_OK && !strcmp(ca.name, "cma"))
            comp = comps[i];
    }
    uct_release_component_list(comps);
    uct_md_config_t *mc;
    if (!comp || uct_md_config_read(comp, NULL, NULL, &mc) != UCS_OK)
        return false;
    ucs_status_t s = uct_md_open(comp, "cma", mc, &md);
    uct_config_release(mc);
    if (s != UCS_OK)
        return false;
    uct_md_attr_t ma;
    uct_tl_resource_desc_t *res;
    unsigned nres;
    if (uct_md_query(md, &ma) != UCS_OK || uct_md_query_tl_resources(md, &res, &nres) != UCS_OK)
        return false;
    rkey_len = ma.rkey_packed_size;
    char dev[UCT_DEVICE_NAME_MAX] = "";
    for (unsigned i = 0; i < nres; i++)
        if (!strcmp(res[i].tl_name, "cma"))
            snprintf(dev, sizeof dev, "%s", res[i].dev_name);
    uct_release_tl_resource_list(res);
    uct_iface_config_t *ic;
    if (!dev[0] || ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK, &async) != UCS_OK ||
        uct_worker_create(async, UCS_THREAD_MODE_SINGLE, &uworker) != UCS_OK ||
        uct_md_iface_config_read(md, "cma", NULL, NULL, &ic) != UCS_OK)
        return false;
    uct_iface_params_t ip = {
        .field_mask = UCT_IFACE_PARAM_FIELD_OPEN_MODE | UCT_IFACE_PARAM_FIELD_DEVICE |
                      UCT_IFACE_PARAM_FIELD_ERR_HANDLER | UCT_IFACE_PARAM_FIELD_ERR_HANDLER_FLAGS,
        .open_mode = UCT_IFACE_OPEN_MODE_DEVICE,
        .mode.device = { .tl_name = "cma", .dev_name = dev },
        .err_handler = read_failed,
        .err_handler_flags = UCT_CB_FLAG_ASYNC,
    };
    s = uct_iface_open(md, uworker, &ip, ic, &iface);
    uct_config_release(ic);
    if (s != UCS_OK || uct_iface_query(iface, &attr) != UCS_OK ||
        !(attr.cap.flags & UCT_IFACE_FLAG_GET_ZCOPY) ||
        !(attr.cap.flags & UCT_IFACE_FLAG_CONNECT_TO_IFACE) ||
        attr.cap.get.max_zcopy < (size_t)CB_MAX_PAGE_GROUP * cb.ps)
        return false;
    return uct_md_mem_reg(md, cb.proto, cb.cfg.gas_size, UCT_MD_MEM_ACCESS_ALL, &store_mh) == UCS_OK &&
           uct_md_mem_reg(md, (void *)cb.moves, cb.ps, UCT_MD_MEM_ACCESS_ALL, &moves_mh) == UCS_OK;
}

void cb_rma_init(void)
{
    if (cb.cfg.fetch_get && tls_allow_cma() && !open_cma())
        cb_rma_fini(); /* what was opened; fetches go by messages */
    if (md) {
        bounce = mmap(NULL, CB_MAX_FETCH_PAGES * cb.ps, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (bounce == MAP_FAILED)
            cb_die("node %d: cannot map a buffer for remote reads: %s", cb.self, strerror(errno));
    }
}

bool cb_rma_ready(int node) { return atomic_load_explicit(&ready[node], memory_order_acquire); }

/* [u64 store base][u64 move epoch's address][u32 device address length][u32 iface
 * address length][u32 key length][u32 0][device address][iface address]
 * [store key][move epoch's key]; NULL where this node cannot be read */
void *cb_rma_keys(size_t *len)
{
    if (!store_mh || !moves_mh)
        return NULL;
    size_t dl = attr.device_addr_len, il = attr.iface_addr_len;
    *len = 32 + dl + il + 2 * rkey_len;
    uint8_t *b = calloc(1, *len);
    if (!b)
        cb_die("out of memory for the remote keys");
    uint64_t h[2] = { (uintptr_t)cb.proto, (uintptr_t)cb.moves };
    uint32_t l[4] = { (uint32_t)dl, (uint32_t)il, (uint32_t)rkey_len, 0 };
    memcpy(b, h, 16);
    memcpy(b + 16, l, 16);
    uint8_t *q = b + 32;
    if (uct_iface_get_device_address(iface, (uct_device_addr_t *)q) != UCS_OK ||
        uct_iface_get_address(iface, (uct_iface_addr_t *)(q + dl)) != UCS_OK ||
        uct_md_mkey_pack(md, store_mh, q + dl + il) != UCS_OK ||
        uct_md_mkey_pack(md, moves_mh, q + dl + il + rkey_len) != UCS_OK) {
        free(b);
        return NULL;
    }
    return b;
}

/* comm thread: node's keys have come */
void cb_rma_peer(int node, const void *keys, size_t len)
{
    const uint8_t *b = keys;
    uint64_t h[2];
    uint32_t l[4];
    if (!iface || !store_mh || atomic_load(&ready[node]))
        return;
    if (len < 32 || (memcpy(h, b, 16), memcpy(l, b + 16, 16), 32 + (size_t)l[0] + l[1] + 2 * (size_t)l[2] != len))
        cb_die("node %d: malformed remote keys from node %d", cb.self, node);
    const uct_device_addr_t *dev = (const void *)(b + 32);
    const uct_iface_addr_t *ia = (const void *)(b + 32 + l[0]);
    const uint8_t *rk = b + 32 + l[0] + l[1];
    if (l[0] != attr.device_addr_len || l[1] != attr.iface_addr_len || l[2] != rkey_len ||
        !uct_iface_is_reachable(iface, dev, ia))
        return; /* another host: messages */
    cb_mutex_lock(&mu);
    peer_t *p = &peers[node];
    uct_ep_params_t ep = {
        .field_mask = UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_DEV_ADDR |
                      UCT_EP_PARAM_FIELD_IFACE_ADDR,
        .iface = iface,
        .dev_addr = dev,
        .iface_addr = ia,
    };
    if (uct_ep_create(&ep, &p->ep) == UCS_OK &&
        uct_rkey_unpack(comp, rk, &p->store) == UCS_OK &&
        uct_rkey_unpack(comp, rk + rkey_len, &p->moves) == UCS_OK) {
        p->store_base = h[0];
        p->moves_at = h[1];
        atomic_store_explicit(&ready[node], true, memory_order_release);
    }
    cb_mutex_unlock(&mu);
}

static void read_done(uct_completion_t *c) { (void)c; }

static ucs_status_t get(peer_t *p, void *dst, size_t len, uint64_t raddr, uct_rkey_t rkey)
{
    uct_iov_t iov = { .buffer = dst, .length = len, .memh = UCT_MEM_HANDLE_NULL, .count = 1 };
    uct_completion_t c = { .func = read_done, .count = 1, .status = UCS_OK };
    ucs_status_t s = uct_ep_get_zcopy(p->ep, &iov, 1, raddr, rkey, &c);
    if (s != UCS_INPROGRESS)
        return s;
    /* cma copies within the call; were it not so, the copy is ours to finish */
    uint64_t t0 = cb_now_ns();
    while (c.count > 0) {
        if (!uct_worker_progress(uworker) && cb_now_ns() - t0 > 10000000000ull)
            cb_die("node %d: a remote read of %zu bytes did not end in 10 s", cb.self, len);
    }
    return c.status;
}

/* Pages new here go through the buffer: written into the store's file
 * they are allocated without being mapped, where a read into the protocol
 * view maps each one there first (then the application view maps them
 * again): 2.5 us a page against 3.7 on the VMs we measured, but 1.55
 * against 1.35 for pages mapped already. */
bool cb_rma_read_served(int node, uint32_t count, const uint64_t *first, const uint32_t *n,
                        uint64_t rec, bool fresh)
{
    if (!cb_rma_ready(node))
        return false;
    bool app = cb_app_thread;
    cb_app_thread = false; /* what UCX allocates is the runtime's (heap.c) */
    uint64_t epoch = 0;
    cb_mutex_lock(&mu);
    peer_t *p = &peers[node];
    ucs_status_t s = UCS_ERR_NO_ELEM;
    size_t total = 0;
    for (uint32_t k = 0; k < count; k++)
        total += n[k];
    fresh = fresh && bounce && total <= CB_MAX_FETCH_PAGES;
    if (atomic_load(&ready[node])) {
        s = UCS_OK;
        for (uint32_t k = 0, off = 0; k < count && s == UCS_OK; off += n[k++])
            s = get(p, fresh ? bounce + off * cb.ps : cb_proto_page(first[k]),
                    (size_t)n[k] * cb.ps, p->store_base + first[k] * cb.ps, p->store.rkey);
        if (s == UCS_OK) /* after the data, in that order */
            s = get(p, &epoch, sizeof epoch, p->moves_at, p->moves.rkey);
        if (s != UCS_OK) /* the node is gone, or reads fail: messages from now on */
            atomic_store(&ready[node], false);
    }
    bool ok = s == UCS_OK && (uint32_t)epoch == (uint32_t)rec;
    for (uint32_t k = 0, off = 0; ok && fresh && k < count; off += n[k++])
        cb_store_write(first[k], bounce + off * cb.ps, (size_t)n[k] * cb.ps);
    cb_mutex_unlock(&mu);
    cb_app_thread = app;
    return ok;
}

void cb_rma_fini(void)
{
    cb_mutex_lock(&mu);
    for (int i = 0; i < CB_MAX_NODES; i++) {
        peer_t *p = &peers[i];
        atomic_store(&ready[i], false);
        if (p->store.rkey)
            uct_rkey_release(comp, &p->store);
        if (p->moves.rkey)
            uct_rkey_release(comp, &p->moves);
        if (p->ep)
            uct_ep_destroy(p->ep);
        *p = (peer_t){ 0 };
    }
    if (bounce)
        munmap(bounce, CB_MAX_FETCH_PAGES * cb.ps);
    bounce = NULL;
    if (store_mh)
        uct_md_mem_dereg(md, store_mh);
    if (moves_mh)
        uct_md_mem_dereg(md, moves_mh);
    store_mh = moves_mh = NULL;
    if (iface)
        uct_iface_close(iface);
    if (uworker)
        uct_worker_destroy(uworker);
    if (async)
        ucs_async_context_destroy(async);
    if (md)
        uct_md_close(md);
    iface = NULL;
    uworker = NULL;
    async = NULL;
    md = NULL;
    cb_mutex_unlock(&mu);
}
