/* paths: calls on paths find what other threads made, on any node.  Main
 * makes a directory (in $PATHS_DIR, else /tmp) and a file in it; a worker
 * (on 2 nodes: node 1) finds the file (stat, lstat, fstatat, statx,
 * access, faccessat), lists it (opendir, readdir, telldir, seekdir,
 * rewinddir, dirfd, fdopendir, scandir, glob) and changes the tree (mkdir, rename, link, symlink,
 * readlink, realpath, chmod, truncate, utimes, utimensat, mkfifo,
 * renameat2), with relative paths too after main's chdir; main then finds
 * the worker's changes, makes more, and the worker removes them all
 * (unlink, unlinkat, remove, rmdir).  Errors come back as they are
 * (ENOENT, EEXIST, ENOTEMPTY).  The worker's statfs and statvfs describe
 * main's file system; its walks of the tree (nftw with each flag, ftw)
 * give main's walks' entries, types, levels and bases, in the same order.
 * Descriptors libc makes inside itself, the worker's, are main's too
 * (mkstemp, mkostemps, shm_open, memfd_create, timerfd_create,
 * inotify_init1: main reads what the worker wrote, the timer's expiry, the
 * event of a file main made), its mkdtemp and mktemp names what main finds
 * or not, its tempnam a name in main's directory, its
 * get_current_dir_name main's, its system command writes where main is, and its signalfd is its
 * own.  Run in stand-ins for machines, each
 * node with its own disk at $PATHS_DIR (tests/multinode/machines.sh, of a
 * size of its own), the worker's calls reach the master's disk or fail.
 * RESULT ok=1 checks=N (check.h) */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <ftw.h>
#include <glob.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/time.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <utime.h>

#include "check.h"

static struct gate to_worker = GATE_INITIALIZER, to_main = GATE_INITIALIZER;
static char dir[PATH_MAX], real_b[PATH_MAX + 8]; /* real_b: dir/sub/b without links */

/* dir/name, in a static buffer of its own per slot */
static const char *in(int slot, const char *name)
{
    static char buf[8][PATH_MAX + 64];
    snprintf(buf[slot], sizeof buf[slot], "%s/%s", dir, name);
    return buf[slot];
}

/* entries of an open stream from where it is; first: the first one's name */
static int count(DIR *d, char *first, size_t n)
{
    int k = 0;
    for (struct dirent *e; d && (e = readdir(d)); k++)
        if (!k && first)
            snprintf(first, n, "%s", e->d_name);
    return k;
}

static long long size_of(const char *path)
{
    struct stat st;
    return stat(path, &st) ? -errno : (long long)st.st_size;
}

/* ---- walks: each callback's path, type, level and base, in order (the
 * tree has a link to itself and a dangling link: a walk that follows links
 * reports each directory once, and the dangling one as FTW_SLN) ---- */
enum { WALKS = 10, TRACE = 8192 };
static char main_walks[WALKS][TRACE];
static char *trace; /* the walk's record */

static void note(const char *path, int type, int level, int base, int extra)
{
    size_t n = strlen(trace);
    snprintf(trace + n, TRACE - n, "%s %d %d %d %d;", path, type, level, base, extra);
}

static int rec(const char *path, const struct stat *st, int type, struct FTW *f)
{
    note(path, type, f->level, f->base, type == FTW_F ? (int)st->st_size : 0);
    return 0;
}

/* FTW_CHDIR: the entry is found from where the walk is */
static int rec_chdir(const char *path, const struct stat *st, int type, struct FTW *f)
{
    (void)st;
    struct stat here;
    note(path, type, f->level, f->base, lstat(path + f->base, &here) == 0);
    return 0;
}

static int rec_skip(const char *path, const struct stat *st, int type, struct FTW *f)
{
    rec(path, st, type, f);
    return type == FTW_D && !strcmp(path + f->base, "sub") ? FTW_SKIP_SUBTREE : FTW_CONTINUE;
}

static int rec_siblings(const char *path, const struct stat *st, int type, struct FTW *f)
{
    rec(path, st, type, f);
    return !strcmp(path + f->base, "c") ? FTW_SKIP_SIBLINGS : FTW_CONTINUE;
}

static int rec_stop(const char *path, const struct stat *st, int type, struct FTW *f)
{
    rec(path, st, type, f);
    return f->level == 1 ? 7 : 0;
}

static int rec_old(const char *path, const struct stat *st, int type)
{
    (void)st;
    note(path, type, 0, 0, 0);
    return 0;
}

/* the walks into out[k] (WALKS of them), each walk's result after its record */
static void walks(char out[WALKS][TRACE])
{
    char cwd[PATH_MAX] = "", after[PATH_MAX] = "";
    if (!getcwd(cwd, sizeof cwd))
        cwd[0] = 0;
    for (int k = 0; k < WALKS; k++) {
        trace = out[k];
        trace[0] = 0;
        int r;
        errno = 0;
        switch (k) {
        case 0: r = nftw(dir, rec, 4, FTW_PHYS); break;
        case 1: r = nftw(dir, rec, 4, 0); break;
        case 2: r = nftw(dir, rec, 1, FTW_DEPTH | FTW_PHYS | FTW_MOUNT); break;
        case 3: r = nftw(dir, rec_chdir, 2, FTW_CHDIR | FTW_PHYS); break;
        case 4: r = nftw(dir, rec_skip, 4, FTW_ACTIONRETVAL | FTW_PHYS); break;
        case 5: r = nftw(dir, rec_stop, 4, FTW_PHYS); break;
        case 6: r = ftw(dir, rec_old, 4); break;
        case 7: r = nftw("sub/", rec_chdir, 4, FTW_CHDIR | FTW_DEPTH); break;
        case 8: r = nftw(dir, rec_siblings, 4, FTW_ACTIONRETVAL); break;
        default: r = nftw(in(7, "missing"), rec, 4, 0); break;
        }
        size_t n = strlen(trace);
        snprintf(trace + n, TRACE - n, "= %d %d", r, r == -1 ? errno : 0);
        n = strlen(trace);
        if (!getcwd(after, sizeof after) || strcmp(after, cwd))
            snprintf(trace + n, TRACE - n, " cwd moved to %s", after);
    }
}

/* ---- descriptors libc makes: the worker's, read by main ---- */
static char temp_file[PATH_MAX + 64], temp_suffixed[PATH_MAX + 64], temp_dir[PATH_MAX + 64],
    temp_name[PATH_MAX + 64];
static char shm_name[64];
static int memfd = -1, timer = -1, notify = -1;

static void make_descriptors(void)
{
    snprintf(temp_file, sizeof temp_file, "%s", in(0, "tXXXXXX"));
    int fd = mkstemp(temp_file);
    CHECK_GE("w_mkstemp", fd, 0);
    CHECK_EQ("w_mkstemp_write", write(fd, "temp", 4), 4);
    struct stat st;
    CHECK_EQ("w_mkstemp_fstat", fstat(fd, &st) ? -1 : (int)st.st_size, 4);
    CHECK_EQ("w_mkstemp_close", close(fd), 0);
    snprintf(temp_suffixed, sizeof temp_suffixed, "%s", in(0, "sXXXXXX.txt"));
    fd = mkostemps(temp_suffixed, 4, O_APPEND);
    CHECK_GE("w_mkostemps", fd, 0);
    CHECK("w_mkostemps_suffix", strstr(temp_suffixed, ".txt") != NULL);
    CHECK_EQ("w_mkostemps_append", (fcntl(fd, F_GETFL) & O_APPEND) != 0, 1);
    CHECK_EQ("w_mkostemps_close", close(fd), 0);
    snprintf(temp_dir, sizeof temp_dir, "%s", in(0, "dXXXXXX"));
    CHECK("w_mkdtemp", mkdtemp(temp_dir) != NULL);
    snprintf(temp_name, sizeof temp_name, "%s", in(0, "nXXXXXX"));
    /* looked up as the program's (a call by name warns at each link) */
    char *(*make_name)(char *) = (char *(*)(char *))dlsym(RTLD_DEFAULT, "mktemp");
    CHECK("w_mktemp", make_name && make_name(temp_name)[0] != 0);
    snprintf(shm_name, sizeof shm_name, "/cables-paths-%d", (int)getpid());
    fd = shm_open(shm_name, O_CREAT | O_EXCL | O_RDWR, 0600);
    CHECK_GE("w_shm_open", fd, 0);
    CHECK_EQ("w_shm_write", write(fd, "shm", 3), 3);
    CHECK_EQ("w_shm_close", close(fd), 0);
    memfd = memfd_create("cables-paths", 0);
    CHECK_GE("w_memfd", memfd, 0);
    CHECK_EQ("w_memfd_write", write(memfd, "memfd", 5), 5);
    timer = timerfd_create(CLOCK_MONOTONIC, 0);
    CHECK_GE("w_timerfd", timer, 0);
    struct itimerspec t = { { 0, 0 }, { 0, 1000000 } }, g;
    CHECK_EQ("w_timerfd_settime", timerfd_settime(timer, 0, &t, NULL), 0);
    CHECK_EQ("w_timerfd_gettime", timerfd_gettime(timer, &g), 0);
    notify = inotify_init1(IN_NONBLOCK);
    CHECK_GE("w_inotify", notify, 0);
    CHECK_GE("w_inotify_watch", inotify_add_watch(notify, in(0, "sub"), IN_CREATE), 0);
    /* names libc looks up inside itself (looked up as the program's, as
     * mktemp) and the working directory by name: main's */
    char *(*temp_in)(const char *, const char *) =
        (char *(*)(const char *, const char *))dlsym(RTLD_DEFAULT, "tempnam");
    char *tn = temp_in ? temp_in(dir, "cab") : NULL;
    CHECK("w_tempnam", tn != NULL);
    CHECK("w_tempnam_in_dir", tn && (getenv("TMPDIR") || !strncmp(tn, dir, strlen(dir))));
    free(tn);
    char here_now[PATH_MAX] = "", *cur = get_current_dir_name();
    CHECK("w_get_current_dir_name", cur && getcwd(here_now, sizeof here_now) &&
                                        !strcmp(cur, here_now));
    free(cur);
    /* a command, run where the process's working directory is */
    CHECK_EQ("w_system", system("echo sys > sysfile"), 0);
    int st3 = system("exit 3");
    CHECK_EQ("w_system_status", WIFEXITED(st3) ? WEXITSTATUS(st3) : -1, 3);
    /* a signalfd reads the signals of its node's process: its own */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR2);
    int sfd = signalfd(-1, &set, SFD_NONBLOCK);
    CHECK_GE("w_signalfd", sfd, 0);
    struct signalfd_siginfo si;
    errno = 0;
    CHECK_EQ("w_signalfd_read", read(sfd, &si, sizeof si), -1);
    CHECK_ERR("w_signalfd_read_errno", errno, EAGAIN);
    CHECK_EQ("w_signalfd_close", close(sfd), 0);
}

static void read_descriptors(void)
{
    struct stat st;
    char buf[16] = "";
    int fd = open(temp_file, O_RDONLY);
    CHECK_GE("m_mkstemp_file", fd, 0);
    CHECK_EQ("m_mkstemp_read", read(fd, buf, sizeof buf), 4);
    CHECK("m_mkstemp_text", !memcmp(buf, "temp", 4));
    close(fd);
    CHECK_EQ("m_system_file", size_of(in(7, "sysfile")), 4);
    CHECK_EQ("m_mkostemps_file", stat(temp_suffixed, &st), 0);
    CHECK("m_mkdtemp_dir", stat(temp_dir, &st) == 0 && S_ISDIR(st.st_mode));
    errno = 0;
    CHECK_EQ("m_mktemp_free", stat(temp_name, &st), -1);
    CHECK_ERR("m_mktemp_free_errno", errno, ENOENT);
    fd = shm_open(shm_name, O_RDONLY, 0);
    CHECK_GE("m_shm_open", fd, 0);
    memset(buf, 0, sizeof buf);
    CHECK_EQ("m_shm_read", read(fd, buf, sizeof buf), 3);
    CHECK("m_shm_text", !strcmp(buf, "shm"));
    close(fd);
    memset(buf, 0, sizeof buf);
    CHECK_EQ("m_memfd_pread", pread(memfd, buf, sizeof buf, 0), 5);
    CHECK("m_memfd_text", !strcmp(buf, "memfd"));
    uint64_t expired = 0;
    CHECK_EQ("m_timerfd_read", read(timer, &expired, sizeof expired), 8);
    CHECK_EQ("m_timerfd_expired", expired, 1);
}

static void drop_descriptors(void)
{
    char ev[sizeof(struct inotify_event) + NAME_MAX + 1];
    ssize_t n = read(notify, ev, sizeof ev);
    const struct inotify_event *e = (const struct inotify_event *)ev;
    CHECK_GE("w_inotify_read", n, (ssize_t)sizeof *e);
    CHECK("w_inotify_event", n > 0 && (e->mask & IN_CREATE) && !strcmp(e->name, "m"));
    CHECK_EQ("w_inotify_close", close(notify), 0);
    CHECK_EQ("w_memfd_close", close(memfd), 0);
    CHECK_EQ("w_timerfd_close", close(timer), 0);
    CHECK_EQ("w_shm_unlink", shm_unlink(shm_name), 0);
    CHECK_EQ("w_unlink_system", unlink("sysfile"), 0);
    CHECK_EQ("w_unlink_temp", unlink(temp_file), 0);
    CHECK_EQ("w_unlink_suffixed", unlink(temp_suffixed), 0);
    CHECK_EQ("w_rmdir_temp", rmdir(temp_dir), 0);
}

static struct statvfs main_vfs;
static struct statfs main_fs;

static void *worker(void *arg)
{
    (void)arg;
    struct stat st;
    char buf[64];
    CHECK("w_gate_1", gate_wait(&to_worker, 1));
    /* main's file, found */
    CHECK_EQ("w_stat", stat(in(0, "a"), &st), 0);
    CHECK_EQ("w_stat_size", st.st_size, 10);
    CHECK("w_stat_reg", S_ISREG(st.st_mode));
    CHECK_EQ("w_lstat", lstat(in(0, "a"), &st), 0);
    CHECK_EQ("w_fstatat", fstatat(AT_FDCWD, in(0, "a"), &st, 0), 0);
    struct statx sx;
    CHECK_EQ("w_statx", statx(AT_FDCWD, in(0, "a"), 0, STATX_SIZE, &sx), 0);
    CHECK_EQ("w_statx_size", sx.stx_size, 10);
    CHECK_EQ("w_access", access(in(0, "a"), R_OK | W_OK), 0);
    CHECK_EQ("w_faccessat", faccessat(AT_FDCWD, in(0, "a"), R_OK, AT_EACCESS), 0);
    errno = 0;
    CHECK_EQ("w_access_missing", access(in(0, "missing"), F_OK), -1);
    CHECK_ERR("w_access_missing_errno", errno, ENOENT);
    errno = 0;
    CHECK_EQ("w_stat_missing", stat(in(0, "missing"), &st), -1);
    CHECK_ERR("w_stat_missing_errno", errno, ENOENT);
    /* its directory, listed: ".", ".." and "a" */
    DIR *d = opendir(dir);
    CHECK("w_opendir", d != NULL);
    CHECK_EQ("w_readdir", count(d, NULL, 0), 3);
    rewinddir(d);
    char first[256] = "", again[256] = "";
    CHECK("w_readdir_first", readdir(d) != NULL);
    long pos = telldir(d);
    CHECK_EQ("w_readdir_rest", count(d, first, sizeof first), 2);
    seekdir(d, pos);
    CHECK_EQ("w_seekdir", count(d, again, sizeof again), 2);
    CHECK("w_seekdir_same", first[0] && !strcmp(first, again));
    struct stat sd, sdir;
    CHECK_EQ("w_fstat_dirfd", fstat(dirfd(d), &sd), 0);
    CHECK_EQ("w_stat_dir", stat(dir, &sdir), 0);
    CHECK_EQ("w_dirfd_is_the_dir", sd.st_ino, sdir.st_ino);
    int fa = openat(dirfd(d), "a", O_RDONLY);
    CHECK_GE("w_openat_dirfd", fa, 0);
    CHECK_EQ("w_read_a", read(fa, buf, 10), 10);
    CHECK("w_read_a_text", !memcmp(buf, "0123456789", 10));
    close(fa);
    CHECK_EQ("w_closedir", closedir(d), 0);
    int dfd = open(dir, O_RDONLY | O_DIRECTORY);
    d = dfd >= 0 ? fdopendir(dfd) : NULL;
    CHECK("w_fdopendir", d != NULL);
    CHECK_EQ("w_fdopendir_readdir", count(d, NULL, 0), 3);
    CHECK_EQ("w_fdopendir_closedir", d ? closedir(d) : -1, 0);
    struct dirent **list = NULL;
    CHECK_EQ("w_scandir", scandir(dir, &list, NULL, alphasort), 3);
    CHECK("w_scandir_sorted", list && !strcmp(list[0]->d_name, ".") && !strcmp(list[2]->d_name, "a"));
    for (int i = 0; list && i < 3; i++)
        free(list[i]);
    free(list);
    glob_t g;
    CHECK_EQ("w_glob", glob(in(0, "*"), 0, NULL, &g), 0);
    CHECK_EQ("w_glob_count", g.gl_pathc, 1);
    CHECK("w_glob_a", g.gl_pathc == 1 && !strcmp(g.gl_pathv[0], in(1, "a")));
    globfree(&g);
    errno = 0;
    CHECK("w_opendir_missing", opendir(in(0, "missing")) == NULL);
    CHECK_ERR("w_opendir_missing_errno", errno, ENOENT);
    /* relative to main's working directory, the new directory */
    CHECK_EQ("w_stat_relative", stat("a", &st), 0);
    /* the worker's changes */
    CHECK_EQ("w_mkdir", mkdir(in(0, "sub"), 0750), 0);
    errno = 0;
    CHECK_EQ("w_mkdir_again", mkdir("sub", 0750), -1);
    CHECK_ERR("w_mkdir_again_errno", errno, EEXIST);
    CHECK_EQ("w_rename", rename(in(0, "a"), in(1, "sub/b")), 0);
    CHECK_EQ("w_link", link(in(0, "sub/b"), "c"), 0);
    CHECK_EQ("w_symlink", symlink("sub/b", in(0, "l")), 0);
    memset(buf, 0, sizeof buf);
    CHECK_EQ("w_readlink", readlink(in(0, "l"), buf, sizeof buf), 5);
    CHECK("w_readlink_text", !strcmp(buf, "sub/b"));
    CHECK_EQ("w_readlinkat", readlinkat(AT_FDCWD, "l", buf, 3), 3);
    char *rp = realpath(in(0, "l"), NULL), rbuf[PATH_MAX];
    CHECK("w_realpath", rp && !strcmp(rp, real_b));
    free(rp);
    CHECK("w_realpath_relative", realpath("sub/../l", rbuf) && !strcmp(rbuf, real_b));
    errno = 0;
    CHECK("w_realpath_missing", !realpath("missing/x", rbuf));
    CHECK_ERR("w_realpath_missing_errno", errno, ENOENT);
    CHECK_EQ("w_chmod", chmod("c", 0604), 0);
    CHECK_EQ("w_truncate", truncate(in(0, "c"), 3), 0);
    struct timeval tv[2] = { { 1000, 0 }, { 2000, 0 } };
    CHECK_EQ("w_utimes", utimes("c", tv), 0);
    struct timespec ts[2] = { { 3000, 0 }, { UTIME_OMIT, UTIME_OMIT } };
    CHECK_EQ("w_utimensat", utimensat(AT_FDCWD, in(0, "sub/b"), ts, 0), 0);
    CHECK_EQ("w_mkfifo", mkfifo(in(0, "fifo"), 0600), 0);
    errno = 0;
    CHECK_EQ("w_renameat2_noreplace",
             renameat2(AT_FDCWD, in(0, "fifo"), AT_FDCWD, in(1, "c"), RENAME_NOREPLACE), -1);
    CHECK_ERR("w_renameat2_noreplace_errno", errno, EEXIST);
    /* main's file system */
    struct statvfs vfs;
    struct statfs fs;
    CHECK_EQ("w_statvfs", statvfs(dir, &vfs), 0);
    CHECK_EQ("w_statvfs_blocks", vfs.f_blocks, main_vfs.f_blocks);
    CHECK_EQ("w_statvfs_fsid", vfs.f_fsid, main_vfs.f_fsid);
    CHECK_EQ("w_statfs", statfs("sub", &fs), 0);
    CHECK_EQ("w_statfs_type", fs.f_type, main_fs.f_type);
    CHECK_EQ("w_statfs_blocks", fs.f_blocks, main_fs.f_blocks);
    int dfd2 = open(dir, O_RDONLY | O_DIRECTORY);
    CHECK_EQ("w_fstatvfs", fstatvfs(dfd2, &vfs), 0);
    CHECK_EQ("w_fstatvfs_blocks", vfs.f_blocks, main_vfs.f_blocks);
    CHECK_EQ("w_fstatfs", fstatfs(dfd2, &fs), 0);
    CHECK_EQ("w_fstatfs_blocks", fs.f_blocks, main_fs.f_blocks);
    close(dfd2);
    make_descriptors();
    gate_set(&to_main, 1);

    /* main's changes, found; then everything removed */
    CHECK("w_gate_2", gate_wait(&to_worker, 2));
    /* main's walks, walked again */
    static char mine[WALKS][TRACE];
    walks(mine);
    for (int k = 0; k < WALKS; k++) {
        char name[32];
        snprintf(name, sizeof name, "w_walk_%d", k);
        if (!CHECK(name, !strcmp(mine[k], main_walks[k])))
            fprintf(stderr, "paths: walk %d: worker's %s\n  main's %s\n", k, mine[k], main_walks[k]);
    }
    CHECK("w_walk_found", strstr(mine[0], "/sub/m 0 2 ") && strstr(mine[0], "/l 4 1 "));
    CHECK("w_walk_dangling", strstr(mine[1], "/dangling 6 1 ") != NULL);
    CHECK("w_walk_loop_once", strstr(mine[1], "/loop") == NULL && strstr(mine[0], "/loop 4 1 "));
    CHECK_EQ("w_unlink_loop", unlink("loop"), 0);
    CHECK_EQ("w_unlink_dangling", unlink("dangling"), 0);
    drop_descriptors();
    CHECK_EQ("w_size_main_wrote", size_of(in(0, "sub/m")), 4);
    CHECK_EQ("w_chmod_by_main", stat(in(0, "sub/m"), &st) ? -1 : (int)(st.st_mode & 0777), 0640);
    list = NULL;
    CHECK_EQ("w_scandir_sub", scandir("sub", &list, NULL, alphasort), 4); /* . .. b m */
    CHECK("w_scandir_sub_names", list && !strcmp(list[2]->d_name, "b") && !strcmp(list[3]->d_name, "m"));
    for (int i = 0; list && i < 4; i++)
        free(list[i]);
    free(list);
    CHECK_EQ("w_glob_sub", glob("sub/*", 0, NULL, &g), 0);
    CHECK("w_glob_sub_names", g.gl_pathc == 2 && !strcmp(g.gl_pathv[0], "sub/b") &&
                                  !strcmp(g.gl_pathv[1], "sub/m"));
    globfree(&g);
    errno = 0;
    CHECK_EQ("w_rmdir_not_empty", rmdir(in(0, "sub")), -1);
    CHECK_ERR("w_rmdir_not_empty_errno", errno, ENOTEMPTY);
    CHECK_EQ("w_unlink", unlink(in(0, "c")), 0);
    CHECK_EQ("w_unlinkat", unlinkat(AT_FDCWD, "l", 0), 0);
    CHECK_EQ("w_remove_fifo", remove(in(0, "fifo")), 0);
    CHECK_EQ("w_unlink_b", unlink(in(0, "sub/b")), 0);
    CHECK_EQ("w_unlink_m", unlink("sub/m"), 0);
    CHECK_EQ("w_remove_dir", remove(in(0, "sub")), 0);
    errno = 0;
    CHECK_EQ("w_unlink_gone", unlink(in(0, "c")), -1);
    CHECK_ERR("w_unlink_gone_errno", errno, ENOENT);
    gate_set(&to_main, 2);
    return NULL;
}

int main(void)
{
    check_start();
    mode_t mask = umask(022);
    umask(mask);
    const char *base = getenv("PATHS_DIR");
    snprintf(dir, sizeof dir, "%s/cables-paths-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(dir)) {
        perror("paths: mkdtemp");
        return 1;
    }
    int fd = open(in(2, "a"), O_CREAT | O_WRONLY | O_EXCL, 0644);
    CHECK_GE("m_open", fd, 0);
    CHECK_EQ("m_write", write(fd, "0123456789", 10), 10);
    CHECK_EQ("m_close", close(fd), 0);
    CHECK_EQ("m_statvfs", statvfs(dir, &main_vfs), 0);
    CHECK_EQ("m_statfs", statfs(dir, &main_fs), 0);
    CHECK_EQ("m_chdir", chdir(dir), 0);
    char rdir[PATH_MAX];
    CHECK("m_realpath", realpath(dir, rdir) != NULL);
    snprintf(real_b, sizeof real_b, "%s/sub/b", rdir);
    pthread_t t;
    CHECK_EQ("m_create", pthread_create(&t, NULL, worker, NULL), 0);
    gate_set(&to_worker, 1);

    CHECK("m_gate_1", gate_wait(&to_main, 1));
    struct stat st, sl;
    errno = 0;
    CHECK_EQ("m_a_moved", stat(in(2, "a"), &st), -1);
    CHECK_ERR("m_a_moved_errno", errno, ENOENT);
    CHECK_EQ("m_b", stat(in(2, "sub/b"), &st), 0);
    CHECK_EQ("m_b_truncated", st.st_size, 3);
    CHECK_EQ("m_b_links", st.st_nlink, 2);
    CHECK_EQ("m_b_mode", st.st_mode & 0777, 0604);
    CHECK_EQ("m_b_mtime", st.st_mtim.tv_sec, 2000);
    CHECK_EQ("m_b_atime", st.st_atim.tv_sec, 3000);
    CHECK_EQ("m_sub_mode", stat(in(2, "sub"), &sl) ? -1 : (int)(sl.st_mode & 07777), 0750 & ~mask);
    CHECK_EQ("m_l", lstat(in(2, "l"), &sl), 0);
    CHECK("m_l_symlink", S_ISLNK(sl.st_mode));
    CHECK_EQ("m_fifo", stat(in(2, "fifo"), &sl), 0);
    CHECK("m_fifo_is_fifo", S_ISFIFO(sl.st_mode));
    fd = open(in(2, "sub/m"), O_CREAT | O_WRONLY, 0600);
    CHECK_GE("m_open_m", fd, 0);
    CHECK_EQ("m_write_m", write(fd, "main", 4), 4);
    CHECK_EQ("m_close_m", close(fd), 0);
    CHECK_EQ("m_chmod_m", chmod(in(2, "sub/m"), 0640), 0);
    read_descriptors();
    CHECK_EQ("m_symlink_loop", symlink(".", "loop"), 0);
    CHECK_EQ("m_symlink_dangling", symlink("missing", "dangling"), 0);
    walks(main_walks);
    gate_set(&to_worker, 2);

    CHECK("m_gate_2", gate_wait(&to_main, 2));
    CHECK_EQ("m_join", pthread_join(t, NULL), 0);
    errno = 0;
    CHECK_EQ("m_sub_gone", stat(in(2, "sub"), &st), -1);
    CHECK_ERR("m_sub_gone_errno", errno, ENOENT);
    errno = 0;
    CHECK_EQ("m_shm_gone", shm_open(shm_name, O_RDONLY, 0), -1);
    CHECK_ERR("m_shm_gone_errno", errno, ENOENT);
    CHECK_EQ("m_chdir_out", chdir("/"), 0);
    CHECK_EQ("m_rmdir", rmdir(dir), 0);
    return check_finish();
}
