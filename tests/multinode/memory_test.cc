// Homes and memory over N nodes: first-touch placement, the placement
// policies, a sparse 1 GiB allocation, a scatter, twins given back.  {1,2,4} nodes x
// {shm,tcp}; the store's pages allocated ahead of a sweep.
#include "harness.h"

#include <sched.h>

#include <cstring>
#include <sstream>

using mn::Cfg;

class FirstTouch : public ::testing::TestWithParam<Cfg> {};
class Placement : public ::testing::TestWithParam<Cfg> {};
class Sparse : public ::testing::TestWithParam<Cfg> {};
class Scatter : public ::testing::TestWithParam<Cfg> {};
class PrivateHome : public ::testing::TestWithParam<Cfg> {};
class StoreAhead : public ::testing::TestWithParam<Cfg> {};

// Node i first writes block i: block i is homed at node i, and writing it
// fetched no page from another node.
TEST_P(FirstTouch, OwnBlockHomedLocallyWithoutFetches)
{
    const Cfg c = GetParam();
    auto res = mn::run_cables(c.nodes, c.transport, mn::prog("first_touch"));
    MN_EXPECT_RUN_OK(res, r);
    EXPECT_EQ(mn::get_ll(r, "fetched_local"), 0) << res.describe();
    EXPECT_EQ(mn::get_ll(r, "bad_homes"), 0) << res.describe();
    EXPECT_EQ(mn::get_ll(r, "bad_data"), 0) << res.describe();
    EXPECT_EQ(mn::get_ll(r, "pages"), 64 * c.nodes) << res.describe();
}

// A first-touch sweep that begins mid-group takes the rest of each group
// in one directory lookup after 3 pages (sweep_touch.c: 6-7 lookups for 43
// pages, 29 page by page); blocks of 2 and 8 pages written by alternating
// nodes (LU's) are each homed on their writer all the same.
// With local claims (the default) a node sweeps as the directory does,
// and asks it at its first touch of the allocation only (2 lookups: that
// one and the page of the program's shared struct).
TEST_P(FirstTouch, MidGroupSweepTakesGroupsAlternatingBlocksStayPerPage)
{
    const Cfg c = GetParam();
    for (const std::string how : { "directory", "local" }) {
        SCOPED_TRACE("CABLES_CLAIM=" + how);
        auto res = mn::run_cables(c.nodes, c.transport, mn::prog("sweep_touch"), {},
                                  { { "CABLES_PAGE_GROUP", "16" }, { "CABLES_CLAIM", how } });
        MN_EXPECT_RUN_OK(res, r);
        EXPECT_EQ(mn::get_ll(r, "bad_homes"), 0) << res.describe();
        if (c.nodes > 1) {
            EXPECT_LE(mn::get_ll(r, "lookups"), how == "local" ? 2 : 8) << res.describe();
        }
    }
}

// A first touch in a first-touch allocation the node touched before is
// homed there at once, and the directory told after (claim_race.c).  A
// node never claims a page that another homed and wrote before its
// acquire: it reads that node's words, not zeros.  Of two nodes writing
// the same fresh pages at once, the one whose claims came second (lost)
// has its writes made diffs to the other: no word is lost either way.
// CABLES_CLAIM=directory claims nothing and gets the same words.
TEST_P(FirstTouch, LocalClaimsSeeEarlierWritesAndLoseNoWrites)
{
    const Cfg c = GetParam();
    for (const std::string how : { "local", "directory" }) {
        SCOPED_TRACE("CABLES_CLAIM=" + how);
        auto res = mn::run_cables(c.nodes, c.transport, mn::prog("claim_race"), {},
                                  { { "CABLES_CLAIM", how } });
        MN_EXPECT_RUN_OK(res, r);
        EXPECT_EQ(mn::get_ll(r, "bad_seen"), 0) << res.describe();
        EXPECT_EQ(mn::get_ll(r, "bad_race"), 0) << res.describe();
        if (how == "directory") {
            EXPECT_EQ(mn::get_ll(r, "claimed"), 0) << res.describe();
            EXPECT_EQ(mn::get_ll(r, "lost"), 0) << res.describe();
            continue;
        }
        // On one node both threads share the node's claims: a fault that
        // comes while the other thread releases or acquires (the barrier)
        // asks the directory instead (cb_claims_wait), so how many pages
        // were claimed depends on timing there (2 of 32 in a loaded CI run)
        if (c.nodes > 1) {
            EXPECT_GE(mn::get_ll(r, "claimed"), 32) << res.describe();
            EXPECT_GE(mn::get_ll(r, "lost"), 1) << res.describe();
        }
    }
}

// Ranges given back and handed out again (free_reuse.c): a node's rights
// to claim the pages of a freed range end with it.  A range taken again is
// zeroed where it was used, pages homed on another node included, and a
// smaller block at its front can be written in order by a node that once
// had the right to claim the whole range (its claims stopped the master:
// "claimed page P, which is not allocated").
TEST_P(FirstTouch, FreedRangesAreZeroedAndLoseTheirClaimRights)
{
    const Cfg c = GetParam();
    if (c.nodes < 2)
        GTEST_SKIP() << "needs 2 nodes";
    auto res = mn::run_cables(c.nodes, c.transport, mn::prog("free_reuse"), {});
    MN_EXPECT_RUN_OK(res, r);
    EXPECT_EQ(mn::get_ll(r, "bad_zero"), 0) << res.describe();
    EXPECT_EQ(mn::get_ll(r, "bad_past"), 0) << res.describe();
    EXPECT_EQ(mn::get_ll(r, "reused"), 2) << res.describe();
}

static void check_placement(const Cfg &c, const std::vector<std::string> &args,
                            const std::vector<std::string> &launcher_opts)
{
    auto res = mn::run_cables(c.nodes, c.transport, mn::prog("placement"), args, {},
                              launcher_opts);
    MN_EXPECT_RUN_OK(res, r);
    EXPECT_EQ(mn::get_ll(r, "bad_homes"), 0) << res.describe();
    EXPECT_EQ(mn::get_ll(r, "bad_data"), 0) << res.describe();
    EXPECT_EQ(mn::get_ll(r, "pages"), 8 * c.nodes) << res.describe();
}

// cables-run -p round-robin | block | fixed:1 decides the homes of
// cables_alloc() memory, whichever node touches it first (the last one).
TEST_P(Placement, LauncherPolicy)
{
    const Cfg c = GetParam();
    const std::string fixed = c.nodes > 1 ? "1" : "0";
    for (auto &pol : { "round-robin", "block" }) {
        SCOPED_TRACE(pol);
        check_placement(c, { "env", pol }, { "-p", pol });
    }
    SCOPED_TRACE("fixed:" + fixed);
    check_placement(c, { "env", "fixed", fixed }, { "-p", "fixed:" + fixed });
}

// cables_alloc_placed(size, ROUND_ROBIN | BLOCK | FIXED, node).
TEST_P(Placement, AllocPlacedPolicy)
{
    const Cfg c = GetParam();
    for (auto &pol : { "round-robin", "block" }) {
        SCOPED_TRACE(pol);
        check_placement(c, { "api", pol }, {});
    }
    const std::string node = std::to_string(c.nodes - 1);
    SCOPED_TRACE("fixed " + node);
    check_placement(c, { "api", "fixed", node }, {});
}

// Writing every 100th page of 1 GiB costs about 1% of 1 GiB on the
// writing node, in cables_memory_used() and in VmRSS.
TEST_P(Sparse, OnePercentTouchedCostsOnePercent)
{
    const Cfg c = GetParam();
    auto res = mn::run_cables(c.nodes, c.transport, mn::prog("sparse"));
    MN_EXPECT_RUN_OK(res, r);
    const long long gib = 1ll << 30, lo = gib * 9 / 1000, hi = gib * 3 / 100;
    long long mem = mn::get_ll(r, "mem_delta"), rss = mn::get_ll(r, "rss_delta");
    EXPECT_GE(mem, lo) << res.describe();
    EXPECT_LE(mem, hi) << res.describe();
    EXPECT_GE(rss, lo) << res.describe();
    EXPECT_LE(rss, hi) << res.describe();
    EXPECT_LE(mn::get_ll(r, "main_mem_delta"), hi) << res.describe();
    EXPECT_EQ(mn::get_ll(r, "bad"), 0) << res.describe();
}

INSTANTIATE_TEST_SUITE_P(Grid, FirstTouch, ::testing::ValuesIn(mn::all_cfgs()), mn::cfg_name);
INSTANTIATE_TEST_SUITE_P(Grid, Placement, ::testing::ValuesIn(mn::all_cfgs()), mn::cfg_name);
// Writing pages of 64 runs in turn maps the pages written, not the page
// groups their faults opened (scatter.c).
TEST_P(Scatter, MapsOnlyThePagesWritten)
{
    const Cfg c = GetParam();
    auto res = mn::run_cables(c.nodes, c.transport, mn::prog("scatter"));
    MN_EXPECT_RUN_OK(res, r);
    EXPECT_EQ(mn::get_ll(r, "bad"), 0) << res.describe();
    EXPECT_EQ(mn::get_ll(r, "written"), 64 * 17) << res.describe();
    EXPECT_LE(mn::get_ll(r, "rss_delta"), mn::get_ll(r, "hi")) << res.describe();
}

INSTANTIATE_TEST_SUITE_P(Grid, Sparse, ::testing::ValuesIn(mn::all_cfgs()), mn::cfg_name);
INSTANTIATE_TEST_SUITE_P(Grid, Scatter, ::testing::ValuesIn(mn::all_cfgs()), mn::cfg_name);

// A sweep's node allocates store pages ahead of it (CABLES_STORE_AHEAD=on:
// even without a CPU to spare; auto, the default: where the node has 2 CPUs
// or more of its own, an equal share of this machine's), at most as many
// as the sweep wrote, up to 256, and none with off; the pages it allocated
// but never wrote read as zero, or as what another node wrote there
// (ahead.c).
TEST_P(StoreAhead, SweepAllocatesAheadWithinBound)
{
    const Cfg c = GetParam();
    cpu_set_t set;
    ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
    const bool spare = CPU_COUNT(&set) / c.nodes >= 2;
    for (std::string v : { "on", "off", "auto" }) {
        SCOPED_TRACE(v);
        auto res = mn::run_cables(c.nodes, c.transport, mn::prog("ahead"), {},
                                  { { "CABLES_STORE_AHEAD", v } });
        MN_EXPECT_RUN_OK(res, r);
        EXPECT_EQ(mn::get_ll(r, "bad"), 0) << res.describe();
        EXPECT_LE(mn::get_ll(r, "mem_delta"), mn::get_ll(r, "hi")) << res.describe();
        if (v == "on" || (v == "auto" && spare))
            EXPECT_GE(mn::get_ll(r, "ahead"), 256) << res.describe();
        else
            EXPECT_EQ(mn::get_ll(r, "ahead"), 0) << res.describe();
    }
}

INSTANTIATE_TEST_SUITE_P(Grid, StoreAhead, ::testing::ValuesIn(mn::all_cfgs()), mn::cfg_name);

// A page homed on its writer and fetched by nobody costs at most one write fault
// in all and no write notices, however many barriers; once another node has
// read it, the home's next writes still reach that node.
TEST_P(PrivateHome, UnsharedHomePagesNeedNoNotices)
{
    const Cfg c = GetParam();
    auto res = mn::run_cables(c.nodes, c.transport, mn::prog("private_home"));
    MN_EXPECT_RUN_OK(res, r);
    EXPECT_EQ(mn::get_ll(r, "bad"), 0) << res.describe();
    // read first: at most one fault per page (a first touch maps its page
    // group), opened for writing with it: no write fault, never one per round
    EXPECT_GE(mn::get_ll(r, "max_read_faults"), 1) << res.describe();
    EXPECT_LE(mn::get_ll(r, "max_read_faults"), mn::get_ll(r, "pages")) << res.describe();
    EXPECT_EQ(mn::get_ll(r, "max_write_faults"), 0) << res.describe();
    EXPECT_EQ(mn::get_ll(r, "max_notices"), 0) << res.describe();
}
INSTANTIATE_TEST_SUITE_P(Grid, PrivateHome, ::testing::ValuesIn(mn::all_cfgs()), mn::cfg_name);

// CABLES_BIND: where the node processes of a machine run.  By default each
// of N nodes gets CPUs/N of the CPUs this process may use, none shared,
// when that is at least one (N > 1); otherwise, and with CABLES_BIND=none,
// every node may use them all.
class Bind : public ::testing::TestWithParam<Cfg> {};

static std::vector<std::string> split(const std::string &s)
{
    std::vector<std::string> v;
    std::stringstream in(s);
    for (std::string x; std::getline(in, x, ',');)
        v.push_back(x);
    return v;
}

TEST_P(Bind, NodesSharingAMachineGetEqualDisjointCpusAndTheCommThreadOne)
{
    const Cfg c = GetParam();
    cpu_set_t set;
    ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
    const int cpus = CPU_COUNT(&set), share = cpus / c.nodes;
    for (std::string bind : { "auto", "none" }) {
        SCOPED_TRACE("CABLES_BIND=" + bind);
        auto res = mn::run_cables(c.nodes, c.transport, mn::prog("cpus"), {},
                                  { { "CABLES_BIND", bind } });
        MN_EXPECT_RUN_OK(res, r);
        auto counts = split(r["counts"]), masks = split(r["masks"]), comm = split(r["comm"]);
        ASSERT_EQ((int)counts.size(), c.nodes) << res.describe();
        ASSERT_EQ((int)masks.size(), c.nodes) << res.describe();
        ASSERT_EQ((int)comm.size(), c.nodes) << res.describe();
        const bool bound = bind == "auto" && c.nodes > 1 && share >= 1;
        // with CPUs of its own, a node's communication thread keeps to one
        // of them (its application threads, probed here, have them all)
        const bool pinned = bind == "auto" && share >= 1;
        // so does main until a second application thread starts on its node
        EXPECT_EQ(mn::get_ll(r, "main_alone"), pinned && share > 1 ? 1 : bound ? share : cpus)
            << res.describe();
        EXPECT_EQ(mn::get_ll(r, "main_after"), bound ? share : cpus) << res.describe();
        unsigned long long seen = 0;
        for (int i = 0; i < c.nodes; i++) {
            EXPECT_EQ(std::stoi(counts[i]), bound ? share : cpus) << "node " << i << "\n"
                                                                 << res.describe();
            EXPECT_EQ(std::stoi(comm[i]), pinned ? 1 : cpus) << "node " << i << "\n"
                                                             << res.describe();
            unsigned long long m = std::stoull(masks[i], nullptr, 16);
            if (bound && cpus <= 64) {
                EXPECT_EQ(m & seen, 0ull) << "node " << i << " shares a CPU\n" << res.describe();
                seen |= m;
            }
        }
    }
}
INSTANTIATE_TEST_SUITE_P(Grid, Bind, ::testing::ValuesIn(mn::all_cfgs()), mn::cfg_name);

// "misplaced=N" of each node's --stats line, by node
static std::map<int, long> misplaced_by_node(const std::string &out)
{
    std::map<int, long> m;
    for (size_t at = out.find("cables: node "); at != std::string::npos;
         at = out.find("cables: node ", at + 1)) {
        size_t eol = out.find('\n', at);
        std::string line = out.substr(at, eol == std::string::npos ? std::string::npos : eol - at);
        if (line.find(" stats: ") == std::string::npos)
            continue;
        size_t k = line.find("misplaced=");
        if (k == std::string::npos)
            continue;
        m[std::stoi(line.substr(strlen("cables: node ")))] = std::stol(line.substr(k + 10));
    }
    return m;
}

// Misplaced pages: node 0 homes 16 pages (first touch); a thread on node 1
// writes 8 of them in each of 10 intervals and the other 8 in one, while
// node 0 writes those 8 every interval: exactly the first 8 are misplaced,
// on node 0, and no page of the other nodes.
class Misplaced : public ::testing::TestWithParam<Cfg> {};
TEST_P(Misplaced, PagesWrittenMostlyByAnotherNode)
{
    const Cfg c = GetParam();
    if (c.nodes < 2)
        GTEST_SKIP() << "needs a second node";
    auto res = mn::run_cables(c.nodes, c.transport, mn::prog("misplaced"), { "remote" },
                              { { "CABLES_STATS", "1" } });
    MN_EXPECT_RUN_OK(res, r);
    EXPECT_EQ(mn::get_ll(r, "bad"), 0) << res.describe();
    EXPECT_EQ(mn::get_ll(r, "misplaced"), 8) << res.describe();
    auto m = misplaced_by_node(res.output);
    ASSERT_EQ((int)m.size(), c.nodes) << res.describe();
    EXPECT_EQ(m[0], 8) << res.describe();
    for (int k = 1; k < c.nodes; k++)
        EXPECT_EQ(m[k], 0) << "node " << k << "\n" << res.describe();
}
// The control: each node writes only the pages it first touched.
TEST_P(Misplaced, NoneWhenEachNodeWritesItsOwnPages)
{
    const Cfg c = GetParam();
    auto res = mn::run_cables(c.nodes, c.transport, mn::prog("misplaced"), { "own" },
                              { { "CABLES_STATS", "1" } });
    MN_EXPECT_RUN_OK(res, r);
    EXPECT_EQ(mn::get_ll(r, "bad"), 0) << res.describe();
    EXPECT_EQ(mn::get_ll(r, "misplaced"), 0) << res.describe();
    auto m = misplaced_by_node(res.output);
    ASSERT_EQ((int)m.size(), c.nodes) << res.describe();
    for (auto &[k, n] : m)
        EXPECT_EQ(n, 0) << "node " << k << "\n" << res.describe();
}
INSTANTIATE_TEST_SUITE_P(Grid, Misplaced, ::testing::ValuesIn(mn::all_cfgs()), mn::cfg_name);

// Every thread stack, main's included, is in the global address space: a
// pointer to a stack variable works from another node; a thread's stack
// grows with no protocol fault; stacks are reused (300 threads in 1 GiB).
class Stacks : public ::testing::TestWithParam<Cfg> {};
TEST_P(Stacks, StackPointersWorkAcrossNodes)
{
    const Cfg c = GetParam();
    auto res = mn::run_cables(c.nodes, c.transport, mn::prog("stack_share"), {},
                              { { "CABLES_GAS_SIZE", "1G" } });
    MN_EXPECT_RUN_OK(res, r);
    EXPECT_EQ(mn::get_ll(r, "main_local"), 4242) << res.describe();
    EXPECT_EQ(mn::get_ll(r, "shared_sum"), mn::get_ll(r, "want")) << res.describe();
    EXPECT_EQ(mn::get_ll(r, "deep_faults"), 0) << res.describe();
    EXPECT_EQ(mn::get_ll(r, "threads"), 300) << res.describe();
    EXPECT_LE(mn::get_ll(r, "idle_notices"), 2) << res.describe();
}

// A stack overflow hits the guard page and ends the run with a message.
TEST_P(Stacks, OverflowHitsTheGuardPage)
{
    const Cfg c = GetParam();
    auto res = mn::run_cables(c.nodes, c.transport, mn::prog("stack_overflow"), {},
                              { { "CABLES_STACK_SIZE", "256K" } });
    ASSERT_FALSE(res.timed_out) << res.describe();
    EXPECT_FALSE(res.exited && res.exit_code == 0) << res.describe();
    EXPECT_NE(res.output.find("unallocated shared memory"), std::string::npos) << res.describe();
    EXPECT_EQ(res.output.find("survived"), std::string::npos) << res.describe();
}
INSTANTIATE_TEST_SUITE_P(Grid, Stacks, ::testing::ValuesIn(mn::all_cfgs()), mn::cfg_name);

// A copy that is no longer writable (invalidated, or write-protected after
// its idle grace) gives its twin back: node 1 writes 4096 pages homed on
// node 0, 64 a phase, and its twins' pool stays a small part of them
// (before: one twin per page ever written).  Main writes other words of
// half of the pages in the same phases: a diff against a twin given back
// too early, or a slot shared by two pages, would put back its old words.
class TwinReuse : public ::testing::TestWithParam<Cfg> {};
TEST_P(TwinReuse, TwinsGoBackToThePool)
{
    const Cfg c = GetParam();
    if (c.nodes < 2)
        GTEST_SKIP() << "needs node 1";
    auto res = mn::run_cables(c.nodes, c.transport, mn::prog("twin_reuse"));
    MN_EXPECT_RUN_OK(res, r);
    EXPECT_EQ(mn::get_ll(r, "bad"), 0) << res.describe();
    long long pages = mn::get_ll(r, "pages");
    EXPECT_EQ(pages, 4096) << res.describe();
    EXPECT_GE(mn::get_ll(r, "twins"), pages) << res.describe();
    EXPECT_LT(mn::get_ll(r, "pool") * 4, pages) << res.describe();
}
INSTANTIATE_TEST_SUITE_P(Grid, TwinReuse, ::testing::ValuesIn(mn::all_cfgs()), mn::cfg_name);

// malloc's big blocks (128 KiB and up, as glibc's mmap threshold) are homed
// by first touch: a block main allocates and a thread on node 1 writes is
// homed on node 1; a small block stays in its allocator's arena (homed
// there); after a big block's free, one of its size comes from the arena; a
// big block grown by realloc moves about once per doubling.
class MallocPlacement : public ::testing::TestWithParam<const char *> {};

TEST_P(MallocPlacement, BigBlocksHomedByFirstTouchSmallOnesInTheArena)
{
    if (getenv("CABLES_SANITIZE"))
        GTEST_SKIP() << "AddressSanitizer's malloc replaces the shared heap";
    auto res = mn::run_cables(2, GetParam(), mn::prog("malloc_placement"));
    MN_EXPECT_RUN_OK(res, r);
    EXPECT_EQ(r["ok"], "1") << res.describe();
    EXPECT_EQ(mn::get_ll(r, "big_on_writer"), mn::get_ll(r, "pages")) << res.describe();
    EXPECT_EQ(mn::get_ll(r, "again_on_owner"), mn::get_ll(r, "pages")) << res.describe();
    EXPECT_EQ(mn::get_ll(r, "grown_ok"), 1) << res.describe();
    EXPECT_LE(mn::get_ll(r, "moves"), 10) << res.describe(); // 127 if each growth moved it
}

INSTANTIATE_TEST_SUITE_P(TwoNodes, MallocPlacement, ::testing::Values("shm", "tcp"));
