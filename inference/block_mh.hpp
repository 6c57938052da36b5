// Block independence Metropolis–Hastings (variational-mcmc.txt §4.2, Fig. 6): one step sweeps the
// density's blocks in order; block j is proposed from its own fixed proposal q_j and accepted
// against the exact conditional p(θ_j | θ_-j) with ratio
//     [p(θ*_j, θ_-j) q_j(θ_j)] / [p(θ_j, θ_-j) q_j(θ*_j)],
// where the p ratio only needs the terms that involve block j (Density::block_log_density), so
// each block pays for its own terms, never the whole density.
//
// The q_j are the marginals of a joint proposal — "a Gaussian whose mean is a subset of the
// elements of the mean of the original variational distribution and whose covariance is the
// corresponding block-diagonal component" — or given one per block.
//
// Whitened sub-blocks (BlockSplit). An independence proposal for a whole block stops working as
// the block grows: the importance weights p/q of a t in 50 dimensions vary too much (pilot k̂
// 0.72, min bulk-ESS 42 of 4,000 draws on the paper's 50-parent model). In the proposal's own
// coordinates z = L⁻¹(θ_j − μ_j), where q_j = t(μ_j, L L'), the posterior is close to N(0, I),
// so groups of those coordinates are nearly independent of each other. A block larger than
// BlockSplit::above is therefore moved as a Metropolis-within-Gibbs sweep over sub-blocks S of
// at most max_size coordinates of z: z*_S is drawn from a fixed standard t (or Gaussian) q_S in
// |S| dimensions, the rest of z is kept, θ*_j = μ_j + L z*, and the move is accepted against
// the block's exact terms with
//     [p(θ*_j, θ_-j) q_S(z_S)] / [p(θ_j, θ_-j) q_S(z*_S)]
// (the map θ_j = μ_j + L z is fixed, so its Jacobian cancels). Each sub-block move costs one
// evaluation of the block's terms. The chain's state stays θ; z is recomputed by a triangular
// solve whenever θ_j changed outside this kernel.
//
// With BlockSplit::recentre, the warmup moves μ_j (in place of the mode a Laplace fit gives) to
// the mean of the chain's own draws twice: after a fifth of the warmup steps this kernel takes,
// to the mean over the tenth before (so that the rest of the warmup already mixes well), and
// at the end of warmup to the mean over its second half. On the 50-parent model the posterior
// mean lies 1.7 whitened units from the mode, most of it in the first coordinates of z, which
// capped their sub-block's acceptance at 0.4. L is kept (a 50 × 50 covariance from a few
// hundred correlated draws is worse than the Laplace one). Nothing changes after the warmup; a
// kernel inside a mixture counts only its own steps against the warmup's iterations.
//
// With BlockRecentre, the warmup also moves the centre of each whole (unsplit) block's t to the
// mean of the chain's own draws, keeping its scale matrix: from a tenth of the warmup steps this
// kernel takes, the block's values after each sweep are summed into their mean m over n draws;
// halfway, and again at the end of warmup over all n draws since the tenth, the centre becomes
//     μ = (n m + w μ₀) / (n + w),
// the mean of the pooled draws when the initial centre μ₀ (the exact posterior's pilot-weighted
// mean) counts as w = prior_draws draws. On the paper's unimodal data the posterior mean is
// what the initial t misses: with μ and Σ both taken from 4 × 40,000 warmup draws, a t(30) at
// d = 20 accepted 81% of its proposals, and with μ from them and the Laplace Σ kept, 82%; a
// covariance from a chain's own ~900 warmup draws instead lowered acceptance from 77% to 62%
// (the noise of 210 entries estimated from correlated draws). Every draw counted is a draw of a
// kernel that leaves the posterior invariant, so where the initial centre is off the chain's
// draws still find the posterior mean (if slowly), and the halfway re-centring lets the second
// half's draws come from a better proposal. Nothing changes after the warmup, so the sampling
// phase is a fixed-kernel chain; each chain adapts on its own draws only.
//
// With overrelax = α ≠ 0, whole blocks propose after the warmup by an overrelaxed move about
// their proposal q_j instead of independently of where the chain is (GaussianProposal::
// sample_overrelaxed): u* = α u + sqrt(1 − α²) ε / sqrt(λ) in q_j's whitened coordinates. That
// proposal kernel is reversible with respect to q_j, so the move is accepted with the same
// ratio as above. Where p(θ_j | θ_-j) is close to q_j, α < 0 makes successive draws
// negatively correlated: for a Gaussian q_j the draws of a linear function have lag-k
// autocorrelation α^k, so their variance falls by (1 + α)/(1 − α) (a third at α = -0.5),
// while even functions such as squares, with autocorrelation α^2k, lose by (1 + α²)/(1 − α²).
// The warmup keeps the independence proposal, which leaves dispersed initial points fastest.
// Split blocks are not overrelaxed. The move is exact whatever q_j is, but the gain needs q_j
// close to p(θ_j | θ_-j): where q_j is much wider (a marginal proposing for a strongly coupled
// block, or an inflated fit), proposals near the reflection of θ_j fall outside the
// conditional, and the chain's spread, started at the centre, took hundreds of sweeps to reach
// the target's (on a 2-D Gaussian with correlation 0.8 moved as two blocks, from a proposal
// 1.5 times too wide, at α = -0.5: variance 8% short after 100 sweeps, against 1% with
// independence proposals). vbn overrelaxes only separable blocks whose proposal the pilot
// found close to the posterior (runtime/sampling/kernels.cpp).
//
// Proposals drawn ahead. Where the density evaluates a whole block's values together
// (Density::block_batch > 1: a block of many rows, whose every evaluation reads them all
// from memory), the kernel draws that block's next proposals at once and evaluates them in
// one pass over the rows. Independence proposals do not depend on where the chain is, so
// every one drawn ahead is used. An overrelaxed proposal starts from the chain's point, so
// each is drawn from the one before it, as if that one were accepted; after a rejection the
// rest started from a point the chain did not reach, and are discarded (with the random
// numbers they used, which no decision has seen: what the chain uses is still fresh). The
// proposals are the kernel's own proposals either way, so the chain is the same Markov chain;
// only its random numbers are consumed in another order. At 97% acceptance and 16 ahead, 12.5
// of every 16 overrelaxed proposals are used. The block's value at the chain's point comes
// from the same evaluation (Density::block_log_densities), so that every ratio compares
// values computed alike.
#pragma once

#include "inference/gaussian.hpp"
#include "inference/kernel.hpp"
#include "inference/metric_adaptation.hpp"
#include "inference/metropolis.hpp"

#include <string>
#include <vector>

namespace vbn::inference {

// Which blocks are moved in whitened sub-blocks, and how (see above).
struct BlockSplit {
    int above = 0;          // blocks with more than this many coordinates are split; 0: none
    int max_size = 10;      // coordinates of z per sub-block, at most (sizes as equal as possible)
    double df = 0;          // the sub-blocks' proposal: t_df (infinity: Gaussian); 0: the block
                            // proposal's own df
    double scale = 1.0;     // the sub-blocks' proposal: scale² I
    bool recentre = false;  // re-centre on the warmup's draws

    bool splits(int size) const { return above > 0 && size > above; }
    // A block proposed from q: never split when q is not affine (a triangular map or split
    // scales, which the sub-block moves would drop, using only its affine part, and which fit
    // the whole block).
    bool splits(const GaussianProposal& q) const { return splits(q.dim()) && q.affine(); }
    // The number of sub-blocks a block of `size` coordinates is moved in (1 if not split).
    int parts(int size) const;
    // "sub-blocks of at most 10 whitened coordinates (t(30), scale x 1.1, re-centred in warmup)"
    std::string describe() const;
};

// Whole blocks re-centred on the warmup's draws (see above).
struct BlockRecentre {
    bool enabled = false;
    double prior_draws = 0;  // w: the initial centre counts as this many draws
    // Which of the target's blocks (by index) are re-centred, when enabled; empty: every whole
    // block. A block whose centre has no sampling noise to average out is better left alone.
    std::vector<char> blocks{};

    bool applies(int block) const {
        return enabled && (blocks.empty() || (block < static_cast<int>(blocks.size()) && blocks[static_cast<std::size_t>(block)]));
    }

    // "re-centred in warmup on each chain's own draws (the initial centre counted as 300 draws)"
    std::string describe() const;
};

class BlockIndependenceMH : public Kernel {
public:
    // Block proposals are the marginals of `joint` over the density's blocks (taken at the
    // first step, when the blocks are known).
    // overrelax: α in (-1, 1) for every whole block after the warmup (see above); 0:
    // independence proposals throughout.
    explicit BlockIndependenceMH(GaussianProposal joint, BlockSplit split = {}, BlockRecentre recentre = {},
                                 double overrelax = 0);
    // One proposal per block, in block order; sizes are checked against the density's blocks
    // at the first step. overrelax: empty (none), or one α per block (0: that block's
    // proposals are independent).
    explicit BlockIndependenceMH(std::vector<GaussianProposal> per_block, BlockSplit split = {},
                                 BlockRecentre recentre = {}, std::vector<double> overrelax = {});

    void step(State& state, Density& target, Rng& rng, TransitionInfo& info) override;
    void begin_warmup(int iterations) override;
    void end_warmup() override;
    std::unique_ptr<Kernel> clone() const override;
    void collect_stats(std::vector<KernelStats>& out) const override;
    std::string name() const override { return "block independence mh"; }

    // Acceptance rate of each move's proposals since construction: one per block in block
    // order, or per sub-block for a split block (empty before the first step).
    std::vector<double> block_acceptance() const;

    // The proposal of each whole (unsplit) block, in block order (empty before the first step):
    // after the warmup, the one the sampling phase uses.
    std::vector<GaussianProposal> block_proposals() const;

private:
    // A split block: its proposal's location and Cholesky factor, and z = L⁻¹(θ_j − μ_j).
    struct Whitened {
        int offset = 0;
        int size = 0;
        Eigen::VectorXd mean;
        Eigen::MatrixXd lower;
        Eigen::VectorXd z;         // of cached_x
        Eigen::VectorXd proposed;  // z with one sub-block replaced (equal to z between moves)
        Eigen::VectorXd cached_x;
        bool cached = false;
        Eigen::VectorXd z_sum;     // warmup: Σ z over the steps that count towards the new centre
    };

    // One move: a whole block (whitened < 0) or a sub-block of a split one.
    struct Block {
        int target_block = 0;
        int offset = 0;
        int size = 0;
        int whitened = -1;   // index into whitened_
        int sub_offset = 0;  // the sub-block's first coordinate of z
        GaussianProposal q;  // of the block's θ, or of the sub-block's z
        Eigen::VectorXd cached_x;  // the block's value whose log q is cached_log_q
        double cached_log_q = 0;
        bool cached = false;
        double overrelax = 0;        // α after the warmup (whole blocks only)
        Eigen::VectorXd cached_u;    // overrelaxed moves: cached_x's whitened coordinates
        Eigen::VectorXd proposed_u;  // overrelaxed moves: the proposal's
        long proposed = 0;
        long accepted = 0;
        int centre = -1;  // index into centres_ (whole blocks, when BlockRecentre is on)
        // Proposals drawn ahead (whole blocks with Density::block_batch > 1; see above).
        int batch = 1;
        int ahead = 0;                 // proposals drawn ahead, the first `used` of them used
        int used = 0;
        Eigen::MatrixXd ahead_x;       // size × batch: the proposals
        Eigen::MatrixXd ahead_u;       // overrelaxed: their whitened coordinates
        Eigen::VectorXd ahead_log_q;   // their log q
        Eigen::VectorXd ahead_value;   // their block_log_densities
        Eigen::MatrixXd at;            // size × 1: cached_x, for its value
        Eigen::VectorXd at_value;      // its block_log_densities
        bool has_value = false;        // at_value[0] is cached_x's
    };

    // A whole block's warmup draws and its initial centre.
    struct Centre {
        WelfordMean draws;
        Eigen::VectorXd initial;
        Eigen::MatrixXd lower;  // the proposal's Cholesky factor, kept (assign() then does not allocate)
        Eigen::VectorXd x;      // scratch: the block's value
    };

    void setup(const Density& target);
    double move(int b, State& state, Density& target, Rng& rng);
    double move_whitened(Block& block, State& state, Density& target, Rng& rng);
    double move_ahead(Block& block, State& state, Density& target, Rng& rng);
    // Brings a whole block's cached point and log q there (and, overrelaxed, its whitened
    // coordinates) to x; true where x is not the cached point.
    static bool sync_cache(Block& block, const Eigen::Ref<const Eigen::VectorXd>& x, bool overrelaxed);
    // Draws and evaluates block.batch proposals from block.cached_x.
    static void draw_ahead(Block& block, Density& target, Rng& rng, bool overrelaxed);
    // Forgets the proposals drawn ahead (the proposal changed, or the chain's point did).
    void discard_ahead();
    // The MH test of the proposal in proposal_ (log q there: log_q_new; at the state:
    // log_q_now); on acceptance, moves the state and records the proposal's terms.
    MetropolisDecision decide(Block& block, State& state, Density& target, Rng& rng, double log_q_new, double log_q_now);

    GaussianProposal joint_;
    std::vector<GaussianProposal> given_;
    BlockSplit split_;
    BlockRecentre whole_recentre_;
    std::vector<double> overrelax_;  // one per target block, or one for all (joint_)
    bool in_warmup_ = false;
    std::vector<Block> blocks_;
    std::vector<Centre> centres_;
    std::vector<Whitened> whitened_;
    bool ready_ = false;
    Eigen::VectorXd proposal_;  // x with one block replaced
    BlockValueCache current_;   // the state's block terms, so a move evaluates only the proposal
    KernelStats stats_;
    void recentre();            // μ_j += L z̄ over the draws summed so far, if enough
    void recentre_whole();      // whole blocks' centres from their warmup draws so far, if enough

    int warmup_step_ = -1;      // steps taken in this warmup (-1: not in warmup)
    int warmup_total_ = 0;      // the warmup's iterations
    long centre_draws_ = 0;     // steps summed into Whitened::z_sum
    Eigen::VectorXd shift_;     // scratch for the re-centring
};

}  // namespace vbn::inference
