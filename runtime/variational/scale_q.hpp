// The mean-field factor of a learned prior scale (ir::Scale) in the variational EM.
//
// Weights w_j | τ ~ N(μ_j, τ²), j = 1..n, share a scale τ with a half-normal or half-Cauchy
// prior. Given q(θ), the q(τ) that maximises the bound is
//     q(τ) ∝ p(τ) τ^{−n} exp(−S / (2τ²)),   S = Σ_j E_q[(w_j − μ_j)²]
// (Bishop 2006, eq. 10.9: the exponentiated expected log joint). With precision_gamma it is
// ARD's Gamma on 1/τ² (Tipping 2001); with half_normal and half_cauchy it has no closed form.
// All three are one-dimensional: it is integrated on a grid in η = log τ around its mode,
// which gives the moments the EM needs, E[1/τ²] and E[log 1/τ²], and q's share of the bound.
#pragma once

#include "lang/ir.hpp"

namespace vbn {

struct ScaleQ {
    double e_precision = 1;      // E_q[1/τ²]: the weights' prior precision in q(θ)'s update
    double e_log_precision = 0;  // E_q[log 1/τ²] = −2 E_q[η]: in E_q[log N(w; μ, τ²)]
    double mean_log = 0;         // E_q[η], η = log τ
    double var_log = 0;          // Var_q[η]
    double mean = 0, sd = 0;     // E_q[τ] and sd_q[τ], for users
    // E_q[log p(τ)] + H[q(τ)]: q's own share of the bound, beside the weights' expected log
    // prior (which the blocks count with the two moments above).
    double bound = 0;
};

// q(τ) for n weights with sum of expected squared deviations S > 0 (n ≥ 1) and the prior of
// `scale` (runtime/target/scale_prior.hpp; its weights are not read).
ScaleQ fit_scale_q(const ir::Scale& scale, int n, double S);

}  // namespace vbn
