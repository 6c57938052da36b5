#include "inference/parallel.hpp"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <pthread.h>
#include <sched.h>
#endif

namespace vbn::inference {
namespace {

// Threads kept for the life of the process: each waits for a part of some run_parts call,
// runs it, and waits again. There is always a thread free for every part handed out (more are
// started when there are not), so a part never waits behind another call's, and a part that
// itself calls run_parts cannot deadlock.
class Workers {
public:
    Workers() = default;
    Workers(const Workers&) = delete;
    Workers& operator=(const Workers&) = delete;

    ~Workers() {
        {
            const std::lock_guard lock(mutex_);
            stop_ = true;
        }
        wake_.notify_all();
        for (std::thread& t : threads_) t.join();
    }

    std::size_t started() {
        const std::lock_guard lock(mutex_);
        return threads_.size();
    }

    void start(std::size_t count) {
        const std::lock_guard lock(mutex_);
        while (threads_.size() < count)
            if (!add_thread()) return;  // run() starts them when it can, or runs the parts itself
    }

    void run(std::size_t parts, const std::function<void(std::size_t)>& job) {
        Batch batch;
        batch.job = &job;
        std::size_t handed = 1;  // parts 1 … handed−1 go to the workers
        {
            const std::lock_guard lock(mutex_);
            for (; handed < parts; ++handed) {
                // No thread can be started (resource limits): the caller runs the rest.
                if (free_ <= queue_.size() && !add_thread()) break;
                queue_.push_back({&batch, handed});
            }
            batch.remaining = handed - 1;
            if (handed > 1) keep_off_this_cpu();
        }
        wake_.notify_all();
        job(0);
        for (std::size_t p = handed; p < parts; ++p) job(p);
        std::unique_lock lock(batch.mutex);
        batch.done.wait(lock, [&] { return batch.remaining == 0; });
    }

private:
    // Starts one more waiting thread; false where none can be started. Called with mutex_ held.
    bool add_thread() {
        try {
            threads_.emplace_back([this] { loop(); });
        } catch (const std::system_error&) {
            return false;
        }
        ++free_;
        last_cpu_ = -1;  // the new thread may run anywhere
        return true;
    }

    // Restricts the workers to the processors the caller may use other than the one it runs
    // on, so that a woken worker does not land on the caller's processor and wait for it (or
    // push it off) while another processor idles: a scheduler that packs threads onto few
    // processors did that for milliseconds at a time. Called with mutex_ held; skipped where
    // the caller may use one processor only. Linux only.
    void keep_off_this_cpu() {
#if defined(__linux__)
        const int cpu = sched_getcpu();
        if (cpu < 0 || cpu == last_cpu_) return;
        cpu_set_t mask;
        if (sched_getaffinity(0, sizeof mask, &mask) != 0 || !CPU_ISSET(cpu, &mask) || CPU_COUNT(&mask) < 2) return;
        CPU_CLR(cpu, &mask);
        for (std::thread& t : threads_)
            if (t.get_id() != std::this_thread::get_id()) pthread_setaffinity_np(t.native_handle(), sizeof mask, &mask);
        last_cpu_ = cpu;
#endif
    }

    struct Batch {
        const std::function<void(std::size_t)>* job = nullptr;
        std::size_t remaining = 0;
        std::mutex mutex;
        std::condition_variable done;
    };
    struct Task {
        Batch* batch;
        std::size_t part;
    };

    void loop() {
        std::unique_lock lock(mutex_);
        for (;;) {
            wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
            if (queue_.empty()) return;  // stopping, nothing left
            const Task task = queue_.front();
            queue_.pop_front();
            --free_;
            lock.unlock();
            (*task.batch->job)(task.part);
            // Free again before the caller can learn that its parts are done: a caller that
            // at once hands out more parts then counts this thread rather than starting one.
            lock.lock();
            ++free_;
            lock.unlock();
            {
                // The caller may return (and its batch go) as soon as it sees 0, which it can
                // only do once this lock is released: nothing touches the batch after that.
                const std::lock_guard done(task.batch->mutex);
                if (--task.batch->remaining == 0) task.batch->done.notify_all();
            }
            lock.lock();
        }
    }

    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<Task> queue_;
    std::vector<std::thread> threads_;
    std::size_t free_ = 0;  // threads not running a part (waiting or about to)
    int last_cpu_ = -1;     // the processor keep_off_this_cpu last kept the workers off
    bool stop_ = false;
};

Workers& workers() {
    static Workers kept;
    return kept;
}

}  // namespace

void run_parts(std::size_t parts, const std::function<void(std::size_t)>& job) {
    if (parts == 0) return;
    if (parts == 1) {
        job(0);
        return;
    }
    workers().run(parts, job);
}

std::size_t worker_threads() { return workers().started(); }

int threads_or_cores(int threads) {
    return threads > 0 ? threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

void ChunkShare::offer(const std::function<void(std::size_t)>* job) {
    {
        const std::lock_guard lock(mutex_);
        job_ = job;
        ++offered_;
    }
    changed_.notify_all();
}

void ChunkShare::withdraw() {
    std::unique_lock lock(mutex_);
    job_ = nullptr;
    changed_.wait(lock, [&] { return !inside_; });
}

void ChunkShare::join() {
    std::unique_lock lock(mutex_);
    std::size_t served = offered_;  // a job offered before joining is still open if job_ is set
    if (job_) --served;
    for (;;) {
        changed_.wait(lock, [&] { return closed_ || (job_ && offered_ != served); });
        if (closed_) return;
        const auto* job = job_;
        served = offered_;
        inside_ = true;
        lock.unlock();
        (*job)(1);
        lock.lock();
        inside_ = false;
        changed_.notify_all();
    }
}

void ChunkShare::close() {
    {
        const std::lock_guard lock(mutex_);
        closed_ = true;
    }
    changed_.notify_all();
}

void start_workers(std::size_t count) { workers().start(count); }

}  // namespace vbn::inference
