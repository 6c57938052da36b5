#include "runtime/target/dense_batch.hpp"

#include "runtime/index.hpp"

#include <algorithm>
#include <cmath>
#include <map>

namespace vbn {

namespace {

// The dense products' cost per count against the sparse form's per entry read: a count is one
// lane of a vector multiply-add over contiguous doubles, an entry read a dependent gather and,
// with the gradient, a scatter; 4 leaves a margin for the patterns' gathers and the zeros.
constexpr long kDenseRatio = 4;
constexpr long kMaxCounts = 1L << 16;  // P's doubles: 512 KB at most
// Rows (components) per register block: 4 vectors of 8 doubles, so that with 2 to 4
// configurations at a time 8 to 16 multiply-adds are independent (an FMA's latency is 4 cycles
// and two issue per cycle). The stride is n rounded up to it.
constexpr int kRows = 32;
constexpr int kConfigs = 4;  // configurations per register block (2 where len is 2)

// T(k0 + ·, i0 + ·) of one register block: Σ_u G(u, i) P(k, u), the sums in registers.
template <int I>
void terms_block(const double* counts, int stride, int patterns, const double* g, int len, int i0, int k0, double* t) {
    double a[I][kRows] = {};
    for (int u = 0; u < patterns; ++u) {
        const double* p = counts + static_cast<long>(u) * stride + k0;
        for (int i = 0; i < I; ++i) {
            const double gi = g[u * len + i0 + i];
            for (int k = 0; k < kRows; ++k) a[i][k] += gi * p[k];
        }
    }
    for (int i = 0; i < I; ++i) std::copy(a[i], a[i] + kRows, t + static_cast<long>(i0 + i) * stride + k0);
}

// h[i] = Σ_k p[k] W(k, i0 + i) for one pattern's counts p, in kRows partial sums per configuration.
template <int I>
void dots_block(const double* p, const double* w, int stride, int i0, double* h) {
    double a[I][kRows] = {};
    for (int k0 = 0; k0 < stride; k0 += kRows)
        for (int i = 0; i < I; ++i) {
            const double* wi = w + static_cast<long>(i0 + i) * stride + k0;
            for (int k = 0; k < kRows; ++k) a[i][k] += p[k0 + k] * wi[k];
        }
    // The partial sums by a tree, vectors first: a chain of 32 adds cost more than the products.
    for (int i = 0; i < I; ++i) {
        double b[8];
        for (int j = 0; j < 8; ++j) b[j] = (a[i][j] + a[i][j + 8]) + (a[i][j + 16] + a[i][j + 24]);
        h[i] = ((b[0] + b[1]) + (b[2] + b[3])) + ((b[4] + b[5]) + (b[6] + b[7]));
    }
}

// The distinct entry patterns a batch's refs read, numbered in order of first read.
struct PatternReads {
    std::vector<std::vector<int>> keys;      // pattern u's entries
    std::vector<char> fixed;                 // per pattern: its table is a fixed term
    std::vector<int> readers;                // per pattern: how many refs read it
    std::vector<std::pair<int, int>> reads;  // (component, pattern), one per ref
    long refs = 0;
};

PatternReads read_patterns(int len, const std::vector<DenseBatch::Component>& comps) {
    PatternReads out;
    std::map<std::vector<int>, int> index;  // a pattern's entries → its number
    for (std::size_t k = 0; k < comps.size(); ++k) {
        const DenseBatch::Component& c = comps[k];
        for (int r = 0; r < c.refs; ++r) {
            std::vector<int> key(c.entries + static_cast<long>(r) * len, c.entries + static_cast<long>(r + 1) * len);
            // A fixed term and a weighted one never share a table, so the entries say which.
            const auto [it, added] = index.emplace(key, static_cast<int>(index.size()));
            if (added) {
                out.keys.push_back(std::move(key));
                out.fixed.push_back(c.blocks[r] < 0 ? 1 : 0);
                out.readers.push_back(0);
            }
            ++out.readers[sz(it->second)];
            out.reads.emplace_back(static_cast<int>(k), it->second);
        }
        out.refs += c.refs;
    }
    return out;
}

}  // namespace

std::optional<DenseBatch> DenseBatch::make(int len, const std::vector<Component>& comps) {
    const PatternReads pr = read_patterns(len, comps);
    const std::vector<std::vector<int>>& keys = pr.keys;
    const int n = static_cast<int>(comps.size());
    const int stride = (n + kRows - 1) / kRows * kRows;
    const auto fits = [&](long patterns, long sparse_refs) {
        const long counts = static_cast<long>(stride) * patterns;
        return counts <= kMaxCounts && counts <= kDenseRatio * sparse_refs;
    };
    std::vector<char> shared(keys.size(), 1);
    if (!fits(static_cast<long>(keys.size()), pr.refs)) {
        // Too many patterns for one product: try it over the patterns two or more refs read,
        // each of the others (a row's own covariates, say) added to its component alone.
        long shared_refs = 0, count = 0;
        for (std::size_t u = 0; u < keys.size(); ++u) {
            shared[u] = pr.readers[u] >= 2 ? 1 : 0;
            if (shared[u]) shared_refs += pr.readers[u], ++count;
        }
        if (count == 0 || !fits(count, shared_refs)) return std::nullopt;
    }
    DenseBatch d;
    d.len_ = len;
    d.stride_ = stride;
    std::vector<int> column(keys.size(), -1);  // a shared pattern's column of P
    for (std::size_t u = 0; u < keys.size(); ++u) {
        if (!shared[u]) continue;
        column[u] = d.patterns_++;
        d.entries_.insert(d.entries_.end(), keys[u].begin(), keys[u].end());
        d.fixed_.push_back(pr.fixed[u]);
    }
    d.counts_.assign(sz(static_cast<long>(d.stride_) * d.patterns_), 0.0);
    for (const auto& [k, u] : pr.reads) {
        if (shared[sz(u)]) {
            d.counts_[sz(static_cast<long>(column[sz(u)]) * d.stride_ + k)] += 1.0;
            continue;
        }
        d.own_component_.push_back(k);
        d.own_entries_.insert(d.own_entries_.end(), keys[sz(u)].begin(), keys[sz(u)].end());
        d.own_fixed_.push_back(pr.fixed[sz(u)]);
    }
    return d;
}

// G first (the gathers, U × len of them), then T = P G a register block at a time.
bool DenseBatch::terms(const double* logs, double* scratch) const {
    double* g = scratch;
    const int gs = patterns_ * len_;
    for (int j = 0; j < gs; ++j) g[j] = logs[entries_[sz(j)]];
    for (int j = 0; j < gs; ++j)
        if (!std::isfinite(g[j])) return false;
    double* t = table_part(scratch);
    const int step = std::min(len_, kConfigs);
    for (int k0 = 0; k0 < stride_; k0 += kRows)
        for (int i0 = 0; i0 < len_; i0 += step) {
            if (step == 2) terms_block<2>(counts_.data(), stride_, patterns_, g, len_, i0, k0, t);
            else terms_block<kConfigs>(counts_.data(), stride_, patterns_, g, len_, i0, k0, t);
        }
    return own_component_.empty() || add_own_terms(logs, t);
}

// The patterns one ref reads, each into its own component's row of T.
bool DenseBatch::add_own_terms(const double* logs, double* t) const {
    for (std::size_t r = 0; r < own_component_.size(); ++r) {
        const int* e = own_entries_.data() + static_cast<long>(r) * len_;
        double* row = t + own_component_[r];
        for (int i = 0; i < len_; ++i) {
            const double x = logs[e[i]];
            if (!std::isfinite(x)) return false;
            row[static_cast<long>(i) * stride_] += x;
        }
    }
    return true;
}

// H(u, ·) = P(:, u)ᵀ W, each added into its pattern's entries.
void DenseBatch::accumulate(const double* w, double* acc) const {
    const int step = std::min(len_, kConfigs);
    double h[kConfigs];
    for (int u = 0; u < patterns_; ++u) {
        if (fixed_[sz(u)]) continue;
        const double* p = counts_.data() + static_cast<long>(u) * stride_;
        for (int i0 = 0; i0 < len_; i0 += step) {
            if (step == 2) dots_block<2>(p, w, stride_, i0, h);
            else dots_block<kConfigs>(p, w, stride_, i0, h);
            for (int i = 0; i < step; ++i) acc[entries_[sz(u * len_ + i0 + i)]] += h[i];
        }
    }
    if (!own_component_.empty()) add_own_weights(w, acc);
}

// A pattern one ref reads: its component's weights, into its entries.
void DenseBatch::add_own_weights(const double* w, double* acc) const {
    for (std::size_t r = 0; r < own_component_.size(); ++r) {
        if (own_fixed_[r]) continue;
        const int* e = own_entries_.data() + static_cast<long>(r) * len_;
        const double* row = w + own_component_[r];
        for (int i = 0; i < len_; ++i) acc[e[i]] += row[static_cast<long>(i) * stride_];
    }
}

}  // namespace vbn
