#include "runtime/target/scale_prior.hpp"

#include "inference/math.hpp"

#include <cmath>
#include <numbers>

namespace vbn {

ScaleLogPrior scale_log_prior(const ir::Scale& sc, double eta) {
    ScaleLogPrior p;
    switch (sc.kind) {
    case ir::ScaleKind::half_normal: {
        const double u = std::exp(2 * (eta - std::log(sc.scale)));  // τ²/s²
        p.value = eta - 0.5 * u;
        p.slope = 1 - u;
        p.curvature = -2 * u;
        break;
    }
    case ir::ScaleKind::half_cauchy: {
        const double x = 2 * (eta - std::log(sc.scale));
        const double g = inference::inv_logit(x);  // (τ²/s²) / (1 + τ²/s²)
        p.value = eta - inference::log1p_exp(x);
        p.slope = 1 - 2 * g;
        p.curvature = -4 * g * (1 - g);
        break;
    }
    case ir::ScaleKind::precision_gamma: {
        const double lambda = std::exp(-2 * eta);
        p.value = -2 * sc.shape * eta - sc.rate * lambda;
        p.slope = -2 * sc.shape + 2 * sc.rate * lambda;
        p.curvature = -4 * sc.rate * lambda;
        break;
    }
    }
    return p;
}

double scale_log_conditional(const ir::Scale& sc, int n, double S, double eta) {
    return scale_log_prior(sc, eta).value - n * eta - 0.5 * S * std::exp(-2 * eta);
}

double scale_log_norm(const ir::Scale& sc) {
    switch (sc.kind) {
    case ir::ScaleKind::half_normal: return std::log(2.0) - 0.5 * std::log(2 * std::numbers::pi) - std::log(sc.scale);
    case ir::ScaleKind::half_cauchy: return std::log(2.0) - std::log(std::numbers::pi) - std::log(sc.scale);
    case ir::ScaleKind::precision_gamma: return sc.shape * std::log(sc.rate) - std::lgamma(sc.shape) + std::log(2.0);
    }
    return 0;
}

}  // namespace vbn
