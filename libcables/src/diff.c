/* diff.c: encode and apply diffs, byte-exact.  Only bytes that differ from
 * the twin go into a diff: a node must not write back bytes it did not
 * change, or it would undo another node's write to the same page (false
 * sharing of adjacent bytes).
 *
 * A diff is records, one per run of words that differ from the twin:
 *   [u32 offset][u32 length][bytes]            the run's changed bytes are
 *                                              one stretch (a whole page,
 *                                              a string, one field)
 *   [u32 offset][u32 words | CB_DIFF_MASKED][u8 mask per word][bytes]
 *                                              several stretches: bit k of a
 *                                              word's mask says its byte k
 *                                              changed; the bytes are those
 *                                              changed bytes, in order
 * Keys with an unchanged zero byte (RADIX's 24-bit keys in 32-bit words)
 * cost one mask byte per word, not a header per key. */
#include <string.h>

#include "internal.h"

#define CB_DIFF_MASKED 0x80000000u

size_t cb_diff_max(size_t size)
{
    /* a record per run of changed words (8 + 9 bytes per word at most),
     * runs apart by an unchanged word: at most 9/8 of the page and 8 */
    return size + size / 8 + 8;
}

static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static uint32_t get32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }

/* Bit tricks, not loops over bytes nor __builtin_popcount: built for any
 * x86-64 (no POPCNT, no BMI2), the latter is a call into libgcc, and
 * RADIX's keys (3 bytes of 4 changed) made the byte loops 5 us a page. */

/* bit k set: byte k of x is not zero.  Each byte's bits are folded into
 * its bit 0, then the multiplication gathers bit 8k into bit 56 + k (no
 * two partial products meet, so nothing carries). */
static unsigned byte_mask(uint64_t x)
{
    x = (x | x >> 4) & 0x0f0f0f0f0f0f0f0full;
    x = (x | x >> 2) & 0x0303030303030303ull;
    x = (x | x >> 1) & 0x0101010101010101ull;
    return (unsigned)((x * 0x0102040810204080ull) >> 56);
}

static unsigned popcount8(unsigned m)
{
    m = m - (m >> 1 & 0x55);
    m = (m & 0x33) + (m >> 2 & 0x33);
    return (m + (m >> 4)) & 0x0f;
}

/* A word's mask as its stretches of changed bytes (at most 4): a masked
 * word's bytes are copied a stretch at a time, not a byte at a time (a
 * page of RADIX's 24-bit keys, mask 0x77: 2.35 us to encode and 1.4 to
 * apply, where byte by byte took 2.9 and 1.75) */
static struct { uint8_t n, at[4], len[4]; } stretch[256];

__attribute__((constructor)) static void stretches_init(void)
{
    for (unsigned m = 0; m < 256; m++)
        for (unsigned k = 0; k < 8; k++) {
            if (!(m >> k & 1))
                continue;
            if (k == 0 || !(m >> (k - 1) & 1))
                stretch[m].at[stretch[m].n++] = (uint8_t)k;
            stretch[m].len[stretch[m].n - 1]++;
        }
}

/* writes exactly the len (1 to 8) bytes at src to dst: two copies that may
 * overlap, none a byte past len */
static void copy_upto8(uint8_t *dst, const uint8_t *src, unsigned len)
{
    if (len >= 4) {
        memcpy(dst, src, 4);
        memcpy(dst + len - 4, src + len - 4, 4);
    } else if (len >= 2) {
        memcpy(dst, src, 2);
        memcpy(dst + len - 2, src + len - 2, 2);
    } else {
        *dst = *src;
    }
}

/* Closes the run whose record starts at out + rec: its nw masks follow
 * the header, its c bytes wait at bytes.  Written plain if the changed
 * bytes are one stretch, else masked; returns the record's length. */
static size_t run_close(uint8_t *out, size_t rec, uint32_t nw, const uint8_t *bytes, size_t c,
                        unsigned stretches)
{
    if (stretches != 1) {
        put32(out + rec + 4, nw | CB_DIFF_MASKED);
        memmove(out + rec + 8 + nw, bytes, c);
        return 8 + nw + c;
    }
    unsigned first = 0; /* the first changed byte: in the first word */
    while (!(out[rec + 8] >> first & 1))
        first++;
    put32(out + rec, get32(out + rec) + first);
    put32(out + rec + 4, (uint32_t)c);
    memmove(out + rec + 8, bytes, c);
    return 8 + c;
}

/* Each word of the page is read once; its bytes that differ from the twin
 * go out, and with refresh the twin takes that same snapshot.  So the page
 * may be written by other threads meanwhile: a byte written after its word
 * was read differs from the refreshed twin, and goes out with the next
 * diff.  While a run is open its bytes wait behind room for the masks of
 * every word left (within cb_diff_max: out past the returned length is
 * scratch). */
static size_t encode(const uint8_t *page, uint8_t *twin, size_t size, uint8_t *out, bool refresh)
{
    size_t n = 0, rec = 0, c = 0; /* rec: the open run's record; c: its bytes */
    uint32_t nw = 0;              /* the open run's words; 0: none open */
    unsigned stretches = 0, prev = 0; /* prev: the last word's mask */
    uint8_t *bytes = NULL;
    for (size_t i = 0; i < size; i += 8) {
        uint64_t v = __atomic_load_n((const uint64_t *)(page + i), __ATOMIC_RELAXED), t;
        memcpy(&t, twin + i, 8);
        if (v == t) {
            if (nw)
                n = rec + run_close(out, rec, nw, bytes, c, stretches);
            nw = 0;
            continue;
        }
        if (!nw) { /* a run opens: its bytes go after room for every mask */
            rec = n;
            put32(out + rec, (uint32_t)i);
            bytes = out + rec + 8 + (size - i) / 8;
            c = stretches = prev = 0;
        }
        unsigned m = byte_mask(v ^ t);
        out[rec + 8 + nw++] = (uint8_t)m;
        stretches += popcount8(m & ~(m << 1 | prev >> 7) & 0xff);
        prev = m;
        if (m == 0xff) {
            memcpy(bytes + c, &v, 8);
            c += 8;
        } else { /* a stretch at a time: 8 bytes stored, its own kept (no
                  * further than storing each byte of the word went) */
            for (unsigned j = 0; j < stretch[m].n; j++) {
                uint64_t x = v >> 8 * stretch[m].at[j];
                memcpy(bytes + c, &x, 8);
                c += stretch[m].len[j];
            }
        }
        if (refresh)
            memcpy(twin + i, &v, 8);
    }
    if (nw)
        n = rec + run_close(out, rec, nw, bytes, c, stretches);
    return n;
}

size_t cb_diff_encode(const uint8_t *page, const uint8_t *twin, size_t size, uint8_t *out)
{
    return encode(page, (uint8_t *)twin, size, out, false);
}

size_t cb_diff_encode_refresh(const uint8_t *page, uint8_t *twin, size_t size, uint8_t *out)
{
    return encode(page, twin, size, out, true);
}

/* Every record is checked before any of its bytes is written. */
int cb_diff_apply(uint8_t *page, size_t size, const uint8_t *diff, size_t len)
{
    size_t n = 0;
    while (n < len) {
        if (len - n < 8)
            return -1;
        uint32_t off = get32(diff + n), l = get32(diff + n + 4);
        n += 8;
        if (!(l & CB_DIFF_MASKED)) {
            if ((size_t)off + l > size || len - n < l)
                return -1;
            memcpy(page + off, diff + n, l);
            n += l;
            continue;
        }
        size_t nw = l & ~CB_DIFF_MASKED, c = 0;
        if (nw == 0 || (size_t)off + 8 * nw > size || len - n < nw)
            return -1;
        const uint8_t *mask = diff + n;
        for (size_t w = 0; w < nw; w++)
            c += popcount8(mask[w]);
        n += nw;
        if (len - n < c)
            return -1;
        const uint8_t *b = diff + n;
        for (size_t w = 0; w < nw; w++) {
            uint8_t *dst = page + off + 8 * w;
            unsigned m = mask[w];
            if (m == 0xff) {
                memcpy(dst, b, 8);
                b += 8;
                continue;
            }
            for (unsigned j = 0; j < stretch[m].n; j++) {
                copy_upto8(dst + stretch[m].at[j], b, stretch[m].len[j]);
                b += stretch[m].len[j];
            }
        }
        n += c;
    }
    return 0;
}
