/* call_lengths: lengths the caller gives to calls made on descriptors.
 * The addresses getsockname, getpeername, accept and recvfrom
 * store are as long as the kernel makes them, not as long as the room the
 * caller gave.  A thread (on 2 nodes it runs on the other node, and its
 * descriptors' calls are made at the master) passes 128 bytes of room
 * (sizeof (struct sockaddr_storage)) around a smaller struct, filled with
 * 0xAA: an unnamed AF_UNIX socket's name is its family alone (2 bytes), a
 * stream socket's recvfrom stores no address, and a named socket's accept
 * stores its peer's family alone; every byte past the stored length must
 * still be 0xAA.  Under libcables the master's answer was written back
 * whole: 128 bytes into a 16-byte struct.  And a readv or writev whose
 * lengths add up past SSIZE_MAX fails with EFAULT, as natively (under
 * libcables the total wrapped: the readv returned 0, as at the end of a
 * file, and the writev crashed the node).
 * RESULT ok=1 checks=N (check.h) */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include "check.h"

struct room {
    unsigned char b[sizeof(struct sockaddr_storage)];
};

static int untouched_from(const struct room *r, socklen_t from)
{
    for (size_t i = from; i < sizeof r->b; i++)
        if (r->b[i] != 0xAA)
            return 0;
    return 1;
}

static void *worker(void *arg)
{
    (void)arg;
    int sv[2];
    if (!CHECK_ERR("socketpair", socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0))
        return NULL;
    struct room r;
    memset(&r, 0xAA, sizeof r);
    socklen_t len = sizeof r.b;
    CHECK_ERR("getsockname", getsockname(sv[0], (struct sockaddr *)&r, &len), 0);
    CHECK_EQ("getsockname_len", len, sizeof(sa_family_t));
    CHECK("getsockname_rest", untouched_from(&r, len));
    memset(&r, 0xAA, sizeof r);
    len = sizeof r.b;
    CHECK_ERR("getpeername", getpeername(sv[0], (struct sockaddr *)&r, &len), 0);
    CHECK("getpeername_rest", untouched_from(&r, len));
    CHECK_EQ("send", send(sv[1], "hello", 5, 0), 5);
    char data[8];
    memset(&r, 0xAA, sizeof r);
    len = sizeof r.b;
    CHECK_EQ("recvfrom", recvfrom(sv[0], data, 5, MSG_WAITALL, (struct sockaddr *)&r, &len), 5);
    CHECK("recvfrom_rest", untouched_from(&r, len));
    char one[2];
    struct iovec huge[3] = { { one, SSIZE_MAX }, { one, SSIZE_MAX }, { one, 2 } };
    errno = 0;
    CHECK_EQ("readv_past_ssize_max", readv(sv[0], huge, 3), -1);
    CHECK_ERR("readv_efault", errno, EFAULT);
    errno = 0;
    CHECK_EQ("writev_past_ssize_max", writev(sv[1], huge, 3), -1);
    CHECK_ERR("writev_efault", errno, EFAULT);
    close(sv[0]);
    close(sv[1]);

    struct sockaddr_un at = { .sun_family = AF_UNIX };
    snprintf(at.sun_path, sizeof at.sun_path, "/tmp/cables-sock-addr-%d", (int)getpid());
    unlink(at.sun_path);
    int l = socket(AF_UNIX, SOCK_STREAM, 0), c = socket(AF_UNIX, SOCK_STREAM, 0);
    if (CHECK_ERR("bind", bind(l, (struct sockaddr *)&at, sizeof at), 0) &&
        CHECK_ERR("listen", listen(l, 1), 0) &&
        CHECK_ERR("connect", connect(c, (struct sockaddr *)&at, sizeof at), 0)) {
        memset(&r, 0xAA, sizeof r);
        len = sizeof r.b;
        int a = accept(l, (struct sockaddr *)&r, &len);
        CHECK_GE("accept", a, 0);
        CHECK_EQ("accept_len", len, sizeof(sa_family_t)); /* the peer is unnamed */
        CHECK("accept_rest", untouched_from(&r, len));
        if (a >= 0)
            close(a);
    }
    close(c);
    close(l);
    unlink(at.sun_path);
    return NULL;
}

int main(void)
{
    check_start();
    pthread_t t;
    CHECK_ERR("create", pthread_create(&t, NULL, worker, NULL), 0);
    CHECK_ERR("join", pthread_join(t, NULL), 0);
    return check_finish();
}
