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

// tanh(x)/x for y = x², x < 0.1, by its series to x^14: 1, −1/3, 2/15, −17/315, 62/2835,
// −1382/155925, 21844/6081075, −929569/638512875 (the next term is under 1e-19 there).
inline double tanh_over_x_series(double y) {
    double series = -929569.0 / 638512875.0;
    series = series * y + 21844.0 / 6081075.0;
    series = series * y - 1382.0 / 155925.0;
    series = series * y + 62.0 / 2835.0;
    series = series * y - 17.0 / 315.0;
    series = series * y + 2.0 / 15.0;
    series = series * y - 1.0 / 3.0;
    return series * y + 1.0;
}

// λ(ξ) = tanh(x) / (8x), x = |ξ|/2, given e = exp(−|ξ|): (1 − e) / (4|ξ| (1 + e)) from |ξ| = 0.2
// on, below it the series (1 − e would lose digits).
inline double jj_lambda_from(double xi, double e) {
    const double a = std::abs(xi);
    return a < 0.2 ? 0.125 * tanh_over_x_series(0.25 * a * a) : (1.0 - e) / (4.0 * a * (1.0 + e));
}

// jj_lambda and log_inv_logit of n values at once (a fit's patterns, a component's factors),
// from one e = exp(−|ξ|) each, in loops the compiler vectorises (a tanh, an exp and a log1p
// each from the C library were a fifth of a variational fit's time at 20 weights): λ by
// jj_lambda_from, and log g(ξ) = min(ξ, 0) − log(1 + e) by Eigen's vectorised log. λ is within
// 10 ulps of jj_lambda, and log g within an ulp of max(1, |log g|) of log_inv_logit: what a sum
// of bounds over patterns can use (tests/inference/test_math.cpp). The logs are taken in an
// aligned buffer of its own: Eigen's log takes the first entries of an unaligned array one by
// one, by the scalar log, so in place their last bits would depend on where the output lies in
// memory (and threads that allocate their own would disagree).
inline void jj_lambda_log_inv_logit(const double* xi, Eigen::Index n, double* lambda, double* log_g) {
    constexpr Eigen::Index chunk = 64;
    alignas(64) double e[chunk];
    for (Eigen::Index at = 0; at < n; at += chunk) {
        const Eigen::Index len = std::min(chunk, n - at);
        const double* x = xi + at;
        for (Eigen::Index t = 0; t < len; ++t) e[t] = exp_nonpositive(-std::abs(x[t]));
        for (Eigen::Index t = 0; t < len; ++t) lambda[at + t] = jj_lambda_from(x[t], e[t]);
        Eigen::Map<Eigen::ArrayXd> g(e, len);
        g = (1.0 + g).log();
        for (Eigen::Index t = 0; t < len; ++t) log_g[at + t] = std::min(x[t], 0.0) - e[t];
    }
}

// E[x] = tanh(d/2) and Var[x] = 1 − E[x]² = 4 g(d) g(−d) of x = ±1 with q(x = +1) = g(d), from
// one e = exp(−|d|), for every hidden value at every sweep: its tanh (the C library's goes
// through expm1) and the two exps of g(d) g(−d), with the sweeps' own tanh in λ(ξ) (now
// jj_lambda_log_inv_logit's), were a third of a variational fit's time on
// tests/corpus/housevotes. tanh(|d|/2) = (1 − e) / (1 + e) from |d| = 0.2 on and below it
// by the series (1 − e would lose digits there); the variance is 4e / (1 + e)², with no
// cancellation at any d.
inline void spin_moments(double d, double& mean, double& var) {
    const double a = std::abs(d), e = exp_nonpositive(-a), x = 0.5 * a;
    const double magnitude = a < 0.2 ? x * tanh_over_x_series(x * x) : (1.0 - e) / (1.0 + e);
    mean = d < 0 ? -magnitude : magnitude;
    var = 4.0 * e / ((1.0 + e) * (1.0 + e));
}

}  // namespace vbn::inference
