// Stable scalar primitives. One each, used everywhere; never re-derived inline.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>

#include <math.h>  // lgamma_r

namespace vbn::inference {

// log(1 + exp(x)) without overflow or loss of precision.
// log Γ(x) without touching the global `signgam` that std::lgamma sets: proposals and
// mixtures are built inside worker threads, where std::lgamma is a data race.
inline double log_gamma(double x) {
    int sign = 0;
    return ::lgamma_r(x, &sign);
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
    if (a < 1e-4) return 0.125 - a * a / 192.0;
    return std::tanh(a / 2.0) / (4.0 * a);
}

}  // namespace vbn::inference
