#include "inference/loo.hpp"

#include "inference/diagnostics.hpp"
#include "inference/math.hpp"
#include "inference/psis.hpp"

#include <boost/math/distributions/normal.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>

namespace vbn::inference {

namespace {

using Index = Eigen::Index;

// R's fft_next_good_size in loo: the least m ≥ n with no prime factor above 5 (2 for n ≤ 2).
long next_good_size(long n) {
    if (n <= 2) return 2;
    for (;; ++n) {
        long m = n;
        for (long p : {2L, 3L, 5L})
            while (m % p == 0) m /= p;
        if (m <= 1) return n;
    }
}

// Mean over chains of loo's autocovariances (see loo_ess), lags 0 … n−1.
Eigen::VectorXd mean_loo_autocovariance(const Eigen::Ref<const Eigen::MatrixXd>& x) {
    const Index n = x.rows();
    const double scale = static_cast<double>(next_good_size(n)) / static_cast<double>(n);
    Eigen::VectorXd mean = Eigen::VectorXd::Zero(n), one(n);
    Eigen::VectorXd chain(n);
    for (Index j = 0; j < x.cols(); ++j) {
        chain = x.col(j);
        diag::autocovariance(std::span<const double>(chain.data(), static_cast<std::size_t>(n)),
                             std::span<double>(one.data(), static_cast<std::size_t>(n)));
        mean += one;
    }
    return mean * (scale / static_cast<double>(x.cols()));
}

double sample_variance(const Eigen::Ref<const Eigen::VectorXd>& v) {
    if (v.size() < 2) return std::numeric_limits<double>::quiet_NaN();
    return (v.array() - v.mean()).square().sum() / static_cast<double>(v.size() - 1);
}

}  // namespace

// A line-by-line transcription of loo:::ess_rfun (R's 1-based rho_hat_t[i] is rho[i − 1]).
double loo_ess(const Eigen::Ref<const Eigen::MatrixXd>& x) {
    const Index n = x.rows();
    const Index chains = x.cols();
    const Eigen::VectorXd acov = mean_loo_autocovariance(x);
    const double mean_var = acov[0] * static_cast<double>(n) / static_cast<double>(n - 1);
    double var_plus = mean_var * static_cast<double>(n - 1) / static_cast<double>(n);
    if (chains > 1) var_plus += sample_variance(x.colwise().mean().transpose());
    Eigen::VectorXd rho = Eigen::VectorXd::Zero(n);
    auto at = [&](Index t) { return 1 - (mean_var - acov[t]) / var_plus; };
    Index t = 0;
    double even = 1, odd = at(1);
    rho[0] = even;
    rho[1] = odd;
    while (t < n - 5 && !std::isnan(even + odd) && even + odd > 0) {
        t += 2;
        even = at(t);
        odd = at(t + 1);
        if (even + odd >= 0) {
            rho[t] = even;
            rho[t + 1] = odd;
        }
    }
    const Index max_t = t;
    if (even > 0) rho[max_t] = even;
    // The initial monotone sequence.
    for (t = 0; t <= max_t - 4;) {
        t += 2;
        if (rho[t] + rho[t + 1] > rho[t - 2] + rho[t - 1]) {
            rho[t] = (rho[t - 2] + rho[t - 1]) / 2;
            rho[t + 1] = rho[t];
        }
    }
    const double ess = static_cast<double>(chains * n);
    // R's sum(rho_hat_t[1:max_t]): 1:0 is c(1, 0), which selects the first element alone.
    const double head = rho.head(std::max<Index>(max_t, 1)).sum();
    const double tau = std::max(-1 + 2 * head + rho[max_t], 1 / std::log10(ess));
    return ess / tau;
}

int pareto_k_bin(double k) {
    if (k <= 0.5) return 0;
    if (k <= 0.7) return 1;
    if (k <= 1) return 2;
    return 3;
}

namespace {

// The draws of one row as iterations × chains.
Eigen::MatrixXd row_draws(const std::vector<Eigen::MatrixXd>& log_lik, Index row) {
    Eigen::MatrixXd x(log_lik[0].rows(), static_cast<Index>(log_lik.size()));
    for (std::size_t c = 0; c < log_lik.size(); ++c) x.col(static_cast<Index>(c)) = log_lik[c].col(row);
    return x;
}

// loo:::mcse_elpd with its 1,000 normal quantiles: the sd of log E[p] under a normal
// approximation of the weighted likelihood's sampling distribution, over √r_eff.
double mcse_elpd(const Eigen::VectorXd& ll, const Eigen::VectorXd& w, double elpd, double r_eff) {
    constexpr int n = 1000;
    constexpr double c = 3.0 / 8;
    const double e_epd = std::exp(elpd);
    const double var_epd = (w.array().square() * (ll.array().exp() - e_epd).square()).sum();
    const double sd_epd = std::sqrt(var_epd);
    const boost::math::normal normal;
    Eigen::VectorXd logs(n);
    Index kept = 0;
    for (int r = 1; r <= n; ++r) {
        const double z = e_epd + sd_epd * boost::math::quantile(normal, (r - c) / (n - 2 * c + 1));
        if (z > 0) logs[kept++] = std::log(z);
    }
    return std::sqrt(sample_variance(logs.head(kept)) / r_eff);
}

LooPoint loo_point(const std::vector<Eigen::MatrixXd>& log_lik, Index row) {
    const Eigen::MatrixXd x = row_draws(log_lik, row);
    const Index s = x.size();
    const Eigen::VectorXd ll = x.reshaped();  // chain after chain, as loo's llarray_to_matrix
    LooPoint p;
    p.r_eff = loo_ess(x.array().exp().matrix()) / static_cast<double>(s);
    Eigen::VectorXd lw = -ll;
    p.pareto_k = pareto_smooth(lw, pareto_tail_length(static_cast<int>(s), p.r_eff));
    lw.array() -= log_sum_exp(lw.data(), lw.data() + s);
    const Eigen::VectorXd terms = ll + lw;
    p.elpd_loo = log_sum_exp(terms.data(), terms.data() + s);
    const double lpd = log_sum_exp(ll.data(), ll.data() + s) - std::log(static_cast<double>(s));
    p.p_loo = lpd - p.elpd_loo;
    p.looic = -2 * p.elpd_loo;
    const Eigen::VectorXd w = lw.array().exp().matrix();
    p.n_eff = p.r_eff / w.squaredNorm();
    p.mcse_elpd_loo = mcse_elpd(ll, w, p.elpd_loo, p.r_eff);
    return p;
}

// Sum and √(N · var) of one column of the pointwise results (loo's table_of_estimates).
template <class Get>
void estimate(const std::vector<LooPoint>& points, Get get, double& sum, double& se) {
    Eigen::VectorXd v(static_cast<Index>(points.size()));
    for (std::size_t i = 0; i < points.size(); ++i) v[static_cast<Index>(i)] = get(points[i]);
    sum = v.sum();
    se = std::sqrt(static_cast<double>(v.size()) * sample_variance(v));
}

void check_shapes(const std::vector<Eigen::MatrixXd>& log_lik) {
    if (log_lik.empty()) throw std::invalid_argument("no chains of log-likelihood draws");
    const Eigen::MatrixXd& first = log_lik[0];
    if (first.rows() < 2) throw std::invalid_argument("fewer than 2 draws per chain");
    if (first.cols() < 1) throw std::invalid_argument("no log-likelihood columns");
    for (std::size_t c = 0; c < log_lik.size(); ++c) {
        const Eigen::MatrixXd& m = log_lik[c];
        if (m.rows() != first.rows() || m.cols() != first.cols())
            throw std::invalid_argument("chain " + std::to_string(c + 1) + " has " + std::to_string(m.rows()) + " draws of " +
                                        std::to_string(m.cols()) + " rows, chain 1 " + std::to_string(first.rows()) +
                                        " of " + std::to_string(first.cols()));
        if (!m.allFinite()) throw std::invalid_argument("chain " + std::to_string(c + 1) + " has a non-finite value");
    }
}

}  // namespace

LooResult psis_loo(const std::vector<Eigen::MatrixXd>& log_lik) {
    check_shapes(log_lik);
    LooResult r;
    r.chains = static_cast<int>(log_lik.size());
    r.draws = static_cast<int>(log_lik[0].rows()) * r.chains;
    const Index rows = log_lik[0].cols();
    r.points.reserve(static_cast<std::size_t>(rows));
    for (Index i = 0; i < rows; ++i) r.points.push_back(loo_point(log_lik, i));
    estimate(r.points, [](const LooPoint& p) { return p.elpd_loo; }, r.elpd_loo, r.se_elpd_loo);
    estimate(r.points, [](const LooPoint& p) { return p.p_loo; }, r.p_loo, r.se_p_loo);
    estimate(r.points, [](const LooPoint& p) { return p.looic; }, r.looic, r.se_looic);
    double mc_var = 0;
    bool unknown = false;
    for (const LooPoint& p : r.points) {
        mc_var += p.mcse_elpd_loo * p.mcse_elpd_loo;
        unknown = unknown || p.pareto_k > 0.7;
    }
    r.mcse_elpd_loo = unknown ? std::numeric_limits<double>::quiet_NaN() : std::sqrt(mc_var);
    return r;
}

}  // namespace vbn::inference
