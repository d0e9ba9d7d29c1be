/* fd_helpers: a thread (on libcables, on another node than main) uses
 * descriptors main opened with calls a legacy program makes: splice, tee,
 * copy_file_range, sendfile, lockf, fcntl record locks (F_SETLK,
 * F_OFD_SETLK), flock, posix_fallocate, posix_fadvise, futimens,
 * fdatasync, syncfs, readahead; a forked child sees its locks.  Before,
 * on libcables, copy_file_range, splice, tee, posix_fallocate,
 * posix_fadvise, readahead, futimens, syncfs and lockf were libc's on the
 * thread's node (EBADF: 16 checks failed).
 * RESULT ok=1 checks=N (check.h) */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/file.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "check.h"

static char dir[64], pa[128], pb[128], pc[128];
static int fa, fb, fc, pp[2], pq[2];

static void *worker(void *arg)
{
    (void)arg;
    char buf[64];
    /* sendfile fa -> fb */
    off_t off = 0;
    CHECK_EQ("sendfile", sendfile(fb, fa, &off, 10), 10);
    CHECK_EQ("sendfile_off", off, 10);
    /* copy_file_range fa -> fc */
    loff_t in = 0, out = 0;
    ssize_t r = copy_file_range(fa, &in, fc, &out, 10, 0);
    CHECK_EQ("copy_file_range", r, 10);
    /* splice: pipe -> file */
    CHECK_EQ("pipe_write", write(pp[1], "splicedata", 10), 10);
    loff_t so = 100;
    r = splice(pp[0], NULL, fb, &so, 10, 0);
    CHECK_EQ("splice", r, 10);
    if (r < 0) fprintf(stderr, "splice: %s\n", strerror(errno));
    /* tee pipe -> pipe */
    CHECK_EQ("pipe_write2", write(pp[1], "teedata", 7), 7);
    r = tee(pp[0], pq[1], 7, 0);
    CHECK_EQ("tee", r, 7);
    if (r < 0) fprintf(stderr, "tee: %s\n", strerror(errno));
    memset(buf, 0, sizeof buf);
    if (r == 7) {
        CHECK_EQ("tee_read_q", read(pq[0], buf, 7), 7);
        CHECK("tee_data", memcmp(buf, "teedata", 7) == 0);
    }
    CHECK_EQ("tee_read_p", read(pp[0], buf, 7), 7);
    /* posix_fallocate / fadvise / readahead */
    int e = posix_fallocate(fc, 0, 8192);
    CHECK_ERR("posix_fallocate", e, 0);
    e = posix_fadvise(fc, 0, 0, POSIX_FADV_SEQUENTIAL);
    CHECK_ERR("posix_fadvise", e, 0);
    CHECK_EQ("readahead", readahead(fa, 0, 10), 0);
    /* futimens */
    struct timespec ts[2] = { { 1000000, 0 }, { 2000000, 0 } };
    CHECK_EQ("futimens", futimens(fc, ts), 0);
    CHECK_EQ("fdatasync", fdatasync(fc), 0);
    CHECK_EQ("syncfs", syncfs(fc), 0);
    /* lockf */
    CHECK_EQ("lockf", lockf(fa, F_LOCK, 0), 0);
    /* fcntl F_SETLK */
    struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 5 };
    CHECK_EQ("setlk", fcntl(fb, F_SETLK, &fl), 0);
    /* OFD lock on fc */
    struct flock ofl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 5 };
    CHECK_EQ("ofd_setlk", fcntl(fc, F_OFD_SETLK, &ofl), 0);
    CHECK_EQ("flock", flock(fa, LOCK_EX | LOCK_NB), 0);
    return NULL;
}

int main(void)
{
    check_start();
    snprintf(dir, sizeof dir, "/tmp/fdhelpers.XXXXXX");
    if (!mkdtemp(dir)) return 1;
    snprintf(pa, sizeof pa, "%s/a", dir);
    snprintf(pb, sizeof pb, "%s/b", dir);
    snprintf(pc, sizeof pc, "%s/c", dir);
    fa = open(pa, O_RDWR | O_CREAT, 0600);
    fb = open(pb, O_RDWR | O_CREAT, 0600);
    fc = open(pc, O_RDWR | O_CREAT, 0600);
    CHECK_EQ("write_a", write(fa, "0123456789", 10), 10);
    CHECK_EQ("pipe", pipe(pp), 0);
    CHECK_EQ("pipe2", pipe(pq), 0);
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    pthread_join(t, NULL);
    char buf[64];
    memset(buf, 0, sizeof buf);
    CHECK_EQ("read_b", pread(fb, buf, 10, 0), 10);
    CHECK("b_data", memcmp(buf, "0123456789", 10) == 0);
    memset(buf, 0, sizeof buf);
    CHECK_EQ("read_b_splice", pread(fb, buf, 10, 100), 10);
    CHECK("b_splice_data", memcmp(buf, "splicedata", 10) == 0);
    memset(buf, 0, sizeof buf);
    CHECK_EQ("read_c", pread(fc, buf, 10, 0), 10);
    CHECK("c_data", memcmp(buf, "0123456789", 10) == 0);
    struct stat st;
    CHECK_EQ("fstat_c", fstat(fc, &st), 0);
    CHECK_EQ("c_size_fallocate", st.st_size, 8192);
    CHECK_EQ("c_mtime", st.st_mtim.tv_sec, 2000000);
    /* locks held by the process: check from a child (different process) */
    pid_t p = fork();
    if (p == 0) {
        int fd = open(pb, O_RDWR);
        struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 5 };
        int r1 = fcntl(fd, F_GETLK, &fl);
        int setlk_held = (r1 == 0 && fl.l_type == F_WRLCK);
        int fd2 = open(pa, O_RDWR);
        struct flock fl2 = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0 };
        fcntl(fd2, F_GETLK, &fl2);
        int lockf_held = fl2.l_type == F_WRLCK;
        int fd3 = open(pc, O_RDWR);
        struct flock fl3 = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 5 };
        fcntl(fd3, F_OFD_GETLK, &fl3);
        int ofd_held = fl3.l_type == F_WRLCK;
        int flock_held = flock(fd2, LOCK_EX | LOCK_NB) != 0;
        _exit(setlk_held | lockf_held << 1 | ofd_held << 2 | flock_held << 3);
    }
    int status = 0;
    waitpid(p, &status, 0);
    int bits = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    CHECK_EQ("setlk_held", bits & 1, 1);
    CHECK_EQ("lockf_held", bits & 2, 2);
    CHECK_EQ("ofd_held", bits & 4, 4);
    CHECK_EQ("flock_held", bits & 8, 8);
    unlink(pa); unlink(pb); unlink(pc); rmdir(dir);
    return check_finish();
}
