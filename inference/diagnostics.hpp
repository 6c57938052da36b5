// Convergence diagnostics over MCMC draws: rank-normalised split R-hat, bulk- and tail-ESS,
// Monte Carlo standard errors of the mean and of quantiles.
//
// Vehtari, Gelman, Simpson, Carpenter, Bürkner (2021), "Rank-normalization, folding, and
// localization: an improved R-hat for assessing convergence of MCMC", computed exactly as
// R's `posterior` package (1.4) does, so the numbers agree with `summarise_draws` to rounding.
//
// Every function takes the draws of ONE scalar quantity as a matrix with one row per
// iteration and one column per chain (all chains the same length). Undefined results (too
// few draws, constant draws, non-finite draws) are NaN, where posterior returns NA.
#pragma once

#include <Eigen/Core>

#include <span>
#include <vector>

namespace vbn::inference {

using DrawsRef = Eigen::Ref<const Eigen::MatrixXd>;  // iterations × chains

// Rank-normalised split R-hat: max of the bulk R-hat (of the z-scaled split chains) and the
// tail R-hat (of the z-scaled folded split chains): the paper's recommended R-hat.
double rhat(const DrawsRef& x);
// The classic (split) potential scale reduction factor sqrt(var⁺ / W) without ranks.
double rhat_basic(const DrawsRef& x, bool split = true);

// ESS of the z-scaled split chains (the paper's bulk-ESS).
double ess_bulk(const DrawsRef& x);
// min of the ESS of I(x ≤ q05) and I(x ≤ q95) (the paper's tail-ESS).
double ess_tail(const DrawsRef& x);
// ESS of I(x ≤ q_prob), q the type-7 quantile of the pooled draws.
double ess_quantile(const DrawsRef& x, double prob);
// ESS of the (split) draws themselves, for the MCSE of the mean.
double ess_basic(const DrawsRef& x, bool split = true);
double ess_mean(const DrawsRef& x);

// sd(x) / sqrt(ess_mean(x)).
double mcse_mean(const DrawsRef& x);
// Half the width of the central ±1 sd interval of the quantile's sampling distribution,
// obtained by inverting the Beta(ess p + 1, ess (1 − p) + 1) law of the quantile's rank
// (the paper's MCSE for quantiles, as posterior's mcse_quantile).
double mcse_quantile(const DrawsRef& x, double prob);

// Type-7 quantile (R's default) of the pooled draws; NaN if any draw is NaN.
double quantile(const DrawsRef& x, double prob);

// Everything a summary row needs, computed with one sort of the pooled draws.
struct ScalarDiagnostics {
    double mean = 0, sd = 0;
    double q5 = 0, q50 = 0, q95 = 0;
    double mcse_mean = 0, mcse_q5 = 0, mcse_q95 = 0;
    double ess_bulk = 0, ess_tail = 0;
    double rhat = 0;
    bool constant = false;   // all draws equal: R-hat and ESS are undefined (NaN)
    bool nonfinite = false;  // some draw is NaN or infinite: every diagnostic is NaN
};
ScalarDiagnostics diagnose(const DrawsRef& x);

// Building blocks, exposed for tests and for other summaries.
namespace diag {

// First half and second half of every chain as separate chains; for an odd length the
// middle draw is dropped (as posterior does). A single iteration is returned unchanged.
Eigen::MatrixXd split_chains(const DrawsRef& x);
// Φ⁻¹((r − 3/8) / (S + 1/4)), r the average rank among all S draws (Blom's offset, the
// paper's rank normalisation).
Eigen::MatrixXd z_scale(const DrawsRef& x);
// |x − median(x)| (the paper's folding, which makes R-hat see differences in scale).
Eigen::MatrixXd fold(const DrawsRef& x);

// Biased autocovariance γ_k = (1/n) Σ_{i<n−k} (x_i − x̄)(x_{i+k} − x̄), k = 0 … n−1, all zero
// for a constant series. Chains of up to kDirectAutocovarianceMax draws are done directly
// (O(n²), and faster than the FFT below about a thousand draws); longer ones by a radix-2
// FFT zero-padded to at least 2n, so circular wrap-around cannot mix lags (O(n log n)).
inline constexpr int kDirectAutocovarianceMax = 1024;
void autocovariance(std::span<const double> x, std::span<double> out);
void autocovariance_direct(std::span<const double> x, std::span<double> out);
void autocovariance_fft(std::span<const double> x, std::span<double> out);

// ESS by Geyer's initial positive sequence with the initial monotone adjustment
// (Geyer 1992, as in the paper's ESS estimator), on the chains as given (no splitting,
// no scaling). Lags are computed directly in rounds (8, 16, 32, 64), which settles
// well-mixing chains after the first; a chain whose sequence runs longer gets every lag from
// autocovariance().
double ess_raw(const DrawsRef& x);
// sqrt(((n − 1)/n · W + B/n) / W) on the chains as given.
double rhat_raw(const DrawsRef& x);
// The same two without the check that every draw is finite and not all are equal (NaN
// otherwise, as posterior gives): for callers that know it already.
double ess_raw_defined(const DrawsRef& x);
double rhat_raw_defined(const DrawsRef& x);

// Type-7 quantile of already sorted values.
double quantile_sorted(std::span<const double> sorted, double prob);

}  // namespace diag
}  // namespace vbn::inference
