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

size_t cb_diff_encode(const uint8_t *page, const uint8_t *twin, size_t size, uint8_t *out)
{
    size_t n = 0, i = 0;
    while (i < size) {
        /* skip equal words, then equal bytes */
        while (i + 8 <= size) {
            uint64_t a, b;
            memcpy(&a, page + i, 8);
            memcpy(&b, twin + i, 8);
            if (a != b)
                break;
            i += 8;
        }
        while (i < size && page[i] == twin[i])
            i++;
        if (i >= size)
            break;
        size_t start = i;
        while (i < size && page[i] != twin[i])
            i++;
        put32(out + n, (uint32_t)start);
        put32(out + n + 4, (uint32_t)(i - start));
        memcpy(out + n + 8, page + start, i - start);
        n += 8 + (i - start);
    }
    return n;
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
