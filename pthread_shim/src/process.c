/* process.c: the working directory, the file mode creation mask, the
 * environment and the locale are the process's, so every node process's.
 * An application thread's chdir, fchdir, umask, setenv, unsetenv, putenv,
 * clearenv and setlocale are
 * made at the master (from another node, as a remote call), then on every
 * other node up, before they return (libcables/src/proc.c).  So a relative
 * path, a file's mode, getenv, and the character set and number formats
 * of libc's conversions give a thread on any node what they give main, also
 * inside libc (realpath, glob, scandir).  Before,
 * they changed the calling node only: after main's chdir, a thread on
 * another node opened its relative paths where the program started.
 *
 * The process id stays the node process's: /proc/self, kill, tgkill and
 * the other calls that take one act on this node process, and getpid must
 * name the same (tests/posix/files checks /proc/self against it).
 *
 * A run without the launcher (one process) and the runtime's own threads
 * get libc's calls unchanged. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <locale.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shim.h"

static bool shared_change(void)
{
    return cb_app_thread && cb.multi && !atomic_load(&cb.stopping);
}

/* the change made at the master: 0, or -1 with errno */
static int change(int op, int64_t arg, const char *s1, const char *s2, int64_t *old)
{
    int rc;
    if (cb.self != 0) {
        rc = shim_rs_proc(op, arg, s1, s2, old);
    } else {
        /* private copies: the kernel reads a path, which may be on a
         * shared page this node does not hold (loads here fault as the
         * program's) */
        char *c1 = s1 ? __libc_malloc(strlen(s1) + 1) : NULL, *c2 = s2 ? __libc_malloc(strlen(s2) + 1) : NULL;
        if ((s1 && !c1) || (s2 && !c2))
            rc = ENOMEM;
        else
            rc = cb_proc_change(op, arg, s1 ? strcpy(c1, s1) : NULL, s2 ? strcpy(c2, s2) : NULL, old);
        __libc_free(c1);
        __libc_free(c2);
    }
    return rc ? (errno = rc, -1) : 0;
}

int chdir(const char *path)
{
    if (!shared_change())
        return REAL(chdir)(path);
    return change(CB_PROC_CHDIR, 0, path, NULL, NULL);
}

/* A descriptor of the master's, or of this node's own (a /proc
 * directory's): the process goes to the directory it names here. */
int fchdir(int fd)
{
    if (!shared_change())
        return REAL(fchdir)(fd);
    if (cb.self == 0 || shim_remote_fd(fd))
        return change(CB_PROC_FCHDIR, fd, NULL, NULL, NULL);
    char link[32], path[PATH_MAX];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = REAL(readlink)(link, path, sizeof path - 1);
    if (n < 0 || path[0] != '/')
        return REAL(fchdir)(fd); /* its error (EBADF, ENOTDIR), or no name */
    path[n] = 0;
    return change(CB_PROC_CHDIR, 0, path, NULL, NULL);
}

mode_t umask(mode_t mask)
{
    if (!shared_change())
        return REAL(umask)(mask);
    int64_t old = 0;
    if (change(CB_PROC_UMASK, mask, NULL, NULL, &old))
        return REAL(umask)(mask); /* the master could not be asked: this node's */
    return (mode_t)old;
}

static bool env_name_ok(const char *name)
{
    return name && *name && !strchr(name, '=');
}

int setenv(const char *name, const char *value, int overwrite)
{
    if (!shared_change())
        return REAL(setenv)(name, value, overwrite);
    if (!env_name_ok(name))
        return errno = EINVAL, -1;
    return change(CB_PROC_SETENV, overwrite != 0, name, value, NULL);
}

int unsetenv(const char *name)
{
    if (!shared_change())
        return REAL(unsetenv)(name);
    if (!env_name_ok(name))
        return errno = EINVAL, -1;
    return change(CB_PROC_UNSETENV, 0, name, NULL, NULL);
}

/* The string becomes the variable at the master (a later store into it
 * changes the master's environment, as putenv's does; the other nodes keep
 * the value it had).  From another node it is copied, as setenv. */
int putenv(char *string)
{
    if (!shared_change() || string[0] == '=' || !string[0]) /* no name: libc's (no variable) */
        return REAL(putenv)(string);
    if (cb.self == 0) {
        int rc = cb_proc_change(CB_PROC_PUTENV, 0, string, NULL, NULL);
        return rc ? (errno = rc, -1) : 0;
    }
    const char *eq = strchr(string, '=');
    if (!eq)
        return change(CB_PROC_UNSETENV, 0, string, NULL, NULL);
    size_t n = (size_t)(eq - string);
    char *name = __libc_malloc(n + 1);
    if (!name)
        return errno = ENOMEM, -1;
    memcpy(name, string, n);
    name[n] = 0;
    int rc = change(CB_PROC_SETENV, 1, name, eq + 1, NULL);
    __libc_free(name);
    return rc;
}

int clearenv(void)
{
    if (!shared_change())
        return REAL(clearenv)();
    return change(CB_PROC_CLEARENV, 0, NULL, NULL, NULL);
}

/* A query (NULL) is the node's, the same as the master's. */
char *setlocale(int category, const char *locale)
{
    if (!shared_change() || !locale)
        return REAL(setlocale)(category, locale);
    if (change(CB_PROC_SETLOCALE, category, locale, NULL, NULL))
        return NULL;
    return REAL(setlocale)(category, NULL);
}
