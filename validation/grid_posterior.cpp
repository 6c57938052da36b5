#include "validation/grid_posterior.hpp"

#include "runtime/target/target.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace vbn {

GridPosterior grid_posterior(const std::function<double(const Eigen::Vector2d&)>& log_density, const Eigen::Vector2d& lo,
                             const Eigen::Vector2d& hi, int points) {
    if (points < 3) throw std::invalid_argument("grid posterior: at least 3 points per axis");
    if (!(lo.array() < hi.array()).all()) throw std::invalid_argument("grid posterior: lo must be below hi on both axes");
    GridPosterior g;
    g.lo = lo;
    g.hi = hi;
    g.points = points;
    const int n = points;
    g.log_density.resize(n, n);
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) {
            const double v = log_density(Eigen::Vector2d(g.x(i), g.y(j)));
            if (std::isnan(v) || v == std::numeric_limits<double>::infinity())
                throw std::invalid_argument("grid posterior: the log density is NaN or +inf on the grid");
            g.log_density(i, j) = v;
        }
    const double top = g.log_density.maxCoeff();
    g.log_density.array() -= top;
    g.mass = g.log_density.array().exp();
    const double total = g.mass.sum();
    const double cell = (hi[0] - lo[0]) / (n - 1) * (hi[1] - lo[1]) / (n - 1);
    g.log_evidence = top + std::log(total * cell);
    g.mass /= total;

    g.mean.setZero();
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) g.mean += g.mass(i, j) * Eigen::Vector2d(g.x(i), g.y(j));
    g.cov.setZero();
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) {
            const Eigen::Vector2d z = Eigen::Vector2d(g.x(i), g.y(j)) - g.mean;
            g.cov += g.mass(i, j) * z * z.transpose();
        }
    g.edge_log_ratio = -std::numeric_limits<double>::infinity();
    for (int k = 0; k < n; ++k)
        g.edge_log_ratio = std::max({g.edge_log_ratio, g.log_density(k, 0), g.log_density(k, n - 1), g.log_density(0, k),
                                     g.log_density(n - 1, k)});

    // Steepest ascent over the eight neighbours; a point that is its own best is a mode.
    Eigen::MatrixXi up(n, n);
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) {
            int best = i * n + j;
            double best_v = g.log_density(i, j);
            for (int di = -1; di <= 1; ++di)
                for (int dj = -1; dj <= 1; ++dj) {
                    const int a = i + di, b = j + dj;
                    if (a < 0 || b < 0 || a >= n || b >= n) continue;
                    if (g.log_density(a, b) > best_v) {
                        best_v = g.log_density(a, b);
                        best = a * n + b;
                    }
                }
            up(i, j) = best;
        }
    auto next = [&](int p) { return up(p / n, p % n); };
    std::vector<int> root(static_cast<std::size_t>(n) * static_cast<std::size_t>(n), -1);
    std::vector<int> path;
    for (int start = 0; start < n * n; ++start) {
        int p = start;
        path.clear();
        while (root[static_cast<std::size_t>(p)] < 0 && next(p) != p) {
            path.push_back(p);
            p = next(p);
        }
        const int r = root[static_cast<std::size_t>(p)] >= 0 ? root[static_cast<std::size_t>(p)] : p;
        root[static_cast<std::size_t>(p)] = r;
        for (int q : path) root[static_cast<std::size_t>(q)] = r;
    }
    std::vector<GridMode> modes;
    g.basin.resize(n, n);
    std::vector<int> index(static_cast<std::size_t>(n) * static_cast<std::size_t>(n), -1);
    for (int p = 0; p < n * n; ++p) {
        const int r = root[static_cast<std::size_t>(p)];
        if (index[static_cast<std::size_t>(r)] < 0) {
            index[static_cast<std::size_t>(r)] = static_cast<int>(modes.size());
            GridMode m;
            m.location = Eigen::Vector2d(g.x(r / n), g.y(r % n));
            m.log_density = g.log_density(r / n, r % n);
            modes.push_back(m);
        }
        const int k = index[static_cast<std::size_t>(r)];
        modes[static_cast<std::size_t>(k)].mass += g.mass(p / n, p % n);
        g.basin(p / n, p % n) = k;
    }
    // Sort by mass and renumber the basins.
    std::vector<int> order(modes.size());
    for (std::size_t k = 0; k < order.size(); ++k) order[k] = static_cast<int>(k);
    std::sort(order.begin(), order.end(), [&](int a, int b) {
        return modes[static_cast<std::size_t>(a)].mass > modes[static_cast<std::size_t>(b)].mass;
    });
    std::vector<int> rank(modes.size());
    for (std::size_t k = 0; k < order.size(); ++k) {
        rank[static_cast<std::size_t>(order[k])] = static_cast<int>(k);
        g.modes.push_back(modes[static_cast<std::size_t>(order[k])]);
    }
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) g.basin(i, j) = rank[static_cast<std::size_t>(g.basin(i, j))];
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j)
            for (int di = -1; di <= 1; ++di)
                for (int dj = -1; dj <= 1; ++dj) {
                    const int a = i + di, b = j + dj;
                    if (a < 0 || b < 0 || a >= n || b >= n || g.basin(a, b) == g.basin(i, j)) continue;
                    GridMode& m = g.modes[static_cast<std::size_t>(g.basin(i, j))];
                    m.pass = std::max(m.pass, std::min(g.log_density(i, j), g.log_density(a, b)));
                }
    return g;
}

GridPosterior grid_posterior(const Target& target, const Eigen::Vector2d& lo, const Eigen::Vector2d& hi, int points) {
    if (target.dim() != 2) throw std::invalid_argument("grid posterior: the target must have exactly 2 parameters");
    Target::Workspace ws = target.make_workspace();
    return grid_posterior([&](const Eigen::Vector2d& theta) { return target.log_density(theta, ws); }, lo, hi, points);
}

int GridPosterior::basin_of(const Eigen::Vector2d& theta) const {
    auto cell = [&](double v, double a, double b) {
        const double t = std::round((v - a) / (b - a) * (points - 1));
        return static_cast<int>(std::clamp(t, 0.0, static_cast<double>(points - 1)));
    };
    return basin(cell(theta[0], lo[0], hi[0]), cell(theta[1], lo[1], hi[1]));
}

std::vector<double> GridPosterior::basin_fractions(const Eigen::MatrixXd& draws) const {
    std::vector<double> f(modes.size(), 0.0);
    if (draws.rows() == 0) return f;
    for (Eigen::Index r = 0; r < draws.rows(); ++r)
        f[static_cast<std::size_t>(basin_of(Eigen::Vector2d(draws(r, 0), draws(r, 1))))] += 1;
    for (double& v : f) v /= static_cast<double>(draws.rows());
    return f;
}

}  // namespace vbn
