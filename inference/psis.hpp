// The Pareto-k̂ diagnostic of Pareto-smoothed importance sampling (Vehtari, Simpson, Gelman,
// Yao & Gabry, "Pareto smoothed importance sampling"): a generalized Pareto distribution is
// fitted to the largest importance ratios, and its shape k̂ says how many moments the ratios
// have — k̂ ≤ 0.5: finite variance, the estimate is reliable; 0.5 < k̂ ≤ 0.7: usable with
// care; k̂ > 0.7: the estimate (and the proposal behind it) cannot be trusted.
//
// The fit is Zhang & Stephens' (2009) profile-likelihood estimator with the weakly
// informative prior that pulls k̂ towards 0.5 for small tails, computed as R's `loo` package
// does (gpdfit, psis with r_eff = 1), so results agree with it to rounding.
#pragma once

#include <Eigen/Core>

#include <vector>

namespace vbn::inference {

struct GpdFit {
    double k = 0;      // shape
    double sigma = 0;  // scale
};

// Zhang & Stephens' estimate of a generalized Pareto distribution (location 0) from
// exceedances sorted ascending, all ≥ 0, at least one positive. With
// weakly_informative_prior, k̂ is shrunk towards 0.5 by n/(n + 10) as in `loo`.
GpdFit gpd_fit(const std::vector<double>& sorted_exceedances, bool weakly_informative_prior = true);

// The tail length PSIS fits with S draws: ⌈min(S/5, 3 √S)⌉; of S draws of MCMC chains whose
// relative efficiency (ESS / S) is r_eff, ⌈min(S/5, 3 √(S / r_eff))⌉ (loo's n_pareto).
int pareto_tail_length(int draws, double r_eff = 1);

// Pareto-k̂ of the importance ratios exp(log_ratios): the generalized Pareto fit to the
// exceedances of the pareto_tail_length(S) largest ratios over the next largest. +∞ when the
// tail has fewer than 5 draws or its ratios are all equal, or a log ratio is NaN (what
// `loo` reports in those cases); −∞ log ratios (zero weights) are allowed.
double pareto_k(const Eigen::Ref<const Eigen::VectorXd>& log_ratios);

// Pareto-smoothed importance sampling: the same k̂ as pareto_k, and, when it is finite, the
// tail's log ratios replaced in place by the expected order statistics of the fitted
// generalized Pareto distribution (loo's psis_smooth_tail), never above the largest raw
// ratio. Where pareto_k is +∞ the ratios are left as they are.
double pareto_smooth(Eigen::Ref<Eigen::VectorXd> log_ratios);
// The same with the tail length given (pareto_tail_length(S, r_eff) for MCMC draws). Tied
// log ratios keep their order in the tail, as R's stable sort leaves them.
double pareto_smooth(Eigen::Ref<Eigen::VectorXd> log_ratios, int tail_length);

// The importance sampling ESS (Σ w)² / Σ w² of the weights w = exp(log_w), computed after
// subtracting the largest log weight; 0 when every weight is 0.
double importance_ess(const Eigen::Ref<const Eigen::VectorXd>& log_w);

// The weighted mean and covariance Σ_i w_i (x_i − mean)(x_i − mean)' of draws x_i (the
// columns of `draws`) under weights w that sum to one, e.g. normalised smoothed ratios.
void weighted_moments(const Eigen::MatrixXd& draws, const Eigen::VectorXd& w, Eigen::VectorXd& mean,
                      Eigen::MatrixXd& cov);

}  // namespace vbn::inference
