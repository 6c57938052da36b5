// jj_lambda_log_inv_logit (inference/math.hpp): the batch form of jj_lambda and log_inv_logit
// that a variational fit evaluates at every pattern, against the scalar forms over the values
// of ξ a fit meets, both signs, the switch from the series at |ξ| = 0.2 and the ends; and
// jj_lambda's own series near 0 against tanh; and spin_moments, a hidden value's mean and
// variance from one exp, against tanh and the logistic.
#include "inference/math.hpp"

#include "inference/rng.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

using namespace vbn::inference;

namespace {

// The spacing of doubles at |v| (at least that at 1 when one_floor: an absolute error
// measured against 1 for values below it).
double spacing(double v, bool one_floor = false) {
    const double a = one_floor ? std::max(std::abs(v), 1.0) : std::abs(v);
    return std::max(std::nextafter(a, 2 * a + 1) - a, std::numeric_limits<double>::denorm_min());
}

}  // namespace

TEST_CASE("jj_lambda near 0: its series is tanh(ξ/2) / (4ξ)") {
    for (double xi : {1e-8, 1e-6, 3e-5, 9.99e-5}) {
        CAPTURE(xi);
        const long double x = xi / 2.0L;
        const long double exact = std::tanh(x) / (8 * x);
        CHECK(std::abs(static_cast<long double>(jj_lambda(xi)) - exact) <= spacing(0.125));
    }
}

TEST_CASE("jj_lambda_log_inv_logit agrees with jj_lambda and log_inv_logit") {
    std::vector<double> xi{0.0, 1e-300, 1e-10, 1e-4, 0.02, 0.1999999, 0.2, 0.2000001, 0.5, 1.0, 30.0, 700.0, 708.0, 745.0, 800.0, 1e300};
    Rng rng(5);
    for (int i = 0; i < 20000; ++i) xi.push_back(std::ldexp(rng.uniform(), static_cast<int>(rng.uniform() * 14) - 10));
    for (int i = 0; i < 20000; ++i) xi.push_back(0.4 * rng.uniform());
    const auto positive = xi.size();
    for (std::size_t i = 0; i < positive; ++i) xi.push_back(-xi[i]);
    std::vector<double> lambda(xi.size()), log_g(xi.size());
    jj_lambda_log_inv_logit(xi.data(), static_cast<Eigen::Index>(xi.size()), lambda.data(), log_g.data());
    double worst_lambda = 0, worst_log_g = 0;
    for (std::size_t i = 0; i < xi.size(); ++i) {
        const double want_lambda = jj_lambda(xi[i]), want_log_g = log_inv_logit(xi[i]);
        worst_lambda = std::max(worst_lambda, std::abs(lambda[i] - want_lambda) / spacing(want_lambda));
        // log(1 + e) is good to an ulp of 1 in absolute terms: all a sum of bounds can use.
        worst_log_g = std::max(worst_log_g, std::abs(log_g[i] - want_log_g) / spacing(want_log_g, true));
    }
    // The same bits wherever the output lies: at every offset from an aligned address, and for
    // the values a few at a time (a component's factors) as for all at once.
    std::vector<double> wide(xi.size() + 8), wide_g(xi.size() + 8);
    for (std::size_t shift = 0; shift < 8; ++shift) {
        jj_lambda_log_inv_logit(xi.data(), static_cast<Eigen::Index>(xi.size()), wide.data() + shift, wide_g.data() + shift);
        for (std::size_t i = 0; i < xi.size(); ++i) {
            REQUIRE(wide[i + shift] == lambda[i]);
            REQUIRE(wide_g[i + shift] == log_g[i]);
        }
    }
    for (std::size_t at = 0; at + 17 <= xi.size(); at += 17 * 101) {
        double few[17], few_g[17];
        jj_lambda_log_inv_logit(xi.data() + at, 17, few, few_g);
        for (std::size_t i = 0; i < 17; ++i) REQUIRE(few[i] == lambda[at + i]);
    }
    // Just above |ξ| = 0.2 the direct form's error is e's (1 ulp, over 1 − e = 0.18: 5.5 ulps
    // of λ) and four roundings, against jj_lambda's own ulp: 10 ulps at most.
    CHECK(worst_lambda <= 10);
    CHECK(worst_log_g <= 1);
    MESSAGE("largest differences: lambda " << worst_lambda << " ulp, log g " << worst_log_g << " ulp of max(1, |log g|)");
    // The limits: λ(0) = 1/8, log g(0) = −log 2; far out λ = 1/(4|ξ|), log g(−ξ) = −ξ.
    CHECK(lambda[0] == 0.125);
    CHECK(log_g[0] == -std::log(2.0));
    CHECK(lambda[15] == 0.25 / 1e300);
    CHECK(log_g[positive + 15] == -1e300);
    CHECK(log_g[15] == 0.0);
}

TEST_CASE("spin_moments: tanh(d/2) and 4 g(d) g(-d) from one exp, over the natural parameters a fit meets") {
    std::vector<double> d{0.0, 1e-300, 1e-10, 1e-4, 0.02, 0.1999999, 0.2, 0.2000001, 0.5, 1.0, 30.0, 700.0, 745.0, 800.0, 1e300};
    Rng rng(7);
    for (int i = 0; i < 20000; ++i) d.push_back(std::ldexp(rng.uniform(), static_cast<int>(rng.uniform() * 14) - 10));
    for (int i = 0; i < 20000; ++i) d.push_back(0.4 * rng.uniform());
    const auto positive = d.size();
    for (std::size_t i = 0; i < positive; ++i) d.push_back(-d[i]);
    double worst_mean = 0, worst_var = 0;
    for (const double x : d) {
        double mean = 0, var = 0;
        spin_moments(x, mean, var);
        const double want_mean = std::tanh(x / 2), want_var = 4 * inv_logit(x) * inv_logit(-x);
        // The mean to ulps of itself (the series below |d| = 0.2; the direct form above it loses
        // what e's ulp is against 1 − e, at most 5.5 ulps at 0.2), the variance to ulps of itself.
        worst_mean = std::max(worst_mean, std::abs(mean - want_mean) / spacing(want_mean));
        worst_var = std::max(worst_var, std::abs(var - want_var) / spacing(want_var));
        REQUIRE((x < 0) == (mean < 0));
    }
    CHECK(worst_mean <= 10);
    CHECK(worst_var <= 10);
    MESSAGE("largest differences: mean " << worst_mean << " ulp, variance " << worst_var << " ulp");
    double mean = 1, var = 0;
    spin_moments(0.0, mean, var);
    CHECK(mean == 0.0);
    CHECK(var == 1.0);
    spin_moments(-1e300, mean, var);
    CHECK(mean == -1.0);
    CHECK(var == 0.0);
}
