// Leave-one-out cross-validation by Pareto-smoothed importance sampling (Vehtari, Gelman &
// Gabry 2017, "Practical Bayesian model evaluation using leave-one-out cross-validation and
// WAIC"): from posterior draws of each data row's log-likelihood log p(y_i | θ_s), the
// expected log pointwise predictive density of a new row, elpd_loo = Σ_i log p(y_i | y_−i),
// with the importance ratios 1 / p(y_i | θ_s) smoothed and diagnosed by psis.hpp.
//
// Computed exactly as R's loo 2.5.1 does it — loo(array, r_eff = relative_eff(exp(array))):
// the relative efficiency of each row's likelihood draws by loo's ess_rfun (Geyer's initial
// monotone sequence over the chains, without rank normalisation or splitting), the tail
// length ⌈min(S/5, 3 √(S / r_eff))⌉, Pareto smoothing, and loo's standard errors, Monte
// Carlo errors and PSIS effective sample sizes — so the numbers agree with it to rounding.
#pragma once

#include <Eigen/Core>

#include <vector>

namespace vbn::inference {

// One data row's results (loo's `pointwise` columns and diagnostics).
struct LooPoint {
    double elpd_loo = 0;       // log p(y_i | y_−i)
    double mcse_elpd_loo = 0;  // its Monte Carlo standard error
    double p_loo = 0;          // lpd_i − elpd_loo_i, lpd_i = log mean_s p(y_i | θ_s)
    double looic = 0;          // −2 elpd_loo
    double pareto_k = 0;       // k̂ of the row's importance ratios (+∞ when none could be fitted)
    double n_eff = 0;          // PSIS effective sample size: r_eff / Σ w²
    double r_eff = 0;          // relative efficiency of exp(log-likelihood) draws
};

struct LooResult {
    std::vector<LooPoint> points;  // per data row
    // Sums over the rows and their standard errors √(N · var), var over the rows.
    double elpd_loo = 0, se_elpd_loo = 0;
    double p_loo = 0, se_p_loo = 0;
    double looic = 0, se_looic = 0;
    // √Σ mcse²; NaN when some k̂ > 0.7 (loo's NA: the Monte Carlo error is then unknown).
    double mcse_elpd_loo = 0;
    int chains = 0, draws = 0;  // draws: all chains' together
};

// Geyer's ESS of one quantity's draws (iterations × chains) as loo's ess_rfun computes it:
// its autocovariances are R's FFT ones, which scale the biased estimate by M/n where M ≥ n
// is the next length with no prime factor above 5; loo uses them so, and so does this.
double loo_ess(const Eigen::Ref<const Eigen::MatrixXd>& x);

// PSIS-LOO of log-likelihood draws, one matrix per chain (iterations × rows, all the same
// shape, finite). Throws std::invalid_argument for no chains, shapes that differ, fewer
// than 2 iterations or a non-finite value.
LooResult psis_loo(const std::vector<Eigen::MatrixXd>& log_lik);

// k̂'s bins as loo counts them: (−∞, 0.5] good, (0.5, 0.7] ok, (0.7, 1] bad, (1, ∞) very bad.
// Returns 0 … 3; NaN counts as very bad.
int pareto_k_bin(double k);

}  // namespace vbn::inference
