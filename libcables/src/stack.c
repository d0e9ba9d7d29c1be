/* stack.c: application threads run on stacks in the GAS, so that a pointer
 * to a stack variable means the same thing on every node.  A thread starts
 * on a private stack (glibc keeps its TCB there) and switches to a GAS
 * stack for the application's function; its fault handler runs on a
 * private alternate stack.  A stack is homed where its thread runs and its
 * pages are writable from the start and stay so (PG_STACK): the runtime's
 * own frames live there and must never fault.  Each stack has a guard page
 * left out of its allocation, and stacks are reused on their node. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>

#include "internal.h"

#define ALT_SIZE (64 * 1024)

static cb_mutex_t free_mu = CB_MUTEX_INIT;
static uint8_t **free_stacks; /* private memory: stacks homed here, unused */
static size_t nfree, capfree;

static uint8_t *stack_new(void)
{
    uint64_t guard = 1, npages = cb.cfg.stack_size / cb.ps + guard;
    cb_msg_t m = { .type = M_ALLOC, .a = npages * cb.ps, .b = CABLES_POLICY_FIXED,
                   .c = (uint64_t)cb.self, .d = guard };
    uint64_t first = (uint64_t)cb_rpc(0, &m, NULL);
    if (first == ~0ull)
        cb_die("node %d: no room in the global address space for another thread stack of "
               "%zu bytes; raise CABLES_GAS_SIZE or lower CABLES_STACK_SIZE", cb.self,
               cb.cfg.stack_size);
    for (uint64_t p = first + guard; p < first + npages; p++) {
        cb_home_set(p, cb.self);
        atomic_store(&cb.pst[p], PG_RW | PG_STACK);
    }
    cb_page_protect(first + guard, npages - guard, PROT_READ | PROT_WRITE);
    return cb_app_page(first + guard);
}

static uint8_t *stack_get(void)
{
    cb_mutex_lock(&free_mu);
    uint8_t *s = nfree ? free_stacks[--nfree] : NULL;
    cb_mutex_unlock(&free_mu);
    return s ? s : stack_new();
}

static void stack_put(uint8_t *s)
{
    cb_mutex_lock(&free_mu);
    if (nfree == capfree) {
        capfree = capfree ? capfree * 2 : 16;
        free_stacks = realloc(free_stacks, capfree * sizeof *free_stacks);
        if (!free_stacks)
            cb_die("out of memory for the stack list");
    }
    free_stacks[nfree++] = s;
    cb_mutex_unlock(&free_mu);
}

struct run {
    void *(*fn)(void *);
    void *arg, *ret;
    ucontext_t back;
};
static __thread struct run *running;

static void entry(void)
{
    struct run *r = running;
    r->ret = r->fn(r->arg);
} /* returns to r->back through uc_link */

void *cb_run_on_gas_stack(void *(*fn)(void *), void *arg)
{
    stack_t alt = { .ss_size = ALT_SIZE }, old;
    alt.ss_sp = mmap(NULL, ALT_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (alt.ss_sp == MAP_FAILED || sigaltstack(&alt, &old))
        cb_die("node %d: cannot set up a signal stack: %s", cb.self, strerror(errno));
    uint8_t *stk = stack_get();
    struct run r = { .fn = fn, .arg = arg }; /* on this thread's private stack */
    ucontext_t uc;
    if (getcontext(&uc))
        cb_die("getcontext: %s", strerror(errno));
    uc.uc_stack.ss_sp = stk;
    uc.uc_stack.ss_size = cb.cfg.stack_size;
    uc.uc_link = &r.back;
    makecontext(&uc, entry, 0);
    running = &r;
    if (swapcontext(&r.back, &uc))
        cb_die("swapcontext: %s", strerror(errno));
    stack_put(stk);
    sigaltstack(&old, NULL);
    munmap(alt.ss_sp, ALT_SIZE);
    return r.ret;
}
