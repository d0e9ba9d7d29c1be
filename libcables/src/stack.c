/* stack.c: application threads run on stacks in the GAS, so that a pointer
 * to a stack variable means the same thing on every node.  A thread starts
 * on a private stack (glibc keeps its TCB there) and switches to a GAS
 * stack for the application's function; its fault handler runs on a
 * private alternate stack.  A stack is homed where its thread runs and its
 * pages are writable from the start and stay so (PG_STACK): the runtime's
 * own frames live there and must never fault.  Each stack has guard pages
 * (64 KiB) left out of its allocation, and stacks are reused on their node. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>

#include "internal.h"

#define ALT_SIZE (64 * 1024)
#define GUARD_BYTES (64 * 1024)

static cb_mutex_t free_mu = CB_MUTEX_INIT;
static struct free_stack { uint8_t *base; size_t size; } *free_stacks; /* private memory */
static size_t nfree, capfree;

static uint8_t *stack_new(size_t size)
{
    /* guard pages: 64 KiB at least, so that a frame of up to that much that
     * begins past the guard (a 4 KiB array written from its low end) hits
     * it instead of the live frames of the stack below it */
    uint64_t guard = (GUARD_BYTES + cb.ps - 1) / cb.ps, npages = size / cb.ps + guard;
    cb_msg_t m = { .type = M_ALLOC, .a = npages * cb.ps, .b = CABLES_POLICY_FIXED,
                   .c = (uint64_t)cb.self, .d = guard };
    uint64_t first = (uint64_t)cb_rpc(0, &m, NULL);
    if (first == ~0ull)
        cb_die("node %d: no room in the global address space for another thread stack of "
               "%zu bytes; raise CABLES_GAS_SIZE or lower CABLES_STACK_SIZE", cb.self, size);
    for (uint64_t p = first + guard; p < first + npages; p++) {
        cb_home_set(p, cb.self);
        cb_twin_drop(p); /* a copy's, if the range was used before */
        atomic_store(&cb.pst[p], PG_RW | PG_STACK);
    }
    cb_page_protect(first + guard, npages - guard, PROT_READ | PROT_WRITE);
    return cb_app_page(first + guard);
}

__attribute__((noinline)) /* not under getcontext (-Wclobbered) */
static uint8_t *stack_get(size_t size)
{
    uint8_t *s = NULL;
    cb_mutex_lock(&free_mu);
    for (size_t i = nfree; i-- > 0;)
        if (free_stacks[i].size == size) {
            s = free_stacks[i].base;
            free_stacks[i] = free_stacks[--nfree];
            break;
        }
    cb_mutex_unlock(&free_mu);
    return s ? s : stack_new(size);
}

static void stack_put(uint8_t *s, size_t size)
{
    cb_mutex_lock(&free_mu);
    if (nfree == capfree) {
        capfree = capfree ? capfree * 2 : 16;
        free_stacks = realloc(free_stacks, capfree * sizeof *free_stacks);
        if (!free_stacks)
            cb_die("out of memory for the stack list");
    }
    free_stacks[nfree++] = (struct free_stack){ s, size };
    cb_mutex_unlock(&free_mu);
}

struct run {
    void *(*fn)(void *);
    void *arg, *ret;
    bool exited;      /* ended by pthread_exit (else, unwound: cancelled) */
    void *exit_value;
    ucontext_t back;
};
static __thread struct run *running;
__thread bool cb_alt_ours CB_TLS;
void (*cb_thread_end_hook)(void);

/* The application's function runs under a cancellation buffer of glibc's:
 * pthread_exit and cancellation unwind the application's frames (running
 * its cleanup handlers and destructors) and land here, not in glibc's
 * thread start on the private stack, so the thread still ends through the
 * runtime (its release, its exit message). */
static void entry(void)
{
    __pthread_unwind_buf_t ub;
    if (__sigsetjmp_cancel(ub.__cancel_jmp_buf, 0)) {
        struct run *r = running; /* locals are gone after the jump */
        __pthread_unregister_cancel(&ub);
        r->ret = r->exited ? r->exit_value : PTHREAD_CANCELED;
    } else {
        __pthread_register_cancel(&ub);
        running->ret = running->fn(running->arg);
        __pthread_unregister_cancel(&ub);
    }
    /* it is ending: a cancellation that comes now must not act in the end
     * hook (a key destructor's close), it would unwind past the runtime's
     * end (glibc's own call, not the shim's) */
    int old;
    ((int (*)(int, int *))cb_libc("pthread_setcancelstate"))(PTHREAD_CANCEL_DISABLE, &old);
    if (cb_thr)
        cb_thr->cancel_off = true;
    if (cb.forked) /* the only thread of a child of fork ended: the child ends */
        exit(0);
    if (cb_thread_end_hook)
        cb_thread_end_hook();
    /* back with the thread's mask as it is now, not as it was at the
     * start (what swapcontext saved): a signal the thread blocked since
     * stays blocked while it ends, where glibc drops it, as natively.
     * Before, one pending (a pthread_kill to a thread that blocks it)
     * was let in at the end and ended the process; main's exit handlers
     * ran with its first mask */
    syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &running->back.uc_sigmask, _NSIG / 8);
} /* returns to running->back through uc_link */

void cb_thread_exit(void *value)
{
    static void (*libc_exit)(void *);
    if (!libc_exit)
        libc_exit = (void (*)(void *))dlsym(RTLD_NEXT, "pthread_exit");
    if (running) {
        running->exited = true;
        running->exit_value = value;
    }
    libc_exit(value);
    __builtin_unreachable();
}

void *cb_run_on_gas_stack(void *(*fn)(void *), void *arg, size_t size, bool *exited)
{
    if (size == 0)
        size = cb.cfg.stack_size;
    size = (size + cb.ps - 1) / cb.ps * cb.ps;
    stack_t alt = { .ss_size = ALT_SIZE }, old;
    alt.ss_sp = cb_mmap(NULL, ALT_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    /* the system call: the shim's sigaltstack keeps the program's apart */
    if (alt.ss_sp == MAP_FAILED || syscall(SYS_sigaltstack, &alt, &old))
        cb_die("node %d: cannot set up a signal stack: %s", cb.self, strerror(errno));
    cb_alt_ours = true;
    uint8_t *stk = stack_get(size);
    if (cb_thr) { /* pthread_getattr_np; then operations by id may act (thread.c) */
        cb_thr->stack = stk;
        cb_thr->stack_size = size;
        atomic_store(&cb_thr->ktid, gettid());
    }
    struct run r = { .fn = fn, .arg = arg }; /* on this thread's private stack */
    ucontext_t uc;
    if (getcontext(&uc))
        cb_die("getcontext: %s", strerror(errno));
    uc.uc_stack.ss_sp = stk;
    uc.uc_stack.ss_size = size;
    uc.uc_link = &r.back;
    makecontext(&uc, entry, 0);
    running = &r;
    if (swapcontext(&r.back, &uc))
        cb_die("swapcontext: %s", strerror(errno));
    running = NULL;
    stack_put(stk, size);
    cb_alt_ours = false;
    syscall(SYS_sigaltstack, &old, NULL);
    cb_munmap(alt.ss_sp, ALT_SIZE);
    if (exited)
        *exited = r.exited;
    return r.ret;
}
