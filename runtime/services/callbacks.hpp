// What every job of the services layer reports back while it runs, and how it is stopped:
// messages, progress, draws and interruption (docs/design.md §1, "Services"). The command
// line prints them; the embedding API forwards them to a host's hooks. A job never writes to
// a stream itself.
#pragma once

#include "inference/chains.hpp"

#include <Eigen/Core>

#include <atomic>
#include <functional>
#include <string>

namespace vbn::services {

enum class LogLevel { note, warning };

struct Callbacks {
    // Things the user should know that are not errors ("method auto chose ...", "chain 3
    // failed ..."), from the thread that called the job.
    std::function<void(LogLevel level, const std::string& message)> log;
    // Where each chain is: at most once per progress_interval seconds per chain, plus when a
    // phase ends; calls are serialised.
    std::function<void(const inference::ChainProgress&)> progress;
    double progress_interval = 0.5;
    // Every kept draw as soon as it is made, in output order (output_order(graph)): calls for
    // one chain are in order; different chains may call concurrently.
    std::function<void(int chain, int draw, const Eigen::VectorXd& values, double lp, const inference::TransitionInfo& info)>
        on_draw;
    // Set by another thread (or a signal handler: the flag is lock-free) to stop: variational
    // EM stops between iterations, every chain after its current iteration.
    const std::atomic<bool>* interrupt = nullptr;

    void note(const std::string& message) const {
        if (log) log(LogLevel::note, message);
    }
    void warning(const std::string& message) const {
        if (log) log(LogLevel::warning, message);
    }
    bool interrupted() const { return interrupt != nullptr && interrupt->load(std::memory_order_relaxed); }
};

}  // namespace vbn::services
