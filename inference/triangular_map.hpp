// A triangular transport map that skews a proposal the way a log density's third derivatives
// say (used by GaussianProposal, runtime/sampling/laplace_proposal.cpp).
//
// In coordinates y whitened at a mode (the log density is −½|y|² + (1/6) Σ A_ijk y_i y_j y_k
// + O(|y|⁴) there), the map takes a standard draw z to y coordinate by coordinate:
//     y_k = b_k + m_k(z_<k) + exp(u_k(z_<k)) z_k,
//     m_k = clamp(½ Σ_{i,j<k} A_kij z_i z_j, ±max_drift),   u_k = clamp(½ Σ_{i<k} A_kki z_i, ±max_log_scale),
//     b_k = ½ (A_kkk + Σ_{j>k} A_kjj).
// To third order its density matches the cubic term: given z_<k (y_<k to first order),
// coordinate k is centred where the conditional's slope vanishes (the terms quadratic in
// them), its curvature changes with them as exp(−2u_k) does (the terms linear in them), and
// b_k puts the mean of y_k where the expansion's mean is, ½ Σ_j A_kjj, once the mean of m_k
// (½ Σ_{j<k} A_kjj) is added. (Reading y_<k instead of z_<k matches the same cubic term; the
// two differ from fourth order on. Read from z, every coordinate's drift and scale are known
// before any y is: the map is a handful of independent products, not a chain of d steps.)
//
// y_k is affine in z_k with slope exp(u_k) > 0, and m_k, u_k depend on z_<k only, so the map is
// a bijection of R^d whose Jacobian is triangular: log |∂y/∂z| = Σ_k u_k, exactly, whatever
// m_k and u_k are; its inverse recovers z_0, z_1, ... in turn. The clamps therefore cost
// nothing in exactness; they only keep a draw far in a heavy tail finite.
//
// Costs: forward (a draw) about d³/6 multiply-adds, as eight quadratic forms at a time
// (products z_i z_j against columns of coefficients), with no dependence between coordinates;
// inverse (a density at a given point, which samplers need rarely: at a chain's first state)
// the same count, one coordinate after another. No allocation (at most max_dim coordinates, so
// the products fit on the stack).
#pragma once

#include <Eigen/Core>

#include <vector>

namespace vbn::inference {

class TriangularMap {
public:
    static constexpr double max_drift = 2.0;      // |m_k| at most this (whitened units)
    static constexpr double max_log_scale = 0.5;  // |u_k| at most this (scales within e^±0.5)
    static constexpr int max_dim = 64;            // coordinates, at most
    static constexpr int lanes = 8;               // forward's rows per group (one AVX-512 register)
    struct alignas(64) Column {                   // a group's coefficients of one product or coordinate
        double v[lanes] = {};
    };

    // From the third derivatives of a log density in whitened coordinates: a[k](i, j) =
    // ∂³ log p / ∂y_k ∂y_i ∂y_j, symmetric in its three indices (d matrices of d × d). Throws
    // std::invalid_argument on a size mismatch, a non-finite entry or more than max_dim slices.
    static TriangularMap from_third_derivatives(const std::vector<Eigen::MatrixXd>& a);

    int dim() const { return static_cast<int>(b_.size()); }

    // y = T(z) (y must not alias z); returns log |∂y/∂z| = Σ u_k.
    double forward(const Eigen::Ref<const Eigen::VectorXd>& z, Eigen::Ref<Eigen::VectorXd> y) const;

    // z = T⁻¹(y), in place; returns Σ u_k, the same as forward(z) returns.
    double inverse(Eigen::Ref<Eigen::VectorXd> y_to_z) const;

private:
    Eigen::VectorXd b_;
    // The coefficients of m_k's quadratic form ½ z_<k' A[k] z_<k and of u_k, by groups of
    // `lanes` rows k, one Column per product z_i z_j (the pairs (i, j ≤ i) in order, the
    // off-diagonal entries doubled) or coordinate z_i: group v's quadratic ones from
    // quad_[quad_start_[v]], its linear ones from lin_[lin_start_[v]], 0 where a row does not
    // read that column, and zero columns up to a multiple of 8. forward reads whole columns,
    // inverse one row of them.
    std::vector<Column> quad_, lin_;
    std::vector<Eigen::Index> quad_start_, lin_start_;
};

}  // namespace vbn::inference
