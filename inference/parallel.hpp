// Index ranges split over threads, for loops whose iterations write only their own results
// (so the results do not depend on the number of threads).
#pragma once

#include <algorithm>
#include <cstddef>
#include <exception>
#include <thread>
#include <vector>

namespace vbn::inference {

// Runs body(begin, end, part) over [0, n) split into at most `threads` contiguous parts, part
// 0 on the calling thread, and returns when every part has finished. An exception thrown by a
// part is rethrown then (the lowest part's, when several throw).
template <class Body>
void parallel_ranges(int threads, std::size_t n, Body body) {
    const auto parts = static_cast<std::size_t>(std::max(1, std::min<int>(threads, static_cast<int>(std::max<std::size_t>(n, 1)))));
    std::vector<std::exception_ptr> errors(parts);
    auto run = [&](std::size_t p) {
        try {
            body(n * p / parts, n * (p + 1) / parts, p);
        } catch (...) {
            errors[p] = std::current_exception();
        }
    };
    std::vector<std::thread> pool;
    for (std::size_t p = 1; p < parts; ++p) pool.emplace_back(run, p);
    run(0);
    for (std::thread& t : pool) t.join();
    for (const auto& e : errors)
        if (e) std::rethrow_exception(e);
}

}  // namespace vbn::inference
