#include "inference/psis.hpp"

#include "inference/math.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

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

int pareto_tail_length(int draws) {
    const double s = draws;
    return static_cast<int>(std::ceil(std::min(0.2 * s, 3 * std::sqrt(s))));
}

double pareto_k(const Eigen::Ref<const Eigen::VectorXd>& log_ratios) {
    constexpr double inf = std::numeric_limits<double>::infinity();
    const auto s = static_cast<int>(log_ratios.size());
    const int m = pareto_tail_length(s);
    if (m < 5 || m >= s || log_ratios.hasNaN()) return inf;
    std::vector<double> lw(log_ratios.data(), log_ratios.data() + s);
    const double top = *std::max_element(lw.begin(), lw.end());
    if (!std::isfinite(top)) return inf;
    for (double& v : lw) v -= top;
    std::sort(lw.begin(), lw.end());
    const auto first = static_cast<std::size_t>(s - m);
    if (std::abs(lw.back() - lw[first]) < std::numeric_limits<double>::epsilon() / 100) return inf;
    const double cutoff = std::exp(lw[first - 1]);
    std::vector<double> x;
    x.reserve(static_cast<std::size_t>(m));
    for (std::size_t i = first; i < lw.size(); ++i) x.push_back(std::exp(lw[i]) - cutoff);
    return gpd_fit(x).k;
}

}  // namespace vbn::inference
