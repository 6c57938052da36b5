// The prior of a learned scale τ (ir::Scale) as a density of η = log τ, the coordinate θ
// holds: log p_η(η) = log p_τ(e^η) + η (the Jacobian), up to the constant `log_norm`.
//   half_normal(s):   log 2 − ½ log 2π − log s − e^{2η}/(2s²) + η
//   half_cauchy(s):   log 2 − log π − log s − log(1 + e^{2η}/s²) + η
//   precision_gamma(a, b), 1/τ² ~ Gamma(a, rate b):
//                     a log b − log Γ(a) + log 2 − 2aη − b e^{−2η}
// (the last through λ = e^{−2η}, |dλ/dη| = 2λ). Each is concave in η.
#pragma once

#include "lang/ir.hpp"

namespace vbn {

struct ScaleLogPrior {
    double value = 0;      // without log_norm
    double slope = 0;      // d/dη
    double curvature = 0;  // d²/dη²
};

ScaleLogPrior scale_log_prior(const ir::Scale& scale, double eta);
// The constant the value above leaves out.
double scale_log_norm(const ir::Scale& scale);

// log p_η(η) − nη − ½ S e^{−2η}: η's log density given n weights it scales with
// S = Σ_j (w_j − μ_j)² (without log_norm and the weights' 2π's). It is the slice step's exact
// conditional (S from the draws) and the variational q(η)'s log density (S the expected sum).
double scale_log_conditional(const ir::Scale& scale, int n, double S, double eta);

}  // namespace vbn
