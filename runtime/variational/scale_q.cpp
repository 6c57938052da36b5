#include "runtime/variational/scale_q.hpp"

#include "inference/math.hpp"
#include "runtime/error.hpp"
#include "runtime/target/scale_prior.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

namespace vbn {

namespace {

// log q(η) + log Z (q's unnormalised log density in η = log τ, with the Jacobian τ):
//   ℓ(η) = log p_η(η) − nη − ½ S e^{−2η},
// and its first two derivatives. ℓ' is strictly decreasing (log p_η is concave), so ℓ has one
// mode.
struct LogQ {
    const ir::Scale& scale;
    double log_norm;
    int n;
    double S;

    double value(double eta) const { return log_norm + scale_log_conditional(scale, n, S, eta); }
    double slope(double eta) const { return scale_log_prior(scale, eta).slope - n + S * std::exp(-2 * eta); }
    double curvature(double eta) const { return scale_log_prior(scale, eta).curvature - 2 * S * std::exp(-2 * eta); }
};

// The mode of ℓ by bisection on ℓ' (decreasing) between where it is positive and negative.
double mode(const LogQ& q, double guess) {
    double lo = guess - 1, hi = guess + 1;
    while (q.slope(lo) <= 0 && lo > -700) lo -= 2 * (hi - lo);
    while (q.slope(hi) >= 0 && hi < 700) hi += 2 * (hi - lo);
    for (int it = 0; it < 200 && hi - lo > 1e-13 * std::max(1.0, std::abs(lo)); ++it) {
        const double mid = 0.5 * (lo + hi);
        (q.slope(mid) > 0 ? lo : hi) = mid;
    }
    return 0.5 * (lo + hi);
}

}  // namespace

// The trapezoid rule on an even grid over the mode ± 14 local sds (1/√−ℓ'') plus a margin:
// for a smooth density that falls off at least exponentially on both sides its error falls
// geometrically with the spacing; 1,201 points put 43 in each local sd.
ScaleQ fit_scale_q(const ir::Scale& scale, int n, double S) {
    if (n < 1 || !(S > 0) || !std::isfinite(S))
        throw Error(ErrorKind::inference,
                    fmt::format("variational EM: a learned scale's update needs n >= 1 weights and a positive finite "
                                "sum of squares (n = {}, S = {})",
                                n, S));
    const LogQ q{scale, scale_log_norm(scale), n, S};
    const double centre = mode(q, 0.5 * std::log(S / n));  // where the weights alone put τ
    const double sd = 1 / std::sqrt(-q.curvature(centre));
    constexpr int points = 1201;
    const double half_width = 14 * sd + 1, step = 2 * half_width / (points - 1);
    std::vector<double> logs(points);
    double top = -INFINITY;
    for (int i = 0; i < points; ++i) {
        logs[static_cast<std::size_t>(i)] = q.value(centre - half_width + i * step);
        top = std::max(top, logs[static_cast<std::size_t>(i)]);
    }
    double z = 0, e_eta = 0, e_eta2 = 0, e_prec = 0, e_tau = 0, e_tau2 = 0;
    for (int i = 0; i < points; ++i) {
        const double eta = centre - half_width + i * step;
        const double w = std::exp(logs[static_cast<std::size_t>(i)] - top) * (i == 0 || i == points - 1 ? 0.5 : 1.0);
        z += w;
        e_eta += w * eta;
        e_eta2 += w * eta * eta;
        e_prec += w * std::exp(-2 * eta);
        e_tau += w * std::exp(eta);
        e_tau2 += w * std::exp(2 * eta);
    }
    ScaleQ out;
    out.mean_log = e_eta / z;
    out.var_log = std::max(0.0, e_eta2 / z - out.mean_log * out.mean_log);
    out.e_precision = e_prec / z;
    out.e_log_precision = -2 * out.mean_log;
    out.mean = e_tau / z;
    out.sd = std::sqrt(std::max(0.0, e_tau2 / z - out.mean * out.mean));
    // −KL(q ‖ p) = E_q[log p_τ(τ) − log q_τ(τ)] with q_τ = p_τ τ^{−n} e^{−S/(2τ²)} / Z and
    // Z = ∫ e^ℓ dη: log Z + n E[η] + ½ S E[1/τ²].
    const double log_z = top + std::log(z * step);
    out.bound = log_z + n * out.mean_log + 0.5 * S * out.e_precision;
    return out;
}

}  // namespace vbn
