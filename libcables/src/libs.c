/* libs.c: the libraries a program loads with dlopen are the process's, so
 * every node process's, at the same addresses (a function pointer means
 * the same thing on every node, as for the program's own code).  Like the
 * libraries linked at the start, each node has its own copy of their data.
 *
 * A dlopen is made at the master (proc.c: one process change at a time),
 * then on every other node up before it returns, and replayed, with the
 * dlcloses, to each node attached later.  The kernel places what ld.so maps
 * (mmap with no address): top-down, in the highest free gap that fits.  So
 * the master loads into a window every node reserves at the same address
 * (CB_LIBS_BASE), with the free gaps above it filled for the while (PROT_NONE
 * mappings, taken away after); another node makes free exactly the ranges
 * the master's new objects took, fills every other gap above them, and its
 * ld.so's mappings, made in the same order, can go nowhere else.  Each node
 * checks that its new objects are where the master's are: one that is not
 * (a mapping made meanwhile by another thread took the place, or a
 * dependency already loaded on one node only) fails the dlopen everywhere,
 * with a message naming the node and the library.
 *
 * A handle is the master's (the link map ld.so allocated there); every other
 * node keeps its own for it, which dlsym, dlclose and dlinfo take there
 * (cb_libs_local). */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

#define LIBS_SIZE (64ull << 30)
#define LIBS_BASE (CB_GAS_BASE - LIBS_SIZE)
#define LIBS_HOLE (1ull << 30) /* the most one load may take in the window */

static bool window;          /* reserved here */
static uintptr_t libs_top;    /* the window's part below is free for libraries */
static cb_mutex_t libs_mu = CB_MUTEX_INIT; /* the maps above, one load at a time */

/* the master's handles and this node's (other nodes) */
typedef struct {
    uint64_t master;
    void *local;
} handle_t;
static handle_t *handles;
static size_t nhandles, cap_handles;

/* master: every open and close, in order, for the nodes attached later */
typedef struct {
    int kind; /* 0 open (payload), 1 close (handle) */
    uint64_t handle;
    void *payload;
    size_t len;
} rec_t;
static rec_t *recs;
static size_t nrecs, cap_recs;

static int (*libc_dlclose)(void *);
static void *(*libc_dlopen)(const char *, int);
static int (*libc_dlinfo)(void *, int, void *); /* (the shim's takes libs_mu) */


/* ---- this process's address space ---- */

typedef struct {
    uintptr_t lo, hi;
} range_t;

typedef struct {
    range_t *r;
    size_t n, cap;
} ranges_t;

static void ranges_add(ranges_t *s, uintptr_t lo, uintptr_t hi)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 64;
        range_t *r = realloc(s->r, cap * sizeof *r);
        if (!r)
            cb_die("out of memory for the address space's map");
        s->r = r, s->cap = cap;
    }
    s->r[s->n++] = (range_t){ lo, hi };
}

/* the mappings, in order, from /proc/self/maps; *top: the end of the
 * highest below the stack (the kernel places nothing above it) */
static ranges_t mappings(uintptr_t *top)
{
    ranges_t m = { 0 };
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        cb_die("cannot read /proc/self/maps: %s", strerror(errno));
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    for (ssize_t r = 1; buf && r > 0;) {
        if (cap - len < 4096) {
            char *b = realloc(buf, cap *= 2);
            if (!b)
                free(buf);
            buf = b;
            if (!buf)
                break;
        }
        r = read(fd, buf + len, cap - len - 1);
        if (r > 0)
            len += (size_t)r;
    }
    close(fd);
    if (!buf)
        cb_die("out of memory for the address space's map");
    buf[len] = 0;
    *top = 0;
    for (char *l = buf; *l;) {
        char *end = strchr(l, '\n');
        if (end)
            *end = 0;
        unsigned long lo, hi;
        if (sscanf(l, "%lx-%lx", &lo, &hi) == 2) {
            ranges_add(&m, lo, hi);
            if (!strstr(l, "[stack]") && !strstr(l, "[vsyscall]") && hi < (1ull << 47) && hi > *top)
                *top = hi;
        }
        if (!end)
            break;
        l = end + 1;
    }
    free(buf);
    return m;
}

/* the gaps in [lo, hi) */
static ranges_t gaps(const ranges_t *m, uintptr_t lo, uintptr_t hi)
{
    ranges_t g = { 0 };
    uintptr_t at = lo;
    for (size_t i = 0; i < m->n && at < hi; i++) {
        if (m->r[i].hi <= at)
            continue;
        if (m->r[i].lo > at)
            ranges_add(&g, at, m->r[i].lo < hi ? m->r[i].lo : hi);
        at = m->r[i].hi;
    }
    if (at < hi)
        ranges_add(&g, at, hi);
    return g;
}

static bool reserve(uintptr_t lo, uintptr_t hi)
{
    return cb_mmap((void *)lo, hi - lo, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0) ==
           (void *)lo;
}

/* the window's parts this node reserved (PROT_NONE, ours): only those are
 * ever unmapped for a load, never a mapping another thread made there */
static ranges_t owned;

/* the parts of [lo, hi) that are ours unmapped; whether all of it was */
static bool own_release(uintptr_t lo, uintptr_t hi)
{
    uintptr_t covered = 0;
    for (size_t i = 0; i < owned.n;) {
        range_t r = owned.r[i];
        uintptr_t a = r.lo > lo ? r.lo : lo, b = r.hi < hi ? r.hi : hi;
        if (a >= b) {
            i++;
            continue;
        }
        cb_munmap((void *)a, b - a);
        covered += b - a;
        owned.r[i] = owned.r[--owned.n]; /* what is left of it, kept */
        if (r.lo < a)
            ranges_add(&owned, r.lo, a);
        if (b < r.hi)
            ranges_add(&owned, b, r.hi);
    }
    return covered == hi - lo;
}

/* the free parts of [lo, hi) in the window reserved (ours) */
static void window_keep(uintptr_t lo, uintptr_t hi)
{
    if (!window)
        return;
    if (lo < LIBS_BASE)
        lo = LIBS_BASE;
    if (hi > LIBS_BASE + LIBS_SIZE)
        hi = LIBS_BASE + LIBS_SIZE;
    if (lo >= hi)
        return;
    uintptr_t top;
    ranges_t m = mappings(&top), g = gaps(&m, lo, hi);
    for (size_t i = 0; i < g.n; i++)
        if (reserve(g.r[i].lo, g.r[i].hi))
            ranges_add(&owned, g.r[i].lo, g.r[i].hi);
    free(m.r);
    free(g.r);
}

void cb_libs_init(void)
{
    libc_dlopen = (void *(*)(const char *, int))dlsym(RTLD_NEXT, "dlopen");
    libc_dlclose = (int (*)(void *))dlsym(RTLD_NEXT, "dlclose");
    libc_dlinfo = (int (*)(void *, int, void *))dlsym(RTLD_NEXT, "dlinfo");
    if (!libc_dlopen || !libc_dlclose || !libc_dlinfo)
        cb_die("cannot find libc's dlopen, dlclose or dlinfo");
    void *p = cb_mmap((void *)LIBS_BASE, LIBS_SIZE, PROT_NONE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
    window = p == (void *)LIBS_BASE;
    if (window)
        ranges_add(&owned, LIBS_BASE, LIBS_BASE + LIBS_SIZE);
    else if (p != MAP_FAILED)
        cb_munmap(p, LIBS_SIZE);
    libs_top = LIBS_BASE + LIBS_SIZE;
}

/* ---- the objects a load adds ---- */

typedef struct {
    uint64_t addr, lo, hi; /* its load bias, and the range its segments take */
} obj_t;

static struct link_map *last_map(void)
{
    struct link_map *l = NULL;
    void *self = libc_dlopen(NULL, RTLD_LAZY | RTLD_NOLOAD);
    if (!self || libc_dlinfo(self, RTLD_DI_LINKMAP, &l) || !l)
        cb_die("cannot find the program's link map");
    libc_dlclose(self);
    while (l->l_next)
        l = l->l_next;
    return l;
}

typedef struct {
    uint64_t addr;
    obj_t *o;
} seg_arg_t;

static int seg_cb(struct dl_phdr_info *info, size_t size, void *p)
{
    (void)size;
    seg_arg_t *a = p;
    if (info->dlpi_addr != a->addr)
        return 0;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_LOAD) {
            uint64_t s = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
            uint64_t e = s + info->dlpi_phdr[i].p_memsz;
            if (s < lo)
                lo = s;
            if (e > hi)
                hi = e;
        }
    if (hi > lo) {
        uint64_t ps = (uint64_t)sysconf(_SC_PAGESIZE);
        a->o->lo = lo & ~(ps - 1);
        a->o->hi = (hi + ps - 1) & ~(ps - 1);
        return 1;
    }
    return 0;
}

/* the objects after `after` in the link chain (at most max) */
static size_t new_objects(struct link_map *after, obj_t *o, size_t max)
{
    size_t n = 0;
    for (struct link_map *l = after->l_next; l && n < max; l = l->l_next, n++) {
        o[n] = (obj_t){ .addr = l->l_addr };
        seg_arg_t a = { l->l_addr, &o[n] };
        dl_iterate_phdr(seg_cb, &a);
    }
    return n;
}

/* ---- a load, placed ---- */

#define MAX_OBJS 64

/* what a load sends: the flags, the objects, the master's handle, then
 * the path */
typedef struct {
    uint64_t handle;
    int32_t flags, nobj;
    obj_t obj[];
} load_msg_t;

/* Fill the gaps above `above`, except `holes`, then load.  A gap where a
 * mapping appeared meanwhile (another thread's) is looked at again.  The
 * fillers go after the load (each exactly where it was put). */
static void *placed_load(const char *path, int flags, uintptr_t above, const obj_t *holes,
                         size_t nholes, struct link_map **before)
{
    ranges_t fill = { 0 };
    bool again = true;
    for (int round = 0; again && round < 8; round++) {
        uintptr_t top;
        ranges_t m = mappings(&top), g = gaps(&m, above, top), parts = { 0 };
        again = false;
        for (size_t i = 0; i < g.n; i++) { /* its parts outside the holes */
            parts.n = 0;
            ranges_add(&parts, g.r[i].lo, g.r[i].hi);
            for (size_t h = 0; h < nholes; h++)
                for (size_t p = 0; p < parts.n; p++) {
                    range_t r = parts.r[p];
                    if (holes[h].hi <= r.lo || holes[h].lo >= r.hi)
                        continue;
                    parts.r[p] = (range_t){ r.lo, holes[h].lo > r.lo ? holes[h].lo : r.lo };
                    if (holes[h].hi < r.hi)
                        ranges_add(&parts, holes[h].hi, r.hi);
                }
            for (size_t p = 0; p < parts.n; p++) {
                if (parts.r[p].hi <= parts.r[p].lo)
                    continue;
                if (reserve(parts.r[p].lo, parts.r[p].hi))
                    ranges_add(&fill, parts.r[p].lo, parts.r[p].hi);
                else
                    again = true;
            }
        }
        free(m.r);
        free(g.r);
        free(parts.r);
    }
    *before = last_map();
    void *h = libc_dlopen(path, flags);
    for (size_t i = 0; i < fill.n; i++)
        cb_munmap((void *)fill.r[i].lo, fill.r[i].hi - fill.r[i].lo);
    free(fill.r);
    return h;
}

static void handle_keep(uint64_t master, void *local)
{
    cb_mutex_lock(&libs_mu);
    if (nhandles == cap_handles) {
        size_t cap = cap_handles ? 2 * cap_handles : 16;
        handle_t *n = realloc(handles, cap * sizeof *n);
        if (!n)
            cb_die("out of memory for the libraries' handles");
        handles = n, cap_handles = cap;
    }
    handles[nhandles++] = (handle_t){ master, local };
    cb_mutex_unlock(&libs_mu);
}

/* another node: the master's handle for h, this node's or the master's
 * (NULL: neither) */
void *cb_libs_cluster(void *h)
{
    void *c = NULL;
    cb_mutex_lock(&libs_mu);
    for (size_t i = nhandles; i-- > 0 && !c;)
        if (handles[i].local == h || handles[i].master == (uint64_t)(uintptr_t)h)
            c = (void *)(uintptr_t)handles[i].master;
    cb_mutex_unlock(&libs_mu);
    return c;
}

/* another node: its own handle for the master's */
void *cb_libs_local(void *master)
{
    void *l = NULL;
    cb_mutex_lock(&libs_mu);
    for (size_t i = nhandles; i-- > 0 && !l;)
        if (handles[i].master == (uint64_t)(uintptr_t)master)
            l = handles[i].local;
    cb_mutex_unlock(&libs_mu);
    return l;
}

static void record(int kind, uint64_t handle, const void *payload, size_t len)
{
    if (nrecs == cap_recs) {
        size_t cap = cap_recs ? 2 * cap_recs : 16;
        rec_t *n = realloc(recs, cap * sizeof *n);
        if (!n)
            cb_die("out of memory for the libraries' record");
        recs = n, cap_recs = cap;
    }
    void *p = NULL;
    if (len && !(p = malloc(len)))
        cb_die("out of memory for the libraries' record");
    if (len)
        memcpy(p, payload, len);
    recs[nrecs++] = (rec_t){ kind, handle, p, len };
}

/* master: load file; 0 and *handle, or an error number (ENOENT: libc's
 * dlerror says why, in this thread) and *msg (malloc'd) naming it.  The
 * payload for the other nodes in *out (malloc'd), *outlen bytes. */
int cb_libs_open(const char *file, int flags, void **handle, void **out, size_t *outlen)
{
    cb_mutex_lock(&libs_mu);
    /* a hole below what earlier loads took, made free for the kernel to
     * place in: only the highest gap that fits (a mapping another thread
     * makes meanwhile, bigger than the hole, goes below the window) */
    uintptr_t hi = libs_top, lo = hi - LIBS_BASE > LIBS_HOLE ? hi - LIBS_HOLE : LIBS_BASE;
    if (window)
        own_release(lo, hi);
    struct link_map *before;
    void *h = placed_load(file, flags, window ? hi : UINTPTR_MAX, NULL, 0, &before);
    if (!h)
        window_keep(lo, hi);
    cb_mutex_unlock(&libs_mu);
    if (!h)
        return ENOENT;
    struct link_map *l = NULL;
    char path[PATH_MAX];
    if (libc_dlinfo(h, RTLD_DI_LINKMAP, &l) || !l || !realpath(l->l_name[0] ? l->l_name : file, path)) {
        libc_dlclose(h);
        return ENOENT;
    }
    size_t plen = strlen(path) + 1;
    load_msg_t *m = malloc(sizeof *m + MAX_OBJS * sizeof(obj_t) + plen);
    if (!m) {
        libc_dlclose(h);
        return ENOMEM;
    }
    m->handle = (uint64_t)(uintptr_t)h;
    m->flags = flags;
    m->nobj = (int32_t)new_objects(before, m->obj, MAX_OBJS);
    cb_mutex_lock(&libs_mu);
    for (int i = 0; i < m->nobj; i++)
        if (m->obj[i].lo < libs_top && m->obj[i].lo >= lo)
            libs_top = m->obj[i].lo;
    window_keep(lo, hi);
    cb_mutex_unlock(&libs_mu);
    size_t len = sizeof *m + (size_t)m->nobj * sizeof(obj_t);
    memmove((char *)m + len, path, plen);
    *handle = h;
    *out = m;
    *outlen = len + plen;
    record(0, m->handle, m, *outlen);
    return 0;
}

/* master: the other nodes failed to follow: undone here */
static void window_keep_all(void)
{
    cb_mutex_lock(&libs_mu);
    window_keep(LIBS_BASE, LIBS_BASE + LIBS_SIZE);
    cb_mutex_unlock(&libs_mu);
}

void cb_libs_undo(void *handle)
{
    libc_dlclose(handle);
    window_keep_all();
    record(1, (uint64_t)(uintptr_t)handle, NULL, 0);
}

int cb_libs_close(void *handle)
{
    int rc = libc_dlclose(handle) ? EINVAL : 0;
    window_keep_all();
    if (!rc)
        record(1, (uint64_t)(uintptr_t)handle, NULL, 0);
    return rc;
}

/* another node: the master's load, made here (P_DLOPEN); 0 or an error
 * number, having said why */
int cb_libs_apply_open(const void *p, size_t len)
{
    const load_msg_t *m = p;
    if (len < sizeof *m || m->nobj < 0 || m->nobj > MAX_OBJS ||
        len <= sizeof *m + (size_t)m->nobj * sizeof(obj_t) || ((const char *)p)[len - 1])
        cb_die("node %d: malformed library load (%zu bytes)", cb.self, len);
    const char *path = (const char *)&m->obj[m->nobj];
    uintptr_t above = UINTPTR_MAX;
    cb_mutex_lock(&libs_mu);
    /* the holes made free (in the window: where this node reserved them) */
    for (int i = 0; i < m->nobj; i++) {
        if (m->obj[i].lo < above)
            above = m->obj[i].lo;
        if (window && m->obj[i].lo >= LIBS_BASE && m->obj[i].hi <= LIBS_BASE + LIBS_SIZE)
            own_release(m->obj[i].lo, m->obj[i].hi);
    }
    struct link_map *before;
    void *h = placed_load(path, m->flags, m->nobj ? above : UINTPTR_MAX, m->obj, (size_t)m->nobj, &before);
    obj_t got[MAX_OBJS];
    size_t n = h ? new_objects(before, got, MAX_OBJS) : 0;
    bool same = h && n == (size_t)m->nobj;
    for (size_t i = 0; same && i < n; i++)
        same = got[i].addr == m->obj[i].addr;
    if (!same && h)
        libc_dlclose(h);
    for (int i = 0; i < m->nobj; i++) /* (what the load did not take) */
        window_keep(m->obj[i].lo, m->obj[i].hi);
    cb_mutex_unlock(&libs_mu);
    int rc = 0;
    if (!h) {
        fprintf(stderr, "cables: node %d: cannot load %s, which the program loaded at the master: %s\n",
                cb.self, path, dlerror());
        rc = ENOENT;
    } else if (!same) {
        fprintf(stderr, "cables: node %d: %s (or a library it needs) could not be loaded at the "
                "address it has at the master (%zu objects here, %d there); its dlopen fails\n",
                cb.self, path, n, m->nobj);
        rc = EADDRINUSE;
    } else {
        handle_keep(m->handle, h);
    }
    return rc;
}

/* another node: the master's close, made here (P_DLCLOSE) */
int cb_libs_apply_close(uint64_t handle)
{
    void *l = NULL;
    cb_mutex_lock(&libs_mu);
    for (size_t i = nhandles; i-- > 0;)
        if (handles[i].master == handle) {
            l = handles[i].local;
            handles[i] = handles[--nhandles];
            break;
        }
    cb_mutex_unlock(&libs_mu);
    if (l) {
        libc_dlclose(l);
        window_keep_all();
    }
    return 0;
}

/* master: node k attached: every load and close, in order */
void cb_libs_replay(int k, int kind_open, int kind_close)
{
    for (size_t i = 0; i < nrecs; i++) {
        cb_msg_t m = { .type = M_PROC, .a = (uint64_t)(recs[i].kind ? kind_close : kind_open),
                       .b = recs[i].handle };
        cb_send(k, &m, recs[i].payload, recs[i].len, false);
    }
}
