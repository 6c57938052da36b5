// Stable scalar primitives (and one batch form of two of them). One each, used everywhere;
// never re-derived inline.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>

#include <math.h>  // lgamma_r

#include <Eigen/Core>

#include "inference/exp_nonpositive.hpp"

namespace vbn::inference {

// log(1 + exp(x)) without overflow or loss of precision.
// log Γ(x) without touching the global `signgam` that std::lgamma sets: proposals and
// mixtures are built inside worker threads, where std::lgamma is a data race.
inline double log_gamma(double x) {
    int sign = 0;
    return ::lgamma_r(x, &sign);
}

// ψ(x) = d/dx log Γ(x), x > 0: the recurrence ψ(x) = ψ(x + 1) − 1/x up to x ≥ 6, then the
// asymptotic series log x − 1/(2x) − Σ B_2k/(2k x^2k) to x^-12 (error below 1e-15 there).
inline double digamma(double x) {
    double shift = 0;
    while (x < 6) {
        shift -= 1 / x;
        x += 1;
    }
    const double r = 1 / (x * x);
    const double series =
        r * (1.0 / 12 - r * (1.0 / 120 - r * (1.0 / 252 - r * (1.0 / 240 - r * (1.0 / 132 - r * 691.0 / 32760)))));
    return shift + std::log(x) - 0.5 / x - series;
}

inline double log1p_exp(double x) {
    if (x > 0) return x + std::log1p(std::exp(-x));
    return std::log1p(std::exp(x));
}

// log g(x) = log(1 / (1 + exp(-x))), g the logistic function.
inline double log_inv_logit(double x) { return -log1p_exp(-x); }

// log g(x) together with g(-x) = d/dx log g(x), from one exp: the pair a logistic
// likelihood term and its gradient need. Same values as log_inv_logit(x), inv_logit(-x).
inline double log_inv_logit_with_derivative(double x, double& derivative) {
    const double e = std::exp(-std::abs(x));
    derivative = (x >= 0 ? e : 1.0) / (1.0 + e);
    return std::min(x, 0.0) - std::log1p(e);
}

// g(x) = 1 / (1 + exp(-x)), accurate in both tails.
inline double inv_logit(double x) {
    if (x >= 0) return 1.0 / (1.0 + std::exp(-x));
    const double e = std::exp(x);
    return e / (1.0 + e);
}

inline double logit(double p) { return std::log(p) - std::log1p(-p); }

// log(exp(a) + exp(b)).
inline double log_sum_exp(double a, double b) {
    if (a == -std::numeric_limits<double>::infinity()) return b;
    if (b == -std::numeric_limits<double>::infinity()) return a;
    const double m = std::max(a, b);
    return m + std::log1p(std::exp(-std::abs(a - b)));
}

// log Σ exp(x_k) over a range.
template <class It>
double log_sum_exp(It first, It last) {
    if (first == last) return -std::numeric_limits<double>::infinity();
    const double m = *std::max_element(first, last);
    if (!std::isfinite(m)) return m;
    double s = 0;
    for (It it = first; it != last; ++it) s += std::exp(*it - m);
    return m + std::log(s);
}

// Jaakkola–Jordan λ(ξ) = tanh(ξ/2) / (4ξ), with its limit 1/8 at ξ = 0 (the papers' φ(ξ)).
inline double jj_lambda(double xi) {
    const double a = std::abs(xi);
    if (a < 1e-4) return 0.125 - a * a / 96.0;  // 1/8 (1 - x²/3), x = a/2
    return std::tanh(a / 2.0) / (4.0 * a);
}

// jj_lambda and log_inv_logit of n values at once (a fit's patterns), from one e = exp(−|ξ|)
// each, in loops the compiler vectorises (a tanh, an exp and a log1p each from the C library
// were a fifth of a variational fit's time at 20 weights): λ = tanh(x) / (8x), x = |ξ|/2, with
// tanh(x) = (1 − e) / (1 + e) from |ξ| = 0.2 on and below it by the series of tanh(x)/x to
// x^14 (1 − e would lose digits; the next term is under 1e-19 there), and log g(ξ) =
// min(ξ, 0) − log(1 + e) by Eigen's vectorised log. λ is within 10 ulps of jj_lambda, and
// log g within an ulp of max(1, |log g|) of log_inv_logit: what a sum of bounds over patterns
// can use (tests/inference/test_math.cpp).
inline void jj_lambda_log_inv_logit(const double* xi, Eigen::Index n, double* lambda, double* log_g) {
    // e goes into log_g first, then log g in its place.
    for (Eigen::Index t = 0; t < n; ++t) log_g[t] = exp_nonpositive(-std::abs(xi[t]));
    for (Eigen::Index t = 0; t < n; ++t) {
        const double a = std::abs(xi[t]), y = 0.25 * a * a, e = log_g[t];
        // tanh(x)/x = Σ c_k x^2k: 1, −1/3, 2/15, −17/315, 62/2835, −1382/155925, 21844/6081075, −929569/638512875.
        double series = -929569.0 / 638512875.0;
        series = series * y + 21844.0 / 6081075.0;
        series = series * y - 1382.0 / 155925.0;
        series = series * y + 62.0 / 2835.0;
        series = series * y - 17.0 / 315.0;
        series = series * y + 2.0 / 15.0;
        series = series * y - 1.0 / 3.0;
        series = series * y + 1.0;
        const double direct = (1.0 - e) / (4.0 * a * (1.0 + e));
        lambda[t] = a < 0.2 ? 0.125 * series : direct;
    }
    Eigen::Map<Eigen::ArrayXd> g(log_g, n);
    g = Eigen::Map<const Eigen::ArrayXd>(xi, n).min(0.0) - (1.0 + g).log();
}

}  // namespace vbn::inference
