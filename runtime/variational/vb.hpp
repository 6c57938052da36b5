// Variational EM for logistic belief networks: the Jaakkola–Jordan ξ-bound on every
// logistic factor and a mean-field Bernoulli q over the unobserved entries of each row
// (Variational MCMC, Sec. 3, Fig. 2–3, eq. 1–8; Jaakkola & Jordan 2000, eq. 7–12, Sec. 5,
// App. B).
//
// q(θ, h) = Π_blocks N(θ_i; μ_i, Σ_i) · Π_rows Π_unobserved Bernoulli(h), and every step
// (the Gaussian q(θ_i), the ξ of each factor, each q(h)) maximises the same lower bound on
// log p(x_v) in closed form, so the bound never decreases. The bound is reported with all
// its constants and can be compared with a true log evidence.
//
// Rows are read as the weighted patterns of runtime/target/families.hpp: a duplicated row only
// doubles a weight, and the order of the rows does not change restart 0, which starts from
// the prior. Random restarts draw one start per distinct summed-out case, in the order the
// cases first appear. Like every mean-field ξ-bound fit, q(θ) is narrower than the posterior
// (the bound's curvature 2λ(ξ) exceeds the logistic's g(η)(1 − g(η)) away from η = 0).
#pragma once

#include "inference/gaussian.hpp"
#include "lang/ir.hpp"
#include "runtime/data/dataset.hpp"

#include <Eigen/Core>

#include <atomic>
#include <cstdint>
#include <functional>
#include <vector>

namespace vbn {

struct Families;
namespace distributed {
class Communicator;
}

struct VbOptions {
    double tolerance = 1e-9;     // stop when |ΔELBO| ≤ tolerance · |ELBO| between iterations
    int max_iterations = 2000;   // EM iterations per restart
    // Fits from different starting q(h) (Variational MCMC, Sec. 6); 0: automatic
    // (restarts_for below).
    int restarts = 0;
    std::uint64_t seed = 1;      // restart k ≥ 1 starts from q(h) drawn with Rng(seed, k)
    int mean_field_sweeps = 1;   // coordinate sweeps over q(h) per EM iteration
    const std::atomic<bool>* cancel = nullptr;  // set by another thread to stop (Error kind cancelled)
    // Cancelled once a restart has finished: return the restarts finished so far (the one in
    // progress is dropped; VbResult::interrupted) rather than throw. Before the first, it throws.
    bool keep_finished_on_cancel = false;
    // Called after each restart finishes, with its 0-based index (e.g. to report progress, or
    // in tests to cancel after a given restart).
    std::function<void(int restart)> on_restart = {};
    // Restarts run side by side on up to this many threads (each from its own start, so the
    // fits do not depend on it); on_restart is then called in order once they have all run.
    // Each restart holds its own q(h) and ξ per row: raise it only where those are small.
    int threads = 1;
    // Extrapolate every third iteration (SQUAREM), which reaches the same fit in fewer
    // iterations (1.7-3.5x fewer on the hidden-variable corpus); off: plain EM throughout.
    // Rows sharded among processes (variational over ShardedFamilies) are extrapolated only
    // on a model without unobserved entries.
    bool accelerate = true;
};

struct VbFit {
    Eigen::VectorXd mean;            // E_q[θ], length Graph::dim
    // Cov_q[θ] block by block: covs[b] is the covariance of Graph::blocks[b], which starts at
    // offsets[b] in θ, and a last diagonal one of the learned scales' log τ where the model
    // has any (q(τ)'s variance of log τ). q factorises over the blocks, so Cov_q is zero
    // between them and is never stored whole (19,998² doubles would be 3.2 GB for a model
    // with 10^4 nodes).
    std::vector<Eigen::MatrixXd> covs;
    std::vector<int> offsets;
    // q(τ)'s mean and sd of each learned scale τ (Graph::scales), on τ's own scale: mean
    // holds E_q[log τ], which is what θ holds, and users read τ.
    std::vector<double> scale_mean, scale_sd;
    double elbo = 0;                 // the lower bound on log p(x_v) at the end
    std::vector<double> elbo_trace;  // the bound after each iteration (non-decreasing)
    int iterations = 0;
    bool converged = false;          // false: stopped at max_iterations
    int restart = 0;                 // which start this fit came from
    int steps_undone = 0;            // SQUAREM steps that lowered a block's bound, taken back

    Eigen::VectorXd block_mean(const ir::Block& b) const { return mean.segment(b.offset, b.size); }
    const Eigen::MatrixXd& block_cov(const ir::Block& b) const;
    double variance(int k) const;     // Var_q[θ_k]
    Eigen::VectorXd variances() const;  // the diagonal of Cov_q[θ]
    // Cov_q[θ] as one dim × dim matrix: only for consumers that need the joint of a small model.
    Eigen::MatrixXd dense_cov() const;
    // q(θ) as a proposal: N(mean, Cov_q), or a t with df degrees of freedom and that scale,
    // scale multiplied by inflation; block diagonal, so its memory is O(Σ block²).
    inference::GaussianProposal proposal(double df = inference::GaussianProposal::gaussian_df, double inflation = 1.0) const;
};

struct VbResult {
    std::vector<VbFit> fits;  // one per restart, in restart order
    int best = 0;             // index of the fit with the largest ELBO
    double seconds = 0;       // wall time of the whole call
    bool interrupted = false; // cancelled: fits holds fewer than VbOptions::restarts fits

    const VbFit& best_fit() const { return fits[static_cast<std::size_t>(best)]; }
};

// Fits q to the data. Throws vbn::Error of kind usage for bad options, data when the data
// do not fit the graph, and inference when the iteration breaks down numerically (a prior
// that is not finite, a posterior precision that is not positive definite, a value that
// is not finite) — it never returns NaN.
VbResult variational(const ir::Graph& graph, const Dataset& data, const VbOptions& options = {});

// The number of restarts VbOptions::restarts asks for: itself when positive; 0 (automatic)
// gives hidden_node_restarts on a model with hidden nodes, else 1. Why: the first start,
// q(h) from the prior means, is the symmetric point of a hidden root with probability 1/2
// and zero-mean weights, where EM cannot move the weights on it (E[h] = 0 in every row), so
// it stops where the hidden node explains nothing (sbn_3x8: ELBO -1180 there, -964 from any
// of 7 random starts). Restarts from random q(h) leave it, and the best ELBO is kept.
constexpr int hidden_node_restarts = 8;
int restarts_for(const ir::Graph& graph, int requested);

// The hidden elements at the symmetric point of a fit: every learned weight on them (in
// their children) has mean 0 to within 10^-6 of its sd, so they explain nothing there. At
// that point EM cannot move those weights (see restarts_for); a fit that is the best of
// several starts and still there says the data give those nodes nothing to explain, or
// that no start left the point, or that mean-field q prefers it (tests/corpus/sbn2: every
// start, from random q(h) or from weights drawn from the prior, ends with the top node t[1]
// there, while the exact posterior uses it). Hidden elements without learned weights on them are not
// listed. Names as users see them ("h[2]").
std::vector<std::string> idle_hidden(const ir::Graph& graph, const VbFit& fit);

// The warning for a best fit (of `starts`) with idle hidden elements ("" when it has none).
std::string idle_hidden_warning(const ir::Graph& graph, const VbFit& best, int starts);

// The same on families already built from the data (runtime/target/families.hpp); no limit on
// the size of their components applies here, since nothing is enumerated.
VbResult variational(const ir::Graph& graph, const Families& families, const VbOptions& options = {});

// The rows split into shards among processes (runtime/distributed/): the families of this
// process's shards, first … first + local.size() − 1 of `shards`, and the processes.
struct ShardedFamilies {
    std::vector<const Families*> local;
    int first = 0;
    int shards = 1;
    distributed::Communicator* comm = nullptr;
};

// The same fit over sharded rows: every process calls it at once, with the same graph and
// options, and each gets the same result. Each iteration sums the shards' shares of every
// block's update and of the bound in shard order, so the fit does not depend on how many
// processes hold the shards; from the first start it is the unsharded fit up to rounding, and
// random restarts draw each shard's q(h) from a stream of its own. Rank 0's options.cancel
// stops every process.
VbResult variational(const ir::Graph& graph, const ShardedFamilies& rows, const VbOptions& options = {});

}  // namespace vbn
