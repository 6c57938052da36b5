// Test helpers for exact answers by quadrature, standard C++ only (the API's tests include it
// too, and see nothing but the public header besides): log ∫ exp(f) by the trapezoid rule,
// the normal log density, and the one-parameter evidence case that both the runtime's and the
// API's evidence tests check against quadrature.
#pragma once

#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

namespace vbn::test {

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

// One parameter: y ~ logistic(b), b ~ N(0.5, 2²), y = +1 in 9 of 12 rows.
struct OneParameterEvidence {
    static constexpr const char* model = "node y ~ logistic(b);\nb ~ normal(0.5, 2);\n";
    static std::vector<double> y() { return {1, 1, 1, -1, 1, 1, -1, 1, 1, -1, 1, 1}; }
    // log p(y) by quadrature.
    static double exact() {
        auto log_sigmoid = [](double x) { return x < 0 ? x - std::log1p(std::exp(x)) : -std::log1p(std::exp(-x)); };
        return log_integral_1d([&](double b) { return log_normal_pdf(b, 0.5, 2) + 9 * log_sigmoid(b) + 3 * log_sigmoid(-b); },
                               -20, 20, 4000);
    }
};

}  // namespace vbn::test
