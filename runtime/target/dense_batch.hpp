// One batch of summed-out components (FactorTables::batched_sum) as a dense product.
//
// Each factor of a batched component reads, at its component's Len configurations, Len table
// entries: an entry pattern. In a latent-class model every row's vote factors read one of 2
// patterns per item (its vote, 0 or 1), so 256 rows of 17 factors read only 33 distinct
// patterns. With P the n × U count matrix (component k reads pattern u P(k, u) times) and
// G(u, i) = log g at pattern u's entry for configuration i, the batch's terms are
// T = P G, and the gradient's weights go into the entries as H = Pᵀ W, one add per pattern
// and configuration: both products run as vector instructions over the batch's components,
// where the sparse form gathered and scattered one entry at a time (the scatter's adds to the
// same few entries wait on one another). Chosen only where P is small and its work at most a
// few times the sparse form's (make). Where it is not, because most patterns are read once
// (an occupancy model's site covariates give each row's hidden node a table of its own, read
// by that row alone), P may still be small over the patterns two or more refs read: then
// those go through P and each of the others is added to its one component's T, and its
// component's weights to its entries, directly.
#pragma once

#include <optional>
#include <vector>

namespace vbn {

class DenseBatch {
public:
    // The batch's components, each as its refs' kept entries (len per ref, one ref after
    // another) and each ref's block (< 0: a fixed term, read but given no gradient). Returns
    // the dense form where np × U ≤ 4 × Σ refs and np × U ≤ 2^16 (np: n rounded up to 32),
    // else where the same holds of the patterns two or more refs read and theirs (the others
    // then taken one by one).
    struct Component {
        const int* entries;
        const int* blocks;
        int refs;
    };
    static std::optional<DenseBatch> make(int len, const std::vector<Component>& comps);

    int patterns() const { return patterns_; }
    long counts() const { return static_cast<long>(counts_.size()); }  // P's doubles
    // Scratch doubles terms() needs: G (patterns × len), then T (stride × len).
    int scratch_size() const { return patterns_ * len_ + stride_ * len_; }
    int stride() const { return stride_; }
    // T(k, i) at table_part(scratch)[i · stride + k] from the tables' log g; false (T not
    // made) where a log g is not finite (η overflowed), as 0 × −∞ would make a NaN of a
    // pattern the component does not read: the caller then sums sparsely.
    bool terms(const double* logs, double* scratch) const;
    // acc[entry(u, i)] += Σ_k P(k, u) W(k, i) for the patterns of blocks ≥ 0, with W in the
    // same layout as T (entries k ≥ n zero).
    void accumulate(const double* w, double* acc) const;
    // Where terms() leaves T in the scratch.
    double* table_part(double* scratch) const { return scratch + patterns_ * len_; }

private:
    bool add_own_terms(const double* logs, double* t) const;  // false where a log g is not finite
    void add_own_weights(const double* w, double* acc) const;

    int len_ = 0, stride_ = 0, patterns_ = 0;
    std::vector<int> entries_;  // pattern u's entry at configuration i: entries_[u · len + i]
    std::vector<char> fixed_;   // per pattern: its table is a fixed term
    std::vector<double> counts_;  // P, column u at counts_[u · stride], rows k ≥ n zero
    // Where P over every pattern is too large (make): the patterns a single ref reads, kept
    // out of P, each with its component and len entries.
    std::vector<int> own_component_, own_entries_;
    std::vector<char> own_fixed_;
};

}  // namespace vbn
