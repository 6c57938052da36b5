#include "runtime/services/compare.hpp"

#include "inference/math.hpp"
#include "runtime/error.hpp"
#include "runtime/services/fit.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace vbn::services {

void check_model_count(const std::vector<std::string>& names) {
    if (names.size() >= 2) return;
    throw Error(ErrorKind::usage, fmt::format("compare needs two or more models to rank, got {}{}", names.size(),
                                              names.empty() ? "" : fmt::format(" ({})", fmt::join(names, ", "))));
}

std::vector<RankedModel> rank_by_evidence(const std::vector<Evidence>& evidence, const std::vector<std::string>& names) {
    check_model_count(names);
    if (evidence.size() != names.size())
        throw Error(ErrorKind::usage, fmt::format("{} log evidences for {} models", evidence.size(), names.size()));
    std::vector<double> le(evidence.size());
    for (std::size_t k = 0; k < evidence.size(); ++k) {
        le[k] = evidence[k].log_evidence;
        if (std::isnan(le[k]) || le[k] == std::numeric_limits<double>::infinity())
            throw Error(ErrorKind::inference, fmt::format("{}: log evidence {}: the models cannot be ranked", names[k], le[k]));
    }
    // -inf (data impossible under a model) is fine unless every model says so: then there is
    // no best model to normalise by.
    const double total = inference::log_sum_exp(le.begin(), le.end());
    if (!std::isfinite(total))
        throw Error(ErrorKind::inference, "every model gives the data probability 0: the models cannot be ranked");
    std::vector<std::size_t> order(le.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return le[a] > le[b]; });
    const std::size_t best = order.front();
    std::vector<RankedModel> ranking;
    for (const std::size_t k : order) {
        RankedModel r;
        r.model = k;
        r.log_bayes_factor = le[k] - le[best];
        r.se = k == best ? 0.0 : std::hypot(evidence[k].se, evidence[best].se);
        r.log_probability = le[k] - total;
        r.probability = std::exp(r.log_probability);
        ranking.push_back(r);
    }
    return ranking;
}

namespace {

std::vector<std::string> observed_columns(const Dataset& data) {
    std::vector<std::string> names = data.binary_names;
    std::sort(names.begin(), names.end());
    return names;
}

// Evidences are comparable only as probabilities of the same observations.
void check_same_observations(const std::vector<CompareModel>& models) {
    const std::vector<std::string> first = observed_columns(*models.front().data);
    for (std::size_t k = 1; k < models.size(); ++k) {
        const std::vector<std::string> other = observed_columns(*models[k].data);
        if (other != first)
            throw Error(ErrorKind::usage,
                        fmt::format("{} and {} observe different columns ({} vs {}): their evidences are probabilities of "
                                    "different data and cannot be compared",
                                    models.front().name, models[k].name, fmt::join(first, ", "), fmt::join(other, ", ")));
    }
}

}  // namespace

CompareRun compare(const std::vector<CompareModel>& models, const EvidenceSettings& settings, const Callbacks& callbacks) {
    std::vector<std::string> names;
    for (const CompareModel& m : models) names.push_back(m.name);
    check_model_count(names);
    check_same_observations(models);
    CompareRun run;
    std::vector<Evidence> evidence;
    for (const CompareModel& m : models) {
        run.evidence.push_back(services::evidence(*m.graph, *m.data, settings, callbacks));
        evidence.push_back(run.evidence.back().evidence);
    }
    run.ranking = rank_by_evidence(evidence, names);
    return run;
}

std::vector<LooRanked> rank_by_loo(const std::vector<inference::LooResult>& loo, const std::vector<std::string>& names) {
    check_model_count(names);
    const std::size_t n = loo.front().points.size();
    for (std::size_t k = 1; k < loo.size(); ++k)
        if (loo[k].points.size() != n)
            throw Error(ErrorKind::usage, fmt::format("{} has {} pointwise values but {} has {}: models compared by loo must "
                                                      "be fitted to the same data rows",
                                                      names[k], loo[k].points.size(), names.front(), n));
    std::vector<std::size_t> order(loo.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return loo[a].elpd_loo > loo[b].elpd_loo; });
    const inference::LooResult& best = loo[order.front()];
    std::vector<LooRanked> out;
    Eigen::VectorXd diff(static_cast<Eigen::Index>(n));
    for (std::size_t k : order) {
        for (std::size_t i = 0; i < n; ++i)
            diff[static_cast<Eigen::Index>(i)] = loo[k].points[i].elpd_loo - best.points[i].elpd_loo;
        const double var = n > 1 ? (diff.array() - diff.mean()).square().sum() / static_cast<double>(n - 1) : 0.0;
        out.push_back({k, diff.sum(), std::sqrt(static_cast<double>(n) * var)});
    }
    return out;
}

namespace {

// The pointwise log-likelihood of every chain that drew, for psis_loo.
std::vector<Eigen::MatrixXd> chains_log_lik(const CompareModel& m, const FitRun& run, int max_enumerated) {
    std::vector<Eigen::MatrixXd> out;
    for (const auto& ch : run.result.chains)
        if (ch.ok() && ch.draws.rows() > 0)
            out.push_back(pointwise_log_lik(*m.graph, *m.data, output_draws(run.result, ch), max_enumerated));
    if (out.empty()) throw Error(ErrorKind::inference, fmt::format("{}: every chain failed; nothing to cross-validate", m.name));
    return out;
}

}  // namespace

CompareLooRun compare_loo(const std::vector<CompareModel>& models, FitOptions settings, const Callbacks& callbacks) {
    std::vector<std::string> names;
    for (const CompareModel& m : models) names.push_back(m.name);
    check_model_count(names);
    check_same_observations(models);
    settings.keep_draws = true;
    CompareLooRun run;
    for (const CompareModel& m : models) {
        const FitRun fit_run = fit(*m.graph, *m.data, settings, callbacks);
        if (fit_run.interrupted) throw Error(ErrorKind::cancelled, "interrupted: no comparison");
        run.methods.push_back(fit_run.result.method);
        run.loo.push_back(inference::psis_loo(chains_log_lik(m, fit_run, settings.max_enumerated)));
    }
    run.ranking = rank_by_loo(run.loo, names);
    return run;
}

}  // namespace vbn::services
