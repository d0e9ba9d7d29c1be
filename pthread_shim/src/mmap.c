/* mmap.c: the program's memory mappings.  A mapping is the process's, so
 * every node's: what an application thread maps with mmap is a big block
 * of the GAS (heap.c), homed by first touch, as glibc's malloc serves big
 * blocks with mmap.  Before, it was the mapping node's alone, and as the
 * nodes run with the same address layout, a thread of another node that
 * followed a pointer into it read and wrote whatever that node had there
 * (its runtime's memory).  The runtime's own calls are the kernel's
 * (cb_mmap).
 *
 * - Anonymous mappings, shared or private, of any protection but PROT_EXEC:
 *   zeroed pages, taking memory as they are touched.
 * - A file mapping is the file's bytes read into such a block when it is
 *   mapped (the descriptor is the process's: the master's, remote.c).  One
 *   MAP_SHARED with PROT_WRITE writes the pages that changed (a checksum a
 *   page) back to the file at msync, at munmap and when the program ends,
 *   up to the file's size then; a descriptor of the file is kept meanwhile,
 *   as the kernel keeps the file.  Neither kind sees the file change after
 *   it was mapped.
 * - munmap of a whole mapping frees it, of its first or its last pages
 *   trims it (an allocator aligning a block maps more and trims both ends);
 *   pages in its middle stay until the rest is unmapped.
 * - mremap shrinks, grows in place when it can, else moves (a copy).
 * - madvise DONTNEED (or REMOVE) reads back zeros in a private mapping (a
 *   private file mapping: the file's bytes); a shared one keeps its bytes;
 *   other advice is ignored.  mprotect is not applied in the GAS (the
 *   runtime's page protections are the coherence state): it answers 0,
 *   and EACCES for PROT_EXEC.
 * - PROT_EXEC, MAP_32BIT, a fixed address outside the GAS and a descriptor
 *   of the node's own (/proc, /sys, 1 and 2 until moved) stay the node's (libc's); a
 *   fixed address in the GAS only inside a mapping (its pages then read as
 *   newly mapped).  So does everything in a program whose static data is
 *   not shared (cb.program: no table).
 *
 * The program's mappings are a table in the GAS, hung from its shared
 * static data and guarded by one cluster lock: whichever node made a
 * mapping, any node finds any part of it.  A call on a GAS range never
 * goes to the kernel, whichever thread makes it (a destructor after the
 * thread's end, say): a kernel munmap there would cut this node's view of
 * the GAS. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#define XXH_INLINE_ALL /* as hlrc.c: header-only, no library to link */
#include <xxhash.h>

#include "shim.h"

struct map {
    uintptr_t lo, hi;  /* the live range */
    uintptr_t data;    /* the block: its first byte, */
    uintptr_t end;     /* and the end of what it may grow to in place */
    uintptr_t used;    /* the end of what was ever live (regrowth clears below it) */
    uint64_t *sums;    /* written back: a checksum a page from data, as the file has it */
    off_t off;         /* the file offset of data */
    int fd;            /* a descriptor of the file, or -1 */
    bool file, shared, back; /* back: MAP_SHARED with PROT_WRITE, of a file */
};

struct maps {
    cables_lock_t lock;
    struct map *tab;   /* GAS (cables_alloc) */
    uint32_t n, cap;
};

static struct maps *maps(void)
{
    _Static_assert(SHIM_PROGRAM_MAPS + sizeof(struct maps) <= SHIM_PROGRAM_SEEDS, "maps");
    return cb.program ? (struct maps *)((uint8_t *)cb.program + SHIM_PROGRAM_MAPS) : NULL;
}

static size_t page_up(size_t n) { return (n + cb.ps - 1) & ~(cb.ps - 1); }

/* The table (its lock held) */
static struct map *find(struct maps *t, uintptr_t a)
{
    for (uint32_t i = 0; i < t->n; i++)
        if (t->tab[i].lo <= a && a < t->tab[i].hi)
            return &t->tab[i];
    return NULL;
}

/* the part [*lo, *hi) of m's live range within [a, e): false if none */
static bool overlap(const struct map *m, uintptr_t a, uintptr_t e, uintptr_t *lo, uintptr_t *hi)
{
    *lo = a > m->lo ? a : m->lo;
    *hi = e < m->hi ? e : m->hi;
    return *lo < *hi;
}

static bool add(struct maps *t, const struct map *m)
{
    if (t->n == t->cap) {
        uint32_t cap = t->cap ? 2 * t->cap : 64;
        struct map *tab = cables_alloc(cap * sizeof *tab);
        if (!tab)
            return false;
        if (t->n)
            memcpy(tab, t->tab, t->n * sizeof *tab);
        if (t->tab)
            cables_free(t->tab);
        t->tab = tab;
        t->cap = cap;
    }
    t->tab[t->n++] = *m;
    return true;
}

/* [a, e) of m reads as newly mapped: zeros, the file's bytes for a private
 * file mapping; a shared file mapping's pages are the file's already.  0,
 * or an errno. */
static int refill(const struct map *m, uintptr_t a, uintptr_t e)
{
    if (m->file && m->shared && a < m->used)
        return 0;
    if (!m->file) {
        memset((void *)a, 0, e - a);
        return 0;
    }
    while (a < e) {
        size_t n = e - a < (1u << 20) ? e - a : 1u << 20; /* a remote call's bytes at most */
        ssize_t r = pread(m->fd, (void *)a, n, m->off + (off_t)(a - m->data));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return errno;
        if (r == 0) { /* past the file's end: zeros */
            memset((void *)a, 0, e - a);
            break;
        }
        a += (uintptr_t)r;
    }
    return 0;
}

static uint64_t sum(uintptr_t page) { return XXH3_64bits((const void *)page, cb.ps); }

/* The file gets the pages of [a, e) of m that changed since it last had
 * them, as far as the file goes now.  0, or an errno. */
static int write_back(struct map *m, uintptr_t a, uintptr_t e)
{
    if (!m->back)
        return 0;
    struct stat st;
    if (fstat(m->fd, &st))
        return errno;
    for (uintptr_t p = a; p < e; p += cb.ps) {
        size_t i = (p - m->data) / cb.ps;
        off_t at = m->off + (off_t)(p - m->data);
        uint64_t h = sum(p);
        if (h == m->sums[i] || at >= st.st_size)
            continue;
        size_t n = st.st_size - at < (off_t)cb.ps ? (size_t)(st.st_size - at) : cb.ps;
        for (size_t done = 0; done < n;) {
            ssize_t r = pwrite(m->fd, (const uint8_t *)p + done, n - done, at + (off_t)done);
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0)
                return r < 0 ? errno : EIO;
            done += (size_t)r;
        }
        m->sums[i] = h;
    }
    return 0;
}

/* m leaves the table (entry i) */
static void drop(struct maps *t, struct map *m)
{
    if (m->fd >= 0)
        close(m->fd); /* as a close would, this drops the process's fcntl locks on the file */
    shim_big_free((void *)m->data);
    *m = t->tab[--t->n];
}

static void *fail(int err)
{
    errno = err;
    return MAP_FAILED;
}

/* a descriptor of fd's file (the master's, as fd is) kept by a mapping, out
 * of the way of the numbers the program picks */
static int keep_fd(int fd)
{
    int k = fcntl(fd, F_DUPFD_CLOEXEC, 256);
    return k < 0 && errno == EINVAL ? fcntl(fd, F_DUPFD_CLOEXEC, 0) : k;
}

/* A new mapping of len bytes (a multiple of the page), which may grow to
 * cap in place (an anonymous one) */
static void *map_block(size_t len, size_t cap, int prot, int flags, int fd, off_t off)
{
    struct map m = { .off = off, .fd = -1, .file = !(flags & MAP_ANONYMOUS),
                     .shared = (flags & MAP_TYPE) != MAP_PRIVATE };
    m.back = m.file && m.shared && (prot & PROT_WRITE);
    if (m.file) {
        int fl = fcntl(fd, F_GETFL);
        struct stat st;
        if (fl < 0 || fstat(fd, &st))
            return fail(EBADF);
        if ((fl & O_ACCMODE) == O_WRONLY ||
            (m.back && ((fl & O_ACCMODE) != O_RDWR || (fl & O_APPEND))))
            return fail(EACCES);
        if (S_ISDIR(st.st_mode) || S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))
            return fail(ENODEV);
        if ((m.fd = keep_fd(fd)) < 0)
            return fail(errno);
        cap = len;
    }
    size_t sums = m.back ? page_up(len / cb.ps * sizeof(uint64_t)) : 0;
    uint8_t *data = shim_big_alloc(cap + sums, cap + sums, cb.ps, true);
    if (!data) {
        if (m.fd >= 0)
            close(m.fd);
        return fail(ENOMEM);
    }
    m.data = m.lo = m.used = (uintptr_t)data; /* nothing live before: refill reads the file */
    m.hi = m.data + len;
    m.end = m.data + cap;
    int err = m.file ? refill(&m, m.lo, m.hi) : 0;
    m.used = m.hi;
    if (m.back) {
        m.sums = (uint64_t *)(data + cap);
        for (size_t i = 0; i < len / cb.ps; i++)
            m.sums[i] = sum(m.data + i * cb.ps);
    }
    struct maps *t = maps();
    if (!err) {
        cables_lock(&t->lock);
        err = add(t, &m) ? 0 : ENOMEM;
        cables_unlock(&t->lock);
    }
    if (err) {
        if (m.fd >= 0)
            close(m.fd);
        shim_big_free(data);
        return fail(err == EISDIR ? ENODEV : err);
    }
    return data;
}

/* A call on [a, a + len) made here, not by the kernel: a range of the GAS,
 * in a program whose mappings are (*t), with the communication thread up.
 * The call acts as an application thread's (*was: the flag to restore). */
static bool ours(uintptr_t a, size_t len, struct maps **t, bool *was)
{
    if (cb.forked) /* a child of fork: its private copy, libc's */
        return false;
    if (!cb_in_gas(a) && !(len && len - 1 <= UINTPTR_MAX - a && cb_in_gas(a + len - 1)))
        return false;
    *t = maps();
    *was = cb_app_thread;
    cb_app_thread = true;
    return true;
}

static bool usable(struct maps *t) { return t && !atomic_load(&cb.comm_down); }

static int done(bool was, int err)
{
    cb_app_thread = was;
    if (err) {
        errno = err;
        return -1;
    }
    return 0;
}

/* a range [a, a + len) of whole pages from a: EINVAL if not (*e: its end) */
static int range(uintptr_t a, size_t len, uintptr_t *e)
{
    if (a % cb.ps || len > UINTPTR_MAX - cb.ps - a)
        return EINVAL;
    *e = a + page_up(len);
    return 0;
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    uintptr_t a = (uintptr_t)addr, e;
    bool fixed = flags & (MAP_FIXED | MAP_FIXED_NOREPLACE), file = !(flags & MAP_ANONYMOUS), was;
    struct maps *t;
    if (fixed && ours(a, len, &t, &was)) { /* pages of a mapping, mapped anew */
        struct map *m = NULL;
        int err = len == 0 || range(a, len, &e) ? EINVAL : (flags & MAP_FIXED_NOREPLACE) ? EEXIST : 0;
        if (!err && !usable(t))
            err = EINVAL;
        if (!err) {
            cables_lock(&t->lock);
            m = find(t, a);
            if (!m || e > m->hi || (prot & PROT_EXEC) || file != m->file ||
                (file && m->off + (off_t)(a - m->data) != off))
                err = EINVAL; /* not one mapping, or another file */
            else
                err = refill(m, a, e);
            cables_unlock(&t->lock);
        }
        done(was, err);
        return err ? MAP_FAILED : addr;
    }
    bool node_fd = file && (shim_std_own(fd) || shim_local_fd(fd)); /* this node's own */
    if (!cb_app_thread || fixed || !maps() || (prot & PROT_EXEC) || (flags & MAP_32BIT) || node_fd)
        return cb.self == 0 || !file || fixed || node_fd || !cb_app_thread
                   ? REAL(mmap)(addr, len, prot, flags, fd, off)
                   : fail(ENOTSUP); /* the master's descriptor: not this node's */
    if (len == 0 || len > SIZE_MAX / 2 || (file && (off < 0 || (size_t)off % cb.ps)))
        return fail(EINVAL);
    len = page_up(len);
    return map_block(len, len, prot, flags, fd, off);
}

void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
    __attribute__((alias("mmap")));

int munmap(void *addr, size_t len)
{
    uintptr_t a = (uintptr_t)addr, e;
    struct maps *t;
    bool was;
    if (!ours(a, len, &t, &was))
        return REAL(munmap)(addr, len);
    int err = len == 0 ? EINVAL : range(a, len, &e);
    if (err || !usable(t))
        return done(was, err); /* GAS not mapped (malloc's, a stack): nothing */
    cables_lock(&t->lock);
    for (uint32_t i = 0; i < t->n;) {
        struct map *m = &t->tab[i];
        uintptr_t lo, hi;
        if (!overlap(m, a, e, &lo, &hi)) {
            i++;
            continue;
        }
        int wb = write_back(m, lo, hi);
        if (!err)
            err = wb;
        if (lo == m->lo && hi == m->hi) {
            drop(t, m); /* entry i is another now */
            continue;
        }
        if (lo == m->lo)
            m->lo = hi; /* its head */
        else if (hi == m->hi)
            m->hi = lo; /* its tail */
        i++;          /* else its middle: kept until the mapping goes */
    }
    cables_unlock(&t->lock);
    return done(was, err);
}

void *mremap(void *old, size_t oldlen, size_t len, int flags, ...)
{
    uintptr_t a = (uintptr_t)old, oe;
    struct maps *t;
    bool was;
    if (!ours(a, oldlen, &t, &was)) {
        void *to = NULL;
        if (flags & MREMAP_FIXED) {
            va_list ap;
            va_start(ap, flags);
            to = va_arg(ap, void *);
            va_end(ap);
        }
        return REAL(mremap)(old, oldlen, len, flags, to);
    }
    int err = range(a, oldlen, &oe);
    if (!err && (len == 0 || len > SIZE_MAX / 4 || (flags & ~MREMAP_MAYMOVE)))
        err = EINVAL;
    if (!err && !usable(t))
        err = EFAULT;
    if (err) {
        done(was, err);
        return MAP_FAILED;
    }
    uintptr_t e = a + page_up(len);
    cables_lock(&t->lock);
    struct map *m = find(t, a);
    struct map copy;
    if (!m || oe > m->hi) {
        err = EFAULT;
    } else if (e <= oe) { /* shrinks: its end is unmapped (below) */
    } else if (oe == m->hi && e <= m->end) { /* grows in place */
        uintptr_t clear = e < m->used ? e : m->used;
        err = m->hi < clear ? refill(m, m->hi, clear) : 0;
        if (!err && clear < e && m->file)
            err = refill(m, clear, e);
        if (!err) {
            m->hi = e;
            m->used = e > m->used ? e : m->used;
        }
    } else if (!(flags & MREMAP_MAYMOVE)) {
        err = ENOMEM;
    } else {
        copy = *m;
        m = NULL; /* moves (below) */
    }
    cables_unlock(&t->lock);
    void *to = old;
    if (!err && e < oe)
        err = munmap((void *)e, oe - e) ? errno : 0;
    else if (!err && !m) {
        /* a new mapping, twice the size so that growing on costs a copy a
         * doubling, with what the old one holds, which then goes */
        off_t off = copy.off + (off_t)(a - copy.data);
        int prot = PROT_READ | (copy.back ? PROT_WRITE : 0);
        int mflags = (copy.shared ? MAP_SHARED : MAP_PRIVATE) | (copy.file ? 0 : MAP_ANONYMOUS);
        size_t n = e - a;
        to = map_block(n, copy.file ? n : 2 * n, prot, mflags, copy.fd, copy.file ? off : 0);
        if (to == MAP_FAILED) {
            err = errno;
        } else {
            memcpy(to, old, oe - a);
            if (munmap(old, oe - a)) {
                err = errno;
                munmap(to, n);
            }
        }
    }
    done(was, err);
    return err ? MAP_FAILED : to;
}

int mprotect(void *addr, size_t len, int prot)
{
    uintptr_t a = (uintptr_t)addr;
    struct maps *t;
    bool was;
    if (!ours(a, len, &t, &was))
        return REAL(mprotect)(addr, len, prot);
    return done(was, a % cb.ps ? EINVAL : (prot & PROT_EXEC) ? EACCES : 0);
}

int madvise(void *addr, size_t len, int advice)
{
    uintptr_t a = (uintptr_t)addr, e;
    struct maps *t;
    bool was;
    if ((!cb_app_thread && cb_heap_owner(a) >= 0) || !ours(a, len, &t, &was))
        return REAL(madvise)(addr, len, advice); /* a heap arena's (memkind's purges) */
    int err = range(a, len, &e);
    if (err || (advice != MADV_DONTNEED && advice != MADV_REMOVE) || !usable(t))
        return done(was, err);
    cables_lock(&t->lock);
    for (uint32_t i = 0; i < t->n && !err; i++) {
        uintptr_t lo, hi;
        if (overlap(&t->tab[i], a, e, &lo, &hi) && !t->tab[i].shared)
            err = refill(&t->tab[i], lo, hi);
    }
    cables_unlock(&t->lock);
    return done(was, err);
}

int msync(void *addr, size_t len, int flags)
{
    uintptr_t a = (uintptr_t)addr, e;
    struct maps *t;
    bool was;
    if (!ours(a, len, &t, &was))
        return REAL(msync)(addr, len, flags);
    int err = range(a, len, &e);
    if (!err && (flags & MS_ASYNC) && (flags & MS_SYNC))
        err = EINVAL;
    if (err || !usable(t))
        return done(was, err);
    cables_lock(&t->lock);
    for (uint32_t i = 0; i < t->n && !err; i++) {
        uintptr_t lo, hi;
        if (overlap(&t->tab[i], a, e, &lo, &hi))
            err = write_back(&t->tab[i], lo, hi);
    }
    cables_unlock(&t->lock);
    return done(was, err);
}

/* The program ends (the master, cb_node_finish, every node still up): its
 * shared writable file mappings still mapped are written back, as the
 * kernel writes a file's pages back after the process. */
void cb_maps_flush(void)
{
    struct maps *t = maps();
    if (!t || !usable(t))
        return;
    bool was = cb_app_thread;
    cb_app_thread = true;
    cables_lock(&t->lock);
    for (uint32_t i = 0; i < t->n; i++) {
        int err = write_back(&t->tab[i], t->tab[i].lo, t->tab[i].hi);
        if (err)
            fprintf(stderr, "cables: writing a shared file mapping back at exit failed: %s\n",
                    strerror(err));
    }
    cables_unlock(&t->lock);
    cb_app_thread = was;
}
