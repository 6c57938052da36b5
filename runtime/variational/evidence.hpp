// The model evidence log p(x_v) and the Pareto-k̂ that says whether it can be trusted: a
// thin layer over the importance correction of the variational fit (runtime/variational/vb_refine.hpp),
// so that `vbn compare`, the embedding API and `vbn vb` report the same numbers for the
// same model, data, draws and seed.
//
// The ELBO of variational EM (runtime/variational/vb.hpp) is a lower bound on log p(x_v) (Variational
// MCMC, eq. 4); how far below it lies is unknown. The correction samples a Student-t
// proposal centred on the exact posterior mode with the Laplace covariance (on the VB fit
// where Newton finds no mode) mixed with a heavy-tailed defensive t, adapts it over a few
// rounds, and Pareto-smooths the weights
// (inference/psis.hpp); log p(x_v) is the log of the mean weight, with its delta-method
// standard error, and k̂ is fitted to the largest weights.
#pragma once

#include "lang/ir.hpp"
#include "runtime/data/dataset.hpp"
#include "runtime/variational/vb.hpp"
#include "runtime/variational/vb_refine.hpp"

#include <optional>
#include <string>

namespace vbn {

class Target;

// The importance sampler's settings: the same as `vbn vb`'s correction.
using EvidenceOptions = RefineOptions;

struct Evidence {
    double log_evidence = 0;  // log p(x_v), estimated
    double se = 0;            // its Monte Carlo standard error (delta method)
    double pareto_k = 0;      // PSIS k̂ of the importance weights
    long draws = 0;           // 0 when the model has no parameters: then the value is exact, k̂ NaN
    bool from_mode = false;   // the proposal sat at the exact posterior mode (else at the VB fit)
    // k̂ ≥ 0.7 sent the estimate to tempering (runtime/variational/tempered.hpp): log_evidence and
    // se are then the tempered runs', whose agreement runs_rhat measures (reliable below 1.01).
    bool tempered = false;
    double runs_rhat = 0;
    bool reliable() const { return tempered ? runs_rhat < 1.01 : pareto_k <= 0.7; }
};

// Estimates log p(x_v) for the target's data. Throws vbn::Error (usage for bad options,
// inference when the proposal cannot be formed or every weight is zero, limit beyond
// max_dense_dim parameters).
Evidence estimate_evidence(const Target& target, const VbFit& q, const EvidenceOptions& options = {});

// The same for a model and its data, building the exact target (hidden and missing values
// summed out, at most max_enumerated together). When that limit is exceeded, or the model has
// more than max_dense_dim parameters, there is no estimate: nullopt, with the reason in *why_not.
std::optional<Evidence> model_evidence(const ir::Graph& graph, const Dataset& data, const VbFit& q,
                                       const EvidenceOptions& options, int max_enumerated = 12,
                                       std::string* why_not = nullptr);

// k̂ in plain words: "good" (≤ 0.5), "ok" (≤ 0.7) or "unreliable", with what it means.
std::string pareto_k_reading(double k);

}  // namespace vbn
