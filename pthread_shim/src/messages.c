/* messages.c: what libc writes for the program past its stdio's wrapped
 * entry points: dprintf and vdprintf (a FILE of libc's own on the
 * descriptor), perror, psignal, the err.h family (warn, err...), and GNU
 * error and error_at_line (libc's inner fprintf on stderr).  On a node
 * other than the master, a descriptor is the master's, and so is stderr
 * once the program moved it (io.c, remote.c); libc's versions wrote to
 * this node's descriptor of that number and to its own stderr.  Where the
 * descriptor or stderr is the master's, the message is formatted here (in
 * libc's heap: vasprintf's block would be the program's) and written whole
 * through the wrapped write or fputs; elsewhere libc's is called with the
 * formatted text. */
#include <err.h>
#include <errno.h>
#include <error.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shim.h"

extern const char *__progname; /* err.h's name: the short one */
int __vsnprintf_chk(char *s, size_t maxlen, int flag, size_t slen, const char *fmt, va_list ap);

/* fmt formatted into a block of libc's (free), *n its length; NULL on
 * failure.  flag: _FORTIFY_SOURCE's level of a _chk caller, else -1 */
static char *format_chk(int flag, const char *fmt, va_list ap, int *n)
{
    va_list aq;
    va_copy(aq, ap);
    int len = flag < 0 ? vsnprintf(NULL, 0, fmt, aq) : __vsnprintf_chk(NULL, 0, flag, 0, fmt, aq);
    va_end(aq);
    char *buf = len < 0 ? NULL : malloc((size_t)len + 1);
    if (buf && (flag < 0 ? vsnprintf(buf, (size_t)len + 1, fmt, ap)
                         : __vsnprintf_chk(buf, (size_t)len + 1, flag, (size_t)len + 1, fmt, ap)) != len) {
        free(buf);
        buf = NULL;
    }
    if (n)
        *n = len;
    return buf;
}

static char *format(const char *fmt, va_list ap, int *n) { return format_chk(-1, fmt, ap, n); }

/* the whole of buf written on fd, through the wrapped write */
static int write_all(int fd, const char *buf, int n)
{
    size_t done = 0;
    while (done < (size_t)n) {
        ssize_t w = write(fd, buf + done, (size_t)n - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        done += (size_t)w;
    }
    return n;
}

/* dprintf's text (at _FORTIFY_SOURCE's level flag, or -1) on a master's
 * descriptor */
static int dprintf_master(int fd, int flag, const char *fmt, va_list ap)
{
    int n;
    char *buf = format_chk(flag, fmt, ap, &n);
    if (!buf)
        return -1;
    int r = write_all(fd, buf, n);
    free(buf);
    return r;
}

int vdprintf(int fd, const char *restrict fmt, va_list ap)
{
    if (!shim_remote_fd(fd))
        return REAL(vdprintf)(fd, fmt, ap);
    return dprintf_master(fd, -1, fmt, ap);
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
    return dprintf_master(fd, flag, fmt, ap);
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

/* head, then msg (if any), then ": strerror(errnum)" (if with_err), then
 * a newline, as one fputs on stderr, flushed */
static void say(const char *head, const char *msg, bool with_err, int errnum)
{
    const char *e = with_err ? strerror(errnum) : "";
    size_t len = strlen(head) + (msg ? strlen(msg) : 0) + strlen(e) + 4;
    char *line = malloc(len);
    if (line) {
        snprintf(line, len, "%s%s%s%s\n", head, msg ? msg : "", with_err ? ": " : "", e);
        fputs(line, stderr);
        free(line);
    }
    fflush(stderr);
}

void perror(const char *s)
{
    int e = errno;
    if (!remote_stderr()) {
        errno = e;
        REAL(perror)(s);
        return;
    }
    if (s && *s)
        say(s, NULL, true, e);
    else
        say(strerror(e), NULL, false, 0);
    errno = e;
}

void psignal(int sig, const char *s)
{
    if (!remote_stderr()) {
        REAL(psignal)(sig, s);
        return;
    }
    const char *d = sig >= 0 && sig < NSIG ? sigdescr_np(sig) : NULL;
    char unknown[32];
    if (!d) {
        snprintf(unknown, sizeof unknown, "Unknown signal %d", sig);
        d = unknown;
    }
    size_t len = (s ? strlen(s) : 0) + 3;
    char *head = malloc(len);
    if (head) {
        snprintf(head, len, s && *s ? "%s: " : "", s);
        say(head, d, false, 0);
        free(head);
    }
}

/* err.h's "name: fmt: error"; with no fmt, "name: error" */
static void warn_with(bool with_err, int e, const char *fmt, va_list ap)
{
    char *msg = fmt ? format(fmt, ap, NULL) : NULL;
    size_t len = strlen(__progname) + 3;
    char *head = malloc(len);
    if (head) {
        snprintf(head, len, fmt || !with_err ? "%s: " : "%s", __progname);
        say(head, msg, with_err, e);
        free(head);
    }
    free(msg);
}

void vwarn(const char *fmt, va_list ap)
{
    int e = errno;
    if (!remote_stderr())
        REAL(vwarn)(fmt, ap);
    else
        warn_with(true, e, fmt, ap);
    errno = e;
}

void vwarnx(const char *fmt, va_list ap)
{
    if (!remote_stderr())
        REAL(vwarnx)(fmt, ap);
    else
        warn_with(false, 0, fmt, ap);
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

/* GNU error and error_at_line, where stderr is the master's: stdout
 * flushed first, the program's name (or error_print_progname's), where,
 * the message, the error, a newline; error_message_count counted */
static void gnu_error(int errnum, const char *where, const char *msg)
{
    fflush(stdout);
    size_t len = strlen(program_invocation_name) + strlen(where) + 3;
    char *head = malloc(len);
    if (!head)
        return;
    if (error_print_progname) {
        error_print_progname();
        snprintf(head, len, "%s", where);
    } else {
        snprintf(head, len, "%s:%s", program_invocation_name, where[0] ? where : " ");
    }
    say(head, msg, errnum != 0, errnum);
    free(head);
    error_message_count++;
}

/* Both end the program through the shim's exit, on any node (libc's call
 * its exit directly, past the shim: on another node than the master, that
 * node process alone would have ended). */
void error(int status, int errnum, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = format(fmt, ap, NULL);
    va_end(ap);
    if (remote_stderr())
        gnu_error(errnum, "", msg);
    else
        REAL(error)(0, errnum, "%s", msg ? msg : fmt);
    free(msg);
    if (status)
        exit(status);
}

void error_at_line(int status, int errnum, const char *file, unsigned int line, const char *fmt, ...)
{
    unsigned int count = error_message_count;
    va_list ap;
    va_start(ap, fmt);
    char *msg = format(fmt, ap, NULL);
    va_end(ap);
    if (remote_stderr()) {
        static const char *old_file;
        static unsigned int old_line;
        bool again = error_one_per_line && old_line == line &&
                     (file == old_file || (file && old_file && !strcmp(file, old_file)));
        if (error_one_per_line) {
            old_file = file;
            old_line = line;
        }
        if (!again) {
            size_t len = file ? strlen(file) + 16 : 0;
            char *where = file ? malloc(len) : NULL;
            if (where)
                snprintf(where, len, "%s:%u: ", file, line);
            gnu_error(errnum, where ? where : " ", msg);
            free(where);
        }
    } else {
        REAL(error_at_line)(0, errnum, file, line, "%s", msg ? msg : fmt);
    }
    free(msg);
    if (status && error_message_count != count) /* not a line error_one_per_line dropped */
        exit(status);
}
