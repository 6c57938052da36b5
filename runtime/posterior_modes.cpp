#include "runtime/posterior_modes.hpp"

#include "runtime/target.hpp"

#include <Eigen/Cholesky>

#include <algorithm>
#include <cmath>
#include <numbers>

namespace vbn {

namespace {

// Minus the Hessian by central differences of the gradient, symmetrised.
Eigen::MatrixXd minus_hessian(const Target& t, const Eigen::VectorXd& x, Target::Workspace& ws) {
    const int d = t.dim();
    Eigen::MatrixXd h(d, d);
    Eigen::VectorXd xp = x, gp(d), gm(d);
    for (int j = 0; j < d; ++j) {
        const double e = 1e-5 * (1 + std::abs(x[j]));
        xp[j] = x[j] + e;
        t.log_density_gradient(xp, gp, ws);
        xp[j] = x[j] - e;
        t.log_density_gradient(xp, gm, ws);
        xp[j] = x[j];
        h.col(j) = -(gp - gm) / (2 * e);
    }
    return 0.5 * (h + h.transpose());
}

}  // namespace

std::vector<PosteriorMode> find_posterior_modes(const Target& target, const std::vector<Eigen::VectorXd>& starts,
                                                int max_iterations) {
    const int d = target.dim();
    Target::Workspace ws = target.make_workspace();
    std::vector<PosteriorMode> modes;
    Eigen::VectorXd g(d), step(d), y(d);
    for (const Eigen::VectorXd& start : starts) {
        Eigen::VectorXd x = start;
        double lp = target.log_density_gradient(x, g, ws);
        if (!std::isfinite(lp)) continue;
        for (int it = 0; it < max_iterations; ++it) {
            const Eigen::LLT<Eigen::MatrixXd> llt(minus_hessian(target, x, ws));
            if (llt.info() == Eigen::Success) step = llt.solve(g);
            else step = g / std::max(1.0, g.norm());
            double s = 1;
            double lq = -std::numeric_limits<double>::infinity();
            for (; s > 1e-10; s /= 2) {
                y = x + s * step;
                lq = target.log_density(y, ws);
                if (std::isfinite(lq) && lq >= lp) break;
            }
            if (!(s > 1e-10)) break;
            const bool small = (s * step).norm() < 1e-9 * (1 + x.norm());
            x = y;
            lp = target.log_density_gradient(x, g, ws);
            if (small) break;
        }
        const Eigen::LLT<Eigen::MatrixXd> llt(minus_hessian(target, x, ws));
        if (llt.info() != Eigen::Success) continue;
        bool known = false;
        for (const PosteriorMode& m : modes) {
            const Eigen::LLT<Eigen::MatrixXd> c(m.cov);
            if ((x - m.mode).dot(c.solve(x - m.mode)) < 1) known = true;
        }
        if (known) continue;
        PosteriorMode m;
        m.mode = x;
        m.cov = llt.solve(Eigen::MatrixXd::Identity(d, d));
        m.log_density = lp;
        const Eigen::MatrixXd l = llt.matrixL();
        // log det(cov) = -2 Σ log L_ii of minus the Hessian.
        m.log_mass = lp + 0.5 * d * std::log(2 * std::numbers::pi) - l.diagonal().array().log().sum();
        modes.push_back(std::move(m));
    }
    std::sort(modes.begin(), modes.end(), [](const PosteriorMode& a, const PosteriorMode& b) { return a.log_mass > b.log_mass; });
    return modes;
}

}  // namespace vbn
