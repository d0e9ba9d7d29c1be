/* fortify_open: built with _FORTIFY_SOURCE=2 (Debian's hardening flags): a
 * thread (on libcables, on another node than main) opens a file with flags
 * not known when compiled and no mode (glibc's headers then call __open_2
 * and __openat_2), and main uses the descriptors.  Before, on libcables,
 * those were libc's on the thread's node: its descriptor was the node's
 * own, whose number was another file at the master (main's mkstemp file).
 * RESULT ok=1 checks=N (check.h) */
#undef _FORTIFY_SOURCE
#define _FORTIFY_SOURCE 2
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/syscall.h>
#include "check.h"

static char path[64] = "/tmp/fortifyopen.XXXXXX";
static volatile int flags = O_RDWR;
static int wfd = -1, wfd2 = -1;

static void *worker(void *arg)
{
    (void)arg;
    wfd = open(path, flags);
    CHECK_GE("open_2", wfd, 0);
    char b[8] = "";
    CHECK_EQ("w_read", read(wfd, b, 5), 5);
    CHECK("w_data", memcmp(b, "hello", 5) == 0);
    wfd2 = openat(AT_FDCWD, path, flags);
    CHECK_GE("openat_2", wfd2, 0);
    CHECK_EQ("w_read2", read(wfd2, b, 5), 5);
    return NULL;
}

int main(void)
{
    check_start();
    int f = mkstemp(path);
    CHECK_EQ("m_write", write(f, "hello world", 11), 11);
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    pthread_join(t, NULL);
    char b[8] = "";
    CHECK_EQ("m_read", pread(wfd, b, 5, 6), 5);
    CHECK("m_data", memcmp(b, "world", 5) == 0);
    CHECK_EQ("m_offset", lseek(wfd, 0, SEEK_CUR), 5);
    CHECK_EQ("m_offset2", lseek(wfd2, 0, SEEK_CUR), 5);
    CHECK_EQ("m_close", close(wfd), 0);
    CHECK_EQ("m_close2", close(wfd2), 0);
    close(f);
    unlink(path);
    return check_finish();
}
