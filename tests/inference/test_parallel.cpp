// parallel_chunks: every index once, one part's calls in turn, the lowest failing chunk's
// exception whatever the timing, and before() on the calling thread ahead of its chunks.
#include "inference/parallel.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using vbn::inference::parallel_chunks;

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
