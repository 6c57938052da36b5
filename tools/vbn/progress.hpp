// Progress of running chains on stderr (`vbn fit` without --quiet): per chain, the phase
// (warmup or sampling) and the iteration. On a terminal one line is rewritten in place;
// otherwise (a log file, a pipe) each chain gets a line at most every `line_interval`
// seconds, plus one when each phase ends. The chain runner already limits how often it
// reports (ChainCallbacks::progress_interval, by time).
#pragma once

#include "inference/chains.hpp"

#include <chrono>
#include <mutex>
#include <ostream>
#include <string>
#include <vector>

namespace vbn {

class ProgressDisplay {
public:
    // `width`: on a terminal, the line is cut to width - 1 characters so that it never wraps
    // (0: no limit).
    ProgressDisplay(std::ostream& out, int chains, bool terminal, double line_interval = 2.0, int width = 0);
    ProgressDisplay(const ProgressDisplay&) = delete;
    ProgressDisplay& operator=(const ProgressDisplay&) = delete;

    // Safe to call from several threads at once.
    void update(const inference::ChainProgress& p);
    // The same at a given time in seconds since construction (for tests).
    void update(const inference::ChainProgress& p, double now);
    // On a terminal, ends the line being rewritten; later output starts on a fresh line.
    void finish();

    // Whether standard error is a terminal, and its width in columns (80 if unknown).
    static bool stderr_is_terminal();
    static int stderr_width();

private:
    struct ChainState {
        bool seen = false;
        inference::ChainProgress last;
        double printed_at = -1e300;
    };
    static std::string describe(const inference::ChainProgress& p);

    std::ostream& out_;
    bool terminal_;
    double line_interval_;
    int width_;
    std::vector<ChainState> chains_;
    std::chrono::steady_clock::time_point start_;
    bool line_open_ = false;
    std::mutex mutex_;
};

}  // namespace vbn
