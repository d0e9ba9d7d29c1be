// The embedded default: a program started directly, without cables-run,
// runs on one node.
#include "harness.h"

class Direct : public ::testing::TestWithParam<std::vector<std::string>> {};

TEST_P(Direct, RunsOnOneNode)
{
    std::vector<std::string> argv = GetParam();
    argv[0] = mn::prog(argv[0]);
    auto res = mn::run(argv);
    MN_EXPECT_RUN_OK(res, r);
    EXPECT_EQ(mn::get_ll(r, "ok"), 1) << res.describe();
}

INSTANTIATE_TEST_SUITE_P(
    Progs, Direct,
    ::testing::Values(std::vector<std::string>{ "lock_visibility" },
                      std::vector<std::string>{ "false_sharing", "2" },
                      std::vector<std::string>{ "counter", "20000", "2" },
                      std::vector<std::string>{ "first_touch" },
                      std::vector<std::string>{ "sparse" },
                      std::vector<std::string>{ "placement", "api", "round-robin" }),
    [](const ::testing::TestParamInfo<std::vector<std::string>> &i) {
        return i.param[0] + "_" + std::to_string(i.index);
    });

TEST(DirectBadInput, HomePolicyFoo)
{
    auto res = mn::run({ mn::prog("hello"), "10" }, { { "CABLES_HOME_POLICY", "foo" } });
    EXPECT_FALSE(res.timed_out);
    EXPECT_FALSE(res.exited && res.exit_code == 0) << res.describe();
    EXPECT_NE(res.output.find("CABLES_HOME_POLICY='foo'"), std::string::npos) << res.describe();
}

TEST(DirectBadInput, GasSize12Q)
{
    auto res = mn::run({ mn::prog("hello"), "10" }, { { "CABLES_GAS_SIZE", "12Q" } });
    EXPECT_FALSE(res.timed_out);
    EXPECT_FALSE(res.exited && res.exit_code == 0) << res.describe();
    EXPECT_NE(res.output.find("CABLES_GAS_SIZE='12Q'"), std::string::npos) << res.describe();
}
