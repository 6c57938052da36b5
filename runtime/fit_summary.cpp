#include "runtime/fit_summary.hpp"

#include "runtime/error.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace vbn {

FitSummary summarize_fit(const FitResult& r, const std::string& model, int warmup, int draws,
                         const std::vector<StreamedCounts>& counts,
                         const std::function<Eigen::MatrixXd(std::size_t c)>& draws_of) {
    FitSummary s;
    RunFacts& facts = s.facts;
    facts.model = model;
    facts.method = r.method;
    facts.warmup = warmup;
    facts.warmup_seconds = r.warmup_seconds + r.vb_seconds;
    facts.sampling_seconds = r.sampling_seconds;
    facts.elbo = r.vb.best_fit().elbo;
    std::vector<std::vector<inference::KernelStats>> stats;
    long regenerations = 0;
    long min_draws = draws;
    for (std::size_t c = 0; c < r.chains.size(); ++c) {
        const auto& ch = r.chains[c];
        if (!ch.ok()) {
            s.failures.push_back(fmt::format("a chain failed and is left out: {}", ch.error));
            continue;
        }
        min_draws = std::min<long>(min_draws, ch.draws_done);
        stats.push_back(ch.stats);
        facts.divergent += counts.at(c).divergent;
        regenerations += counts.at(c).regenerated;
    }
    for (std::size_t c = 0; c < r.chains.size(); ++c) {
        if (!r.chains[c].ok() || min_draws <= 0) continue;
        Eigen::MatrixXd d = draws_of(c);
        if (d.rows() < min_draws || d.cols() != static_cast<Eigen::Index>(r.order.size()))
            throw Error(ErrorKind::inference, fmt::format("chain {}: {} draws of {} values where {} of {} were made", c + 1,
                                                          d.rows(), d.cols(), min_draws, r.order.size()));
        if (d.rows() > min_draws) d.conservativeResize(min_draws, Eigen::NoChange);
        s.draws.push_back(std::move(d));
    }
    if (r.method == "regen" || regenerations > 0) facts.regenerations = regenerations;
    facts.chains = static_cast<int>(s.draws.size());
    facts.draws = min_draws;
    facts.kernels = merge_kernel_stats(stats);
    if (s.draws.empty()) throw Error(ErrorKind::inference, "no draws to summarise");
    s.rows = summarize(r.names, s.draws);
    return s;
}

FitSummary summarize_fit(const FitResult& r, const std::string& model, int warmup, int draws) {
    std::vector<StreamedCounts> counts(r.chains.size());
    for (std::size_t c = 0; c < r.chains.size(); ++c)
        for (const auto& info : r.chains[c].info) {
            counts[c].divergent += info.divergent ? 1 : 0;
            counts[c].regenerated += info.regenerated ? 1 : 0;
        }
    return summarize_fit(r, model, warmup, draws, counts, [&](std::size_t c) {
        const auto& ch = r.chains[c];
        Eigen::MatrixXd d(ch.draws_done, static_cast<Eigen::Index>(r.order.size()));
        for (std::size_t j = 0; j < r.order.size(); ++j)
            d.col(static_cast<Eigen::Index>(j)) = ch.draws.col(r.order[j]).head(ch.draws_done);
        return d;
    });
}

}  // namespace vbn
