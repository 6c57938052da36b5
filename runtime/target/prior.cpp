#include "runtime/target/prior.hpp"

#include <Eigen/Cholesky>

#include <cmath>
#include <vector>

namespace vbn {

Eigen::VectorXd draw_prior(const ir::Graph& graph, inference::Rng& rng) {
    Eigen::VectorXd theta(graph.dim);
    // Learned scales first: τ = s |z| (half-normal), s |z / z'| (half-Cauchy) or λ^{−1/2}
    // with λ ~ Gamma(a, rate b) (precision_gamma); θ holds log τ.
    std::vector<double> tau;
    for (const auto& sc : graph.scales) {
        const double z = rng.normal();
        switch (sc.kind) {
        case ir::ScaleKind::half_normal: tau.push_back(sc.scale * std::abs(z)); break;
        case ir::ScaleKind::half_cauchy: tau.push_back(sc.scale * std::abs(z / rng.normal())); break;
        case ir::ScaleKind::precision_gamma: tau.push_back(1 / std::sqrt(rng.gamma(sc.shape) / sc.rate)); break;
        }
        theta[sc.theta_index] = std::log(tau.back());
    }
    for (const auto& b : graph.blocks) {
        Eigen::VectorXd z(b.size);
        for (int k = 0; k < b.size; ++k) z[k] = rng.normal();
        // A weight with a learned scale: N(μ, τ²), its prior_cov entry being 1 (τ = 1).
        for (int k = 0; b.has_learned_scale() && k < b.size; ++k)
            if (const int sc = b.prior_scale[static_cast<std::size_t>(k)]; sc >= 0) z[k] *= tau[static_cast<std::size_t>(sc)];
        // A Student-t entry as the scale mixture μ + s z / √λ, λ ~ Gamma(ν/2, rate ν/2); it is
        // uncorrelated with the rest of the block, so scaling z_k scales its entry alone.
        if (b.heavy_tailed())
            for (int k = 0; k < b.size; ++k) {
                const double nu = b.prior_df[static_cast<std::size_t>(k)];
                if (nu > 0) z[k] /= std::sqrt(rng.gamma(0.5 * nu) / (0.5 * nu));
            }
        const Eigen::VectorXd mean = Eigen::Map<const Eigen::VectorXd>(b.prior_mean.data(), b.size);
        if (b.prior_diagonal) {
            for (int k = 0; k < b.size; ++k)
                theta[b.offset + k] = mean[k] + std::sqrt(b.prior_cov[static_cast<std::size_t>(k * b.size + k)]) * z[k];
        } else {
            const Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>> cov(b.prior_cov.data(),
                                                                                                          b.size, b.size);
            const Eigen::LLT<Eigen::MatrixXd> llt(cov);
            theta.segment(b.offset, b.size) = mean + llt.matrixL() * z;
        }
    }
    return theta;
}

}  // namespace vbn
