// cb_parse_size, cb_parse_policy and cb_config_load (CABLES_* environment),
// cb_ucx_tls_in (UCX_TLS).
#include <gtest/gtest.h>

#include <cstdlib>
#include <unistd.h>

#include "pure.h"

namespace {

TEST(ParseSize, AcceptsWholeNumbersWithBinarySuffixes)
{
    const struct { const char *s; size_t v; } ok[] = {
        {"4096", 4096},        {"0", 0},
        {"2k", 2ull << 10},    {"2K", 2ull << 10},
        {"16MiB", 16ull << 20}, {"16m", 16ull << 20},
        {"64G", 64ull << 30},  {"8GB", 8ull << 30},  {"8GiB", 8ull << 30},
        {"1T", 1ull << 40},    {"16777215T", 16777215ull << 40},
    };
    for (auto &c : ok) {
        size_t v = 12345;
        EXPECT_EQ(cb_parse_size(c.s, &v), 0) << c.s;
        EXPECT_EQ(v, c.v) << c.s;
    }
}

TEST(ParseSize, RefusesMalformedAndOverflowing)
{
    const char *bad[] = {
        "", "12Q", "-1", "1.5G", "G", "k", "4096B", "4096i", "1GG", "1G ", "0x10",
        "99999999999T", "16777216T", "17179869184G", "18446744073709551616",
    };
    for (const char *s : bad) {
        size_t v = 12345;
        EXPECT_EQ(cb_parse_size(s, &v), -1) << '"' << s << '"';
        EXPECT_EQ(v, 12345u) << '"' << s << '"';
    }
    size_t v;
    EXPECT_EQ(cb_parse_size(nullptr, &v), -1);
}

// strtoull skips leading blanks and accepts a sign after them, so " -1" would
// be read as 2^64 - 1 unless the sign check looks past the blanks.
TEST(ParseSize, RefusesNegativeAfterLeadingBlank)
{
    size_t v = 12345;
    EXPECT_EQ(cb_parse_size(" -1", &v), -1) << "parsed as " << v;
}

TEST(ParsePolicy, AcceptsKnownPolicies)
{
    const struct { const char *s; cables_policy_t p; int node; } ok[] = {
        {"first-touch", CABLES_POLICY_FIRST_TOUCH, 0},
        {"round-robin", CABLES_POLICY_ROUND_ROBIN, 0},
        {"block", CABLES_POLICY_BLOCK, 0},
        {"fixed:3", CABLES_POLICY_FIXED, 3},
        {"fixed:0", CABLES_POLICY_FIXED, 0},
        {"fixed:63", CABLES_POLICY_FIXED, CB_MAX_NODES - 1},
    };
    for (auto &c : ok) {
        cables_policy_t p = CABLES_POLICY_DEFAULT;
        int node = -7;
        EXPECT_EQ(cb_parse_policy(c.s, &p, &node), 0) << c.s;
        EXPECT_EQ(p, c.p) << c.s;
        EXPECT_EQ(node, c.node) << c.s;
    }
}

TEST(ParsePolicy, RefusesUnknownPolicies)
{
    for (const char *s : {"foo", "", "fixed:", "fixed:-1", "fixed:64", "fixed:2x", "fixed",
                          "block ", "First-Touch"}) {
        cables_policy_t p = CABLES_POLICY_DEFAULT;
        int node = 0;
        EXPECT_EQ(cb_parse_policy(s, &p, &node), -1) << '"' << s << '"';
    }
}

// cb_config_load reads the process environment: every test starts clean.
class ConfigLoad : public ::testing::Test {
protected:
    static constexpr const char *kVars[] = {"CABLES_GAS_SIZE", "CABLES_PAGE_SIZE",
                                            "CABLES_HOME_POLICY", "CABLES_STATS",
                                            "CABLES_DEAD_TIMEOUT", "CABLES_THREADS_PER_NODE",
                                            "CABLES_MAX_NODES", "CABLES_REFRESH", "CABLES_BIND",
                                            "CABLES_FETCH", "CABLES_CLAIM", "CABLES_LOG_GC", "CABLES_QUIET",
                                            "CABLES_PAGE_GROUP", "CABLES_FETCH_PAGES", "CABLES_STORE_AHEAD",
                                            "CABLES_ATTACH_TIMEOUT", "CABLES_TEST_SPAWN_STALL",
                                            "CABLES_AS_LIMIT", "CABLES_PROPAGATE", "CABLES_POLL_NOTE",
                                            "CABLES_TEST_ENV_DROP_US"};
    const size_t os_page = (size_t)sysconf(_SC_PAGESIZE);
    void SetUp() override { for (auto v : kVars) unsetenv(v); }
    void TearDown() override { SetUp(); }
    static cb_config_t Load()
    {
        cb_config_t c;
        memset(&c, 0xEE, sizeof c);
        cb_config_load(&c);
        return c;
    }
};
using ConfigLoadDeathTest = ConfigLoad;

TEST_F(ConfigLoad, Defaults)
{
    setenv("CABLES_STATS", "", 1);  // empty counts as unset
    cb_config_t c = Load();
    EXPECT_EQ(c.gas_size, 64ull << 30);
    EXPECT_EQ(c.libs_size, 64ull << 30);
    EXPECT_EQ(c.page_size, os_page);
    EXPECT_EQ(c.policy, CABLES_POLICY_FIRST_TOUCH);
    EXPECT_EQ(c.policy_node, 0);
    EXPECT_FALSE(c.stats);
    EXPECT_DOUBLE_EQ(c.dead_timeout, 10.0);
    EXPECT_DOUBLE_EQ(c.attach_timeout, 60.0);
    EXPECT_DOUBLE_EQ(c.propagate, 0.25);
    EXPECT_TRUE(c.poll_note);
    EXPECT_EQ(c.test_spawn_stall, -1);
    EXPECT_EQ(c.threads_per_node, (int)sysconf(_SC_NPROCESSORS_ONLN));
    EXPECT_EQ(c.max_nodes, 0); // the launched nodes only
    EXPECT_EQ(c.refresh, 8);
    EXPECT_TRUE(c.bind);
    EXPECT_TRUE(c.fetch_get);
    EXPECT_TRUE(c.claim_local);
    EXPECT_TRUE(c.quiet);
    EXPECT_EQ(c.store_ahead, 1); // auto: where a CPU is to spare
    EXPECT_EQ(c.log_gc, 1 << 18);
    EXPECT_EQ(c.page_group, 16);
    EXPECT_EQ(c.fetch_pages, 16);
}

// a fetch brings a page group unless CABLES_FETCH_PAGES says otherwise
TEST_F(ConfigLoad, FetchPagesFollowThePageGroup)
{
    setenv("CABLES_PAGE_GROUP", "4", 1);
    cb_config_t c = Load();
    EXPECT_EQ(c.page_group, 4);
    EXPECT_EQ(c.fetch_pages, 4);
    setenv("CABLES_FETCH_PAGES", "64", 1);
    c = Load();
    EXPECT_EQ(c.page_group, 4);
    EXPECT_EQ(c.fetch_pages, 64);
    unsetenv("CABLES_PAGE_GROUP");
    setenv("CABLES_FETCH_PAGES", "1", 1);
    c = Load();
    EXPECT_EQ(c.page_group, 16);
    EXPECT_EQ(c.fetch_pages, 1);
}

TEST_F(ConfigLoad, GoodValues)
{
    setenv("CABLES_GAS_SIZE", "1G", 1);
    setenv("CABLES_PAGE_SIZE", std::to_string(2 * os_page).c_str(), 1);
    setenv("CABLES_HOME_POLICY", "fixed:3", 1);
    setenv("CABLES_STATS", "yes", 1);
    setenv("CABLES_DEAD_TIMEOUT", "10.5", 1);
    setenv("CABLES_THREADS_PER_NODE", "3", 1);
    setenv("CABLES_MAX_NODES", "64", 1);
    setenv("CABLES_REFRESH", "0", 1);
    setenv("CABLES_BIND", "none", 1);
    setenv("CABLES_FETCH", "msg", 1);
    setenv("CABLES_CLAIM", "directory", 1);
    setenv("CABLES_LOG_GC", "0", 1);
    setenv("CABLES_QUIET", "off", 1);
    setenv("CABLES_STORE_AHEAD", "off", 1);
    setenv("CABLES_PROPAGATE", "0", 1);
    setenv("CABLES_POLL_NOTE", "0", 1);
    cb_config_t c = Load();
    EXPECT_DOUBLE_EQ(c.propagate, 0.0);
    EXPECT_FALSE(c.poll_note);
    setenv("CABLES_PROPAGATE", "1.5", 1);
    EXPECT_DOUBLE_EQ(Load().propagate, 1.5);
    EXPECT_FALSE(c.quiet);
    EXPECT_EQ(c.store_ahead, 0);
    EXPECT_FALSE(c.claim_local);
    EXPECT_EQ(c.log_gc, 0);
    EXPECT_EQ(c.refresh, 0);
    EXPECT_FALSE(c.bind);
    EXPECT_FALSE(c.fetch_get);
    EXPECT_EQ(c.threads_per_node, 3);
    EXPECT_EQ(c.max_nodes, 64);
    EXPECT_EQ(c.gas_size, 1ull << 30);
    EXPECT_EQ(c.page_size, 2 * os_page);
    EXPECT_EQ(c.policy, CABLES_POLICY_FIXED);
    EXPECT_EQ(c.policy_node, 3);
    EXPECT_TRUE(c.stats);
    EXPECT_DOUBLE_EQ(c.dead_timeout, 10.5);
    EXPECT_DOUBLE_EQ(c.attach_timeout, 60.0);
    setenv("CABLES_DEAD_TIMEOUT", "45", 1); // an attach may take twice as long as a silence
    EXPECT_DOUBLE_EQ(Load().attach_timeout, 90.0);
    setenv("CABLES_ATTACH_TIMEOUT", "2.5", 1);
    setenv("CABLES_TEST_SPAWN_STALL", "0", 1);
    EXPECT_EQ(Load().test_env_drop_us, 0);
    setenv("CABLES_TEST_ENV_DROP_US", "300", 1);
    c = Load();
    EXPECT_DOUBLE_EQ(c.attach_timeout, 2.5);
    EXPECT_EQ(c.test_spawn_stall, 0);
    EXPECT_EQ(c.test_env_drop_us, 300);

    setenv("CABLES_STATS", "0", 1);
    setenv("CABLES_HOME_POLICY", "round-robin", 1);
    setenv("CABLES_BIND", "auto", 1);
    setenv("CABLES_FETCH", "get", 1);
    setenv("CABLES_CLAIM", "local", 1);
    setenv("CABLES_QUIET", "on", 1);
    setenv("CABLES_STORE_AHEAD", "on", 1);
    c = Load();
    EXPECT_TRUE(c.quiet);
    EXPECT_EQ(c.store_ahead, 2);
    setenv("CABLES_STORE_AHEAD", "auto", 1);
    EXPECT_EQ(Load().store_ahead, 1);
    EXPECT_TRUE(c.claim_local);
    EXPECT_TRUE(c.bind);
    EXPECT_TRUE(c.fetch_get);
    EXPECT_FALSE(c.stats);
    EXPECT_EQ(c.policy, CABLES_POLICY_ROUND_ROBIN);
    EXPECT_EQ(c.policy_node, 0);
}

TEST_F(ConfigLoad, GasSizeRoundsUpToPages)
{
    setenv("CABLES_GAS_SIZE", std::to_string(os_page + 1).c_str(), 1);
    EXPECT_EQ(Load().gas_size, 2 * os_page);
}

// Under an address space limit (ulimit -v: cables-run passes its own as
// CABLES_AS_LIMIT) a node's reservations fit: three views of the GAS, the
// libraries' window and 512M for the rest; a GAS asked for beyond it, or a
// limit that leaves less than 128M of GAS, is refused naming the limit.
TEST_F(ConfigLoad, ReservationsFitUnderAnAddressSpaceLimit)
{
    for (const char *lim : { "8G", "2G", "100G" }) {
        setenv("CABLES_AS_LIMIT", lim, 1);
        size_t limit = 0;
        ASSERT_EQ(cb_parse_size(lim, &limit), 0);
        cb_config_t c = Load();
        EXPECT_LE(3 * c.gas_size + c.libs_size + (512ull << 20), limit) << lim;
        EXPECT_GE(3 * c.gas_size + c.libs_size + (512ull << 20), limit * 9 / 10) << lim; // not much less
        EXPECT_EQ(c.gas_size % os_page, 0u) << lim;
        EXPECT_GE(c.gas_size, 128ull << 20) << lim;
    }
    setenv("CABLES_AS_LIMIT", "1T", 1); // room for the defaults
    cb_config_t c = Load();
    EXPECT_EQ(c.gas_size, 64ull << 30);
    EXPECT_EQ(c.libs_size, 64ull << 30);
    setenv("CABLES_GAS_SIZE", "1G", 1); // asked, and it fits
    setenv("CABLES_AS_LIMIT", "8G", 1);
    EXPECT_EQ(Load().gas_size, 1ull << 30);
}

TEST_F(ConfigLoadDeathTest, AddressSpaceLimitTooLowIsNamed)
{
    setenv("CABLES_AS_LIMIT", "4G", 1);
    setenv("CABLES_GAS_SIZE", "64G", 1);
    EXPECT_EXIT(Load(), ::testing::ExitedWithCode(2), "ulimit -v.*lower CABLES_GAS_SIZE");
    unsetenv("CABLES_GAS_SIZE");
    setenv("CABLES_AS_LIMIT", "700M", 1);
    EXPECT_EXIT(Load(), ::testing::ExitedWithCode(2), "limit of 700 MiB \\(ulimit -v\\).*raise the limit");
    setenv("CABLES_AS_LIMIT", "lots", 1);
    EXPECT_EXIT(Load(), ::testing::ExitedWithCode(2), "^cables: CABLES_AS_LIMIT='lots'");
}

TEST_F(ConfigLoadDeathTest, BadValuesExitNamingTheVariable)
{
    const struct { const char *var, *val; } bad[] = {
        {"CABLES_GAS_SIZE", "12Q"},     {"CABLES_GAS_SIZE", "0"},
        {"CABLES_GAS_SIZE", "17T"},     {"CABLES_HOME_POLICY", "foo"},
        {"CABLES_PAGE_SIZE", "1000"},   {"CABLES_PAGE_SIZE", "32M"},
        {"CABLES_STATS", "maybe"},      {"CABLES_DEAD_TIMEOUT", "0.1"},
        {"CABLES_DEAD_TIMEOUT", "3s"},  {"CABLES_THREADS_PER_NODE", "0"},
        {"CABLES_THREADS_PER_NODE", "2x"}, {"CABLES_THREADS_PER_NODE", "-1"},
        {"CABLES_MAX_NODES", "65"},     {"CABLES_MAX_NODES", " 2"},
        {"CABLES_REFRESH", "256"},      {"CABLES_REFRESH", "-1"},
        {"CABLES_BIND", "core"},        {"CABLES_BIND", "yes"},
        {"CABLES_FETCH", "rma"},        {"CABLES_FETCH", "getmsg"},
        {"CABLES_CLAIM", "dir"},        {"CABLES_CLAIM", "1"},
        {"CABLES_LOG_GC", "-1"},        {"CABLES_LOG_GC", "1k"},
        {"CABLES_PAGE_GROUP", "0"},     {"CABLES_PAGE_GROUP", "65"},
        {"CABLES_FETCH_PAGES", "0"},    {"CABLES_FETCH_PAGES", "65"},
        {"CABLES_FETCH_PAGES", "4p"},   {"CABLES_QUIET", "1"},
        {"CABLES_STORE_AHEAD", "yes"},  {"CABLES_STORE_AHEAD", "o"},
        {"CABLES_ATTACH_TIMEOUT", "0.5"}, {"CABLES_ATTACH_TIMEOUT", "1m"},
        {"CABLES_TEST_SPAWN_STALL", "-1"}, {"CABLES_TEST_SPAWN_STALL", "x"},
        {"CABLES_PROPAGATE", "-1"},     {"CABLES_PROPAGATE", "10s"},
        {"CABLES_PROPAGATE", "0.0001"}, {"CABLES_POLL_NOTE", "10"},
        {"CABLES_TEST_ENV_DROP_US", "-1"}, {"CABLES_TEST_ENV_DROP_US", "100001"},
    };
    for (auto &b : bad) {
        SetUp();
        setenv(b.var, b.val, 1);
        std::string re = std::string("^cables: ") + b.var + "='" + b.val + "'";
        EXPECT_EXIT(Load(), ::testing::ExitedWithCode(2), re) << b.var << "=" << b.val;
    }
}

// cb_ucx_tls_in: which transports UCX_TLS names (rma.c asks for cma,
// transport.c for tcp only).
TEST(UcxTls, CountsTheNamesInASet)
{
    const char *const shm[] = { "cma", "sm", "shm", "all", nullptr };
    const struct { const char *tls; unsigned n, in; bool except; } cases[] = {
        { nullptr, 0, 0, false },   { "", 0, 0, false },
        { "tcp", 1, 0, false },     { "tcp,cma", 2, 1, false },
        { "^sm", 1, 1, true },      { "^tcp,posix", 2, 0, true },
        { "sm,,shm", 2, 2, false }, { "^", 0, 0, true },
    };
    for (auto &c : cases) {
        if (c.tls)
            setenv("UCX_TLS", c.tls, 1);
        else
            unsetenv("UCX_TLS");
        unsigned n = 99;
        bool except = !c.except;
        EXPECT_EQ(cb_ucx_tls_in(shm, &n, &except), c.in) << (c.tls ? c.tls : "(unset)");
        EXPECT_EQ(n, c.n) << (c.tls ? c.tls : "(unset)");
        EXPECT_EQ(except, c.except) << (c.tls ? c.tls : "(unset)");
    }
    unsetenv("UCX_TLS");
}

}  // namespace
