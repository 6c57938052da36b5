// Gibbs over the unobserved values (the `gibbs` method): the chain's state is θ together
// with every unobserved entry that matters — hidden nodes and missing values that have an
// observed descendant in their row — and the sampler alternates
//
//   1. a sweep drawing each unobserved entry from its exact conditional given θ and its
//      Markov blanket in the row: its own logistic term given its parents and the terms of
//      its children, p(x_v = +1 | ·) = g(Σ_terms [log g(x_j η_j)|x_v=+1 − log g(x_j η_j)|x_v=−1]);
//   2. a θ kernel on p(θ | completed data): with every entry filled in, the network is fully
//      observed, its posterior factorises over blocks and each block is a Bayesian logistic
//      regression whose terms come in a few distinct patterns.
//
// Unobserved entries without an observed descendant ("barren") are not sampled: they sum
// to one exactly whatever θ is, so leaving them out is exact (a Rao–Blackwellisation).
// Nothing is ever enumerated, so rows with any number of unobserved values are fine.
//
//   GibbsModel model(target);                   // target built with TargetOptions::sum_out = false
//   GibbsDensityFactory factory(model);         // one GibbsDensity (θ density + hidden values) per chain
//   Cycle{HiddenGibbs, any block kernel}        // the kernel: see make_gibbs_kernel in kernels.cpp
//
// The density a chain sees is the complete-data log joint log p(θ, x_v, x_h) (without the
// constants Target::log_constant() drops) at the chain's current hidden values, so any
// kernel that leaves a Density invariant leaves p(θ | x_v, x_h) invariant, and the cycle
// leaves p(θ, x_h | x_v) invariant.
#pragma once

#include "inference/density.hpp"
#include "inference/gaussian.hpp"
#include "inference/kernel.hpp"
#include "runtime/target/target.hpp"

#include <Eigen/Cholesky>

#include <cstdint>
#include <vector>

namespace vbn {

// The immutable part shared by all chains: per summed-out case of the data (a Component of
// runtime/target/families.hpp, repeated `rows` times), its factors with the bit layout of their
// unobserved inputs, and which factors each unobserved entry touches.
class GibbsModel {
public:
    // graph is the model the target was built from (for its priors). target must be built with TargetOptions::sum_out = false (or have no unobserved
    // values) and outlive the model. Throws vbn::Error (usage) when a case's row count is
    // not a whole number, and (limit) when one logistic term has more than 62 unobserved
    // inputs.
    GibbsModel(const ir::Graph& graph, const Target& target);

    struct Link {
        int var = 0;      // local variable of the component
        std::uint64_t mask = 0;  // its bit in the factor's configuration code (a product's: all of them)
        int feature = -1; // position in the block, or -1 for a fixed coefficient
        double coef = 0;  // sign of the feature, or the fixed coefficient
        std::array<int, ir::max_product_nodes - 1> also{-1, -1, -1};  // a product's further variables
    };
    struct Term {
        int component = 0;
        int factor = 0;         // index in Component::factors
        int block = -1;
        int value = 0;          // ±1 when the term's node is observed, else 0
        int self = -1, self_bit = -1;
        std::vector<int> vars;  // distinct unobserved inputs; bit k of a code is vars[k] = +1
        std::vector<Link> links;
        long codes = 0;         // offset of this term's rows in the per-chain code arrays
    };
    struct Case {
        int size = 0;                          // unobserved entries per row
        long rows = 0;
        long offset = 0;                       // first entry in the hidden-value array
        std::vector<int> terms;                // its terms (indices into terms())
        std::vector<std::vector<int>> touches; // per local variable: terms it enters
    };

    const Target& target() const { return *target_; }
    const std::vector<Case>& cases() const { return cases_; }
    const std::vector<Term>& terms() const { return terms_; }
    const std::vector<int>& terms_of_block(int b) const { return terms_of_block_[static_cast<std::size_t>(b)]; }
    long hidden_values() const { return hidden_values_; }  // Σ rows × size
    long code_slots() const { return code_slots_; }        // Σ over terms of their case's rows
    int max_links() const { return max_links_; }
    // A Student-t entry of a block's prior (ir::Block::prior_df): local index, location, ν, s².
    struct HeavyEntry {
        int index = 0;
        double mean = 0, nu = 0, scale2 = 0;
    };
    const std::vector<HeavyEntry>& heavy_entries(int b) const { return heavy_[static_cast<std::size_t>(b)]; }
    // Block b's weights with a learned scale: N(mean, τ²), τ = exp(θ[log_scale]).
    struct ScaledEntry {
        int index = 0;
        double mean = 0;
        int log_scale = 0;
    };
    const std::vector<ScaledEntry>& scaled_entries(int b) const { return scaled_[static_cast<std::size_t>(b)]; }
    // Block b's prior precision Σ₀⁻¹ and Σ₀⁻¹ μ₀ over its Gaussian entries (rows and columns
    // of Student-t entries are 0).
    const Eigen::MatrixXd& prior_precision(int b) const { return prior_precision_[static_cast<std::size_t>(b)]; }
    const Eigen::VectorXd& prior_shift(int b) const { return prior_shift_[static_cast<std::size_t>(b)]; }

private:
    const Target* target_;
    std::vector<Eigen::MatrixXd> prior_precision_;
    std::vector<Eigen::VectorXd> prior_shift_;
    std::vector<std::vector<HeavyEntry>> heavy_;
    std::vector<std::vector<ScaledEntry>> scaled_;
    std::vector<Case> cases_;
    std::vector<Term> terms_;
    std::vector<std::vector<int>> terms_of_block_;
    long hidden_values_ = 0, code_slots_ = 0;
    int max_links_ = 0;
};

// One chain's density: θ's complete-data log joint at this chain's hidden values, which it
// owns. Evaluation allocates nothing.
class GibbsDensity : public inference::Density {
public:
    explicit GibbsDensity(const GibbsModel& model);

    int dim() const override { return model_->target().dim(); }
    double log_density(const Eigen::VectorXd& x) override;
    double log_density_gradient(const Eigen::VectorXd& x, Eigen::VectorXd& grad) override;
    const GibbsModel& model() const { return *model_; }
    int block_count() const override { return model_->target().blocks(); }
    inference::BlockRange block(int b) const override {
        return {model_->target().block_offset(b), model_->target().block_size(b)};
    }
    double block_log_density(int b, const Eigen::VectorXd& x) override;

    // Every unobserved entry drawn from ±1 with equal probability (a dispersed start).
    void randomise(inference::Rng& rng);
    // One systematic scan: each unobserved entry of each row drawn from its exact
    // conditional given θ and the row's other values.
    void sweep(const Eigen::VectorXd& theta, inference::Rng& rng);
    // log p(x = +1 | θ, rest) − log p(x = −1 | θ, rest) for local variable k of row `row` of
    // case c, at the current values (the quantity sweep() draws from).
    double conditional_log_odds(const Eigen::VectorXd& theta, int c, long row, int k);

    // The gradient and the negative Hessian over block b of the block's complete-data log
    // conditional at theta (prior, complete families, terms at the current hidden values):
    // a logistic regression, concave, so neg_hessian is positive definite. A Student-t
    // prior entry contributes the scale mixture's curvature, positive everywhere, or with
    // exact_prior_curvature its exact one, negative in the tails (for the proposal's
    // covariance at the mode, where the whole stays positive definite as a rule).
    double block_newton_system(int b, const Eigen::VectorXd& theta, Eigen::Ref<Eigen::VectorXd> grad,
                               Eigen::Ref<Eigen::MatrixXd> neg_hessian, bool exact_prior_curvature = false);

    // The hidden values, ±1: case c, row r, local variable k at cases()[c].offset + r·size + k.
    const std::vector<std::int8_t>& hidden() const { return hidden_; }
    void set_hidden(const std::vector<std::int8_t>& values);

private:
    void prepare(const Eigen::VectorXd& theta);  // per-term η₀ and link coefficients at θ
    void coefficients(int term, const Eigen::VectorXd& theta);
    double log_odds(int c, long row, int k) const;
    void encode();                               // distinct configurations per term
    double term_value(int t, const Eigen::VectorXd& theta, double* grad);

    const GibbsModel* model_;
    Target::Workspace ws_;
    std::vector<std::int8_t> hidden_;
    std::vector<std::uint64_t> codes_;  // per term, per row: configuration code; sorted
    std::vector<long> distinct_;        // per term: number of distinct codes (first entries of codes_)
    std::vector<double> counts_;        // per term, per distinct code: rows with it
    std::vector<double> fixed_;         // per term, per distinct code: Σ fixed coefficients · x
    std::vector<double> eta0_;          // per term
    std::vector<double> coef_;          // per term and link, flattened (link_start_)
    std::vector<int> link_start_;
    Eigen::VectorXd features_;  // one linear predictor's gradient over a block
};

class GibbsDensityFactory : public inference::DensityFactory {
public:
    explicit GibbsDensityFactory(const GibbsModel& model) : model_(&model) {}
    std::unique_ptr<inference::Density> make() const override { return std::make_unique<GibbsDensity>(*model_); }

private:
    const GibbsModel* model_;
};

// The hidden-value half of the cycle: one sweep of GibbsDensity::sweep (the first step of a
// chain starts from random values), then the state's lp is recomputed at the new values.
// Every draw is accepted; its statistics count sweeps. Needs a GibbsDensity.
class HiddenGibbs : public inference::Kernel {
public:
    HiddenGibbs() { stats_.name = name(); }
    void step(inference::State& state, inference::Density& target, inference::Rng& rng,
              inference::TransitionInfo& info) override;
    std::unique_ptr<inference::Kernel> clone() const override { return std::make_unique<HiddenGibbs>(*this); }
    void collect_stats(std::vector<inference::KernelStats>& out) const override { out.push_back(stats_); }
    std::string name() const override { return "gibbs sweep over unobserved values"; }

private:
    bool started_ = false;
    inference::KernelStats stats_;
};

// The θ half of the cycle: for each block in turn, independence MH against the block's
// exact complete-data conditional p(θ_b | x_v, x_h) with a Student-t proposal centred at that
// conditional's mode, scaled by its inverse negative Hessian (a Laplace approximation of the
// logistic regression the completed data define). The mode is found by damped Newton from a
// fixed start (the variational mean), so the proposal depends on the hidden values only,
// never on the current θ_b, which keeps the move a valid independence sampler. Needs a
// GibbsDensity.
class ConditionalLaplaceMH : public inference::Kernel {
public:
    // start: where each block's Newton iteration begins (full θ layout); df: the t's degrees
    // of freedom; inflation: factor on the inverse Hessian.
    ConditionalLaplaceMH(Eigen::VectorXd start, double df, double inflation);
    void step(inference::State& state, inference::Density& target, inference::Rng& rng,
              inference::TransitionInfo& info) override;
    std::unique_ptr<inference::Kernel> clone() const override { return std::make_unique<ConditionalLaplaceMH>(*this); }
    void collect_stats(std::vector<inference::KernelStats>& out) const override { out.push_back(stats_); }
    std::string name() const override { return "conditional laplace block mh"; }

private:
    struct Block {
        int offset = 0, size = 0;
        Eigen::VectorXd grad, step, mode;
        Eigen::MatrixXd hessian, cov;
        Eigen::LLT<Eigen::MatrixXd> llt;
        inference::GaussianProposal q;
    };
    void setup(const GibbsDensity& density);
    void fit_block(Block& blk, int b, GibbsDensity& density);

    Eigen::VectorXd start_;
    double df_, inflation_;
    std::vector<Block> blocks_;
    Eigen::VectorXd theta_, proposal_;
    inference::KernelStats stats_;
};

}  // namespace vbn
