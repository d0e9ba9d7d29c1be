// cb_page_next / cb_page_prot: the HLRC page state machine.
#include <gtest/gtest.h>

#include <sys/mman.h>

#include <initializer_list>

#include "pure.h"

namespace {

constexpr bool kHome = true, kCopy = false;
using States = std::initializer_list<uint32_t>;
const cb_page_event kEvents[] = {EV_READ_FAULT, EV_WRITE_FAULT, EV_RELEASE, EV_IDLE, EV_INVALIDATE,
                                 EV_WRITE_AHEAD, EV_SHARE};

cb_page_step_t step(uint32_t s, bool home, cb_page_event ev) { return cb_page_next(s, home, ev); }

TEST(PageNext, ReadFaultOnInvalidCopyFetches)
{
    auto s = step(PG_NONE, kCopy, EV_READ_FAULT);
    EXPECT_EQ(s.next, (uint32_t)PG_RO);
    EXPECT_EQ(s.act, (unsigned)(ACT_FETCH | ACT_PROTECT));
}

TEST(PageNext, ReadFaultOnInvalidListedCopyKeepsNotice)
{
    auto s = step(PG_NONE | PG_LISTED, kCopy, EV_READ_FAULT);
    EXPECT_EQ(s.next, (uint32_t)(PG_RO | PG_LISTED));
    EXPECT_EQ(s.act, (unsigned)(ACT_FETCH | ACT_PROTECT));
}

// A private home page (never served) is opened for writing at a read
// fault too: its writes need no notice, and a page read first is mostly
// written next.  A shared one is opened for reading only.
TEST(PageNext, ReadFaultOnHomeDoesNotFetch)
{
    auto s = step(PG_NONE, kHome, EV_READ_FAULT);
    EXPECT_EQ(s.next, (uint32_t)PG_RW);
    EXPECT_EQ(s.act, (unsigned)ACT_PROTECT);
    s = step(PG_NONE | PG_SHARED, kHome, EV_READ_FAULT);
    EXPECT_EQ(s.next, (uint32_t)(PG_SHARED | PG_RO));
    EXPECT_EQ(s.act, (unsigned)ACT_PROTECT);
}

TEST(PageNext, WriteFaultOnInvalidCopy)
{
    auto s = step(PG_NONE, kCopy, EV_WRITE_FAULT);
    EXPECT_EQ(s.next, (uint32_t)(PG_RW | PG_LISTED));
    EXPECT_EQ(s.act, (unsigned)(ACT_FETCH | ACT_TWIN | ACT_LIST | ACT_PROTECT));
}

TEST(PageNext, WriteFaultOnReadOnlyCopyTwinsWithoutFetch)
{
    auto s = step(PG_RO, kCopy, EV_WRITE_FAULT);
    EXPECT_EQ(s.next, (uint32_t)(PG_RW | PG_LISTED));
    EXPECT_EQ(s.act, (unsigned)(ACT_TWIN | ACT_LIST | ACT_PROTECT));
}

TEST(PageNext, WriteFaultOnSharedHomeOnlyLists)
{
    for (uint32_t acc : States{PG_NONE, PG_RO}) {
        auto s = step(acc | PG_SHARED, kHome, EV_WRITE_FAULT);
        EXPECT_EQ(s.next, (uint32_t)(PG_SHARED | PG_RW | PG_LISTED)) << acc;
        EXPECT_EQ(s.act, (unsigned)(ACT_LIST | ACT_PROTECT)) << acc;
    }
}

// No other node ever fetched it: nobody holds a copy to invalidate, so the
// home writes it with no notice, and a release leaves it writable.
TEST(PageNext, PrivateHomePageNeedsNoNoticeNorProtection)
{
    for (uint32_t acc : States{PG_NONE, PG_RO}) {
        auto s = step(acc, kHome, EV_WRITE_FAULT);
        EXPECT_EQ(s.next, (uint32_t)PG_RW) << acc;
        EXPECT_EQ(s.act, (unsigned)ACT_PROTECT) << acc;
    }
    EXPECT_EQ(step(PG_RW, kHome, EV_WRITE_FAULT).act, 0u);
    // once shared, the same page is listed at its next write
    EXPECT_EQ(step(PG_RO | PG_SHARED, kHome, EV_WRITE_FAULT).act, (unsigned)(ACT_LIST | ACT_PROTECT));
    // sharing survives the protocol's transitions at home
    EXPECT_TRUE(step(PG_RW | PG_LISTED | PG_SHARED, kHome, EV_RELEASE).next & PG_SHARED);
    EXPECT_TRUE(step(PG_NONE | PG_SHARED, kHome, EV_READ_FAULT).next & PG_SHARED);
}

TEST(PageNext, WriteFaultOnListedPageDoesNotListAgain)
{
    auto s = step(PG_RO | PG_LISTED, kCopy, EV_WRITE_FAULT);  // invalidated then re-read
    EXPECT_EQ(s.next, (uint32_t)(PG_RW | PG_LISTED));
    EXPECT_EQ(s.act, (unsigned)(ACT_TWIN | ACT_PROTECT));
    s = step(PG_NONE | PG_LISTED, kCopy, EV_WRITE_FAULT);
    EXPECT_EQ(s.act, (unsigned)(ACT_FETCH | ACT_TWIN | ACT_PROTECT));
    s = step(PG_RO | PG_LISTED | PG_SHARED, kHome, EV_WRITE_FAULT);
    EXPECT_EQ(s.act, (unsigned)ACT_PROTECT);
}

TEST(PageNext, ReleaseOfDirtyCopyDiffsAndStaysWritable)
{
    // no protection change: the twin is refreshed, the page listed for the next interval
    auto s = step(PG_RW | PG_LISTED, kCopy, EV_RELEASE);
    EXPECT_EQ(s.next, (uint32_t)(PG_RW | PG_LISTED));
    EXPECT_EQ(s.act, (unsigned)(ACT_DIFF | ACT_LIST));
}

TEST(PageNext, IdleCopyIsWriteProtectedThenDiffedOnceMore)
{
    auto s = step(PG_RW | PG_LISTED, kCopy, EV_IDLE);
    EXPECT_EQ(s.next, (uint32_t)PG_RO);
    EXPECT_EQ(s.act, (unsigned)(ACT_PROTECT | ACT_DIFF));
    for (uint32_t st : States{PG_NONE, PG_RO, PG_RW | PG_LISTED}) {
        s = step(st, kHome, EV_IDLE);  // a home page without a twin has nothing to compare
        EXPECT_EQ(s.act, 0u) << st;
    }
}

// A kept-open home page whose twin says it was not written: protected, then
// compared once more (ACT_DIFF at home: compare, never send).
TEST(PageNext, IdleTwinnedHomePageIsWriteProtectedThenComparedOnceMore)
{
    auto s = step(PG_SHARED | PG_LISTED | PG_TWIN | PG_RW, kHome, EV_IDLE);
    EXPECT_EQ(s.next, (uint32_t)(PG_SHARED | PG_RO));
    EXPECT_EQ(s.act, (unsigned)(ACT_PROTECT | ACT_DIFF));
}

TEST(PageNext, ReleaseOfDirtyHomeDowngradesWithoutDiff)
{
    auto s = step(PG_RW | PG_LISTED, kHome, EV_RELEASE);
    EXPECT_EQ(s.next, (uint32_t)PG_RO);
    EXPECT_EQ(s.act, (unsigned)ACT_PROTECT);
}

TEST(PageNext, InvalidateOfCleanCopy)
{
    auto s = step(PG_RO, kCopy, EV_INVALIDATE);
    EXPECT_EQ(s.next, (uint32_t)PG_NONE);
    EXPECT_EQ(s.act, (unsigned)ACT_PROTECT);
}

TEST(PageNext, InvalidateOfDirtyCopyDiffsAndKeepsNotice)
{
    auto s = step(PG_RW | PG_LISTED, kCopy, EV_INVALIDATE);
    EXPECT_EQ(s.next, (uint32_t)(PG_NONE | PG_LISTED));
    EXPECT_EQ(s.act, (unsigned)(ACT_DIFF | ACT_PROTECT));
}

TEST(PageNext, InvalidateOfHomeDoesNothing)
{
    for (uint32_t st : States{PG_NONE, PG_RO, PG_RW | PG_LISTED}) {
        auto s = step(st, kHome, EV_INVALIDATE);
        EXPECT_EQ(s.next, st);
        EXPECT_EQ(s.act, 0u) << st;
    }
}

TEST(PageNext, FaultOnResolvedPageDoesNothing)
{
    for (bool home : {kHome, kCopy}) {
        for (uint32_t st : States{PG_RO, PG_RW, PG_RW | PG_LISTED}) {
            auto s = step(st, home, EV_READ_FAULT);
            EXPECT_EQ(s.next, st) << st << " home " << home;
            EXPECT_EQ(s.act, 0u) << st << " home " << home;
        }
        auto s = step(PG_RW | PG_LISTED, home, EV_WRITE_FAULT);
        EXPECT_EQ(s.next, (uint32_t)(PG_RW | PG_LISTED));
        EXPECT_EQ(s.act, 0u) << "home " << home;
    }
}

TEST(PageNext, WriteAheadOpensACleanSharedHomePageWithATwin)
{
    auto s = step(PG_RO | PG_SHARED, kHome, EV_WRITE_AHEAD);
    EXPECT_EQ(s.next, (uint32_t)(PG_SHARED | PG_LISTED | PG_TWIN | PG_RW));
    EXPECT_EQ(s.act, (unsigned)(ACT_PROTECT | ACT_TWIN | ACT_LIST));
}

TEST(PageNext, WriteAheadLeavesEveryOtherPageAlone)
{
    // copies, private home pages (written freely anyway), pages already
    // written or listed, invalid ones, stacks
    for (uint32_t st : States{PG_NONE | PG_SHARED, PG_RW | PG_SHARED | PG_LISTED, PG_RO,
                              PG_RO | PG_SHARED | PG_LISTED, PG_RO | PG_SHARED | PG_STACK}) {
        auto s = step(st, kHome, EV_WRITE_AHEAD);
        EXPECT_EQ(s.act, 0u) << st;
        EXPECT_EQ(s.next, st) << st;
    }
    auto s = step(PG_RO, kCopy, EV_WRITE_AHEAD);
    EXPECT_EQ(s.act, 0u);
}

// A shared home page written in the interval stays writable across the
// release: twinned now if it took a fault, listed for the next interval,
// whose release compares it with its twin (no protection change, no fault).
TEST(PageNext, ReleaseOfWrittenSharedHomeKeepsItWritableWithATwin)
{
    auto s = step(PG_SHARED | PG_LISTED | PG_RW, kHome, EV_RELEASE);
    EXPECT_EQ(s.next, (uint32_t)(PG_SHARED | PG_LISTED | PG_TWIN | PG_RW));
    EXPECT_EQ(s.act, (unsigned)(ACT_LIST | ACT_TWIN));
    s = step(PG_SHARED | PG_LISTED | PG_TWIN | PG_RW, kHome, EV_RELEASE);  // twinned already
    EXPECT_EQ(s.next, (uint32_t)(PG_SHARED | PG_LISTED | PG_TWIN | PG_RW));
    EXPECT_EQ(s.act, (unsigned)ACT_LIST);
    // a clean one (protected at an earlier release) keeps its protection
    s = step(PG_SHARED | PG_RO, kHome, EV_RELEASE);
    EXPECT_EQ(s.act, 0u);
}

// A home page served for the first time: a writable one (written in this
// interval) is twinned with the data that leaves and listed, so the release
// notices it only if written after; others are only marked shared.
TEST(PageNext, ShareTwinsAWritableHomePageWithTheDataThatLeaves)
{
    auto s = step(PG_RW, kHome, EV_SHARE);
    EXPECT_EQ(s.next, (uint32_t)(PG_SHARED | PG_LISTED | PG_TWIN | PG_RW));
    EXPECT_EQ(s.act, (unsigned)(ACT_TWIN | ACT_LIST));
    s = step(PG_RW | PG_LISTED, kHome, EV_SHARE);  // listed already: not again
    EXPECT_EQ(s.act, (unsigned)ACT_TWIN);
    // the release that follows compares it (no new twin), then EV_IDLE protects it
    s = step(s.next, kHome, EV_RELEASE);
    EXPECT_EQ(s.act, (unsigned)ACT_LIST);
    EXPECT_TRUE(s.next & PG_TWIN);
    for (uint32_t acc : States{PG_NONE, PG_RO}) {
        s = step(acc, kHome, EV_SHARE);
        EXPECT_EQ(s.next, acc | PG_SHARED);
        EXPECT_EQ(s.act, 0u);
    }
    s = step(PG_RW | PG_STACK, kHome, EV_SHARE);  // a stack: noticed at every release, no twin
    EXPECT_EQ(s.next, (uint32_t)(PG_RW | PG_STACK | PG_SHARED | PG_LISTED));
    EXPECT_EQ(s.act, (unsigned)ACT_LIST);
    EXPECT_EQ(step(PG_RW | PG_SHARED | PG_LISTED | PG_TWIN, kHome, EV_SHARE).act, 0u);
    EXPECT_EQ(step(PG_RO, kCopy, EV_SHARE).act, 0u);
}

// Every state word (access bits x BUSY x WAITERS x LISTED x SHARED x STACK x TWIN), event and side.
TEST(PageNext, InvariantsOverAllStates)
{
    for (uint32_t st = 0; st < (PG_TWIN << 1); st++) {
        if ((st & PG_ACC) == PG_ACC)
            continue;  // not a state: the access bits are NONE, RO or RW
        for (cb_page_event ev : kEvents) {
            for (bool home : {kHome, kCopy}) {
                auto s = step(st, home, ev);
                SCOPED_TRACE(::testing::Message() << "state " << st << " ev " << ev << " home " << home);
                EXPECT_EQ(s.next & (PG_BUSY | PG_WAITERS), 0u);
                EXPECT_NE(s.next & PG_ACC, (uint32_t)PG_ACC);
                if (home) {  // a home page is twinned only to tell later if it was written
                    EXPECT_EQ(s.act & ACT_FETCH, 0u);
                    if (s.act & ACT_DIFF) {  // compared with its twin, once protected
                        EXPECT_EQ(ev, EV_IDLE);
                        EXPECT_TRUE(st & PG_TWIN);
                        EXPECT_EQ(s.next & (PG_TWIN | PG_ACC), (uint32_t)PG_RO);
                    }
                    if (s.act & ACT_TWIN) {
                        EXPECT_TRUE(ev == EV_WRITE_AHEAD || ev == EV_RELEASE || ev == EV_SHARE);
                        EXPECT_TRUE(s.next & PG_TWIN);
                    }
                } else if (!(st & PG_TWIN)) {  // a copy's twin is its diff base: no mark
                    EXPECT_EQ(s.next & PG_TWIN, 0u);
                }
                if (ev == EV_RELEASE && home) {  // twinned after a release: a shared page kept open
                    EXPECT_EQ(!!(s.next & PG_TWIN),
                              (st & PG_ACC) == PG_RW && (st & PG_SHARED) && !(st & PG_STACK));
                }
                if (s.act & ACT_LIST) {  // a fault lists once; a release lists for the next interval
                    EXPECT_TRUE(s.next & PG_LISTED);
                    EXPECT_TRUE(ev == EV_RELEASE || !(st & PG_LISTED));
                }
                if (s.act & ACT_TWIN) {
                    EXPECT_EQ(s.next & PG_ACC, (uint32_t)PG_RW);
                }
                if (ev == EV_RELEASE) {  // the dirty list was taken: listed again only if still written
                    EXPECT_EQ(!!(s.next & PG_LISTED), !!(s.act & ACT_LIST));
                    if (s.next & PG_LISTED) {  // a copy still written, a shared stack, or a kept-open home page
                        EXPECT_EQ(s.next & PG_ACC, (uint32_t)PG_RW);
                        EXPECT_TRUE(!home || (st & PG_STACK) || (s.next & PG_TWIN));
                    }
                } else if (ev == EV_SHARE) {  // shared from now on, its access unchanged
                    EXPECT_EQ(s.act & (ACT_FETCH | ACT_DIFF | ACT_PROTECT), 0u);
                    EXPECT_EQ(s.next & PG_ACC, st & PG_ACC);
                    EXPECT_TRUE(!home || (s.next & PG_SHARED));
                    if (!home || (st & PG_SHARED)) {
                        EXPECT_EQ(s.next, st & ~(uint32_t)(PG_BUSY | PG_WAITERS));
                    }
                } else if (s.act == 0) {
                    EXPECT_EQ(s.next, st & ~(uint32_t)(PG_BUSY | PG_WAITERS));
                }
            }
        }
    }
}

TEST(PageProt, MapsAccessBits)
{
    EXPECT_EQ(cb_page_prot(PG_NONE), PROT_NONE);
    EXPECT_EQ(cb_page_prot(PG_RO), PROT_READ);
    EXPECT_EQ(cb_page_prot(PG_RW), PROT_READ | PROT_WRITE);
    EXPECT_EQ(cb_page_prot(PG_RO | PG_BUSY | PG_WAITERS | PG_LISTED), PROT_READ);
    EXPECT_EQ(cb_page_prot(PG_RW | PG_LISTED | PG_BUSY), PROT_READ | PROT_WRITE);
    EXPECT_EQ(cb_page_prot(PG_NONE | PG_LISTED | PG_WAITERS), PROT_NONE);
}

}  // namespace

// A thread's stack page at its home is never write-protected (runtime code
// runs on it): a shared one is noticed again at every release instead.
TEST(PageNext, StackPageStaysWritableAndIsNoticedEveryRelease)
{
    auto s = step(PG_RW | PG_STACK | PG_SHARED | PG_LISTED, kHome, EV_RELEASE);
    EXPECT_EQ(s.next, (uint32_t)(PG_RW | PG_STACK | PG_SHARED | PG_LISTED));
    EXPECT_EQ(s.act, (unsigned)ACT_LIST);
    EXPECT_EQ(step(PG_RW | PG_STACK, kHome, EV_INVALIDATE).act, 0u);
    EXPECT_EQ(step(PG_RW | PG_STACK, kHome, EV_WRITE_FAULT).act, 0u);
}
