// The Metropolis–Hastings accept/reject decision shared by the MH kernels
// (variational-mcmc.txt Fig. 4), in log space.
#pragma once

#include "inference/rng.hpp"

#include <Eigen/Core>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace vbn::inference {

// A proposal's log density as the acceptance test must see it: NaN or +inf (a target that
// cannot be evaluated there) counts as zero density, so the proposal is rejected rather than
// poisoning the chain.
inline double proposal_log_density(double lp) {
    if (std::isnan(lp) || lp == std::numeric_limits<double>::infinity()) return -std::numeric_limits<double>::infinity();
    return lp;
}

struct MetropolisDecision {
    bool accept = false;
    double probability = 0;  // min(1, ratio): TransitionInfo::accept_stat
};

// Accept with probability min(1, exp(log_ratio)); log_ratio must come from a finite current
// state, so NaN can only mean a rejected proposal.
inline MetropolisDecision metropolis(double log_ratio, Rng& rng) {
    if (std::isnan(log_ratio) || log_ratio == -std::numeric_limits<double>::infinity()) return {false, 0.0};
    if (log_ratio >= 0) return {true, 1.0};
    return {std::log(rng.uniform()) < log_ratio, std::exp(log_ratio)};
}

// Kernels move from a state whose log density is finite; anything else is an error for the
// chain runner to report with the iteration.
inline void require_finite_current(double lp, const char* what) {
    if (!std::isfinite(lp)) {
        throw std::domain_error(std::string(what) + ": the log density at the current state is " +
                                (std::isnan(lp) ? "NaN" : (lp > 0 ? "+inf" : "-inf")));
    }
}

}  // namespace vbn::inference
