// A labeling or symmetry move held densely as a code: a signed permutation of n coordinates
// with code[j] = ±(q + 1) where (g x)_j = ±x_q, 1-based so that coordinate 0 can carry a sign.
// The relabelling (relabel.cpp) and the mode masses (mode_masses.cpp) act on draws' columns
// with codes; inference::SignedPermutation is the sparse form the symmetry jumps use.
#pragma once

#include "inference/signed_permutation.hpp"

#include <Eigen/Core>

#include <cstddef>
#include <cstdlib>
#include <numeric>
#include <vector>

namespace vbn::code {

using Code = std::vector<int>;

inline Code identity(int n) {
    Code c(static_cast<std::size_t>(n));
    std::iota(c.begin(), c.end(), 1);
    return c;
}

// The code of g over n coordinates.
inline Code of(const inference::SignedPermutation& g, int n) {
    Code c = identity(n);
    for (const auto& e : g.entries) c[static_cast<std::size_t>(e.to)] = (e.negate ? -1 : 1) * (e.from + 1);
    return c;
}

// (g x)_j (x any vector of doubles, as the relabelling's hot loop holds it).
template <class Vector>
double entry(const Code& g, std::size_t j, const Vector& x) {
    const int c = g[j];
    return c > 0 ? x[c - 1] : -x[-c - 1];
}

// out = g x (out and x distinct, out of x's size).
inline void apply(const Code& g, const Eigen::VectorXd& x, Eigen::VectorXd& out) {
    for (std::size_t j = 0; j < g.size(); ++j) out[static_cast<Eigen::Index>(j)] = entry(g, j, x);
}

// a b, with (a b) x = a (b x): (a b x)_j = s_a(j) (b x)_q with q = |a_j| − 1.
inline Code compose(const Code& a, const Code& b) {
    Code out(a.size());
    for (std::size_t j = 0; j < a.size(); ++j) {
        const int inner = b[static_cast<std::size_t>(std::abs(a[j]) - 1)];
        out[j] = a[j] > 0 ? inner : -inner;
    }
    return out;
}

// g⁻¹: (g x)_j = s x_q ⇔ x_q = s (g x)_j.
inline Code inverse(const Code& g) {
    Code out(g.size());
    for (std::size_t j = 0; j < g.size(); ++j) {
        const int row = static_cast<int>(j) + 1;
        out[static_cast<std::size_t>(std::abs(g[j]) - 1)] = g[j] > 0 ? row : -row;
    }
    return out;
}

}  // namespace vbn::code
