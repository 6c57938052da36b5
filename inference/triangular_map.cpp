#include "inference/triangular_map.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace vbn::inference {

TriangularMap TriangularMap::from_third_derivatives(const std::vector<Eigen::MatrixXd>& a) {
    const int d = static_cast<int>(a.size());
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
    t.quad_.resize(static_cast<std::size_t>(d));
    for (int k = 0; k < d; ++k) {
        const Eigen::MatrixXd& ak = a[static_cast<std::size_t>(k)];
        double b = ak(k, k);
        for (int j = k + 1; j < d; ++j) b += ak(j, j);
        t.b_[k] = 0.5 * b;
        t.quad_[static_cast<std::size_t>(k)] = 0.5 * ak.topLeftCorner(k, k);
        for (int i = 0; i < k; ++i) t.slope_(i, k) = 0.5 * ak(k, i);
    }
    return t;
}

void TriangularMap::drift(int k, const Eigen::Ref<const Eigen::VectorXd>& y, Eigen::Ref<Eigen::VectorXd> scratch,
                          double& m, double& u) const {
    if (k == 0) {
        m = u = 0;
        return;
    }
    const auto head = y.head(k);
    auto s = scratch.head(k);
    s.noalias() = quad_[static_cast<std::size_t>(k)] * head;
    m = std::clamp(s.dot(head), -max_drift, max_drift);
    u = std::clamp(slope_.col(k).head(k).dot(head), -max_log_scale, max_log_scale);
}

double TriangularMap::forward(const Eigen::Ref<const Eigen::VectorXd>& z, Eigen::Ref<Eigen::VectorXd> y,
                              Eigen::Ref<Eigen::VectorXd> scratch) const {
    double log_jacobian = 0, m = 0, u = 0;
    for (int k = 0; k < dim(); ++k) {
        drift(k, y, scratch, m, u);
        y[k] = b_[k] + m + std::exp(u) * z[k];
        log_jacobian += u;
    }
    return log_jacobian;
}

double TriangularMap::inverse(Eigen::Ref<Eigen::VectorXd> y_to_z, Eigen::Ref<Eigen::VectorXd> scratch) const {
    // From the last coordinate down: z_k needs y_≤k only, and y_<k is still y.
    double log_jacobian = 0, m = 0, u = 0;
    for (int k = dim() - 1; k >= 0; --k) {
        drift(k, y_to_z, scratch, m, u);
        y_to_z[k] = (y_to_z[k] - b_[k] - m) * std::exp(-u);
        log_jacobian += u;
    }
    return log_jacobian;
}

}  // namespace vbn::inference
