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

// Open MPI's MPI_Comm_spawn hangs at times (openpmix issue 2735): the
// master stays in it for ever while the new process never ends MPI_Init.
// The same state, made on purpose: each node spawned sleeps before MPI_Init
// (CABLES_TEST_SPAWN_STALL), for ever or for 5 s.  An attach given up
// after CABLES_ATTACH_TIMEOUT leaves its threads to the nodes there are
// (the master here: remote=0), the program's results are exact, and the
// run ends with the program's status 0 (not mpirun's wait for the stuck
// process, nor its 97: cables-run); a spawn that ends after all is told
// to leave, and the next phase attaches again.  A program that ends with
// exit(3) ends the run with 3.
struct StuckCase { const char *stall, *pause_ms; bool returns; const char *exit_status; };

class StuckSpawn : public ::testing::TestWithParam<StuckCase> {};

TEST_P(StuckSpawn, ThreadsGoToTheNodesThereAreAndTheRunEnds)
{
    const StuckCase c = GetParam();
    std::vector<std::string> args = { "4", "2", c.pause_ms };
    if (c.exit_status)
        args.push_back(c.exit_status);
    auto res = mn::run_cables(1, "shm", mn::prog("attach"), args,
                              { { "CABLES_THREADS_PER_NODE", "1" },
                                { "CABLES_ATTACH_TIMEOUT", "2" },
                                { "CABLES_TEST_SPAWN_STALL", c.stall } },
                              { "-m", "4" }, 60);
    if (c.exit_status) {
        ASSERT_FALSE(res.timed_out) << res.describe();
        EXPECT_TRUE(res.exited && res.exit_code == 3) << res.describe();
        EXPECT_EQ(mn::parse_result(res.output)["ok"], "1") << res.describe();
        return;
    }
    MN_EXPECT_RUN_OK(res, r);
    EXPECT_EQ(r["ok"], "1") << res.describe();
    EXPECT_EQ(mn::get_ll(r, "threads"), 6) << res.describe();
    EXPECT_EQ(mn::get_ll(r, "remote"), 0) << res.describe();
    EXPECT_NE(res.output.find("attaching node 1 has not ended after 2 s"), std::string::npos)
        << res.describe();
    EXPECT_EQ(res.output.find("exited with non-zero status"), std::string::npos)
        << "mpirun's banner about status 97 was printed\n" << res.describe();
    if (c.returns) {
        EXPECT_NE(res.output.find("the spawn of node 1, given up, ended after"), std::string::npos)
            << res.describe();
        EXPECT_NE(res.output.find("attaching node 2 has not ended"), std::string::npos)
            << "no attach after the stuck spawn returned\n" << res.describe();
    }
}

INSTANTIATE_TEST_SUITE_P(OnDemand, StuckSpawn,
                         ::testing::Values(StuckCase{ "0", "500", false, nullptr },
                                           StuckCase{ "5", "6000", true, nullptr },
                                           StuckCase{ "0", "500", false, "3" }),
                         [](const ::testing::TestParamInfo<StuckCase> &i) {
                             return std::string(i.param.exit_status ? "program_exits_3"
                                                : i.param.returns ? "returns_late"
                                                                  : "never_returns");
                         });

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
    EXPECT_EQ(mn::get_ll(r, "move_to_gone"), -1) << res.describe();
    EXPECT_EQ(r["ok"], "1") << res.describe();
}

INSTANTIATE_TEST_SUITE_P(OnDemand, HandOver,
                         ::testing::Values(HandOverCase{ "shm", "4096" }, HandOverCase{ "tcp", "4096" },
                                           HandOverCase{ "shm", "16384" }, HandOverCase{ "tcp", "16384" }),
                         [](const ::testing::TestParamInfo<HandOverCase> &i) {
                             return std::string(i.param.transport) + "_" + i.param.page_size;
                         });
