// The masses of the minor modes that the symmetry jumps visit (docs/methods.md, "Symmetry
// jumps"): each draw is assigned to the copy of the major mode it lies nearest, and a copy's
// mass is the share of draws assigned to it, with its Monte Carlo standard error.
//
// The copies are the images g(m) of the major mode m under the moves g the jumps propose
// (flips, exchanges and their products; and the identity).

// A second estimate needs no draw to reach a copy: importance sampling from the major copy
// (add_importance_masses). With R_0 the region of draws assigned to the major copy and g_k the
// move onto copy k, g_k preserves volume and maps R_0 onto R_k (the assignment below is by
// distance, which the moves preserve, to a set of copies the moves permute: the whole group
// they generate), so
//     P(R_k) = ∫_{R_0} p(g_k θ) dθ,   P(R_k) / P(R_0) = E[r_k(θ) | θ ∈ R_0],   r_k = p(g_k θ) / p(θ),
// and P(R_k) = ρ_k / (1 + Σ_j ρ_j) with ρ_k that ratio. Each ρ_k is a ratio of means over the
// chains' draws (of 1_{R_0} r_k and of 1_{R_0}); its Monte Carlo error is the delta method's,
// mcse(1_{R_0} (r_k − ρ_k)) / mean(1_{R_0}), with the chains' autocorrelation. Where a copy is
// wider than the major one the ratios' tail is heavy and the estimate unreliable: their Pareto
// k̂ is reported (above 0.7, PSIS's threshold, do not trust it). m is found from the draws:
// the coordinate-wise median (the major copy holds most draws), then the mean of the draws each
// folded back by its copy's inverse move. Distances are scaled by the folded draws' sds (equal
// on the columns a move exchanges, so that the moves preserve them), so a weight near 0 in
// both copies decides nothing.
#pragma once

#include "inference/signed_permutation.hpp"
#include "lang/approximate_symmetry.hpp"
#include "runtime/report/relabel.hpp"

#include <Eigen/Core>

#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace vbn {

struct ModeMass {
    // Which nodes are flipped or exchanged in this copy: "d1", "d1 + d2", "d1 <-> d2",
    // "d1 or d2" (below).
    std::string flip;
    double mass = 0;   // share of the draws, all chains
    double mcse = 0;   // its Monte Carlo standard error (R's posterior::mcse_mean of the indicator)
    // By importance sampling from the major copy (see above); NaN where not computed (the jumps
    // proposed the generators alone, or no draw lay in the major copy).
    double importance = std::numeric_limits<double>::quiet_NaN();
    double importance_mcse = std::numeric_limits<double>::quiet_NaN();
    double importance_khat = std::numeric_limits<double>::quiet_NaN();  // Pareto k̂ of the ratios r_k
};

// The copies other than the major one: each the move onto it (on the involved coordinates) and
// its name, in the order the jumps enumerate them (inference/symmetry_jump.hpp).
//
// Where the model also has exact symmetries (an exchange of hidden nodes, runtime/report/
// relabel.hpp), an exact labeling h maps copy g(m) onto h g(m) = (h g h⁻¹)(h m): a copy of the
// equivalent mode h m, under the conjugate move. Copies that conjugation exchanges are then
// one mode up to labeling, and which of them a draw lands in depends on the labeling it was
// drawn (or relabelled) in: they are reported as one mode, "d1 or d2", whose mass is the sum.
// The assignment then compares each draw with every copy h g(m) (labelings and moves), so it
// does not depend on the labeling the draws are in.
struct FlipCopies {
    // The coordinates of θ any move changes or an exact labeling moves, sorted: the columns below.
    std::vector<int> theta;
    // Per copy, its move g and g⁻¹ on those columns, as codes: (g x)_j = ±x_q for
    // code[j] = ±(q + 1) (as the labelings' below and relabel.hpp's).
    std::vector<std::vector<int>> moves, inverse_moves;
    std::vector<std::string> names;  // per copy
    bool closed = true;  // the moves are the group they generate (false: the generators alone)
    // The exact labelings on those columns, the identity first, each given by its inverse
    // h⁻¹ as a code. The identity alone without exact symmetry.
    std::vector<std::vector<int>> inverse_labelings;
    // The modes reported: each the copies conjugation by the labelings exchanges (indices into
    // `moves`, ascending), in the order of their first copy; a copy alone without exact symmetry.
    std::vector<std::vector<int>> modes;
    std::vector<std::string> mode_names;    // the copies' names joined: "d1 or d2"
};
// `exact`: the model's exact labelings on θ's layout (labeling_group with the identity order),
// or null; copies are merged into modes only when the moves are closed (the whole group).
//
// `exact_moves` (with `exact_names`): the exact labelings' generators where the jumps propose
// them too (FitResult::exact_jump_moves). The copies are then the right cosets H g of the
// exact labelings H in the group G everything generates, one representative each and H
// itself left out (g m and h g m are one point up to labeling), and a mode is a double coset
// H g H (the cosets whose names depend on the labeling m was found in). Needs G enumerated
// and `exact`; else only the approximate moves' group is listed, as without them.
FlipCopies flip_copies(const std::vector<lang::ApproximateFlip>& flips, const std::vector<lang::ApproximateSwap>& swaps,
                       const LabelingGroup* exact, const std::vector<inference::SignedPermutation>& exact_moves = {},
                       const std::vector<std::string>& exact_names = {});
inline FlipCopies flip_copies(const std::vector<lang::ApproximateFlip>& flips, const LabelingGroup* exact = nullptr) {
    return flip_copies(flips, {}, exact);
}


// Where each draw lies: the mode (0: the major one, k: copies.modes[k − 1]) of the copy h g(m)
// nearest it, and the labeling h (an index into copies.inverse_labelings), draws × chains.
struct CopyAssignment {
    Eigen::MatrixXi mode;
    Eigen::MatrixXi labeling;
};

// `chains`: one draws × theta.size() matrix per chain (the columns of FlipCopies::theta), all
// the same length. One entry per mode of `copies`, in its order.
std::vector<ModeMass> mode_masses(const std::vector<Eigen::MatrixXd>& chains, const FlipCopies& copies);

CopyAssignment assign_copies(const std::vector<Eigen::MatrixXd>& chains, const FlipCopies& copies);
// The masses from an assignment: the share of draws in each mode.
std::vector<ModeMass> mode_masses_from(const CopyAssignment& copy, const FlipCopies& copies);

// The log posterior (up to a constant) at a full parameter vector θ.
using LogDensity = std::function<double(const Eigen::VectorXd& theta)>;

// Fills ModeMass::importance* of `masses` (one per mode, as mode_masses returns them) where
// copies.closed. `theta_of(c, i)` gives chain c's draw i as a full θ; `copy` is the draws'
// assignment. A draw in the major mode is first taken to the labeling of m by its h⁻¹ (the
// density is the same), and a mode's ratio is the sum of its copies'. Each draw used in the
// major mode costs 1 + K evaluations of log_density (K copies), so it uses every t-th draw of each chain, at most max_evaluations / (1 + K) draws
// (all 4,000 of a default run with one flip; 62 with 8 flips and their 255 copies).
void add_importance_masses(std::vector<ModeMass>& masses, const FlipCopies& copies, const CopyAssignment& copy,
                           const std::function<Eigen::VectorXd(std::size_t chain, Eigen::Index draw)>& theta_of,
                           const LogDensity& log_density, Eigen::Index max_evaluations = 16000);
// The same on up to `threads` threads, each with a density of its own from make_density() (a
// target's workspace is one thread's): the same numbers whatever the thread count.
void add_importance_masses(std::vector<ModeMass>& masses, const FlipCopies& copies, const CopyAssignment& copy,
                           const std::function<Eigen::VectorXd(std::size_t chain, Eigen::Index draw)>& theta_of,
                           const std::function<LogDensity()>& make_density, int threads,
                           Eigen::Index max_evaluations = 16000);

}  // namespace vbn
