#include "runtime/services/extension.hpp"

#include "lang/symmetry.hpp"
#include "runtime/report/relabel.hpp"
#include "runtime/report/summary.hpp"
#include "runtime/services/relabel.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace vbn::services {

namespace {

bool counts(const inference::ChainResult& c) { return c.ok() && !c.interrupted && c.draws_done > 0; }

// Smaller of a and b where b is defined (NaN, for a constant parameter, is not).
bool below(double b, double a) { return std::isfinite(b) && b < a; }

}  // namespace

Extension::Extension(const ir::Graph& graph, const FitOptions& settings, std::function<void(const std::string&)> note,
                     double memory_budget)
    : graph_(graph), relabel_(settings.relabel), draws_(settings.draws), max_draws_(settings.max_draws),
      note_(std::move(note)) {
    if (max_draws_ <= draws_ || settings.chains < 1) return;
    const double bytes = 8.0 * settings.chains * max_draws_ * (graph.dim + 1.0);
    if (bytes > memory_budget) {
        say(fmt::format("the chains keep to {} draws: checking {} parameters over up to {} draws (--max-draws) "
                        "would hold {:.1f} GB of copies",
                        draws_, graph.dim, max_draws_, bytes / 1e9));
        return;
    }
    enabled_ = true;
    RelabelFacts facts;
    group_ = relabel_group(graph_, lang::find_symmetries(graph_), relabel_, output_order(graph_), facts);
    values_.assign(static_cast<std::size_t>(settings.chains), Eigen::MatrixXd(max_draws_, graph.dim));
    lp_.assign(static_cast<std::size_t>(settings.chains), Eigen::VectorXd(max_draws_));
}

void Extension::record(int chain, int draw, const Eigen::VectorXd& values, double lp) {
    if (!enabled_ || draw >= max_draws_) return;
    const auto c = static_cast<std::size_t>(chain);
    values_[c].row(draw) = values.transpose();
    lp_[c][draw] = lp;
}

DrawCheck Extension::check(const std::vector<inference::ChainResult>& chains) const {
    DrawCheck out;
    out.draws = std::numeric_limits<long>::max();
    std::vector<std::size_t> kept;
    for (std::size_t c = 0; c < chains.size() && c < values_.size(); ++c) {
        if (!counts(chains[c])) continue;
        kept.push_back(c);
        out.draws = std::min<long>(out.draws, std::min(chains[c].draws_done, max_draws_));
    }
    out.chains = static_cast<int>(kept.size());
    if (kept.empty()) return DrawCheck{};
    const auto n = static_cast<Eigen::Index>(out.draws);
    // The draws as the summary will see them: relabelled to one labeling (relabel.hpp), and
    // diagnosed by the summary's own rows.
    const std::vector<int> order = output_order(graph_);
    std::vector<Eigen::MatrixXd> draws;
    for (std::size_t c : kept) draws.push_back(values_[c].topRows(n));
    if (group_) {
        const PivotRelabelling r = relabel_to_pivot(*group_, kept.size(), [&](std::size_t k) {
            return ChainDraws{draws[k], lp_[kept[k]].head(n)};
        });
        for (std::size_t k = 0; k < kept.size(); ++k) apply_labeling(*group_, r.element[k], draws[k]);
    }
    std::vector<std::string> names;
    for (int k : order) names.push_back(graph_.theta_name(k));
    out.min_ess = std::numeric_limits<double>::infinity();
    out.max_rhat = -std::numeric_limits<double>::infinity();
    for (const SummaryRow& row : vbn::summarize(names, draws)) {
        if (below(row.ess_bulk, out.min_ess)) out.min_ess = row.ess_bulk, out.min_ess_of = "bulk-ESS of " + row.name;
        if (below(row.ess_tail, out.min_ess)) out.min_ess = row.ess_tail, out.min_ess_of = "tail-ESS of " + row.name;
        if (std::isfinite(row.rhat) && row.rhat > out.max_rhat) out.max_rhat = row.rhat, out.max_rhat_of = row.name;
    }
    if (!std::isfinite(out.min_ess)) out.min_ess = std::numeric_limits<double>::quiet_NaN();
    if (!std::isfinite(out.max_rhat)) out.max_rhat = std::numeric_limits<double>::quiet_NaN();
    return out;
}

int extended_draws(const DrawCheck& check, double ess_wanted, int max_draws) {
    const auto n = static_cast<double>(check.draws);
    double wanted = 2 * n;  // R-hat alone short: twice the draws
    if (below(check.min_ess, ess_wanted) && check.min_ess > 0) wanted = std::max(1.25 * n, n * 1.2 * ess_wanted / check.min_ess);
    const double hundreds = std::ceil(wanted / 100) * 100;
    return static_cast<int>(std::min<double>(hundreds, max_draws));
}

void Extension::say(std::string note) {
    if (note_) note_(note);
    notes_.push_back(std::move(note));
}

int Extension::more(const std::vector<inference::ChainResult>& chains) {
    if (!enabled_) return 0;
    const DrawCheck c = check(chains);
    if (c.chains == 0) return 0;
    const double ess_wanted = summary_ess_per_chain * c.chains;
    const bool ess_short = below(c.min_ess, ess_wanted);
    const bool rhat_short = std::isfinite(c.max_rhat) && c.max_rhat > summary_rhat_limit;
    if (!ess_short && !rhat_short) return 0;
    const std::string why = ess_short ? fmt::format("the smallest ESS was {:.0f} ({}), under {:.0f}", c.min_ess, c.min_ess_of, ess_wanted)
                                      : fmt::format("the largest R-hat was {:.3f} ({}), above {}", c.max_rhat, c.max_rhat_of,
                                                    summary_rhat_limit);
    if (c.draws >= max_draws_) {
        say(fmt::format("the chains stopped at --max-draws {} draws: {}", max_draws_, why));
        return 0;
    }
    const int to = extended_draws(c, ess_wanted, max_draws_);
    say(fmt::format("extending the chains from {} to {} draws: {}", c.draws, to, why));
    const int more = to - static_cast<int>(c.draws);
    draws_ += more;
    return more;
}

}  // namespace vbn::services
