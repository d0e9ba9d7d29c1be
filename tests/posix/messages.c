/* messages: sendmsg and recvmsg of a thread (on another node) on the
 * process's sockets (main's), as natively:
 *   - a datagram longer than the buffer: recvmsg says MSG_TRUNC in
 *     msg_flags, and with MSG_TRUNC asked returns the datagram's length;
 *   - a descriptor passed with SCM_RIGHTS arrives as a descriptor of the
 *     same pipe (what is written into the pipe is read from it), and the
 *     address a datagram came from is given back with its length;
 *   - sendto and sendmsg of 17 MiB on a stream socket send it all, in
 *     order (main reads it), and recvmsg with MSG_WAITALL takes 17 MiB
 *     main writes, whole;
 *   - an address's length comes back where the room given is 0, and a
 *     length given with no address is not read.
 * Before, a thread of another node got msg_flags 0, the ancillary data
 * was refused (EOPNOTSUPP), and more than 16 MiB failed with EMSGSIZE.
 * RESULT ok=1 checks=N (check.h) */
#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "check.h"

#define BIG (17u << 20)

static int dgram[2], stream[2], big[2];
static unsigned char *data;

static void fill(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(i * 131 + seed);
}

static void truncated(void)
{
    char out[100], in[10];
    memset(out, 'x', sizeof out);
    CHECK_EQ("dgram_send", send(dgram[0], out, sizeof out, 0), 100);
    struct iovec v = { in, sizeof in };
    struct msghdr m = { .msg_iov = &v, .msg_iovlen = 1 };
    CHECK_EQ("trunc_len", recvmsg(dgram[1], &m, 0), 10);
    CHECK("trunc_flag", (m.msg_flags & MSG_TRUNC) != 0);
    CHECK_EQ("dgram_send_again", send(dgram[0], out, sizeof out, 0), 100);
    memset(&m, 0, sizeof m);
    m.msg_iov = &v, m.msg_iovlen = 1;
    CHECK_EQ("trunc_asked_len", recvmsg(dgram[1], &m, MSG_TRUNC), 100);
}

static void passed_descriptor(void)
{
    int p[2];
    if (!CHECK_ERR("pipe", pipe(p), 0))
        return;
    union { struct cmsghdr h; char b[CMSG_SPACE(sizeof(int))]; } c;
    memset(&c, 0, sizeof c);
    char one = '!';
    struct iovec v = { &one, 1 };
    struct msghdr m = { .msg_iov = &v, .msg_iovlen = 1, .msg_control = c.b,
                        .msg_controllen = sizeof c.b };
    struct cmsghdr *h = CMSG_FIRSTHDR(&m);
    h->cmsg_level = SOL_SOCKET;
    h->cmsg_type = SCM_RIGHTS;
    h->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(h), &p[0], sizeof(int));
    if (!CHECK_ERR("rights_sent", sendmsg(stream[0], &m, 0), 1)) {
        close(p[0]);
        close(p[1]);
        return;
    }
    union { struct cmsghdr h; char b[CMSG_SPACE(sizeof(int)) + 64]; } r;
    memset(&r, 0, sizeof r);
    char got = 0;
    struct iovec rv = { &got, 1 };
    struct msghdr rm = { .msg_iov = &rv, .msg_iovlen = 1, .msg_control = r.b,
                         .msg_controllen = sizeof r.b };
    CHECK_EQ("rights_received", recvmsg(stream[1], &rm, 0), 1);
    CHECK_EQ("rights_byte", got, '!');
    struct cmsghdr *rh = CMSG_FIRSTHDR(&rm);
    int fd = -1;
    if (CHECK("rights_header", rh && rh->cmsg_level == SOL_SOCKET && rh->cmsg_type == SCM_RIGHTS &&
                                   rh->cmsg_len == CMSG_LEN(sizeof(int)))) {
        memcpy(&fd, CMSG_DATA(rh), sizeof fd);
        CHECK_EQ("rights_controllen", rm.msg_controllen, CMSG_SPACE(sizeof(int)));
        CHECK("rights_new_fd", fd >= 0 && fd != p[0] && fd != p[1]);
        char msg[8] = "";
        CHECK_EQ("pipe_write", write(p[1], "hi", 2), 2);
        CHECK_EQ("pipe_read_passed", read(fd, msg, sizeof msg), 2);
        CHECK("pipe_passed_same", memcmp(msg, "hi", 2) == 0);
        close(fd);
    }
    close(p[0]);
    close(p[1]);
}

static void address_back(void)
{
    int a = socket(AF_UNIX, SOCK_DGRAM, 0), b = socket(AF_UNIX, SOCK_DGRAM, 0);
    struct sockaddr_un sa = { .sun_family = AF_UNIX }, sb = { .sun_family = AF_UNIX };
    /* abstract names: nothing left in the file system */
    snprintf(sa.sun_path + 1, sizeof sa.sun_path - 1, "cables-msg-a-%d", (int)getpid());
    snprintf(sb.sun_path + 1, sizeof sb.sun_path - 1, "cables-msg-b-%d", (int)getpid());
    socklen_t la = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(sa.sun_path + 1));
    socklen_t lb = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(sb.sun_path + 1));
    CHECK_ERR("bind_a", bind(a, (struct sockaddr *)&sa, la), 0);
    CHECK_ERR("bind_b", bind(b, (struct sockaddr *)&sb, lb), 0);
    struct iovec v = { "ping", 4 };
    struct msghdr m = { .msg_name = &sb, .msg_namelen = lb, .msg_iov = &v, .msg_iovlen = 1 };
    CHECK_EQ("named_send", sendmsg(a, &m, 0), 4);
    char got[8];
    struct sockaddr_un from;
    memset(&from, 0, sizeof from);
    struct iovec rv = { got, sizeof got };
    struct msghdr rm = { .msg_name = &from, .msg_namelen = sizeof from, .msg_iov = &rv,
                         .msg_iovlen = 1 };
    CHECK_EQ("named_recv", recvmsg(b, &rm, 0), 4);
    CHECK_EQ("from_len", rm.msg_namelen, la);
    CHECK("from_name", memcmp(&from, &sa, la) == 0);
    /* no room for the address: its length all the same */
    CHECK_EQ("named_send_again", sendmsg(a, &m, 0), 4);
    rm.msg_namelen = 0;
    CHECK_EQ("named_recv_no_room", recvmsg(b, &rm, 0), 4);
    CHECK_EQ("from_len_no_room", rm.msg_namelen, la);
    close(a);
    close(b);
}

/* no address, a length all the same (a header filled field by field):
 * the length is not read */
static void stray_lengths(void)
{
    char b[4];
    CHECK_EQ("sendto_null_len", sendto(dgram[0], "abc", 3, 0, NULL, 1000), 3);
    CHECK_EQ("sendto_null_len_recv", recv(dgram[1], b, sizeof b, 0), 3);
    struct iovec v = { "abcd", 4 };
    struct msghdr m = { .msg_namelen = 1000, .msg_iov = &v, .msg_iovlen = 1 };
    CHECK_EQ("sendmsg_null_len", sendmsg(dgram[0], &m, 0), 4);
    CHECK_EQ("sendmsg_null_len_recv", recv(dgram[1], b, sizeof b, 0), 4);
}

static void *thread(void *arg)
{
    (void)arg;
    stray_lengths();
    truncated();
    passed_descriptor();
    address_back();
    fill(data, BIG, 1);
    CHECK_EQ("big_sendto", sendto(big[0], data, BIG, 0, NULL, 0), BIG);
    struct iovec v[2] = { { data, BIG / 2 }, { data + BIG / 2, BIG - BIG / 2 } };
    struct msghdr m = { .msg_iov = v, .msg_iovlen = 2 };
    CHECK_EQ("big_sendmsg", sendmsg(big[0], &m, 0), BIG);
    /* main's 17 MiB the other way, in one recvmsg that waits for all */
    memset(data, 0, BIG);
    CHECK_EQ("big_waitall", recvmsg(big[0], &m, MSG_WAITALL), BIG);
    unsigned char *want = malloc(BIG);
    if (want) {
        fill(want, BIG, 2);
        CHECK("big_waitall_same", memcmp(data, want, BIG) == 0);
        free(want);
    }
    return NULL;
}

int main(void)
{
    check_start();
    CHECK_ERR("dgram_pair", socketpair(AF_UNIX, SOCK_DGRAM, 0, dgram), 0);
    CHECK_ERR("stream_pair", socketpair(AF_UNIX, SOCK_STREAM, 0, stream), 0);
    CHECK_ERR("big_pair", socketpair(AF_UNIX, SOCK_STREAM, 0, big), 0);
    data = malloc(BIG);
    unsigned char *want = malloc(BIG), *got = malloc(BIG);
    if (!CHECK("alloc", data && want && got))
        return check_finish();
    fill(want, BIG, 1);
    pthread_t t;
    if (!CHECK_ERR("create", pthread_create(&t, NULL, thread, NULL), 0))
        return check_finish();
    for (int round = 0; round < 2; round++) { /* sendto's, then sendmsg's */
        size_t at = 0;
        ssize_t r = 1;
        while (at < BIG && (r = read(big[1], got + at, BIG - at)) > 0)
            at += (size_t)r;
        CHECK_EQ(round ? "big_read_msg" : "big_read_to", at, BIG);
        CHECK(round ? "big_same_msg" : "big_same_to", memcmp(got, want, BIG) == 0);
    }
    fill(got, BIG, 2);
    size_t at = 0;
    for (ssize_t r = 1; at < BIG && (r = write(big[1], got + at, BIG - at)) > 0;)
        at += (size_t)r;
    CHECK_EQ("big_written", at, BIG);
    CHECK_ERR("join", pthread_join(t, NULL), 0);
    return check_finish();
}
