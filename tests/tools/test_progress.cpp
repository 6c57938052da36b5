// The progress display of `vbn fit`: lines by time off a terminal, one line rewritten on a
// terminal that keeps every chain in view at any width, and the time left.
#include "tools/vbn/progress.hpp"

#include <doctest/doctest.h>

#include <cstdlib>
#include <sstream>
#include <string>

#include <unistd.h>

namespace {

using vbn::ProgressDisplay;
using vbn::ProgressSettings;
using vbn::inference::ChainProgress;

ProgressSettings settings(int chains, bool terminal, int width = 0, int warmup = 0, int draws = 0) {
    ProgressSettings s;
    s.chains = chains;
    s.terminal = terminal;
    s.width = width;
    s.warmup = warmup;
    s.draws = draws;
    return s;
}

// The last state of a rewritten line: what follows the last \r, without the erase code.
std::string last_line(const std::string& tty) {
    std::string line = tty.substr(tty.rfind('\r') + 1);
    if (const auto k = line.find("\x1b[K"); k != std::string::npos) line.resize(k);
    return line;
}

}  // namespace

TEST_CASE("progress: lines by time when not on a terminal, one rewritten line on a terminal") {
    std::ostringstream out;
    ProgressDisplay lines(out, settings(2, false));
    lines.update(ChainProgress{0, 10, 100, true}, 0.0);
    lines.update(ChainProgress{1, 12, 100, true}, 0.1);
    lines.update(ChainProgress{0, 40, 100, true}, 1.0);  // within 2 s of chain 1's last line
    lines.update(ChainProgress{0, 90, 100, true}, 2.5);
    lines.update(ChainProgress{0, 100, 100, true}, 2.6);  // the end of a phase is always shown
    lines.update(ChainProgress{0, 5, 50, false}, 2.7);    // too soon after the last line
    lines.finish();
    CHECK(out.str() ==
          "chain 1 warmup 10/100 (10%)\n"
          "chain 2 warmup 12/100 (12%)\n"
          "chain 1 warmup 90/100 (90%)\n"
          "chain 1 warmup 100/100 (100%)\n");

    std::ostringstream tty;
    ProgressDisplay line(tty, settings(2, true));
    line.update(ChainProgress{0, 10, 100, true}, 0.0);
    line.update(ChainProgress{1, 3, 50, false}, 0.5);
    line.finish();
    CHECK(tty.str() ==
          "\rchain 1 warmup 10/100 (10%)\x1b[K"
          "\rchain 1 warmup 10/100 (10%)  chain 2 sampling 3/50 (6%)\x1b[K\n");
}

TEST_CASE("progress: a narrow terminal gets a shorter line, never one that hides chains") {
    // Four chains on an 80-column terminal: the long form needs 122 columns, and cutting it
    // left chains 3 and 4 out of view.
    std::ostringstream tty;
    ProgressDisplay four(tty, settings(4, true, 80));
    for (int c = 0; c < 4; ++c) four.update(ChainProgress{c, 500 + c, 1000, c < 2}, 0.1 * c);
    const std::string line = last_line(tty.str());
    CHECK(line == "1: warmup 50%  2: warmup 50%  3: sampling 50%  4: sampling 50%");
    CHECK(line.size() <= 79);

    std::ostringstream small;
    ProgressDisplay twenty(small, settings(2, true, 20));
    twenty.update(ChainProgress{0, 10, 100, true}, 0.0);
    twenty.update(ChainProgress{1, 3, 50, false}, 0.5);
    CHECK(last_line(small.str()) == "1:W10%  2:S6%");

    // More chains than any per-chain form fits: one figure for the whole fit.
    std::ostringstream many;
    ProgressDisplay sixty_four(many, settings(64, true, 40, 100, 100));
    for (int c = 0; c < 64; ++c) sixty_four.update(ChainProgress{c, c < 32 ? 100 : 50, 100, c >= 32}, 0.0);
    const std::string summary = last_line(many.str());
    CHECK(summary == "64 chains, 32 running, 62% done");  // half have ended; (32·200 + 32·50) / 12800
    CHECK(summary.size() <= 39);
}

TEST_CASE("progress: the time left, from the rate since the first report") {
    std::ostringstream tty;
    // 2 chains × (100 warmup + 100 draws) = 400 iterations.
    ProgressDisplay d(tty, settings(2, true, 200, 100, 100));
    d.update(ChainProgress{0, 20, 100, true}, 5.0);  // the first report: 5% done at 5 s
    CHECK(last_line(tty.str()) == "chain 1 warmup 20/100 (20%)");  // no rate yet
    d.update(ChainProgress{1, 20, 100, true}, 6.0);  // 10% after 1 s more: 5% per second
    CHECK(last_line(tty.str()) == "chain 1 warmup 20/100 (20%)  chain 2 warmup 20/100 (20%)  ETA 18s");
    d.update(ChainProgress{0, 60, 100, false}, 16.0);  // 45% done, 40% of it in 11 s: 0.55 · 11 / 0.4 s left
    CHECK(last_line(tty.str()) == "chain 1 sampling 60/100 (60%)  chain 2 warmup 20/100 (20%)  ETA 15s");

    // Off a terminal the time left goes on lines within a phase, not on a phase's last line.
    std::ostringstream log;
    ProgressDisplay lines(log, settings(1, false, 0, 100, 100));
    lines.update(ChainProgress{0, 10, 100, true}, 0.0);
    lines.update(ChainProgress{0, 60, 100, true}, 10.0);
    lines.update(ChainProgress{0, 100, 100, true}, 11.0);
    CHECK(log.str() ==
          "chain 1 warmup 10/100 (10%)\n"
          "chain 1 warmup 60/100 (60%), ETA 28s\n"
          "chain 1 warmup 100/100 (100%)\n");
}

TEST_CASE("progress: durations, and the width from COLUMNS when stderr is no terminal") {
    CHECK(ProgressDisplay::format_duration(0.4) == "0s");
    CHECK(ProgressDisplay::format_duration(42) == "42s");
    CHECK(ProgressDisplay::format_duration(187) == "3m07s");
    CHECK(ProgressDisplay::format_duration(7500) == "2h05m");
    if (::isatty(STDERR_FILENO) == 1) return;  // the terminal's own width wins
    ::setenv("COLUMNS", "132", 1);
    CHECK(ProgressDisplay::stderr_width() == 132);
    ::setenv("COLUMNS", "wide", 1);
    CHECK(ProgressDisplay::stderr_width() == 80);
    ::unsetenv("COLUMNS");
    CHECK(ProgressDisplay::stderr_width() == 80);
}
