// Nodes attached on demand and detached, through the runtime's API (also
// under the sanitizers): one launched node, one thread per node, 3 threads
// alive at once in each of two phases: every thread runs on a node attached
// for it, the sums are exact, and the nodes of the first phase leave in the
// pause before the second.

#include "harness.h"

class AttachApi : public ::testing::TestWithParam<const char *> {};

TEST_P(AttachApi, ThreadsGetNodesThatLeaveWhenDone)
{
    auto res = mn::run_cables(1, GetParam(), mn::prog("attach"), { "4", "2", "1000" },
                              { { "CABLES_STATS", "1" }, { "CABLES_THREADS_PER_NODE", "1" } },
                              { "-m", "4" }, 120);
    MN_EXPECT_RUN_OK(res, r);
    EXPECT_EQ(r["ok"], "1") << res.describe();
    EXPECT_EQ(mn::get_ll(r, "remote"), 6) << "a thread ran on the full master\n" << res.describe();
    EXPECT_GE(mn::get_ll(r, "nodes_used"), 3) << res.describe();
    EXPECT_GE(mn::node_stat(res.output, 0, "nodes attached="), 3) << res.describe();
    EXPECT_GE(mn::node_stat(res.output, 0, "detached="), 3) << res.describe();
}

INSTANTIATE_TEST_SUITE_P(OnDemand, AttachApi, ::testing::Values("shm", "tcp"));

// A node that leaves hands its homes to the master with their data, and
// the pages it homed but never wrote stay zero: 512 pages first touched by
// a thread on a node attached for it, every 4th left unwritten, read back
// by main after the node left; with 4 KiB coherence pages and with 16 KiB
// ones (the store was scanned with mincore(), whose vector has a byte per
// OS page: 16 KiB pages overran its buffer and the master died).
struct HandOverCase { const char *transport, *page_size; };

class HandOver : public ::testing::TestWithParam<HandOverCase> {};

TEST_P(HandOver, LeavingNodesHomesReachTheMasterWithTheirData)
{
    const HandOverCase c = GetParam();
    auto res = mn::run_cables(1, c.transport, mn::prog("hand_over"), {},
                              { { "CABLES_THREADS_PER_NODE", "1" }, { "CABLES_PAGE_SIZE", c.page_size } },
                              { "-m", "2" }, 120);
    MN_EXPECT_RUN_OK(res, r);
    EXPECT_EQ(mn::get_ll(r, "bad"), 0) << res.describe();
    EXPECT_EQ(mn::get_ll(r, "node"), 1) << res.describe();
    EXPECT_GE(mn::get_ll(r, "detached"), 1) << res.describe();
    EXPECT_EQ(r["ok"], "1") << res.describe();
}

INSTANTIATE_TEST_SUITE_P(OnDemand, HandOver,
                         ::testing::Values(HandOverCase{ "shm", "4096" }, HandOverCase{ "tcp", "4096" },
                                           HandOverCase{ "shm", "16384" }, HandOverCase{ "tcp", "16384" }),
                         [](const ::testing::TestParamInfo<HandOverCase> &i) {
                             return std::string(i.param.transport) + "_" + i.param.page_size;
                         });
