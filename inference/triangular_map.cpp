#include "inference/triangular_map.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace vbn::inference {

TriangularMap TriangularMap::from_third_derivatives(const std::vector<Eigen::MatrixXd>& a) {
    const int d = static_cast<int>(a.size());
    if (d > max_dim) throw std::invalid_argument(fmt::format("triangular map: {} dimensions, more than {}", d, max_dim));
    for (int k = 0; k < d; ++k) {
        const Eigen::MatrixXd& ak = a[static_cast<std::size_t>(k)];
        if (ak.rows() != d || ak.cols() != d)
            throw std::invalid_argument(fmt::format("triangular map: third-derivative slice {} is {}x{}, not {}x{}", k,
                                                    ak.rows(), ak.cols(), d, d));
        if (!ak.allFinite()) throw std::invalid_argument(fmt::format("triangular map: slice {} has a non-finite entry", k));
    }
    TriangularMap t;
    t.b_.resize(d);
    t.slope_ = Eigen::MatrixXd::Zero(d, d);
    t.start_.resize(static_cast<std::size_t>(d));
    Eigen::Index total = 0;
    for (int k = 0; k < d; ++k) {
        t.start_[static_cast<std::size_t>(k)] = total;
        total += static_cast<Eigen::Index>(k) * (k + 1) / 2;
    }
    t.packed_.resize(total);
    for (int k = 0; k < d; ++k) {
        const Eigen::MatrixXd& ak = a[static_cast<std::size_t>(k)];
        double b = ak(k, k);
        for (int j = k + 1; j < d; ++j) b += ak(j, j);
        t.b_[k] = 0.5 * b;
        double* p = t.packed_.data() + t.start_[static_cast<std::size_t>(k)];
        for (int i = 0; i < k; ++i)
            for (int j = 0; j <= i; ++j) *p++ = i == j ? 0.5 * ak(i, i) : ak(i, j);  // ½ (A_kij + A_kji)
        for (int i = 0; i < k; ++i) t.slope_(i, k) = 0.5 * ak(k, i);
    }
    return t;
}

namespace {
// The products y_i y_j (j ≤ i) of the first `rows` coordinates, rows of the lower triangle in
// order, appended from row `from` on: the first k rows are the first k(k+1)/2 entries.
void append_products(const Eigen::Ref<const Eigen::VectorXd>& y, int from, int rows, double* w) {
    double* out = w + static_cast<std::ptrdiff_t>(from) * (from + 1) / 2;
    for (int i = from; i < rows; ++i)
        for (int j = 0; j <= i; ++j) *out++ = y[i] * y[j];
}
}  // namespace

void TriangularMap::drift(int k, const Eigen::Ref<const Eigen::VectorXd>& y, const double* products, double& m,
                          double& u) const {
    // ½ y_<k' A[k] y_<k as one long dot product of the packed triangle with the products,
    // which Eigen sums in vector registers.
    const Eigen::Index n = static_cast<Eigen::Index>(k) * (k + 1) / 2;
    const double quad = Eigen::Map<const Eigen::VectorXd>(packed_.data() + start_[static_cast<std::size_t>(k)], n)
                            .dot(Eigen::Map<const Eigen::VectorXd>(products, n));
    const double lin = slope_.col(k).head(k).dot(y.head(k));
    m = std::clamp(quad, -max_drift, max_drift);
    u = std::clamp(lin, -max_log_scale, max_log_scale);
}

double TriangularMap::forward(const Eigen::Ref<const Eigen::VectorXd>& z, Eigen::Ref<Eigen::VectorXd> y) const {
    double products[max_dim * (max_dim + 1) / 2];
    double log_jacobian = 0, m = 0, u = 0;
    for (int k = 0; k < dim(); ++k) {
        if (k > 0) append_products(y, k - 1, k, products);
        drift(k, y, products, m, u);
        y[k] = b_[k] + m + std::exp(u) * z[k];
        log_jacobian += u;
    }
    return log_jacobian;
}

double TriangularMap::inverse(Eigen::Ref<Eigen::VectorXd> y_to_z) const {
    // From the last coordinate down: z_k needs y_≤k only, and y_<k is still y.
    double products[max_dim * (max_dim + 1) / 2];
    append_products(y_to_z, 0, std::max(dim() - 1, 0), products);
    double log_jacobian = 0, m = 0, u = 0;
    for (int k = dim() - 1; k >= 0; --k) {
        drift(k, y_to_z, products, m, u);
        y_to_z[k] = (y_to_z[k] - b_[k] - m) * std::exp(-u);
        log_jacobian += u;
    }
    return log_jacobian;
}

}  // namespace vbn::inference
