// Harness of the multi-node tests: runs programs (directly or through
// cables-run) with a deadline, captures stdout+stderr, and parses the
// "RESULT key=value ..." line that every test program prints.
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace mn {

using Env = std::map<std::string, std::string>;

struct Result {
    bool started = false;
    bool exited = false;   // exited normally (then exit_code is valid)
    int exit_code = -1;
    int signal = 0;        // killed by this signal
    bool timed_out = false;
    double seconds = 0;    // from start to exit
    double end_time = 0;   // seconds_now() when the command was reaped
    std::string command;
    std::string output;    // stdout and stderr, interleaved
    bool ok() const { return exited && exit_code == 0 && !timed_out; }
    std::string describe() const; // status + output, for failure messages
};

// A running command in its own session (setsid): cables-run -> mpirun ->
// node processes, which Open MPI puts in process groups of their own, all
// stay in that session, so the whole tree can be found and killed.
class Proc {
  public:
    Proc() = default;
    Proc(const Proc &) = delete;
    Proc &operator=(const Proc &) = delete;
    ~Proc();
    // env: settings for the child; every other CABLES_* variable is removed.
    bool start(const std::vector<std::string> &argv, const Env &env = {});
    // The same, as the foreground job of an interactive shell: on a
    // terminal of its own (a pty, without echo, lines ending in "\n"), in a
    // process group of its own, reaped by the harness's stand-in for the
    // shell, which ends with the job's status (128 + N: killed by signal N).
    bool start_on_terminal(const std::vector<std::string> &argv, const Env &env = {});
    // Types s on that terminal ("\x1a": Ctrl-Z).
    bool type(const std::string &s);
    // As the shell's fg after Ctrl-Z: SIGCONT to the terminal's foreground group.
    bool resume();
    // Reads output until pred(output) holds (true), the command exits or
    // timeout_s passes (false).
    bool wait_for(const std::function<bool(const std::string &)> &pred, double timeout_s);
    // Waits for the exit, reading output; false (and nothing killed) on timeout.
    bool wait_exit(double timeout_s);
    // SIGKILL every process of the session, then reap the command.
    void kill_all();
    pid_t pid() const { return pid_; }
    const std::string &output() const { return res_.output; }
    Result result() const { return res_; }

  private:
    bool launch(const std::vector<std::string> &argv, const Env &env, bool terminal);
    void pump(int timeout_ms);
    void check_exit();
    void record(int wait_status); // the exit status, then finish()
    void finish();
    pid_t pid_ = -1;
    int fd_ = -1;
    double t0_ = 0;
    Result res_;
};

// True if process p belongs to the session of leader sid (a Proc's pid()).
bool in_session(pid_t p, pid_t sid);
// The processes of session sid (the leader too, while it is not reaped).
std::vector<pid_t> session_pids(pid_t sid);
// The directory of cables-run's files for the run in session sid (from
// CABLES_RUN_INFO in its processes' environment), or "".
std::string run_files(pid_t sid);

// What the kernel says of the signals of session sid's processes and
// threads (pending, blocked, caught), and which ones cables-run gave on:
// for a failure message about a signal that did not arrive.
std::string signal_state(pid_t sid);

// Runs argv, killing the whole process tree after timeout_s.
Result run(const std::vector<std::string> &argv, const Env &env = {}, double timeout_s = 60);

std::string build_dir();               // $CABLES_BUILD or the test binary's ../
std::string prog(const std::string &name); // build/progs/NAME
std::string launcher();                // build/bin/cables-run

// The cables-run command line: -n nodes -t transport [extra...] -- prog args
std::vector<std::string> cables_cmd(int nodes, const std::string &transport,
                                    const std::string &program,
                                    const std::vector<std::string> &args = {},
                                    const std::vector<std::string> &extra = {});
Result run_cables(int nodes, const std::string &transport, const std::string &program,
                  const std::vector<std::string> &args = {}, const Env &env = {},
                  const std::vector<std::string> &extra = {}, double timeout_s = 60);

// The key=value pairs of the last line starting with "RESULT "; empty if none.
std::map<std::string, std::string> parse_result(const std::string &output);
long long get_ll(const std::map<std::string, std::string> &r, const std::string &key,
                 long long fallback = -999999999);
// The number after key on node's "cables: node N stats:" line (CABLES_STATS=1),
// or -1 if the line or the key is missing.
long long node_stat(const std::string &output, int node, const std::string &key);
double seconds_now();

// Parameters of the Grid tests: 1 node; 2 nodes over shm and tcp; 4 nodes
// over shm, and over tcp too in the wide run (CABLES_TEST_WIDE=1, make
// test-wide), which CI adds: 4 nodes over tcp on 2 cores took a fifth of
// the default run's time (the tests/posix programs over tcp are the wide
// run's too).
struct Cfg {
    int nodes;
    const char *transport;
};
inline std::ostream &operator<<(std::ostream &o, const Cfg &c)
{
    return o << c.nodes << "nodes_" << c.transport;
}
std::vector<Cfg> all_cfgs();
bool wide_run();
std::string cfg_name(const ::testing::TestParamInfo<Cfg> &info);

} // namespace mn

// Asserts a run exited 0 and printed a RESULT line; sets `r` to its fields.
#define MN_EXPECT_RUN_OK(res, r)                                                  \
    ASSERT_FALSE((res).timed_out) << "timed out\n" << (res).describe();           \
    auto r = mn::parse_result((res).output);                                     \
    ASSERT_FALSE(r.empty()) << "no RESULT line\n" << (res).describe();            \
    EXPECT_TRUE((res).exited && (res).exit_code == 0) << (res).describe();         \
    EXPECT_EQ((res).output.find("dead or unreachable"), std::string::npos)       \
        << "a clean run reported a dead node\n" << (res).describe();
