// Index ranges split over threads, for loops whose iterations write only their own results
// (so the results do not depend on the number of threads).
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <limits>
#include <mutex>
#include <vector>

namespace vbn::inference {

// Runs job(p) for p = 0 … parts−1 at the same time, part 0 on the calling thread and the others
// on threads the process keeps for this (started on first use: starting a thread costs more
// than many a parallel loop's work), and returns when every part has finished. job must not
// throw. Safe to call from several threads at once, and from within a part.
void run_parts(std::size_t parts, const std::function<void(std::size_t)>& job);

// `threads` where it is positive, else one per core (at least 1): what a threads option of 0
// means throughout.
int threads_or_cores(int threads);

// How many worker threads run_parts has started so far in this process.
std::size_t worker_threads();

// Starts worker threads until there are `count` (without waiting for them to run), so that a
// later run_parts finds them ready: a fit calls it first thing, and the threads start while
// the data are compiled.
void start_workers(std::size_t count);

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
    run_parts(parts, run);
    for (const auto& e : errors)
        if (e) std::rethrow_exception(e);
}

namespace detail {

// Chunks of [0, n) handed out in order to whichever part asks next, and the exception of the
// lowest chunk that threw; after a throw no further chunks are handed out. parallel_chunks and
// ChunkShare take their chunks from one.
class ChunkQueue {
public:
    ChunkQueue(std::size_t n, std::size_t chunk, std::size_t parts)
        : n_(n), chunk_(std::max<std::size_t>(chunk, 1)), chunks_((n + chunk_ - 1) / chunk_), errors_(parts),
          error_at_(parts, std::numeric_limits<std::size_t>::max()) {}
    // Runs body(begin, end, part) on chunks taken one after another until none is left or one
    // has thrown. A chunk once taken is always run: the chunks taken are those below next_.
    template <class Body>
    void take(std::size_t part, Body& body) {
        while (!failed_.load(std::memory_order_relaxed)) {
            const std::size_t c = next_++;
            if (c >= chunks_) return;
            try {
                body(c * chunk_, std::min(n_, (c + 1) * chunk_), part);
            } catch (...) {
                errors_[part] = std::current_exception();
                error_at_[part] = c;
                failed_ = true;
                return;
            }
        }
    }
    // No further chunks are handed out.
    void stop() { failed_ = true; }
    // Rethrows the exception of the lowest chunk that threw, if any: every chunk below it has
    // run, so which one it is does not depend on timing. Call once no part is taking chunks.
    void rethrow() const {
        std::size_t lowest = errors_.size();
        for (std::size_t p = 0; p < errors_.size(); ++p)
            if (errors_[p] && (lowest == errors_.size() || error_at_[p] < error_at_[lowest])) lowest = p;
        if (lowest < errors_.size()) std::rethrow_exception(errors_[lowest]);
    }

private:
    const std::size_t n_, chunk_, chunks_;
    std::atomic<std::size_t> next_{0};
    std::atomic<bool> failed_{false};
    std::vector<std::exception_ptr> errors_;
    std::vector<std::size_t> error_at_;
};

}  // namespace detail

// Runs body(begin, end, part) over [0, n) in chunks of `chunk` indices, handed out in order to
// whichever of at most `threads` threads asks next; `part` says which thread (0: the calling
// thread), and one part's calls run one after another, so a part may keep scratch space of its
// own. The calling thread first runs before() (the other threads already take chunks meanwhile)
// and then takes chunks too. Unlike fixed parts, a thread that starts late or runs slowly does not
// hold up the rest: the others take over its share. Returns when every chunk has finished; an
// exception thrown by before() is rethrown then, else that of the lowest chunk that threw (every
// chunk below one that threw has been run, so which one is rethrown does not depend on timing).
// After an exception no further chunks are handed out.
template <class Before, class Body>
void parallel_chunks(int threads, std::size_t n, std::size_t chunk, Before before, Body body) {
    chunk = std::max<std::size_t>(chunk, 1);
    const std::size_t parts = std::clamp<std::size_t>((n + chunk - 1) / chunk, 1, static_cast<std::size_t>(std::max(threads, 1)));
    detail::ChunkQueue queue(n, chunk, parts);
    std::exception_ptr before_error;
    run_parts(parts, [&](std::size_t p) {
        if (p == 0) {
            try {
                before();
            } catch (...) {
                before_error = std::current_exception();
                queue.stop();
                return;
            }
        }
        queue.take(p, body);
    });
    if (before_error) std::rethrow_exception(before_error);
    queue.rethrow();
}

// parallel_chunks with nothing to do first.
template <class Body>
void parallel_chunks(int threads, std::size_t n, std::size_t chunk, Body body) {
    parallel_chunks(threads, n, chunk, [] {}, body);
}

// Chunked work that one thread (the owner) runs and one other thread may join once it has
// nothing else to do: the owner calls run() as often as it likes, and join(), on the other
// thread, takes chunks of each run() in progress until close(). Used where a part of a
// run_parts call has parallel work of its own while the other parts are still busy: handing
// that work to yet another thread would only make the processors' threads share them.
class ChunkShare {
public:
    // body(begin, end, slot) over [0, n) in chunks of `chunk`: slot 0 on this thread, slot 1 on
    // a thread inside join(). Returns when every chunk has run; the exception of the lowest
    // chunk that threw is rethrown then (no further chunks are handed out after a throw).
    template <class Body>
    void run(std::size_t n, std::size_t chunk, Body body) {
        detail::ChunkQueue queue(n, chunk, 2);
        const std::function<void(std::size_t)> take = [&](std::size_t slot) { queue.take(slot, body); };
        offer(&take);
        take(0);
        withdraw();
        queue.rethrow();
    }
    // On the other thread: takes chunks of every run() until close().
    void join();
    // No more run(): join() returns.
    void close();

private:
    void offer(const std::function<void(std::size_t)>* job);
    void withdraw();  // waits until a joined thread is out of the job

    std::mutex mutex_;
    std::condition_variable changed_;
    const std::function<void(std::size_t)>* job_ = nullptr;
    std::size_t offered_ = 0;  // jobs offered so far: join() enters each at most once
    bool inside_ = false;      // the joined thread is running job_
    bool closed_ = false;
};

}  // namespace vbn::inference
