/* cables_atomics.h: included ahead of every file cables-cc compiles
 * (-include).  -fno-inline-atomics makes GCC call the runtime for the
 * __atomic builtins (atomics.c: each under a cluster mutex), but not
 * for the older __sync builtins, atomic_flag's test-and-set and clear, nor
 * fences: those stay locked instructions, atomic in one node's memory only.
 * These macros put them on the __atomic builtins (and fences on the
 * runtime's flush), so that they work across nodes too.  Nothing for
 * assembler sources. */
#if !defined(CABLES_ATOMICS_H) && !defined(__ASSEMBLER__)
#define CABLES_ATOMICS_H

/* C and C++ alike (a C++ atomic_flag's test_and_set is GCC's builtin too) */
#ifdef __cplusplus
extern "C" void cables_flush(void);
#define CABLES_BOOL_ bool
#define CABLES_AUTO_ auto
#else
void cables_flush(void);
#define CABLES_BOOL_ _Bool
#define CABLES_AUTO_ __auto_type
#endif

#define __atomic_test_and_set(p, mo)                                                  \
    __extension__({                                                                   \
        CABLES_BOOL_ cables_was_ =                                                           \
            __atomic_exchange_n((volatile unsigned char *)(p), (unsigned char)1, (mo)); \
        cables_was_;                                                                  \
    })
#define __atomic_clear(p, mo) __atomic_store_n((volatile unsigned char *)(p), (unsigned char)0, (mo))
#define __atomic_thread_fence(mo) ((mo) == __ATOMIC_RELAXED ? (void)0 : cables_flush())

#define __sync_fetch_and_add(p, v, ...) __atomic_fetch_add((p), (v), __ATOMIC_SEQ_CST)
#define __sync_fetch_and_sub(p, v, ...) __atomic_fetch_sub((p), (v), __ATOMIC_SEQ_CST)
#define __sync_fetch_and_or(p, v, ...) __atomic_fetch_or((p), (v), __ATOMIC_SEQ_CST)
#define __sync_fetch_and_and(p, v, ...) __atomic_fetch_and((p), (v), __ATOMIC_SEQ_CST)
#define __sync_fetch_and_xor(p, v, ...) __atomic_fetch_xor((p), (v), __ATOMIC_SEQ_CST)
#define __sync_fetch_and_nand(p, v, ...) __atomic_fetch_nand((p), (v), __ATOMIC_SEQ_CST)
#define __sync_add_and_fetch(p, v, ...) __atomic_add_fetch((p), (v), __ATOMIC_SEQ_CST)
#define __sync_sub_and_fetch(p, v, ...) __atomic_sub_fetch((p), (v), __ATOMIC_SEQ_CST)
#define __sync_or_and_fetch(p, v, ...) __atomic_or_fetch((p), (v), __ATOMIC_SEQ_CST)
#define __sync_and_and_fetch(p, v, ...) __atomic_and_fetch((p), (v), __ATOMIC_SEQ_CST)
#define __sync_xor_and_fetch(p, v, ...) __atomic_xor_fetch((p), (v), __ATOMIC_SEQ_CST)
#define __sync_nand_and_fetch(p, v, ...) __atomic_nand_fetch((p), (v), __ATOMIC_SEQ_CST)
#define __sync_bool_compare_and_swap(p, o, n, ...)                                     \
    __extension__({                                                                     \
        CABLES_AUTO_ cables_old_ = (__typeof__(*(p)))(o); /* (not volatile) */          \
        __atomic_compare_exchange_n((p), &cables_old_, (n), 0, __ATOMIC_SEQ_CST,        \
                                    __ATOMIC_SEQ_CST);                                  \
    })
#define __sync_val_compare_and_swap(p, o, n, ...)                                      \
    __extension__({                                                                     \
        CABLES_AUTO_ cables_old_ = (__typeof__(*(p)))(o);                                \
        __atomic_compare_exchange_n((p), &cables_old_, (n), 0, __ATOMIC_SEQ_CST,        \
                                    __ATOMIC_SEQ_CST);                                  \
        cables_old_;                                                                    \
    })
#define __sync_lock_test_and_set(p, v, ...) __atomic_exchange_n((p), (v), __ATOMIC_ACQUIRE)
#define __sync_lock_release(p, ...) __atomic_store_n((p), 0, __ATOMIC_RELEASE)
#define __sync_synchronize() cables_flush()

#endif
