/* libs.c: the libraries a program loads with dlopen are the process's, so
 * every node process's, at the same addresses (a function pointer means
 * the same thing on every node, as for the program's own code).  Like the
 * libraries linked at the start, each node has its own copy of their data
 * and runs their constructors.
 *
 * A dlopen is made at the master (proc.c), then on every other node up
 * before it returns, and replayed, with the dlcloses, to each node attached
 * later.  The kernel places what ld.so maps (mmap with no address):
 * top-down, in the highest free gap that fits.  So the master loads into a
 * window every node reserves at the same address (LIBS_BASE), with the free
 * gaps above it filled for the while (PROT_NONE mappings, taken away
 * after); another node makes free exactly the ranges the master's new
 * objects took (with the slack ld.so maps to align an object), fills every
 * other gap above them, and its ld.so's mappings, made in the same order,
 * can go nowhere else.  Each node checks that each of the master's objects
 * is where the master has it: where one is not (a mapping made meanwhile
 * by another thread took the place, or a dependency already loaded on one
 * node only), the dlopen fails on every node, a message naming the node
 * and the library.
 *
 * Another node loads on a thread of its own (the loader), in the order the
 * master sent, so that a constructor that touches shared data faults as
 * any thread does (the communication thread, which serves the faults,
 * never waits for a load); the node's application threads start once the
 * loads sent before them are done.
 *
 * A handle is the master's on every node; each other node keeps its own
 * for it, which the shim's dlsym, dlclose and dlinfo take there. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/resource.h>
#include <unistd.h>

#include "internal.h"

#define LIBS_SIZE cb.cfg.libs_size /* 64G, less under an address space limit */
#define LIBS_BASE (CB_GAS_BASE - LIBS_SIZE)
#define LIBS_HOLE (1ull << 30) /* the most one load may take in the window */
#define MAX_OBJS 64            /* objects one load may add */

static bool window;        /* reserved here */
static uint64_t os_ps;     /* the OS page size */
static uintptr_t libs_top; /* master: the window's part below is free for libraries */

/* one load or close at a time, with its messages (master) or its maps
 * (every node); the thread holding it makes the nested ones of the
 * library's constructors and destructors as parts of it */
static cb_mutex_t load_mu = CB_MUTEX_INIT;
static __thread bool in_load;

/* short: the handles and the record (never held across a load) */
static cb_mutex_t libs_mu = CB_MUTEX_INIT;

/* the master's handles and this node's (other nodes) */
typedef struct {
    uint64_t master;
    void *local;
} handle_t;
static handle_t *handles;
static size_t nhandles, cap_handles;

/* master: every open and close, in order, for the nodes attached later */
typedef struct {
    int kind; /* P_DLOPEN or P_DLCLOSE's number, as proc.c gives them */
    uint64_t handle;
    void *payload;
    size_t len;
} rec_t;
static rec_t *recs;
static size_t nrecs, cap_recs;

static int (*libc_dlclose)(void *);
static void *(*libc_dlopen)(const char *, int);
static int (*libc_dlinfo)(void *, int, void *); /* (the shim's takes libs_mu) */
static char *(*libc_dlerror)(void);

/* libc's dlopen and dlclose, with what ld.so allocates and what the
 * library's constructors and destructors do the runtime's, as for the
 * libraries loaded at the start (private memory, threads of the node) */
static void *lib_open(const char *path, int flags)
{
    bool app = cb_app_thread;
    cb_app_thread = false;
    void *h = libc_dlopen(path, flags);
    cb_app_thread = app;
    return h;
}

static int lib_close(void *h)
{
    bool app = cb_app_thread;
    cb_app_thread = false;
    int rc = libc_dlclose(h);
    cb_app_thread = app;
    return rc;
}

void cb_libs_lock(void)
{
    cb_mutex_lock(&load_mu);
    in_load = true;
}

void cb_libs_unlock(void)
{
    in_load = false;
    cb_mutex_unlock(&load_mu);
}

bool cb_libs_in_load(void) { return in_load; }

/* ---- this process's address space ---- */

typedef struct {
    uintptr_t lo, hi;
} range_t;

typedef struct {
    range_t *r;
    size_t n, cap;
} ranges_t;

/* room for one more element in *arr (n used of *cap) */
static void grow(void *arr, size_t n, size_t *cap, size_t size, const char *what)
{
    if (n < *cap)
        return;
    size_t c = *cap ? 2 * *cap : 16;
    void *p = realloc(*(void **)arr, c * size);
    if (!p)
        cb_die("out of memory for %s", what);
    *(void **)arr = p;
    *cap = c;
}

static void ranges_add(ranges_t *s, uintptr_t lo, uintptr_t hi)
{
    grow(&s->r, s->n, &s->cap, sizeof *s->r, "the address space's map");
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
 * ever unmapped for a load, never a mapping another thread made there
 * (load_mu) */
static ranges_t owned;

static void own_release(uintptr_t lo, uintptr_t hi)
{
    for (size_t i = 0; i < owned.n;) {
        range_t r = owned.r[i];
        uintptr_t a = r.lo > lo ? r.lo : lo, b = r.hi < hi ? r.hi : hi;
        if (a >= b) {
            i++;
            continue;
        }
        cb_munmap((void *)a, b - a);
        owned.r[i] = owned.r[--owned.n]; /* what is left of it, kept */
        if (r.lo < a)
            ranges_add(&owned, r.lo, a);
        if (b < r.hi)
            ranges_add(&owned, b, r.hi);
    }
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
    os_ps = (uint64_t)sysconf(_SC_PAGESIZE);
    libc_dlopen = (void *(*)(const char *, int))cb_libc("dlopen");
    libc_dlclose = (int (*)(void *))cb_libc("dlclose");
    libc_dlinfo = (int (*)(void *, int, void *))cb_libc("dlinfo");
    libc_dlerror = (char *(*)(void))cb_libc("dlerror");
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
    uint64_t align;        /* its segments' alignment (ld.so maps more to get it) */
} obj_t;

/* the last of the link maps ld.so keeps (_r_debug's chain, which the
 * shim's libc lookup walks too: pthread_shim/src/process.c) */
static struct link_map *last_map(void)
{
    struct link_map *l = _r_debug.r_map;
    if (!l)
        cb_die("cannot find the program's link map");
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
    uint64_t lo = UINT64_MAX, hi = 0, ps = os_ps, align = ps;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_LOAD) {
            uint64_t s = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
            uint64_t e = s + info->dlpi_phdr[i].p_memsz;
            lo = s < lo ? s : lo;
            hi = e > hi ? e : hi;
            align = info->dlpi_phdr[i].p_align > align ? info->dlpi_phdr[i].p_align : align;
        }
    if (hi <= lo)
        return 0;
    a->o->lo = lo & ~(ps - 1);
    a->o->hi = (hi + ps - 1) & ~(ps - 1);
    a->o->align = align;
    return 1;
}

/* the objects after `after` in the link chain: how many (at most max
 * described) */
static size_t new_objects(struct link_map *after, obj_t *o, size_t max)
{
    size_t n = 0;
    for (struct link_map *l = after->l_next; l; l = l->l_next, n++)
        if (n < max) {
            o[n] = (obj_t){ .addr = l->l_addr };
            seg_arg_t a = { l->l_addr, &o[n] };
            dl_iterate_phdr(seg_cb, &a);
        }
    return n;
}

/* whether an object is loaded here with that load bias */
static bool loaded_at(uint64_t addr)
{
    for (struct link_map *l = _r_debug.r_map; l; l = l->l_next)
        if (l->l_addr == addr)
            return true;
    return false;
}

/* the range ld.so first maps for o.  An object whose segments are aligned
 * beyond the page: ld.so (glibc 2.35 and later) maps its length and one
 * alignment more (two alignments if it is shorter), takes the aligned
 * start inside and unmaps the rest; the master's was above lo - align, so
 * a hole that starts at the lowest such page, exactly as long, puts it at
 * lo again, and lies where the master's mapping did (or below, in what
 * later loads took) */
static range_t hole_of(const obj_t *o)
{
    if (o->align <= os_ps)
        return (range_t){ o->lo, o->hi };
    uint64_t len = o->hi - o->lo, map = len >= o->align ? len + o->align : 2 * o->align;
    uint64_t start = o->lo - o->align + os_ps;
    return (range_t){ start, start + map };
}

/* ---- a load, placed ---- */

/* what a load sends: the master's handle, the flags, the objects, then
 * the path */
typedef struct {
    uint64_t handle;
    int32_t flags, nobj;
    obj_t obj[];
} load_msg_t;

/* Fill the gaps above `above`, except the holes, then load.  A gap where a
 * mapping appeared meanwhile (another thread's) is looked at again.  The
 * fillers go after the load (each exactly where it was put). */
static void *placed_load(const char *path, int flags, uintptr_t above, const range_t *holes,
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
    void *h = lib_open(path, flags);
    for (size_t i = 0; i < fill.n; i++)
        cb_munmap((void *)fill.r[i].lo, fill.r[i].hi - fill.r[i].lo);
    free(fill.r);
    return h;
}

static void handle_keep(uint64_t master, void *local)
{
    cb_mutex_lock(&libs_mu);
    grow(&handles, nhandles, &cap_handles, sizeof *handles, "the libraries' handles");
    handles[nhandles++] = (handle_t){ master, local };
    cb_mutex_unlock(&libs_mu);
}

/* another node: its own handle for the master's (NULL: none) */
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

static size_t record(int kind, uint64_t handle, const void *payload, size_t len)
{
    size_t at;
    void *p = NULL;
    if (len && !(p = malloc(len)))
        cb_die("out of memory for the libraries' record");
    if (len)
        memcpy(p, payload, len);
    cb_mutex_lock(&libs_mu);
    grow(&recs, nrecs, &cap_recs, sizeof *recs, "the libraries' record");
    recs[at = nrecs++] = (rec_t){ kind, handle, p, len };
    cb_mutex_unlock(&libs_mu);
    return at;
}

/* the placement needs the kernel's top-down layout, which an unlimited
 * stack (ulimit -s) or the compatibility personality replaces */
static const char *layout_problem(void)
{
    struct rlimit r;
    if (!getrlimit(RLIMIT_STACK, &r) && r.rlim_cur == RLIM_INFINITY)
        return "the stack size limit is unlimited (ulimit -s), which makes the kernel place "
               "mappings bottom-up";
    int pers = personality(0xffffffff);
    if (pers != -1 && pers & ADDR_COMPAT_LAYOUT)
        return "the process has the compatibility address space layout";
    return NULL;
}

/* master, holding cb_libs_lock: load file; 0, *handle and the payload for
 * the other nodes in *out (malloc'd, *outlen bytes); or an error number
 * and why in err */
int cb_libs_open(const char *file, int flags, void **handle, void **out, size_t *outlen, char *err,
                 size_t errlen)
{
    const char *problem = layout_problem();
    if (problem) {
        snprintf(err, errlen, "cables: %s cannot be loaded on every node: %s", file, problem);
        return ENOTSUP;
    }
    /* a hole below what earlier loads took, made free for the kernel to
     * place in: only the highest gap that fits (a mapping another thread
     * makes meanwhile, bigger than the hole, goes below the window) */
    uintptr_t hi = libs_top, lo = hi - LIBS_BASE > LIBS_HOLE ? hi - LIBS_HOLE : LIBS_BASE;
    struct link_map *before;
    void *h = NULL;
    /* (as on the other nodes, a gap another thread's unmapping made while
     * the fills went in may take it: then undone, and tried again) */
    for (int attempt = 0; attempt < 5; attempt++) {
        if (window)
            own_release(lo, hi);
        h = placed_load(file, flags, window ? hi : UINTPTR_MAX, NULL, 0, &before);
        bool inside = true;
        for (struct link_map *l = h ? before->l_next : NULL; l && inside; l = l->l_next)
            inside = l->l_addr >= lo && l->l_addr < hi;
        if (!h || !window || inside)
            break;
        lib_close(h);
        window_keep(lo, hi);
        usleep(1000u << attempt);
    }
    if (!h) {
        const char *e = libc_dlerror();
        snprintf(err, errlen, "%s", e ? e : "cannot load the library");
        window_keep(lo, hi);
        return ENOENT;
    }
    struct link_map *l = NULL;
    char path[PATH_MAX];
    load_msg_t *m = malloc(sizeof *m + MAX_OBJS * sizeof(obj_t) + PATH_MAX);
    size_t n = new_objects(before, m ? m->obj : NULL, m ? MAX_OBJS : 0);
    int rc = 0;
    if (!m) {
        snprintf(err, errlen, "cables: out of memory for the load of %s", file);
        rc = ENOMEM;
    } else if (n > MAX_OBJS) {
        snprintf(err, errlen, "cables: %s brings %zu new objects; at most %d can be loaded on "
                 "every node at once", file, n, MAX_OBJS);
        rc = E2BIG;
    } else if (libc_dlinfo(h, RTLD_DI_LINKMAP, &l) || !l ||
               !realpath(l->l_name[0] ? l->l_name : file, path)) {
        snprintf(err, errlen, "cables: cannot name the file %s was loaded from", file);
        rc = ENOENT;
    }
    if (rc) {
        lib_close(h);
        window_keep(lo, hi);
        free(m);
        return rc;
    }
    m->handle = (uint64_t)(uintptr_t)h;
    m->flags = flags;
    m->nobj = (int32_t)n;
    for (size_t i = 0; i < n; i++)
        if (m->obj[i].lo < libs_top && m->obj[i].lo >= lo)
            libs_top = m->obj[i].lo;
    window_keep(lo, hi);
    size_t len = sizeof *m + n * sizeof(obj_t), plen = strlen(path) + 1;
    memcpy((char *)m + len, path, plen);
    *handle = h;
    *out = m;
    *outlen = len + plen;
    return 0;
}

/* master, holding cb_libs_lock: a load (kind: P_DLOPEN's number) kept for
 * the nodes attached later; its place in the record */
size_t cb_libs_opened(int kind, const void *payload, size_t len)
{
    return record(kind, ((const load_msg_t *)payload)->handle, payload, len);
}

/* master: a load kept that failed on another node: not replayed */
void cb_libs_forget(size_t kept)
{
    cb_mutex_lock(&libs_mu);
    recs[kept].kind = -1;
    free(recs[kept].payload);
    recs[kept].payload = NULL;
    recs[kept].len = 0;
    cb_mutex_unlock(&libs_mu);
}

/* master, holding cb_libs_lock: a close (kind: P_DLCLOSE's number), kept
 * for the nodes attached later if made and asked */
int cb_libs_close(int kind, void *handle, bool keep)
{
    int rc = lib_close(handle) ? EINVAL : 0;
    window_keep(LIBS_BASE, LIBS_BASE + LIBS_SIZE);
    if (!rc && keep)
        record(kind, (uint64_t)(uintptr_t)handle, NULL, 0);
    return rc;
}

/* ---- another node: the loader ---- */

/* Another node: the master's load, placed where the master's objects are.
 * Another thread's mapping may change the gaps while the fills go in (an
 * unmapping makes a gap the fills missed): a load that lands elsewhere is
 * undone and tried again, a few times. */
static int apply_open(const void *p, size_t len)
{
    const load_msg_t *m = p;
    if (len < sizeof *m || m->nobj < 0 || m->nobj > MAX_OBJS ||
        len <= sizeof *m + (size_t)m->nobj * sizeof(obj_t) || ((const char *)p)[len - 1])
        cb_die("node %d: malformed library load (%zu bytes)", cb.self, len);
    const char *path = (const char *)&m->obj[m->nobj];
    range_t holes[MAX_OBJS];
    uintptr_t above = UINTPTR_MAX;
    for (int i = 0; i < m->nobj; i++) {
        holes[i] = hole_of(&m->obj[i]);
        above = holes[i].lo < above ? holes[i].lo : above;
    }
    void *h = NULL;
    bool placed = false;
    for (int attempt = 0; attempt < 5 && !placed; attempt++) {
        if (h) { /* (landed elsewhere) */
            lib_close(h);
            window_keep(LIBS_BASE, LIBS_BASE + LIBS_SIZE);
            usleep(1000u << attempt);
        }
        for (int i = 0; i < m->nobj; i++) /* made free (in the window: where reserved) */
            if (window && holes[i].lo >= LIBS_BASE && holes[i].hi <= LIBS_BASE + LIBS_SIZE)
                own_release(holes[i].lo, holes[i].hi);
        struct link_map *before;
        h = placed_load(path, m->flags, above, holes, (size_t)m->nobj, &before);
        placed = h != NULL;
        for (int i = 0; placed && i < m->nobj; i++) /* (one loaded here before is fine) */
            placed = loaded_at(m->obj[i].addr);
        for (int i = 0; i < m->nobj; i++) /* what the load did not take */
            window_keep(holes[i].lo, holes[i].hi);
        if (!h)
            break;
    }
    if (!h) {
        const char *e = libc_dlerror();
        fprintf(stderr, "cables: node %d: cannot load %s, which the program loaded at the master: %s\n",
                cb.self, path, e ? e : "?");
        return ENOENT;
    }
    if (!placed) {
        fprintf(stderr, "cables: node %d: %s (or a library it needs) could not be loaded at the "
                "address it has at the master; its dlopen fails\n", cb.self, path);
        lib_close(h);
        window_keep(LIBS_BASE, LIBS_BASE + LIBS_SIZE);
        return EADDRINUSE;
    }
    handle_keep(m->handle, h);
    return 0;
}

static int apply_close(uint64_t handle)
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
        lib_close(l);
        window_keep(LIBS_BASE, LIBS_BASE + LIBS_SIZE);
    }
    return 0;
}

typedef struct lreq {
    struct lreq *next;
    cb_msg_t m;
    bool open;
    size_t len;
    uint8_t p[];
} lreq_t;

static cb_mutex_t lq_mu = CB_MUTEX_INIT;
static lreq_t *lq_head, *lq_tail;
static bool loader_started;
static _Atomic uint32_t lq_seq;  /* the loader sleeps on it */
static _Atomic uint32_t pending; /* loads and closes not done yet */

static void *loader_main(void *unused)
{
    (void)unused;
    cb_block_process_signals();
    for (;;) {
        cb_mutex_lock(&lq_mu);
        while (!lq_head) {
            uint32_t seen = atomic_load(&lq_seq);
            cb_mutex_unlock(&lq_mu);
            cb_futex_wait(&lq_seq, seen);
            cb_mutex_lock(&lq_mu);
        }
        lreq_t *r = lq_head;
        if (!(lq_head = r->next))
            lq_tail = NULL;
        cb_mutex_unlock(&lq_mu);
        cb_libs_lock();
        int rc = r->open ? apply_open(r->p, r->len) : apply_close(r->m.b);
        cb_libs_unlock();
        if (r->m.waiter) {
            cb_msg_t a = { .type = M_REPLY, .a = (uint64_t)(int64_t)rc };
            cb_reply(&r->m, &a, NULL, 0, false);
        } else if (rc) { /* replayed to a node attached later: it cannot run the program */
            cb_die("node %d (attached) cannot load a library the program loaded before", cb.self);
        }
        free(r);
        atomic_fetch_sub(&pending, 1);
        cb_futex_wake(&pending);
    }
    return NULL;
}

/* comm thread: a load or close of the master's, made by the loader */
void cb_libs_request(const cb_msg_t *m, const void *p, size_t len, bool open)
{
    lreq_t *r = malloc(sizeof *r + len);
    if (!r)
        cb_die("node %d: out of memory for a library's load", cb.self);
    r->next = NULL;
    r->m = *m;
    r->open = open;
    r->len = len;
    memcpy(r->p, p, len);
    atomic_fetch_add(&pending, 1);
    cb_mutex_lock(&lq_mu);
    if (lq_tail) lq_tail->next = r; else lq_head = r;
    lq_tail = r;
    bool start = !loader_started;
    loader_started = true;
    atomic_fetch_add(&lq_seq, 1);
    cb_mutex_unlock(&lq_mu);
    pthread_t t;
    if (start && cb_thread_start(&t, loader_main, NULL, true))
        cb_die("node %d: cannot start a thread for the libraries' loads", cb.self);
    cb_futex_wake(&lq_seq);
}

/* an application thread starting here: the loads sent before it, done */
void cb_libs_wait(void)
{
    uint32_t n;
    while ((n = atomic_load(&pending)))
        cb_futex_wait(&pending, n);
}

/* master: node k attached: every load and close, in order */
void cb_libs_replay(int k)
{
    cb_mutex_lock(&libs_mu);
    for (size_t i = 0; i < nrecs; i++) {
        if (recs[i].kind < 0)
            continue;
        cb_msg_t m = { .type = M_PROC, .a = (uint64_t)recs[i].kind, .b = recs[i].handle };
        cb_send(k, &m, recs[i].payload, recs[i].len, false);
    }
    cb_mutex_unlock(&libs_mu);
}
