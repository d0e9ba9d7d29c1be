/* libcables internals: the per-node context and every module's private API,
 * grouped by the file that defines it.
 *
 * Who calls whom: application threads enter through api.c / sync objects /
 * fault.c; they never touch UCX.  They post messages to the communication
 * thread (comm.c), which alone drives UCX (transport.c) and owns all manager
 * state (directory, lock tails, barrier trees, cond queues, thread table).
 * The runtime reads and writes shared data only through the protocol view
 * (ctx.proto), never the application view, so it never faults on itself. */
#ifndef CABLES_INTERNAL_H
#define CABLES_INTERNAL_H


#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include "cables.h"

/* 32 TiB: the same in every node, and in the application range of
 * AddressSanitizer (whose shadow ends at 0x10007fff7fff) */
#define CB_GAS_BASE  0x200000000000ULL

#include "pure.h"

/* The runtime's own memory-map calls are the kernel's: the shim interposes
 * libc's names for the program's (pthread_shim/src/mmap.c), and the fault
 * path's mprotect runs on application threads. */
#include <sys/syscall.h>
#include <unistd.h>
static inline void *cb_mmap(void *a, size_t len, int prot, int flags, int fd, off_t off)
{
    return (void *)syscall(SYS_mmap, a, len, prot, flags, fd, off);
}
static inline int cb_munmap(void *a, size_t len) { return (int)syscall(SYS_munmap, a, len); }
static inline int cb_mprotect(void *a, size_t len, int prot)
{
    return (int)syscall(SYS_mprotect, a, len, prot);
}
static inline int cb_madvise(void *a, size_t len, int advice)
{
    return (int)syscall(SYS_madvise, a, len, advice);
}
/* and so are its affinity changes (the shim folds the program's) */
static inline int cb_setaffinity(pid_t pid, size_t size, const void *set)
{
    return (int)syscall(SYS_sched_setaffinity, pid, size, set);
}

/* ---- waiting: futex words (sys.c) ----
 * The runtime never calls the pthread names a relinked program gets from
 * the shim: it has its own mutex, and starts its threads with libc's
 * pthread_create found directly.  Nor, on an application thread's path,
 * any of libc's cancellation points (write, nanosleep, ...: raw system
 * calls instead): a pending cancellation would unwind the thread from the
 * middle of a runtime operation. */
typedef struct { _Atomic uint32_t v; } cb_mutex_t; /* 0 free, 1 held, 2 held + waiters */
#define CB_MUTEX_INIT { 0 }
void cb_mutex_lock(cb_mutex_t *m);
void cb_mutex_unlock(cb_mutex_t *m);
/* the program's handled signals held off on its threads, nested (sys.c):
 * around any lock the runtime's threads or a fault take too */
void cb_signals_hold_enter(void);
void cb_signals_hold_leave(void);
/* cb_signals_hold_leave, true if a signal held off came in then (its
 * handler ran on this thread; with restart, one without SA_RESTART) */
bool cb_signals_hold_leave_ran(bool restart);
/* a detached (or, with join, joinable) system thread on private memory */
int cb_thread_start(pthread_t *t, void *(*fn)(void *), void *arg, bool detached);
/* ... joinable, with a stack of stack bytes (a thread of the runtime that
 * needs little: address space counts under ulimit -v) */
int cb_thread_start_sized(pthread_t *t, void *(*fn)(void *), void *arg, size_t stack);
int cb_thread_wait(pthread_t t);
/* the calling thread (one of the runtime's) takes no signal sent to the
 * process, only those its own faults raise: the program's handlers run on
 * the program's threads, and none of them ends the process from a runtime
 * thread that the end needs */
void cb_block_process_signals(void);
/* those signals: all but the ones a thread's own faults raise */
void cb_process_signals(sigset_t *set);
/* start.c: the runtime's end after the program's exit handlers and
 * destructor functions: head.o's first constructor says its last
 * destructor will call cables_end_from_fini (else cables_main registers
 * the end as an exit handler; an earlier head.o's constructor registers it
 * with cables_register_end) */
void cables_end_in_fini(void);
void cables_register_end(void);
void cables_end_from_fini(void);
/* start.c: C++'s standard streams made on a node other than the master */
void cb_cxx_streams(void);
void *cb_libc(const char *name); /* libc's definition of name, past the shim's */
void cb_futex_wait(_Atomic uint32_t *w, uint32_t val);
/* ... until the deadline (cb_now_ns; UINT64_MAX: none): the system call's result */
int cb_futex_wait_until(_Atomic uint32_t *w, uint32_t val, uint64_t deadline);
void cb_futex_wake(_Atomic uint32_t *w);
uint64_t cb_now_ns(void);

/* A thread waiting for the communication thread: it sleeps on done.  The
 * communication thread writes into it, so it must be in private memory:
 * take one with cb_waiter_new (per-thread pool), never on a stack that may
 * be shared (the fault path's own stack excepted: it is private). */
typedef struct cb_waiter {
    struct cb_waiter *next;   /* for the queues of lock.c */
    _Alignas(8) uint8_t op[96]; /* cb_call's message, for the comm thread */
    _Atomic uint32_t done;
    int64_t value, value2, value3, value4; /* a reply's scalars (its a, b, c and d) */
    void *data;          /* reply payload, malloc'd by the comm thread */
    size_t len;
    void *dst;           /* where a page reply is copied (fault path) */
    uint32_t dst_pages;  /* ... and how many pages fit there (0: one), per run of */
    uint32_t dst_runs;   /* ... this many runs (0: one; on the reply: how many came) */
    size_t dst_stride;   /* ... this many bytes apart */
    bool dst_fresh;      /* ... never mapped here (a first fetch): written into the store's file */
    _Atomic uint32_t pending; /* outstanding acks (diffs of a release) */
    uint64_t who;        /* lock.c: the thread taking the lock */
    bool try_only;       /* lock.c: a trylock, answered granted or busy */
    pid_t wake_tid;      /* its waiter takes its wakes as signal cb_rsig (cb_waiter_wait_held) */
    bool closing;        /* hlrc.c: the acks of an interval closing (cb_closing_acked) */
} cb_waiter_t;
cb_waiter_t *cb_waiter_new(void); /* zeroed, from this thread's private pool */
void cb_waiter_free(cb_waiter_t *w);
void cb_waiter_wait(cb_waiter_t *w);
void cb_waiter_wake(cb_waiter_t *w);
void cb_waiter_wait_pending(cb_waiter_t *w);
bool cb_waiter_wait_until(cb_waiter_t *w, uint64_t deadline_ns);

/* ---- application threads (thread.c) ----
 * Per-thread state, in initial-exec TLS (no allocation, no lock). */
#define CB_TLS __attribute__((tls_model("initial-exec")))
typedef struct {
    pthread_t sys;                 /* glibc's thread running it */
    _Atomic pid_t ktid;            /* its kernel thread id, once it runs (stack.c) */
    void *stack;                   /* its stack in the GAS, and its size (then ktid) */
    size_t stack_size;
    _Atomic bool detached;
    _Atomic int cancel;            /* a cancellation was asked */
    bool cancel_off;               /* the thread disabled cancellation (its own state), or
                                    * one acts already (it unwinds: cb_cancel_act) */
    _Atomic bool ending;           /* its function returned: glibc's handle is soon another's */
    cb_waiter_t *_Atomic waiting;  /* its cancellable runtime wait, if any */
} cb_thr_t;
extern __thread uint64_t cb_tid CB_TLS;   /* this thread's cluster id */
extern __thread bool cb_app_thread CB_TLS; /* an application thread (else the runtime's) */
extern __thread cb_thr_t *cb_thr CB_TLS;
/* inside a release or an acquire (hlrc.c): the shim's heap then takes no
 * block freed elsewhere, whose acquire would wait for this one (a libc
 * function the runtime calls may malloc through the shim) */
extern __thread int cb_syncing CB_TLS;
extern __thread uint32_t cb_acquires CB_TLS; /* hlrc.c: this thread's acquires, pulls' aside */
/* Wait for w, a deadline (false) or a cancellation of this thread (false,
 * with cb_thr->cancel set); cancellable only in application threads. */
bool cb_waiter_wait_cancellable(cb_waiter_t *w, uint64_t deadline_ns);
/* Wait for w (1), until a handler ran on this thread (0; with restart,
 * one without SA_RESTART) or its cancellation is asked and enabled (-1;
 * application threads) */
int cb_waiter_wait_intr(cb_waiter_t *w, bool restart);
/* Wait for w (1), the deadline (0; UINT64_MAX: none), this application
 * thread's cancellation asked and enabled (-1) or a handler that ran on
 * this thread (-2): with a deadline whatever its SA_RESTART, without one
 * a handler without SA_RESTART (the kernel's futex wait, glibc's sem_wait) */
int cb_waiter_wait_intr_until(cb_waiter_t *w, uint64_t deadline_ns);
/* a cancellation asked: wake w's waiter, whose wait may have just begun */
void cb_waiter_poke(cb_waiter_t *w);
/* Wait for w (1), a signal of take taken (-2, its siginfo in *si) or,
 * cancellable, this application thread's cancellation (-1), take's
 * signals blocked and cb_rsig among them, w->wake_tid set before w was
 * posted (rsys.c) */
int cb_waiter_wait_held(cb_waiter_t *w, const sigset_t *take, siginfo_t *si, bool cancellable);

/* ---- messages (comm.c) ---- */
enum cb_msg_type {
    M_HELLO = 1, M_TABLE, M_HEARTBEAT, M_SHUTDOWN, M_BYE,
    M_DIR_LOOKUP, M_DIR_REPLY, M_ALLOC, M_ALLOC_REPLY, M_FREE,
    M_FETCH, M_PAGE, M_DIFF, M_DIFF_ACK,
    M_LOCK_REQ, M_LOCK_FWD, M_LOCK_GRANT,
    M_BAR_ARRIVE, M_BAR_RELEASE,
    M_COND_WAIT, M_COND_WAKE, M_COND_SIGNAL, M_COND_CANCEL, M_REPLY,
    M_SPAWN, M_THREAD_EXIT, M_JOIN, M_JOIN_REPLY,
    M_MOVE, M_MOVE_PAGE, M_MOVE_DONE,
    M_LOCK_BUSY, M_PLACE, M_THREAD_GONE, M_THREADS_IDLE, M_DETACH, M_CANCEL, M_KEY,
    M_HEAP_FREE, M_TABLE_ACK, M_ATTACH_FAILED,
    M_NODE_IDLE, M_LEAVE, M_LEFT, M_NODE_GONE, M_GONE_FLUSH, M_KEYS,
    M_CLAIM, M_CLAIM_REPLY,
    M_GC_ASK, M_GC_QUERY, M_GC_VC, M_GC_BASE,
    M_REVOKE, M_REVOKE_ACK,
    M_THREAD_OP, M_PROC, M_RSYS, M_SIGNAL,
    M_PULL, M_PULL_REPLY,
    M_LOCK_STRAY, M_WAIT,
    M_TYPES
};
/* M_FETCH b: how the request travels (FETCH_HOW), and FETCH_NO_DATA: the
 * requester reads the pages itself (rma.c), the home only shares them */
enum { FETCH_DIRECT = 0, FETCH_VIA_DIR = 1, FETCH_FROM_DIR = 2, FETCH_HOW = 3, FETCH_NO_DATA = 4 };
/* M_FETCH c: how many pages from a on the requester can take (0: one); the
 * home answers with the run of them it is home of (M_PAGE's payload) */
/* M_FETCH d: a strided fetch, runs | stride << 16: as many runs of c pages
 * at a + i * stride, i < runs, as the home has (whole runs, in order) */
/* M_PAGE a: what the answer is (b: the home; c: with PAGE_YOURS how many
 * pages, with PAGE_DATA the home's move epoch; d: with PAGE_DATA how many
 * runs the payload holds, each of the same length, 0 meaning one, | how
 * many pages from a are the home's (PAGE_SHARED too) << 32; with
 * PAGE_YOURS the first-touch allocation the requester may claim pages of
 * itself, first | end << 32, or 0).
 * PAGE_SHARED answers FETCH_NO_DATA: c = the home's move epoch (low 32
 * bits) | pages per run << 32 | runs << 48, no payload; d's bits 16-31:
 * how many pages after the run the home shared ahead (hlrc.c) */
enum { PAGE_DATA = 0, PAGE_MOVED = 1, PAGE_YOURS = 2, PAGE_UNALLOCATED = 3, PAGE_SHARED = 4 };
/* cb.served: a page shared ahead (PAGE_SHARED's d), not read here since */
#define CB_SERVED_AHEAD (1ull << 63)
typedef struct {
    uint32_t type;
    int32_t src;
    uint64_t waiter; /* the sender's cb_waiter_t *, echoed in replies */
    uint64_t a, b, c, d; /* type-specific scalars */
} cb_msg_t;          /* followed by a type-specific payload */

/* Send hdr+payload to node dst (dst may be self).  Callable from any
 * thread; never blocks on the network.  With own=true the payload is a
 * malloc'd buffer whose ownership passes to the runtime. */
void cb_send(int dst, const cb_msg_t *hdr, const void *payload, size_t len, bool own);
/* cb_send of a message nobody waits on until cb_comm_kick: it does not wake
 * a sleeping comm thread, which takes it at its next wake (any message, a
 * kick, or its periodic check at most 250 ms on).  On this VM a wake costs
 * the sender two context switches. */
void cb_send_quiet(int dst, const cb_msg_t *hdr);
void cb_comm_kick(void); /* wake the comm thread if it sleeps */
/* Send and sleep until the reply wakes w. */
void cb_call(int dst, cb_msg_t *hdr, const void *payload, size_t len, cb_waiter_t *w);
/* cb_call without the wait: the reply wakes w later */
void cb_call_post(int dst, cb_msg_t *hdr, const void *payload, size_t len, cb_waiter_t *w);
/* cb_call with a waiter of this thread's pool, for a reply of scalars:
 * returns its a (and its b in *b if not NULL). */
int64_t cb_rpc(int dst, cb_msg_t *hdr, int64_t *b);
/* Asks each node of mask (m, with the payload p) at once, then awaits
 * each answer, which answer() takes (a node that leaves meanwhile is
 * not waited for).  Returns the nodes that answered. */
typedef void (*cb_answer_fn)(int k, const cb_waiter_t *w, void *arg);
uint64_t cb_ask_all(uint64_t mask, const cb_msg_t *m, const void *p, size_t len,
                    cb_answer_fn answer, void *arg);
/* Reply to a request: echoes req->waiter. */
void cb_reply(const cb_msg_t *req, cb_msg_t *hdr, const void *payload, size_t len, bool own);
/* Forward a message, keeping its source and waiter (replies go to them). */
void cb_forward(int dst, const cb_msg_t *m, const void *payload, size_t len);
/* comm-thread only: retry the message on a later turn of the loop. */
void cb_defer(const cb_msg_t *m, const void *payload, size_t len);
/* comm-thread only: the payload of a deferred message (type, a), or NULL */
void *cb_deferred_payload(uint32_t type, uint64_t a, size_t *len);
void cb_comm_start(void); /* transport up, thread not yet */
void cb_comm_run(void);
void cb_comm_stop(void);
/* comm-thread only: deliver a message that arrived (or was sent to self). */
void cb_dispatch(const cb_msg_t *m, const void *payload, size_t len);

/* transport.c: UCX, used by the comm thread only */
int cb_xport_init(void);            /* context + worker; returns event fd */
/* before init, UCX_TLS unset: all but shared memory, peer failures
 * reported or not (as on every node) */
void cb_xport_leave_out_shm(bool peer_errors);
bool cb_xport_peer_errors(void);  /* asked for peer failure reports */
void cb_xport_fini(void);
size_t cb_xport_address(void **addr); /* this worker's address */
void cb_xport_add_peer(int node, const void *addr, size_t len);
const void *cb_xport_peer_address(int node, size_t *len);
int cb_xport_send(int dst, void *buf, size_t len); /* takes buf (malloc'd) */
bool cb_xport_progress(void);
bool cb_xport_arm(void);  /* true: safe to sleep on the event fd */
void cb_xport_flush(void);
/* rma.c: remote reads, where the transport can read a home's memory in
 * place.  A home's keys (malloc'd, NULL if it cannot be read; it sends them
 * with the first page a node fetches from it) are taken by that node's comm
 * thread; then any thread may read n pages from the home's protocol view
 * into dst and, after them, the home's move epoch (-1: not possible, ask
 * the home). */
void cb_rma_init(void);
void cb_rma_fini(void);
void *cb_rma_keys(size_t *len);
void cb_rma_peer(int node, const void *keys, size_t len);
bool cb_rma_ready(int node);
/* Reads from node, into the protocol view, runs of pages it served this
 * node before (run k: n[k] pages from first[k]; rec: their cb.served
 * record), then node's move epoch: true if all were read and the epoch
 * after the data is still rec's (no page moved in or out of it since).
 * fresh: the pages were never mapped here (a first fetch), so not in the
 * protocol view's mapping either. */
bool cb_rma_read_served(int node, uint32_t count, const uint64_t *first, const uint32_t *n,
                        uint64_t rec, bool fresh);

/* ---- write notices and intervals (hlrc.c) ---- */
/* An interval's notices: npages page numbers, then nmarks marks of 3 words
 * each (page, checksum low, high): a home page read in place in the
 * interval and found unchanged at its end (hlrc.c), with its checksum */
typedef struct { uint32_t npages, nmarks; uint32_t *pages; } cb_interval_t;
typedef struct { cb_interval_t *iv; uint32_t off, n, cap; } cb_wnlog_t; /* iv[j - off]: interval j + 1, j in [off, n) */
typedef uint32_t cb_vc_t[CB_MAX_NODES];

/* bit p of a bitmap shared by threads */
static inline bool cb_bit(_Atomic uint64_t *b, uint64_t p)
{
    return atomic_load(&b[p / 64]) >> (p % 64) & 1;
}
static inline void cb_bit_set(_Atomic uint64_t *b, uint64_t p)
{
    if (!cb_bit(b, p))
        atomic_fetch_or(&b[p / 64], 1ull << (p % 64));
}
static inline void cb_bit_clear(_Atomic uint64_t *b, uint64_t p)
{
    atomic_fetch_and(&b[p / 64], ~(1ull << (p % 64)));
}
/* clears bit p, and tells whether it was set */
static inline bool cb_bit_take(_Atomic uint64_t *b, uint64_t p)
{
    return cb_bit(b, p) && atomic_fetch_and(&b[p / 64], ~(1ull << (p % 64))) >> (p % 64) & 1;
}

void cb_twin_take(uint64_t p);         /* copy p's twin := its protocol view */
void cb_sum_take(uint64_t p);          /* home page p's checksum (its twin) := now */
uint8_t *cb_twin(uint64_t p);          /* page p's twin, its memory mapped (gas.c) */
void cb_twin_drop(uint64_t p);         /* p (owned) needs its twin no more */
void cb_release(void);                 /* flush this node's writes to homes */
void cb_release_snapshot(void);        /* the same, while the program's threads write on */
/* cb_release that does not wait for its diffs (a lock's: lock.c); its
 * writes are this node's after the interval it returns is closed */
uint64_t cb_release_lazy(void);
bool cb_closed(uint64_t ticket);      /* every interval up to it closed (noticed) */
void cb_closed_wait_all(void);        /* until every interval closing now is (not the comm thread) */
void cb_closing_acked(cb_waiter_t *w, uint32_t n); /* comm thread: n of w's diffs applied */
void cb_lock_closed(void);            /* lock.c: intervals closed, grants waiting may go */
/* this node wrote since its last release, which began age_ns ago or more */
bool cb_release_due(uint64_t age_ns);
/* this node's threads wrote other pages than p since its last release
 * (as far as a cheap look tells: hlrc.c) */
bool cb_release_due_beside(uint64_t p);
/* Tell node (a message of type: M_FREE, M_HEAP_FREE) that the shared block
 * at addr is free, after this node's next release, with its write notices
 * (which the receiver acquires before the block is reused); now: release
 * at once.  The receiver decodes the message: how many addresses, the
 * sender's vc in vc_out (its notices merged), and address i. */
void cb_send_freed(int node, uint32_t type, uint64_t addr, bool now);
uint64_t cb_freed_decode(const void *p, size_t len, uint32_t *vc_out);
uint64_t cb_freed_addr(const void *p, uint64_t i);
void cb_acquire(const uint32_t *vc);   /* invalidate up to vc (log must hold it) */
/* ... for a pull (propagate.c): a release first if a copy written here goes */
void cb_acquire_pull(const uint32_t *vc);
/* Encode the notices in (from, my vc] into a malloc'd buffer; vc_out (if
 * not NULL) gets the vc encoded, which another thread may advance right after. */
void *cb_notices_encode(const uint32_t *from, size_t *len, uint32_t *vc_out);
/* Merge encoded notices into the log; returns the sender's vc in vc_out. */
void cb_notices_merge(const void *buf, size_t len, uint32_t *vc_out);
void cb_vc_max(uint32_t *dst, const uint32_t *vc); /* dst := the later of each entry */
void cb_known_update(int node, const uint32_t *vc); /* node knows at least vc */
void cb_known_get(int node, uint32_t *vc);
/* The notices node is not known to have, encoded (a malloc'd buffer of
 * *len bytes); after a release, node's acquire of them (cb_acquire_from,
 * with their sender) shows it what was written before the release */
void *cb_notices_for(int node, size_t *len);
void cb_acquire_from(int node, const void *notices, size_t len);
void cb_vc_get(uint32_t *vc);
/* collecting the notice logs (hlrc.c): each comm thread (each turn) asks
 * for a round when its log grew by CABLES_LOG_GC notices (the master starts
 * one); a node that left is not waited for; notices kept in this node's
 * log now */
void cb_gc_tick(void);
void cb_gc_node_gone(int node);
uint64_t cb_notices_kept(uint64_t *peak); /* and the most at once */
void cb_on_gc_ask(void);
void cb_on_gc_query(const cb_msg_t *m, const void *p, size_t len);
void cb_on_gc_vc(const cb_msg_t *m, const void *p, size_t len);
void cb_on_gc_base(const cb_msg_t *m, const void *p, size_t len);
/* comm-thread handlers */
void cb_on_diff(const cb_msg_t *m, const void *p, size_t len);
void cb_on_fetch(const cb_msg_t *m);

/* ---- writes reach pollers (propagate.c) ---- */
/* Every other node releases (what it wrote, if its last release began
 * age_ns ago or more; node must whatever its age, if it wrote other pages
 * than page, -1: none) and this node acquires what they released; true if
 * that was news (intervals this node did not know) */
bool cb_pull(uint64_t age_ns, int must, uint64_t page);
/* A fetch of a copy a pull's acquire dropped is followed by a pull
 * (cb_after_fetch, from the fault path: p the faulting page) */
void cb_after_fetch(uint64_t p);
void cb_propagate_start(void); /* its threads, once the node joined */
void cb_propagate_stop(void);
void cb_on_pull(const cb_msg_t *m, const void *p, size_t len);
void cb_on_pull_reply(const cb_msg_t *m, const void *p, size_t len);

/* ---- global address space (gas.c) ---- */
void cb_gas_init(void);
void cb_gas_reserve(uint64_t npages); /* master, at start: pages [0, npages) homed on it */
void cb_statics_init(void);
int cb_heap_owner(uintptr_t a); /* node of the heap arena holding a, or -1 */
void cb_dir_add_heaps(void);    /* master: arena k homed on node k */
/* Lock-free page ownership: take BUSY (sleeping while another has it). */
uint32_t cb_page_own(uint64_t p);
bool cb_page_try_own(uint64_t p, uint32_t *state); /* comm thread: never waits */
void cb_page_unown(uint64_t p, uint32_t state);
void cb_page_protect(uint64_t p, uint64_t n, int prot); /* dies on map-count limit */
/* A list of pages gathered through an interval (written pages, homes
 * gained), taken whole by the release (which holds release_mu), two lists
 * swapped so that pushes go on meanwhile.  Each list holds npages. */
typedef struct { cb_mutex_t mu; uint32_t *list[2]; uint32_t n, cur; } cb_plist_t;
void cb_plist_push(cb_plist_t *l, uint64_t p);
uint32_t cb_plist_take(cb_plist_t *l, uint32_t **list);
void cb_populate(void *addr, size_t len, bool write); /* map now, not page by page */
void cb_store_write(uint64_t p, const void *src, size_t len); /* into the store's file */
void *cb_reserve(size_t len); /* private, zero, allocated as touched */

/* store.c: pages allocated ahead of a sweep, on a spare CPU */
void cb_store_init(void);
/* a request for pages [first, end), which may be dropped; now: wake the
 * store's thread at once, else when BATCH requests wait */
void cb_store_ahead(uint64_t first, uint64_t end, bool now);
bool cb_store_allocated(uint64_t p);               /* by the store's thread */
/* many pages' protection changes, one mprotect per run (gas.c); the
 * pages stay owned until the run is ended */
typedef struct { uint64_t first, n; int prot; } cb_prot_run_t;
void cb_prot_run(cb_prot_run_t *r, uint64_t p, int prot); /* add p, or end the run and start one */
void cb_prot_run_end(cb_prot_run_t *r);
/* comm-thread handlers for allocation */
void cb_on_alloc(const cb_msg_t *m);
void cb_on_free(const cb_msg_t *m, const void *p, size_t len);
/* Shared memory for malloc (pthread_shim): like cables_alloc, but it may be
 * a range freed before, neither zeroed nor placed anew (its pages keep
 * their homes); what its last owner wrote is acquired first. */
void *cb_alloc_reusable(size_t size, bool zero, bool quiet); /* zero: as cables_alloc;
                                                              * quiet: no message if it
                                                              * does not fit */

/* directory.c: home of each page; the master keeps the directory */

void cb_on_dir_lookup(const cb_msg_t *m);
void cb_on_fetch_dir(const cb_msg_t *m);
void cb_on_move(const cb_msg_t *m);
void cb_on_move_page(const cb_msg_t *m, const void *p, size_t len);
void cb_on_move_done(const cb_msg_t *m);
/* master: record allocation range with its policy */
void cb_dir_add_alloc(uint64_t first, uint64_t npages, cables_policy_t pol, int node, bool reused);
/* master: forget the allocation that begins at page p; false if none does */
bool cb_dir_remove_alloc(uint64_t p, uint64_t *first, uint64_t *npages);
void cb_dir_homed_runs(uint64_t first, uint64_t npages, uint64_t **runs, size_t *n);
void cb_claims_revoke(uint64_t first, uint64_t npages); /* this node's rights to claim them */
void cb_on_revoke(const cb_msg_t *m);     /* M_REVOKE: the same, then M_REVOKE_ACK */
void cb_on_revoke_ack(const cb_msg_t *m); /* master */
/* Local claims (first touch without asking the directory first).  Fault
 * path: of p and the got - 1 pages after it (owned, home unknown, never
 * accessed here), how many this node homes now, telling the directory
 * after (0: ask it); cb_claims_learn: the pages [first, end) of a
 * first-touch allocation may be claimed so (a PAGE_YOURS reply's d). */
uint32_t cb_claim(uint64_t p, uint32_t got);
void cb_claims_learn(uint64_t range);
/* Acquire: the noticed pages are never claimed here (written elsewhere
 * before this acquire: their data is not zero), and the claims in flight
 * are answered (cb_claims_wait) before the notices are applied; a release
 * waits for them too (a claim refused makes the page a copy, its writes
 * here a diff for the next release). */
void cb_claims_forbid(const uint32_t *pages, size_t n);
void cb_claims_wait(void);
/* pages this node became home of: noticed at its next release, so that a
 * node that acquires after it never claims them (their data is not zero) */
void cb_homed_push(uint64_t p);
bool cb_claim_pending(uint64_t p);
void cb_on_claim(const cb_msg_t *m);
void cb_on_claim_reply(const cb_msg_t *m, const void *p, size_t len);

/* stack.c: run fn(arg) on a stack in the GAS of size bytes (0: the
 * default), until fn returns, calls pthread_exit (*exited) or is cancelled */
void *cb_run_on_gas_stack(void *(*fn)(void *), void *arg, size_t size, bool *exited);
/* this thread's alternate signal stack is the runtime's (private to its
 * node: the fault path's), set up by cb_run_on_gas_stack */
extern __thread bool cb_alt_ours CB_TLS;
void cb_thread_exit(void *value) __attribute__((noreturn)); /* pthread_exit of an app thread */
extern void (*cb_thread_end_hook)(void); /* runs on the ending thread's GAS stack */

/* fault.c */
void cb_fault_init(void);
/* The program's signals beside the fault path (fault.c): its SIGSEGV
 * handler is kept there, called for the faults that are not the
 * runtime's; SIGSEGV stays unblocked in every thread and handler (a fault
 * while it is blocked kills the process), the program's masks and its
 * handlers' sa_mask only saying it is (cb_segv_blocked: this thread's).
 * cb_sigaction is sigaction's contract; cb_sigmask pthread_sigmask's. */
int cb_sigaction(int sig, const struct sigaction *act, struct sigaction *old);
/* a disposition that runs a handler (sa_sigaction shares sa_handler's
 * word: SIG_DFL and SIG_IGN are no handler whatever the flags) */
static inline bool cb_sig_is_handler(const struct sigaction *a)
{
    return a->sa_handler != SIG_DFL && a->sa_handler != SIG_IGN;
}
int cb_sigmask(int how, const sigset_t *set, sigset_t *old);
extern __thread bool cb_segv_blocked CB_TLS;
/* the program's SIGSEGV handler is running on this thread (left by a jump:
 * no longer) */
bool cb_in_segv_handler(void);
/* The program's handled signals held off while the runtime works on this
 * thread's behalf (fault.c): true if held; then let in again, true if one
 * came meanwhile (its handler runs now) */
bool cb_app_signals_hold(sigset_t *was);
bool cb_app_signals_let(const sigset_t *was);
/* held as by cb_app_signals_hold, and signal also too; *take: the held
 * signals the program's mask lets in, and also */
bool cb_app_signals_hold_taking(int also, sigset_t *was, sigset_t *take);
/* held off, as around a cb_mutex (sys.c): *added, those the mask let in
 * (false: none), for cb_app_signals_unblock */
bool cb_app_signals_block(sigset_t *added);
void cb_app_signals_unblock(const sigset_t *added);
/* psig.c: signals sent to the process, delivered on the node that has a
 * thread taking them.  An application thread's mask changed (how, set,
 * the one before); a temporary mask in force, or signals waited for (the
 * signals taken before, for cb_psig_restore); a program's signalfd's; the
 * signals the master keeps pending for the process */
void cb_psig_mask(int how, const sigset_t *set, const sigset_t *old);
uint64_t cb_psig_during(const sigset_t *mask);
uint64_t cb_psig_waiting(const sigset_t *set);
void cb_psig_restore(uint64_t was);
void cb_psig_signalfd(const sigset_t *mask);
uint64_t cb_psig_parked(void);
void cb_psig_thread_start(void); /* an application thread's, on its node */
void cb_psig_thread_end(void);
void cb_psig_serving(void);      /* a node's main thread, which serves, takes none */
int cb_psig_init(void);          /* the comm thread's signalfd to watch, or -1 */
bool cb_psig_poked(void);        /* the comm thread has work before it sleeps */
void cb_psig_tick(bool readable);
void cb_psig_replay(int k);
void cb_psig_announce(void);    /* the master: where the launcher sends it signals */
bool cb_launcher_var(const char *e); /* start.c: "NAME=value" is one of the launcher's */
void cb_launcher_env_drop(void);     /* start.c: they leave environ */
void cb_stdout_as_launcher(void); /* stdout.c: the nodes' stdout and stderr are cables-run's */
int cb_mpirun_stderr(void);       /* mpirun's stderr, which cables-run reads (2 or a copy) */
const char *cb_boot_id(void);   /* node.c: this machine's boot id ("": unknown) */
/* this node process's id (getpid gives an application thread the
 * master's: pthread_shim/src/process.c) */
static inline pid_t cb_pid(void) { return (pid_t)syscall(SYS_getpid); }
void cb_on_signal(const cb_msg_t *m, const void *p, size_t len);
void cb_fault_after_fork(void); /* the child's: its lock free */
int cb_fault(uint64_t p, bool write); /* 0, or -1 if not a shared page */

/* lock.c: kinds numbered as glibc's mutex kinds */
enum { CB_LK_NORMAL = 0, CB_LK_RECURSIVE = 1, CB_LK_ERRORCHECK = 2 };
/* Take lock key for thread who.  deadline (CLOCK_MONOTONIC ns): 0 try
 * once, UINT64_MAX wait.  0, EBUSY, ETIMEDOUT, EDEADLK or EAGAIN. */
int cb_lock_take(uint64_t key, uint64_t who, int kind, uint64_t deadline);
int cb_lock_give(uint64_t key, uint64_t who, int kind); /* 0 or EPERM */
uint32_t cb_lock_depth(uint64_t key, uint32_t depth); /* holder: set, return old */
bool cb_lock_owned(uint64_t key, uint64_t who); /* held here by who */
/* cond.c: wait on condition ckey releasing lock lkey; 0, ETIMEDOUT, or
 * ECANCELED (the thread was cancelled; the lock is held again) */
int cb_cond_wait(uint64_t ckey, uint64_t lkey, int kind, uint64_t deadline);
int cb_cond_wait_held(uint64_t ckey, uint64_t lkey, int kind, uint64_t deadline, bool held);
/* cb_cond_wait_held (held), which a handler that ran on this thread during
 * the wait ends (as cb_waiter_wait_intr_until's): EINTR, out of the queue
 * before a wake (a wake that came first is taken: 0), as glibc's sem_wait
 * and sem_timedwait (tests/posix/sem_intr.c) */
int cb_cond_wait_intr(uint64_t ckey, uint64_t lkey, int kind, uint64_t deadline);
int cb_cond_wake(uint64_t ckey, bool all); /* how many were woken */
/* barrier.c: 1 for one thread of each round (PTHREAD_BARRIER_SERIAL_THREAD) */
int cb_barrier_wait(cables_barrier_t *b);
/* thread.c */
int cb_thread_create(uint64_t *t, int node, void *(*fn)(void *), void *arg, size_t stack,
                     bool detached);
int cb_thread_detach(uint64_t t);
int cb_thread_cancel(uint64_t t);
/* A runtime wait of this thread stopped for its cancellation: glibc acts on
 * it now (the thread unwinds), or one acts already (a cleanup handler's or a
 * destructor's wait in the unwinding thread) or glibc's state is off.
 * Either way the thread's runtime waits stop for it no longer: a cleanup
 * handler that joins a worker waits for it, as natively.  The caller retries
 * what it was doing. */
void cb_cancel_act(void);
void cb_thread_main_start(void);  /* the master's main thread becomes thread 0 */
void cb_threads_wait_all(void);   /* master: until every other thread ended */
/* the master's table of pthread keys: create (arg: destructor) returns the
 * key, delete returns 0, dtor returns the destructor; -1 if no such key */
enum { CB_KEY_CREATE, CB_KEY_DELETE, CB_KEY_DTOR };
#define CB_KEYS_MAX (1u << 20)
int64_t cb_key(int op, uint64_t arg);
void cb_on_key(const cb_msg_t *m);
/* the shim's heap: a block of ours freed elsewhere, with its node's notices */
void cb_on_heap_free(const cb_msg_t *m, const void *p, size_t len);
/* pthread_shim/src/mmap.c: the program ends (master): its shared writable
 * file mappings are written back */
void cb_maps_flush(void);
/* pthread_shim/src/remote.c: exit() of an application thread of another
 * node ends the process at the master (returns only if it cannot ask) */
void cb_exit_at_master(int status);
/* numa.c: a CPU set of the cluster's CPUs, folded onto this node's */
void cb_cpus_fold(void *set, size_t size);

/* lock.c, barrier.c, cond.c, thread.c: comm-thread handlers */
void cb_on_lock_busy(const cb_msg_t *m);
void cb_on_lock_stray(const cb_msg_t *m, const void *p, size_t len);
void cb_on_place(const cb_msg_t *m);
/* master: node k is attached (ok) or failed: answer the placements on it */
void cb_place_attached(int k, bool ok);
int cb_place_load(int k);      /* master: threads running or placed on node k */
int cb_thread_count(void);     /* comm thread: this node's thread table entries */
/* lock.c: a thread here waits for a lock's token from afar */
bool cb_lock_waiting(void);
void cb_lock_recall(int k);    /* manager: the locks whose queue ends at k come back */
void cb_on_thread_gone(const cb_msg_t *m);
void cb_on_threads_idle(const cb_msg_t *m);
void cb_on_detach(const cb_msg_t *m);
void cb_on_cancel(const cb_msg_t *m);
void cb_on_thread_op(const cb_msg_t *m, const void *p, size_t len);

/* ---- remote system calls (rsys.c) ----
 * A call made at the master for an application thread of another node:
 * op is a system call number, or an operation of the shim's (op >=
 * CB_RSYS_LIB, made by cb_rsys_lib).  arg[buf[i].arg] points to buf[i].len
 * bytes of the caller's: RSYS_IN ones are sent, RSYS_OUT ones written back
 * (all of them; RSYS_UPTO_RES: as many as the result times the unit in
 * the flags' upper 16 bits (0: bytes), if not -1; RSYS_STRING: up to a
 * NUL; RSYS_UPTO_LEN: as many as the socklen_t of buffer i + 1 says after
 * the call, an address and its length), and buf[i].len is then what came
 * back. */
enum { RSYS_IN = 1, RSYS_OUT = 2, RSYS_UPTO_RES = 4, RSYS_STRING = 8, RSYS_UPTO_LEN = 16 };
#define RSYS_UNIT(n) ((uint32_t)(n) << 16)
#define CB_RSYS_BUFS 4
#define CB_RSYS_LIB 0x10000
#define CB_RSYS_STDIO 2
typedef struct {
    int64_t op;
    int64_t arg[6];
    uint32_t nbuf;
    uint32_t waits; /* an operation of the shim's that may wait (a read of a stream): interruptible;
                     * CB_RSYS_STDIO: a stream's read or write, which goes on after SA_RESTART */
    struct { uint32_t arg, flags; uint64_t len; } buf[CB_RSYS_BUFS];
} cb_rsys_t;
/* make the call at the master: its result, or -1 with errno set.  An
 * application thread's wait ends early when a handler without SA_RESTART
 * runs on it or its cancellation is asked: the call at the master is then
 * interrupted (EINTR, unless it ended first), and a cancellation acted on */
long cb_rsys(cb_rsys_t *r);
/* the real-time signal the runtime takes from libc (__libc_allocate_rtsig,
 * so past the program's SIGRTMAX) to interrupt a proxy's call; the
 * program's sigaction of it changes nothing */
extern int cb_rsig;
void cb_rsys_init(void);
void cb_rsys_after_fork(void);
void cb_rsys_tick(void); /* master, comm thread: interrupts not yet met sent again */
/* the shim's operations, made at the master (set by the shim) */
extern long (*cb_rsys_lib)(int64_t op, int64_t arg[6], int *err);
/* hlrc.c: called by an application thread's release before its writes
 * go (pthread_shim: what its node's stdout holds goes out) */
extern void (*cb_release_hook)(void);
void cb_on_rsys(const cb_msg_t *m, const void *p, size_t len);
/* a signal a held wait took: pending again, for its handler (its siginfo
 * kept); and whether sig's handler has SA_RESTART (an interrupted call
 * goes on) */
void cb_sig_pend_again(const siginfo_t *si);
bool cb_sig_restarts(int sig);
/* A wait (wait4's or waitid's) made at another node, where the children of
 * its own fork are, without waiting (WNOHANG): op SYS_wait4 (b its pid) or
 * SYS_waitid (b its idtype, c its id), made there by the communication
 * thread (spawn.c's wait_spread).  Its result, or -1 with errno (ECHILD for
 * a node gone); what the call stored in *out. */
typedef struct {
    int32_t status;
    struct rusage ru;
    siginfo_t si;
} cb_wait_out_t;
long cb_wait_at(int node, int64_t op, int64_t b, int64_t c, int options, cb_wait_out_t *out);
void cb_on_wait(const cb_msg_t *m);
/* What a process has once, so every node process alike (proc.c): signal
 * dispositions, the working directory, the file mode mask, the environment
 * and the locale.  A change is made at the master (cb_proc_change, called
 * there: the shim sends another node's there), then on every other node,
 * one at a time, before it returns.  The master keeps the current ones and
 * gives them to each node attached later (replay). */
enum { CB_PROC_CHDIR,    /* s1: the path */
       CB_PROC_FCHDIR,   /* arg: the master's descriptor */
       CB_PROC_UMASK,    /* arg: the mask; *old: the one before */
       CB_PROC_SETENV,   /* s1 = s2, arg: overwrite */
       CB_PROC_UNSETENV, /* s1 */
       CB_PROC_PUTENV,   /* s1: "name=value" (the program's string, kept) or "name" */
       CB_PROC_CLEARENV,
       CB_PROC_SETLOCALE, /* arg: the category, s1: the name ("": from the environment) */
       CB_PROC_SIGACTION, /* arg: the signal, s1: its struct sigaction */
       CB_PROC_STDIO,     /* arg: bit 0 stdout, bit 1 stderr, now the master's (cb.std_master) */
       CB_PROC_DLOPEN,    /* s1: the file, arg: the flags; *old: the handle; s2: out, why it
                           * failed (CB_DLERROR_LEN bytes) (libs.c) */
       CB_PROC_DLCLOSE    /* arg: the handle */ };
/* 0 or an error number; ENOTSUP on a node other than the master */
int cb_proc_change(int op, int64_t arg, const char *s1, const char *s2, int64_t *old);
void cb_proc_init(void);
void cb_proc_replay(int node);
/* The process's use of its machines (proc.c): what getrusage gives for
 * RUSAGE_SELF and RUSAGE_CHILDREN and CLOCK_PROCESS_CPUTIME_ID, of this
 * node process (cb_usage_local), or of every node process summed, those
 * that have left included (cb_proc_usage; each node up is asked) */
typedef struct {
    struct rusage self, children;
    uint64_t cpu_ns;
} cb_usage_t;
void cb_usage_local(cb_usage_t *u);
void cb_usage_add(cb_usage_t *a, const cb_usage_t *b);
void cb_proc_usage(cb_usage_t *sum);
void cb_proc_usage_gone(int node, const void *u, size_t len); /* master: M_LEFT's payload */
void cb_proc_usage_final(cb_usage_t *u); /* leaving: this node's use, answered from then on */
void cb_on_proc(const cb_msg_t *m, const void *p, size_t len);
/* The libraries loaded with dlopen, at the same addresses on every node
 * (libs.c): a window reserved at the start; one load or close at a time
 * (cb_libs_lock, held by the master from its load to the other nodes'
 * answers; the holder's nested loads, of constructors, are parts of it);
 * at the master a load placed (0, or an error number and why in err) and
 * the payload for the other nodes, then kept for nodes attached later, and
 * a close; on another node those made by its loader thread, its handle for
 * the master's, and a wait for the loads before a thread starts */
void cb_libs_init(void);
void cb_libs_lock(void);
void cb_libs_unlock(void);
bool cb_libs_in_load(void);
int cb_libs_open(const char *file, int flags, void **handle, void **out, size_t *outlen, char *err,
                 size_t errlen);
size_t cb_libs_opened(int kind, const void *payload, size_t len);
void cb_libs_forget(size_t kept);
int cb_libs_close(int kind, void *handle, bool keep);
void cb_libs_request(const cb_msg_t *m, const void *p, size_t len, bool open);
void cb_libs_wait(void);
void cb_libs_replay(int k);
void *cb_libs_local(void *master);
#define CB_DLERROR_LEN 512 /* the text of a failed load */
/* Operations on a thread by its id, made on its node on its kernel thread
 * (thread.c; the shim's pthread_kill, pthread_setname_np...): each returns
 * 0 or an error number.  out (outlen bytes) receives what a TOP_GET* gives
 * back; c and d are the operation's scalars (below); b2 the second scalar
 * of the answer. */
enum {
    TOP_KILL,        /* c = signal (0: is it there) */
    TOP_SIGQUEUE,    /* c = signal, d = the value */
    TOP_SETNAME,     /* in: the name, NUL included (16 bytes at most) */
    TOP_GETNAME,     /* out: the name, NUL included */
    TOP_SETAFFINITY, /* in: the CPU set */
    TOP_GETAFFINITY, /* out: the CPU set (outlen bytes, zero past the kernel's) */
    TOP_SETSCHED,    /* c = policy, d = priority */
    TOP_GETSCHED,    /* b2 = policy | priority << 32 */
    TOP_SETPRIO,     /* c = priority */
    TOP_ATTR,        /* out: cb_thread_attr_t */
    TOP_KTID,        /* answer: 0, b2 = kernel thread id (threads of this node only) */
    TOP_CPUTIME,     /* c = the kernel's CPU clock kind (0 prof, 1 virt, 2 sched): b2 = ns */
    TOP_JOIN_ABORT,  /* c = the waiter of a timed join: answered ETIMEDOUT if still waiting */
};
typedef struct { uint64_t stack, stack_size; uint32_t detached; } cb_thread_attr_t;
int cb_thread_op(uint64_t tid, int op, uint64_t c, uint64_t d, const void *in, size_t inlen,
                 void *out, size_t outlen, int64_t *b2);
/* a join that gives up at deadline_ns (CLOCK_MONOTONIC; 0: at once;
 * UINT64_MAX: never): ETIMEDOUT, or 0 if the thread ended (even after the
 * deadline); ECANCELED if the joining thread's cancellation stopped it
 * (the caller acts on it) */
int cb_thread_join_until(uint64_t t, void **ret, uint64_t deadline_ns);
void cb_on_lock_req(const cb_msg_t *m, const void *p, size_t len);
void cb_on_lock_fwd(const cb_msg_t *m, const void *p, size_t len);
void cb_on_lock_grant(const cb_msg_t *m, const void *p, size_t len);
void cb_on_bar_arrive(const cb_msg_t *m, const void *p, size_t len);
void cb_on_bar_release(const cb_msg_t *m, const void *p, size_t len);
void cb_on_cond_wait(const cb_msg_t *m);
void cb_on_cond_signal(const cb_msg_t *m);
void cb_on_cond_cancel(const cb_msg_t *m);
void cb_on_cond_wake(const cb_msg_t *m);
void cb_on_spawn(const cb_msg_t *m, const void *p, size_t len);
void cb_on_thread_exit(const cb_msg_t *m, const void *p, size_t len);
void cb_on_join(const cb_msg_t *m);

/* node.c: start, attach, shutdown, failure */
void cb_node_start(int *argc, char ***argv);
void cb_node_serve(void);   /* non-master nodes: serve until shutdown */
void cb_node_finish(void);
/* The thread that ends the process: the first to exit or exec, main
 * returning, or the node's server (true).  An application thread that
 * tries after it waits for that end, which ends it too (as a second exit
 * waits in glibc 2.41); one of the runtime's gets false and goes on. */
bool cb_node_end_claim(void);
/* the program's exit status, once it exits (start.c) */
extern int cb_exit_status;
/* the master's exit status when the program's was 0 but a spawn is stuck
 * (node.c), which cables-run turns back into 0 */
#define CB_EXIT_SPAWN_STUCK 97
void cb_on_hello(const cb_msg_t *m, const void *p, size_t len);
void cb_on_table(const cb_msg_t *m, const void *p, size_t len);
void cb_on_table_ack(const cb_msg_t *m);
void cb_on_attach_failed(const cb_msg_t *m);
bool cb_node_joined(void);     /* this node has the node table */
bool cb_node_up(int k);        /* node k is in the table (attached, not gone) */
bool cb_node_open(int k);      /* ... and takes threads (not leaving) */
/* detach (see node.c) */
void cb_node_idle(void);       /* an attached node: tell the master if it has no threads */
void cb_node_handed(int k);    /* master: one home page of leaving node k is installed */
void cb_on_node_idle(const cb_msg_t *m);
void cb_on_leave(const cb_msg_t *m);
void cb_on_left(const cb_msg_t *m, const void *p, size_t len);
void cb_on_node_gone(const cb_msg_t *m);
void cb_on_gone_flush(const cb_msg_t *m);
/* directory.c: a leaving node sends its home pages with data to the master
 * and names the master their home (how many sent added to *sent; false: a
 * page busy, retry) */
bool cb_homes_hand_over(int64_t *sent);
bool cb_moving_to(int k);      /* master: a home move to node k under way */
void cb_homes_forget(int k);   /* cached homes: node k's pages are the master's */
void cb_dir_node_gone(int k);  /* master: the same in the directory */
bool cb_node_attaching(int k); /* master: node k is being attached */
/* master comm thread: start attaching a node (MPI_Comm_spawn on the attach
 * thread); its number, or -1 when CABLES_MAX_NODES nodes are there */
int cb_node_attach(void);
void cb_on_shutdown(const cb_msg_t *m);
void cb_on_bye(const cb_msg_t *m);
void cb_heard_from(int node);
void cb_check_peers(void);           /* comm thread, periodically */
void cb_peer_failed(int node, const char *why) __attribute__((noreturn));

/* numa.c */
void cb_numa_place(int local_rank, int local_size);
/* the communication thread's CPU, and an application thread's CPUs
 * (numa.c: where a node process has more than one CPU) */
void cb_numa_comm_thread(void);
void cb_numa_app_thread(void);
/* a CPU the node's application threads can spare (its own, or a share of
 * two or more), and the store's thread's CPUs: the node's but the
 * communication thread's */
bool cb_numa_spare_cpu(void);
void cb_numa_store_thread(void);

/* stats.c */
extern cables_stats_t cb_stats;
#define STAT_ADD(f, v) atomic_fetch_add_explicit((_Atomic uint64_t *)&cb_stats.f, (v), memory_order_relaxed)
/* node wrote page (homed here) in one interval: a diff applied here, or a
 * home page in this node's written list at release (misplaced pages) */
void cb_stat_page_written(uint64_t page, int node);

/* The runtime's own memory is private: libc's allocator by its own names,
 * past the shim's malloc (which gives application threads shared memory),
 * with the program's signals held off around each call (sys.c: its arena
 * lock is one the communication thread takes too). */
void *__libc_malloc(size_t);
void *__libc_calloc(size_t, size_t);
void *__libc_realloc(void *, size_t);
void *__libc_memalign(size_t, size_t);
void __libc_free(void *);
void *cb_malloc(size_t n);
void *cb_calloc(size_t n, size_t size);
void *cb_realloc(void *p, size_t n);
void *cb_memalign(size_t align, size_t n);
void cb_free(void *p);
#ifndef CB_DEFINES_MALLOC
#define malloc cb_malloc
#define calloc cb_calloc
#define realloc cb_realloc
#define free cb_free
#endif

/* ---- the per-node context ---- */
typedef struct { uintptr_t lo, hi; uint64_t first; } cb_alias_t; /* statics.c */
typedef struct {
    cb_config_t cfg;
    int self;
    _Atomic int nnodes;  /* node numbers in use: [0, nnodes) (some may be gone) */
    int launched;        /* nodes [0, launched) were started by the launcher */
    bool multi;          /* started by the launcher (MPI) */
    size_t ps;           /* page size */
    uint64_t npages;
    /* memory: one memfd store, mapped twice */
    int memfd;
    uint8_t *proto;      /* protocol view: contiguous, registered with UCX */
    uint8_t *app;        /* application view: at CB_GAS_BASE */
    uint8_t *twins;      /* the twins' pool (cb_twin) */
    _Atomic uint32_t *twin_slot; /* page p's twin: pool slot + 1, 0 none */
    _Atomic uint32_t twin_next;  /* slots mapped so far: the pool's size */
    cb_mutex_t twin_mu;          /* the free slots (cb_twin_drop) */
    uint32_t *twin_free, twin_nfree;
    _Atomic uint8_t *twin_block; /* block b of CB_TWIN_BLOCK slots is mapped */
    _Atomic uint32_t *pst;  /* page state words */
    _Atomic int16_t *home;  /* cached home of each page, plus one (0 unknown) */
    /* the node that served a copy of each page, plus one, << 32 | its
     * move epoch then: the page was PG_SHARED there, and while that node's
     * epoch stays the same the page is still homed there (rma.c);
     * | CB_SERVED_AHEAD: shared ahead, never read here since */
    _Atomic uint64_t *served;
    /* copies read again after an invalidation: refreshed in place at the
     * next CABLES_REFRESH acquires that would invalidate them (hlrc.c) */
    _Atomic uint8_t *hot;
    _Atomic uint64_t *moves; /* this node's move epoch: + 1 at each page moving in or out */
    uint8_t *idle;          /* idle grace of each written page (hlrc.c) */
    /* local claims (directory.c): bitmaps of the pages of first-touch
     * allocations this node may claim, of their first pages, of their page
     * groups' first pages, and of pages noticed (never claimed); claims
     * not answered yet */
    _Atomic uint64_t *claim_ok, *claim_astart, *claim_gstart, *claim_no;
    _Atomic uint64_t *claim_pending; /* claimed, not answered: never served with another */
    _Atomic uint32_t claims_out;
    _Atomic bool claims_drain; /* a release or acquire waits for claims_out to be 0 */
    cb_plist_t homed;       /* homes gained since the last release (directory.c) */
    uint64_t *sums;         /* home page p's checksum (hlrc.c): its twin */
    _Atomic uint64_t *expect; /* what p hashes to if only diffs wrote it since (hlrc.c) */
    uint64_t sum_seeds[CB_MAX_NODES]; /* node k's checksums' seed, this run's (node table) */
    _Atomic uint64_t *sum_stale; /* bit p: a diff landed after p's checksum (hlrc.c) */
    _Atomic uint64_t *quiet; /* bit p: home page p noticed, no copy left since (hlrc.c) */
    _Atomic uint64_t *pulled; /* bit p: copy p dropped by a pull's acquire (propagate.c) */
    _Atomic uint8_t *read_marks; /* byte p: another node read home page p in place (rma.c),
                                  * or it left in a fetch's reply (hlrc.c) */
    /* interval bookkeeping */
    cb_mutex_t release_mu; /* serializes releases and acquires */
    cb_plist_t dirty;      /* the interval's written pages */
    /* node table */
    pid_t pids[CB_MAX_NODES];
    char hosts[CB_MAX_NODES][64];
    _Atomic bool stopping;
    _Atomic bool comm_down; /* the communication thread has ended */
    char app_name[16];      /* the program's thread name, for the threads the comm thread starts */
    _Atomic uint64_t diffs_out; /* diff records sent, not yet acknowledged */
    /* the program's static data: GAS pages [0, nstatic) mapped at these ranges */
    cb_alias_t alias[2];
    int nalias;
    uint64_t nstatic;
    /* heap arenas: node k's is GAS pages heap_first + k * heap_pages, for heap_pages */
    uint64_t heap_first, heap_pages;
    /* what the runtime keeps for the whole program in its shared static
     * data (CB_PROGRAM_BYTES: the bytes of the marker libcables/link/head.c
     * after its first; statics.c), or NULL where that data is not shared */
    void *program;
    uintptr_t image_lo, image_hi; /* the program's own code and data (statics.c) */
    _Atomic bool ending; /* cb_node_finish has begun */
    /* descriptors 1 and 2 (bits 0, 1) are the master's on every node: the
     * program moved them (dup2, freopen, close); until then each node's
     * own, which the launcher forwards */
    _Atomic int std_master;
    bool forked; /* a child of fork: the memory its own, no runtime (pthread_shim's process.c) */
    _Atomic int app_threads; /* the program's threads running on this node (thread.c) */
    _Atomic int app_blocked; /* ... of them asleep in a wait of the runtime's (sys.c) */
    _Atomic uint64_t release_ns; /* when this node's last release began (hlrc.c) */
    /* when a thread here last pulled as a poller (propagate.c): diffs land
     * on home pages out of its sight for two periods after (hlrc.c) */
    _Atomic uint64_t poll_ns;
} cb_ctx_t;
#define CB_PROGRAM_BYTES (8192 - 8)
extern cb_ctx_t cb;
/* the program's process id, as getpid gives it: the master's in a run of
 * nodes */
static inline pid_t cb_program_pid(void) { return cb.multi && cb.pids[0] > 0 ? cb.pids[0] : cb_pid(); }

static inline uint8_t *cb_proto_page(uint64_t p) { return cb.proto + p * cb.ps; }
static inline uint8_t *cb_app_page(uint64_t p)
{
    if (p < cb.nstatic)
        for (int i = 0; i < cb.nalias; i++)
            if (p - cb.alias[i].first < (cb.alias[i].hi - cb.alias[i].lo) / cb.ps)
                return (uint8_t *)cb.alias[i].lo + (p - cb.alias[i].first) * cb.ps;
    return cb.app + p * cb.ps;
}
static inline int cb_home_cached(uint64_t p) { return atomic_load(&cb.home[p]) - 1; }
static inline void cb_home_set(uint64_t p, int node) { atomic_store(&cb.home[p], (int16_t)(node + 1)); }
static inline uint64_t cb_page_of(uintptr_t a)
{
    for (int i = 0; i < cb.nalias; i++)
        if (a - cb.alias[i].lo < cb.alias[i].hi - cb.alias[i].lo)
            return cb.alias[i].first + (a - cb.alias[i].lo) / cb.ps;
    return (a - CB_GAS_BASE) / cb.ps;
}
/* in the GAS or the shared static data */
static inline __attribute__((always_inline)) bool cb_in_gas(uintptr_t a)
{
    if (a - CB_GAS_BASE < cb.cfg.gas_size)
        return cb.app != NULL;
    for (int i = 0; i < cb.nalias; i++)
        if (a - cb.alias[i].lo < cb.alias[i].hi - cb.alias[i].lo)
            return true;
    return false;
}

#endif
