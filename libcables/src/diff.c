/* diff.c: encode and apply diffs, byte-exact.  Only bytes that differ from
 * the twin go into a diff: a node must not write back bytes it did not
 * change, or it would undo another node's write to the same page (false
 * sharing of adjacent bytes). */
#include <string.h>

#include "internal.h"

size_t cb_diff_max(size_t size)
{
    /* worst case: every other byte differs */
    return (size / 2 + 1) * (8 + 1) + 8;
}

static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static uint32_t get32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }

/* Runs of differing bytes, found word by word.  Each word of the page is
 * read once; its bytes that differ from the twin go out, and with refresh
 * the twin takes that same snapshot.  So the page may be written by other
 * threads meanwhile: a byte written after its word was read differs from
 * the refreshed twin, and goes out with the next diff. */
static size_t encode(const uint8_t *page, uint8_t *twin, size_t size, uint8_t *out, bool refresh)
{
    size_t n = 0, run = 0; /* run: offset in out of the open run's header */
    bool open = false;
    for (size_t i = 0; i < size; i += 8) {
        uint64_t v = __atomic_load_n((const uint64_t *)(page + i), __ATOMIC_RELAXED), t;
        memcpy(&t, twin + i, 8);
        if (v == t) {
            open = false;
            continue;
        }
        uint8_t vb[8], tb[8];
        memcpy(vb, &v, 8);
        memcpy(tb, &t, 8);
        for (size_t k = 0; k < 8; k++) {
            if (vb[k] == tb[k]) {
                open = false;
                continue;
            }
            if (!open) {
                run = n;
                put32(out + run, (uint32_t)(i + k));
                put32(out + run + 4, 0);
                n += 8;
                open = true;
            }
            out[n++] = vb[k];
            put32(out + run + 4, get32(out + run + 4) + 1);
        }
        if (refresh)
            memcpy(twin + i, &v, 8);
    }
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

bool cb_twin_refresh(const uint8_t *page, uint8_t *twin, size_t size)
{
    if (!memcmp(page, twin, size))
        return false; /* a write racing the comparison shows at the next one */
    bool changed = false;
    for (size_t i = 0; i < size; i += 8) { /* each word read once, as encode() */
        uint64_t v = __atomic_load_n((const uint64_t *)(page + i), __ATOMIC_RELAXED), t;
        memcpy(&t, twin + i, 8);
        if (v != t) {
            memcpy(twin + i, &v, 8);
            changed = true;
        }
    }
    return changed;
}

int cb_diff_apply(uint8_t *page, size_t size, const uint8_t *diff, size_t len)
{
    size_t n = 0;
    while (n < len) {
        if (len - n < 8)
            return -1;
        uint32_t off = get32(diff + n), l = get32(diff + n + 4);
        if ((size_t)off + l > size || len - n - 8 < l)
            return -1;
        memcpy(page + off, diff + n + 8, l);
        n += 8 + l;
    }
    return 0;
}
