/* messages.c: what libc writes for the program without its stdio's
 * wrapped entry points: dprintf and vdprintf (a FILE of libc's own on the
 * descriptor), perror, the err.h family (warn, err...) and GNU error and
 * error_at_line (libc's inner fprintf on stderr).  On a node other than
 * the master, a descriptor is the master's and stderr, once the program
 * moved it (io.c, remote.c), is too; libc's versions wrote to this node's
 * descriptor of that number and to its own stderr.  Where the descriptor
 * or stderr is the master's, the message is formatted here (in libc's heap: vasprintf's block would be the program's) and written
 * through the wrapped write or fputs, whole; elsewhere libc's is called
 * with the formatted text. */
#include <err.h>
#include <errno.h>
#include <error.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shim.h"

extern const char *__progname; /* err.h's name: the short one */

/* fmt formatted into a block of libc's (free), *n its length; NULL on
 * failure */
static char *format(const char *fmt, va_list ap, int *n)
{
    va_list aq;
    va_copy(aq, ap);
    int len = vsnprintf(NULL, 0, fmt, aq);
    va_end(aq);
    char *buf = len < 0 ? NULL : malloc((size_t)len + 1);
    if (buf && vsnprintf(buf, (size_t)len + 1, fmt, ap) != len) {
        free(buf);
        buf = NULL;
    }
    if (n)
        *n = len;
    return buf;
}

int vdprintf(int fd, const char *restrict fmt, va_list ap)
{
    if (!shim_remote_fd(fd))
        return REAL(vdprintf)(fd, fmt, ap);
    int n;
    char *buf = format(fmt, ap, &n);
    if (!buf)
        return -1;
    size_t done = 0;
    while (done < (size_t)n) {
        ssize_t w = write(fd, buf + done, (size_t)n - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        done += (size_t)w;
    }
    free(buf);
    return done == (size_t)n ? n : -1;
}

int dprintf(int fd, const char *restrict fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = vdprintf(fd, fmt, ap);
    va_end(ap);
    return r;
}

int __vdprintf_chk(int fd, int flag, const char *restrict fmt, va_list ap);
int __dprintf_chk(int fd, int flag, const char *restrict fmt, ...);
int __vdprintf_chk(int fd, int flag, const char *restrict fmt, va_list ap)
{
    if (!shim_remote_fd(fd))
        return REAL(__vdprintf_chk)(fd, flag, fmt, ap);
    return vdprintf(fd, fmt, ap);
}

int __dprintf_chk(int fd, int flag, const char *restrict fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = __vdprintf_chk(fd, flag, fmt, ap);
    va_end(ap);
    return r;
}

/* stderr is the master's here */
static bool remote_stderr(void) { return shim_remote_file(stderr); }

/* head, then fmt (if any), then ": strerror(errnum)" (if errnum), then a
 * newline, as one write on stderr */
static void say(const char *head, const char *fmt, va_list ap, int errnum)
{
    char *msg = fmt ? format(fmt, ap, NULL) : NULL;
    fprintf(stderr, "%s%s%s%s\n", head, msg ? msg : "", errnum ? ": " : "",
            errnum ? strerror(errnum) : "");
    free(msg);
}

void perror(const char *s)
{
    if (!remote_stderr()) {
        REAL(perror)(s);
        return;
    }
    int e = errno;
    fprintf(stderr, "%s%s%s\n", s && *s ? s : "", s && *s ? ": " : "", strerror(e));
    errno = e;
}

/* warn's "name: fmt: error"; with no fmt, "name: error" */
static void warn_with(int e, const char *fmt, va_list ap)
{
    char head[256];
    snprintf(head, sizeof head, "%s: ", __progname);
    if (fmt) {
        say(head, fmt, ap, e);
    } else {
        head[strlen(head) - 2] = 0; /* no ": " before the error's ": " */
        say(head, NULL, ap, e);
    }
}

void vwarn(const char *fmt, va_list ap)
{
    int e = errno;
    if (!remote_stderr())
        REAL(vwarn)(fmt, ap);
    else
        warn_with(e, fmt, ap);
    errno = e;
}

void vwarnx(const char *fmt, va_list ap)
{
    if (!remote_stderr()) {
        REAL(vwarnx)(fmt, ap);
        return;
    }
    char head[256];
    snprintf(head, sizeof head, "%s: ", __progname);
    say(head, fmt, ap, 0);
}

void warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vwarn(fmt, ap);
    va_end(ap);
}

void warnx(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vwarnx(fmt, ap);
    va_end(ap);
}

void verr(int status, const char *fmt, va_list ap)
{
    vwarn(fmt, ap);
    exit(status);
}

void verrx(int status, const char *fmt, va_list ap)
{
    vwarnx(fmt, ap);
    exit(status);
}

void err(int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    verr(status, fmt, ap);
}

void errx(int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    verrx(status, fmt, ap);
}

/* GNU error and error_at_line: stdout flushed first, the program's name
 * (or error_print_progname), the message, the error, a newline;
 * error_message_count counted; exit(status) if status */
static void gnu_error(int status, int errnum, const char *where, const char *fmt, va_list ap)
{
    fflush(stdout);
    if (error_print_progname)
        error_print_progname();
    else
        fprintf(stderr, "%s:%s", program_invocation_name, where[0] ? "" : " ");
    say(where, fmt, ap, errnum);
    error_message_count++;
    if (status)
        exit(status);
}

void error(int status, int errnum, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (remote_stderr()) {
        gnu_error(status, errnum, "", fmt, ap);
    } else {
        char *msg = format(fmt, ap, NULL);
        REAL(error)(status, errnum, "%s", msg ? msg : fmt);
        free(msg);
    }
    va_end(ap);
}

void error_at_line(int status, int errnum, const char *file, unsigned int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (remote_stderr()) {
        static const char *old_file;
        static unsigned int old_line;
        if (error_one_per_line && old_line == line &&
            (file == old_file || (file && old_file && !strcmp(file, old_file)))) {
            va_end(ap);
            return;
        }
        old_file = file;
        old_line = line;
        char where[512];
        if (file)
            snprintf(where, sizeof where, "%s:%u: ", file, line);
        else
            snprintf(where, sizeof where, " ");
        gnu_error(status, errnum, where, fmt, ap);
    } else {
        char *msg = format(fmt, ap, NULL);
        REAL(error_at_line)(status, errnum, file, line, "%s", msg ? msg : fmt);
        free(msg);
    }
    va_end(ap);
}
