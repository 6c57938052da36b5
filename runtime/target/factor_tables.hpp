// The enumerated components' factors as tables over their scopes, shared across components.
//
// A factor log g(x η) of a component (runtime/target/families.hpp) depends on the component's
// configuration only through its scope: its own variable when unobserved and its links'
// variables. So per evaluation each distinct factor is tabulated once over its links' 2^s
// configurations, both signs of x (log g(z) = min(z, 0) − log1p(e^{−|z|})), and the sum over
// a component's 2^m configurations only adds table entries. Factors of different components
// (or rows) that differ at most in their own node's value (same element, block, base, f and
// links with the same coefficients in the same scope order) share one table. For the gradient
// each component adds its posterior weights p(x | row) × weight into the entries its
// configurations read, and one pass over the tables turns them into ∇θ.
#pragma once

#include "runtime/target/dense_batch.hpp"
#include "runtime/target/families.hpp"

#include <Eigen/Core>

#include <optional>
#include <unordered_map>
#include <vector>

namespace vbn {

class FactorTables {
public:
    using In = Eigen::Ref<const Eigen::VectorXd>;

    // Scratch memory for one thread's evaluations, sized by make_scratch().
    struct Scratch {
        Eigen::VectorXd eta;      // per link configuration of every table: η
        Eigen::VectorXd expo;     // the same: e^{−|η|}
        Eigen::VectorXd log1p_e;  // the same: log1p(e^{−|η|}) (fill_all)
        Eigen::VectorXd slope;    // the same: Σ_x acc · x g(−x η), the gradient's weight (slopes)
        Eigen::VectorXd logs;     // per entry (configuration, sign): log g(x η)
        Eigen::VectorXd acc;      // per entry: Σ_components weight · p(configuration | row)
        Eigen::VectorXd terms;    // per configuration of one chunk of a component: Σ log g
        std::vector<int> entries; // the same configurations: the entry one factor reads
        Eigen::ArrayXXd batch;    // batched_sum: a column of Σ log g per component of a batch
        Eigen::ArrayXd batch_top, batch_sum;  // the same: each column's largest term and Σ e^{t − top}
        Eigen::VectorXd dense;    // a DenseBatch's G and T (DenseBatch::scratch_size)
    };

    FactorTables() = default;
    // block_offsets[b]: where block b starts in θ. With direct, the components for which
    // summing directly is no dearer than tables get none, and direct receives 1 for them
    // (one entry per component): none of their tables is read by another component and
    // their cost, Σ_j 2^{s_j} configurations of an exp and a log1p each, is not below 2^m
    // configurations of one exp per factor and one log. Their owner sums them;
    // component() and log_sum() must not be asked for them. Without direct all are tabulated,
    // except those summed by variable elimination (Component::order): they get nothing here,
    // and are not marked direct.
    // kept_entries caps the entries kept from construction (keep_entries); 0 keeps none.
    FactorTables(const Families& families, std::vector<int> block_offsets, std::vector<char>* direct = nullptr,
                 long kept_entries = kKeptEntries);
    // keep_entries()'s default limit, 16 MB of ints: beyond it (millions of distinct rows) the
    // entries are remade at each evaluation, as the memory is worth more there than the time.
    static constexpr long kKeptEntries = 1L << 22;
    // How many entries keep_entries() kept.
    long entries_kept() const { return static_cast<long>(kept_entries_.size()); }

    Scratch make_scratch() const;
    int tables() const { return static_cast<int>(tables_.size()); }
    // Tables read by the components of block b (Families::components_of_block), ascending.
    const std::vector<int>& tables_of_block(int b) const { return tables_of_block_[static_cast<std::size_t>(b)]; }

    // Tabulates the given tables at θ (all of them when `which` is null); with_gradient also
    // zeroes their accumulators.
    void fill(const std::vector<int>* which, In theta, bool with_gradient, Scratch& s) const;
    // weight · log Σ_x Π_j g(x_j η_j(x)) of component c from filled tables; with accumulate,
    // adds its posterior weights into the entries of its factors of block only_block (of
    // every block when only_block < 0).
    double component(int c, bool accumulate, int only_block, Scratch& s) const;
    // Σ over the batched components (batched()) of component(c, accumulate, −1, s), summed
    // many components at a time, so that their exps and logs run as vector instructions:
    // equal to the sum of component() up to rounding, not to the bit.
    double batched_sum(bool accumulate, Scratch& s) const;
    // Whether component c is among them: its entries kept, 2 to 32 configurations.
    bool batched(int c) const {
        const auto k = static_cast<std::size_t>(c);
        return k < batched_.size() && batched_[k];
    }
    // Batches of kBatch components summed by their dense form (DenseBatch), and all batches.
    int dense_batches() const;
    int batches() const;
    // The same before the weighting: log Σ_x Π_j g(x_j η_j(x)) of component c (one data
    // pattern's share, Target::pattern_log_likelihoods).
    double log_sum(int c, Scratch& s) const;
    // Adds the accumulated gradient of the given tables (all when null) of block only_block
    // (every block when < 0) into grad: the full θ layout, or block only_block's alone.
    void gradient(const std::vector<int>* which, int only_block, double* grad, Scratch& s) const;

private:
    struct Link {
        int mask = 0;     // its scope variables (bit k: scope variable k, bit k + 1 of an entry's index)
        int feature = -1; // position in the block, or -1 for a fixed term
        double coef = 0;  // as FactorLink::coef
        // Π x over the mask in configuration i: −1 when an odd number of its bits are 0.
        double sign(int i) const { return __builtin_popcount(static_cast<unsigned>(mask & ~i)) & 1 ? -1.0 : 1.0; }
    };
    // One distinct factor: η(scope) = base + θ_b' f + Σ_links coef_l Π_{k ∈ mask_l} x_k.
    struct Table {
        int block = -1;
        double base = 0;
        Eigen::VectorXd f;
        std::vector<Link> links;
        int scope = 0;    // distinct link variables s: 2^s configurations, 2^(s+1) entries
        int first = 0;    // its first configuration in Scratch::eta (entries from 2 · first)
    };
    // A component's factor: entry = 2 · table.first + constant + Σ_k bit(x, var_k) << shift_k,
    // where bit 0 is the sign of the factor's own node (constant when observed).
    struct Ref {
        int table = 0;
        int entry = 0;                // 2 · table.first + constant
        int first_bit = 0, bits = 0;  // its (var, shift) pairs in bits_
    };
    struct Bit {
        int var = 0;
        int shift = 0;
    };

    struct KeyHash {
        std::size_t operator()(const std::vector<double>& key) const;
    };
    using Index = std::unordered_map<std::vector<double>, int, KeyHash>;

    int add_table(const Factor& f, const std::vector<int>& scope, Index& index);
    void add_component(const Component& comp, Index& index);
    // Per component, 1 where summing it directly is no dearer (see the constructor).
    std::vector<char> summed_directly() const;
    // Takes out the components marked direct: their factors and the tables only they read.
    void drop(const std::vector<char>& direct);
    // Adds component c's posterior weights (s.terms) of configurations [start, start + len)
    // into the accumulators of its factors of block only_block (every block when < 0).
    void accumulate_chunk(int c, long start, int len, int only_block, Scratch& s) const;
    void fill_table(const Table& t, In theta, Scratch& s) const;
    void fill_all(In theta, bool with_gradient, Scratch& s) const;
    void table_etas(const Table& t, In theta, Scratch& s) const;
    void table_gradient(const Table& t, double* grad, Scratch& s) const;
    void slopes(int begin, int end, Scratch& s) const;
    // Σ_j log g of configurations [start, start + len) of component c into s.terms.
    void chunk_terms(int c, long start, int len, Scratch& s) const;
    // Σ_x e^{t(x) − top} of component c into sum, with top the largest t(x) (or near it).
    void sum_terms(int c, double& top, double& sum, Scratch& s) const;

    // The entries ref r reads at configurations [start, start + len) into s.entries.
    void ref_entries(const Ref& r, long start, int len, Scratch& s) const;
    // The same entries, kept from construction where the component has one chunk (see
    // keep_entries), else made in s.entries.
    const int* entries_of(int r, long start, int len, Scratch& s) const;
    // Component c's posterior weights into its factors' accumulators from its kept entries,
    // which lie one ref after another (kept_first_): the loop of accumulate_chunk without a
    // lookup per ref, and for 2–32 configurations unrolled.
    void accumulate_kept(int c, int len, int only_block, Scratch& s) const;
    // batched_sum's work for the components comps[0 … n) of 2^m = Len configurations each.
    template <int Len>
    double batch_of(const int* comps, int n, bool accumulate, Scratch& s) const;
    // The same by the batch's dense form (DenseBatch), once DenseBatch::terms has made T.
    template <int Len>
    double dense_batch_of(const DenseBatch& d, const int* comps, int n, bool accumulate, Scratch& s) const;
    // Groups the kept components of 2 to 32 configurations into batches_, and finds the
    // batches of kBatch that have a dense form.
    void make_batches();
    // budget: the counts the dense forms may still hold; beyond it batches stay sparse.
    void make_dense(int len, const std::vector<int>& comps, long& budget);
    // The dense forms' counts in all, 32 MB of doubles at most: about twice the kept entries of
    // the batches they replace (ints, one per factor and configuration), where those are many.
    static constexpr long kDenseCounts = 1L << 22;
    void chunk_terms_kept(int c, int len, Scratch& s) const;
    // Keeps the entries of the refs of one-chunk components, whole components in order while
    // the total stays within `limit`:
    // they depend on the data alone, and remaking them at each evaluation was a quarter of a
    // hidden-variable fit's time (many small components, 2^m of 2–32 configurations).
    void keep_entries(long limit);

    std::vector<int> offsets_;
    std::vector<Table> tables_;
    std::vector<Ref> refs_;
    std::vector<Bit> bits_;
    std::vector<int> kept_entries_;    // keep_entries(): the refs' entries, one after another
    std::vector<long> kept_at_;        // per ref: its first in kept_entries_, or -1
    std::vector<long> kept_first_;     // per component: its first ref's kept_at_, or -1
    std::vector<int> ref_block_;       // per ref: its table's block
    std::vector<std::vector<int>> batches_;  // batched components with 2, 4, … 32 configurations
    std::vector<char> batched_;              // per component: 1 when in batches_
    // Per group of batches_ and batch of kBatch: its dense form, where it has one.
    std::vector<std::vector<std::optional<DenseBatch>>> dense_;
    std::vector<int> first_ref_;       // per component, and one past the last
    std::vector<int> size_;            // per component: m
    std::vector<double> weight_;       // per component
    std::vector<std::vector<int>> tables_of_block_;
    int configurations_ = 0;           // Σ 2^s over the tables
};

}  // namespace vbn
