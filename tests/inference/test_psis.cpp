// Pareto-k̂ against R's `loo` 2.5.1 (loo::psis(lr, r_eff = 1)$diagnostics$pareto_k and
// loo::gpdfit), on log ratios given by closed-form quantiles so that both sides see the same
// numbers: u_i = (i − 0.5)/S, Pareto ratios (1 − u)^(−k) and log-normal ratios exp(s Φ⁻¹(u)).
// The fixtures come from
//   Rscript -e 'library(loo); f <- function(lr) psis(lr, r_eff = 1)$diagnostics$pareto_k;
//     u <- function(S) ((1:S) - 0.5) / S; options(digits = 17);
//     f(-0.3 * log(1 - u(1000))); f(-0.9 * log(1 - u(4000))); f(qnorm(u(100))); f(2 * qnorm(u(2000)));
//     f(0.5 * qnorm(u(30))); x <- sort(-0.3 * log1p(-u(1000)));
//     gpdfit(exp(x[901:1000] - max(x)) - exp(x[900] - max(x)))'
// and the smoothed log ratios from
//   Rscript -e 'library(loo); u <- function(S) ((1:S) - 0.5) / S; options(digits = 17);
//     for (lr in list(-0.9 * log1p(-u(4000)), 2 * qnorm(u(2000)))) {
//       lw <- weights(psis(lr, r_eff = 1), log = TRUE, normalize = FALSE); S <- length(lr);
//       print(c(log(sum(exp(lw))), lw[S], lw[S - 1], lw[S - 50], lw[1])) }'
#include "inference/psis.hpp"

#include "inference/math.hpp"
#include "inference/rng.hpp"

#include <boost/math/distributions/normal.hpp>
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

using namespace vbn::inference;

namespace {

double u(int i, int s) { return (i + 0.5) / s; }

Eigen::VectorXd pareto_log_ratios(int s, double k) {
    Eigen::VectorXd lr(s);
    for (int i = 0; i < s; ++i) lr[i] = -k * std::log1p(-u(i, s));
    return lr;
}

Eigen::VectorXd lognormal_log_ratios(int s, double sd) {
    const boost::math::normal n;
    Eigen::VectorXd lr(s);
    // Written in a shuffled order: k̂ must not depend on it.
    for (int i = 0; i < s; ++i) lr[(i * 7919) % s] = sd * boost::math::quantile(n, u(i, s));
    return lr;
}
}  // namespace

TEST_CASE("psis: pareto_k matches loo::psis") {
    CHECK(pareto_k(pareto_log_ratios(1000, 0.3)) == doctest::Approx(0.32356064382606697).epsilon(1e-10));
    CHECK(pareto_k(pareto_log_ratios(4000, 0.9)) == doctest::Approx(0.87032083416222228).epsilon(1e-10));
    CHECK(pareto_k(lognormal_log_ratios(100, 1.0)) == doctest::Approx(0.36814005579952935).epsilon(1e-10));
    CHECK(pareto_k(lognormal_log_ratios(2000, 2.0)) == doctest::Approx(0.64535538254528946).epsilon(1e-10));
    CHECK(pareto_k(lognormal_log_ratios(30, 0.5)) == doctest::Approx(0.30866818263939688).epsilon(1e-10));
}

TEST_CASE("psis: gpd_fit matches loo::gpdfit") {
    const int s = 1000;
    Eigen::VectorXd lr = pareto_log_ratios(s, 0.3);
    const double top = lr[s - 1];
    std::vector<double> x;
    for (int i = 900; i < s; ++i) x.push_back(std::exp(lr[i] - top) - std::exp(lr[899] - top));
    const GpdFit f = gpd_fit(x);
    CHECK(f.k == doctest::Approx(0.32283619210244568).epsilon(1e-10));
    CHECK(f.sigma == doctest::Approx(0.060929934037065245).epsilon(1e-10));
}

TEST_CASE("psis: a shift of the log ratios does not change k̂; degenerate inputs give +inf") {
    Eigen::VectorXd lr = lognormal_log_ratios(500, 1.5);
    const double k = pareto_k(lr);
    CHECK(pareto_k((lr.array() + 1e4).matrix()) == doctest::Approx(k).epsilon(1e-9));
    CHECK(pareto_k((lr.array() - 1e4).matrix()) == doctest::Approx(k).epsilon(1e-9));
    constexpr double inf = std::numeric_limits<double>::infinity();
    CHECK(pareto_k(Eigen::VectorXd::Zero(1000)) == inf);  // all ratios equal: nothing to fit
    CHECK(pareto_k(Eigen::VectorXd::Zero(20)) == inf);    // a tail of 4 draws
    lr[3] = std::numeric_limits<double>::quiet_NaN();
    CHECK(pareto_k(lr) == inf);
    CHECK(pareto_tail_length(4000) == 190);
    CHECK(pareto_tail_length(100) == 20);
}

TEST_CASE("psis: pareto_smooth matches loo::psis's smoothed log weights") {
    struct Case {
        Eigen::VectorXd lr;
        double log_total, last, second, fifty_first, first;
    };
    const boost::math::normal n;
    Eigen::VectorXd normal(2000);
    for (int i = 0; i < 2000; ++i) normal[i] = 2 * boost::math::quantile(n, u(i, 2000));
    const Case cases[] = {
        {pareto_log_ratios(4000, 0.9), 10.122130883073169, 7.9547826460575477, 6.9982346847511110, 3.9243453548348768,
         1.1250703183662836e-04},
        {normal, 9.5647997368546829, 6.9615128086924845, 6.3943641602843142, 3.9026187305062114, -6.9615128086924258},
    };
    for (const Case& c : cases) {
        Eigen::VectorXd lw = c.lr;
        const auto s = lw.size();
        const double k = pareto_smooth(lw);
        CHECK(k == pareto_k(c.lr));
        CHECK(log_sum_exp(lw.data(), lw.data() + s) == doctest::Approx(c.log_total).epsilon(1e-10));
        CHECK(lw[s - 1] == doctest::Approx(c.last).epsilon(1e-10));
        CHECK(lw[s - 2] == doctest::Approx(c.second).epsilon(1e-10));
        CHECK(lw[s - 51] == doctest::Approx(c.fifty_first).epsilon(1e-10));
        CHECK(lw[0] == c.lr[0]);  // below the tail: untouched
        CHECK(lw[0] == doctest::Approx(c.first).epsilon(1e-10));
    }
    // Where k̂ is +inf nothing is smoothed.
    Eigen::VectorXd flat = Eigen::VectorXd::Zero(1000);
    CHECK(pareto_smooth(flat) == std::numeric_limits<double>::infinity());
    CHECK(flat.isZero());
}

TEST_CASE("psis: pareto_smooth recovers a known generalised Pareto tail") {
    const long s = 4000;
    const double m = pareto_tail_length(static_cast<int>(s));
    for (double k : {0.3, 0.8}) {
        CAPTURE(k);
        Rng rng(11, static_cast<std::uint64_t>(k * 10));
        Eigen::VectorXd lw(s);
        // w = U^(−k) is Pareto with tail index 1/k: its exceedances are GPD with shape k.
        for (long i = 0; i < s; ++i) lw[i] = -k * std::log(1 - rng.uniform());
        Eigen::VectorXd smoothed = lw;
        const double khat = pareto_smooth(smoothed);
        // The estimator's sd is about (1 + k)/√M over M tail draws.
        CHECK(std::abs(khat - k) < 4 * (1 + k) / std::sqrt(m));
        // Smoothing changes only the tail and never raises the largest weight.
        CHECK(smoothed.maxCoeff() <= lw.maxCoeff());
        long changed = 0;
        for (long i = 0; i < s; ++i) changed += smoothed[i] != lw[i];
        CHECK(changed <= static_cast<long>(m));
    }
    SUBCASE("bounded weights have a negative shape") {
        Rng rng(12);
        Eigen::VectorXd lw(s);
        for (long i = 0; i < s; ++i) lw[i] = std::log(rng.uniform());  // w ~ Uniform(0, 1)
        CHECK(pareto_smooth(lw) < 0);
    }
}

TEST_CASE("psis: the importance ESS is N for equal weights, 1 for one weight, and shift-invariant") {
    Eigen::VectorXd log_w = Eigen::VectorXd::Constant(50, -3.0);
    CHECK(importance_ess(log_w) == doctest::Approx(50));
    log_w[7] = 800;  // exp would overflow without the shift
    CHECK(importance_ess(log_w) == doctest::Approx(1));
    Eigen::VectorXd two(2);
    two << 0.0, std::log(3.0);  // weights 1 and 3: 16 / 10
    CHECK(importance_ess(two) == doctest::Approx(1.6));
    CHECK(importance_ess((two.array() - 1000).matrix()) == doctest::Approx(1.6));
    CHECK(importance_ess(Eigen::VectorXd::Constant(3, -std::numeric_limits<double>::infinity())) == 0);
}
