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
 * Not covered: nftw, ftw, fts and the other libc functions that open
 * directories inside libc (they read the node's own file system). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
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

void *shim_malloc(size_t n) __asm__("malloc");  /* the program's (heap.c) */
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
    DIR *d = NULL;
    for (int t = 0; t < 4 && !d; t++) { /* a path in shared memory: touched first */
        shim_path_touch(path);
        d = REAL(opendir)(path);
        if (!d && errno != EFAULT)
            break;
    }
    if (d && shim_remote_fd(-1))
        shim_local_opened(dirfd(d));
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
