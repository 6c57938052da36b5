// The masses of the minor modes that the symmetry jumps visit (docs/methods.md, "Symmetry
// jumps"): each draw is assigned to the copy of the major mode it lies nearest, and a copy's
// mass is the share of draws assigned to it, with its Monte Carlo standard error.
//
// The copies are the images g(m) of the major mode m under the flips g the jumps propose (and
// the identity). m is found from the draws: the coordinate-wise median (the major copy holds
// most draws), then the mean of the draws each folded back by its copy's flip. Distances are
// scaled by the folded draws' sds, so a weight near 0 in both copies decides nothing.
#pragma once

#include "lang/approximate_symmetry.hpp"

#include <Eigen/Core>

#include <string>
#include <vector>

namespace vbn {

struct ModeMass {
    std::string flip;  // which nodes are flipped in this copy: "d1", "d1 + d2"
    double mass = 0;   // share of the draws, all chains
    double mcse = 0;   // its Monte Carlo standard error (R's posterior::mcse_mean of the indicator)
};

// The copies other than the major one: each the columns (of the involved coordinates) it
// negates and its name, in the order the jumps enumerate them (inference/symmetry_jump.hpp).
struct FlipCopies {
    std::vector<int> theta;  // the coordinates of θ any flip negates, sorted: the columns below
    std::vector<std::vector<int>> negated;  // per copy, indices into `theta`
    std::vector<std::string> names;
};
FlipCopies flip_copies(const std::vector<lang::ApproximateFlip>& flips);

// `chains`: one draws × theta.size() matrix per chain (the columns of FlipCopies::theta), all
// the same length. One entry per copy of `copies`, in its order.
std::vector<ModeMass> mode_masses(const std::vector<Eigen::MatrixXd>& chains, const FlipCopies& copies);

}  // namespace vbn
