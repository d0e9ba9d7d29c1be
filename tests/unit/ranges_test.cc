// cb_ranges_take / cb_ranges_put: the master's allocator of GAS page
// ranges.  New ranges come from the top; freed ones are merged with their
// neighbours and handed out again (first fit) only to a take that allows
// reuse.
#include <gtest/gtest.h>

#include <cstdlib>

#include "pure.h"

namespace {

struct Ranges {
    cb_ranges_t s{};
    Ranges(uint64_t limit) { s.limit = limit; }
    ~Ranges() { free(s.r); }
    uint64_t take(uint64_t n, bool reuse = true, bool *reused_out = nullptr)
    {
        bool reused = true;
        uint64_t f = cb_ranges_take(&s, n, reuse, &reused);
        if (reused_out)
            *reused_out = reused;
        return f;
    }
    void put(uint64_t first, uint64_t n) { cb_ranges_put(&s, first, n); }
};

} // namespace

TEST(Ranges, NewRangesComeFromTheTopUntilTheLimit)
{
    Ranges r(100);
    bool reused = true;
    EXPECT_EQ(r.take(10, true, &reused), 0u);
    EXPECT_FALSE(reused);
    EXPECT_EQ(r.take(90), 10u);
    EXPECT_EQ(r.take(1), ~0ull);
    EXPECT_EQ(r.s.top, 100u);
}

TEST(Ranges, AFreedRangeIsReusedFirstFitOnlyWhenAsked)
{
    Ranges r(1000);
    r.take(10);         // [0, 10)
    r.take(20);         // [10, 30)
    r.take(5);          // [30, 35)
    r.put(10, 20);
    bool reused = true;
    EXPECT_EQ(r.take(8, false, &reused), 35u); // zeroed memory wanted: the top
    EXPECT_FALSE(reused);
    EXPECT_EQ(r.take(8, true, &reused), 10u);  // split: [18, 30) stays free
    EXPECT_TRUE(reused);
    EXPECT_EQ(r.take(13), 43u);                // does not fit in the hole
    EXPECT_EQ(r.take(12), 18u);                // fills it exactly
    EXPECT_EQ(r.s.n, 0u);
}

// The top never comes back down: pages handed out once are never new
// again (a take without reuse wants zeroed pages nobody wrote).
TEST(Ranges, NeighboursMergeButTheTopStays)
{
    Ranges r(1000);
    for (int i = 0; i < 4; i++)
        EXPECT_EQ(r.take(10), uint64_t(10 * i));
    r.put(0, 10);
    r.put(20, 10);
    ASSERT_EQ(r.s.n, 2u);
    r.put(10, 10); // joins both sides: one hole [0, 30)
    ASSERT_EQ(r.s.n, 1u);
    EXPECT_EQ(r.s.r[0].first, 0u);
    EXPECT_EQ(r.s.r[0].npages, 30u);
    r.put(30, 10); // touches the top: a hole [0, 40) all the same
    ASSERT_EQ(r.s.n, 1u);
    EXPECT_EQ(r.s.r[0].npages, 40u);
    EXPECT_EQ(r.s.top, 40u);
    bool reused = true;
    EXPECT_EQ(r.take(10, false, &reused), 40u);
    EXPECT_FALSE(reused);
}

TEST(Ranges, FreeingBelowAHoleMergesForward)
{
    Ranges r(1000);
    r.take(10);
    r.take(10);
    r.take(10);
    r.put(10, 10);
    r.put(0, 10); // before [10, 20): one hole [0, 20)
    ASSERT_EQ(r.s.n, 1u);
    EXPECT_EQ(r.s.r[0].first, 0u);
    EXPECT_EQ(r.s.r[0].npages, 20u);
    EXPECT_EQ(r.take(20), 0u);
}

// malloc and free of one big block in a loop: the same range every time,
// however often, in a space that holds it only once or twice.
TEST(Ranges, AnAllocateFreeLoopNeverExhaustsTheSpace)
{
    Ranges r(25);
    r.take(5); // a block that stays
    for (int i = 0; i < 10000; i++) {
        uint64_t f = r.take(10);
        ASSERT_NE(f, ~0ull) << "iteration " << i;
        uint64_t g = r.take(3);
        ASSERT_NE(g, ~0ull) << "iteration " << i;
        r.put(f, 10);
        r.put(g, 3);
    }
    EXPECT_EQ(r.s.top, 18u); // the first iteration's; all later ones reused them
    ASSERT_EQ(r.s.n, 1u);
    EXPECT_EQ(r.s.r[0].first, 5u);
    EXPECT_EQ(r.s.r[0].npages, 13u);
}
