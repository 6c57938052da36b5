// What a finished fit reports: the draws of the chains that did not fail (in output order,
// cut to a common length), the summary rows over them, and the run's facts (acceptance,
// divergences, regenerations, times, ELBO). Shared by `vbn fit` and the embedding API.
#pragma once

#include "runtime/sampling/fit.hpp"
#include "runtime/report/summary.hpp"

#include <Eigen/Core>

#include <functional>
#include <string>
#include <vector>

namespace vbn {

struct FitSummary {
    std::vector<Eigen::MatrixXd> draws;  // per chain that did not fail and has draws: draws × reported values
    std::vector<SummaryRow> rows;        // summarize(result.names, draws)
    RunFacts facts;
    std::vector<std::string> failures;   // "chain N failed and is left out: why", per failed chain
    std::string truncation;              // truncation_note: "" unless the chains' lengths differ
};

// `model` names the model in the facts; `warmup` and `draws` are the options of the run. The
// facts' phase_seconds are the run's phases (target to sampling) and then "summary", this
// call's own wall time (reading the draws included); a caller adds the phases before the run.
// Chains that kept no draw (an interrupted run's) are left out and the others cut to the
// shortest of them (FitSummary::truncation). Throws vbn::Error (inference) when no chain has
// draws to summarise. Without keep_draws,
// FitSummary::draws stays empty: the rows are computed from the result's own draws.
FitSummary summarize_fit(const FitResult& result, const std::string& model, int warmup, int draws,
                         bool keep_draws = true);

// A run whose draws were streamed (FitOptions::keep_draws off) rather than kept: what was
// counted as they passed, per chain of result.chains (in that order).
struct StreamedCounts {
    long divergent = 0;    // divergent transitions
    long regenerated = 0;  // regenerations
};
// The same summary from the streamed run: draws(c) gives chain c's draws (those made, at
// least result.chains[c].draws_done of them, in output order), e.g. read back from its
// CmdStan CSV file; it is called once per chain that did not fail and kept a draw, one chain at a time.
FitSummary summarize_fit(const FitResult& result, const std::string& model, int warmup, int draws,
                         const std::vector<StreamedCounts>& counts,
                         const std::function<Eigen::MatrixXd(std::size_t c)>& draws_of);

// The same in groups of columns, so that at most about `memory_budget` bytes of draws are held
// at once: draws_of(c, first, count) gives chain c's draws of the output columns first ..
// first+count-1. Every group of columns is one call per chain (e.g. one pass over each CSV
// file); the summary rows are those of the whole. FitSummary::draws is filled only when every
// column fits in one group.
FitSummary summarize_fit(const FitResult& result, const std::string& model, int warmup, int draws,
                         const std::vector<StreamedCounts>& counts,
                         const std::function<Eigen::MatrixXd(std::size_t c, Eigen::Index first, Eigen::Index count)>& draws_of,
                         double memory_budget);

}  // namespace vbn
