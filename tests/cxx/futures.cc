// futures: std::promise, std::future, std::async and std::packaged_task
// across nodes, in a C++ program compiled with c++ and only relinked.
// libstdc++ waits for a result with syscall(SYS_futex) on a word of the
// shared state, which the setter changes and wakes on its own node: before
// pthread_shim/src/futex.c, main waited for ever for a value set on node 1.
// RESULT ok=1 sum=N tasks=N
#include <chrono>
#include <cstdio>
#include <future>
#include <thread>
#include <vector>

int main()
{
    constexpr int kThreads = 4;
    std::vector<std::promise<long>> promises(kThreads);
    std::vector<std::future<long>> futures;
    for (auto &p : promises)
        futures.push_back(p.get_future());
    std::vector<std::thread> ts;
    for (int i = 0; i < kThreads; i++)
        ts.emplace_back([&promises, i] {
            // main is waiting by then
            std::this_thread::sleep_for(std::chrono::milliseconds(50 + 20 * i));
            promises[i].set_value(1000L * (i + 1));
        });
    long sum = 0;
    for (auto &f : futures)
        sum += f.get();
    for (auto &t : ts)
        t.join();
    // results of tasks run by threads of their own
    std::vector<std::future<int>> asyncs;
    for (int i = 0; i < kThreads; i++)
        asyncs.push_back(std::async(std::launch::async, [i] {
            std::this_thread::sleep_for(std::chrono::milliseconds(30));
            return i * i;
        }));
    int tasks = 0;
    for (auto &a : asyncs)
        tasks += a.get();
    std::packaged_task<int(int)> task([](int x) { return x + 1; });
    auto tf = task.get_future();
    std::thread tt(std::move(task), 41);
    // a bounded wait first: wait_for's timed futex wait
    bool ready_in_time = tf.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
    int answer = tf.get();
    tt.join();
    bool ok = sum == 10000 && tasks == 14 && answer == 42 && ready_in_time;
    std::printf("RESULT ok=%d sum=%ld tasks=%d answer=%d\n", ok ? 1 : 0, sum, tasks, answer);
    return ok ? 0 : 1;
}
