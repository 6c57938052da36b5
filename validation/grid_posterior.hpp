// The exact posterior of a two-parameter model on a grid (quadrature), for checking samplers
// against it: mean, covariance, and the modes with the mass of each mode's basin.
//
//   const GridPosterior g = grid_posterior(target, {-10, -10}, {10, 10}, 401);
//   g.mean; g.cov; g.modes[0].mass; g.basin_of(theta);
//
// Each grid point stands for the square cell around it; its mass is p(θ) times the cell
// area, normalised over the grid (midpoint rule). A mode is a grid point whose density is at
// least that of its eight neighbours; its basin is the set of points from which steepest
// ascent over neighbouring points reaches it, so basins partition the grid and their masses
// add up to one. The grid must hold the posterior: `edge_log_ratio` (the largest log density
// on the border minus the top) tells the caller how much is cut off.
#pragma once

#include <Eigen/Core>

#include <functional>
#include <limits>
#include <vector>

namespace vbn {

class Target;

struct GridMode {
    Eigen::Vector2d location;  // the grid point at the local maximum
    double log_density = 0;    // log p there, relative to the grid's top
    double mass = 0;           // posterior mass of its basin
    // The highest pass out of its basin: the largest min(log p(a), log p(b)) over neighbouring
    // points a in this basin and b in another (relative to the top; -inf with one basin). A
    // mode is separated from the others by mode.log_density - mode.pass nats.
    double pass = -std::numeric_limits<double>::infinity();
};

struct GridPosterior {
    Eigen::Vector2d lo, hi;
    int points = 0;                  // per axis
    Eigen::MatrixXd log_density;     // (i, j) ↔ θ = (x_i, y_j), relative to the top (max 0)
    Eigen::MatrixXd mass;            // normalised cell masses, summing to 1
    Eigen::Vector2d mean;
    Eigen::Matrix2d cov;
    double log_evidence = 0;         // log ∫ exp(log p) dθ for the log p given
    double edge_log_ratio = 0;       // max over the border of log p, minus the top
    std::vector<GridMode> modes;     // by decreasing mass
    Eigen::MatrixXi basin;           // (i, j) → index into modes

    double x(int i) const { return lo[0] + (hi[0] - lo[0]) * i / (points - 1); }
    double y(int j) const { return lo[1] + (hi[1] - lo[1]) * j / (points - 1); }
    // The mode whose basin holds the grid point nearest to θ (clamped to the grid).
    int basin_of(const Eigen::Vector2d& theta) const;
    // Mass of each mode's basin among draws (rows of a n × 2 matrix).
    std::vector<double> basin_fractions(const Eigen::MatrixXd& draws) const;
};

// The grid posterior of any log density over θ ∈ R² (up to a constant).
GridPosterior grid_posterior(const std::function<double(const Eigen::Vector2d&)>& log_density, const Eigen::Vector2d& lo,
                             const Eigen::Vector2d& hi, int points);

// The same for a compiled target of dimension 2 (throws std::invalid_argument otherwise).
GridPosterior grid_posterior(const Target& target, const Eigen::Vector2d& lo, const Eigen::Vector2d& hi, int points);

}  // namespace vbn
