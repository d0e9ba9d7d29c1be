/* lfs_names: a program built with _FILE_OFFSET_BITS=64 (as many legacy
 * servers are) calls the 64 names: a thread (on libcables, on another node
 * than main) calls creat (creat64), fgetpos and fsetpos (fgetpos64,
 * fsetpos64) on a stream main opened, readdir_r (readdir64_r) on a
 * directory stream of its own, and main uses the thread's descriptor.
 * Before, on libcables, those names were libc's on the thread's node: the
 * descriptor was the node's own (its write failed; main's number named
 * another file), fgetpos gave EINVAL, readdir_r EBADF.
 * RESULT ok=1 checks=N (check.h) */
#define _FILE_OFFSET_BITS 64
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include "check.h"

static char dir[64];
static FILE *mf;
static DIR *md;
static int cfd = -1;
static fpos_t pos;

static void *worker(void *arg)
{
    (void)arg;
    char p[128]; snprintf(p, sizeof p, "%s/created", dir);
    cfd = creat(p, 0600);
    CHECK_GE("creat", cfd, 0);
    CHECK_EQ("creat_write", write(cfd, "created", 7), 7);
    char buf[32];
    CHECK("fgets1", fgets(buf, sizeof buf, mf) != NULL);
    int r = fgetpos(mf, &pos);
    CHECK_EQ("fgetpos", r, 0);
    if (r) fprintf(stderr, "fgetpos: %s\n", strerror(errno));
    CHECK("fgets2", fgets(buf, sizeof buf, mf) && strcmp(buf, "line2\n") == 0);
    r = fsetpos(mf, &pos);
    CHECK_EQ("fsetpos", r, 0);
    if (r) fprintf(stderr, "fsetpos: %s\n", strerror(errno));
    CHECK("fgets_again", fgets(buf, sizeof buf, mf) && strcmp(buf, "line2\n") == 0);
    md = opendir(dir);
    CHECK("opendir", md != NULL);
    struct dirent ent, *res = NULL;
    int n = 0;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations" /* (programs still call it) */
    while (md && (r = readdir_r(md, &ent, &res)) == 0 && res) n++;
#pragma GCC diagnostic pop
    if (md)
        closedir(md);
    CHECK_EQ("readdir_r", r, 0);
    CHECK_EQ("readdir_r_count", n, 4); /* . .. data created */
    return NULL;
}

int main(void)
{
    check_start();
    snprintf(dir, sizeof dir, "/tmp/lfsnames.XXXXXX");
    if (!mkdtemp(dir)) return 1;
    char p[128]; snprintf(p, sizeof p, "%s/data", dir);
    FILE *w = fopen(p, "w"); fputs("line1\nline2\nline3\n", w); fclose(w);
    mf = fopen(p, "r");
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    pthread_join(t, NULL);
    char b[16] = "";
    CHECK_EQ("main_pread_creat", cfd >= 0 ? pread(cfd, b, 7, 0) : -2, -1); /* creat is O_WRONLY */
    CHECK_EQ("main_write_creat", write(cfd, "+", 1), 1);
    struct stat st;
    snprintf(p, sizeof p, "%s/created", dir);
    CHECK_EQ("stat_created", stat(p, &st), 0);
    CHECK_EQ("created_size", st.st_size, 8);
    close(cfd);
    fclose(mf);
    char cmd[128]; snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    system(cmd);
    return check_finish();
}
