// Nodes attached on demand and detached, through the runtime's API (also
// under the sanitizers): one launched node, one thread per node, 3 threads
// alive at once in each of two phases: every thread runs on a node attached
// for it, the sums are exact, and the nodes of the first phase leave in the
// pause before the second.
#include <cstring>

#include "harness.h"

namespace {

long stat_after(const std::string &out, const std::string &key)
{
    auto at = out.find(key);
    return at == std::string::npos ? -1 : std::stol(out.substr(at + key.size()));
}

} // namespace

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
    EXPECT_GE(stat_after(res.output, "nodes attached="), 3) << res.describe();
    EXPECT_GE(stat_after(res.output, "detached="), 3) << res.describe();
}

INSTANTIATE_TEST_SUITE_P(OnDemand, AttachApi, ::testing::Values("shm", "tcp"));
