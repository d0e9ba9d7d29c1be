/* mmap.c: the program's memory mappings.  A mapping is the process's, so
 * every node's: what an application thread maps with mmap is a big block
 * of the GAS (heap.c), homed by first touch, as glibc's malloc serves big
 * blocks with mmap.  Before, it was the mapping node's alone, and as the
 * nodes run with the same address layout a thread of another node that
 * followed a pointer into it wrote into whatever that node had there (its
 * runtime's memory).  The runtime's own calls are the kernel's (cb_mmap).
 *
 * - Anonymous mappings, shared or private, of any protection but PROT_EXEC:
 *   zeroed pages, taking memory as they are touched.
 * - A file mapping is the file's bytes read into such a block when it is
 *   mapped (the descriptor is the process's: the master's, remote.c).
 *   MAP_SHARED with PROT_WRITE writes the mapping's bytes back to the file
 *   at msync, at munmap and when the program ends (a descriptor of the
 *   file is kept meanwhile, as the kernel keeps the file); such writes
 *   reach the file then, not at once, and neither mapping sees the file
 *   change after it was mapped.
 * - munmap of the whole mapping frees it, of its first or its last pages
 *   trims it (an allocator aligning a block maps more and trims both ends);
 *   pages in its middle stay until the rest is unmapped.
 * - mremap shrinks or grows in place when it can, else moves (a copy).
 * - madvise DONTNEED (or REMOVE) reads back zeros, or the file's bytes for a
 *   private file mapping; other advice is taken and ignored.  mprotect is
 *   not applied in the GAS (the runtime's page protections are the
 *   coherence state): it answers 0, and EACCES for PROT_EXEC.
 * - Mappings at a fixed address outside the GAS, of PROT_EXEC, MAP_32BIT,
 *   or of a descriptor of the node's own (/proc, /sys), are the node's,
 *   made by libc as before; at a fixed address in the GAS only inside a
 *   block mapped here (its pages then read back as newly mapped).
 *
 * A block's header page (heap.c) also holds a struct map: its live range,
 * the file's; a forwarder written before the live range's first page after
 * a trim of its head points to it.  The mapping node keeps an index of its
 * blocks (tsearch), so that a munmap inside one finds its header; from
 * another node only the whole block, or its head, is found (the rest stays
 * mapped until then). */
#include <errno.h>
#include <fcntl.h>
#include <search.h>
#include <stdarg.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shim.h"

#define MAP_MAGIC 0x63626c736d6d6170ull /* "cblsmmap" */

struct map {
    size_t heap[3];      /* heap.c's: size, range, capacity */
    uint64_t magic;      /* MAP_MAGIC ^ the address after this page */
    struct map *real;    /* a forwarder: the block's header; NULL in the header */
    uintptr_t lo, hi;    /* the live range */
    uintptr_t used;      /* the end of what was ever live (regrowth clears below) */
    uintptr_t data;      /* the block's first byte */
    int fd;              /* MAP_SHARED with PROT_WRITE: a descriptor of the file, else -1 */
    bool file;           /* a file mapping (fd, when written back; off) */
    bool shared;
    off_t off;           /* the file offset of data */
    int src;             /* a private file mapping: a descriptor to read again, else -1 */
    cables_lock_t lock;
    struct map *next, *prev; /* written back at exit: the program's list */
};

/* what the program's list of mappings written back at exit hangs from: the
 * program's shared static data (cb_program) */
struct maps_root {
    cables_lock_t lock;
    struct map *first;
};

static struct maps_root *root(void)
{
    _Static_assert(sizeof(struct maps_root) <= CB_PROGRAM_BYTES, "cb_program too small");
    return (struct maps_root *)cb_program();
}

/* ---- this node's index of the blocks it mapped: [data, data + cap) ---- */
struct ent { uintptr_t lo, hi; struct map *m; };
static void *index_tree;
static cb_mutex_t index_mu = CB_MUTEX_INIT;

static int ent_cmp(const void *a, const void *b)
{
    const struct ent *x = a, *y = b;
    return x->hi <= y->lo ? -1 : y->hi <= x->lo ? 1 : 0;
}

static void index_put(struct map *m)
{
    struct ent *e;
    AS_RUNTIME(e = malloc(sizeof *e));
    if (!e)
        return; /* found from its header only */
    *e = (struct ent){ m->data, m->data + m->heap[2], m };
    cb_mutex_lock(&index_mu);
    void *r;
    AS_RUNTIME(r = tsearch(e, &index_tree, ent_cmp));
    if (r && *(struct ent **)r != e) { /* a stale entry: its block was freed elsewhere */
        struct ent *old = *(struct ent **)r;
        AS_RUNTIME(tdelete(old, &index_tree, ent_cmp); free(old); tsearch(e, &index_tree, ent_cmp));
    }
    cb_mutex_unlock(&index_mu);
}

static void index_drop(uintptr_t data)
{
    struct ent key = { data, data + 1, NULL };
    cb_mutex_lock(&index_mu);
    void *r;
    AS_RUNTIME(r = tfind(&key, &index_tree, ent_cmp));
    if (r) {
        struct ent *e = *(struct ent **)r;
        AS_RUNTIME(tdelete(e, &index_tree, ent_cmp); free(e));
    }
    cb_mutex_unlock(&index_mu);
}

static bool header_at(struct map *m) { return m->magic == (MAP_MAGIC ^ ((uintptr_t)m + cb.ps)); }

/* The header of the block whose live range holds the page at a, or NULL */
static struct map *find(uintptr_t a)
{
    struct ent key = { a, a + 1, NULL };
    struct map *m = NULL;
    cb_mutex_lock(&index_mu);
    void *r;
    AS_RUNTIME(r = tfind(&key, &index_tree, ent_cmp));
    if (r)
        m = (*(struct ent **)r)->m;
    cb_mutex_unlock(&index_mu);
    if (m && !(header_at(m) && !m->real)) {
        index_drop(a); /* freed by another node, the range used again since */
        m = NULL;
    }
    if (!m && a - cb.ps >= CB_GAS_BASE && cb_in_gas(a - cb.ps)) {
        struct map *h = (struct map *)(a - cb.ps); /* the header, or a forwarder */
        if (header_at(h))
            m = h->real ? h->real : h;
        if (m && !(header_at(m) && !m->real))
            m = NULL;
    }
    return m && m->lo <= a && a < m->hi ? m : NULL;
}

static size_t page_up(size_t n) { return (n + cb.ps - 1) & ~(cb.ps - 1); }

/* [a, e) of m reads as newly mapped: zeros, the file's bytes for a private
 * file mapping; a shared one's pages are the file's already.  0, or an
 * errno. */
static int refill(struct map *m, uintptr_t a, uintptr_t e)
{
    int fd = m->src >= 0 ? m->src : m->fd;
    if (m->file && m->shared && a < m->used)
        return 0;
    if (!m->file) {
        memset((void *)a, 0, e - a);
        return 0;
    }
    while (a < e) {
        size_t n = e - a < (1u << 20) ? e - a : 1u << 20; /* a remote call's bytes at most */
        ssize_t r = pread(fd, (void *)a, n, m->off + (off_t)(a - m->data));
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

/* The file gets [a, e) of a shared writable mapping.  0, or an errno. */
static int write_back(struct map *m, uintptr_t a, uintptr_t e)
{
    if (m->fd < 0)
        return 0;
    while (a < e) {
        size_t n = e - a < (1u << 20) ? e - a : 1u << 20;
        ssize_t r = pwrite(m->fd, (const void *)a, n, m->off + (off_t)(a - m->data));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return r < 0 ? errno : EIO;
        a += (uintptr_t)r;
    }
    return 0;
}

static void list_add(struct map *m)
{
    struct maps_root *r = root();
    cables_lock(&r->lock);
    m->next = r->first;
    m->prev = NULL;
    if (r->first)
        r->first->prev = m;
    r->first = m;
    cables_unlock(&r->lock);
}

static void list_del(struct map *m)
{
    struct maps_root *r = root();
    cables_lock(&r->lock);
    if (m->prev)
        m->prev->next = m->next;
    else
        r->first = m->next;
    if (m->next)
        m->next->prev = m->prev;
    cables_unlock(&r->lock);
}

/* The whole block goes (its header locked by the caller, then dropped). */
static int unmap_all(struct map *m)
{
    int err = write_back(m, m->lo, m->hi);
    if (m->fd >= 0) {
        list_del(m);
        close(m->fd);
    }
    if (m->src >= 0)
        close(m->src);
    if (m->lo != m->data) /* its forwarder */
        ((struct map *)(m->lo - cb.ps))->magic = 0;
    m->magic = 0;
    uintptr_t data = m->data;
    cables_unlock(&m->lock);
    index_drop(data);
    shim_big_free((void *)data);
    return err;
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

static void *map_block(size_t len, size_t cap, int prot, int flags, int fd, off_t off)
{
    bool file = !(flags & MAP_ANONYMOUS), shared = (flags & MAP_TYPE) != MAP_PRIVATE;
    bool back = file && shared && (prot & PROT_WRITE);
    int keep = -1, src = -1;
    if (file) {
        int fl = fcntl(fd, F_GETFL);
        struct stat st;
        if (fl < 0 || fstat(fd, &st))
            return fail(EBADF);
        if ((fl & O_ACCMODE) == O_WRONLY || (back && (fl & O_ACCMODE) != O_RDWR))
            return fail(EACCES);
        if (S_ISDIR(st.st_mode) || S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))
            return fail(ENODEV);
        if (back && !root())
            return fail(ENOTSUP); /* no list to write it back from at exit */
        if ((back ? (keep = keep_fd(fd)) : (src = keep_fd(fd))) < 0)
            return fail(errno);
    }
    uint8_t *data = shim_big_alloc(len, cap, cb.ps, true);
    if (!data) {
        if (keep >= 0)
            close(keep);
        if (src >= 0)
            close(src);
        return fail(ENOMEM);
    }
    struct map *m = (struct map *)(data - cb.ps);
    m->real = NULL;
    m->data = m->lo = (uintptr_t)data;
    m->hi = (uintptr_t)data + len;
    m->used = m->lo; /* nothing live before: refill reads the file */
    m->fd = keep;
    m->src = src;
    m->file = file;
    m->shared = shared;
    m->off = off;
    memset(&m->lock, 0, sizeof m->lock);
    if (file) {
        int err = refill(m, m->lo, m->hi);
        if (err) {
            if (keep >= 0)
                close(keep);
            if (src >= 0)
                close(src);
            shim_big_free(data);
            return fail(err == EISDIR ? ENODEV : err);
        }
    }
    m->used = m->hi;
    if (back)
        list_add(m);
    m->magic = MAP_MAGIC ^ (uintptr_t)data;
    index_put(m);
    return data;
}

static bool gas_range(uintptr_t a, size_t len)
{
    return cb_in_gas(a) || (len && cb_in_gas(a + len - 1));
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    uintptr_t a = (uintptr_t)addr;
    bool fixed = flags & (MAP_FIXED | MAP_FIXED_NOREPLACE);
    if (!cb_app_thread || (fixed && !gas_range(a, len)))
        return REAL(mmap)(addr, len, prot, flags, fd, off);
    bool file = !(flags & MAP_ANONYMOUS);
    if (len == 0 || len > SIZE_MAX - cb.ps || (file && (off < 0 || (size_t)off % cb.ps)) ||
        (fixed && a % cb.ps))
        return fail(EINVAL);
    if (fixed) { /* pages of a block mapped here anew */
        if (flags & MAP_FIXED_NOREPLACE)
            return fail(EEXIST);
        struct map *m = find(a);
        uintptr_t e = a + page_up(len);
        if (!m || e > m->hi || (prot & PROT_EXEC) || file != m->file ||
            (file && m->off + (off_t)(a - m->data) != off))
            return fail(EINVAL); /* not one of ours, or another file */
        cables_lock(&m->lock);
        int err = refill(m, a, e);
        cables_unlock(&m->lock);
        return err ? fail(err) : addr;
    }
    if ((prot & PROT_EXEC) || (flags & MAP_32BIT) || (file && shim_local_fd(fd)))
        return cb.self == 0 || !file || shim_local_fd(fd)
                   ? REAL(mmap)(addr, len, prot, flags, fd, off)
                   : fail(ENOTSUP); /* the master's descriptor: not this node's */
    len = page_up(len);
    return map_block(len, len, prot, flags, fd, off);
}

void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
    __attribute__((alias("mmap")));

int munmap(void *addr, size_t len)
{
    uintptr_t a = (uintptr_t)addr;
    if (!cb_app_thread || !gas_range(a, len))
        return REAL(munmap)(addr, len);
    if (a % cb.ps || len == 0) {
        errno = EINVAL;
        return -1;
    }
    uintptr_t e = a + page_up(len);
    struct map *m = find(a);
    if (!m)
        return 0; /* not a mapping's (the GAS stays), or its middle seen from afar */
    cables_lock(&m->lock);
    int err = 0;
    if (a <= m->lo && e >= m->hi) {
        err = unmap_all(m); /* unlocks */
    } else {
        err = write_back(m, a > m->lo ? a : m->lo, e < m->hi ? e : m->hi);
        if (a <= m->lo) { /* its head: the live range starts after a forwarder */
            m->lo = e;
            struct map *f = (struct map *)(e - cb.ps);
            if (f != m) {
                f->real = m;
                f->magic = MAP_MAGIC ^ e;
            }
        } else if (e >= m->hi) {
            m->hi = a;
        } /* else its middle: kept until the block goes */
        cables_unlock(&m->lock);
    }
    if (err) {
        errno = err;
        return -1;
    }
    return 0;
}

void *mremap(void *old, size_t oldlen, size_t len, int flags, ...)
{
    uintptr_t a = (uintptr_t)old;
    if (!cb_app_thread || !gas_range(a, oldlen)) {
        void *to = NULL;
        if (flags & MREMAP_FIXED) {
            va_list ap;
            va_start(ap, flags);
            to = va_arg(ap, void *);
            va_end(ap);
        }
        return REAL(mremap)(old, oldlen, len, flags, to);
    }
    struct map *m = a % cb.ps ? NULL : find(a);
    size_t o = page_up(oldlen), n = page_up(len);
    if (!m || len == 0 || len > SIZE_MAX - cb.ps || (flags & ~MREMAP_MAYMOVE) ||
        a + o > m->hi)
        return fail(m ? EINVAL : EFAULT);
    cables_lock(&m->lock);
    if (n <= o) { /* shrinks: its end is unmapped */
        uintptr_t e = a + n;
        cables_unlock(&m->lock);
        if (n < o && munmap((void *)e, o - n))
            return MAP_FAILED;
        return old;
    }
    if (a + o == m->hi && a + n <= m->data + m->heap[2]) { /* grows in place */
        uintptr_t hi = m->hi, e = a + n, clear = e < m->used ? e : m->used;
        int err = hi < clear ? refill(m, hi, clear) : 0;
        if (!err && m->file && clear < e)
            err = refill(m, clear, e);
        if (!err) {
            m->hi = e;
            if (e > m->used)
                m->used = e;
        }
        cables_unlock(&m->lock);
        return err ? fail(err) : old;
    }
    bool file = m->file;
    int fd = m->fd >= 0 ? m->fd : m->src;
    off_t off = m->off + (off_t)(a - m->data);
    int prot = PROT_READ | (m->fd >= 0 ? PROT_WRITE : 0);
    int mflags = (m->shared ? MAP_SHARED : MAP_PRIVATE) | (file ? 0 : MAP_ANONYMOUS);
    cables_unlock(&m->lock);
    if (!(flags & MREMAP_MAYMOVE))
        return fail(ENOMEM);
    /* a new block twice the size, so that growing on costs a copy per doubling */
    void *to = map_block(n, n > SIZE_MAX / 4 ? n : 2 * n, prot, mflags, file ? fd : -1,
                         file ? off : 0);
    if (to == MAP_FAILED)
        return MAP_FAILED;
    memcpy(to, old, o);
    if (munmap(old, o)) {
        int err = errno;
        munmap(to, n);
        return fail(err);
    }
    return to;
}

int mprotect(void *addr, size_t len, int prot)
{
    uintptr_t a = (uintptr_t)addr;
    if (!cb_app_thread || !gas_range(a, len))
        return REAL(mprotect)(addr, len, prot);
    if (a % cb.ps || (prot & PROT_EXEC)) {
        errno = a % cb.ps ? EINVAL : EACCES;
        return -1;
    }
    return 0;
}

int madvise(void *addr, size_t len, int advice)
{
    uintptr_t a = (uintptr_t)addr;
    if (!cb_app_thread || !gas_range(a, len))
        return REAL(madvise)(addr, len, advice);
    if (a % cb.ps) {
        errno = EINVAL;
        return -1;
    }
    if (advice != MADV_DONTNEED && advice != MADV_REMOVE)
        return 0;
    uintptr_t e = a + page_up(len);
    struct map *m = find(a);
    if (m && m->shared && m->file)
        return 0; /* the file's pages: they keep their bytes */
    if (m && e > m->hi)
        e = m->hi;
    int err = 0;
    if (m) {
        cables_lock(&m->lock);
        err = refill(m, a, e);
        cables_unlock(&m->lock);
    } else {
        memset(addr, 0, e - a); /* private memory (malloc's): zeros, as the kernel's */
    }
    if (err) {
        errno = err;
        return -1;
    }
    return 0;
}

int msync(void *addr, size_t len, int flags)
{
    uintptr_t a = (uintptr_t)addr;
    if (!cb_app_thread || !gas_range(a, len))
        return REAL(msync)(addr, len, flags);
    if (a % cb.ps || (flags & MS_ASYNC && flags & MS_SYNC)) {
        errno = EINVAL;
        return -1;
    }
    struct map *m = find(a);
    if (!m)
        return 0;
    uintptr_t e = a + page_up(len);
    cables_lock(&m->lock);
    int err = write_back(m, a, e < m->hi ? e : m->hi);
    cables_unlock(&m->lock);
    if (err) {
        errno = err;
        return -1;
    }
    return 0;
}

/* The program ends (the master, cb_node_finish): the shared writable file
 * mappings still mapped are written back, as the kernel writes a file's
 * dirty pages back after the process. */
void cb_maps_flush(void)
{
    struct maps_root *r = root();
    if (!r || !cb_app_thread)
        return;
    cables_lock(&r->lock);
    for (struct map *m = r->first; m; m = m->next) {
        int err = write_back(m, m->lo, m->hi);
        if (err)
            fprintf(stderr, "cables: writing a shared file mapping back at exit failed: %s\n",
                    strerror(err));
    }
    cables_unlock(&r->lock);
}
