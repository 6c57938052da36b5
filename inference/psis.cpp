#include "inference/psis.hpp"

#include "inference/math.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace vbn::inference {

GpdFit gpd_fit(const std::vector<double>& x, bool weakly_informative_prior) {
    const auto n = static_cast<int>(x.size());
    constexpr double inf = std::numeric_limits<double>::infinity();
    if (n == 0) return {inf, 0};
    constexpr double prior = 3;
    const int m = 30 + static_cast<int>(std::floor(std::sqrt(static_cast<double>(n))));
    // First quartile of the sample (R's 1-based x[floor(n/4 + 0.5)], at least the first).
    const int q = std::max(1, static_cast<int>(std::floor(n / 4.0 + 0.5)));
    const double xstar = x[static_cast<std::size_t>(q - 1)];
    const double xmax = x.back();
    std::vector<double> theta(static_cast<std::size_t>(m)), l(static_cast<std::size_t>(m));
    for (int j = 1; j <= m; ++j) {
        const double t = 1 / xmax + (1 - std::sqrt(m / (j - 0.5))) / prior / xstar;
        // Profile log-likelihood n · (log(a / k) − k − 1) with a = −θ, k = mean log1p(a x).
        double k = 0;
        for (double xi : x) k += std::log1p(-t * xi);
        k /= n;
        theta[static_cast<std::size_t>(j - 1)] = t;
        l[static_cast<std::size_t>(j - 1)] = n * (std::log(-t / k) - k - 1);
    }
    const double lse = log_sum_exp(l.begin(), l.end());
    double theta_hat = 0;
    for (int j = 0; j < m; ++j)
        theta_hat += theta[static_cast<std::size_t>(j)] * std::exp(l[static_cast<std::size_t>(j)] - lse);
    double k = 0;
    for (double xi : x) k += std::log1p(-theta_hat * xi);
    k /= n;
    GpdFit fit{k, -k / theta_hat};
    if (weakly_informative_prior) {
        constexpr double a = 10;
        fit.k = k * n / (n + a) + a * 0.5 / (n + a);
    }
    if (std::isnan(fit.k)) fit.k = inf;
    return fit;
}

int pareto_tail_length(int draws, double r_eff) {
    const double s = draws;
    return static_cast<int>(std::ceil(std::min(0.2 * s, 3 * std::sqrt(s / r_eff))));
}

namespace {

// The tail PSIS fits: the indices of the largest pareto_tail_length(S) log ratios in
// ascending order, the largest log ratio, the cutoff (the next ratio, relative to the
// largest) and the exceedances over it. False where pareto_k is +∞.
struct Tail {
    std::vector<Eigen::Index> order;  // all indices, ascending by log ratio
    std::size_t first = 0;            // where the tail starts in order
    double top = 0;
    double cutoff = 0;
    std::vector<double> exceedances;
};

bool pareto_tail(const Eigen::Ref<const Eigen::VectorXd>& lw, int m, Tail& t) {
    const auto s = static_cast<int>(lw.size());
    if (m < 5 || m >= s || lw.hasNaN()) return false;
    t.top = lw.maxCoeff();
    if (!std::isfinite(t.top)) return false;
    t.order.resize(static_cast<std::size_t>(s));
    std::iota(t.order.begin(), t.order.end(), Eigen::Index{0});
    std::stable_sort(t.order.begin(), t.order.end(), [&](Eigen::Index a, Eigen::Index b) { return lw[a] < lw[b]; });
    t.first = static_cast<std::size_t>(s - m);
    auto rel = [&](std::size_t i) { return lw[t.order[i]] - t.top; };
    if (std::abs(rel(t.order.size() - 1) - rel(t.first)) < std::numeric_limits<double>::epsilon() / 100) return false;
    t.cutoff = std::exp(rel(t.first - 1));
    t.exceedances.clear();
    t.exceedances.reserve(static_cast<std::size_t>(m));
    for (std::size_t i = t.first; i < t.order.size(); ++i) t.exceedances.push_back(std::exp(rel(i)) - t.cutoff);
    return true;
}

// Inverse CDF of the generalized Pareto distribution with location 0.
double gpd_quantile(double p, double k, double sigma) {
    if (std::abs(k) < 1e-12) return -sigma * std::log1p(-p);
    return sigma * std::expm1(-k * std::log1p(-p)) / k;
}

}  // namespace

double importance_ess(const Eigen::Ref<const Eigen::VectorXd>& log_w) {
    if (log_w.size() == 0) return 0;
    const double top = log_w.maxCoeff();
    if (!(top > -std::numeric_limits<double>::infinity())) return 0;
    const Eigen::VectorXd w = (log_w.array() - top).exp();
    return w.sum() * w.sum() / w.squaredNorm();
}

double pareto_k(const Eigen::Ref<const Eigen::VectorXd>& log_ratios) {
    Tail t;
    if (!pareto_tail(log_ratios, pareto_tail_length(static_cast<int>(log_ratios.size())), t))
        return std::numeric_limits<double>::infinity();
    return gpd_fit(t.exceedances).k;
}

double pareto_smooth(Eigen::Ref<Eigen::VectorXd> log_ratios) {
    return pareto_smooth(log_ratios, pareto_tail_length(static_cast<int>(log_ratios.size())));
}

double pareto_smooth(Eigen::Ref<Eigen::VectorXd> log_ratios, int tail_length) {
    Tail t;
    if (!pareto_tail(log_ratios, tail_length, t)) return std::numeric_limits<double>::infinity();
    const GpdFit fit = gpd_fit(t.exceedances);
    if (!std::isfinite(fit.k)) return fit.k;
    const auto m = t.exceedances.size();
    for (std::size_t j = 0; j < m; ++j) {
        const double p = (static_cast<double>(j) + 0.5) / static_cast<double>(m);
        const double smoothed = std::log(gpd_quantile(p, fit.k, fit.sigma) + t.cutoff);
        log_ratios[t.order[t.first + j]] = std::min(smoothed, 0.0) + t.top;
    }
    return fit.k;
}

void weighted_moments(const Eigen::MatrixXd& draws, const Eigen::VectorXd& w, Eigen::VectorXd& mean,
                      Eigen::MatrixXd& cov) {
    mean = draws * w;
    const Eigen::MatrixXd centred = draws.colwise() - mean;
    cov = centred * w.asDiagonal() * centred.transpose();
}

}  // namespace vbn::inference
