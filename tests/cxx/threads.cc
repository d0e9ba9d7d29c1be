// threads: a C++ program, compiled with c++ and only relinked with
// cables-cc: std::thread, std::mutex, std::condition_variable, std::async,
// exceptions thrown and caught on any node, thread_local objects, and a
// global std::map whose destructor runs at exit (after main) and reads the
// nodes the threads allocated (on 2 nodes, homed on node 1).  The RESULT
// line must equal the native one; the destructor's line follows it; each
// thread prints a line with std::cout.  (Before, at 2 nodes, that
// destructor ran after the runtime had stopped and the run ended with
// status 2, and a thread on node 1 died at its first use of std::cout,
// which only the master's constructors had made.)
#include <condition_variable>
#include <cstdio>
#include <future>
#include <iostream>
#include <map>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr int kThreads = 4;

std::mutex mu;
std::condition_variable all_in;
int arrived = 0;
long total = 0;
int caught = 0;

// its destructor runs at exit and reads every entry the threads made
struct Registry {
    std::map<int, std::string> names;
    ~Registry()
    {
        std::size_t chars = 0;
        for (const auto &kv : names)
            chars += kv.second.size();
        std::printf("EXIT registry entries=%zu chars=%zu\n", names.size(), chars);
    }
} registry;

thread_local std::vector<int> scratch(1000, 1);

void work(int i)
{
    std::vector<long> v(100000);
    std::iota(v.begin(), v.end(), (long)i);
    long s = std::accumulate(v.begin(), v.end(), 0L) + (long)scratch.size();
    bool threw = false;
    try {
        if (i % 2)
            throw std::runtime_error("odd thread " + std::to_string(i));
    } catch (const std::runtime_error &e) {
        threw = std::string(e.what()).find("odd thread") == 0;
    }
    std::cout << ("cout from thread " + std::to_string(i) + "\n") << std::flush;
    std::unique_lock<std::mutex> l(mu);
    total += s;
    caught += threw;
    for (int k = 0; k < 100; k++)
        registry.names[i * 1000 + k] = "thread-" + std::to_string(i) + "-entry-" + std::to_string(k);
    arrived++;
    all_in.notify_all();
    all_in.wait(l, [] { return arrived == kThreads; }); // each waits for all
}

} // namespace

int main()
{
    std::vector<std::thread> ts;
    for (int i = 0; i < kThreads; i++)
        ts.emplace_back(work, i);
    for (auto &t : ts)
        t.join();
    auto answer = std::async(std::launch::async, [] { return (int)registry.names.size(); });
    int entries = answer.get();
    bool ok = entries == kThreads * 100 && caught == kThreads / 2;
    std::printf("RESULT ok=%d total=%ld caught=%d entries=%d\n", ok ? 1 : 0, total, caught, entries);
    return ok ? 0 : 1;
}
