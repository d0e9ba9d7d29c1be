/* dirs.c: directory streams.  The file system is the master's (io.c:
 * calls on paths), so a directory stream that an application thread of
 * another node opens is the master's: its opendir (fdopendir of a master's
 * descriptor) is made there, and the DIR pointer the thread gets is a
 * record in the program's heap (shared, so any thread on any node may use
 * it, as any DIR) that names the master's stream.  readdir takes the
 * entries from there a batch at a time (a batch is what one readdir of the
 * master's saw: entries added or removed since may or may not show, as
 * POSIX allows); telldir, seekdir and rewinddir move the master's stream;
 * dirfd is its descriptor, the master's, so fstat, openat and fchdir on it
 * act there.  scandir is made here with these (libc's calls its own
 * opendir, past the shim), and glob is libc's given these (its
 * GLOB_ALTDIRFUNC).
 *
 * A stream of the node's own (under /proc or /sys, or on the master, or
 * opened by the runtime) is libc's: its descriptor is marked the node's
 * (remote.c), so calls on dirfd() are made here.
 *
 * nftw and ftw are made here with these too, and stat, lstat and fchdir
 * (libc's walk opens its directories past the shim).
 *
 * Not covered: fts and the other libc functions that open directories
 * inside libc (they read the node's own file system). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <search.h>
#include <glob.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "shim.h"

#define P(x) ((int64_t)(uintptr_t)(x))
#define BATCH 16384

/* A record's first word: never a libc DIR's (a descriptor, then a lock) */
#define RDIR_MAGIC 0x4352444952534c43ull

typedef struct {
    uint64_t magic;
    int64_t handle;     /* the master's DIR */
    int fd;             /* its descriptor, the master's */
    uint32_t at, len;   /* the batch: bytes taken, bytes held */
    long pos;           /* telldir: where the entry last returned ends */
    struct dirent ent;  /* the entry readdir returns */
    uint64_t batch[BATCH / 8];
} rdir_t;

/* an entry in a batch: 8-byte aligned */
typedef struct {
    uint64_t ino;
    int64_t off;
    uint16_t reclen;
    uint8_t type;
    char name[];
} rent_t;

void shim_free(void *p) __asm__("free");
void *shim_realloc(void *p, size_t n) __asm__("realloc");

static rdir_t *rdir(DIR *d)
{
    rdir_t *r = (rdir_t *)d;
    return d && r->magic == RDIR_MAGIC ? r : NULL;
}

/* ---- at the master ---- */

static shim_set_t opened = SHIM_SET_INIT; /* the streams opened for other nodes */

static int64_t add_open(DIR *d, int *fd)
{
    if (!d)
        return -1;
    shim_set_add(&opened, d);
    *fd = dirfd(d);
    return P(d);
}

/* the entries from where d is, as many as fit in len bytes */
static long fill(DIR *d, uint8_t *buf, size_t len)
{
    size_t used = 0;
    for (;;) {
        long at = telldir(d);
        errno = 0;
        struct dirent *e = readdir(d);
        if (!e)
            return errno && !used ? -1 : (long)used;
        size_t nl = strlen(e->d_name), need = (sizeof(rent_t) + nl + 1 + 7) & ~(size_t)7;
        if (used + need > len) {
            if (!used)
                return errno = ENAMETOOLONG, -1;
            seekdir(d, at); /* the next batch starts with it */
            return (long)used;
        }
        rent_t *r = (rent_t *)(buf + used);
        r->ino = e->d_ino;
        r->off = e->d_off;
        r->reclen = (uint16_t)need;
        r->type = e->d_type;
        memcpy(r->name, e->d_name, nl + 1);
        used += need;
    }
}

long shim_dir_exec(int64_t op, int64_t a[6], int *err)
{
    DIR *d = (DIR *)(uintptr_t)a[0];
    long r = 0;
    errno = 0;
    if (op == SHIM_RS_OPENDIR)
        r = add_open(opendir((const char *)(uintptr_t)a[0]), (int *)(uintptr_t)a[1]);
    else if (op == SHIM_RS_FDOPENDIR)
        r = add_open(fdopendir((int)a[0]), (int *)(uintptr_t)a[1]);
    else if (!shim_set_has(&opened, d, op == SHIM_RS_CLOSEDIR))
        r = -1, errno = EBADF;
    else if (op == SHIM_RS_READDIR)
        r = fill(d, (uint8_t *)(uintptr_t)a[1], (size_t)a[2]);
    else if (op == SHIM_RS_SEEKDIR)
        seekdir(d, (long)a[1]);
    else if (op == SHIM_RS_REWINDDIR)
        rewinddir(d);
    else if (op == SHIM_RS_CLOSEDIR)
        r = closedir(d);
    else
        r = -1, errno = ENOSYS;
    *err = r == -1 ? errno : 0;
    return r;
}

/* ---- an application thread's calls ---- */

/* op at the master: by message from another node, as a call there */
static long dir_call(int64_t op, int64_t a0, int64_t a1, int64_t a2, unsigned paths, int out,
                     size_t out_len, uint32_t out_flags)
{
    if (cb.self != 0) {
        return shim_rs_path(op, a0, a1, a2, 0, 0, paths, -1, 0, out, out_len, out_flags);
    }
    int64_t a[6] = { a0, a1, a2, 0, 0, 0 };
    int err;
    long r = shim_dir_exec(op, a, &err);
    if (r == -1)
        errno = err;
    return r;
}

static DIR *rdir_open(int64_t op, int64_t arg, unsigned paths)
{
    int fd = -1;
    int64_t h = dir_call(op, arg, P(&fd), 0, paths, 1, sizeof fd, 0);
    if (h == -1)
        return NULL;
    rdir_t *r = shim_malloc(sizeof *r);
    if (!r) {
        dir_call(SHIM_RS_CLOSEDIR, h, 0, 0, 0, -1, 0, 0);
        return errno = ENOMEM, NULL;
    }
    memset(r, 0, offsetof(rdir_t, ent));
    r->magic = RDIR_MAGIC;
    r->handle = h;
    r->fd = fd;
    return (DIR *)r;
}

DIR *opendir(const char *path)
{
    if (shim_master_path(AT_FDCWD, path))
        return rdir_open(SHIM_RS_OPENDIR, P(path), 1);
    if (shim_remote_fd(-1)) { /* the node's own: its descriptor too (open) */
        int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *d = fd < 0 ? NULL : REAL(fdopendir)(fd);
        if (fd >= 0 && !d) {
            int err = errno;
            close(fd);
            errno = err;
        }
        return d;
    }
    DIR *d = NULL;
    for (int t = 0; t < 4 && !d; t++) { /* a path in shared memory: touched first */
        shim_path_touch(path);
        d = REAL(opendir)(path);
        if (!d && errno != EFAULT)
            break;
    }
    return d;
}

DIR *fdopendir(int fd)
{
    if (shim_remote_fd(fd))
        return rdir_open(SHIM_RS_FDOPENDIR, fd, 0);
    return REAL(fdopendir)(fd);
}

int closedir(DIR *d)
{
    rdir_t *r = rdir(d);
    if (!r) {
        if (cb_app_thread)
            shim_local_closed(dirfd(d));
        return REAL(closedir)(d);
    }
    long rc = dir_call(SHIM_RS_CLOSEDIR, r->handle, 0, 0, 0, -1, 0, 0);
    r->magic = 0;
    shim_free(r);
    return (int)rc;
}

struct dirent *readdir(DIR *d)
{
    rdir_t *r = rdir(d);
    if (!r)
        return REAL(readdir)(d);
    if (r->at == r->len) {
        long n = dir_call(SHIM_RS_READDIR, r->handle, P(r->batch), sizeof r->batch, 0, 1,
                          sizeof r->batch, RSYS_UPTO_RES);
        if (n <= 0)
            return NULL; /* the end (errno unchanged), or the error's errno */
        r->at = 0, r->len = (uint32_t)n;
    }
    const rent_t *e = (const rent_t *)((const uint8_t *)r->batch + r->at);
    r->at += e->reclen;
    r->ent.d_ino = e->ino;
    r->ent.d_off = e->off;
    r->ent.d_type = e->type;
    r->ent.d_reclen = sizeof r->ent;
    snprintf(r->ent.d_name, sizeof r->ent.d_name, "%s", e->name);
    r->pos = e->off;
    return &r->ent;
}

struct dirent64 *readdir64(DIR *d)
{
    if (!rdir(d))
        return REAL(readdir64)(d);
    return (struct dirent64 *)readdir(d); /* the same layout on 64-bit Linux */
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations" /* programs still call it */
int readdir_r(DIR *d, struct dirent *ent, struct dirent **res)
{
    if (!rdir(d))
        return REAL(readdir_r)(d, ent, res);
    int saved = errno;
    errno = 0;
    struct dirent *e = readdir(d);
    int err = e ? 0 : errno;
    errno = saved;
    if (e)
        memcpy(ent, e, sizeof *ent);
    *res = e ? ent : NULL;
    return err;
}

int readdir64_r(DIR *d, struct dirent64 *ent, struct dirent64 **res)
{
    if (!rdir(d))
        return REAL(readdir64_r)(d, ent, res);
    return readdir_r(d, (struct dirent *)ent, (struct dirent **)res);
}
#pragma GCC diagnostic pop

void rewinddir(DIR *d)
{
    rdir_t *r = rdir(d);
    if (!r) {
        REAL(rewinddir)(d);
        return;
    }
    dir_call(SHIM_RS_REWINDDIR, r->handle, 0, 0, 0, -1, 0, 0);
    r->at = r->len = 0;
    r->pos = 0;
}

long telldir(DIR *d)
{
    rdir_t *r = rdir(d);
    return r ? r->pos : REAL(telldir)(d);
}

void seekdir(DIR *d, long pos)
{
    rdir_t *r = rdir(d);
    if (!r) {
        REAL(seekdir)(d, pos);
        return;
    }
    dir_call(SHIM_RS_SEEKDIR, r->handle, pos, 0, 0, -1, 0, 0);
    r->at = r->len = 0;
    r->pos = pos;
}

int dirfd(DIR *d)
{
    rdir_t *r = rdir(d);
    return r ? r->fd : REAL(dirfd)(d);
}

/* libc's scandir opens the directory past the shim: the same with ours,
 * the list in the program's malloc, as libc's */
int scandir(const char *path, struct dirent ***list, int (*sel)(const struct dirent *),
            int (*cmp)(const struct dirent **, const struct dirent **))
{
    if (!shim_master_path(AT_FDCWD, path))
        return REAL(scandir)(path, list, sel, cmp);
    DIR *d = opendir(path);
    if (!d)
        return -1;
    struct dirent **v = NULL, *e;
    size_t n = 0, cap = 0;
    int err = 0;
    for (errno = 0; (e = readdir(d)); errno = 0) {
        if (sel && !sel(e))
            continue;
        if (n == cap) {
            struct dirent **w = shim_realloc(v, (cap = cap ? 2 * cap : 16) * sizeof *v);
            if (!w) {
                err = ENOMEM;
                break;
            }
            v = w;
        }
        if (!(v[n] = shim_malloc(sizeof *e))) {
            err = ENOMEM;
            break;
        }
        memcpy(v[n++], e, sizeof *e);
    }
    if (!err)
        err = errno;
    closedir(d);
    if (err) {
        while (n)
            shim_free(v[--n]);
        shim_free(v);
        return errno = err, -1;
    }
    if (cmp)
        qsort(v, n, sizeof *v, (int (*)(const void *, const void *))cmp);
    *list = v;
    return (int)n;
}

int scandir64(const char *path, struct dirent64 ***list, int (*sel)(const struct dirent64 *),
              int (*cmp)(const struct dirent64 **, const struct dirent64 **))
{
    if (!shim_master_path(AT_FDCWD, path))
        return REAL(scandir64)(path, list, sel, cmp);
    return scandir(path, (struct dirent ***)list, (int (*)(const struct dirent *))sel,
                   (int (*)(const struct dirent **, const struct dirent **))cmp);
}

static void *open_dir(const char *path) { return opendir(path); }
static struct dirent *read_dir(void *d) { return readdir(d); }
static void close_dir(void *d) { closedir(d); }

/* libc's glob, reading directories with the functions above (on another
 * node: the master's) unless the program gives its own */
int glob(const char *pattern, int flags, int (*err)(const char *, int), glob_t *g)
{
    if (!shim_master_path(AT_FDCWD, pattern) || flags & GLOB_ALTDIRFUNC)
        return REAL(glob)(pattern, flags, err, g);
    g->gl_opendir = open_dir;
    g->gl_readdir = read_dir;
    g->gl_closedir = close_dir;
    g->gl_stat = stat;
    g->gl_lstat = lstat;
    return REAL(glob)(pattern, flags | GLOB_ALTDIRFUNC, err, g);
}

/* glob64_t is glob_t, and its dirent64 and stat64 are dirent and stat,
 * on 64-bit Linux (libc's glob64 is glob there) */
_Static_assert(sizeof(glob64_t) == sizeof(glob_t), "glob64_t is glob_t");
int glob64(const char *pattern, int flags, int (*err)(const char *, int), glob64_t *g)
{
    return glob(pattern, flags, err, (glob_t *)g);
}

/* ---- nftw and ftw ----
 * On another node, the walk of glibc's made with the calls above (the
 * master's tree): the same entries in the same order, with the same types,
 * base and level, and FTW_PHYS, FTW_MOUNT, FTW_DEPTH, FTW_CHDIR (the
 * process's working directory, so every node's) and FTW_ACTIONRETVAL.  A
 * directory's entries are read before its subdirectories are walked, so
 * nopenfd is not needed: one stream is open at a time (with FTW_CHDIR, one
 * for each directory walked into, to come back to). */

typedef struct {
    int (*fn)(const char *, const struct stat *, int, struct FTW *);
    int (*old)(const char *, const struct stat *, int); /* ftw's, instead of fn */
    int flags;
    dev_t dev;       /* the first directory's (FTW_MOUNT) */
    char *path;      /* the entry the callback gets */
    size_t cap;
    struct FTW ftw;
    void *seen;      /* the directories walked (without FTW_PHYS, each once) */
} walk_t;

typedef struct { dev_t dev; ino_t ino; } dir_id_t;

static int id_cmp(const void *a, const void *b)
{
    const dir_id_t *x = a, *y = b;
    return x->dev != y->dev ? (x->dev < y->dev ? -1 : 1) : x->ino != y->ino ? (x->ino < y->ino ? -1 : 1) : 0;
}

/* 1: walked before; 0: not, now known; -1: no memory */
static int seen(walk_t *w, const struct stat *st)
{
    dir_id_t *id = malloc(sizeof *id);
    if (!id)
        return -1;
    id->dev = st->st_dev, id->ino = st->st_ino;
    dir_id_t **at = tsearch(id, &w->seen, id_cmp);
    if (!at)
        return free(id), -1;
    if (*at != id)
        return free(id), 1;
    return 0;
}

/* the name the calls take: with FTW_CHDIR, in the directory we are in */
static const char *here(walk_t *w)
{
    if (!(w->flags & FTW_CHDIR))
        return w->path;
    return w->path[w->ftw.base] ? w->path + w->ftw.base : ".";
}

static int call(walk_t *w, const struct stat *st, int type)
{
    /* ftw knows no links and no FTW_DP (nor FTW_D after the entries) */
    static const int ftw_type[] = { [FTW_F] = FTW_F, [FTW_D] = FTW_D, [FTW_DNR] = FTW_DNR,
                                    [FTW_NS] = FTW_NS, [FTW_SL] = FTW_F, [FTW_DP] = FTW_D,
                                    [FTW_SLN] = FTW_NS };
    return w->old ? w->old(w->path, st, ftw_type[type]) : w->fn(w->path, st, type, &w->ftw);
}

static bool room(walk_t *w, size_t n)
{
    if (n <= w->cap)
        return true;
    size_t cap = n < 2 * w->cap ? 2 * w->cap : n;
    char *p = realloc(w->path, cap);
    if (!p)
        return errno = ENOMEM, false;
    w->path = p, w->cap = cap;
    return true;
}

static int walk_entry(walk_t *w, const char *name, int up);

/* the directory at w->path, with its status st; up: the descriptor of the
 * directory to come back to (FTW_CHDIR; -1: none) */
static int walk_dir(walk_t *w, const struct stat *st, int up)
{
    DIR *d = opendir(here(w));
    if (!d)
        return errno == EACCES ? call(w, st, FTW_DNR) : -1;
    int r = w->flags & FTW_DEPTH ? 0 : call(w, st, FTW_D);
    if (r == 0 && w->flags & FTW_CHDIR && fchdir(dirfd(d)))
        r = -1;
    /* its entries' names, one after the other */
    char *names = NULL;
    size_t len = 0, cap = 0;
    for (struct dirent *e; r == 0 && (e = readdir(d));) { /* an error ends it, as in libc's */
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        size_t n = strlen(e->d_name) + 1;
        if (len + n + 1 > cap) {
            char *p = realloc(names, cap = 2 * (len + n + 1));
            if (!p) {
                errno = ENOMEM, r = -1;
                break;
            }
            names = p;
        }
        memcpy(names + len, e->d_name, n);
        len += n;
    }
    int err = errno;
    if (!(w->flags & FTW_CHDIR) || r) {
        closedir(d);
        d = NULL;
    }
    if (r) {
        free(names);
        return errno = err, r;
    }
    int prev = w->ftw.base;
    size_t end = strlen(w->path);
    if (end && w->path[end - 1] != '/')
        w->path[end++] = '/', w->path[end] = 0;
    w->ftw.base = (int)end;
    w->ftw.level++;
    for (size_t at = 0; r == 0 && at < len; at += strlen(names + at) + 1)
        r = walk_entry(w, names + at, d ? dirfd(d) : -1);
    free(names);
    if (w->flags & FTW_ACTIONRETVAL && r == FTW_SKIP_SIBLINGS)
        r = 0;
    /* the directory's path again; the root's stays "/" (glibc's FTW_DP
     * of the root gets "") */
    w->path[w->ftw.base > 1 ? w->ftw.base - 1 : 1] = 0;
    w->ftw.level--;
    w->ftw.base = prev;
    if (r == 0 && w->flags & FTW_DEPTH)
        r = call(w, st, FTW_DP);
    if (d)
        closedir(d);
    if (up >= 0 && (r == 0 || (w->flags & FTW_ACTIONRETVAL && r != -1 && r != FTW_STOP)) &&
        fchdir(up))
        r = -1;
    return r;
}

/* the entry name of the directory at w->path (whose descriptor is up) */
static int walk_entry(walk_t *w, const char *name, int up)
{
    size_t n = strlen(name);
    if (!room(w, (size_t)w->ftw.base + n + 2))
        return -1;
    memcpy(w->path + w->ftw.base, name, n + 1);
    struct stat st;
    memset(&st, 0, sizeof st);
    int type, r = 0;
    if (!(w->flags & FTW_PHYS ? lstat : stat)(here(w), &st))
        type = S_ISDIR(st.st_mode) ? FTW_D : S_ISLNK(st.st_mode) ? FTW_SL : FTW_F;
    else if (errno != EACCES && errno != ENOENT)
        return -1;
    else if (!(w->flags & FTW_PHYS) && !lstat(here(w), &st) && S_ISLNK(st.st_mode))
        type = FTW_SLN;
    else
        type = FTW_NS;
    if (type == FTW_NS || !(w->flags & FTW_MOUNT) || st.st_dev == w->dev) {
        if (type != FTW_D)
            r = call(w, &st, type);
        else if (w->flags & FTW_PHYS || !(r = seen(w, &st)))
            r = walk_dir(w, &st, up);
        else if (r == 1)
            r = 0;
    }
    if (w->flags & FTW_ACTIONRETVAL && r == FTW_SKIP_SUBTREE)
        r = 0;
    return r;
}

static void drop_id(void *id) { free(id); }

static int walk(const char *path, walk_t *w)
{
    if (!path[0])
        return errno = ENOENT, -1;
    size_t n = strlen(path);
    if (!room(w, n + 2 > PATH_MAX ? n + 2 : PATH_MAX))
        return -1;
    memcpy(w->path, path, n + 1);
    while (n > 1 && w->path[n - 1] == '/') /* as libc: no trailing slashes */
        w->path[--n] = 0;
    while (n > 0 && w->path[n - 1] != '/')
        n--;
    w->ftw.base = (int)n;
    int r = 0, cwd = -1;
    char *cwd_name = NULL;
    if (w->flags & FTW_CHDIR) { /* into the directory of the first entry, and back at the end */
        cwd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (cwd < 0 && errno == EACCES) /* a directory we may enter, not read */
            cwd_name = getcwd(NULL, 0);
        if (cwd < 0 && !cwd_name)
            r = -1;
        else if (n > 0) {
            char c = w->path[n > 1 ? n - 1 : n];
            w->path[n > 1 ? n - 1 : n] = 0;
            r = chdir(w->path);
            w->path[n > 1 ? n - 1 : n] = c;
        }
    }
    struct stat st;
    if (r == 0 && (w->flags & FTW_PHYS ? lstat : stat)(here(w), &st)) {
        if (!(w->flags & FTW_PHYS) && errno == ENOENT && !lstat(here(w), &st) && S_ISLNK(st.st_mode))
            r = call(w, &st, FTW_SLN);
        else
            r = -1;
    } else if (r == 0 && S_ISDIR(st.st_mode)) {
        w->dev = st.st_dev;
        if (!(w->flags & FTW_PHYS) && seen(w, &st) < 0)
            r = -1;
        else
            r = walk_dir(w, &st, -1);
    } else if (r == 0)
        r = call(w, &st, S_ISLNK(st.st_mode) ? FTW_SL : FTW_F);
    if (w->flags & FTW_ACTIONRETVAL && (r == FTW_SKIP_SUBTREE || r == FTW_SKIP_SIBLINGS))
        r = 0;
    int err = errno;
    if (cwd >= 0) {
        fchdir(cwd);
        close(cwd);
    } else if (cwd_name) {
        chdir(cwd_name);
        shim_free(cwd_name);
    }
    tdestroy(w->seen, drop_id);
    free(w->path);
    errno = err;
    return r;
}

#define FTW_FLAGS (FTW_PHYS | FTW_MOUNT | FTW_CHDIR | FTW_DEPTH | FTW_ACTIONRETVAL)

int nftw(const char *path, int (*fn)(const char *, const struct stat *, int, struct FTW *), int nopenfd,
         int flags)
{
    if (!shim_master_path(AT_FDCWD, path))
        return REAL(nftw)(path, fn, nopenfd, flags);
    if (flags & ~FTW_FLAGS)
        return errno = EINVAL, -1;
    walk_t w = { .fn = fn, .flags = flags };
    return walk(path, &w);
}

int ftw(const char *path, int (*fn)(const char *, const struct stat *, int), int nopenfd)
{
    if (!shim_master_path(AT_FDCWD, path))
        return REAL(ftw)(path, fn, nopenfd);
    walk_t w = { .old = fn };
    return walk(path, &w);
}

/* struct stat64 is struct stat on 64-bit Linux (libc's nftw64 is nftw) */
_Static_assert(sizeof(struct stat64) == sizeof(struct stat), "stat64 is stat");
int nftw64(const char *path, int (*fn)(const char *, const struct stat64 *, int, struct FTW *),
           int nopenfd, int flags)
{
    return nftw(path, (int (*)(const char *, const struct stat *, int, struct FTW *))fn, nopenfd, flags);
}

int ftw64(const char *path, int (*fn)(const char *, const struct stat64 *, int), int nopenfd)
{
    return ftw(path, (int (*)(const char *, const struct stat *, int))fn, nopenfd);
}
