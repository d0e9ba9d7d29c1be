/* page.c: the page state machine of the HLRC protocol, as a pure function.
 * The fault path, release and acquire execute the actions it returns. */
#include <sys/mman.h>

#include "internal.h"

int cb_page_prot(uint32_t state)
{
    switch (state & PG_ACC) {
    case PG_RO: return PROT_READ;
    case PG_RW: return PROT_READ | PROT_WRITE;
    default: return PROT_NONE;
    }
}

/* A home page is never diffed: writes at home are already in the home copy;
 * it only needs a write notice when written in an interval.  Until another
 * node fetches it (PG_SHARED), no node can hold a copy to invalidate: a
 * private home page is written freely, with no notice and no protection
 * change, and opened for writing at its first fault, read or write.  A
 * copy is fetched when invalid and twinned at its first write.  A written
 * copy stays writable across releases (each release diffs it and refreshes
 * its twin: no protection change, no new fault) until releases have found
 * nothing to diff for its idle grace (hlrc.c): then it is write-protected
 * (EV_IDLE).
 * A written shared home page likewise: twinned at the release that finds it
 * written (a home page's twin is a checksum, hlrc.c), compared with its
 * twin at the next (a page of 4 KiB hashes in well under a microsecond; a
 * write fault costs tens), write-protected once releases have found it
 * unchanged for its idle grace. */
cb_page_step_t cb_page_next(uint32_t state, bool is_home, enum cb_page_event ev)
{
    uint32_t acc = state & PG_ACC, keep = state & PG_LISTED;
    cb_page_step_t s = { state & ~(uint32_t)(PG_BUSY | PG_WAITERS), 0 };

    switch (ev) {
    case EV_READ_FAULT:
        if (acc != PG_NONE)
            return s; /* resolved by another thread */
        if (is_home && !(state & PG_SHARED)) {
            /* private: opened for writing too, as its writes need nothing
             * (a page read first is mostly written next: one fault, not
             * two; OCEAN at 1 node took 10624 faults, now 2423); its first
             * serve twins it (EV_SHARE) */
            s.next = keep | PG_RW;
            s.act = ACT_PROTECT;
            return s;
        }
        s.next = (state & PG_SHARED) | keep | PG_RO;
        s.act = ACT_PROTECT | (is_home ? 0 : ACT_FETCH);
        return s;
    case EV_WRITE_FAULT:
        if (acc == PG_RW)
            return s;
        if (is_home && !(state & PG_SHARED)) {
            s.next = keep | PG_RW;
            s.act = ACT_PROTECT;
            return s;
        }
        s.next = (state & PG_SHARED) | PG_LISTED | PG_RW;
        s.act = ACT_PROTECT | (keep ? 0 : ACT_LIST);
        if (!is_home)
            s.act |= ACT_TWIN | (acc == PG_NONE ? ACT_FETCH : 0);
        return s;
    case EV_RELEASE:
        if (acc == PG_RW && is_home && state & PG_STACK) {
            /* it stays writable; once shared, it is noticed at every release */
            s.next = state & (PG_SHARED | PG_STACK | PG_ACC);
            if (state & PG_SHARED) {
                s.next |= PG_LISTED;
                s.act = ACT_LIST;
            }
            return s;
        }
        if (acc == PG_RW && !is_home) {
            s.next = PG_LISTED | PG_RW;
            s.act = ACT_DIFF | ACT_LIST;
            return s;
        }
        if (acc == PG_RW && state & PG_SHARED) {
            /* a shared home page written in the interval stays writable,
             * twinned from now on (if it was not): the next release tells
             * by its twin whether it was written again (EV_IDLE if not) */
            s.next = PG_SHARED | PG_LISTED | PG_TWIN | PG_RW;
            s.act = ACT_LIST | (state & PG_TWIN ? 0 : ACT_TWIN);
            return s;
        }
        s.next = (state & (PG_SHARED | PG_STACK)) | (acc == PG_RW ? PG_RO : acc);
        if (acc == PG_RW)
            s.act = ACT_PROTECT;
        return s;
    case EV_IDLE:
        if (acc == PG_RW && is_home && state & PG_TWIN) {
            /* its twin says it was not written: protect, then compare once
             * more (a write that raced the comparison) */
            s.next = PG_SHARED | PG_RO;
            s.act = ACT_PROTECT | ACT_DIFF;
            return s;
        }
        if (acc != PG_RW || is_home)
            return s;
        /* protect, then diff once more: a write that raced the first diff */
        s.next = PG_RO;
        s.act = ACT_PROTECT | ACT_DIFF;
        return s;
    case EV_WRITE_AHEAD:
        /* likely written next (a run of pages is written in order): opened
         * now, one protection change and no fault; its twin tells at the
         * release whether it needs a notice */
        if (!is_home || acc != PG_RO || (state & (PG_LISTED | PG_STACK)) ||
            !(state & PG_SHARED))
            return s;
        s.next = PG_SHARED | PG_LISTED | PG_TWIN | PG_RW;
        s.act = ACT_PROTECT | ACT_TWIN | ACT_LIST;
        return s;
    case EV_SHARE:
        /* from now on its writes need notices.  Writable (written in this
         * interval), it is twinned now, before its data leaves: the release
         * notices it only if it was written after that, not for every page
         * served while its writer's interval was open */
        if (!is_home || state & PG_SHARED)
            return s;
        if (acc == PG_RW && !(state & PG_STACK)) {
            s.next = PG_SHARED | PG_LISTED | PG_TWIN | PG_RW;
            s.act = ACT_TWIN | (keep ? 0 : ACT_LIST);
            return s;
        }
        s.next |= PG_SHARED; /* a stack page: noticed at every release from now on */
        if (acc == PG_RW && !keep) {
            s.next |= PG_LISTED;
            s.act = ACT_LIST;
        }
        return s;
    case EV_INVALIDATE:
        if (is_home || acc == PG_NONE)
            return s;
        /* a dirty copy is diffed before it goes; its notice stays pending */
        s.next = keep | PG_NONE;
        s.act = ACT_PROTECT | (acc == PG_RW ? ACT_DIFF : 0);
        return s;
    }
    return s;
}
