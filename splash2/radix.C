/* radix.C: parallel radix sort of N integer keys, 2^r buckets per digit.
 * Per digit: every thread counts the digits of its keys, then (after a
 * barrier) computes the ranks of its keys from the prefix sum over all the
 * threads' counts, then moves its keys to the other array; barrier; swap.
 * Usage: radix -n N -p P [-r R] [-m MAXKEY]
 * prints RESULT ok=1 n=N p=P sorted=1 sum=S xor=X */
MAIN_ENV

#include "args.h"
#include <stdint.h>

#define PAD 64 /* one line of results per thread on its own 512 bytes */

struct GlobalMemory {
    BARDEC(start)
    uint64_t sum0[64 * PAD], xor0[64 * PAD], sum1[64 * PAD], xor1[64 * PAD];
    long unsorted[64 * PAD];
} *Global;

long N, P, RB, MAXKEY, NB; /* RB bits per digit, NB = 2^RB buckets */
unsigned *keys[2];
long *hist; /* P rows of NB counts */

static uint64_t mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void SlaveStart(void)
{
    long id;
    GET_PID(id)
    long lo = id * N / P, hi = (id + 1) * N / P;
    long *cnt = malloc(NB * sizeof(long)), *rank = malloc(NB * sizeof(long));
    if (!cnt || !rank) {
        fprintf(stderr, "radix: out of memory\n");
        exit(1);
    }
    uint64_t s = 0, xo = 0;
    for (long i = lo; i < hi; i++) {
        unsigned k = (unsigned)(mix64((uint64_t)i) % (uint64_t)MAXKEY);
        keys[0][i] = k;
        s += k;
        xo ^= k;
    }
    Global->sum0[id * PAD] = s;
    Global->xor0[id * PAD] = xo;
    int digits = 0;
    for (long m = MAXKEY - 1; m > 0; m >>= RB)
        digits++;
    BARRIER(Global->start, P)
    if (id == 0) {
        SPLASH3_ROI_BEGIN
    }

    int cur = 0;
    for (int d = 0; d < digits; d++) {
        int shift_bits = d * RB;
        unsigned mask = (unsigned)(NB - 1);
        unsigned *src = keys[cur], *dst = keys[1 - cur];
        memset(cnt, 0, NB * sizeof(long));
        for (long i = lo; i < hi; i++)
            cnt[(src[i] >> shift_bits) & mask]++;
        memcpy(hist + id * NB, cnt, NB * sizeof(long));
        BARRIER(Global->start, P)
        /* rank of the first key of digit v here: all keys of smaller
         * digits, plus the keys of digit v of the threads before */
        long base = 0;
        for (long v = 0; v < NB; v++) {
            long before = 0, total = 0;
            for (long t = 0; t < P; t++) {
                long c = hist[t * NB + v];
                if (t < id)
                    before += c;
                total += c;
            }
            rank[v] = base + before;
            base += total;
        }
        for (long i = lo; i < hi; i++) {
            unsigned k = src[i];
            dst[rank[(k >> shift_bits) & mask]++] = k;
        }
        BARRIER(Global->start, P)
        cur = 1 - cur;
    }

    if (id == 0) {
        SPLASH3_ROI_END
    }
    unsigned *out = keys[cur];
    long bad = 0;
    s = xo = 0;
    for (long i = lo; i < hi; i++) {
        if (i + 1 < N && out[i] > out[i + 1])
            bad++;
        s += out[i];
        xo ^= out[i];
    }
    Global->sum1[id * PAD] = s;
    Global->xor1[id * PAD] = xo;
    Global->unsorted[id * PAD] = bad;
    free(cnt);
    free(rank);
    BARRIER(Global->start, P)
}

static void usage(void)
{
    fprintf(stderr, "usage: radix -n N -p P [-r R] [-m MAXKEY]  (N 1..2^28, P 1..64, R 1..16, MAXKEY 2..2^31)\n");
    exit(2);
}

int main(int argc, char **argv)
{
    N = 262144;
    P = 1;
    RB = 8;
    MAXKEY = 1L << 24;
    parse_args(argc, argv, (const splash_arg_t[]){ { "-n", &N }, { "-p", &P },
                                                   { "-r", &RB }, { "-m", &MAXKEY }, { 0 } });
    if (N < 1 || N > (1L << 28) || P < 1 || P > 64 || RB < 1 || RB > 16 || MAXKEY < 2 ||
        MAXKEY > (1L << 31))
        usage();
    NB = 1L << RB;

    Global = (struct GlobalMemory *)G_MALLOC(sizeof(struct GlobalMemory))
    keys[0] = (unsigned *)G_MALLOC(N * sizeof(unsigned))
    keys[1] = (unsigned *)G_MALLOC(N * sizeof(unsigned))
    hist = (long *)G_MALLOC(P * NB * sizeof(long))
    MAIN_INITENV(, 1 << 20)
    BARINIT(Global->start, P)

    CREATE(SlaveStart, P)
    WAIT_FOR_END(P - 1)

    uint64_t s0 = 0, x0 = 0, s1 = 0, x1 = 0;
    long bad = 0;
    for (long i = 0; i < P; i++) {
        s0 += Global->sum0[i * PAD];
        x0 ^= Global->xor0[i * PAD];
        s1 += Global->sum1[i * PAD];
        x1 ^= Global->xor1[i * PAD];
        bad += Global->unsorted[i * PAD];
    }
    int ok = bad == 0 && s0 == s1 && x0 == x1;
    printf("RESULT ok=%d n=%ld p=%ld sorted=%d sum=%llu xor=%llu\n", ok, N, P, bad == 0,
           (unsigned long long)s1, (unsigned long long)x1);
    MAIN_END
}
