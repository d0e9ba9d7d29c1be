/* atomics.c: the program's atomics, made across nodes.  Linked by
 * cables-cc into every program it links (after head.o: its mutexes are the
 * program's static data, so cluster objects).  cables-cc compiles with
 * -fno-inline-atomics: GCC then calls these (libatomic's interface) for
 * the program's C11 and __atomic atomics, those of `#pragma omp atomic`
 * among them, instead of a locked instruction, which is atomic in one
 * node's memory only; cables_atomics.h puts the __sync builtins,
 * atomic_flag and fences on them, and the flush plugin (openmp/) GCC's own
 * fences.  Each is made under a cluster mutex chosen by the address (an
 * acquire, the operation, a release), so every node sees each location's
 * atomics in one order, with the writes before them.  Code compiled
 * without cables-cc (only relinked) keeps its locked instructions. */
#include <fenv.h>
#include <float.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

static pthread_mutex_t stripes[64] = { [0 ... 63] = PTHREAD_MUTEX_INITIALIZER };

static pthread_mutex_t *stripe(const volatile void *p)
{
    uintptr_t a = (uintptr_t)p >> 4; /* one mutex for each aligned 16 bytes */
    return &stripes[(a ^ a >> 6 ^ a >> 12) & 63];
}
#define HELD(p, stmt)                                                                         \
    do {                                                                                      \
        pthread_mutex_t *m_ = stripe(p);                                                      \
        pthread_mutex_lock(m_);                                                               \
        stmt;                                                                                 \
        pthread_mutex_unlock(m_);                                                             \
    } while (0)

#define ATOMIC_OP(N, T, name, expr)                                                           \
    T atomic_fetch_##name##_##N(volatile void *p, T v, int mo)                                \
        __asm__("__atomic_fetch_" #name "_" #N);                                              \
    T atomic_fetch_##name##_##N(volatile void *p, T v, int mo)                                \
    {                                                                                         \
        (void)mo;                                                                             \
        volatile T *x = p;                                                                    \
        T old;                                                                                \
        HELD(p, (old = *x, *x = (T)(expr)));                                                  \
        return old;                                                                           \
    }                                                                                         \
    T atomic_##name##_fetch_##N(volatile void *p, T v, int mo)                                \
        __asm__("__atomic_" #name "_fetch_" #N);                                              \
    T atomic_##name##_fetch_##N(volatile void *p, T v, int mo)                                \
    {                                                                                         \
        (void)mo;                                                                             \
        volatile T *x = p;                                                                    \
        T new_;                                                                               \
        HELD(p, (new_ = (T)(expr), *x = new_));                                               \
        return new_;                                                                          \
    }

#define ATOMIC_SIZE(N, T)                                                                     \
    T atomic_load_##N(const volatile void *p, int mo) __asm__("__atomic_load_" #N);           \
    T atomic_load_##N(const volatile void *p, int mo)                                         \
    {                                                                                         \
        (void)mo;                                                                             \
        T v;                                                                                  \
        HELD(p, v = *(const volatile T *)p);                                                  \
        return v;                                                                             \
    }                                                                                         \
    void atomic_store_##N(volatile void *p, T v, int mo) __asm__("__atomic_store_" #N);       \
    void atomic_store_##N(volatile void *p, T v, int mo)                                      \
    {                                                                                         \
        (void)mo;                                                                             \
        HELD(p, *(volatile T *)p = v);                                                        \
    }                                                                                         \
    T atomic_exchange_##N(volatile void *p, T v, int mo) __asm__("__atomic_exchange_" #N);    \
    T atomic_exchange_##N(volatile void *p, T v, int mo)                                      \
    {                                                                                         \
        (void)mo;                                                                             \
        T old;                                                                                \
        HELD(p, (old = *(volatile T *)p, *(volatile T *)p = v));                              \
        return old;                                                                           \
    }                                                                                         \
    /* (the library call has no weak argument: GCC drops it) */                               \
    bool atomic_compare_exchange_##N(volatile void *p, void *expected, T desired, int mo,     \
                                     int fail_mo) __asm__("__atomic_compare_exchange_" #N);   \
    bool atomic_compare_exchange_##N(volatile void *p, void *expected, T desired, int mo,     \
                                     int fail_mo)                                             \
    {                                                                                         \
        (void)mo, (void)fail_mo;                                                              \
        volatile T *x = p;                                                                    \
        T old;                                                                                \
        bool ok;                                                                              \
        HELD(p, (old = *x, (ok = old == *(T *)expected) ? (void)(*x = desired) : (void)0));   \
        if (!ok)                                                                              \
            *(T *)expected = old;                                                             \
        return ok;                                                                            \
    }                                                                                         \
    ATOMIC_OP(N, T, add, *x + v)                                                              \
    ATOMIC_OP(N, T, sub, *x - v)                                                              \
    ATOMIC_OP(N, T, and, *x & v)                                                              \
    ATOMIC_OP(N, T, or, *x | v)                                                               \
    ATOMIC_OP(N, T, xor, *x ^ v)                                                              \
    ATOMIC_OP(N, T, nand, ~(*x & v))

ATOMIC_SIZE(1, uint8_t)
ATOMIC_SIZE(2, uint16_t)
ATOMIC_SIZE(4, uint32_t)
ATOMIC_SIZE(8, uint64_t)
ATOMIC_SIZE(16, unsigned __int128)

/* any size (GCC calls these for objects of other sizes) */
void atomic_load_any(size_t n, const volatile void *p, void *ret, int mo)
    __asm__("__atomic_load");
void atomic_load_any(size_t n, const volatile void *p, void *ret, int mo)
{
    (void)mo;
    HELD(p, memcpy(ret, (const void *)p, n));
}
void atomic_store_any(size_t n, volatile void *p, void *val, int mo) __asm__("__atomic_store");
void atomic_store_any(size_t n, volatile void *p, void *val, int mo)
{
    (void)mo;
    HELD(p, memcpy((void *)p, val, n));
}
void atomic_exchange_any(size_t n, volatile void *p, void *val, void *ret, int mo)
    __asm__("__atomic_exchange");
void atomic_exchange_any(size_t n, volatile void *p, void *val, void *ret, int mo)
{
    (void)mo;
    HELD(p, (memcpy(ret, (const void *)p, n), memcpy((void *)p, val, n)));
}
bool atomic_compare_exchange_any(size_t n, volatile void *p, void *expected, void *desired,
                                 int mo, int fail_mo) __asm__("__atomic_compare_exchange");
bool atomic_compare_exchange_any(size_t n, volatile void *p, void *expected, void *desired,
                                 int mo, int fail_mo)
{
    (void)mo, (void)fail_mo;
    bool ok;
    HELD(p, (ok = !memcmp((const void *)p, expected, n))
                ? (void)memcpy((void *)p, desired, n)
                : (void)memcpy(expected, (const void *)p, n));
    return ok;
}
/* _Atomic float and double compound assignments raise the exceptions the
 * operation raised, through this (libatomic's: by arithmetic, no libm) */
void atomic_feraiseexcept(int e) __asm__("__atomic_feraiseexcept");
void atomic_feraiseexcept(int e)
{
    volatile float x;
    if (e & FE_INVALID)
        x = 0.0f, x = x / x;
    if (e & FE_DIVBYZERO)
        x = 0.0f, x = 1.0f / x;
    if (e & FE_OVERFLOW)
        x = FLT_MAX, x = x * x;
    if (e & FE_UNDERFLOW)
        x = FLT_MIN, x = x * x;
    if (e & FE_INEXACT)
        x = 3.0f, x = 1.0f / x;
    (void)x;
}

/* A flush: `#pragma omp flush` (flush_plugin.cc), __sync_synchronize and
 * C11 fences (cables_atomics.h) call it.  A cluster acquire and release: the
 * writes before it are seen by the threads that pass one after it. */
static pthread_mutex_t flush_mutex = PTHREAD_MUTEX_INITIALIZER;
void cables_flush(void)
{
    pthread_mutex_lock(&flush_mutex);
    pthread_mutex_unlock(&flush_mutex);
}

bool atomic_is_lock_free(size_t n, const volatile void *p) __asm__("__atomic_is_lock_free");
bool atomic_is_lock_free(size_t n, const volatile void *p)
{
    (void)n, (void)p;
    return false; /* each is made under a mutex */
}
