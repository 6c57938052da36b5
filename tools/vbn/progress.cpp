#include "tools/vbn/progress.hpp"

#include "inference/clock.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include <sys/ioctl.h>
#include <unistd.h>

namespace vbn {

namespace {

int percent(const inference::ChainProgress& p) {
    return p.iterations > 0 ? static_cast<int>(100.0 * p.iteration / p.iterations) : 100;
}

// One chain, at three lengths: the terminal line takes the longest form that fits.
std::string describe(const inference::ChainProgress& p, int level) {
    const int c = p.chain + 1;
    switch (level) {
        case 0: return fmt::format("chain {} {} {}/{} ({}%)", c, p.warmup ? "warmup" : "sampling", p.iteration, p.iterations, percent(p));
        case 1: return fmt::format("{}: {} {}%", c, p.warmup ? "warmup" : "sampling", percent(p));
        default: return fmt::format("{}:{}{}%", c, p.warmup ? 'W' : 'S', percent(p));
    }
}

}  // namespace

ProgressDisplay::ProgressDisplay(std::ostream& out, const ProgressSettings& settings)
    : out_(out), settings_(settings), chains_(static_cast<std::size_t>(std::max(settings.chains, 0))),
      start_(std::chrono::steady_clock::now()) {}

bool ProgressDisplay::stderr_is_terminal() { return ::isatty(STDERR_FILENO) == 1; }

int ProgressDisplay::stderr_width() {
    winsize w{};
    if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &w) == 0 && w.ws_col > 0) return w.ws_col;
    if (const char* columns = std::getenv("COLUMNS")) {
        char* end = nullptr;
        const long n = std::strtol(columns, &end, 10);
        if (end != columns && *end == '\0' && n > 0 && n < 100000) return static_cast<int>(n);
    }
    return 80;
}

std::string ProgressDisplay::format_duration(double seconds) {
    const long s = std::lround(std::max(seconds, 0.0));
    if (s < 60) return fmt::format("{}s", s);
    if (s < 3600) return fmt::format("{}m{:02}s", s / 60, s % 60);
    return fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60);
}

double ProgressDisplay::fraction_done() const {
    const double per_chain = static_cast<double>(settings_.warmup) + settings_.draws;
    if (per_chain <= 0 || chains_.empty()) return -1;
    double done = 0;
    for (const auto& c : chains_)
        if (c.seen) done += c.last.warmup ? c.last.iteration : settings_.warmup + c.last.iteration;
    return std::min(done / (per_chain * static_cast<double>(chains_.size())), 1.0);
}

// Time left = (1 − f) / rate, with f the fraction of all chains' iterations done (chains
// still waiting for a thread count as not started) and the rate measured from the first
// report on, so that the stages before the chains (the variational fit, pilots) do not
// count. Every iteration is taken to cost the same; within the first second or 1% the
// estimate would be noise, and nothing is shown.
std::string ProgressDisplay::eta(double now) const {
    const double f = fraction_done();
    const double elapsed = now - first_time_, gained = f - first_fraction_;
    if (f < 0 || f >= 1 || elapsed < 1 || gained < 0.01) return "";
    return "ETA " + format_duration((1 - f) * elapsed / gained);
}

std::string ProgressDisplay::terminal_line(double now) const {
    const std::string left = eta(now);
    const auto limit = settings_.width > 1 ? static_cast<std::size_t>(settings_.width - 1) : std::string::npos;
    for (int level = 0; level < 3; ++level) {
        std::string line;
        for (const auto& c : chains_)
            if (c.seen) line += (line.empty() ? "" : "  ") + describe(c.last, level);
        if (!left.empty()) line += "  " + left;
        if (line.size() <= limit) return line;
    }
    // More chains than fit even in the short form: the whole fit in one figure.
    int running = 0;
    for (const auto& c : chains_)
        if (c.seen && (c.last.warmup || c.last.iteration < c.last.iterations)) ++running;
    std::string line = fmt::format("{} chains, {} running", chains_.size(), running);
    if (const double f = fraction_done(); f >= 0) line += fmt::format(", {}% done", static_cast<int>(100 * f));
    if (!left.empty()) line += "  " + left;
    if (line.size() > limit) line.resize(limit);
    return line;
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
    if (first_time_ < 0) {
        first_time_ = now;
        first_fraction_ = fraction_done();
    }
    if (settings_.terminal) {
        out_ << '\r' << terminal_line(now) << "\x1b[K" << std::flush;
        line_open_ = true;
        return;
    }
    const bool phase_end = p.iteration >= p.iterations;
    if (!phase_end && now - s.printed_at < settings_.line_interval) return;
    s.printed_at = now;
    std::string line = describe(p, 0);
    // The time left goes on lines within a phase only: the line at a phase's end is the
    // same on every machine (the golden tests keep it).
    if (const std::string left = eta(now); !phase_end && !left.empty()) line += ", " + left;
    out_ << line << '\n' << std::flush;
}

void ProgressDisplay::finish() {
    const std::lock_guard lock(mutex_);
    if (line_open_) out_ << '\n' << std::flush;
    line_open_ = false;
}

}  // namespace vbn
