// Whether an independence proposal's tails are lighter than its block's posterior's, looking
// where the proposal's own draws do not.
//
// An independence Metropolis–Hastings chain at x stays there for about w(x) / E_q[w] iterations
// (w = p/q). Where q's tails are lighter than p's, w grows without bound outwards: q seldom
// proposes such a point, but a chain that reaches one (from its start, or by one lucky
// proposal) stays for hundreds of iterations. A logistic regression near separation does this
// to a t fitted to its bulk: along the separating direction its posterior decays like its
// prior, several times wider than the Laplace fit. The pilot check (laplace_proposal.hpp) draws
// from q and so does not see it: a block whose chains stuck had pilot k̂ 0.20
// (tests/runtime/test_many_blocks_grid.cpp).
//
// The probe evaluates w at probe_radii scale units along each axis of q's scale matrix, both
// ways, and estimates E_q[w] from `draws` draws of q: a probe point where w exceeds that mean
// sticky_stay-fold is a place where a chain that arrives stays sticky_stay iterations on average
// (a well-fitted block accepts about nine proposals in ten).
#pragma once

#include "inference/gaussian.hpp"
#include "inference/rng.hpp"
#include "runtime/target/target.hpp"

#include <Eigen/Core>

#include <array>
#include <cmath>

namespace vbn {

// Beyond the bulk of q in low dimensions (3) and well into its tail (6): between them they
// catch a posterior that turns heavier than q near its bulk and one that does so far out.
inline constexpr std::array<double, 2> probe_radii{3.0, 6.0};

inline constexpr double sticky_stay = 10;

struct TailProbe {
    double probe_log_w = 0;  // the largest log w over the probe points
    double mean_log_w = 0;   // log of the mean of w over the draws from q
    bool light() const { return probe_log_w - mean_log_w > std::log(sticky_stay); }
};

// Block b of a target whose block b depends on θ through block b alone (Target::block_separable),
// against q over that block. theta is a full θ used as scratch: its block b is restored.
TailProbe probe_tails(const Target& target, int b, inference::GaussianProposal& q, Eigen::VectorXd& theta,
                      Target::Workspace& ws, inference::Rng& rng, int draws);

}  // namespace vbn
