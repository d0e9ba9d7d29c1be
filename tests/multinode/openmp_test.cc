// OpenMP programs compiled with `cables-cc -fopenmp` (the cluster's runtime,
// openmp/gomp.c) give the result of the same source built with `cc
// -fopenmp` and GCC's libgomp, at 1, 2 and 4 nodes over shm and tcp, with
// the team's threads on the nodes; a team larger than the nodes launched
// attaches nodes; a bad OMP_* setting stops the program with a message.
#include <cstdlib>

#include "harness.h"

using mn::Cfg;

namespace {

std::map<std::string, std::string> native_result(const std::string &rel,
                                                 const std::vector<std::string> &args,
                                                 const mn::Env &env)
{
    std::vector<std::string> argv = { mn::build_dir() + "/native/" + rel };
    argv.insert(argv.end(), args.begin(), args.end());
    auto res = mn::run(argv, env, 60);
    EXPECT_TRUE(res.ok()) << res.describe();
    return mn::parse_result(res.output);
}

std::string cables(const std::string &rel) { return mn::build_dir() + "/" + rel; }

// see shim_test.cc: under AddressSanitizer the heap is not the shim's
bool asan_heap() { return getenv("CABLES_SANITIZE") != nullptr; }

const mn::Env kTeam4 = { { "OMP_NUM_THREADS", "4" }, { "CABLES_STATS", "1" } };

// every node but the master ran team threads: it took locks or faulted
void expect_nodes_worked(const mn::Result &res, int nodes)
{
    for (int k = 1; k < nodes; k++) {
        long long locks = mn::node_stat(res.output, k, "locks=");
        long long faults = mn::node_stat(res.output, k, "faults read=");
        ASSERT_GE(locks, 0) << "node " << k << " stats missing\n" << res.describe();
        EXPECT_GT(locks + faults, 0) << "node " << k << " did no work\n" << res.describe();
    }
}

} // namespace

class OpenMP : public ::testing::TestWithParam<Cfg> {};

// Every construct's checks (tests/openmp/constructs), as many as natively.
TEST_P(OpenMP, ConstructsPassAsWithLibgomp)
{
    const Cfg c = GetParam();
    if (asan_heap())
        GTEST_SKIP() << "AddressSanitizer's malloc replaces the shared heap";
    auto want = native_result("tests/openmp/constructs", {}, kTeam4);
    ASSERT_EQ(want["ok"], "1");
    auto res = mn::run_cables(c.nodes, c.transport, cables("tests/openmp/constructs"), {}, kTeam4,
                              {}, 120);
    MN_EXPECT_RUN_OK(res, r);
    EXPECT_EQ(r["ok"], "1") << res.describe();
    EXPECT_EQ(r["checks"], want["checks"]) << res.describe();
    expect_nodes_worked(res, c.nodes);
}

// A stencil program's result is the native one, bit for bit.
TEST_P(OpenMP, JacobiGivesTheNativeResult)
{
    const Cfg c = GetParam();
    if (asan_heap())
        GTEST_SKIP() << "AddressSanitizer's malloc replaces the shared heap";
    const std::vector<std::string> args = { "256", "40" };
    auto want = native_result("apps/openmp/jacobi", args, kTeam4);
    ASSERT_EQ(want["ok"], "1");
    auto res = mn::run_cables(c.nodes, c.transport, cables("apps/openmp/jacobi"), args, kTeam4);
    MN_EXPECT_RUN_OK(res, r);
    EXPECT_EQ(r, want) << res.describe();
    expect_nodes_worked(res, c.nodes);
}

INSTANTIATE_TEST_SUITE_P(Grid, OpenMP, ::testing::ValuesIn(mn::all_cfgs()), mn::cfg_name);

// A team of 4 with one thread a node, from one node launched: the runtime
// attaches 3 nodes for it, and the result is the native one.
TEST(OpenMPAttach, TeamAttachesNodes)
{
    if (asan_heap())
        GTEST_SKIP() << "AddressSanitizer's malloc replaces the shared heap";
    const std::vector<std::string> args = { "128", "20" };
    auto want = native_result("apps/openmp/jacobi", args, kTeam4);
    auto env = kTeam4;
    env["CABLES_THREADS_PER_NODE"] = "1";
    auto res = mn::run_cables(1, "shm", cables("apps/openmp/jacobi"), args, env, { "-m", "4" }, 120);
    MN_EXPECT_RUN_OK(res, r);
    EXPECT_EQ(r, want) << res.describe();
    EXPECT_EQ(mn::node_stat(res.output, 0, "nodes attached="), 3) << res.describe();
}

// Bad settings stop the program before it runs, naming the setting (one
// node process, started directly: the settings are read where main runs).
TEST(OpenMPSettings, BadValuesAreNamed)
{
    const struct {
        const char *name, *value;
    } bad[] = { { "OMP_NUM_THREADS", "four" }, { "OMP_NUM_THREADS", "0" },
                { "OMP_SCHEDULE", "fastest" }, { "OMP_SCHEDULE", "dynamic,-2" },
                { "OMP_STACKSIZE", "lots" },   { "OMP_NESTED", "maybe" } };
    for (const auto &b : bad) {
        auto res = mn::run({ cables("apps/openmp/jacobi"), "64", "2" }, { { b.name, b.value } }, 30);
        EXPECT_FALSE(res.timed_out) << res.describe();
        EXPECT_EQ(res.exit_code, 2) << b.name << "=" << b.value << "\n" << res.describe();
        EXPECT_NE(res.output.find(std::string(b.name) + "='" + b.value + "'"), std::string::npos)
            << res.describe();
        EXPECT_TRUE(mn::parse_result(res.output).empty()) << res.describe();
    }
}
