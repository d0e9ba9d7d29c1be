/* ranges.c: the master's allocator of GAS page ranges.  New ranges come
 * from the top, in address order; freed ones are kept in address order,
 * merged with their neighbours, and handed out again first fit, but only
 * when asked (reuse): a freed range is no longer zeroed (its taker zeroes
 * it if it must, gas.c), and a node that takes pages as new need not
 * acquire what was written there.  So the top never comes back down: pages
 * below it were handed out once.
 * A sorted array: frees are of big blocks (malloc's smaller ones stay in
 * the node arenas), so it stays short. */
#include <stdlib.h>
#include <string.h>

#include "pure.h"

uint64_t cb_ranges_take(cb_ranges_t *s, uint64_t npages, bool reuse, bool *reused)
{
    *reused = false;
    for (size_t i = 0; reuse && i < s->n; i++)
        if (s->r[i].npages >= npages) {
            uint64_t first = s->r[i].first;
            s->r[i].first += npages;
            s->r[i].npages -= npages;
            if (!s->r[i].npages)
                memmove(s->r + i, s->r + i + 1, (--s->n - i) * sizeof *s->r);
            *reused = true;
            return first;
        }
    if (npages > s->limit - s->top)
        return ~0ull;
    uint64_t first = s->top;
    s->top += npages;
    return first;
}

void cb_ranges_put(cb_ranges_t *s, uint64_t first, uint64_t npages)
{
    size_t i = 0;
    while (i < s->n && s->r[i].first < first)
        i++;
    bool after = i > 0 && s->r[i - 1].first + s->r[i - 1].npages == first,
         before = i < s->n && first + npages == s->r[i].first;
    if (after && before) {
        s->r[i - 1].npages += npages + s->r[i].npages;
        memmove(s->r + i, s->r + i + 1, (--s->n - i) * sizeof *s->r);
    } else if (after) {
        s->r[i - 1].npages += npages;
    } else if (before) {
        s->r[i].first = first;
        s->r[i].npages += npages;
    } else {
        if (s->n == s->cap) {
            s->cap = s->cap ? s->cap * 2 : 16;
            s->r = realloc(s->r, s->cap * sizeof *s->r);
            if (!s->r)
                cb_die("out of memory for the freed ranges");
        }
        memmove(s->r + i + 1, s->r + i, (s->n - i) * sizeof *s->r);
        s->r[i] = (cb_range_t){ first, npages };
        s->n++;
    }
}
