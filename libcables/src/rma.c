/* rma.c: remote reads.  Where a node can read another node's memory in
 * place (UCX's cma transport: processes of one host), a faulting thread
 * reads a home's pages itself: no message, and no thread woken at either
 * end.  UCX's ucp layer emulates such reads with messages in 1.13 (its cma
 * lanes serve only rendezvous), so this talks to the cma transport through
 * UCX's uct layer.  Elsewhere (other hosts, UCX_TLS without shared memory)
 * pages are fetched with messages (fault.c).
 *
 * A home sends its keys (its cma address, where its page store, move
 * epoch and read marks lie) with the first page a node fetches from it;
 * that node's comm thread connects.  Reads are made by application
 * threads, one at a time.
 *
 * A reader first marks the pages it is about to read (cb.read_marks, a
 * byte a page, written in place too): the home reads no message, and a
 * page it keeps writable tells it changed only by its checksum, which a
 * write undone within the interval (x = 1 read here, then x = 0 again)
 * leaves as it was.  The home's release gives a marked page found
 * unchanged a mark notice carrying its checksum, and a reader keeps only a
 * copy that hashes to it (hlrc.c: read_in_place, marks_check). */
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
static uct_mem_h store_mh, moves_mh, marks_mh;
static cb_mutex_t mu = CB_MUTEX_INIT;
/* under mu: pages new here are read into this, then written into the page
 * store's file (cb_rma_read_served), CB_MAX_FETCH_PAGES of them */
static uint8_t *bounce;

typedef struct {
    uct_ep_h ep;
    uct_rkey_bundle_t store, moves, marks;
    uint64_t store_base, moves_at, marks_at;
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
        !(attr.cap.flags & UCT_IFACE_FLAG_PUT_ZCOPY) ||
        !(attr.cap.flags & UCT_IFACE_FLAG_CONNECT_TO_IFACE) ||
        attr.cap.get.max_zcopy < (size_t)CB_MAX_FETCH_PAGES * cb.ps) /* runs that touch: one read */
        return false;
    return uct_md_mem_reg(md, cb.proto, cb.cfg.gas_size, UCT_MD_MEM_ACCESS_ALL, &store_mh) == UCS_OK &&
           uct_md_mem_reg(md, (void *)cb.moves, cb.ps, UCT_MD_MEM_ACCESS_ALL, &moves_mh) == UCS_OK &&
           uct_md_mem_reg(md, (void *)cb.read_marks, cb.npages, UCT_MD_MEM_ACCESS_ALL,
                          &marks_mh) == UCS_OK;
}

void cb_rma_init(void)
{
    if (cb.cfg.fetch_get && tls_allow_cma() && !open_cma())
        cb_rma_fini(); /* what was opened; fetches go by messages */
    if (md) {
        bounce = cb_mmap(NULL, CB_MAX_FETCH_PAGES * cb.ps, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (bounce == MAP_FAILED)
            cb_die("node %d: cannot map a buffer for remote reads: %s", cb.self, strerror(errno));
    }
}

bool cb_rma_ready(int node) { return atomic_load_explicit(&ready[node], memory_order_acquire); }

/* [u64 store base][u64 move epoch's address][u64 read marks' address]
 * [u32 device address length][u32 iface address length][u32 key length]
 * [u32 0][device address][iface address][store key][move epoch's key]
 * [read marks' key]; NULL where this node cannot be read */
enum { KEYS_HEAD = 40, NKEYS = 3 };

void *cb_rma_keys(size_t *len)
{
    if (!store_mh || !moves_mh || !marks_mh)
        return NULL;
    size_t dl = attr.device_addr_len, il = attr.iface_addr_len;
    *len = KEYS_HEAD + dl + il + NKEYS * rkey_len;
    uint8_t *b = calloc(1, *len);
    if (!b)
        cb_die("out of memory for the remote keys");
    uint64_t h[NKEYS] = { (uintptr_t)cb.proto, (uintptr_t)cb.moves, (uintptr_t)cb.read_marks };
    uint32_t l[4] = { (uint32_t)dl, (uint32_t)il, (uint32_t)rkey_len, 0 };
    memcpy(b, h, sizeof h);
    memcpy(b + sizeof h, l, sizeof l);
    uint8_t *q = b + KEYS_HEAD, *k = q + dl + il;
    if (uct_iface_get_device_address(iface, (uct_device_addr_t *)q) != UCS_OK ||
        uct_iface_get_address(iface, (uct_iface_addr_t *)(q + dl)) != UCS_OK ||
        uct_md_mkey_pack(md, store_mh, k) != UCS_OK ||
        uct_md_mkey_pack(md, moves_mh, k + rkey_len) != UCS_OK ||
        uct_md_mkey_pack(md, marks_mh, k + 2 * rkey_len) != UCS_OK) {
        free(b);
        return NULL;
    }
    return b;
}

/* comm thread: node's keys have come */
void cb_rma_peer(int node, const void *keys, size_t len)
{
    const uint8_t *b = keys;
    uint64_t h[NKEYS];
    uint32_t l[4];
    if (!iface || !store_mh || atomic_load(&ready[node]))
        return;
    if (len < KEYS_HEAD || (memcpy(h, b, sizeof h), memcpy(l, b + sizeof h, sizeof l),
                            KEYS_HEAD + (size_t)l[0] + l[1] + NKEYS * (size_t)l[2] != len))
        cb_die("node %d: malformed remote keys from node %d", cb.self, node);
    const uct_device_addr_t *dev = (const void *)(b + KEYS_HEAD);
    const uct_iface_addr_t *ia = (const void *)(b + KEYS_HEAD + l[0]);
    const uint8_t *rk = b + KEYS_HEAD + l[0] + l[1];
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
        uct_rkey_unpack(comp, rk + rkey_len, &p->moves) == UCS_OK &&
        uct_rkey_unpack(comp, rk + 2 * rkey_len, &p->marks) == UCS_OK) {
        p->store_base = h[0];
        p->moves_at = h[1];
        p->marks_at = h[2];
        atomic_store_explicit(&ready[node], true, memory_order_release);
    }
    cb_mutex_unlock(&mu);
}

static void rma_done(uct_completion_t *c) { (void)c; }

/* reads len bytes at raddr into buf, or (put) writes them there */
static ucs_status_t rma(peer_t *p, bool put, void *buf, size_t len, uint64_t raddr,
                        uct_rkey_t rkey)
{
    uct_iov_t iov = { .buffer = buf, .length = len, .memh = UCT_MEM_HANDLE_NULL, .count = 1 };
    uct_completion_t c = { .func = rma_done, .count = 1, .status = UCS_OK };
    ucs_status_t s = put ? uct_ep_put_zcopy(p->ep, &iov, 1, raddr, rkey, &c)
                         : uct_ep_get_zcopy(p->ep, &iov, 1, raddr, rkey, &c);
    if (s != UCS_INPROGRESS)
        return s;
    /* cma copies within the call; were it not so, the copy is ours to finish */
    uint64_t t0 = cb_now_ns();
    while (c.count > 0) {
        if (!uct_worker_progress(uworker) && cb_now_ns() - t0 > 10000000000ull)
            cb_die("node %d: a remote %s of %zu bytes did not end in 10 s", cb.self,
                   put ? "write" : "read", len);
    }
    return c.status;
}

static ucs_status_t get(peer_t *p, void *dst, size_t len, uint64_t raddr, uct_rkey_t rkey)
{
    return rma(p, false, dst, len, raddr, rkey);
}

/* marks pages [first, first + n) at p's node as read in place (the
 * header's comment) */
static ucs_status_t mark(peer_t *p, uint64_t first, uint32_t n)
{
    static const uint8_t ones[CB_MAX_FETCH_PAGES] = { [0 ... CB_MAX_FETCH_PAGES - 1] = 1 };
    ucs_status_t s = UCS_OK;
    for (uint32_t k = 0; k < n && s == UCS_OK; k += CB_MAX_FETCH_PAGES) {
        uint32_t m = n - k < CB_MAX_FETCH_PAGES ? n - k : CB_MAX_FETCH_PAGES;
        s = rma(p, true, (void *)ones, m, p->marks_at + first + k, p->marks.rkey);
    }
    return s;
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
        for (uint32_t k = 0; k < count && s == UCS_OK; k++) /* before the data */
            s = mark(p, first[k], n[k]);
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
        if (p->marks.rkey)
            uct_rkey_release(comp, &p->marks);
        if (p->ep)
            uct_ep_destroy(p->ep);
        *p = (peer_t){ 0 };
    }
    if (bounce)
        cb_munmap(bounce, CB_MAX_FETCH_PAGES * cb.ps);
    bounce = NULL;
    if (store_mh)
        uct_md_mem_dereg(md, store_mh);
    if (moves_mh)
        uct_md_mem_dereg(md, moves_mh);
    if (marks_mh)
        uct_md_mem_dereg(md, marks_mh);
    store_mh = moves_mh = marks_mh = NULL;
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
