/* The pthread shim: the POSIX threads API of a relinked program, on the
 * runtime.  The rule (DESIGN 6): an object inside the global address space
 * is a cluster object; any other (libc's, UCX's, Open MPI's, a runtime
 * thread's) goes to libc unchanged.  Calls without an object decide by the
 * calling thread: an application thread gets the cluster's answer.
 * Cluster thread ids carry TID_TAG so that they are told from libc's. */
#ifndef CABLES_SHIM_H
#define CABLES_SHIM_H

#include <pthread.h>
#include <time.h>

#include "../../libcables/src/internal.h"

#define TID_TAG (1ull << 63)

/* libc's definition of fn (looked up once) */
#define REAL(fn) ({                                              \
        static __typeof__(&fn) real_;                            \
        if (!real_) real_ = (__typeof__(&fn))cb_libc(#fn);       \
        real_; })

/* A cluster object: in the GAS, used by an application thread.  The
 * runtime's own code (its threads, and what it calls, such as MPI's
 * finalization on a main thread still on its GAS stack after exit() in
 * main) gets libc for objects there too. */
static inline bool shared_obj(const volatile void *p)
{
    return cb_app_thread && cb_in_gas((uintptr_t)p);
}

/* An absolute time on clock c as a CLOCK_MONOTONIC deadline in ns; -1 when
 * the time is invalid (EINVAL). */
int64_t shim_deadline(clockid_t c, const struct timespec *abs);

/* sync.c: a cancellation the runtime saw in a wait: act on it (glibc's
 * cancellation state is set; this unwinds when it is enabled) */
void shim_testcancel(void);

#endif
