// One-dimensional quadrature for exact answers in tests: log ∫ exp(f) by the trapezoid rule,
// and the normal log density. Header-only, standard library only (the API tests use it too).
#pragma once

#include <algorithm>
#include <cmath>
#include <numbers>

namespace vbn::quadrature {

inline double log_normal_pdf(double x, double mean, double sd) {
    const double z = (x - mean) / sd;
    return -0.5 * z * z - std::log(sd) - 0.5 * std::log(2 * std::numbers::pi);
}

// log ∫ exp(f) over [lo, hi] by the trapezoid rule on n intervals (f smooth and negligible
// at the ends, where the rule converges geometrically).
template <class F>
double log_integral_1d(F f, double lo, double hi, int n) {
    const double h = (hi - lo) / n;
    double top = -1e300;
    for (int i = 0; i <= n; ++i) top = std::max(top, f(lo + i * h));
    double s = 0;
    for (int i = 0; i <= n; ++i) s += (i == 0 || i == n ? 0.5 : 1.0) * std::exp(f(lo + i * h) - top);
    return top + std::log(s * h);
}

}  // namespace vbn::quadrature
