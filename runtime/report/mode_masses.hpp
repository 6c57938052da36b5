// The masses of the minor modes that the symmetry jumps visit (docs/methods.md, "Symmetry
// jumps"): each draw is assigned to the copy of the major mode it lies nearest, and a copy's
// mass is the share of draws assigned to it, with its Monte Carlo standard error.
//
// The copies are the images g(m) of the major mode m under the flips g the jumps propose (and
// the identity).

// A second estimate needs no draw to reach a copy: importance sampling from the major copy
// (add_importance_masses). With R_0 the region of draws assigned to the major copy and g_k the
// flip onto copy k, g_k is its own inverse, preserves volume and maps R_0 onto R_k (the
// assignment below is by distance, which the flips preserve, to a set of copies the flips
// permute), so
//     P(R_k) = ∫_{R_0} p(g_k θ) dθ,   P(R_k) / P(R_0) = E[r_k(θ) | θ ∈ R_0],   r_k = p(g_k θ) / p(θ),
// and P(R_k) = ρ_k / (1 + Σ_j ρ_j) with ρ_k that ratio. Each ρ_k is a ratio of means over the
// chains' draws (of 1_{R_0} r_k and of 1_{R_0}); its Monte Carlo error is the delta method's,
// mcse(1_{R_0} (r_k − ρ_k)) / mean(1_{R_0}), with the chains' autocorrelation. Where a copy is
// wider than the major one the ratios' tail is heavy and the estimate unreliable: their Pareto
// k̂ is reported (above 0.7, PSIS's threshold, do not trust it). m is found from the draws: the coordinate-wise median (the major copy holds
// most draws), then the mean of the draws each folded back by its copy's flip. Distances are
// scaled by the folded draws' sds, so a weight near 0 in both copies decides nothing.
#pragma once

#include "lang/approximate_symmetry.hpp"

#include <Eigen/Core>

#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace vbn {

struct ModeMass {
    std::string flip;  // which nodes are flipped in this copy: "d1", "d1 + d2"
    double mass = 0;   // share of the draws, all chains
    double mcse = 0;   // its Monte Carlo standard error (R's posterior::mcse_mean of the indicator)
    // By importance sampling from the major copy (see above); NaN where not computed (the jumps
    // proposed the generators alone, or no draw lay in the major copy).
    double importance = std::numeric_limits<double>::quiet_NaN();
    double importance_mcse = std::numeric_limits<double>::quiet_NaN();
    double importance_khat = std::numeric_limits<double>::quiet_NaN();  // Pareto k̂ of the ratios r_k
};

// The copies other than the major one: each the columns (of the involved coordinates) it
// negates and its name, in the order the jumps enumerate them (inference/symmetry_jump.hpp).
struct FlipCopies {
    std::vector<int> theta;  // the coordinates of θ any flip negates, sorted: the columns below
    std::vector<std::vector<int>> negated;  // per copy, indices into `theta`
    std::vector<std::string> names;
    bool closed = true;  // every product of the flips is listed (false: the generators alone)
};
FlipCopies flip_copies(const std::vector<lang::ApproximateFlip>& flips);

// `chains`: one draws × theta.size() matrix per chain (the columns of FlipCopies::theta), all
// the same length. One entry per copy of `copies`, in its order.
std::vector<ModeMass> mode_masses(const std::vector<Eigen::MatrixXd>& chains, const FlipCopies& copies);

// The copy each draw is nearest (0: the major one, k: copies.negated[k − 1]), draws × chains.
Eigen::MatrixXi assign_copies(const std::vector<Eigen::MatrixXd>& chains, const FlipCopies& copies);
// The masses from an assignment: the share of draws in each copy.
std::vector<ModeMass> mode_masses_from(const Eigen::MatrixXi& copy, const FlipCopies& copies);

// The log posterior (up to a constant) at a full parameter vector θ.
using LogDensity = std::function<double(const Eigen::VectorXd& theta)>;

// Fills ModeMass::importance* of `masses` (one per copy, as mode_masses returns them) where
// copies.closed. `theta_of(c, i)` gives chain c's draw i as a full θ; `copy` is the draws'
// assignment. Each draw used in the major copy costs 1 + K evaluations of log_density (K
// copies), so it uses every t-th draw of each chain, at most max_evaluations / (1 + K) draws
// (all 4,000 of a default run with one flip; 62 with 8 flips and their 255 copies).
void add_importance_masses(std::vector<ModeMass>& masses, const FlipCopies& copies, const Eigen::MatrixXi& copy,
                           const std::function<Eigen::VectorXd(std::size_t chain, Eigen::Index draw)>& theta_of,
                           const LogDensity& log_density, Eigen::Index max_evaluations = 16000);
// The same on up to `threads` threads, each with a density of its own from make_density() (a
// target's workspace is one thread's): the same numbers whatever the thread count.
void add_importance_masses(std::vector<ModeMass>& masses, const FlipCopies& copies, const Eigen::MatrixXi& copy,
                           const std::function<Eigen::VectorXd(std::size_t chain, Eigen::Index draw)>& theta_of,
                           const std::function<LogDensity()>& make_density, int threads,
                           Eigen::Index max_evaluations = 16000);

}  // namespace vbn
