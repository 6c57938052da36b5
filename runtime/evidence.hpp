// The model evidence log p(x_v) by importance sampling, with the variational posterior as
// proposal, and the Pareto-k̂ diagnostic of PSIS (inference/psis.hpp) that says whether the
// estimate — and the variational fit behind it — can be trusted.
//
// The ELBO of variational EM (runtime/vb.hpp) is a lower bound on log p(x_v) (Variational
// MCMC, eq. 4); how far below it lies is unknown. Here
//     p(x_v) = E_r[ p(x_v, θ) / r(θ) ],   θ ~ r = t_ν(μ_q, c Σ_q),
// where q(θ) = N(μ_q, Σ_q) is the variational posterior, widened by c and given Student-t
// tails so that the ratios stay bounded where q is too narrow (variational-mcmc.txt §4.1,
// Corollary 1). p(x_v, θ) is the exact joint with hidden and missing values summed out
// (runtime/target.hpp). The estimate is log of the mean ratio; its standard error is the
// delta-method sd(ratios) / (√S · mean ratio); k̂ is fitted to the largest ratios.
#pragma once

#include "lang/ir.hpp"
#include "runtime/dataset.hpp"
#include "runtime/vb.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace vbn {

class Target;

struct EvidenceOptions {
    int draws = 4000;          // importance draws S
    double df = 10;            // Student-t degrees of freedom of the proposal
    double inflation = 1.5;    // factor on the variational covariance
    std::uint64_t seed = 1;    // the draws come from Rng(seed, stream)
    std::uint64_t stream = 7;
};

struct Evidence {
    double log_evidence = 0;  // log p(x_v), estimated
    double se = 0;            // its Monte Carlo standard error (delta method)
    double pareto_k = 0;      // PSIS k̂ of the importance ratios
    int draws = 0;            // 0 when the model has no parameters: then the value is exact, k̂ NaN
};

// Estimates log p(x_v) for the target's data. Throws vbn::Error (usage for bad options,
// inference when the proposal cannot be formed or every ratio is zero).
Evidence estimate_evidence(const Target& target, const VbFit& q, const EvidenceOptions& options = {});

// The same for a model and its data, building the exact target (hidden and missing values
// summed out, at most max_enumerated together). When that limit is exceeded there is no
// estimate: nullopt, with the reason in *why_not.
std::optional<Evidence> model_evidence(const ir::Graph& graph, const Dataset& data, const VbFit& q,
                                       const EvidenceOptions& options, int max_enumerated = 12,
                                       std::string* why_not = nullptr);

// Two report lines: "log evidence X ± se (…)" and "Pareto k̂ K: reading".
std::string format_evidence(const Evidence& e);

// k̂ in plain words: "good" (≤ 0.5), "ok" (≤ 0.7) or "unreliable", with what it means.
std::string pareto_k_reading(double k);

}  // namespace vbn
