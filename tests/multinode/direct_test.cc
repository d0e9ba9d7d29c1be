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
                      std::vector<std::string>{ "stats_sized" },
                      std::vector<std::string>{ "placement", "api", "round-robin" }),
    [](const ::testing::TestParamInfo<std::vector<std::string>> &i) {
        return i.param[0] + "_" + std::to_string(i.index);
    });

TEST(DirectBadInput, HomePolicyFoo)
{
    auto res = mn::run({ mn::prog("counter"), "40" }, { { "CABLES_HOME_POLICY", "foo" } });
    EXPECT_FALSE(res.timed_out);
    EXPECT_FALSE(res.exited && res.exit_code == 0) << res.describe();
    EXPECT_NE(res.output.find("CABLES_HOME_POLICY='foo'"), std::string::npos) << res.describe();
}

TEST(DirectBadInput, GasSize12Q)
{
    auto res = mn::run({ mn::prog("counter"), "40" }, { { "CABLES_GAS_SIZE", "12Q" } });
    EXPECT_FALSE(res.timed_out);
    EXPECT_FALSE(res.exited && res.exit_code == 0) << res.describe();
    EXPECT_NE(res.output.find("CABLES_GAS_SIZE='12Q'"), std::string::npos) << res.describe();
}

// cables-cc is used like cc: compile with -c, then relink the object (with
// -pthread and -lpthread, as a pthreads build has them); the program runs
// over 2 nodes with the runtime, although nothing names libcables at link.
TEST(CablesCc, CompileThenRelinkRunsOnTheRuntime)
{
    const std::string b = mn::build_dir(), dir = b + "/tests/cables-cc";
    const std::string src = b + "/../tests/progs/counter.c";
    ASSERT_EQ(mn::run({ "mkdir", "-p", dir }).exit_code, 0);
    auto c = mn::run({ b + "/bin/cables-cc", "-O2", "-pthread", "-c", src, "-o", dir + "/counter.o" });
    ASSERT_TRUE(c.exited && c.exit_code == 0) << c.describe();
    auto l = mn::run({ b + "/bin/cables-cc", dir + "/counter.o", "-o", dir + "/counter", "-lpthread" });
    ASSERT_TRUE(l.exited && l.exit_code == 0) << l.describe();
    auto res = mn::run({ mn::launcher(), "-n", "2", "-s", "--", dir + "/counter", "1000", "1" });
    MN_EXPECT_RUN_OK(res, r);
    EXPECT_EQ(mn::get_ll(r, "counter"), 1000) << res.describe();
    // the statistics prove the runtime ran it over two node processes
    EXPECT_NE(res.output.find("cables: node 1 stats"), std::string::npos) << res.describe();
}

// A library built with cables-cc -shared takes none of a program's own
// objects (head.o's constructor would register the runtime's end before
// libc's), and -x c++ before the sources leaves tail.o an object.
TEST(CablesCc, SharedLibraryAndLanguageFlags)
{
    const std::string b = mn::build_dir(), dir = b + "/tests/cables-cc";
    ASSERT_EQ(mn::run({ "mkdir", "-p", dir }).exit_code, 0);
    const std::string lib = dir + "/libone.so";
    auto l = mn::run({ "sh", "-c", "echo 'int one(void) { return 1; }' > " + dir + "/one.c && " + b +
                                       "/bin/cables-cc -shared -fPIC " + dir + "/one.c -o " + lib +
                                       " && nm " + lib });
    ASSERT_TRUE(l.exited && l.exit_code == 0) << l.describe();
    EXPECT_EQ(l.output.find("cables_statics_bss_begin"), std::string::npos) << l.describe();
    EXPECT_EQ(l.output.find("cables_flush"), std::string::npos) << l.describe();
    auto x = mn::run({ "sh", "-c", "cp " + b + "/../tests/cc/atomics.c " + dir + "/atomics.txt && " + b +
                                       "/bin/cables-cc -x c -O2 -pthread -I" + b + "/../tests/posix " +
                                       dir + "/atomics.txt -o " + dir + "/atomics_x" });
    ASSERT_TRUE(x.exited && x.exit_code == 0) << x.describe();
    if (getenv("CABLES_SANITIZE"))
        GTEST_SKIP() << "AddressSanitizer's malloc replaces the shared heap (built, not run)";
    auto res = mn::run_cables(2, "shm", dir + "/atomics_x", {});
    MN_EXPECT_RUN_OK(res, r);
    EXPECT_EQ(r["ok"], "1") << res.describe();
}

// A relink names each object that holds locked instructions (atomics
// compiled by plain cc: atomic on one node only) and the functions they
// are in; an object cables-cc compiled has none.
TEST(CablesCc, RelinkNamesLockedInstructions)
{
    const std::string b = mn::build_dir(), dir = b + "/tests/cables-cc";
    const std::string src = b + "/../tests/cc/atomics.c", inc = "-I" + b + "/../tests/posix";
    ASSERT_EQ(mn::run({ "mkdir", "-p", dir }).exit_code, 0);
    auto c = mn::run({ "cc", "-O2", "-pthread", inc, "-c", src, "-o", dir + "/atomics_cc.o" });
    ASSERT_TRUE(c.exited && c.exit_code == 0) << c.describe();
    auto l = mn::run({ b + "/bin/cables-cc", "-pthread", dir + "/atomics_cc.o", "-o", dir + "/atomics_cc" });
    ASSERT_TRUE(l.exited && l.exit_code == 0) << l.describe();
    EXPECT_NE(l.output.find("cables-cc: warning: " + dir + "/atomics_cc.o: locked instructions"),
              std::string::npos) << l.describe();
    EXPECT_NE(l.output.find(" in worker"), std::string::npos) << l.describe();
    auto quiet = mn::run({ b + "/bin/cables-cc", "-pthread", dir + "/atomics_cc.o", "-o", dir + "/atomics_cc" },
                         { { "CABLES_CC_ATOMICS_WARN", "0" } });
    ASSERT_TRUE(quiet.exited && quiet.exit_code == 0) << quiet.describe();
    EXPECT_EQ(quiet.output.find("locked instructions"), std::string::npos) << quiet.describe();
    auto bad = mn::run({ b + "/bin/cables-cc", "-pthread", dir + "/atomics_cc.o", "-o", dir + "/atomics_cc" },
                       { { "CABLES_CC_ATOMICS_WARN", "yes" } });
    EXPECT_TRUE(bad.exited && bad.exit_code == 2) << bad.describe();
    EXPECT_NE(bad.output.find("CABLES_CC_ATOMICS_WARN=yes"), std::string::npos) << bad.describe();
    auto ours = mn::run({ b + "/bin/cables-cc", "-O2", "-pthread", inc, "-c", src, "-o", dir + "/atomics_ours.o" });
    ASSERT_TRUE(ours.exited && ours.exit_code == 0) << ours.describe();
    auto lo = mn::run({ b + "/bin/cables-cc", "-pthread", dir + "/atomics_ours.o", "-o", dir + "/atomics_ours" });
    ASSERT_TRUE(lo.exited && lo.exit_code == 0) << lo.describe();
    EXPECT_EQ(lo.output.find("locked instructions"), std::string::npos) << lo.describe();
}

// A library built with cables-cc -shared, which a program built with
// cables-cc loads with dlopen: loaded on every node at the same address,
// its atomics calls the program exports, made across nodes (before, a
// thread on node 1 died at its first call, and dlopen failed: "undefined
// symbol").  At 4 nodes, over shm (whose segments make the master's
// address space differ most from the others') and tcp.
TEST(CablesCc, DlopenedLibraryIsEveryNodes)
{
    const std::string b = mn::build_dir(), dir = b + "/tests/cables-cc", src = b + "/../tests/cc/dlopen/";
    ASSERT_EQ(mn::run({ "mkdir", "-p", dir }).exit_code, 0);
    auto l = mn::run({ b + "/bin/cables-cc", "-O2", "-shared", "-fPIC", src + "plugin.c", "-o", dir + "/plugin.so" });
    ASSERT_TRUE(l.exited && l.exit_code == 0) << l.describe();
    auto m = mn::run({ b + "/bin/cables-cc", "-O2", "-pthread", src + "main.c", "-o", dir + "/dlopen_main", "-ldl" });
    ASSERT_TRUE(m.exited && m.exit_code == 0) << m.describe();
    if (getenv("CABLES_SANITIZE"))
        GTEST_SKIP() << "AddressSanitizer's malloc replaces the shared heap (built, not run)";
    for (const char *t : { "shm", "tcp" }) {
        auto res = mn::run_cables(4, t, dir + "/dlopen_main", { dir + "/plugin.so" }, { { "CABLES_STATS", "1" } });
        MN_EXPECT_RUN_OK(res, r);
        EXPECT_EQ(r["ok"], "1") << res.describe();
        EXPECT_EQ(r["count"], "4000") << res.describe();
        for (int k = 1; k < 4; k++)
            EXPECT_GT(mn::node_stat(res.output, k, "locks="), 0) << res.describe();
    }
    // a library whose segments are aligned to 2 MiB, which ld.so maps with
    // slack to trim (Debian has such libraries)
    auto al = mn::run({ b + "/bin/cables-cc", "-O2", "-shared", "-fPIC", "-Wl,-z,max-page-size=0x200000",
                        src + "plugin.c", "-o", dir + "/plugin_aligned.so" });
    ASSERT_TRUE(al.exited && al.exit_code == 0) << al.describe();
    auto ar = mn::run_cables(4, "shm", dir + "/dlopen_main", { dir + "/plugin_aligned.so" });
    MN_EXPECT_RUN_OK(ar, aligned);
    EXPECT_EQ(aligned["ok"], "1") << ar.describe();
    // nodes attached after the load get it (replayed), and one of their
    // threads loads it again
    auto att = mn::run_cables(1, "shm", dir + "/dlopen_main", { dir + "/plugin.so" },
                              { { "CABLES_STATS", "1" }, { "CABLES_THREADS_PER_NODE", "1" } }, { "-m", "3" });
    MN_EXPECT_RUN_OK(att, a);
    EXPECT_EQ(a["ok"], "1") << att.describe();
    EXPECT_NE(att.output.find("nodes attached="), std::string::npos) << att.describe();
    EXPECT_GT(mn::node_stat(att.output, 2, "locks="), 0) << att.describe();
    // a library missing: dlopen gives NULL and dlerror says why
    auto res = mn::run_cables(2, "shm", dir + "/dlopen_main", { dir + "/no_such_plugin.so" });
    EXPECT_TRUE(res.exited && res.exit_code == 1) << res.describe();
    EXPECT_NE(res.output.find("RESULT ok=0 dlerror=" + dir + "/no_such_plugin.so: cannot open shared object file"),
              std::string::npos) << res.describe();
}
