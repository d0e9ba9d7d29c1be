// waits: C++20's std::latch, std::barrier, std::counting_semaphore and
// std::atomic wait/notify across nodes, in a C++ program compiled with
// cables-cc: its atomics are calls of the runtime (libcables/link/
// atomics.c), and libstdc++'s futex waits on their words are made across
// nodes (pthread_shim/src/futex.c).  Compiled by c++ and only relinked, the
// counters' locked instructions are atomic on one node only and the run
// does not end.
// RESULT ok=1 phases=N taken=N seen=N spun=N
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <latch>
#include <semaphore>
#include <thread>
#include <vector>

namespace {
constexpr int kThreads = 4;
constexpr int kPhases = 5;
std::latch started(kThreads);
std::barrier<> phase(kThreads);
std::counting_semaphore<kThreads> slots(2);
std::atomic<int> in_slots{0}, most_in_slots{0}, taken{0}, flag{0};
int phases_done[kThreads];
std::atomic_flag spin = ATOMIC_FLAG_INIT; // a spin lock around a plain counter
long under_spin;
constexpr int kSpins = 50;
} // namespace

int main()
{
    std::vector<std::thread> ts;
    for (int i = 0; i < kThreads; i++)
        ts.emplace_back([i] {
            started.count_down();
            started.wait();
            for (int p = 0; p < kPhases; p++) {
                slots.acquire(); // at most 2 threads inside at once
                int now = ++in_slots;
                int most = most_in_slots.load();
                while (now > most && !most_in_slots.compare_exchange_weak(most, now)) {
                }
                std::this_thread::sleep_for(std::chrono::milliseconds(2));
                --in_slots;
                ++taken;
                slots.release();
                phase.arrive_and_wait();
                for (int k = 0; k < kSpins; k++) {
                    while (spin.test_and_set(std::memory_order_acquire))
                        std::this_thread::yield();
                    under_spin++;
                    spin.clear(std::memory_order_release);
                }
                phases_done[i]++;
            }
        });
    for (auto &t : ts)
        t.join();
    std::thread waiter([] { flag.wait(0); });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    flag.store(7);
    flag.notify_all();
    waiter.join();
    int phases = 0;
    for (int n : phases_done)
        phases += n;
    bool ok = phases == kThreads * kPhases && taken == kThreads * kPhases && most_in_slots <= 2 &&
              flag == 7 && under_spin == (long)kThreads * kPhases * kSpins;
    std::printf("RESULT ok=%d phases=%d taken=%d seen=%d spun=%ld\n", ok ? 1 : 0, phases,
                taken.load(), flag.load(), under_spin);
    return ok ? 0 : 1;
}
