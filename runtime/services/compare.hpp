// The comparison job (`vbn compare`): the log evidence of two or more models of the same data
// (services/evidence.hpp), ranked best first, with each model's log Bayes factor against the
// best and its posterior probability when every model is a priori equally probable.
#pragma once

#include "inference/loo.hpp"
#include "runtime/sampling/fit.hpp"
#include "runtime/services/evidence.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace vbn::services {

struct CompareModel {
    std::string name;  // how messages name the model (the command line: its path)
    const ir::Graph* graph = nullptr;
    const Dataset* data = nullptr;  // the same observations for every model, loaded for this graph
};

struct RankedModel {
    std::size_t model = 0;        // index into the models, in the order given
    double log_bayes_factor = 0;  // log p(data | model) - log p(data | best): 0 for the best, else <= 0
    double se = 0;                // its Monte Carlo standard error, sqrt(se^2 + se_best^2); 0 for the best
    double log_probability = 0;   // log p(model | data) under equal prior odds
    double probability = 0;       // p(model | data) = exp(log_probability); the ranking's sum to 1
};

struct CompareRun {
    std::vector<EvidenceRun> evidence;  // per model, in the order given
    std::vector<RankedModel> ranking;   // best first; ties keep the order given
};

// Throws vbn::Error (usage) unless there are two or more models, naming those given.
void check_model_count(const std::vector<std::string>& names);

// Ranks log evidences (names: one per evidence, for messages). The probabilities are
// exp(l_k - logsumexp(l)), so that a gap of thousands of nats gives 0, not NaN. Throws
// vbn::Error: usage for fewer than two models, inference for a NaN or +inf log evidence or
// when every one is -inf.
std::vector<RankedModel> rank_by_evidence(const std::vector<Evidence>& evidence, const std::vector<std::string>& names);

// Checks the count, that every model observes the same node columns (else their evidences
// are probabilities of different data: usage error), then estimates each model's evidence
// with the same settings and ranks them. Throws what evidence() throws.
CompareRun compare(const std::vector<CompareModel>& models, const EvidenceSettings& settings,
                   const Callbacks& callbacks = {});

// `vbn compare --by loo`: models ranked by PSIS-LOO's elpd_loo, as R's loo_compare ranks
// them: each model's elpd_loo − that of the best (0 for the best, else ≤ 0) with the standard
// error √N · sd of the pointwise differences.
struct LooRanked {
    std::size_t model = 0;  // index into the models, in the order given
    double elpd_diff = 0;
    double se_diff = 0;
};

struct CompareLooRun {
    std::vector<inference::LooResult> loo;  // per model, in the order given
    std::vector<std::string> methods;       // per model: the fit's method (auto resolved)
    std::vector<LooRanked> ranking;         // best first; ties keep the order given
};

// Ranks PSIS-LOO results of the same data rows. Throws vbn::Error (usage) for fewer than
// two or when their numbers of rows differ.
std::vector<LooRanked> rank_by_loo(const std::vector<inference::LooResult>& loo, const std::vector<std::string>& names);

// Fits every model (settings as `vbn fit`'s; keep_draws is set), computes each kept draw's
// pointwise log-likelihood (the data must carry row_pattern) and ranks by elpd_loo. Checks
// as compare() does. Throws what fit() throws, and inference when every chain of a model
// failed.
CompareLooRun compare_loo(const std::vector<CompareModel>& models, FitOptions settings, const Callbacks& callbacks = {});

}  // namespace vbn::services
