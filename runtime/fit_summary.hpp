// What a finished fit reports: the draws of the chains that did not fail (in output order,
// cut to a common length), the summary rows over them, and the run's facts (acceptance,
// divergences, regenerations, times, ELBO). Shared by `vbn fit` and the embedding API.
#pragma once

#include "runtime/fit.hpp"
#include "runtime/summary.hpp"

#include <Eigen/Core>

#include <string>
#include <vector>

namespace vbn {

struct FitSummary {
    std::vector<Eigen::MatrixXd> draws;  // per chain that did not fail: draws × reported values
    std::vector<SummaryRow> rows;        // summarize(result.names, draws)
    RunFacts facts;
    std::vector<std::string> failures;   // "chain N failed and is left out: why", per failed chain
};

// `model` names the model in the facts; `warmup` and `draws` are the options of the run.
// Throws vbn::Error (inference) when no chain has draws to summarise.
FitSummary summarize_fit(const FitResult& result, const std::string& model, int warmup, int draws);

}  // namespace vbn
