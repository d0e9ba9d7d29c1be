// The pthread shim: unmodified pthreads programs, compiled once with cc and
// linked twice (natively against glibc, and relinked with cables-cc), give
// the native result on 1, 2 and 4 nodes over shm and tcp; the POSIX
// conformance programs pass with their threads split over 2 nodes.
#include <cstdlib>
#include <signal.h>
#include <iostream>
#include <sstream>
#include <unistd.h>

#include "harness.h"

using mn::Cfg;

namespace {

struct App {
    const char *name;
    std::vector<std::string> args;
};

// sizes that keep a run at a few seconds on 4 nodes of this machine
const App kApps[] = {
    { "primes", { "200000", "4" } },
    { "prodcons", { "2000", "16" } },
    { "pipeline", { "2000", "4" } },
    { "workqueue", { "8", "100" } },
    { "globals", { "4" } },
};

std::string native(const std::string &rel) { return mn::build_dir() + "/native/" + rel; }
std::string relinked(const std::string &rel) { return mn::build_dir() + "/" + rel; }

std::map<std::string, std::string> native_result(const std::string &rel,
                                                 const std::vector<std::string> &args)
{
    std::vector<std::string> argv = { native(rel) };
    argv.insert(argv.end(), args.begin(), args.end());
    auto res = mn::run(argv, {}, 60);
    EXPECT_TRUE(res.ok()) << res.describe();
    return mn::parse_result(res.output);
}

// Under AddressSanitizer its allocator, not the shim's, serves malloc, so
// the heap is not shared; and its pthread_create interceptor, which wraps
// the shim's, starts each thread by asking pthread_getattr_np about
// pthread_self(), the shim's cluster id (not a libc thread): it crashes.
// The relinked programs are not run under it.
bool asan_heap() { return getenv("CABLES_SANITIZE") != nullptr; }

} // namespace

struct AppCase {
    Cfg cfg;
    App app;
};
std::ostream &operator<<(std::ostream &o, const AppCase &c) { return o << c.app.name << "_" << c.cfg; }

class Apps : public ::testing::TestWithParam<AppCase> {};

// The relinked program prints exactly the native program's RESULT line.
TEST_P(Apps, RelinkedGivesTheNativeResult)
{
    const AppCase c = GetParam();
    if (asan_heap())
        GTEST_SKIP() << "AddressSanitizer's malloc replaces the shared heap";
    const std::string rel = std::string("apps/") + c.app.name;
    auto want = native_result(rel, c.app.args);
    ASSERT_FALSE(want.empty());
    ASSERT_EQ(want["ok"], "1");
    auto res = mn::run_cables(c.cfg.nodes, c.cfg.transport, relinked(rel), c.app.args);
    MN_EXPECT_RUN_OK(res, r);
    EXPECT_EQ(r, want) << res.describe();
}

std::vector<AppCase> app_cases()
{
    std::vector<AppCase> v;
    for (const App &a : kApps)
        for (const Cfg &c : mn::all_cfgs())
            v.push_back({ c, a });
    return v;
}

INSTANTIATE_TEST_SUITE_P(Grid, Apps, ::testing::ValuesIn(app_cases()),
                         [](const ::testing::TestParamInfo<AppCase> &i) {
                             return std::string(i.param.app.name) + "_" +
                                    std::to_string(i.param.cfg.nodes) + "nodes_" +
                                    i.param.cfg.transport;
                         });

struct PosixCase {
    const char *transport;
    const char *name;
};

class Posix : public ::testing::TestWithParam<PosixCase> {};

// Each conformance program passes relinked with its threads split over two
// nodes (the master places each new thread on the least loaded node), and
// runs as many checks as natively.
TEST_P(Posix, PassesWithThreadsOnTwoNodes)
{
    const PosixCase c = GetParam();
    if (asan_heap())
        GTEST_SKIP() << "AddressSanitizer's malloc replaces the shared heap";
    const std::string rel = std::string("tests/posix/") + c.name;
    auto want = native_result(rel, {});
    ASSERT_EQ(want["ok"], "1");
    auto res = mn::run_cables(2, c.transport, relinked(rel), {}, { { "CABLES_STATS", "1" } });
    MN_EXPECT_RUN_OK(res, r);
    EXPECT_EQ(r["ok"], "1") << res.describe();
    EXPECT_EQ(r["checks"], want["checks"]) << res.describe();
    // node 1 really ran threads of the program: it faulted on shared pages
    // or took locks
    long long work = 0;
    for (const char *k : { "faults read=", " write=", "locks=" }) {
        long long v = mn::node_stat(res.output, 1, k);
        ASSERT_GE(v, 0) << k << " missing\n" << res.describe();
        work += v;
    }
    EXPECT_GT(work, 0) << res.describe();
}

std::vector<PosixCase> posix_cases()
{
    std::vector<PosixCase> v;
    // over tcp in the wide run (make test-wide): a sixth of the default run
    std::vector<const char *> ts = { "shm" };
    if (mn::wide_run())
        ts.push_back("tcp");
    for (const char *t : ts)
        for (const char *n : { "threads", "mutex", "cond", "barrier", "rwlock_spin_sem", "heap", "heap_reuse", "io", "syscalls", "thread_ops", "files", "mmaps", "rand", "process", "paths", "fork", "exec", "spawn", "redirect", "sigsegv", "fortified", "sigpipe", "subprogram", "pid", "jump_out", "handler_shared", "big_static", "realloc_big", "static_runs", "call_lengths", "sem_handler", "commands", "stream_restart", "messages", "old_signals", "mutex_reuse", "call_restart", "poll_mixed", "ending_mask", "cleanup_calls", "rwlock_kinds", "fd_helpers", "lfs_names", "fortify_open", "libc_helpers", "once_unwound", "sem_intr", "mutex_unlock_elsewhere", "reap_elsewhere" })
            v.push_back({ t, n });
    return v;
}

INSTANTIATE_TEST_SUITE_P(TwoNodes, Posix, ::testing::ValuesIn(posix_cases()),
                         [](const ::testing::TestParamInfo<PosixCase> &i) {
                             return std::string(i.param.name) + "_" + i.param.transport;
                         });

// Static data too big for the lower half of the GAS, where it goes (below
// the heap arenas), is refused at the start, naming CABLES_GAS_SIZE, on
// every node; a GAS big enough runs it (TwoNodes/Posix big_static).
// Before, malloc handed out blocks inside the program's 96 MiB global
// array (big_static: not_in_big and big_kept failed, ok=0).
TEST(StaticData, TooBigForTheGasIsRefused)
{
    if (asan_heap())
        GTEST_SKIP() << "AddressSanitizer's malloc replaces the shared heap";
    auto res = mn::run_cables(2, "shm", relinked("tests/posix/big_static"), {},
                              { { "CABLES_GAS_SIZE", "128M" } });
    ASSERT_FALSE(res.timed_out) << res.describe();
    EXPECT_TRUE(res.exited && res.exit_code == 2) << res.describe();
    EXPECT_EQ(res.output.find("RESULT"), std::string::npos) << res.describe();
    EXPECT_NE(res.output.find("static data (96 MiB) does not fit"), std::string::npos)
        << res.describe();
    EXPECT_NE(res.output.find("set CABLES_GAS_SIZE above 192 MiB"), std::string::npos)
        << res.describe();
}

// A big block that realloc grows past its capacity moves to one of twice
// that capacity, or, where that does not fit, to one of the size asked:
// with CABLES_GAS_SIZE=256M, 50 MiB grown to 51 MiB on node 1.  Before,
// realloc returned NULL (and said an allocation of 100 MiB did not fit).
TEST(BigBlocks, ReallocGrowsWhereTheSizeAskedFits)
{
    if (asan_heap())
        GTEST_SKIP() << "AddressSanitizer's malloc replaces the shared heap";
    auto want = native_result("tests/posix/realloc_big", {});
    ASSERT_EQ(want["ok"], "1");
    auto res = mn::run_cables(2, "shm", relinked("tests/posix/realloc_big"), {},
                              { { "CABLES_GAS_SIZE", "256M" } });
    MN_EXPECT_RUN_OK(res, r);
    EXPECT_EQ(r["ok"], "1") << res.describe();
    EXPECT_EQ(r["checks"], want["checks"]) << res.describe();
    EXPECT_EQ(res.output.find("exhausted"), std::string::npos) << res.describe();
}

// "2nodes_shm": a test name from (nodes, transport)
std::string nodes_transport_name(const ::testing::TestParamInfo<std::tuple<int, const char *>> &i)
{
    return std::to_string(std::get<0>(i.param)) + "nodes_" + std::get<1>(i.param);
}

// A pthreads program compiled with cables-cc (tests/cc/): its atomics are
// calls of the runtime, each under a cluster mutex (libcables/link/
// atomics.c), so threads on every node looping at once lose no update and a
// release store's message is seen after an acquire load.  The same source
// compiled by cc and only relinked keeps locked instructions: at 2 nodes
// about half of each counter's updates were lost.
class Compiled : public ::testing::TestWithParam<std::tuple<int, const char *>> {};

TEST_P(Compiled, AtomicsHoldAcrossNodes)
{
    if (asan_heap())
        GTEST_SKIP() << "AddressSanitizer's malloc replaces the shared heap";
    const auto [nodes, transport] = GetParam();
    auto want = native_result("tests/cc/atomics", {});
    ASSERT_EQ(want["ok"], "1");
    auto res = mn::run_cables(nodes, transport, relinked("tests/cc/atomics"), {});
    MN_EXPECT_RUN_OK(res, r);
    EXPECT_EQ(r["ok"], "1") << res.describe();
    EXPECT_EQ(r["checks"], want["checks"]) << res.describe();
}

// C++20's latch, barrier, counting_semaphore and atomic wait/notify in a
// program compiled with cables-cc (tests/cc/waits.cc): atomics made
// across nodes and libstdc++'s futex waits on them (pthread_shim/src/
// futex.c).  Compiled by c++ and only relinked, at 2 nodes a semaphore's
// count lost updates (taken=18 of 20).
TEST_P(Compiled, Cxx20WaitsHoldAcrossNodes)
{
    if (asan_heap())
        GTEST_SKIP() << "AddressSanitizer's malloc replaces the shared heap";
    const auto [nodes, transport] = GetParam();
    auto want = native_result("tests/cc/waits", {});
    ASSERT_EQ(want["ok"], "1");
    auto res = mn::run_cables(nodes, transport, relinked("tests/cc/waits"), {});
    MN_EXPECT_RUN_OK(res, r);
    EXPECT_EQ(r, want) << res.describe();
}

INSTANTIATE_TEST_SUITE_P(Driver, Compiled,
                         ::testing::Combine(::testing::Values(2, 4), ::testing::Values("shm", "tcp")),
                         nodes_transport_name);

// A C++ program compiled with c++ and relinked (tests/cxx/threads.cc):
// std::thread, mutex, condition_variable, async, exceptions and
// thread_local and std::cout on every node, and a global std::map whose
// destructor, at exit, reads the entries threads of other nodes made
// (before, it ran after the runtime's end and the run ended with status 2;
// and a thread on node 1 died at its first std::cout).
class Cxx : public ::testing::TestWithParam<std::tuple<int, const char *>> {};

TEST_P(Cxx, RelinkedProgramGivesTheNativeResult)
{
    if (asan_heap())
        GTEST_SKIP() << "AddressSanitizer's malloc replaces the shared heap";
    const auto [nodes, transport] = GetParam();
    auto want = native_result("tests/cxx/threads", {});
    ASSERT_EQ(want["ok"], "1");
    auto res = mn::run_cables(nodes, transport, relinked("tests/cxx/threads"), {});
    MN_EXPECT_RUN_OK(res, r);
    EXPECT_EQ(r, want) << res.describe();
    EXPECT_NE(res.output.find("EXIT registry entries=400 chars=6760"), std::string::npos)
        << res.describe();
    for (int i = 0; i < 4; i++) // std::cout on every node
        EXPECT_NE(res.output.find("cout from thread " + std::to_string(i) + "\n"), std::string::npos)
            << res.describe();
}

// std::promise, std::future, std::async and std::packaged_task across
// nodes (tests/cxx/futures.cc): libstdc++ waits on the shared state's word
// with syscall(SYS_futex), made across nodes by pthread_shim/src/futex.c
// (before, main waited for ever for a value set on node 1).
TEST_P(Cxx, FuturesGetValuesSetOnOtherNodes)
{
    if (asan_heap())
        GTEST_SKIP() << "AddressSanitizer's malloc replaces the shared heap";
    const auto [nodes, transport] = GetParam();
    auto want = native_result("tests/cxx/futures", {});
    ASSERT_EQ(want["ok"], "1");
    auto res = mn::run_cables(nodes, transport, relinked("tests/cxx/futures"), {});
    MN_EXPECT_RUN_OK(res, r);
    EXPECT_EQ(r, want) << res.describe();
}

INSTANTIATE_TEST_SUITE_P(Relinked, Cxx,
                         ::testing::Combine(::testing::Values(2, 4), ::testing::Values("shm", "tcp")),
                         nodes_transport_name);

// On one node that no node can join, barriers are met without the
// communication thread (barrier.c): the conformance programs that use
// them pass there too, with as many checks as natively.
class PosixOneNode : public ::testing::TestWithParam<const char *> {};

TEST_P(PosixOneNode, PassesOnOneNode)
{
    if (asan_heap())
        GTEST_SKIP() << "AddressSanitizer's malloc replaces the shared heap";
    const std::string rel = std::string("tests/posix/") + GetParam();
    auto want = native_result(rel, {});
    ASSERT_EQ(want["ok"], "1");
    auto res = mn::run_cables(1, "shm", relinked(rel), {});
    MN_EXPECT_RUN_OK(res, r);
    EXPECT_EQ(r["ok"], "1") << res.describe();
    EXPECT_EQ(r["checks"], want["checks"]) << res.describe();
}

INSTANTIATE_TEST_SUITE_P(Local, PosixOneNode, ::testing::Values("barrier", "cond", "threads", "mmaps"));

// The working directory, the file mode mask and the environment are the
// process's (pthread_shim/src/process.c, libcables/src/proc.c): with one
// thread a node, each of tests/posix/process's threads runs on a node
// attached after main changed them (given them at its attach), and the
// changes a thread makes reach main and the nodes attached after.  With the
// library before, 42 of its checks failed at 2 nodes (a thread of node 1
// found the launch directory, mode 0755 and none of main's variables).
class ProcessState : public ::testing::TestWithParam<const char *> {
protected:
    void AttachedLater(const std::map<std::string, std::string> &env)
    {
        if (asan_heap())
            GTEST_SKIP() << "AddressSanitizer's malloc replaces the shared heap";
        auto want = native_result("tests/posix/process", {});
        ASSERT_EQ(want["ok"], "1");
        std::map<std::string, std::string> e = { { "CABLES_STATS", "1" },
                                                 { "CABLES_THREADS_PER_NODE", "1" } };
        e.insert(env.begin(), env.end());
        auto res = mn::run_cables(1, GetParam(), relinked("tests/posix/process"), {}, e,
                                  { "-m", "4" }, 120);
        MN_EXPECT_RUN_OK(res, r);
        EXPECT_EQ(r["ok"], "1") << res.describe();
        EXPECT_EQ(r["checks"], want["checks"]) << res.describe();
        EXPECT_GE(mn::node_stat(res.output, 0, "nodes attached="), 3) << res.describe();
    }
};

TEST_P(ProcessState, NodesAttachedLaterFollowMainsChanges) { AttachedLater({}); }

// A node drops the launcher's variables from its environment before it
// says hello, so the master's changes given at its attach never meet that
// (libc's setenv against an array compacted in place).  Here each variable
// takes it 300 us: after the hello, the node died of SIGSEGV in every run
// (before, 1 run in 40 under load lost a variable, or broke the heap).
TEST_P(ProcessState, ChangesGivenAtAnAttachMeetNoOtherChangeOfTheEnvironment)
{
    AttachedLater({ { "CABLES_TEST_ENV_DROP_US", "300" } });
}

// At 4 launched nodes a thread's change reaches the nodes that are neither
// its own nor the master (the threads after it run on nodes 1-3).
TEST_P(ProcessState, FourNodesFollowAThreadsChanges)
{
    if (asan_heap())
        GTEST_SKIP() << "AddressSanitizer's malloc replaces the shared heap";
    auto want = native_result("tests/posix/process", {});
    ASSERT_EQ(want["ok"], "1");
    auto res = mn::run_cables(4, GetParam(), relinked("tests/posix/process"), {},
                              { { "CABLES_STATS", "1" } }, {}, 120);
    MN_EXPECT_RUN_OK(res, r);
    EXPECT_EQ(r["ok"], "1") << res.describe();
    EXPECT_EQ(r["checks"], want["checks"]) << res.describe();
    for (int k = 1; k < 4; k++)
        EXPECT_GT(mn::node_stat(res.output, k, "locks="), 0) << "node " << k << " ran no thread\n"
                                                             << res.describe();
}

INSTANTIATE_TEST_SUITE_P(Shim, ProcessState, ::testing::Values("shm", "tcp"));

// libc's random number generators follow main's seed on every node, each
// node drawing numbers of its own (pthread_shim/src/rand.c): at 4 nodes the
// three threads of tests/posix/rand run on nodes 1-3, which all drew the
// same numbers before, whatever main's seed.
class RandFourNodes : public ::testing::TestWithParam<const char *> {};

TEST_P(RandFourNodes, EachNodeDrawsFromMainsSeed)
{
    if (asan_heap())
        GTEST_SKIP() << "AddressSanitizer's malloc replaces the shared heap";
    auto want = native_result("tests/posix/rand", {});
    ASSERT_EQ(want["ok"], "1");
    auto res = mn::run_cables(4, GetParam(), relinked("tests/posix/rand"), {});
    MN_EXPECT_RUN_OK(res, r);
    EXPECT_EQ(r["ok"], "1") << res.describe();
    EXPECT_EQ(r["checks"], want["checks"]) << res.describe();
}

INSTANTIATE_TEST_SUITE_P(Shim, RandFourNodes, ::testing::Values("shm", "tcp"));

// Exit handlers a thread on node 1 registers (atexit, on_exit) run at the
// master when main returns, with main's status, and see what main wrote
// after the thread ended (before, they ran in node 1's exit after the
// runtime had stopped there, and printed its stale copy: arg=42).
class ExitHandlers : public ::testing::TestWithParam<const char *> {};

TEST_P(ExitHandlers, RegisteredOnNodeOneRunAtTheMaster)
{
    if (asan_heap())
        GTEST_SKIP() << "AddressSanitizer's malloc replaces the shared heap";
    auto res = mn::run_cables(2, GetParam(), relinked("tests/posix/exits"), {},
                              { { "CABLES_STATS", "1" } });
    MN_EXPECT_RUN_OK(res, r);
    EXPECT_EQ(r["ok"], "1") << res.describe();
    EXPECT_GT(mn::node_stat(res.output, 1, "locks="), 0) << res.describe();
    EXPECT_NE(res.output.find("EXIT on_exit ran status=0 arg=43"), std::string::npos)
        << res.describe();
    EXPECT_NE(res.output.find("EXIT atexit ran"), std::string::npos) << res.describe();
    // a handler a constructor registered runs while the runtime still
    // fetches what node 1 wrote (before: after it stopped, status 2)
    EXPECT_NE(res.output.find("EXIT ctor handler sum=1999000"), std::string::npos)
        << res.describe();
    // and so does a destructor function, after it (before: after the end)
    auto handler = res.output.find("EXIT ctor handler"), dtor = res.output.find("EXIT destructor sum=1999000");
    EXPECT_TRUE(dtor != std::string::npos && dtor > handler) << res.describe();
}

// exit(5) in that thread on node 1 ends the process at the master: the
// run's status is 5, and the handlers run once there with it.
TEST_P(ExitHandlers, ExitOnNodeOneEndsTheProcessAtTheMaster)
{
    if (asan_heap())
        GTEST_SKIP() << "AddressSanitizer's malloc replaces the shared heap";
    auto res = mn::run_cables(2, GetParam(), relinked("tests/posix/exits"), { "worker-exits" },
                              { { "CABLES_STATS", "1" } });
    EXPECT_TRUE(res.exited && res.exit_code == 5 && !res.timed_out) << res.describe();
    EXPECT_GT(mn::node_stat(res.output, 1, "locks="), 0) << res.describe();
    EXPECT_NE(res.output.find("EXIT on_exit ran status=5 arg=44"), std::string::npos)
        << res.describe();
    EXPECT_NE(res.output.find("EXIT atexit ran"), std::string::npos) << res.describe();
    EXPECT_EQ(res.output.find("mpirun detected"), std::string::npos) << res.describe();
}

// So does GNU error(6, ...) there, whose exit libc calls past the shim's
// (before, node 1 alone ended, and main waited in its join).
TEST_P(ExitHandlers, ErrorOnNodeOneEndsTheProcessAtTheMaster)
{
    if (asan_heap())
        GTEST_SKIP() << "AddressSanitizer's malloc replaces the shared heap";
    auto res = mn::run_cables(2, GetParam(), relinked("tests/posix/exits"), { "worker-error" },
                              { { "CABLES_STATS", "1" } });
    EXPECT_TRUE(res.exited && res.exit_code == 6 && !res.timed_out) << res.describe();
    EXPECT_GT(mn::node_stat(res.output, 1, "locks="), 0) << res.describe();
    EXPECT_NE(res.output.find(": worker gives up 6"), std::string::npos) << res.describe();
    EXPECT_NE(res.output.find("EXIT on_exit ran status=6 arg=44"), std::string::npos)
        << res.describe();
}

INSTANTIATE_TEST_SUITE_P(TwoNodes, ExitHandlers, ::testing::Values("shm", "tcp"));

// The process's CPU time is every node's: 4 threads burn 200 ms each on 4
// nodes, and main's clock(), clock_gettime of the process's clocks,
// times() and getrusage(RUSAGE_SELF) grow by at least 90% of their sum
// (before: node 0's share, about a quarter).
class ProcessCpuTime : public ::testing::TestWithParam<const char *> {};

TEST_P(ProcessCpuTime, SumsEveryNode)
{
    if (asan_heap())
        GTEST_SKIP() << "AddressSanitizer's malloc replaces the shared heap";
    auto want = native_result("tests/posix/cputime", { "4" });
    ASSERT_EQ(want["ok"], "1");
    auto res = mn::run_cables(4, GetParam(), relinked("tests/posix/cputime"), { "4" },
                              { { "CABLES_STATS", "1" } });
    MN_EXPECT_RUN_OK(res, r);
    EXPECT_EQ(r["ok"], "1") << res.describe();
    for (int k = 1; k < 4; k++) // a thread wrote its time there
        EXPECT_GT(mn::node_stat(res.output, k, "write="), 0) << res.describe();
}

INSTANTIATE_TEST_SUITE_P(Shim, ProcessCpuTime, ::testing::Values("shm", "tcp"));

// With nodes attached for the threads, which leave once they are joined,
// their time stays in the sum (each gives it to the master as it leaves),
// and main's clock() never goes back while they leave.
TEST(ProcessCpuTimeAttached, KeepsTheNodesThatLeft)
{
    if (asan_heap())
        GTEST_SKIP() << "AddressSanitizer's malloc replaces the shared heap";
    auto res = mn::run_cables(1, "shm", relinked("tests/posix/cputime"), { "3", "1000" },
                              { { "CABLES_STATS", "1" }, { "CABLES_THREADS_PER_NODE", "1" } },
                              { "-m", "3" });
    MN_EXPECT_RUN_OK(res, r);
    EXPECT_EQ(r["ok"], "1") << res.describe();
    EXPECT_GE(mn::node_stat(res.output, 0, "detached="), 1) << res.describe();
}

// A signal sent to the process reaches the thread that takes it, on
// whichever node: W (another node than main) waits with sigtimedwait,
// sigwaitinfo, sigwait and a signalfd on globals main wrote, H takes
// SIGHUP with its handler in ppoll and sigsuspend, and every other thread
// blocks them; main's kill and sigqueue name the master's process, W's
// kill its own node's.  A signal no thread takes yet is pending for the
// process (main's sigpending) until W waits for it.  The same checks as
// the native run's (before: W's waits failed with EFAULT, and signals
// stayed in the node process they were sent to).
class ProcessSignals : public ::testing::TestWithParam<std::tuple<int, const char *>> {};

TEST_P(ProcessSignals, ReachTheThreadThatTakesThem)
{
    if (asan_heap())
        GTEST_SKIP() << "AddressSanitizer's malloc replaces the shared heap";
    auto want = native_result("tests/posix/psignals", {});
    ASSERT_EQ(want["ok"], "1");
    auto res = mn::run_cables(std::get<0>(GetParam()), std::get<1>(GetParam()),
                              relinked("tests/posix/psignals"), {}, { { "CABLES_STATS", "1" } });
    MN_EXPECT_RUN_OK(res, r);
    EXPECT_EQ(r["ok"], "1") << res.describe();
    EXPECT_EQ(r["checks"], want["checks"]) << res.describe();
    EXPECT_GT(mn::node_stat(res.output, 1, "write="), 0) << res.describe(); // W ran there
}

INSTANTIATE_TEST_SUITE_P(Shim, ProcessSignals,
                         ::testing::Combine(::testing::Values(2, 3), ::testing::Values("shm", "tcp")));

// The same with nodes attached for the threads as they start: a signal
// kept for the process reaches a node attached after it was sent.
TEST(ProcessSignalsAttached, ReachTheThreadThatTakesThem)
{
    if (asan_heap())
        GTEST_SKIP() << "AddressSanitizer's malloc replaces the shared heap";
    auto res = mn::run_cables(1, "shm", relinked("tests/posix/psignals"), {},
                              { { "CABLES_STATS", "1" }, { "CABLES_THREADS_PER_NODE", "1" } },
                              { "-m", "3" });
    MN_EXPECT_RUN_OK(res, r);
    EXPECT_EQ(r["ok"], "1") << res.describe();
}

// What a terminal or a user sends cables-run reaches the program once, as
// it reaches a process of its own: SIGINT, SIGHUP and SIGQUIT sent to the
// whole process group (Ctrl-C, a hang-up), SIGTERM to cables-run alone.
// The program takes SIGINT and SIGHUP with handlers on main and SIGQUIT and
// SIGTERM in a sigwait on another node, and ends well; SIGHUP and SIGQUIT
// had their default disposition at its start.  The native program, driven
// the same way, says the same.  Before, mpirun ended every node process
// with SIGTERM at Ctrl-C, the program's SIGQUIT was ignored (mpirun's), and
// SIGHUP only made UCX verbose.
class TerminalSignals : public ::testing::TestWithParam<const char *> {};

static bool wait_line(mn::Proc &p, const std::string &line)
{
    return p.wait_for([&](const std::string &o) { return ("\n" + o).find("\n" + line + "\n") != std::string::npos; },
                      30);
}

// Starts argv (in a session of its own, as a terminal's foreground job),
// sends the signals as the comment above says; the result.
static mn::Result drive(const std::vector<std::string> &argv)
{
    mn::Proc p;
    EXPECT_TRUE(p.start(argv));
    EXPECT_TRUE(wait_line(p, "ready")) << p.output();
    // (a SIGINT sent while the threads start was once taken 30 s late, at
    // the next signal, in the fresh-clone CI: not yet understood)
    usleep(500 * 1000);
    const std::pair<int, const char *> steps[] = { { SIGINT, "INT" }, { SIGHUP, "HUP" }, { SIGQUIT, "QUIT" } };
    for (auto &s : steps) {
        EXPECT_EQ(kill(-p.pid(), s.first), 0);
        EXPECT_TRUE(wait_line(p, std::string("got ") + s.second))
            << s.second << "\n" << mn::signal_state(p.pid()) << p.output();
    }
    EXPECT_EQ(kill(-p.pid(), SIGTERM), 0);
    bool ended = p.wait_exit(30);
    if (!ended)
        p.kill_all();
    EXPECT_TRUE(ended) << p.result().describe();
    return p.result();
}

TEST_P(TerminalSignals, ReachTheProgramOnce)
{
    if (asan_heap())
        GTEST_SKIP() << "AddressSanitizer's malloc replaces the shared heap";
    mn::Result want = drive({ native("tests/posix/term_signals"), "handle" });
    ASSERT_EQ(mn::parse_result(want.output)["ok"], "1") << want.describe();
    mn::Result res = drive(mn::cables_cmd(3, GetParam(), relinked("tests/posix/term_signals"), { "handle" }));
    MN_EXPECT_RUN_OK(res, r);
    EXPECT_EQ(r["ok"], "1") << res.describe();
}

// A program without handlers ends at Ctrl-C as a process does: cables-run
// is killed by SIGINT (a shell's loop around it stops), and says nothing.
TEST_P(TerminalSignals, EndTheProgramWithoutHandlers)
{
    if (asan_heap())
        GTEST_SKIP() << "AddressSanitizer's malloc replaces the shared heap";
    mn::Proc p;
    ASSERT_TRUE(p.start(mn::cables_cmd(3, GetParam(), relinked("tests/posix/term_signals"), { "default" })));
    ASSERT_TRUE(wait_line(p, "ready")) << p.output();
    const double t0 = mn::seconds_now();
    ASSERT_EQ(kill(-p.pid(), SIGINT), 0);
    bool ended = p.wait_exit(30);
    if (!ended)
        p.kill_all();
    mn::Result res = p.result();
    ASSERT_TRUE(ended) << res.describe();
    EXPECT_EQ(res.signal, SIGINT) << res.describe();
    EXPECT_LE(res.end_time - t0, 10.0) << res.describe();
    EXPECT_EQ(res.output.find("cables-run:"), std::string::npos) << res.describe();
    EXPECT_EQ(res.output.find("RESULT"), std::string::npos) << res.describe();
}

// On a terminal, as an interactive shell's foreground job, the program
// reads what is typed (its reader thread runs on node 1), Ctrl-Z stops it
// and the shell's fg continues it, as the program run alone.  (mpirun runs
// in a process group of its own: cables-run reads the terminal for it and
// passes job control on to it.)
static mn::Result drive_terminal(const std::vector<std::string> &argv)
{
    auto ticks = [](const std::string &o) {
        size_t n = 0;
        for (size_t at = o.find("\ntick "); at != std::string::npos; at = o.find("\ntick ", at + 1))
            n++;
        return n;
    };
    auto never = [](const std::string &) { return false; };
    mn::Proc p;
    EXPECT_TRUE(p.start_on_terminal(argv));
    EXPECT_TRUE(wait_line(p, "ready")) << p.output();
    EXPECT_TRUE(p.type("hello\n"));
    EXPECT_TRUE(wait_line(p, "read: hello")) << p.output();
    EXPECT_TRUE(p.wait_for([&](const std::string &o) { return ticks(o) >= 3; }, 30)) << p.output();
    EXPECT_TRUE(p.type("\x1a"));
    p.wait_for(never, 1); // (a tick on its way)
    const size_t stopped = ticks(p.output());
    p.wait_for(never, 1);
    EXPECT_EQ(ticks(p.output()), stopped) << "ticks went on after Ctrl-Z\n" << p.output();
    EXPECT_TRUE(p.resume());
    EXPECT_TRUE(p.wait_for([&](const std::string &o) { return ticks(o) >= stopped + 3; }, 30))
        << "no ticks after fg\n" << p.output();
    EXPECT_TRUE(p.type("end\n"));
    bool ended = p.wait_exit(30);
    if (!ended)
        p.kill_all();
    EXPECT_TRUE(ended) << p.result().describe();
    return p.result();
}

TEST_P(TerminalSignals, TerminalInputAndJobControl)
{
    if (asan_heap())
        GTEST_SKIP() << "AddressSanitizer's malloc replaces the shared heap";
    mn::Result want = drive_terminal({ native("tests/posix/term_signals"), "terminal" });
    auto w = mn::parse_result(want.output);
    ASSERT_EQ(w["ok"], "1") << want.describe();
    mn::Result res = drive_terminal(mn::cables_cmd(2, GetParam(), relinked("tests/posix/term_signals"), { "terminal" }));
    MN_EXPECT_RUN_OK(res, r);
    EXPECT_EQ(r["ok"], "1") << res.describe();
    EXPECT_EQ(r["lines"], w["lines"]) << res.describe();
}

// Standard output is cables-run's, as the program's alone: a terminal
// where cables-run's is, and only there (mpirun gave every node's a
// pseudo-terminal: isatty(1) was true with the output going into a pipe or
// a file), and every line whole, in the program's order, whichever node
// printed it (mpirun passed two nodes' output on in the order it read it,
// and cut lines where it read).
class StdoutTty : public ::testing::TestWithParam<const char *> {};

// "" if output has the lines "line K" for K from 0 to n-1 with K % every
// == of (every 1: all of them), in order, whole
static std::string lines_in_order(const std::string &o, int n, int every = 1, int of = 0)
{
    std::istringstream in(o);
    std::string l;
    int want = of, got = 0;
    while (std::getline(in, l)) {
        if (l.find("line ") == std::string::npos)
            continue;
        if (l != "line " + std::to_string(want))
            return "line " + std::to_string(want) + " expected, got '" + l + "'";
        want += every;
        got++;
    }
    int all = n / every + (n % every > of);
    return got == all ? "" : std::to_string(got) + " lines of " + std::to_string(all);
}

static void expect_stdout_as(const mn::Result &want, const mn::Result &res)
{
    auto w = mn::parse_result(want.output);
    ASSERT_EQ(w["ok"], "1") << want.describe();
    MN_EXPECT_RUN_OK(res, r);
    EXPECT_EQ(r["ok"], "1") << res.describe();
    for (const char *k : { "tty_main", "tty_thread", "tty_err_main", "tty_err_thread", "lines" })
        EXPECT_EQ(r[k], w[k]) << k << "\n" << res.describe();
    EXPECT_EQ(lines_in_order(res.output, std::stoi(w["lines"])), "") << res.describe();
    // each thread's part of a line before main's end of it
    for (const char *t : { "tail0 ", "tail1 ", "tail2 " })
        EXPECT_LT(res.output.find(t), res.output.find("\nRESULT ")) << t << "\n" << res.describe();
}

// Standard output and error (every fifth line, tests/posix/stdout.c) as
// the program's alone: a terminal where that is one, the lines of all
// nodes whole and in order, also where standard error is standard output
// (2>&1: before, the error went through mpirun, out of order and never a
// terminal)
TEST_P(StdoutTty, AsTheProgramsAlone)
{
    if (asan_heap())
        GTEST_SKIP() << "AddressSanitizer's malloc replaces the shared heap";
    const std::string prog = "tests/posix/stdout";
    // into a pipe, at 4 nodes, and as nodes on other machines would
    // (through mpirun, which keeps no order: isatty only)
    mn::Result want = mn::run({ native(prog) });
    EXPECT_EQ(mn::parse_result(want.output)["tty_main"], "0") << want.describe();
    expect_stdout_as(want, mn::run_cables(4, GetParam(), relinked(prog), {}));
    auto apart = mn::run_cables(2, GetParam(), relinked(prog), {}, { { "CABLES_TEST_STDOUT_APART", "1" } });
    MN_EXPECT_RUN_OK(apart, a);
    for (const char *k : { "tty_main", "tty_thread", "tty_err_main", "tty_err_thread" })
        EXPECT_EQ(a[k], "0") << k << "\n" << apart.describe();
    // standard error alone into the pipe: its lines, in order
    std::string only_err = "exec \"$0\" \"$@\" 2>&1 >/dev/null";
    std::vector<std::string> cmd = { "bash", "-c", only_err };
    for (auto &a : mn::cables_cmd(4, GetParam(), relinked(prog), {}))
        cmd.push_back(a);
    auto err = mn::run(cmd);
    EXPECT_TRUE(err.ok()) << err.describe();
    EXPECT_EQ(lines_in_order(err.output, std::stoi(mn::parse_result(want.output)["lines"]), 5, 4), "")
        << err.describe();
    // on a terminal
    auto on_terminal = [](const std::vector<std::string> &argv) {
        mn::Proc p;
        EXPECT_TRUE(p.start_on_terminal(argv));
        if (!p.wait_exit(60))
            p.kill_all();
        return p.result();
    };
    want = on_terminal({ native(prog) });
    EXPECT_EQ(mn::parse_result(want.output)["tty_main"], "1") << want.describe();
    EXPECT_EQ(mn::parse_result(want.output)["tty_err_main"], "1") << want.describe();
    expect_stdout_as(want, on_terminal(mn::cables_cmd(4, GetParam(), relinked(prog), {})));
    // a terminal that stops background writers (stty tostop): the nodes,
    // each in a process group of mpirun's, write through mpirun (they
    // stopped, and the run ended with a dead node)
    std::vector<std::string> tostop = { "bash", "-c", "stty tostop && exec \"$0\" \"$@\"" };
    for (auto &a : mn::cables_cmd(2, GetParam(), relinked(prog), {}))
        tostop.push_back(a);
    auto ts = on_terminal(tostop);
    MN_EXPECT_RUN_OK(ts, t);
    EXPECT_EQ(t["ok"], "1") << ts.describe();
    EXPECT_EQ(t["tty_main"], "1") << ts.describe();
}

INSTANTIATE_TEST_SUITE_P(Shim, StdoutTty, ::testing::Values("shm", "tcp"));

INSTANTIATE_TEST_SUITE_P(Shim, TerminalSignals, ::testing::Values("shm", "tcp"));

// A standard descriptor closed when the program starts (<&-, >&-, 2>&-):
// the program runs as alone, with cables-run at 2 nodes and relinked alone
// (one node).  Before, cables-run ended at once with "Bad file
// descriptor" (stdin or stdout closed) or killed by SIGPIPE (stderr), and
// the relinked program alone died of SIGSEGV: the runtime's store, which
// backs the shared memory, took the free descriptor, and stderr's lines
// went into it.
TEST(StandardDescriptors, ClosedAsAlone)
{
    if (asan_heap())
        GTEST_SKIP() << "AddressSanitizer's malloc replaces the shared heap";
    const std::string prog = "tests/posix/stdout";
    for (const std::string closed : { "<&-", ">&-", "2>&-" }) {
        const std::string tail = " " + closed + "; echo status=$? >&3";
        std::vector<std::string> how = { native(prog), relinked(prog),
                                         mn::launcher() + " -n 2 -- " + relinked(prog) };
        for (const std::string &cmd : how) {
            auto res = mn::run({ "bash", "-c", "exec 3>&1; " + cmd + tail });
            const std::string &o = res.output;
            EXPECT_TRUE(res.ok()) << closed << "\n" << res.describe();
            EXPECT_NE(o.find("status=0\n"), std::string::npos) << closed << "\n" << res.describe();
            if (closed == ">&-") { // standard error only
                EXPECT_EQ(o.find("RESULT"), std::string::npos) << res.describe();
                EXPECT_EQ(lines_in_order(o, 2000, 5, 4), "") << res.describe(); // (4 x 500 lines)
                continue;
            }
            EXPECT_NE(o.find("RESULT ok=1 "), std::string::npos) << closed << "\n" << res.describe();
            if (closed == "<&-")
                EXPECT_EQ(lines_in_order(o, 2000), "") << res.describe();
            else // standard output only
                EXPECT_TRUE(o.find("line 3\n") != std::string::npos && o.find("line 4\n") == std::string::npos)
                    << res.describe();
        }
    }
}

// Under an address space limit (ulimit -v, as batch systems set) the
// program runs as alone: each node's reservations (three views of the
// GAS, the libraries' window) fit in it, at 2 nodes and alone (before, any
// limit below about 260G ended the run: "cannot map the protocol view");
// a CABLES_GAS_SIZE that does not fit is refused naming the limit.
TEST(AddressSpaceLimit, ProgramRunsUnderIt)
{
    if (asan_heap())
        GTEST_SKIP() << "AddressSanitizer reserves more address space than any such limit";
    const std::string limit = "ulimit -v 3000000 && exec \"$0\" \"$@\"";
    auto under = [&](std::vector<std::string> cmd, mn::Env env = {}) {
        cmd.insert(cmd.begin(), { "bash", "-c", limit });
        return mn::run(cmd, env, 60);
    };
    const std::vector<std::string> args = { "2000000", "4" };
    auto want = under({ native("apps/primes"), "2000000", "4" });
    auto w = mn::parse_result(want.output);
    ASSERT_EQ(w["ok"], "1") << want.describe();
    auto alone = under({ relinked("apps/primes"), "2000000", "4" });
    EXPECT_EQ(mn::parse_result(alone.output), w) << alone.describe();
    for (const char *t : { "shm", "tcp" }) {
        auto res = under(mn::cables_cmd(2, t, relinked("apps/primes"), args));
        EXPECT_EQ(mn::parse_result(res.output), w) << res.describe();
    }
    auto big = under(mn::cables_cmd(2, "shm", relinked("apps/primes"), args), { { "CABLES_GAS_SIZE", "64G" } });
    EXPECT_FALSE(big.timed_out) << big.describe();
    EXPECT_TRUE(big.exited && big.exit_code == 2) << big.describe();
    EXPECT_NE(big.output.find("(ulimit -v)"), std::string::npos) << big.describe();
    EXPECT_NE(big.output.find("lower CABLES_GAS_SIZE"), std::string::npos) << big.describe();
}

// Threads that poll a plain variable with sleeps, or spin on one without
// any call, see other nodes' writes as natively, though release
// consistency alone never shows them (tests/posix/poll_flag.c: before,
// plain_seen=0 and spin_seen=0, and the runs went on without a word).
// CABLES_PROPAGATE=0 turns the propagation off: the test can tell.  A
// note says once a node that a poller was shown writes so, and that data
// it reads after a flag may be older (CABLES_POLL_NOTE=0: none).
TEST(Propagation, PollersAndSpinnersSeeWrites)
{
    if (asan_heap())
        GTEST_SKIP() << "AddressSanitizer's malloc replaces the shared heap";
    const std::string note = "was shown other nodes' writes by propagation";
    auto want = native_result("tests/posix/poll_flag", {});
    ASSERT_EQ(want["plain_seen"], "1");
    ASSERT_EQ(want["spin_seen"], "1");
    for (auto [n, tls] : { std::pair{ 2, "shm" }, { 2, "tcp" }, { 4, "shm" } }) {
        auto res = mn::run_cables(n, tls, relinked("tests/posix/poll_flag"));
        MN_EXPECT_RUN_OK(res, r);
        for (const char *k : { "locked_seen", "plain_seen", "spin_seen", "turns_seen" })
            EXPECT_EQ(r[k], want[k]) << k << " at " << n << " nodes over " << tls << "\n" << res.describe();
        size_t at = res.output.find(note);
        EXPECT_NE(at, std::string::npos) << res.describe();
    }
    auto quiet = mn::run_cables(2, "shm", relinked("tests/posix/poll_flag"), {}, { { "CABLES_POLL_NOTE", "0" } });
    MN_EXPECT_RUN_OK(quiet, q);
    EXPECT_EQ(q["plain_seen"], "1") << quiet.describe();
    EXPECT_EQ(quiet.output.find(note), std::string::npos) << quiet.describe();
    auto off = mn::run_cables(2, "shm", relinked("tests/posix/poll_flag"), {}, { { "CABLES_PROPAGATE", "0" } });
    MN_EXPECT_RUN_OK(off, o);
    EXPECT_EQ(o["locked_seen"], "1") << off.describe();
    EXPECT_EQ(o["plain_seen"], "0") << off.describe();
    EXPECT_EQ(o["spin_seen"], "0") << off.describe();
}

// Data published by a plain flag (bench/pthreads/flag_publish: a writer
// fills 8 pages, then sets seq; main, at the data's home, waits for seq,
// checks the data, sets ack beside seq) reads in order: a pull's acquire
// that drops the writer's copy of the seq/ack page releases all its writes
// first.  Before, most of the rounds read stale data.
static void flag_publish_in_order(int nodes, const char *where, int rounds)
{
    if (asan_heap())
        GTEST_SKIP() << "AddressSanitizer's malloc replaces the shared heap";
    for (const char *tls : { "shm", "tcp" }) {
        auto res = mn::run_cables(nodes, tls, relinked("bench/pthreads/flag_publish"),
                                  { std::to_string(rounds), where }, {}, {}, 120);
        auto r = mn::parse_result(res.output);
        ASSERT_TRUE(res.exited && res.exit_code == 0) << res.describe();
        EXPECT_EQ(r["rounds"], std::to_string(rounds)) << res.describe();
        EXPECT_EQ(r["stale_rounds"], "0") << tls << "\n" << res.describe();
    }
}

// Each node's communication thread on a CPU of its own (CABLES_BIND=none)
// lets the reader at the home run while a message's diffs land: before
// hlrc.c's shield, 10-246 of the 500 rounds read stale data in every run.
TEST(Propagation, DataPublishedByAFlagAtItsHomeIsInOrder)
{
    if (asan_heap()) // (the helper's skip returns from the helper only)
        GTEST_SKIP() << "AddressSanitizer's malloc replaces the shared heap";
    flag_publish_in_order(2, "home", 500);
    auto res = mn::run_cables(2, "shm", relinked("bench/pthreads/flag_publish"), { "500", "home" },
                              { { "CABLES_BIND", "none" } }, {}, 120);
    auto r = mn::parse_result(res.output);
    ASSERT_TRUE(res.exited && res.exit_code == 0) << res.describe();
    EXPECT_EQ(r["stale_rounds"], "0") << res.describe();
}

// The same with the reader on a third node, apart from the data's home
// (propagate.c: in order).  Before, 1-30% of the rounds read stale data:
// a release for a pull diffed the writer's pages while it wrote on (the
// flag with it, part of the data with the next), and the reader's fetch of
// the flag's page brought writes whose notices it had not acquired.
TEST(Propagation, DataPublishedByAFlagApartFromItsHomeIsInOrder)
{
    flag_publish_in_order(3, "apart", 1000);
}

// The same with the writer on the data's and the flag's home (main) and the
// reader on node 1: the writer's writes there are read in place before
// they are released, so the pull after the reader's fetch of the flag's
// page asks that home to release (propagate.c).  Before, 211-221 of 500
// rounds read stale data over shm, 79-83 over tcp.
TEST(Propagation, DataPublishedByAFlagAtItsWritersNodeIsInOrder)
{
    flag_publish_in_order(2, "writer", 500);
}

// The program's output into a pipe that closes (| head -n 1) ends it as
// it ends a process: killed by SIGPIPE, whichever node's thread printed,
// without a word from mpirun (before: status 1 and mpirun's "SIGPIPE
// detected ... aborting").
TEST(OutputClosed, EndsTheProgramBySigpipe)
{
    if (asan_heap())
        GTEST_SKIP() << "AddressSanitizer's malloc replaces the shared heap";
    const std::string tail = " flood | head -n 1; echo \"status=${PIPESTATUS[0]}\"";
    auto want = mn::run({ "bash", "-c", native("tests/posix/sigpipe") + tail });
    ASSERT_NE(want.output.find("status=141"), std::string::npos) << want.describe();
    // (the poll note, which main's sleeps may earn, would come between)
    auto res = mn::run({ "bash", "-c", mn::launcher() + " -n 2 -- " + relinked("tests/posix/sigpipe") + tail },
                       { { "CABLES_POLL_NOTE", "0" } });
    EXPECT_TRUE(res.ok()) << res.describe();
    EXPECT_NE(res.output.find("line 0\nstatus=141\n"), std::string::npos) << res.describe();
    EXPECT_EQ(res.output.find("mpirun"), std::string::npos) << res.describe();
}

// A thread's own fault ends the program as it ends a process: the master
// is not the node that faulted, yet cables-run is killed by SIGSEGV (the
// shell says "Segmentation fault"; before: exit status 139), without UCX's
// "Caught signal" backtrace (before: UCX's handler, which the program
// found installed, printed one) and with one line naming the node
// (before: mpirun's banner too).
TEST(ProgramFault, EndsTheRunAsTheProcess)
{
    if (asan_heap())
        GTEST_SKIP() << "AddressSanitizer's malloc replaces the shared heap";
    auto want = mn::run({ native("tests/posix/sigsegv"), "crash" });
    ASSERT_EQ(want.signal, SIGSEGV) << want.describe();
    for (const char *t : { "shm", "tcp" }) {
        auto res = mn::run_cables(2, t, relinked("tests/posix/sigsegv"), { "crash" });
        EXPECT_EQ(res.signal, SIGSEGV) << res.describe();
        EXPECT_EQ(res.output.find("Caught signal"), std::string::npos) << res.describe();
        EXPECT_EQ(res.output.find("RESULT"), std::string::npos) << res.describe();
        // which node, in one line, without mpirun's banner
        EXPECT_NE(res.output.find("is dead: it was killed by signal 11"), std::string::npos)
            << res.describe();
        EXPECT_EQ(res.output.find("mpirun"), std::string::npos) << res.describe();
    }
}

// A thread of another node blocked in a read of main's pipe, a flush of
// main's stream into a full one or an open of a FIFO (a call made at the
// master) is interrupted as a process's thread is: a handler
// without SA_RESTART makes it EINTR (no byte lost), one with SA_RESTART
// lets it go on, and pthread_cancel ends it (before: its join waited for
// ever).  The same checks as the native run's.
class RemoteCallInterrupt : public ::testing::TestWithParam<const char *> {};

TEST_P(RemoteCallInterrupt, AsTheCallersOwn)
{
    if (asan_heap())
        GTEST_SKIP() << "AddressSanitizer's malloc replaces the shared heap";
    auto want = native_result("tests/posix/interrupt", {});
    ASSERT_EQ(want["ok"], "1");
    auto res = mn::run_cables(2, GetParam(), relinked("tests/posix/interrupt"), {},
                              { { "CABLES_STATS", "1" } });
    MN_EXPECT_RUN_OK(res, r);
    EXPECT_EQ(r["ok"], "1") << res.describe();
    EXPECT_EQ(r["checks"], want["checks"]) << res.describe();
    EXPECT_GE(mn::node_stat(res.output, 1, "remote calls="), 4) << res.describe();
}

INSTANTIATE_TEST_SUITE_P(Shim, RemoteCallInterrupt, ::testing::Values("shm", "tcp"));

// 300 threads on node 1 block in reads of a master's pipe, then one more
// writes what they wait for: the master runs more calls at once than the
// 256 of its pool before (whose writer's call queued behind the readers':
// the run waited for ever), and says once that calls wait where it has
// no more proxies (not here: 4096).
class ManyBlocked : public ::testing::TestWithParam<const char *> {};

TEST_P(ManyBlocked, MoreCallsThanThreadsOfOldWaitAtTheMaster)
{
    auto res = mn::run_cables(2, GetParam(), mn::prog("many_blocked"), { "300" },
                              { { "CABLES_STACK_SIZE", "256K" } }, {}, 120);
    MN_EXPECT_RUN_OK(res, r);
    EXPECT_EQ(r["ok"], "1") << res.describe();
    EXPECT_EQ(r["got"], "300") << res.describe();
    EXPECT_EQ(res.output.find("the next ones wait"), std::string::npos) << res.describe();
}

INSTANTIATE_TEST_SUITE_P(Shim, ManyBlocked, ::testing::Values("shm", "tcp"));

// A child of fork on node 1 that reads shared data node 1 never held dies
// of SIGSEGV (a known limit: the child has no runtime), and says why;
// natively it reads the data and exits 0.
TEST(ForkChild, UnheldPageIsNamed)
{
    if (asan_heap())
        GTEST_SKIP() << "AddressSanitizer's malloc replaces the shared heap";
    auto nat = mn::run({ native("tests/posix/fork_unheld") }, {}, 60);
    EXPECT_NE(nat.output.find("CHILD exited=1 status=0"), std::string::npos) << nat.describe();
    auto res = mn::run_cables(2, "shm", relinked("tests/posix/fork_unheld"), {}, {}, {}, 60);
    EXPECT_TRUE(res.ok()) << res.describe();
    EXPECT_NE(res.output.find("CHILD exited=0 status=-1 signal=11"), std::string::npos)
        << res.describe();
    EXPECT_NE(res.output.find("segmentation fault in a child of fork"), std::string::npos)
        << res.describe();
}

// The process ends (main's exit, or exec) while a thread at the master
// still reads pages homed on node 1: that thread's faults after the
// runtime stopped wait for the end, which ends them.  Before, the first
// such fault ended the run with status 2 ("accessed after the node left
// the cluster"), the exit's status or the exec lost.  In exit-exec a
// thread on node 1 calls exit(5) as main execs: one of them ends the
// process, as natively.
struct EndingCase {
    const char *transport, *how;
};
std::ostream &operator<<(std::ostream &o, const EndingCase &c)
{
    return o << c.how << "_" << c.transport;
}
class Ending : public ::testing::TestWithParam<EndingCase> {};

TEST_P(Ending, OtherThreadsEndWithTheProcess)
{
    if (asan_heap())
        GTEST_SKIP() << "AddressSanitizer's malloc replaces the shared heap";
    const EndingCase c = GetParam();
    const std::string how = c.how;
    auto nat = mn::run({ native("tests/posix/ending"), how }, {}, 60);
    ASSERT_TRUE(nat.exited && !nat.timed_out) << nat.describe();
    for (int run = 0; run < 2; run++) {
        auto res = mn::run_cables(2, c.transport, relinked("tests/posix/ending"), { how }, {}, {}, 120);
        ASSERT_TRUE(res.exited && !res.timed_out) << res.describe();
        if (how == "exit-exec")
            EXPECT_TRUE(res.exit_code == 4 || res.exit_code == 5) << res.describe();
        else
            EXPECT_EQ(res.exit_code, nat.exit_code) << res.describe();
        EXPECT_EQ(res.output.find("accessed after"), std::string::npos) << res.describe();
        EXPECT_EQ(res.output.find("mpirun detected"), std::string::npos) << res.describe();
    }
}

INSTANTIATE_TEST_SUITE_P(TwoNodes, Ending,
                         ::testing::Values(EndingCase{ "shm", "exit" }, EndingCase{ "shm", "exec" },
                                           EndingCase{ "shm", "exit-exec" },
                                           EndingCase{ "tcp", "exit" }, EndingCase{ "tcp", "exec" },
                                           EndingCase{ "tcp", "exit-exec" }),
                         [](const ::testing::TestParamInfo<EndingCase> &i) {
                             std::string n = std::string(i.param.how) + "_" + i.param.transport;
                             for (char &ch : n)
                                 if (ch == '-')
                                     ch = '_';
                             return n;
                         });

// The processors a program counts (sysconf, get_nprocs) are the cluster's:
// its most nodes (-m 3) times the threads a node holds, on the master and
// on node 1 alike, so that a pool sized by them fills every node; a thread
// pinning itself to one of them gets one of its node's CPUs.
class Nprocs : public ::testing::TestWithParam<const char *> {};

TEST_P(Nprocs, ProgramCountsTheClustersProcessors)
{
    if (asan_heap()) // its pthread_create interceptor around the shim's (above)
        GTEST_SKIP() << "AddressSanitizer's pthread_create crashes on the shim's thread ids";
    auto res = mn::run_cables(2, GetParam(), mn::prog("nprocs"), {},
                              { { "CABLES_THREADS_PER_NODE", "3" } }, { "-m", "3" });
    MN_EXPECT_RUN_OK(res, r);
    EXPECT_EQ(r["ok"], "1") << res.describe();
    EXPECT_EQ(r["cluster"], "9") << res.describe();
    EXPECT_EQ(r["main"], "9,9,9,9") << res.describe();
    EXPECT_EQ(r["worker"], "9,9,9,9") << res.describe();
    EXPECT_EQ(r["worker_node"], "1") << res.describe();
    // pinned to CPUs 8 then 7 of those 9: folded onto one of node 1's
    EXPECT_EQ(r["pin"], "0,0,1") << res.describe();
}

INSTANTIATE_TEST_SUITE_P(TwoNodes, Nprocs, ::testing::Values("shm", "tcp"));

// A shared writable file mapping that the program leaves mapped at exit is
// written back to the file, as the kernel does after a process: main maps
// the file, the worker (node 1) writes into it, main joins it and returns.
class MmapAtExit : public ::testing::TestWithParam<const char *> {};

TEST_P(MmapAtExit, SharedFileMappingReachesTheFile)
{
    if (asan_heap())
        GTEST_SKIP() << "AddressSanitizer's malloc replaces the shared heap";
    char dir[] = "/tmp/cables-mmap-exit-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    const std::string file = std::string(dir) + "/f";
    auto res = mn::run_cables(2, GetParam(), relinked("tests/posix/mmaps"), { file },
                              { { "CABLES_STATS", "1" } });
    MN_EXPECT_RUN_OK(res, r);
    EXPECT_EQ(r["ok"], "1") << res.describe();
    EXPECT_GT(mn::node_stat(res.output, 1, "faults read="), 0) << res.describe();
    std::string data(8192, '\0');
    FILE *f = fopen(file.c_str(), "rb");
    ASSERT_NE(f, nullptr);
    size_t n = fread(&data[0], 1, data.size(), f);
    fclose(f);
    unlink(file.c_str());
    rmdir(dir);
    EXPECT_EQ(n, 8192u);
    EXPECT_EQ(data.substr(100, 21), "written by the worker") << res.describe();
}

INSTANTIATE_TEST_SUITE_P(TwoNodes, MmapAtExit, ::testing::Values("shm", "tcp"));

// Signal dispositions reach a node attached after they were set: main
// installs its handlers on the one launched node, then the worker of
// tests/posix/thread_ops runs on a node attached for it (one thread a
// node), where main's pthread_kill and pthread_sigqueue run them.
class AttachedSignals : public ::testing::TestWithParam<const char *> {};

TEST_P(AttachedSignals, HandlersInstalledBeforeTheAttachRunThere)
{
    if (asan_heap())
        GTEST_SKIP() << "AddressSanitizer's malloc replaces the shared heap";
    const std::string rel = "tests/posix/thread_ops";
    auto want = native_result(rel, {});
    ASSERT_EQ(want["ok"], "1");
    auto res = mn::run_cables(1, GetParam(), relinked(rel), {},
                              { { "CABLES_STATS", "1" }, { "CABLES_THREADS_PER_NODE", "1" } },
                              { "-m", "2" }, 120);
    MN_EXPECT_RUN_OK(res, r);
    EXPECT_EQ(r["ok"], "1") << res.describe();
    EXPECT_EQ(r["checks"], want["checks"]) << res.describe();
    EXPECT_GE(mn::node_stat(res.output, 0, "nodes attached="), 1) << res.describe();
}

INSTANTIATE_TEST_SUITE_P(OnDemand, AttachedSignals, ::testing::Values("shm", "tcp"));

// A block freed on one node and handed out again on another keeps its new
// owner's writes: the freeing node's diffs of its older writes reach the
// home before the block is reused (they overwrote the new owner's words
// before), whether it comes from a node's arena or is a GAS block of its
// own.  The relinked program gets both blocks back (natively glibc need
// not, which the program allows), and allocating and freeing 8 GB of big
// blocks in turn fits in a GAS of 4 GB: freed ranges are reused.
class HeapReuse : public ::testing::TestWithParam<const char *> {};

TEST_P(HeapReuse, FreedBlockKeepsItsNewOwnersWrites)
{
    if (asan_heap())
        GTEST_SKIP() << "AddressSanitizer's malloc replaces the shared heap";
    auto res = mn::run_cables(2, GetParam(), relinked("tests/posix/heap_reuse"), {},
                              { { "CABLES_GAS_SIZE", "4G" } });
    MN_EXPECT_RUN_OK(res, r);
    EXPECT_EQ(r["ok"], "1") << res.describe();
    EXPECT_NE(res.output.find("REUSED small=1 big=1"), std::string::npos) << res.describe();
}

INSTANTIATE_TEST_SUITE_P(TwoNodes, HeapReuse, ::testing::Values("shm", "tcp"),
                         [](const ::testing::TestParamInfo<const char *> &i) {
                             return std::string(i.param);
                         });

// Nodes attached on demand: with 2 threads per node and 8 threads alive at
// once (4x a node), one launched node is not enough: the run attaches
// nodes (statistics of node 0), gives the native result, and the nodes
// whose threads ended are detached in the pause between the two phases.
class Attach : public ::testing::TestWithParam<const char *> {};

// tests/posix/churn 8 2 1000 relinked, on 1 launched node growing to 5, 2
// threads a node; its RESULT checked against the native one
mn::Result churn_on_demand(const char *transport, mn::Env env)
{
    const std::string rel = "tests/posix/churn";
    const std::vector<std::string> args = { "8", "2", "1000" };
    auto want = native_result(rel, args);
    EXPECT_EQ(want["ok"], "1");
    env["CABLES_STATS"] = "1";
    env["CABLES_THREADS_PER_NODE"] = "2";
    auto res = mn::run_cables(1, transport, relinked(rel), args, env, { "-m", "5" }, 120);
    auto r = mn::parse_result(res.output);
    EXPECT_FALSE(res.timed_out) << res.describe();
    EXPECT_TRUE(res.exited && res.exit_code == 0) << res.describe();
    EXPECT_EQ(r["ok"], "1") << res.describe();
    EXPECT_EQ(r["checks"], want["checks"]) << res.describe();
    return res;
}

TEST_P(Attach, FourTimesTheThreadsOfANode)
{
    if (asan_heap())
        GTEST_SKIP() << "AddressSanitizer's malloc replaces the shared heap";
    auto res = churn_on_demand(GetParam(), {});
    // 8 threads and main at 2 a node: 4 nodes attached in each phase
    EXPECT_GE(mn::node_stat(res.output, 0, "nodes attached="), 4) << res.describe();
    EXPECT_GE(mn::node_stat(res.output, 0, "detached="), 4) << res.describe(); // phase 1's, in the pause
    // the attached nodes ran the threads: their statistics show work
    EXPECT_NE(res.output.find("node 4 stats:"), std::string::npos) << res.describe();
    // each thread's line reached the launcher, from nodes detached since too
    for (int ph = 0; ph < 2; ph++)
        for (int i = 0; i < 8; i++) {
            std::string line = "churn: phase " + std::to_string(ph) + " thread " +
                               std::to_string(i) + " sum ";
            EXPECT_NE(res.output.find(line), std::string::npos) << line << res.describe();
        }
}

// The same run with the notice logs collected every 16 notices
// (CABLES_LOG_GC): the nodes attached after a collection start their logs
// where the notices they are sent begin, and the program still gives the
// native result; the master's log ends smaller than what it made and got.
TEST_P(Attach, AfterTheLogsWereCollected)
{
    if (asan_heap())
        GTEST_SKIP() << "AddressSanitizer's malloc replaces the shared heap";
    auto res = churn_on_demand(GetParam(), { { "CABLES_LOG_GC", "16" } });
    long long n[3];
    const char *keys[3] = { "notices made=", " received=", " kept=" };
    for (int i = 0; i < 3; i++) {
        n[i] = mn::node_stat(res.output, 0, keys[i]);
        ASSERT_GE(n[i], 0) << keys[i] << " missing\n" << res.describe();
    }
    EXPECT_GT(n[0] + n[1], 0) << res.describe();
    EXPECT_LT(n[2], n[0] + n[1]) << res.describe();
}

INSTANTIATE_TEST_SUITE_P(OnDemand, Attach, ::testing::Values("shm", "tcp"));
