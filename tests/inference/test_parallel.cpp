// parallel_chunks: every index once, one part's calls in turn, the lowest failing chunk's
// exception whatever the timing, and before() on the calling thread ahead of its chunks.
// run_parts (the kept worker threads under both): every part once and all at the same time,
// part 0 on the caller, from several threads at once and from within a part.
#include "inference/parallel.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <sched.h>
#endif

using vbn::inference::parallel_chunks;
using vbn::inference::run_parts;

TEST_CASE("parallel_chunks covers every index once, in chunks of the given size") {
    for (int threads : {1, 2, 3, 8}) {
        for (std::size_t n : {0u, 1u, 7u, 100u, 101u}) {
            std::vector<std::atomic<int>> seen(n);
            std::vector<std::atomic<int>> busy(static_cast<std::size_t>(threads));
            std::atomic<bool> overlap{false}, bad_part{false}, bad_chunk{false};
            parallel_chunks(threads, n, 10, [&](std::size_t begin, std::size_t end, std::size_t part) {
                if (part >= static_cast<std::size_t>(threads)) {
                    bad_part = true;
                    return;
                }
                if (busy[part]++ != 0) overlap = true;  // one part's calls never overlap
                if (begin % 10 != 0 || end > n || end - begin > 10 || (end - begin < 10 && end != n)) bad_chunk = true;
                for (std::size_t i = begin; i < end; ++i) ++seen[i];
                --busy[part];
            });
            CHECK_FALSE(overlap.load());
            CHECK_FALSE(bad_part.load());
            CHECK_FALSE(bad_chunk.load());
            for (std::size_t i = 0; i < n; ++i) CHECK(seen[i].load() == 1);
        }
    }
}

TEST_CASE("parallel_chunks runs before() on the calling thread while the others take chunks") {
    const std::thread::id caller = std::this_thread::get_id();
    std::atomic<long> ready{0};
    std::vector<double> values(200, 0.0), doubled(200, 0.0);
    bool before_on_caller = false;
    parallel_chunks(
        2, values.size(), 20,
        [&] {
            before_on_caller = std::this_thread::get_id() == caller;
            for (std::size_t i = 0; i < values.size(); ++i) {
                values[i] = static_cast<double>(i);
                ready.store(static_cast<long>(i + 1), std::memory_order_release);
            }
        },
        [&](std::size_t begin, std::size_t end, std::size_t) {
            while (ready.load(std::memory_order_acquire) < static_cast<long>(end)) std::this_thread::yield();
            for (std::size_t i = begin; i < end; ++i) doubled[i] = 2 * values[i];
        });
    CHECK(before_on_caller);
    for (std::size_t i = 0; i < doubled.size(); ++i) CHECK(doubled[i] == 2.0 * static_cast<double>(i));
}

TEST_CASE("parallel_chunks rethrows the exception of the lowest chunk that threw") {
    for (int rep = 0; rep < 20; ++rep) {
        for (int threads : {1, 2, 4}) {
            std::string what;
            try {
                parallel_chunks(threads, 100, 5, [&](std::size_t begin, std::size_t, std::size_t) {
                    if (begin == 35 || begin == 60 || begin == 95) throw std::runtime_error(std::to_string(begin));
                });
            } catch (const std::runtime_error& e) {
                what = e.what();
            }
            CHECK(what == "35");
        }
    }
}

TEST_CASE("parallel_chunks rethrows before()'s exception and runs no chunk on the calling thread") {
    const std::thread::id caller = std::this_thread::get_id();
    std::atomic<bool> caller_ran{false};
    CHECK_THROWS_AS(parallel_chunks(
                        2, 50, 5, [] { throw std::logic_error("before"); },
                        [&](std::size_t, std::size_t, std::size_t) {
                            if (std::this_thread::get_id() == caller) caller_ran = true;
                        }),
                    std::logic_error);
    CHECK_FALSE(caller_ran.load());
}

// Every part waits until all have started (for 30 s at most: parts run one after another would
// wait forever, and then count 0 here), so runs[p] is 1 only if the parts ran at the same time.
void all_at_once(std::size_t parts, std::vector<int>& runs, bool& zero_on_caller) {
    const std::thread::id caller = std::this_thread::get_id();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    std::atomic<bool> timed_out{false};
    std::atomic<std::size_t> started{0};
    std::vector<std::atomic<int>> count(parts);
    std::atomic<bool> on_caller{false};
    run_parts(parts, [&](std::size_t p) {
        ++count[p];
        if (p == 0) on_caller = std::this_thread::get_id() == caller;
        ++started;
        while (started.load() < parts) {
            if (std::chrono::steady_clock::now() > deadline) {
                timed_out = true;
                break;
            }
            std::this_thread::yield();
        }
    });
    runs.clear();
    for (const auto& c : count) runs.push_back(timed_out ? 0 : c.load());
    zero_on_caller = on_caller.load();
}

TEST_CASE("run_parts runs every part once, all at the same time, part 0 on the caller") {
    for (std::size_t parts : {1u, 2u, 3u, 7u}) {
        for (int rep = 0; rep < 3; ++rep) {  // the second and third reuse the threads
            std::vector<int> runs;
            bool zero_on_caller = false;
            all_at_once(parts, runs, zero_on_caller);
            CHECK(runs == std::vector<int>(parts, 1));
            CHECK(zero_on_caller);
        }
    }
    run_parts(0, [](std::size_t) { FAIL("a part of none ran"); });
}

TEST_CASE("run_parts keeps its threads: calls one after another start none") {
    run_parts(2, [](std::size_t) {});
    const std::size_t kept = vbn::inference::worker_threads();
    CHECK(kept >= 1);
    for (int rep = 0; rep < 200; ++rep) {
        std::vector<int> runs;
        bool zero_on_caller = false;
        all_at_once(2, runs, zero_on_caller);
        REQUIRE(runs == std::vector<int>{1, 1});
    }
    CHECK(vbn::inference::worker_threads() == kept);
}

TEST_CASE("start_workers starts threads that run_parts then uses without starting more") {
    vbn::inference::start_workers(3);
    const std::size_t kept = vbn::inference::worker_threads();
    CHECK(kept >= 3);
    std::vector<int> runs;
    bool zero_on_caller = false;
    all_at_once(4, runs, zero_on_caller);
    CHECK(runs == std::vector<int>(4, 1));
    CHECK(vbn::inference::worker_threads() == kept);
}

#if defined(__linux__)
TEST_CASE("run_parts keeps its workers off the caller's processor where it may use several") {
    cpu_set_t caller;
    REQUIRE(sched_getaffinity(0, sizeof caller, &caller) == 0);
    int worker_count = -1;
    run_parts(2, [&](std::size_t p) {
        cpu_set_t mine;
        if (p == 1 && sched_getaffinity(0, sizeof mine, &mine) == 0) worker_count = CPU_COUNT(&mine);
    });
    if (CPU_COUNT(&caller) >= 2)
        CHECK(worker_count == CPU_COUNT(&caller) - 1);
    else
        CHECK(worker_count == CPU_COUNT(&caller));
}
#endif

TEST_CASE("run_parts from several threads at once, and from within a part") {
    std::atomic<int> bad{0};
    std::vector<std::thread> callers;
    for (int t = 0; t < 4; ++t)
        callers.emplace_back([&] {
            for (int rep = 0; rep < 20; ++rep) {
                std::vector<int> runs;
                bool zero_on_caller = false;
                all_at_once(3, runs, zero_on_caller);
                if (runs != std::vector<int>(3, 1) || !zero_on_caller) ++bad;
            }
        });
    for (auto& c : callers) c.join();
    CHECK(bad.load() == 0);

    // Nested: each of 3 parts runs 3 parts of its own, all of which must be running together.
    std::atomic<int> inner_bad{0};
    run_parts(3, [&](std::size_t) {
        std::vector<int> runs;
        bool zero_on_caller = false;
        all_at_once(3, runs, zero_on_caller);
        if (runs != std::vector<int>(3, 1) || !zero_on_caller) ++inner_bad;
    });
    CHECK(inner_bad.load() == 0);
}

TEST_CASE("ChunkShare: every index of every run once, in slot 0 on the owner and slot 1 on the joined thread") {
    using vbn::inference::ChunkShare;
    for (int joined_late : {0, 1}) {
        CAPTURE(joined_late);
        ChunkShare share;
        const std::thread::id owner_id = std::this_thread::get_id();
        std::atomic<bool> helper_started{false};
        std::thread::id helper_id;
        std::thread helper([&] {
            helper_id = std::this_thread::get_id();
            if (joined_late) std::this_thread::sleep_for(std::chrono::milliseconds(5));
            helper_started = true;
            share.join();
        });
        std::atomic<int> wrong_thread{0}, overlap{0};
        std::atomic<long> by_helper{0};
        std::vector<std::atomic<int>> busy(2);
        for (int run = 0; run < 30; ++run) {
            const std::size_t n = 40 + static_cast<std::size_t>(run) * 7;
            std::vector<std::atomic<int>> seen(n);
            share.run(n, 3, [&](std::size_t begin, std::size_t end, std::size_t slot) {
                if (slot > 1 || (slot == 0) != (std::this_thread::get_id() == owner_id)) ++wrong_thread;
                if (slot > 1) return;
                if (busy[slot]++ != 0) ++overlap;
                if (slot == 1) by_helper += static_cast<long>(end - begin);
                for (std::size_t i = begin; i < end; ++i) ++seen[i];
                // The owner's first chunk waits (10 s at most) for the joined thread to take one.
                if (run == 0 && begin == 0) {
                    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
                    while (by_helper.load() == 0 && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
                }
                std::this_thread::sleep_for(std::chrono::microseconds(5));
                --busy[slot];
            });
            for (std::size_t i = 0; i < n; ++i) CHECK(seen[i].load() == 1);
        }
        share.close();
        helper.join();
        CHECK(helper_started.load());
        CHECK(wrong_thread.load() == 0);
        CHECK(overlap.load() == 0);
        CHECK(by_helper.load() > 0);
    }
}

TEST_CASE("ChunkShare: run() without a joined thread, join() after close(), and exceptions rethrown by run()") {
    using vbn::inference::ChunkShare;
    ChunkShare alone;
    std::vector<int> seen(50, 0);
    alone.run(50, 8, [&](std::size_t begin, std::size_t end, std::size_t slot) {
        CHECK(slot == 0);
        for (std::size_t i = begin; i < end; ++i) ++seen[i];
    });
    CHECK(seen == std::vector<int>(50, 1));
    alone.close();
    alone.join();  // returns at once

    ChunkShare share;
    std::thread helper([&] { share.join(); });
    for (int rep = 0; rep < 20; ++rep) {
        const auto throw_in = static_cast<std::size_t>(rep % 2);  // the owner's slot or the helper's
        std::atomic<int> started{0};
        std::string what;
        try {
            share.run(400, 1, [&](std::size_t begin, std::size_t, std::size_t slot) {
                ++started;
                std::this_thread::sleep_for(std::chrono::microseconds(10));
                // The slot named throws from chunk 100 on; chunk 300 on, either does.
                if (begin >= 100 && (slot == throw_in || begin >= 300)) throw std::runtime_error("chunk " + std::to_string(begin));
            });
        } catch (const std::runtime_error& e) {
            what = e.what();
        }
        CHECK(what.rfind("chunk ", 0) == 0);
        // Handing out stops at the first throw: not every chunk ran.
        CHECK(started.load() < 400);
    }
    share.close();
    helper.join();
}
