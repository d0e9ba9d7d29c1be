/* process: the working directory, the file mode mask and the environment
 * are the process's.  Main makes a directory, moves into it, sets its mask
 * to 077 and some variables (setenv, putenv, one set then unset); threads
 * (on as many nodes as there are) then find them: relative paths (getcwd,
 * access, stat, mkdir, fopen, realpath, opendir), the modes of what they
 * make, getenv.  A thread changes each in turn (chdir, fchdir of a
 * descriptor and of a directory stream's, umask, setenv, unsetenv, putenv),
 * and main after joining it, and threads after that (on every node), find
 * its changes.  The same for the locale (setlocale: mbstowcs of
 * UTF-8).
 * The threads of each step start together, so that they are placed on
 * nodes of their own.
 * RESULT ok=1 checks=N (check.h) */
#include <dirent.h>
#include <fcntl.h>
#include <locale.h>
#include <limits.h>
#include <stdint.h>
#include <sys/stat.h>

#include "check.h"

#define LOOKERS 3

static char dir[PATH_MAX], sub[PATH_MAX + 8];

static int same(const char *got, const char *want) { return got && !strcmp(got, want); }

static int cwd_is(const char *want)
{
    char buf[PATH_MAX];
    return getcwd(buf, sizeof buf) && !strcmp(buf, want);
}

static int mode_of(const char *path)
{
    struct stat st;
    return stat(path, &st) ? -1 : (int)(st.st_mode & 0777);
}

static void *look(void *arg)
{
    int i = (int)(intptr_t)arg;
    char name[32], want[PATH_MAX + 16];
    CHECK("look_getcwd", cwd_is(dir));
    CHECK_EQ("look_access", access("marker", R_OK), 0);
    struct stat st;
    CHECK_EQ("look_stat", stat("marker", &st), 0);
    CHECK_EQ("look_stat_size", st.st_size, 5);
    snprintf(name, sizeof name, "d%d", i);
    CHECK_EQ("look_mkdir", mkdir(name, 0777), 0);
    CHECK_EQ("look_mkdir_mode", mode_of(name), 0700);
    snprintf(name, sizeof name, "f%d", i);
    FILE *f = fopen(name, "w");
    CHECK("look_fopen", f != NULL);
    if (f)
        fclose(f);
    CHECK_EQ("look_fopen_mode", mode_of(name), 0600);
    char *rp = realpath("marker", NULL);
    snprintf(want, sizeof want, "%s/marker", dir);
    CHECK("look_realpath", same(rp, want));
    free(rp);
    DIR *d = opendir(".");
    int seen = 0;
    CHECK("look_opendir", d != NULL);
    for (struct dirent *e; d && (e = readdir(d));)
        seen += !strcmp(e->d_name, "marker");
    if (d)
        closedir(d);
    CHECK_EQ("look_readdir", seen, 1);
    CHECK("look_setenv", same(getenv("CABLES_TEST_VAR"), "main"));
    CHECK("look_putenv", same(getenv("CABLES_TEST_PUT"), "p1"));
    CHECK("look_unsetenv", getenv("CABLES_TEST_GONE") == NULL);
    CHECK("look_locale", same(setlocale(LC_CTYPE, NULL), "C.UTF-8"));
    CHECK("look_locale_numeric", same(setlocale(LC_NUMERIC, NULL), "C"));
    wchar_t wide[4];
    CHECK_EQ("look_mbstowcs", (long)mbstowcs(wide, "\xc3\xa9t\xc3\xa9", 4), 3);
    return NULL;
}

static void *change(void *arg)
{
    (void)arg;
    /* a directory descriptor (the process's, from open) and a directory
     * stream's (this node's, from opendir) */
    int up = open(".", O_RDONLY | O_DIRECTORY);
    CHECK("change_open_dir", up >= 0);
    CHECK_EQ("change_chdir", chdir("d0"), 0);
    CHECK("change_getcwd", cwd_is(sub));
    CHECK_EQ("change_fchdir", fchdir(up), 0);
    CHECK("change_fchdir_getcwd", cwd_is(dir));
    close(up);
    DIR *d = opendir("d0");
    CHECK("change_opendir", d != NULL);
    if (d) {
        struct stat st;
        CHECK("change_fstat_dirfd", fstat(dirfd(d), &st) == 0 && S_ISDIR(st.st_mode));
        CHECK_EQ("change_fchdir_dirfd", fchdir(dirfd(d)), 0);
        closedir(d);
    }
    CHECK("change_fchdir_dirfd_getcwd", cwd_is(sub));
    CHECK_ERR("change_chdir_missing", chdir("no-such-dir") ? errno : 0, ENOENT);
    CHECK_EQ("change_umask", umask(022), 077);
    CHECK_EQ("change_setenv", setenv("CABLES_FROM_WORKER", "w", 1), 0);
    CHECK_EQ("change_setenv_kept", setenv("CABLES_TEST_VAR", "no", 0), 0);
    CHECK_ERR("change_setenv_bad", setenv("A=B", "x", 1) ? errno : 0, EINVAL);
    CHECK_EQ("change_unsetenv", unsetenv("CABLES_TEST_PUT"), 0);
    static char put[] = "CABLES_PUT_WORKER=pw";
    CHECK_EQ("change_putenv", putenv(put), 0);
    static char unput[] = "CABLES_TEST_PUT2";
    CHECK_EQ("change_putenv_unset", putenv(unput), 0);
    CHECK("change_getenv", same(getenv("CABLES_FROM_WORKER"), "w"));
    CHECK("change_setlocale", setlocale(LC_NUMERIC, "C.UTF-8") != NULL);
    CHECK("change_setlocale_bad", setlocale(LC_ALL, "no_such_locale.x") == NULL);
    return NULL;
}

static void *after(void *arg)
{
    char name[32];
    snprintf(name, sizeof name, "e%d", (int)(intptr_t)arg);
    CHECK("after_getcwd", cwd_is(sub));
    CHECK_EQ("after_mkdir", mkdir(name, 0777), 0);
    CHECK_EQ("after_mkdir_mode", mode_of(name), 0755);
    CHECK_EQ("after_access_parent", access("../marker", F_OK), 0);
    CHECK("after_setenv", same(getenv("CABLES_FROM_WORKER"), "w"));
    CHECK("after_setenv_kept", same(getenv("CABLES_TEST_VAR"), "main"));
    CHECK("after_unsetenv", getenv("CABLES_TEST_PUT") == NULL);
    CHECK("after_putenv", same(getenv("CABLES_PUT_WORKER"), "pw"));
    CHECK("after_putenv_unset", getenv("CABLES_TEST_PUT2") == NULL);
    CHECK("after_locale", same(setlocale(LC_NUMERIC, NULL), "C.UTF-8"));
    CHECK("after_locale_kept", same(setlocale(LC_CTYPE, NULL), "C.UTF-8"));
    return NULL;
}

/* The threads of one run wait for each other before they start, so none
 * ends before the last is placed: the master then places them on nodes of
 * their own (the least loaded), whatever the timing of their creation. */
static pthread_barrier_t started;
static void *(*body)(void *);

static void *start(void *arg)
{
    pthread_barrier_wait(&started);
    return body(arg);
}

static void run(void *(*fn)(void *), int n)
{
    pthread_t t[LOOKERS];
    body = fn;
    CHECK_EQ("barrier_init", pthread_barrier_init(&started, NULL, (unsigned)n), 0);
    for (int i = 0; i < n; i++)
        CHECK_EQ("create", pthread_create(&t[i], NULL, start, (void *)(intptr_t)i), 0);
    for (int i = 0; i < n; i++)
        CHECK_EQ("join", pthread_join(t[i], NULL), 0);
    CHECK_EQ("barrier_destroy", pthread_barrier_destroy(&started), 0);
}

int main(void)
{
    check_start();
    char tmpl[] = "/tmp/cables-process-XXXXXX";
    if (!mkdtemp(tmpl)) {
        perror("mkdtemp");
        return 1;
    }
    CHECK_EQ("main_chdir", chdir(tmpl), 0);
    CHECK("main_getcwd", getcwd(dir, sizeof dir) != NULL);
    snprintf(sub, sizeof sub, "%s/d0", dir);
    FILE *f = fopen("marker", "w");
    CHECK("main_fopen", f != NULL);
    if (f) {
        fputs("hello", f);
        fclose(f);
    }
    umask(077);
    CHECK("main_setlocale", same(setlocale(LC_CTYPE, "C.UTF-8"), "C.UTF-8"));
    CHECK_EQ("main_setenv", setenv("CABLES_TEST_VAR", "main", 1), 0);
    static char put[] = "CABLES_TEST_PUT=p1";
    CHECK_EQ("main_putenv", putenv(put), 0);
    CHECK_EQ("main_setenv_gone", setenv("CABLES_TEST_GONE", "x", 1), 0);
    CHECK_EQ("main_unsetenv", unsetenv("CABLES_TEST_GONE"), 0);
    CHECK_EQ("main_setenv_put2", setenv("CABLES_TEST_PUT2", "x", 1), 0);

    run(look, LOOKERS);
    run(change, 1);
    CHECK("main_getcwd_changed", cwd_is(sub));
    CHECK_EQ("main_umask_changed", umask(022), 022);
    CHECK("main_setenv_changed", same(getenv("CABLES_FROM_WORKER"), "w"));
    CHECK("main_setenv_kept", same(getenv("CABLES_TEST_VAR"), "main"));
    CHECK("main_unsetenv_changed", getenv("CABLES_TEST_PUT") == NULL);
    CHECK("main_putenv_changed", same(getenv("CABLES_PUT_WORKER"), "pw"));
    CHECK("main_locale_changed", same(setlocale(LC_NUMERIC, NULL), "C.UTF-8"));
    run(after, LOOKERS);
    CHECK("main_setlocale_back", same(setlocale(LC_ALL, "C"), "C"));

    /* what was made, removed */
    char name[32];
    for (int i = 0; i < LOOKERS; i++) {
        snprintf(name, sizeof name, "e%d", i);
        CHECK_EQ("rm_e", rmdir(name), 0);
    }
    CHECK_EQ("main_chdir_back", chdir(".."), 0);
    for (int i = 0; i < LOOKERS; i++) {
        snprintf(name, sizeof name, "d%d", i);
        CHECK_EQ("rm_dir", rmdir(name), 0);
        snprintf(name, sizeof name, "f%d", i);
        CHECK_EQ("rm_file", unlink(name), 0);
    }
    CHECK_EQ("rm_marker", unlink("marker"), 0);
    CHECK_EQ("rm_tmp", rmdir(dir), 0);
    return check_finish();
}
