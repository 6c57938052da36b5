#include "runtime/fit_summary.hpp"

#include "runtime/error.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace vbn {

FitSummary summarize_fit(const FitResult& r, const std::string& model, int warmup, int draws) {
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
    bool any_regen = false;
    long min_draws = draws;
    for (const auto& ch : r.chains) {
        if (!ch.ok()) {
            s.failures.push_back(fmt::format("a chain failed and is left out: {}", ch.error));
            continue;
        }
        min_draws = std::min<long>(min_draws, ch.draws_done);
        stats.push_back(ch.stats);
        for (const auto& info : ch.info) {
            if (info.divergent) ++facts.divergent;
            if (info.regenerated) {
                ++regenerations;
                any_regen = true;
            }
        }
    }
    for (const auto& ch : r.chains) {
        if (!ch.ok() || min_draws <= 0) continue;
        Eigen::MatrixXd d(min_draws, static_cast<Eigen::Index>(r.order.size()));
        for (std::size_t j = 0; j < r.order.size(); ++j)
            d.col(static_cast<Eigen::Index>(j)) = ch.draws.col(r.order[j]).head(min_draws);
        s.draws.push_back(std::move(d));
    }
    if (r.method == "regen" || any_regen) facts.regenerations = regenerations;
    facts.chains = static_cast<int>(s.draws.size());
    facts.draws = min_draws;
    facts.kernels = merge_kernel_stats(stats);
    if (s.draws.empty()) throw Error(ErrorKind::inference, "no draws to summarise");
    s.rows = summarize(r.names, s.draws);
    return s;
}

}  // namespace vbn
