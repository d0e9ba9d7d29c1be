/* ucx_pingpong: the raw UCX baseline for bench/run.sh.  Two MPI ranks
 * (started with mpirun -n 2) swap their UCX worker addresses over MPI, then
 * ping-pong UCX active messages with busy-polling progress loops:
 *   - round trip: 8-byte message, 8-byte answer;
 *   - page fetch: 8-byte request, 4 KiB reply (how a page fetch travels).
 * Then, informative, the same with both sides sleeping in ucp_worker_wait
 * when idle (UCX_WAIT_* keys, a fifth of the iterations), as an
 * event-driven communication thread does.  Every message is sent eager, as the runtime sends its own.  Each round
 * trip is timed on its own (clock_gettime); rank 0 prints medians in
 * microseconds as "KEY value" lines.
 *
 * Built by bench/run.sh with mpicc and NOT linked with libcables (whose
 * start-up wrapper would take over main under mpirun).
 *
 * usage: mpirun -n 2 ucx_pingpong [ITERS] [WARMUP]   (defaults 3000, 300)
 * Each kind of exchange stops after about 1.5 s (1 s when sleeping) even if
 * it did fewer than ITERS: the *_N keys say how many were timed. */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucp/api/ucp.h>

#include "../bench_util.h"

enum { AM_PING = 1, AM_PONG = 2, AM_REQ = 3, AM_PAGE = 4, AM_MODE = 5, AM_STOP = 6 };
#define PAGE 4096

static ucp_worker_h worker;
static ucp_ep_h ep;
static volatile int got_pong, got_page, pending_ping, pending_req, stop, blocking;
static char page_out[PAGE], page_in[PAGE];
static uint64_t word_out;

static void die(const char *what, ucs_status_t s)
{
    fprintf(stderr, "ucx_pingpong: %s: %s\n", what, ucs_status_string(s));
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static ucs_status_t on_am(void *arg, const void *hdr, size_t hlen, void *data, size_t len,
                          const ucp_am_recv_param_t *param)
{
    (void)hdr; (void)hlen; (void)param;
    switch ((int)(intptr_t)arg) {
    case AM_PING: pending_ping++; break;
    case AM_PONG: got_pong++; break;
    case AM_REQ: pending_req++; break;
    case AM_PAGE:
        if (len == PAGE)
            memcpy(page_in, data, PAGE);
        got_page++;
        break;
    case AM_MODE: blocking = 1; break;
    case AM_STOP: stop = 1; break;
    }
    return UCS_OK;
}

static void set_handler(unsigned id)
{
    ucp_am_handler_param_t hp = {
        .field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                      UCP_AM_HANDLER_PARAM_FIELD_FLAGS | UCP_AM_HANDLER_PARAM_FIELD_ARG,
        .id = id,
        .cb = on_am,
        .arg = (void *)(intptr_t)id,
        .flags = UCP_AM_FLAG_WHOLE_MSG,
    };
    ucs_status_t s = ucp_worker_set_am_recv_handler(worker, &hp);
    if (s != UCS_OK)
        die("ucp_worker_set_am_recv_handler", s);
}

/* send and progress until the send buffer may be reused */
static void send_am(unsigned id, const void *buf, size_t len)
{
    ucp_request_param_t rp = { .op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                               .flags = UCP_AM_SEND_FLAG_EAGER };
    ucs_status_ptr_t r = ucp_am_send_nbx(ep, id, NULL, 0, buf, len, &rp);
    if (r == NULL)
        return;
    if (UCS_PTR_IS_ERR(r))
        die("ucp_am_send_nbx", UCS_PTR_STATUS(r));
    while (ucp_request_check_status(r) == UCS_INPROGRESS)
        ucp_worker_progress(worker);
    ucs_status_t s = ucp_request_check_status(r);
    ucp_request_free(r);
    if (s != UCS_OK)
        die("active message send", s);
}

/* one step of the progress loop: busy polling, or (blocking mode) sleeping
 * in ucp_worker_wait when there is nothing to do, as an event-driven
 * communication thread does */
static void step(void)
{
    if (ucp_worker_progress(worker) || !blocking)
        return;
    ucs_status_t s = ucp_worker_arm(worker);
    if (s == UCS_OK)
        s = ucp_worker_wait(worker);
    if (s != UCS_OK && s != UCS_ERR_BUSY)
        die("ucp_worker_arm/wait", s);
}

/* rank 1: answer until told to stop */
static void serve(void)
{
    for (int i = 0; i < PAGE; i++)
        page_out[i] = (char)(i * 7 + 1);
    while (!stop) {
        step();
        while (pending_ping) {
            pending_ping--;
            send_am(AM_PONG, &word_out, sizeof word_out);
        }
        while (pending_req) {
            pending_req--;
            send_am(AM_PAGE, page_out, PAGE);
        }
    }
}

/* rank 0: one timed exchange per iteration, each kind stopping early when
 * it used up budget_us (a shared, busy machine); the counts done are
 * returned in *nrtt and *npg */
static void measure(int iters, int warmup, double budget_us, double *rtt, int *nrtt, double *pg,
                    int *npg)
{
    double start = now_us();
    *nrtt = 0;
    for (int i = -warmup; i < iters; i++) {
        double t0 = now_us();
        int want = got_pong + 1;
        send_am(AM_PING, &word_out, sizeof word_out);
        while (got_pong < want)
            step();
        double t1 = now_us();
        if (i == -1 || (i == 0 && warmup == 0))
            start = t1; /* the budget counts from the end of the warm-up */
        if (i >= 0)
            rtt[(*nrtt)++] = t1 - t0;
        if (t1 - start > budget_us && *nrtt >= 10)
            break;
    }
    start = now_us();
    *npg = 0;
    for (int i = -warmup; i < iters; i++) {
        double t0 = now_us();
        int want = got_page + 1;
        send_am(AM_REQ, &word_out, sizeof word_out);
        while (got_page < want)
            step();
        double t1 = now_us();
        if (i == -1 || (i == 0 && warmup == 0))
            start = t1;
        if (i >= 0)
            pg[(*npg)++] = t1 - t0;
        if (t1 - start > budget_us && *npg >= 10)
            break;
    }
    for (int i = 0; i < PAGE; i++)
        if (page_in[i] != (char)(i * 7 + 1)) {
            fprintf(stderr, "ucx_pingpong: 4 KiB reply corrupted at byte %d\n", i);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
}

int main(int argc, char **argv)
{
    int iters = argc > 1 ? atoi(argv[1]) : 3000;
    int warmup = argc > 2 ? atoi(argv[2]) : 300;
    if (iters < 1) iters = 1;
    if (warmup < 0) warmup = 0;
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        if (rank == 0)
            fprintf(stderr, "ucx_pingpong: run with exactly 2 ranks (mpirun -n 2)\n");
        MPI_Finalize();
        return 2;
    }

    ucp_config_t *conf;
    ucs_status_t s = ucp_config_read(NULL, NULL, &conf);
    if (s != UCS_OK) die("ucp_config_read", s);
    ucp_params_t p = { .field_mask = UCP_PARAM_FIELD_FEATURES,
                       .features = UCP_FEATURE_AM | UCP_FEATURE_WAKEUP };
    ucp_context_h ctx;
    s = ucp_init(&p, conf, &ctx);
    ucp_config_release(conf);
    if (s != UCS_OK) die("ucp_init", s);
    ucp_worker_params_t wp = { .field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
                               .thread_mode = UCS_THREAD_MODE_SINGLE };
    s = ucp_worker_create(ctx, &wp, &worker);
    if (s != UCS_OK) die("ucp_worker_create", s);
    for (unsigned id = AM_PING; id <= AM_STOP; id++)
        set_handler(id);

    /* swap worker addresses over MPI */
    ucp_address_t *addr;
    size_t alen;
    s = ucp_worker_get_address(worker, &addr, &alen);
    if (s != UCS_OK) die("ucp_worker_get_address", s);
    uint64_t mylen = alen, peerlen;
    int peer = 1 - rank;
    MPI_Sendrecv(&mylen, 1, MPI_UINT64_T, peer, 0, &peerlen, 1, MPI_UINT64_T, peer, 0,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    void *paddr = malloc(peerlen);
    MPI_Sendrecv(addr, (int)alen, MPI_BYTE, peer, 1, paddr, (int)peerlen, MPI_BYTE, peer, 1,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    ucp_ep_params_t ep_p = { .field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS,
                             .address = paddr };
    s = ucp_ep_create(worker, &ep_p, &ep);
    if (s != UCS_OK) die("ucp_ep_create", s);
    MPI_Barrier(MPI_COMM_WORLD);

    if (rank == 0) {
        double *rtt = malloc(iters * sizeof *rtt), *pg = malloc(iters * sizeof *pg);
        int nr, np;
        const char *tls = getenv("UCX_TLS");
        printf("UCX_TLS %s\n", tls ? tls : "(default)");
        /* busy polling on both sides: the baseline */
        measure(iters, warmup, 1.5e6, rtt, &nr, pg, &np);
        printf("UCX_RTT_N %d\n", nr);
        printf("UCX_RTT_US %.3f\n", median(rtt, nr));
        printf("UCX_RTT_P10_US %.3f\n", pct(rtt, nr, 0.10));
        printf("UCX_RTT_P90_US %.3f\n", pct(rtt, nr, 0.90));
        printf("UCX_4K_N %d\n", np);
        printf("UCX_4K_US %.3f\n", median(pg, np));
        printf("UCX_4K_P10_US %.3f\n", pct(pg, np, 0.10));
        printf("UCX_4K_P90_US %.3f\n", pct(pg, np, 0.90));
        /* both sides sleep in ucp_worker_wait when idle (informative) */
        send_am(AM_MODE, &word_out, sizeof word_out);
        blocking = 1;
        measure(iters / 5 > 10 ? iters / 5 : 10, warmup / 5, 1.0e6, rtt, &nr, pg, &np);
        printf("UCX_WAIT_N %d\n", nr < np ? nr : np);
        printf("UCX_WAIT_RTT_US %.3f\n", median(rtt, nr));
        printf("UCX_WAIT_4K_US %.3f\n", median(pg, np));
        send_am(AM_STOP, &word_out, sizeof word_out);
        printf("DONE 0\n");
        fflush(stdout);
        free(rtt);
        free(pg);
    } else {
        serve();
    }

    /* drain outstanding traffic before tearing down */
    ucp_request_param_t fp = { .op_attr_mask = 0 };
    void *r = ucp_worker_flush_nbx(worker, &fp);
    if (UCS_PTR_IS_PTR(r)) {
        while (ucp_request_check_status(r) == UCS_INPROGRESS)
            ucp_worker_progress(worker);
        ucp_request_free(r);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    ucp_request_param_t cp = { .op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                               .flags = UCP_EP_CLOSE_FLAG_FORCE };
    r = ucp_ep_close_nbx(ep, &cp);
    if (UCS_PTR_IS_PTR(r)) {
        while (ucp_request_check_status(r) == UCS_INPROGRESS)
            ucp_worker_progress(worker);
        ucp_request_free(r);
    }
    ucp_worker_release_address(worker, addr);
    ucp_worker_destroy(worker);
    ucp_cleanup(ctx);
    free(paddr);
    MPI_Finalize();
    return 0;
}
