// cb_diff_encode / cb_diff_apply / cb_diff_max: byte-exact diffs of a page
// against its twin, for page sizes 4096 and 8192.  What a diff holds is
// checked by applying it, not by reading its format: applied to a buffer,
// it must write exactly the bytes that differ from the twin.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "pure.h"

namespace {

constexpr size_t kGuard = 64;   // canary bytes after every buffer
constexpr uint8_t kCanary = 0xA5;

std::vector<uint8_t> run(uint32_t off, uint32_t len, uint8_t fill = 0x77)
{
    std::vector<uint8_t> d(8 + len, fill);
    memcpy(d.data(), &off, 4);
    memcpy(d.data() + 4, &len, 4);
    return d;
}

// A masked record (diff.c): nw words from off, each word's mask, then nbytes
// bytes (the masks' popcount when well formed).
std::vector<uint8_t> masked(uint32_t off, uint32_t nw, uint8_t mask, size_t nbytes)
{
    std::vector<uint8_t> d(8 + nw + nbytes, 0x77);
    uint32_t l = nw | 0x80000000u;
    memcpy(d.data(), &off, 4);
    memcpy(d.data() + 4, &l, 4);
    memset(d.data() + 8, mask, nw);
    return d;
}

class Diff : public ::testing::TestWithParam<size_t> {
protected:
    size_t ps = GetParam();
    std::vector<uint8_t> twin, page;

    void SetUp() override
    {
        std::mt19937 rng(1234);
        twin.resize(ps);
        for (auto &b : twin) b = (uint8_t)rng();
        page = twin;
    }

    // Encodes page against twin, checks the diff fits cb_diff_max and that
    // encode wrote nothing past it, applies it to buffers of other bytes and
    // checks it wrote exactly the bytes where page differs from twin, with
    // page's values, and nothing past the page.  Returns the diff length.
    size_t RoundTrip()
    {
        size_t max = cb_diff_max(ps);
        std::vector<uint8_t> out(8 * ps, kCanary);  // room even if cb_diff_max is wrong
        size_t len = cb_diff_encode(page.data(), twin.data(), ps, out.data());
        EXPECT_LE(len, max);
        EXPECT_TRUE(std::all_of(out.begin() + std::min(max, out.size()), out.end(),
                                [](uint8_t c) { return c == kCanary; }))
            << "encode wrote past cb_diff_max";

        for (uint8_t fill : {0x00, 0xFF}) {  // a written byte shows in one of them
            std::vector<uint8_t> dst(ps + kGuard, kCanary);
            memset(dst.data(), fill, ps);
            EXPECT_EQ(cb_diff_apply(dst.data(), ps, out.data(), len), 0);
            for (size_t i = 0; i < ps; i++) {
                if (page[i] != twin[i])
                    EXPECT_EQ(dst[i], page[i]) << "changed byte " << i << " missing, fill " << +fill;
                else
                    EXPECT_EQ(dst[i], fill) << "unchanged byte " << i << " in the diff";
                if (HasFailure()) return len;
            }
            for (size_t i = ps; i < dst.size(); i++)
                EXPECT_EQ(dst[i], kCanary) << "apply wrote past the page";
        }
        return len;
    }
};

TEST_P(Diff, NoChangeIsEmpty) { EXPECT_EQ(RoundTrip(), 0u); }

TEST_P(Diff, SingleByteAtStart)
{
    page[0] ^= 1;
    EXPECT_EQ(RoundTrip(), 8u + 1);
}

TEST_P(Diff, SingleByteInMiddle)
{
    page[ps / 2 + 3] ^= 0x80;
    EXPECT_EQ(RoundTrip(), 8u + 1);
}

TEST_P(Diff, LastByte)
{
    page[ps - 1] ^= 0xFF;
    EXPECT_EQ(RoundTrip(), 8u + 1);
}

TEST_P(Diff, LastWord)
{
    for (size_t i = ps - 8; i < ps; i++) page[i] = (uint8_t)~twin[i];
    EXPECT_EQ(RoundTrip(), 8u + 8);
}

TEST_P(Diff, WholePage)
{
    for (size_t i = 0; i < ps; i++) page[i] = (uint8_t)~twin[i];
    EXPECT_EQ(RoundTrip(), 8 + ps);
}

// Many stretches in a run of words: one header and a mask byte per word.
TEST_P(Diff, AlternatingBytesAreOneMaskedRecord)
{
    for (size_t i = 0; i < ps; i += 2) page[i] = (uint8_t)~twin[i];
    EXPECT_EQ(RoundTrip(), 8 + ps / 8 + ps / 2);
    page = twin;  // the other phase: ends with a changed last byte
    for (size_t i = 1; i < ps; i += 2) page[i] = (uint8_t)~twin[i];
    EXPECT_EQ(RoundTrip(), 8 + ps / 8 + ps / 2);
}

// RADIX's keys: 32-bit words below 2^24 rewritten over zeroes, the top byte
// of each unchanged.  Not a header per key.
TEST_P(Diff, KeysWithAnUnchangedTopByte)
{
    std::mt19937 rng(7);
    std::fill(twin.begin(), twin.end(), 0);
    page = twin;
    for (size_t i = 0; i < ps; i += 4) {
        uint32_t k = 0x10101u | (rng() & 0xffffffu);  // no zero among the low 3 bytes
        memcpy(&page[i], &k, 4);
    }
    EXPECT_EQ(RoundTrip(), 8 + ps / 8 + ps / 4 * 3);
}

// Every word with all its bytes changed but the last: one masked record of
// the whole page, its bytes ending at the page's size + its masks + 8 (the
// encoder stores each byte before it knows whether to keep it: nothing may
// land past cb_diff_max).
TEST_P(Diff, SevenBytesOfEveryWord)
{
    for (size_t i = 0; i < ps; i++)
        if (i % 8 != 7) page[i] = (uint8_t)~twin[i];
    EXPECT_EQ(RoundTrip(), 8 + ps / 8 + ps / 8 * 7);
}

// The worst case, runs of one word apart by one unchanged word, in either
// kind of record, fits cb_diff_max.
TEST_P(Diff, EveryOtherWordFits)
{
    for (size_t i = 0; i < ps; i += 16) page[i] = (uint8_t)~twin[i];
    EXPECT_EQ(RoundTrip(), ps / 16 * 9);
    for (size_t i = 0; i < ps; i += 16) page[i + 2] = (uint8_t)~twin[i + 2];
    EXPECT_EQ(RoundTrip(), ps / 16 * (8 + 1 + 2));
    for (size_t i = 0; i < ps; i += 16)
        for (size_t k = 0; k < 8; k++) page[i + k] = (uint8_t)~twin[i + k];
    EXPECT_EQ(RoundTrip(), ps / 16 * 16);
}

// Every one of the 256 masks a word can have (word i changes the bytes of
// mask i % 256): encoded and applied a stretch of bytes at a time (diff.c),
// each stretch whole and nothing beside it.
TEST_P(Diff, EveryByteMaskOfAWord)
{
    size_t bytes = 0;
    for (size_t w = 0; w < ps / 8; w++)
        for (unsigned k = 0; k < 8; k++)
            if ((w % 256) >> k & 1) {
                page[8 * w + k] = (uint8_t)~twin[8 * w + k];
                bytes++;
            }
    RoundTrip(); // the exact bytes written, and no others (RoundTrip's checks)
    EXPECT_GT(bytes, ps / 3);
}

TEST_P(Diff, RandomChanges)
{
    std::mt19937 rng(42);
    for (int iter = 0; iter < 300; iter++) {
        for (auto &b : twin) b = (uint8_t)(rng() % 4);  // small alphabet: many accidental equals
        page = twin;
        int writes = (int)(rng() % 64);
        for (int w = 0; w < writes; w++) {
            size_t off = rng() % ps, len = 1 + rng() % 40;
            for (size_t i = off; i < off + len && i < ps; i++) page[i] = (uint8_t)(rng() % 4);
        }
        RoundTrip();
        if (HasFailure()) { ADD_FAILURE() << "iteration " << iter; return; }
    }
}

// Two nodes write different bytes of the same 8-byte word of one page; each
// diffs against its own twin of the old home copy.  Both writes must survive
// at home in either order, so neither diff may carry the other's byte.
TEST_P(Diff, FalseSharingInOneWordKeepsBothWrites)
{
    const size_t w = ps / 2;  // an aligned word in the middle
    std::vector<uint8_t> a(twin), b(twin), home(twin), diffA(cb_diff_max(ps)), diffB(cb_diff_max(ps));
    a[w + 0] = (uint8_t)~twin[w + 0];
    b[w + 1] = (uint8_t)~twin[w + 1];
    b[w + 7] = (uint8_t)~twin[w + 7];
    size_t la = cb_diff_encode(a.data(), twin.data(), ps, diffA.data());
    size_t lb = cb_diff_encode(b.data(), twin.data(), ps, diffB.data());
    EXPECT_EQ(la, 8u + 1);
    EXPECT_EQ(lb, 8u + 1 + 2);  // one word, two stretches: masked

    std::vector<uint8_t> want(twin);
    want[w + 0] = a[w + 0];
    want[w + 1] = b[w + 1];
    want[w + 7] = b[w + 7];
    for (int order = 0; order < 2; order++) {
        home = twin;
        const std::vector<uint8_t> &first = order ? diffB : diffA, &second = order ? diffA : diffB;
        ASSERT_EQ(cb_diff_apply(home.data(), ps, first.data(), order ? lb : la), 0);
        ASSERT_EQ(cb_diff_apply(home.data(), ps, second.data(), order ? la : lb), 0);
        EXPECT_TRUE(home == want) << "a write was lost, order " << order;
    }
}

TEST_P(Diff, RunEndingExactlyAtPageEndIsAccepted)
{
    std::vector<uint8_t> dst(ps, 0), d = run((uint32_t)ps - 4, 4);
    EXPECT_EQ(cb_diff_apply(dst.data(), ps, d.data(), d.size()), 0);
    EXPECT_EQ(dst[ps - 1], 0x77);
    dst.assign(ps, 0);
    d = masked((uint32_t)ps - 16, 2, 0x81, 4);  // bytes 0 and 7 of the last two words
    EXPECT_EQ(cb_diff_apply(dst.data(), ps, d.data(), d.size()), 0);
    for (size_t i = ps - 16; i < ps; i++)
        EXPECT_EQ(dst[i], i % 8 == 0 || i % 8 == 7 ? 0x77 : 0) << i;
}

// A malformed diff is refused and nothing is written, in or past the page.
TEST_P(Diff, MalformedDiffsAreRefused)
{
    std::vector<std::vector<uint8_t>> bad;
    std::vector<uint8_t> hdr = run(0, 1);
    bad.emplace_back(hdr.begin(), hdr.begin() + 4);       // truncated header
    bad.emplace_back(hdr.begin(), hdr.begin() + 7);       // truncated header
    bad.push_back(run((uint32_t)ps - 2, 4));              // run past page end
    bad.push_back(run((uint32_t)ps, 1));                  // starts at page end
    bad.push_back(run(0xFFFFFFF0u, 0x20));                // off + len wraps in 32 bits
    std::vector<uint8_t> shortdata = run(0, 16);          // length beyond the diff
    shortdata.resize(8 + 10);
    bad.push_back(shortdata);
    bad.push_back(masked(0, 0, 0xff, 0));                 // masked, no words
    bad.push_back(masked((uint32_t)ps - 8, 2, 0xff, 16)); // masked, past page end
    bad.push_back(masked(0, 4, 0x0f, 15));                // masked, a byte short
    std::vector<uint8_t> shortmask = masked(0, 4, 0x01, 0);
    shortmask.resize(8 + 3);
    bad.push_back(shortmask);                             // masked, masks cut short
    std::vector<uint8_t> good_then_trunc = run(8, 2);     // valid run, then 3 stray bytes
    good_then_trunc.resize(good_then_trunc.size() + 3, 1);
    bad.push_back(good_then_trunc);

    for (size_t k = 0; k < bad.size(); k++) {
        std::vector<uint8_t> dst(ps + kGuard, kCanary);
        memset(dst.data(), 0, ps);
        EXPECT_EQ(cb_diff_apply(dst.data(), ps, bad[k].data(), bad[k].size()), -1) << "case " << k;
        for (size_t i = ps; i < dst.size(); i++)
            ASSERT_EQ(dst[i], kCanary) << "case " << k << " wrote past the page at " << i;
        if (k + 1 < bad.size()) {  // single-run cases must not touch the page at all
            EXPECT_TRUE(std::all_of(dst.begin(), dst.begin() + ps, [](uint8_t c) { return c == 0; }))
                << "case " << k << " wrote into the page";
        }
    }
}

INSTANTIATE_TEST_SUITE_P(PageSizes, Diff, ::testing::Values(4096, 8192),
                         [](const auto &info) { return "ps" + std::to_string(info.param); });

}  // namespace

// A release diffs a page that stays writable: the twin takes the page as the
// diff saw it, so the next diff carries exactly the bytes written since.
TEST(DiffRefresh, TwinFollowsThePageAndNextDiffHasOnlyNewWrites)
{
    const size_t ps = 4096;
    std::vector<uint8_t> page(ps, 0), twin(ps, 0), home(ps, 0), out(cb_diff_max(ps));
    page[10] = 1;
    page[ps - 1] = 2;
    size_t n = cb_diff_encode_refresh(page.data(), twin.data(), ps, out.data());
    ASSERT_GT(n, 0u);
    ASSERT_EQ(cb_diff_apply(home.data(), ps, out.data(), n), 0);
    EXPECT_EQ(twin, page);
    EXPECT_EQ(home, page);
    EXPECT_EQ(cb_diff_encode_refresh(page.data(), twin.data(), ps, out.data()), 0u);

    page[11] = 3;  // written after the first diff
    n = cb_diff_encode_refresh(page.data(), twin.data(), ps, out.data());
    EXPECT_EQ(n, 8u + 1u);  // one run, one byte
    std::vector<uint8_t> other(ps, 7);  // another node's copy of the home
    ASSERT_EQ(cb_diff_apply(other.data(), ps, out.data(), n), 0);
    for (size_t i = 0; i < ps; i++)
        EXPECT_EQ(other[i], i == 11 ? 3 : 7) << i;
}

