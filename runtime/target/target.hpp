// The compiled target: the exact log posterior log p(θ | x_v) + const of a logistic belief
// network and its analytic gradient, with hidden nodes and missing entries summed out
// (Variational MCMC, Sec. 2, case (ii)), evaluated over weighted patterns (runtime/target/families.hpp).
//
//   Target target(graph, data);
//   auto ws = target.make_workspace();          // one per chain / thread
//   Eigen::VectorXd grad(target.dim());
//   double lp = target.log_density_gradient(theta, grad, ws);
//
// Every const method may be called from several threads at once as long as each thread
// passes its own Workspace; with a workspace, evaluation allocates nothing.
#pragma once

#include "inference/density.hpp"
#include "lang/ir.hpp"
#include "runtime/data/dataset.hpp"
#include "runtime/target/elimination.hpp"
#include "runtime/target/factor_tables.hpp"
#include "runtime/target/families.hpp"

#include <Eigen/Core>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace vbn {

struct TargetOptions {
    // The most unobserved values summed together when summing a row's out exactly: the
    // width of each group's elimination (with Summation::enumerate, the group's size).
    int max_enumerated = 12;
    // Enumeration, variable elimination or (automatic) whichever is cheaper per group.
    Summation summation = Summation::automatic;
    // false: no limit on the groups and nothing is summed out; only observed_block_term()
    // may be evaluated (the complete-data samplers of runtime/sampling/gibbs.hpp add the rest).
    // The other evaluations throw when the data have unobserved values.
    bool sum_out = true;
    // Keep where each data pattern's terms go (PatternTerms), for pattern_log_likelihoods.
    bool pattern_terms = false;
    // Called once the data have been read into the families, before the rest is built from
    // them: a caller that owns the data and is done with them may free them there, so that
    // they are not held beside both the families and the merged rows' scratch (at 10^6 rows
    // x 10 covariates: a peak of 259 MB against 227).
    std::function<void()> data_read = {};
};

// The data's log-likelihood when its rows are held elsewhere (runtime/distributed/: sharded
// over MPI ranks): value(θ, grad) returns Σ over every row of log p(x_row | θ), as
// Target::log_likelihood would on all of them, and with grad (full θ) adds its gradient in.
// May be called from several threads at once.
class RemoteLikelihood {
public:
    virtual ~RemoteLikelihood() = default;
    virtual double value(Eigen::Ref<const Eigen::VectorXd> theta, double* grad) const = 0;
    // value() at each column of thetas, without gradients, into out: one at a time unless the
    // rows' holder evaluates a batch at once.
    virtual void values(const Eigen::Ref<const Eigen::MatrixXd>& thetas, Eigen::Ref<Eigen::VectorXd> out) const {
        for (Eigen::Index j = 0; j < thetas.cols(); ++j) out[j] = value(thetas.col(j), nullptr);
    }
};

class Target {
public:
    using Vector = Eigen::VectorXd;
    using In = Eigen::Ref<const Eigen::VectorXd>;
    using Out = Eigen::Ref<Eigen::VectorXd>;

    // Scratch memory for evaluations, sized for this target. Not shared between threads.
    class Workspace {
        friend class Target;
        Eigen::VectorXd eta_, resid_;  // one chunk of complete-family patterns
        Eigen::VectorXd centred_;      // θ_b - μ_b, solved in place
        FactorTables::Scratch tables_; // the tabulated components' factor tables
        Eliminator::Scratch elim_;     // the components summed by variable elimination
        // Components summed directly (component_term):
        Eigen::VectorXd eta0_;         // per factor: the observed part of η
        Eigen::VectorXd coef_;         // per link: its coefficient at θ
        Eigen::VectorXd resid_acc_;    // per factor: Σ_x p(x) x_j g(-x_j η_j), rescaled online
        Eigen::VectorXd link_acc_;     // per link: Σ_x p(x) x_j g(-x_j η_j) x_var, rescaled online
        Eigen::VectorXd factor_resid_; // per factor, at the current configuration
        Eigen::VectorXd x_;            // the current configuration, ±1
        Eigen::VectorXd sign_sums_;    // ±1 families: per group of 8 parents (or of 4, where
                                       // η is read through sign_words), θ's signed sums
        Eigen::VectorXd sign_buckets_; // ±1 families: per group, residuals summed by sign
                                       // pattern; a set for even rows, then one for odd rows
        Eigen::VectorXd sign_exps_;    // ±1 families: exp of each entry of sign_sums_
        Eigen::VectorXd exp_theta_;    // exp(θ_b), from which sign_exps_ is built
        // pattern_log_likelihoods (sized only with TargetOptions::pattern_terms):
        Eigen::VectorXd family_logs_;    // per complete-family row, through the blocks: log g(y η)
        Eigen::VectorXd component_logs_; // per component: log Σ_x Π g, not weighted
        // block_log_densities (sized only where some block_batch exceeds 1):
        Eigen::VectorXd theta_;          // a full θ holding one value's block, for its prior
        Eigen::VectorXd lanes_;          // the values' entries, lane-major
    };

    Target(const ir::Graph& graph, const Dataset& data, const TargetOptions& options = {});

    int dim() const { return dim_; }
    int blocks() const { return static_cast<int>(blocks_.size()); }
    int block_offset(int b) const { return blocks_[static_cast<std::size_t>(b)].offset; }
    int block_size(int b) const { return blocks_[static_cast<std::size_t>(b)].size; }
    // A partition of the blocks into groups coupled through summed-out nodes.
    const std::vector<std::vector<int>>& coupled_groups() const { return families_.coupled_groups; }
    // True when block b is coupled to no other block: block_log_density(b, θ) then depends
    // on θ only through block b.
    bool block_separable(int b) const;
    // Warnings for the caller to print (e.g. an observed node missing in every row).
    const std::vector<std::string>& notes() const { return families_.notes; }
    // The preprocessed data, for code that evaluates other functionals of it (VB, Gibbs).
    const Families& families() const { return families_; }
    const CompleteFamily& complete_family(int b) const { return families_.complete[static_cast<std::size_t>(b)]; }

    Workspace make_workspace() const;

    // Summed-out components (Families::components) enumerated directly over their
    // configurations rather than from shared factor tables (as FactorTables chooses), and
    // from tables; the rest are summed by variable elimination.
    int directly_summed_components() const { return direct_count_; }
    int tabulated_components() const {
        return static_cast<int>(families_.components.size()) - direct_count_ - eliminator_.plans();
    }
    // Components summed by variable elimination (runtime/target/elimination.hpp).
    int eliminated_components() const { return eliminator_.plans(); }

    // log p(θ) + log p(x_v | θ) up to the constant log_constant().
    double log_density(In theta, Workspace& ws) const;
    // From now on the data's terms come from `remote` (all the rows, wherever they are held):
    // log_density and log_density_gradient are this target's prior plus remote's value, and
    // every other evaluation that reads rows throws Error(usage). This target's own rows then
    // serve only to describe the data (families(), as the variational fit reads them).
    void set_remote(std::shared_ptr<const RemoteLikelihood> remote) { remote_ = std::move(remote); }
    bool remote() const { return remote_ != nullptr; }
    // The same, writing ∇_θ into grad (size dim()).
    double log_density_gradient(In theta, Out grad, Workspace& ws) const;
    // log_density of each column of thetas into out (thetas.cols() entries). Where every block
    // batches (block_batch > 1, and nothing is summed out and no scale learned), the sum of
    // the blocks' block_log_densities, 16 columns a pass: equal to log_density to rounding
    // (each column's value does not depend on the others in its pass). Otherwise the same bits
    // as log_density column by column, a family evaluated row by row (real covariates: no
    // packed signs) read a chunk of rows at a time for every column, so its rows come from
    // memory once per call rather than once per column (the importance correction's many draws).
    void log_densities(const Eigen::Ref<const Eigen::MatrixXd>& thetas, Out out, Workspace& ws) const;
    // How many values of block b block_log_densities takes at once: kBlockBatch for a
    // complete block whose features are read row by row (no packed signs), whose rows'
    // weights come in long runs (Merged::product_logs: one log per run) and whose family is
    // too large to stay in cache (kBatchMinEntries); 1 otherwise, where evaluating values
    // together gains nothing. Kernels that draw their proposals ahead (inference/block_mh.hpp)
    // and the pilot of the exact proposal evaluate that many at once.
    static constexpr int kBlockBatch = 16;
    static constexpr long kBatchMinEntries = 1L << 17;  // rows × (block size + 4) doubles: 1 MB
    int block_batch(int b) const;
    // Every block batches, nothing is summed out and no scale is learned (log_densities).
    bool every_block_batches() const;
    // block_log_density of block b at each column of `values` (block b's entries only, 1 to
    // block_batch(b) columns; the block is complete, so nothing else enters) into out. The
    // values are the lanes of one pass over the rows (each row read once for all of them), so
    // they equal block_log_density's to rounding, not bit for bit: a kernel that uses them
    // uses them for its current state as well.
    void block_log_densities(int b, const Eigen::Ref<const Eigen::MatrixXd>& values, Out out, Workspace& ws) const;

    // Only the terms that involve block b: its prior, its node's complete-family patterns
    // and the summed-out components touching it. Between two θ that differ only in block b,
    // it changes exactly as log_density does. theta is the full vector.
    double block_log_density(int b, In theta, Workspace& ws) const;
    // The same with ∇ over block b only (grad has block_size(b) entries).
    double block_log_density_gradient(int b, In theta, Out grad, Workspace& ws) const;

    // True when no summed-out component involves block b and no learned scale its prior: its
    // terms are its prior and its complete-family patterns only, which depend on θ through
    // block b alone.
    bool complete_block(int b) const;
    // For such a block, −∇² block_log_density over block b, exact (block_size(b) square):
    // Σ_b⁻¹ + Σ_t w_t g(η_t) g(−η_t) f_t f_t' (d²/dη² log g(yη) = −g(η) g(−η) for y = ±1).
    // A Student-t weight's prior curvature, which is negative in its tails, is replaced by
    // the scale mixture's E[λ | w]/s² = (ν+1)/(ν s² + (w−μ)²) > 0, so the matrix stays positive
    // definite: Newton then still stops where the exact gradient is zero, and a proposal built
    // from it is corrected by the exact target. Throws for a block that is not complete.
    // With exact_prior_curvature, the Student-t entries' exact curvature instead (for the
    // Laplace covariance at a mode, where the whole is positive definite as a rule).
    Eigen::MatrixXd complete_block_negative_hessian(int b, In theta, Workspace& ws, bool exact_prior_curvature = false) const;
    // True when some weight has a Student-t prior (ir::Block::prior_df).
    bool heavy_tailed_prior() const { return heavy_tailed_; }
    // The learned prior scales (ir::Graph::scales): θ's last scales() entries, each log τ.
    // They belong to no block; a block whose weights one scales is not complete_block.
    int scales() const { return static_cast<int>(scales_.size()); }
    int scale_offset() const { return dim_ - scales(); }
    // Their priors on log τ, with the log's Jacobian (the rest of log_density has their
    // weights' N(μ, τ²), in the blocks' prior terms); with grad (full θ, added into), the
    // derivative in each log τ of both. 0 without learned scales.
    double scale_term(In theta, double* grad) const;
    // For such a block at its mode θ̂ with Laplace covariance Σ = L L' (L lower, block_size(b)
    // square): the first correction of the mode towards the posterior mean,
    // E[θ_b] − θ̂_b ≈ ½ Σ T[Σ] (the next term of the Laplace expansion), with T the third derivative of the log
    // density (the Gaussian prior's is zero): T[Σ]_i = Σ_t w_t c(η_t) f_ti (f_t' Σ f_t), where
    // c = d³/dη³ log g(yη) = −g(η) g(−η) (1 − 2 g(η)) for y = ±1. It is O(1/rows), and moves the
    // centre of a skewed posterior's Laplace fit from its mode to near its mean without
    // sampling noise. A Student-t prior's third derivative is left out (the proposal's centre
    // only; the correction against the exact target keeps draws exact). Throws for a block
    // that is not complete.
    Eigen::VectorXd complete_block_mean_shift(int b, In theta, const Eigen::MatrixXd& lower, Workspace& ws) const;
    // The same block's third derivatives in the coordinates y = L⁻¹(θ_b − θ̂_b): out[k](i, j) =
    // Σ_t w_t c(η_t) x_tk x_ti x_tj with x_t = L' f_t (c as above), symmetric in k, i, j; the
    // triangular map of inference/triangular_map.hpp is built from them. Costs rows · d³
    // multiply-adds (d GEMMs of rows × d × d). Throws as above.
    std::vector<Eigen::MatrixXd> complete_block_third_derivatives(int b, In theta, const Eigen::MatrixXd& lower,
                                                                  Workspace& ws) const;

    // The terms of block b that involve no unobserved value: its prior (without normaliser)
    // and its complete-family patterns. With grad (block_size(b) entries), adds their
    // gradient. Allowed whatever TargetOptions::sum_out is.
    double observed_block_term(int b, In theta, double* grad, Workspace& ws) const;

    // The pieces: log p(θ) without its normalising constant, and log p(x_v | θ) without the
    // θ-free terms of fixed CPDs.
    double log_prior(In theta, Workspace& ws) const;
    double log_likelihood(In theta, Workspace& ws) const;
    // log_likelihood at each column of thetas, by log_densities' batches less each log_prior
    // (equal to log_likelihood to rounding): what a shard evaluates for a batch of draws.
    void log_likelihoods(const Eigen::Ref<const Eigen::MatrixXd>& thetas, Out out, Workspace& ws) const;
    // log_likelihood with its gradient into grad (size dim(); set, not added to): the terms a
    // shard of the rows contributes (runtime/distributed/).
    double log_likelihood_gradient(In theta, Out grad, Workspace& ws) const;
    // log p(x_p | θ) of each data pattern p on its own into out (patterns() entries): the
    // terms log_likelihood sums, taken pattern by pattern before the weighting by counts
    // (each shared complete-family row and summed-out component evaluated once), with the
    // θ-free terms of the pattern's observed fixed-CPD nodes added. So Σ_p count_p out[p] =
    // log_likelihood(θ) + families().fixed_log_likelihood. Needs TargetOptions::pattern_terms.
    void pattern_log_likelihoods(In theta, Out out, Workspace& ws) const;
    // The data patterns pattern_log_likelihoods covers (0 without TargetOptions::pattern_terms).
    int patterns() const { return families_.pattern_terms.patterns(); }
    // What log_density drops: log p(x_v, θ) = log_density(θ) + log_constant(). It holds the
    // Gaussian normalisers and the log-probabilities of observed fixed-CPD nodes.
    double log_constant() const { return log_constant_; }

    // Convenience overloads with a temporary workspace (they allocate).
    double log_density(In theta) const;
    double log_density_gradient(In theta, Out grad) const;
    double block_log_density(int b, In theta) const;
    double block_log_density_gradient(int b, In theta, Out grad) const;

private:
    struct BlockPrior {
        int offset = 0;
        int size = 0;
        bool diagonal = true;
        Eigen::VectorXd mean;
        Eigen::VectorXd precision;  // diagonal case: 1 / σ² (0 for a Student-t entry)
        Eigen::MatrixXd chol;       // full case: lower L with L L' = Σ
        // Student-t entries (ir::Block::prior_df), local indices, with their ν and scale²;
        // in the full case the Gaussian term above holds them as N(μ, s²), which their
        // term removes again (gauss_precision = 1/s², 0 in the diagonal case).
        std::vector<int> heavy;
        std::vector<double> nu, scale2, gauss_precision;
        // Weights with a learned scale (ir::Block::prior_scale), local indices, with the θ
        // index of their log τ; the Gaussian term above holds them as N(μ, 1), which
        // scaled_term turns into N(μ, τ²) (unit_precision = 1 in the full case, else 0).
        std::vector<int> scaled, scale_theta;
        double unit_precision = 0;
    };


    // The Student-t entries' share of prior_term: value, and gradient added into grad.
    static double heavy_term(const BlockPrior& p, In theta, double* grad);
    // The learned-scale weights' share of prior_term (their N(μ, τ²) but for the N(μ, 1)
    // counted before), with its gradient in the weights.
    static double scaled_term(const BlockPrior& p, In theta, double* grad);
    void add_scales(const ir::Graph& graph);

    void check_theta(In theta) const;
    void check_summed_out() const;
    void check_local(const char* what) const;  // throws where the rows are remote
    // The prior terms (and scale_term) with their gradient into grad where given, plus remote_'s value.
    double remote_log_density(In theta, double* grad, Workspace& ws) const;
    static double add_heavy_entries(const ir::Block& b, const ir::Graph& graph, BlockPrior& p);
    void check_block(int b) const;
    double prior_term(int b, In theta, double* grad, Workspace& ws) const;
    double complete_term(int b, In theta, double* grad, Workspace& ws) const;
    // η = a + F θ_b for merged rows [start, start + len) of block b into ws.eta_; with packed
    // signs, reads the tables build_eta_tables left in ws.sign_sums_.
    void complete_eta(int b, In theta, int start, int len, Workspace& ws) const;
    // With packed signs: exp(η_t) of the chunk's rows into ws.eta_, as exp(a_t) times the
    // entries build_exp_tables left in ws.sign_exps_.
    void complete_exp_eta(int b, int start, int len, Workspace& ws) const;
    // weight · log Σ_x Π g(·) of component c by direct enumeration; with grad (full-θ layout,
    // or block only_block's), adds its gradient for factors of block only_block (all when < 0).
    double component_term(int c, double weight, In theta, double* grad, int only_block, Workspace& ws) const;
    // pattern_log_likelihoods' shared terms at θ: ws.family_logs_ and ws.component_logs_.
    void family_logs(In theta, Workspace& ws) const;
    void component_logs(In theta, Workspace& ws) const;
    // Σ weight · log Σ_x Π g(·) over the enumerated components (those of block only_block, or
    // all when only_block < 0), from their factor tables filled at θ; with grad (full-θ layout,
    // or block only_block's), adds the gradient of the factors of block only_block (all blocks).
    double summed_out_term(In theta, double* grad, int only_block, Workspace& ws) const;

    int dim_ = 0;
    std::vector<BlockPrior> blocks_;
    std::vector<ir::Scale> scales_;  // the learned scales, with the weights they scale
    Families families_;
    double log_constant_ = 0;
    int max_block_ = 0;
    FactorTables tables_;  // the tabulated components' factors (empty without sum_out)
    Eliminator eliminator_;  // the components with an elimination order
    std::vector<char> direct_;  // per component: 1 when summed by component_term
    int direct_count_ = 0, max_direct_size_ = 0, max_factors_ = 0, max_links_ = 0;
    // make_workspace's sizes, found once: a workspace per block (the exact proposal's pilots)
    // that looked over every block made 10^5 blocks quadratic.
    int workspace_rows_ = 0, max_sign_groups_ = 0;
    bool some_block_batches_ = false;
    bool sum_out_ = true;
    bool heavy_tailed_ = false;
    bool pattern_terms_ = false;
    std::shared_ptr<const RemoteLikelihood> remote_;
    std::vector<int> family_first_;  // per block: its first row in Workspace::family_logs_

    // A block's complete family as the evaluation reads it: the patterns that differ only in
    // y merged into one row (a_t, f_t) with the counts of y = +1 and y = -1 apart. Both
    // share |η_t| and so one exp and one log: log g(η) = min(η, 0) - log(1 + e^{-|η|}) and
    // log g(-η) = min(-η, 0) - log(1 + e^{-|η|}). Built from families_.complete.
    struct Merged {
        Eigen::MatrixXd f;         // rows × block size; empty where the signs are packed, or
                                   // where the family's own f serves (shares_family)
        // Every pattern its own row, in the family's order (no two patterns differ only in y,
        // and their weights already ascend, as where no row repeats): the family's f is
        // read in place instead of a copy as large as the data (dense_rows).
        bool shares_family = false;
        // Offsets and w_pos + w_neg: empty where shares_family, as the family's own a and w
        // are the same numbers (row_offsets, row_totals read one or the other).
        Eigen::VectorXd a;
        Eigen::VectorXd w_pos;     // rows with y = +1
        Eigen::VectorXd w_neg;     // rows with y = -1
        Eigen::VectorXd w_total;
        std::vector<int> run_end;  // ends of the runs of rows of equal w_total, ascending
        bool product_logs = false; // runs long enough (kLogGroup rows on average) for one log
                                   // per run of a chunk (of a product); else one log per row
        // When every entry of f is ±1 (binary parents, all observed) and there are at least
        // 8 columns: f's signs packed 8 columns to a byte, group-major (sign_groups × rows, so
        // that one group's bytes are contiguous), bit k of byte (g, t) set where
        // f(t, 8g + k) = +1. F θ is then a sum of sign_groups table look-ups per row and F' r a
        // sum of residuals per sign pattern (see complete_term): the same numbers to rounding,
        // with a fraction of the arithmetic.
        std::vector<unsigned char> signs;
        int sign_groups = 0;
        // Where the CPU has AVX-512 and there are at most 64 columns, the same signs a row to
        // a word as well (bit k of word t set where f(t, k) = +1): complete_eta then sums
        // tables of 4 columns (16 entries, two vector registers each) that one permute
        // instruction reads for 8 rows at once. The gradient still reads `signs`.
        std::vector<std::uint64_t> sign_words;
        // With packed signs and every |a_t| at most kMaxProductOffset (target.cpp): exp(a_t),
        // and Σ_t w_pos_t a_t and Σ_t w_pos_t f_t, for the evaluation by products
        // (complete_term_by_products). exp_a is empty where that evaluation does not apply.
        Eigen::VectorXd exp_a;
        double max_abs_a = 0;
        double lin_a = 0;
        Eigen::VectorXd lin_f;
        int rows() const { return static_cast<int>(w_pos.size()); }
        // Group g's sign bytes from row `start` on.
        const unsigned char* group_signs(int g, int start) const {
            return signs.data() + static_cast<std::size_t>(g) * static_cast<std::size_t>(rows()) + static_cast<std::size_t>(start);
        }
    };
    std::vector<Merged> merged_;
    std::vector<char> separable_;  // per block: coupled to no other block
    static Merged merge_signs(const CompleteFamily& cf);
    // One chunk of complete_term's value from η in ws.eta_ (target.cpp).
    static double chunk_value(const Merged& m, const Eigen::VectorXd& w_total, int start, int len, Workspace& ws,
                              double& open_product, int& open_rows);
    // With packed signs, the tables of θ_b's signed sums that complete_eta reads, into
    // ws.sign_sums_ (nothing otherwise).
    static void build_eta_tables(const Merged& m, In theta_b, Workspace& ws);
    // The same tables' exps, into ws.sign_exps_, for the evaluation by products.
    static void build_exp_tables(const Merged& m, In theta_b, Workspace& ws);
    // complete_term where every |η_t| is at most `bound` (kMaxProductBound at most): e^η_t as
    // exp(a_t) times a product of table entries instead of an exp per row.
    double complete_term_by_products(int b, In theta, double bound, double* grad, Workspace& ws) const;
    // The chunk's residuals (ws.resid_) into the sign groups' buckets (ws.sign_buckets_).
    static void scatter_residuals(const Merged& m, int start, int len, Workspace& ws);
    // From `from`, each row's entries of sign-group tables added (η) or multiplied (e^η).
    template <bool Multiply>
    static void combine_sign_tables(const Merged& m, int k, const double* from, const double* tables, int start, int len,
                                    double* out);
    // Row `row` of the block's features (k of them) times scale into out, unpacking packed signs.
    static void row_features(const Merged& m, const Eigen::MatrixXd& dense, int k, int row, double scale, double* out);
    // Block b's merged rows' offsets and total weights.
    const Eigen::VectorXd& row_offsets(int b) const {
        return merged_[static_cast<std::size_t>(b)].shares_family ? families_.complete[static_cast<std::size_t>(b)].a
                                                                  : merged_[static_cast<std::size_t>(b)].a;
    }
    const Eigen::VectorXd& row_totals(int b) const {
        return merged_[static_cast<std::size_t>(b)].shares_family ? families_.complete[static_cast<std::size_t>(b)].w
                                                                  : merged_[static_cast<std::size_t>(b)].w_total;
    }
    // Block b's merged rows' features where they are not packed as signs.
    const Eigen::MatrixXd& dense_rows(int b) const {
        return merged_[static_cast<std::size_t>(b)].shares_family ? families_.complete[static_cast<std::size_t>(b)].f
                                                                  : merged_[static_cast<std::size_t>(b)].f;
    }
    // For complete block b at θ: its rows' whitened features x_t = L' f_t (rows of x) and
    // weights c_t = w_t d³/dη³ log g(η_t) (the mean correction's and the third derivatives'
    // common pass); `what` names the caller in the errors.
    template <class Visit>
    void whitened_third_rows(int b, In theta, const Eigen::MatrixXd& lower, const char* what, Workspace& ws,
                             Visit visit) const;
};

// The target as the samplers see it: one per chain, owning its workspace. Blocks are the
// model's parameter blocks, one per logistic node.
class TargetDensity : public inference::Density {
public:
    explicit TargetDensity(const Target& target) : target_(&target), ws_(target.make_workspace()) {}

    int dim() const override { return target_->dim(); }
    double log_density(const Eigen::VectorXd& x) override { return target_->log_density(x, ws_); }
    double log_density_gradient(const Eigen::VectorXd& x, Eigen::VectorXd& grad) override {
        grad.resize(target_->dim());
        return target_->log_density_gradient(x, grad, ws_);
    }
    int block_count() const override { return target_->blocks(); }
    inference::BlockRange block(int b) const override { return {target_->block_offset(b), target_->block_size(b)}; }
    double block_log_density(int b, const Eigen::VectorXd& x) override { return target_->block_log_density(b, x, ws_); }
    bool block_separable(int b) const override { return target_->block_separable(b); }
    int block_batch(int b) const override { return target_->block_batch(b); }
    void block_log_densities(int b, const Eigen::Ref<const Eigen::MatrixXd>& values,
                             Eigen::Ref<Eigen::VectorXd> out) override {
        target_->block_log_densities(b, values, out, ws_);
    }

    const Target& target() const { return *target_; }

private:
    const Target* target_;
    Target::Workspace ws_;
};

// Makes a TargetDensity per chain; the Target must outlive the factory and its densities.
class TargetDensityFactory : public inference::DensityFactory {
public:
    explicit TargetDensityFactory(const Target& target) : target_(&target) {}
    std::unique_ptr<inference::Density> make() const override { return std::make_unique<TargetDensity>(*target_); }

private:
    const Target* target_;
};

// Above this many weights nothing holds a dense dim × dim matrix (2,000² doubles are 32 MB,
// and a NUTS leapfrog step with a dense metric costs dim²): NUTS adapts a diagonal metric
// started from the variational variances, regen (whose adaptation needs dense covariances)
// is refused, and `vbn vb` skips the importance correction (its Newton step forms the Hessian).
constexpr int max_dense_dim = 2000;

// The compiled target for a model and data (hidden nodes summed out per row).
// max_enumerated bounds the width (TargetOptions::max_enumerated).
// data_read: TargetOptions::data_read.
std::unique_ptr<Target> make_target(const ir::Graph& graph, const Dataset& data, int max_enumerated = 12,
                                    std::function<void()> data_read = {});

// The target for the gibbs method: nothing summed out, no limit (TargetOptions::sum_out).
std::unique_ptr<Target> make_complete_data_target(const ir::Graph& graph, const Dataset& data,
                                                  std::function<void()> data_read = {});

}  // namespace vbn
