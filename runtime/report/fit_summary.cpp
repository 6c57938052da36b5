#include "runtime/report/fit_summary.hpp"

#include "inference/clock.hpp"
#include "runtime/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace vbn {

namespace {

// Whether chain ch is summarised: it did not fail and kept a draw (an interrupted run's
// chains that had not started, or were still in warmup, have none).
bool summarised(const inference::ChainResult& ch) { return ch.ok() && ch.draws_done > 0; }

// The facts of a run (the rows aside), from its chains that did not fail and have draws;
// facts.draws is the shortest of them, to which all are cut (FitSummary::truncation says so
// when they differ). Throws when no chain has any.
FitSummary run_facts(const FitResult& r, const std::string& model, int warmup, int draws,
                     const std::vector<StreamedCounts>& counts) {
    FitSummary s;
    RunFacts& facts = s.facts;
    facts.model = model;
    facts.method = r.method;
    facts.hidden = r.hidden;
    facts.symmetry = r.symmetry;
    facts.labelings = r.labelings;
    facts.warmup = warmup;
    facts.warmup_seconds = r.warmup_seconds + r.vb_seconds;
    facts.sampling_seconds = r.sampling_seconds;
    facts.elbo = r.vb.best_fit().elbo;
    facts.phase_seconds = {{"target", r.target_seconds},
                           {"variational", r.vb_seconds},
                           {"proposal", r.proposal_seconds},
                           {"warmup", r.warmup_seconds},
                           {"sampling", r.sampling_seconds}};
    std::vector<std::vector<inference::KernelStats>> stats;
    long regenerations = 0;
    long min_draws = draws;
    std::vector<std::string> labels;
    std::vector<long> made;
    for (std::size_t c = 0; c < r.chains.size(); ++c) {
        const auto& ch = r.chains[c];
        if (!ch.ok()) {
            s.failures.push_back(fmt::format("a chain failed and is left out: {}", ch.error));
            continue;
        }
        labels.push_back(fmt::format("chain {}", c + 1));
        made.push_back(ch.draws_done);
        if (!summarised(ch)) continue;
        min_draws = std::min<long>(min_draws, ch.draws_done);
        stats.push_back(ch.stats);
        facts.divergent += counts.at(c).divergent;
        regenerations += counts.at(c).regenerated;
    }
    const MethodInfo* method = lookup_method(r.method);
    if ((method && method->regenerates) || regenerations > 0) facts.regenerations = regenerations;
    facts.chains = static_cast<int>(stats.size());
    facts.draws = facts.chains > 0 ? min_draws : 0;
    facts.kernels = merge_kernel_stats(stats);
    if (facts.chains == 0 || facts.draws == 0)
        throw Error(ErrorKind::inference, made.empty() ? "no draws to summarise: every chain failed"
                                                       : "no draws to summarise: no chain kept a draw");
    s.truncation = truncation_note(labels, made);
    return s;
}

}  // namespace

FitSummary summarize_fit(const FitResult& r, const std::string& model, int warmup, int draws,
                         const std::vector<StreamedCounts>& counts,
                         const std::function<Eigen::MatrixXd(std::size_t c, Eigen::Index first, Eigen::Index count)>& draws_of,
                         double memory_budget) {
    const auto started = std::chrono::steady_clock::now();
    FitSummary s = run_facts(r, model, warmup, draws, counts);
    const long min_draws = s.facts.draws;

    // Columns per group: as many as the budget holds for every chain, at least one.
    const auto columns = static_cast<Eigen::Index>(r.order.size());
    const double per_column = 8.0 * static_cast<double>(s.facts.chains) * static_cast<double>(min_draws);
    const auto group = static_cast<Eigen::Index>(
        std::clamp(std::floor(memory_budget / per_column), 1.0, static_cast<double>(std::max<Eigen::Index>(columns, 1))));
    for (Eigen::Index first = 0; first < columns; first += group) {
        const Eigen::Index count = std::min(group, columns - first);
        std::vector<Eigen::MatrixXd> part;
        for (std::size_t c = 0; c < r.chains.size(); ++c) {
            if (!summarised(r.chains[c])) continue;
            Eigen::MatrixXd d = draws_of(c, first, count);
            if (d.rows() < min_draws || d.cols() != count)
                throw Error(ErrorKind::inference, fmt::format("chain {}: {} draws of {} values where {} of {} were made",
                                                              c + 1, d.rows(), d.cols(), min_draws, count));
            if (d.rows() > min_draws) d.conservativeResize(min_draws, Eigen::NoChange);
            part.push_back(std::move(d));
        }
        const std::vector<std::string> names(r.names.begin() + first, r.names.begin() + first + count);
        for (SummaryRow& row : summarize(names, part, r.threads)) s.rows.push_back(std::move(row));
        if (count == columns) s.draws = std::move(part);
    }
    s.facts.phase_seconds.emplace_back("summary", inference::seconds_since(started));
    return s;
}

FitSummary summarize_fit(const FitResult& r, const std::string& model, int warmup, int draws,
                         const std::vector<StreamedCounts>& counts,
                         const std::function<Eigen::MatrixXd(std::size_t c)>& draws_of) {
    // One group holding every column: each chain's draws are asked for once, whole.
    return summarize_fit(
        r, model, warmup, draws, counts,
        [&](std::size_t c, Eigen::Index first, Eigen::Index count) {
            Eigen::MatrixXd d = draws_of(c);
            if (first == 0 && count == d.cols()) return d;
            return Eigen::MatrixXd(d.middleCols(first, std::min(count, std::max<Eigen::Index>(d.cols() - first, 0))));
        },
        std::numeric_limits<double>::infinity());
}

FitSummary summarize_fit(const FitResult& r, const std::string& model, int warmup, int draws, bool keep_draws) {
    std::vector<StreamedCounts> counts(r.chains.size());
    for (std::size_t c = 0; c < r.chains.size(); ++c)
        for (const auto& info : r.chains[c].info) {
            counts[c].divergent += info.divergent ? 1 : 0;
            counts[c].regenerated += info.regenerated ? 1 : 0;
        }
    if (keep_draws)
        return summarize_fit(r, model, warmup, draws, counts, [&](std::size_t c) {
            const auto& ch = r.chains[c];
            Eigen::MatrixXd d(ch.draws_done, static_cast<Eigen::Index>(r.order.size()));
            for (std::size_t j = 0; j < r.order.size(); ++j)
                d.col(static_cast<Eigen::Index>(j)) = ch.draws.col(r.order[j]).head(ch.draws_done);
            return d;
        });
    // Straight from the chains' own columns: no copy of every draw in output order first (at
    // 20 weights, 4 x 1,000 draws, that copy was fresh memory, 0.3-0.5 ms of page faults).
    const auto started = std::chrono::steady_clock::now();
    FitSummary s = run_facts(r, model, warmup, draws, counts);
    std::vector<std::size_t> kept;
    for (std::size_t c = 0; c < r.chains.size(); ++c) {
        const auto& ch = r.chains[c];
        if (!summarised(ch)) continue;
        if (ch.draws.rows() < s.facts.draws || ch.draws.cols() < static_cast<Eigen::Index>(r.order.size()))
            throw Error(ErrorKind::inference, fmt::format("chain {}: {} draws of {} values held where {} of {} were made "
                                                          "(a streamed run's draws are summarised from where they went)",
                                                          c + 1, ch.draws.rows(), ch.draws.cols(), s.facts.draws,
                                                          r.order.size()));
        kept.push_back(c);
    }
    s.rows = summarize(r.names, kept.size(), s.facts.draws,
                       [&](std::size_t k, Eigen::Index p) { return r.chains[kept[k]].draws.col(r.order[static_cast<std::size_t>(p)]).data(); },
                       r.threads);
    s.facts.phase_seconds.emplace_back("summary", inference::seconds_since(started));
    return s;
}

}  // namespace vbn
