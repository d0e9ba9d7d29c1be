/* transport.c: UCX, driven by the communication thread alone.  Every
 * runtime message is one active message (forced eager: the receiver gets it
 * whole).  The page store is registered once, whole, for remote access. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucp/api/ucp.h>

#include "internal.h"

static ucp_context_h ctx;
static ucp_worker_h worker;
static ucp_mem_h store_mh;
static ucp_ep_h eps[CB_MAX_NODES];
static void *peer_addr[CB_MAX_NODES];
static size_t peer_len[CB_MAX_NODES];
static ucp_address_t *my_addr;
static ucp_err_handling_mode_t err_mode;
static size_t my_len;
static int forced_err = -1; /* cb_xport_leave_out_shm's, or -1 */

/* A node of one machine in another network namespace than a node there
 * (node.c): UCX_TLS was unset.  Every node asks for the same error
 * handling, which node.c decides: endpoints that differ in it did not
 * connect (Endpoint timeout). */
void cb_xport_leave_out_shm(bool peer_errors)
{
    setenv("UCX_TLS", "^sm", 1);
    forced_err = peer_errors ? UCP_ERR_HANDLING_MODE_PEER : UCP_ERR_HANDLING_MODE_NONE;
}

bool cb_xport_peer_errors(void) { return err_mode == UCP_ERR_HANDLING_MODE_PEER; }

static void check(ucs_status_t s, const char *what)
{
    if (s != UCS_OK)
        cb_die("node %d: UCX %s failed: %s (check UCX_TLS and UCX_NET_DEVICES)", cb.self, what,
               ucs_status_string(s));
}

static ucs_status_t on_am(void *arg, const void *header, size_t hlen, void *data, size_t len,
                          const ucp_am_recv_param_t *param)
{
    (void)arg; (void)header; (void)hlen;
    if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV || len < sizeof(cb_msg_t))
        cb_die("node %d: unexpected message from the transport (%zu bytes)", cb.self, len);
    cb_msg_t m;
    memcpy(&m, data, sizeof m);
    cb_heard_from(m.src); /* from the wire only: a deferred retry proves nothing */
    void *p = (uint8_t *)data + sizeof m, *copy = NULL;
    size_t plen = len - sizeof m;
    if ((uintptr_t)p % 8 && plen) { /* UCX may hand it unaligned; parsers read words */
        copy = malloc(plen);
        if (!copy)
            cb_die("out of memory receiving a message");
        memcpy(copy, p, plen);
        p = copy;
    }
    cb_dispatch(&m, p, plen);
    free(copy);
    return UCS_OK;
}

static void on_ep_error(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    (void)ep;
    int node = (int)(intptr_t)arg;
    if (!atomic_load(&cb.stopping) && cb_node_up(node)) /* a detached node may go */
        cb_peer_failed(node, ucs_status_string(status));
}

/* UCX 1.13's shared-memory transports cannot report a dead peer, and
 * asking for peer failure reports would make UCX avoid them.  Ask only when
 * the transports chosen all can (TCP); elsewhere the heartbeats of node.c
 * find a dead node. */
static ucp_err_handling_mode_t pick_err_mode(void)
{
    if (forced_err >= 0)
        return (ucp_err_handling_mode_t)forced_err;
    unsigned n;
    bool except; /* only tcp, or all but sm */
    unsigned tcp = cb_ucx_tls_in((const char *const[]){ "tcp", NULL }, &n, &except),
             sm = cb_ucx_tls_in((const char *const[]){ "sm", NULL }, &n, &except);
    return n && (except ? sm : tcp) == n ? UCP_ERR_HANDLING_MODE_PEER : UCP_ERR_HANDLING_MODE_NONE;
}

int cb_xport_init(void)
{
    err_mode = pick_err_mode();
    ucp_config_t *conf;
    check(ucp_config_read(NULL, NULL, &conf), "configuration (UCX_* environment)");
    ucp_params_t p = {
        .field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED,
        .features = UCP_FEATURE_AM | UCP_FEATURE_WAKEUP | UCP_FEATURE_RMA,
        .mt_workers_shared = 0,
    };
    check(ucp_init(&p, conf, &ctx), "initialization");
    ucp_config_release(conf);
    ucp_worker_params_t wp = {
        .field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
        .thread_mode = UCS_THREAD_MODE_SINGLE,
    };
    check(ucp_worker_create(ctx, &wp, &worker), "worker creation");
    check(ucp_worker_get_address(worker, &my_addr, &my_len), "worker address");
    ucp_am_handler_param_t hp = {
        .field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                      UCP_AM_HANDLER_PARAM_FIELD_FLAGS,
        .id = 0,
        .cb = on_am,
        .flags = UCP_AM_FLAG_WHOLE_MSG,
    };
    check(ucp_worker_set_am_recv_handler(worker, &hp), "active message handler");
    ucp_mem_map_params_t mp = {
        .field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH,
        .address = cb.proto,
        .length = cb.cfg.gas_size,
    };
    check(ucp_mem_map(ctx, &mp, &store_mh), "registration of the page store");
    int fd;
    check(ucp_worker_get_efd(worker, &fd), "event fd");
    return fd;
}

size_t cb_xport_address(void **addr)
{
    *addr = my_addr;
    return my_len;
}

void cb_xport_add_peer(int node, const void *addr, size_t len)
{
    free(peer_addr[node]);
    peer_addr[node] = malloc(len);
    memcpy(peer_addr[node], addr, len);
    peer_len[node] = len;
}

/* NULL: node is gone (we stop, or it left) before we first spoke to it;
 * its shared memory may be gone with it (UCX's sysv transport) */
static ucp_ep_h ep_of(int node)
{
    if (eps[node])
        return eps[node];
    if (!peer_addr[node])
        cb_die("node %d: no address for node %d (not attached)", cb.self, node);
    ucp_ep_params_t ep = {
        .field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                      UCP_EP_PARAM_FIELD_ERR_HANDLER,
        .address = peer_addr[node],
        .err_handler = { .cb = on_ep_error, .arg = (void *)(intptr_t)node },
    };
    ep.err_mode = err_mode;
    ucs_status_t s = ucp_ep_create(worker, &ep, &eps[node]);
    if (s != UCS_OK && (atomic_load(&cb.stopping) || !cb_node_up(node))) {
        eps[node] = NULL;
        return NULL;
    }
    check(s, "endpoint creation");
    return eps[node];
}

static void sent(void *req, ucs_status_t status, void *buf)
{
    (void)status;
    free(buf);
    ucp_request_free(req);
}

int cb_xport_send(int dst, void *buf, size_t len)
{
    ucp_request_param_t rp = {
        .op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                        UCP_OP_ATTR_FIELD_FLAGS,
        .cb.send = sent,
        .user_data = buf,
        .flags = UCP_AM_SEND_FLAG_EAGER,
    };
    ucp_ep_h ep = ep_of(dst);
    if (!ep) {
        free(buf);
        return -1;
    }
    ucs_status_ptr_t r = ucp_am_send_nbx(ep, 0, NULL, 0, buf, len, &rp);
    if (r == NULL) {
        free(buf);
        return 0;
    }
    if (UCS_PTR_IS_ERR(r)) {
        free(buf);
        if (!atomic_load(&cb.stopping) && cb_node_up(dst))
            cb_peer_failed(dst, ucs_status_string(UCS_PTR_STATUS(r)));
        return -1;
    }
    return 0;
}

bool cb_xport_progress(void) { return ucp_worker_progress(worker) != 0; }

bool cb_xport_arm(void) { return ucp_worker_arm(worker) == UCS_OK; }

void cb_xport_flush(void)
{
    ucp_request_param_t rp = { .op_attr_mask = 0 };
    void *r = ucp_worker_flush_nbx(worker, &rp);
    if (UCS_PTR_IS_PTR(r)) {
        uint64_t t0 = cb_now_ns();
        while (ucp_request_check_status(r) == UCS_INPROGRESS && cb_now_ns() - t0 < 2000000000ull)
            ucp_worker_progress(worker);
        ucp_request_free(r);
    }
}

void cb_xport_fini(void)
{
    for (int i = 0; i < CB_MAX_NODES; i++)
        if (eps[i]) {
            ucp_request_param_t rp = { .op_attr_mask = 0 }; /* flush, then close */
            void *r = ucp_ep_close_nbx(eps[i], &rp);
            if (UCS_PTR_IS_PTR(r)) {
                uint64_t t0 = cb_now_ns();
                while (ucp_request_check_status(r) == UCS_INPROGRESS &&
                       cb_now_ns() - t0 < 1000000000ull)
                    ucp_worker_progress(worker);
                ucp_request_free(r);
            }
            eps[i] = NULL;
        }
    /* The worker and the context are left to the process's end, which
     * follows (the node ends here).  UCX 1.13's worker destruction purges
     * the endpoints that peers wired up to us, and it asserts on a wireup
     * reply still waiting for a connection to a peer that is leaving too
     * (CI: 4 nodes over TCP, a node ended with SIGABRT after its program
     * had passed); what we sent was flushed above. */
}

const void *cb_xport_peer_address(int node, size_t *len)
{
    *len = peer_len[node];
    return peer_addr[node];
}
