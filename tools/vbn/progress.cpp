#include "tools/vbn/progress.hpp"

#include "inference/clock.hpp"

#include <fmt/format.h>

#include <sys/ioctl.h>
#include <unistd.h>

namespace vbn {

ProgressDisplay::ProgressDisplay(std::ostream& out, int chains, bool terminal, double line_interval, int width)
    : out_(out), terminal_(terminal), line_interval_(line_interval), width_(width), chains_(static_cast<std::size_t>(std::max(chains, 0))),
      start_(std::chrono::steady_clock::now()) {}

bool ProgressDisplay::stderr_is_terminal() { return ::isatty(STDERR_FILENO) == 1; }

int ProgressDisplay::stderr_width() {
    winsize w{};
    if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &w) == 0 && w.ws_col > 0) return w.ws_col;
    return 80;
}

std::string ProgressDisplay::describe(const inference::ChainProgress& p) {
    const int percent = p.iterations > 0 ? static_cast<int>(100.0 * p.iteration / p.iterations) : 100;
    return fmt::format("chain {} {} {}/{} ({}%)", p.chain + 1, p.warmup ? "warmup" : "sampling", p.iteration, p.iterations,
                       percent);
}

void ProgressDisplay::update(const inference::ChainProgress& p) {
    update(p, inference::seconds_since(start_));
}

void ProgressDisplay::update(const inference::ChainProgress& p, double now) {
    const std::lock_guard lock(mutex_);
    if (p.chain < 0 || static_cast<std::size_t>(p.chain) >= chains_.size()) return;
    ChainState& s = chains_[static_cast<std::size_t>(p.chain)];
    s.seen = true;
    s.last = p;
    if (terminal_) {
        std::string line;
        for (const auto& c : chains_)
            if (c.seen) line += (line.empty() ? "" : "  ") + describe(c.last);
        if (width_ > 1 && line.size() > static_cast<std::size_t>(width_ - 1)) line.resize(static_cast<std::size_t>(width_ - 1));
        out_ << '\r' << line << "\x1b[K" << std::flush;
        line_open_ = true;
        return;
    }
    const bool phase_end = p.iteration >= p.iterations;
    if (!phase_end && now - s.printed_at < line_interval_) return;
    s.printed_at = now;
    out_ << describe(p) << '\n' << std::flush;
}

void ProgressDisplay::finish() {
    const std::lock_guard lock(mutex_);
    if (line_open_) out_ << '\n' << std::flush;
    line_open_ = false;
}

}  // namespace vbn
