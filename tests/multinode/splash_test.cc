// Programs written for the SPLASH-2 M4 macros (m4macros/, splash2/): each
// is expanded twice from one source, with c.m4.pthreads and cc (native)
// and with c.m4.cables and cables-cc, and must print the native RESULT line
// (its own check passed, and the same check values) at 1, 2 and 4 nodes
// over shm and tcp.  A program prints only values that its arguments
// determine (no timings) on that line.
#include "harness.h"

using mn::Cfg;

namespace {

struct M4Prog {
    const char *path; // under the build directory, without native/
    std::vector<std::string> args;
};

// small sizes: a few seconds on 4 nodes of this machine
const M4Prog kProgs[] = {
    { "m4macros/tests/macros", { "4" } },
    { "splash2/fft", { "-m", "12", "-p", "4" } },
    { "splash2/radix", { "-n", "65536", "-p", "4" } },
    { "splash2/lu", { "-n", "128", "-p", "4", "-b", "16" } },
    { "splash2/ocean", { "-n", "64", "-p", "4" } },
    { "splash2/water", { "-n", "64", "-p", "4", "-s", "5" } },
    { "splash2/barnes", { "-n", "512", "-p", "4", "-s", "2" } },
};

} // namespace

struct M4Case {
    Cfg cfg;
    M4Prog prog;
};

class Splash : public ::testing::TestWithParam<M4Case> {};

TEST_P(Splash, MacrosOnCablesGiveTheNativeResult)
{
    const M4Case c = GetParam();
    std::vector<std::string> argv = { mn::build_dir() + "/native/" + c.prog.path };
    argv.insert(argv.end(), c.prog.args.begin(), c.prog.args.end());
    auto nat = mn::run(argv, {}, 120);
    ASSERT_TRUE(nat.ok()) << nat.describe();
    auto want = mn::parse_result(nat.output);
    ASSERT_EQ(want["ok"], "1") << nat.describe();
    auto res = mn::run_cables(c.cfg.nodes, c.cfg.transport, mn::build_dir() + "/" + c.prog.path,
                              c.prog.args, {}, {}, 120);
    MN_EXPECT_RUN_OK(res, r);
    EXPECT_EQ(r, want) << res.describe();
    // G_FREE gives back only the blocks that are GAS allocations of their own
    EXPECT_EQ(res.output.find("not the start of a block"), std::string::npos) << res.describe();
}

std::vector<M4Case> m4_cases()
{
    std::vector<M4Case> v;
    for (const M4Prog &p : kProgs)
        for (const Cfg &c : mn::all_cfgs())
            v.push_back({ c, p });
    return v;
}

INSTANTIATE_TEST_SUITE_P(Grid, Splash, ::testing::ValuesIn(m4_cases()),
                         [](const ::testing::TestParamInfo<M4Case> &i) {
                             std::string n = i.param.prog.path;
                             n = n.substr(n.rfind('/') + 1);
                             return n + "_" + std::to_string(i.param.cfg.nodes) + "nodes_" +
                                    i.param.cfg.transport;
                         });

// A program that synchronizes (FFT: barriers only) asks no node to release
// after its fetches.  Pulls every 10 ms (CABLES_PROPAGATE) drop some of its
// copies, and the pull after such a copy's fetch asks no release: its
// thread does not poll (propagate.c).  Before, that pull asked the page's
// home to release, and the notices made so dropped more copies (at -m 22
// with the default period, in some runs: 130 pulls and 108 releases, the
// ROI 5-8 times as long).
TEST(SplashPropagation, SynchronizedProgramAsksNoReleaseAfterFetches)
{
    auto res = mn::run_cables(2, "shm", mn::build_dir() + "/splash2/fft", { "-m", "22", "-p", "2" },
                              { { "CABLES_STATS", "1" }, { "CABLES_PROPAGATE", "0.01" } }, {}, 120);
    MN_EXPECT_RUN_OK(res, r);
    EXPECT_EQ(r["ok"], "1") << res.describe();
    long long pulls = 0;
    for (int node : { 0, 1 }) {
        EXPECT_EQ(mn::node_stat(res.output, node, "(asking "), 0) << "node " << node << "\n"
                                                                  << res.describe();
        pulls += mn::node_stat(res.output, node, "pulls=");
    }
    EXPECT_GT(pulls, 0) << res.describe(); // the propagation ran
}
