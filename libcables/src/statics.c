/* statics.c: the program's static data (.data, .bss) is shared, without
 * source changes.  Its pages are mapped from the page store over the
 * program's own, as GAS pages 0.. homed on the master, which copies its
 * initialized values in; other nodes fetch them on first access.
 *
 * Per-node libc state that the linker copied into the program (stdout,
 * environ, ...: R_X86_64_COPY, placed first in .bss) stays private: the
 * cables-cc link puts it on pages of its own, between two markers
 * (libcables/link/), and only the ranges outside them are shared.  The
 * RELRO part of the segment (read-only after start) is not shared. */
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

extern char cables_statics_data_end[] __attribute__((weak));
extern char cables_statics_bss_begin[] __attribute__((weak));

struct seg { uintptr_t lo, hi, relro_hi, img_lo, img_hi; bool found; };

static int find_exe(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct seg *s = arg;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD) { /* the program's image: code and data */
            if (!s->img_lo || lo < s->img_lo)
                s->img_lo = lo;
            if (lo + ph->p_memsz > s->img_hi)
                s->img_hi = lo + ph->p_memsz;
        }
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_W)) {
            s->lo = lo;
            s->hi = lo + ph->p_memsz;
            s->found = true;
        } else if (ph->p_type == PT_GNU_RELRO) {
            s->relro_hi = lo + ph->p_memsz;
        }
    }
    return 1; /* the executable is the first object */
}

static void add_range(uintptr_t lo, uintptr_t hi)
{
    if (hi <= lo)
        return;
    size_t len = hi - lo;
    uint64_t first = cb.nstatic, n = len / cb.ps;
    if (cb.self == 0)
        memcpy(cb_proto_page(first), (void *)lo, len);
    void *m = cb_mmap((void *)lo, len, cb.self == 0 ? PROT_READ | PROT_WRITE : PROT_NONE,
                   MAP_SHARED | MAP_FIXED, cb.memfd, (off_t)(first * cb.ps));
    if (m != (void *)lo)
        cb_die("node %d: cannot map the program's static data as shared memory", cb.self);
    for (uint64_t p = first; p < first + n; p++) {
        cb_home_set(p, 0);
        atomic_store(&cb.pst[p], cb.self == 0 ? PG_RW : PG_NONE);
    }
    cb.alias[cb.nalias++] = (cb_alias_t){ lo, hi, first };
    cb.nstatic += n;
}

void cb_statics_init(void)
{
    if (!cables_statics_data_end || !cables_statics_bss_begin)
        return; /* not linked by cables-cc: nothing to share */
    long os = sysconf(_SC_PAGESIZE);
    if (cb.ps != (size_t)os) {
        if (cb.self == 0)
            fprintf(stderr, "cables: CABLES_PAGE_SIZE=%zu: the program's static data stays "
                    "private to each node (sharing it needs the OS page size, %ld)\n",
                    cb.ps, os);
        return;
    }
    struct seg s = { 0 };
    dl_iterate_phdr(find_exe, &s);
    uintptr_t dend = (uintptr_t)cables_statics_data_end, bbeg = (uintptr_t)cables_statics_bss_begin;
    uintptr_t lo = s.relro_hi > s.lo ? s.relro_hi : s.lo;
    lo = (lo + cb.ps - 1) & ~(uintptr_t)(cb.ps - 1);
    uintptr_t hi = (s.hi + cb.ps - 1) & ~(uintptr_t)(cb.ps - 1);
    if (!s.found || dend < lo || dend > bbeg || bbeg >= hi)
        cb_die("the program's data segment is not laid out as cables-cc links it "
               "(markers outside its writable segment); relink it with cables-cc");
    /* they take the lowest pages of the GAS, below the heap arenas
     * (gas.c): bigger, they would lie under the arenas and the ranges
     * handed out (a malloc'd block inside a global array) */
    uint64_t need = ((dend - lo) + (hi - bbeg)) / cb.ps;
    if (need >= cb.heap_first)
        cb_die("the program's static data (%llu MiB) does not fit in the lower half of the "
               "global address space (CABLES_GAS_SIZE=%llu MiB: %llu MiB below the heap "
               "arenas); set CABLES_GAS_SIZE above %llu MiB (and raise ulimit -v if it limits "
               "the address space)",
               (unsigned long long)(need * cb.ps >> 20), (unsigned long long)(cb.cfg.gas_size >> 20),
               (unsigned long long)(cb.heap_first * cb.ps >> 20),
               (unsigned long long)(2 * need * cb.ps >> 20));
    add_range(lo, dend);
    add_range(bbeg, hi);
    /* a marker of the size head.c gives it (not one of an older head.o) */
    Dl_info di;
    const ElfW(Sym) *sym = NULL;
    if (dladdr1(cables_statics_bss_begin, &di, (void **)&sym, RTLD_DL_SYMENT) && sym &&
        sym->st_size >= 8 + CB_PROGRAM_BYTES)
        cb.program = cables_statics_bss_begin + 8;
    cb.image_lo = s.img_lo;
    cb.image_hi = s.img_hi;
    if (cb.self == 0)
        cb_gas_reserve(cb.nstatic);
}
