// Progress of running chains on stderr (`vbn fit` without --quiet): per chain, the phase
// (warmup or sampling) and the iteration, and the time left for the whole fit. On a terminal
// one line is rewritten in place, made shorter rather than cut so that every chain stays in
// view; otherwise (a log file, a pipe) each chain gets a line at most every `line_interval`
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

struct ProgressSettings {
    int chains = 1;
    int warmup = 0;  // iterations of each chain, for the time left (both 0: none is shown)
    int draws = 0;
    bool terminal = false;
    double line_interval = 2.0;  // seconds between one chain's lines, off a terminal
    int width = 0;               // on a terminal, the line stays within width - 1 columns (0: no limit)
};

class ProgressDisplay {
public:
    ProgressDisplay(std::ostream& out, const ProgressSettings& settings);
    ProgressDisplay(const ProgressDisplay&) = delete;
    ProgressDisplay& operator=(const ProgressDisplay&) = delete;

    // Safe to call from several threads at once.
    void update(const inference::ChainProgress& p);
    // The same at a given time in seconds since construction (for tests).
    void update(const inference::ChainProgress& p, double now);
    // On a terminal, ends the line being rewritten; later output starts on a fresh line.
    void finish();

    // Whether standard error is a terminal, and its width in columns: the terminal's own, else
    // $COLUMNS, else 80.
    static bool stderr_is_terminal();
    static int stderr_width();

    // "42s", "3m07s", "2h05m": a duration in whole seconds, as the time left is shown.
    static std::string format_duration(double seconds);

private:
    struct ChainState {
        bool seen = false;
        inference::ChainProgress last;
        double printed_at = -1e300;
    };
    double fraction_done() const;       // of all chains' iterations; -1 if unknown
    std::string eta(double now) const;  // "ETA 3m07s", or "" while too early to tell
    std::string terminal_line(double now) const;

    std::ostream& out_;
    ProgressSettings settings_;
    std::vector<ChainState> chains_;
    std::chrono::steady_clock::time_point start_;
    bool line_open_ = false;
    double first_time_ = -1;     // when the first report came, and how much was done then
    double first_fraction_ = 0;
    std::mutex mutex_;
};

}  // namespace vbn
