#include "runtime/target/factor_tables.hpp"

#include "inference/exp_nonpositive.hpp"
#include "runtime/index.hpp"
#include "runtime/target/row_table.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <type_traits>
#include <utility>

namespace vbn {

namespace {

// Configurations of one component handled at a time: all of them up to m = 12 (the default
// limit of families.hpp), so that Scratch::terms stays small whatever max_enumerated is.
constexpr int kChunk = 4096;
// Components that batched_sum handles at a time, and the most unobserved values of one it
// takes: Scratch::batch is 2^kBatchMaxSize × kBatch doubles (64 KB).
constexpr int kBatch = 256;
constexpr int kBatchMaxSize = 5;

// The factor's distinct link variables in order of first appearance: its scope besides itself.
std::vector<int> link_scope(const Factor& f) {
    std::vector<int> scope;
    auto add = [&scope](int v) {
        if (std::find(scope.begin(), scope.end(), v) == scope.end()) scope.push_back(v);
    };
    for (const auto& l : f.links) {
        add(l.var);
        for (int a : l.also)
            if (a >= 0) add(a);
    }
    return scope;
}

}  // namespace

std::size_t FactorTables::KeyHash::operator()(const std::vector<double>& key) const {
    return hash_doubles(key.data(), key.size());
}

// Every component's tables are built, the choice of those summed directly read from them, and
// those components' tables then taken out: one pass over the factors.
FactorTables::FactorTables(const Families& families, std::vector<int> block_offsets, std::vector<char>* direct,
                           long kept_entries)
    : offsets_(std::move(block_offsets)) {
    Index index;
    first_ref_.push_back(0);
    for (const auto& comp : families.components) add_component(comp, index);
    if (direct) {
        *direct = summed_directly();
        drop(*direct);
    }
    tables_of_block_.resize(families.components_of_block.size());
    for (std::size_t b = 0; b < tables_of_block_.size(); ++b) {
        auto& out = tables_of_block_[b];
        for (int c : families.components_of_block[b])
            for (int r = first_ref_[sz(c)]; r < first_ref_[sz(c) + 1]; ++r) out.push_back(refs_[sz(r)].table);
        std::sort(out.begin(), out.end());
        out.erase(std::unique(out.begin(), out.end()), out.end());
    }
    keep_entries(kept_entries);
    ref_block_.reserve(refs_.size());
    for (const Ref& r : refs_) ref_block_.push_back(tables_[sz(r.table)].block);
    make_batches();
}

void FactorTables::make_batches() {
    batches_.assign(kBatchMaxSize, {});
    batched_.assign(size_.size(), 0);
    for (std::size_t c = 0; c < size_.size(); ++c)
        if (kept_first_[c] >= 0 && size_[c] >= 1 && size_[c] <= kBatchMaxSize) {
            batches_[sz(size_[c] - 1)].push_back(static_cast<int>(c));
            batched_[c] = 1;
        }
    dense_.assign(batches_.size(), {});
    long budget = kDenseCounts;
    for (std::size_t g = 0; g < batches_.size(); ++g) make_dense(2 << static_cast<int>(g), batches_[g], budget);
}

int FactorTables::dense_batches() const {
    int n = 0;
    for (const auto& group : dense_)
        for (const auto& d : group) n += d ? 1 : 0;
    return n;
}

int FactorTables::batches() const {
    int n = 0;
    for (const auto& group : dense_) n += static_cast<int>(group.size());
    return n;
}

void FactorTables::make_dense(int len, const std::vector<int>& comps, long& budget) {
    auto& out = dense_[sz(std::countr_zero(static_cast<unsigned>(len)) - 1)];
    for (std::size_t at = 0; at < comps.size(); at += kBatch) {
        std::vector<DenseBatch::Component> batch;
        for (std::size_t k = at; k < std::min(comps.size(), at + kBatch); ++k) {
            const int c = comps[k], first = first_ref_[sz(c)];
            batch.push_back({kept_entries_.data() + kept_first_[sz(c)], ref_block_.data() + first,
                             first_ref_[sz(c) + 1] - first});
        }
        out.push_back(DenseBatch::make(len, batch));
        if (out.back() && out.back()->counts() > budget) out.back().reset();
        if (out.back()) budget -= out.back()->counts();
    }
}

void FactorTables::keep_entries(long limit) {
    kept_at_.assign(refs_.size(), -1);
    // Whole one-chunk components, in order, each while the total stays within the limit; the
    // rest are remade at each evaluation, with the same bits.
    const std::size_t n = first_ref_.empty() ? 0 : first_ref_.size() - 1;
    std::vector<char> keep(n, 0);
    long total = 0;
    for (std::size_t c = 0; c < n; ++c) {
        if (size_[c] == 0 || (1L << size_[c]) > kChunk) continue;
        const long need = static_cast<long>(first_ref_[c + 1] - first_ref_[c]) << size_[c];
        if (total + need > limit) continue;
        keep[c] = 1;
        total += need;
    }
    Scratch s;
    s.entries.resize(static_cast<std::size_t>(kChunk));
    kept_entries_.reserve(static_cast<std::size_t>(total));
    kept_first_.assign(n, -1);
    for (std::size_t c = 0; c < n; ++c) {
        if (!keep[c]) continue;
        const int len = 1 << size_[c];
        kept_first_[c] = static_cast<long>(kept_entries_.size());
        for (int r = first_ref_[c]; r < first_ref_[c + 1]; ++r) {
            ref_entries(refs_[sz(r)], 0, len, s);
            kept_at_[sz(r)] = static_cast<long>(kept_entries_.size());
            kept_entries_.insert(kept_entries_.end(), s.entries.begin(), s.entries.begin() + len);
        }
    }
}

// The table of factor f with the given link scope: an existing one when an earlier factor
// agrees in everything but its own node's value (the key), else a new one.
int FactorTables::add_table(const Factor& f, const std::vector<int>& scope, Index& index) {
    std::vector<double> key{static_cast<double>(f.element), static_cast<double>(f.block), f.base};
    key.insert(key.end(), f.f.data(), f.f.data() + f.f.size());
    key.push_back(static_cast<double>(scope.size()));
    std::vector<Link> links;
    for (const auto& l : f.links) {
        auto pos = [&scope](int v) { return static_cast<int>(std::find(scope.begin(), scope.end(), v) - scope.begin()); };
        int mask = 1 << pos(l.var);
        for (int a : l.also)
            if (a >= 0) mask |= 1 << pos(a);
        links.push_back({mask, l.feature, l.coef});
        key.insert(key.end(), {static_cast<double>(mask), static_cast<double>(l.feature), l.coef});
    }
    const auto [it, inserted] = index.emplace(std::move(key), tables());
    if (!inserted) return it->second;
    Table t;
    t.block = f.block;
    t.base = f.base;
    t.f = f.f;
    t.links = std::move(links);
    t.scope = static_cast<int>(scope.size());
    t.first = configurations_;
    configurations_ += 1 << t.scope;
    tables_.push_back(std::move(t));
    return it->second;
}

// A component summed by variable elimination (Component::order) gets no factors here.
void FactorTables::add_component(const Component& comp, Index& index) {
    for (std::size_t j = 0; j < comp.factors.size() && !comp.eliminated(); ++j) {
        const Factor& f = comp.factors[j];
        const std::vector<int> scope = link_scope(f);
        Ref r;
        r.table = add_table(f, scope, index);
        r.entry = 2 * tables_[sz(r.table)].first + (f.value > 0 ? 1 : 0);
        r.first_bit = static_cast<int>(bits_.size());
        if (f.value == 0) bits_.push_back({f.self, 0});
        for (std::size_t k = 0; k < scope.size(); ++k) bits_.push_back({scope[k], static_cast<int>(k) + 1});
        r.bits = static_cast<int>(bits_.size()) - r.first_bit;
        refs_.push_back(r);
    }
    first_ref_.push_back(static_cast<int>(refs_.size()));
    size_.push_back(comp.eliminated() ? 0 : comp.size());
    weight_.push_back(comp.weight);
}

// Tables pay where they are shared: a factor tabulated once serves every component (row
// pattern) that reads it. A component none of whose tables another component reads gains
// nothing from them, and loses when their cost, Σ_j 2^{s_j} configurations each of an exp and
// a log1p, is not below that of the direct sum, 2^m configurations each of one exp per factor
// and one log: then it is summed directly (e.g. one missing node with a real-valued parent,
// m = 1: 2 · (1 + 2) against 2 · (2 + 1)).
std::vector<char> FactorTables::summed_directly() const {
    const int n = static_cast<int>(size_.size());
    std::vector<int> users(sz(tables()), 0), seen(sz(tables()), -1), counted(sz(tables()), -1);
    for (int c = 0; c < n; ++c)
        for (int r = first_ref_[sz(c)]; r < first_ref_[sz(c) + 1]; ++r) {
            const int t = refs_[sz(r)].table;
            if (seen[sz(t)] != c) ++users[sz(t)];
            seen[sz(t)] = c;
        }
    std::vector<char> direct(sz(n), 0);
    for (int c = 0; c < n; ++c) {
        bool shared = false;
        long table_cost = 0;
        for (int r = first_ref_[sz(c)]; r < first_ref_[sz(c) + 1]; ++r) {
            const int t = refs_[sz(r)].table;
            shared = shared || users[sz(t)] > 1;
            if (counted[sz(t)] != c) table_cost += 2L << tables_[sz(t)].scope;
            counted[sz(t)] = c;
        }
        const long factors = first_ref_[sz(c) + 1] - first_ref_[sz(c)];
        const long direct_cost = (1L << size_[sz(c)]) * (factors + 1);
        direct[sz(c)] = !shared && table_cost >= direct_cost ? 1 : 0;
    }
    return direct;
}

// A component summed directly shares no table, so every table it reads goes with it; the
// others keep their order (the same tables, entries and sums as if never built). A component
// taken out keeps no factors and no configurations.
void FactorTables::drop(const std::vector<char>& direct) {
    std::vector<char> kept(tables_.size(), 0);
    for (std::size_t c = 0; c < direct.size(); ++c)
        if (!direct[c])
            for (int r = first_ref_[c]; r < first_ref_[c + 1]; ++r) kept[sz(refs_[sz(r)].table)] = 1;
    std::vector<int> renumber(tables_.size(), -1), moved(tables_.size(), 0);  // moved: entries' shift
    std::vector<Table> tables;
    configurations_ = 0;
    for (std::size_t t = 0; t < tables_.size(); ++t) {
        if (!kept[t]) continue;
        renumber[t] = static_cast<int>(tables.size());
        moved[t] = 2 * (configurations_ - tables_[t].first);
        tables_[t].first = configurations_;
        configurations_ += 1 << tables_[t].scope;
        tables.push_back(std::move(tables_[t]));
    }
    std::vector<Ref> refs;
    std::vector<Bit> bits;
    std::vector<int> first_ref{0};
    for (std::size_t c = 0; c < direct.size(); ++c) {
        for (int r = first_ref_[c]; r < first_ref_[c + 1] && !direct[c]; ++r) {
            Ref ref = refs_[sz(r)];
            ref.entry += moved[sz(ref.table)];
            ref.table = renumber[sz(ref.table)];
            bits.insert(bits.end(), bits_.begin() + ref.first_bit, bits_.begin() + ref.first_bit + ref.bits);
            ref.first_bit = static_cast<int>(bits.size()) - ref.bits;
            refs.push_back(ref);
        }
        if (direct[c]) size_[c] = 0;
        first_ref.push_back(static_cast<int>(refs.size()));
    }
    tables_ = std::move(tables);
    refs_ = std::move(refs);
    bits_ = std::move(bits);
    first_ref_ = std::move(first_ref);
}

FactorTables::Scratch FactorTables::make_scratch() const {
    Scratch s;
    s.eta.resize(configurations_);
    s.expo.resize(configurations_);
    s.log1p_e.resize(configurations_);
    s.slope.resize(configurations_);
    s.logs.resize(2 * configurations_);
    s.acc.setZero(2 * configurations_);
    int largest = 0;
    for (int m : size_) largest = std::max(largest, m);
    const long len = size_.empty() ? 0 : std::min(1L << largest, static_cast<long>(kChunk));
    s.terms.resize(len);
    s.entries.resize(static_cast<std::size_t>(len));
    s.batch.resize(1 << kBatchMaxSize, kBatch);
    s.batch_top.resize(kBatch);
    s.batch_sum.resize(kBatch);
    int dense = 0;
    for (const auto& group : dense_)
        for (const auto& d : group)
            if (d) dense = std::max(dense, d->scratch_size());
    s.dense.resize(dense);
    return s;
}

void FactorTables::fill(const std::vector<int>* which, In theta, bool with_gradient, Scratch& s) const {
    if (!which) return fill_all(theta, with_gradient, s);
    for (int t : *which) {
        const Table& table = tables_[sz(t)];
        fill_table(table, theta, s);
        if (with_gradient) s.acc.segment(2 * table.first, 2 << table.scope).setZero();
    }
}

// Every table's η first, then e = e^{−|η|} and log g(±η) = min(±η, 0) − log1p(e) over the
// whole array at once (exp_nonpositive and Eigen's log, both vectorised): where each covariate
// row has a table of its own (a hidden node with covariate parents) these were most of an
// evaluation's time. log1p(e) by Kahan's u = 1 + e, log(u) · e / (u − 1) (exact where u
// rounds to 1), as Eigen vectorises log but not log1p for doubles.
void FactorTables::fill_all(In theta, bool with_gradient, Scratch& s) const {
    if (with_gradient) s.acc.setZero();
    if (configurations_ == 0) return;  // every component summed directly: no tables, no arrays
    for (const Table& t : tables_) table_etas(t, theta, s);
    const auto eta = s.eta.array();
    double* e = s.expo.data();
    double* l = s.log1p_e.data();
    for (int i = 0; i < configurations_; ++i) e[i] = inference::exp_nonpositive(-std::abs(s.eta[i]));
    // Eigen's log alone (a select around it is evaluated one entry at a time), then the rest
    // in a plain loop the compiler vectorises.
    s.log1p_e.array() = (1.0 + s.expo.array()).log();
    for (int i = 0; i < configurations_; ++i) {
        const double u = 1.0 + e[i];
        l[i] = u == 1.0 ? e[i] : l[i] * e[i] / (u - 1.0);
    }
    const auto log1p_e = s.log1p_e.array();
    using Strided = Eigen::Map<Eigen::ArrayXd, 0, Eigen::InnerStride<2>>;
    Strided negative(s.logs.data(), configurations_), positive(s.logs.data() + 1, configurations_);
    negative = (-eta).min(0.0) - log1p_e;
    positive = eta.min(0.0) - log1p_e;
}

// η of each configuration of t's links into s.eta.
void FactorTables::table_etas(const Table& t, In theta, Scratch& s) const {
    const double* th = t.block >= 0 ? theta.data() + offsets_[sz(t.block)] : nullptr;
    double eta0 = t.base;
    if (th)
        for (int k = 0; k < t.f.size(); ++k) eta0 += th[k] * t.f[k];
    const int configs = 1 << t.scope;
    for (int i = 0; i < configs; ++i) {
        double eta = eta0;
        for (const auto& l : t.links) {
            const double coef = l.feature >= 0 ? th[l.feature] * l.coef : l.coef;
            eta += l.sign(i) > 0 ? coef : -coef;
        }
        s.eta[t.first + i] = eta;
    }
}

// Per configuration of the links: η, e = e^{−|η|} and log g(±η) = min(±η, 0) − log1p(e), the
// stable form of log g (no overflow at any |η|; e underflows to 0 harmlessly).
void FactorTables::fill_table(const Table& t, In theta, Scratch& s) const {
    table_etas(t, theta, s);
    for (int at = t.first; at < t.first + (1 << t.scope); ++at) {
        const double eta = s.eta[at];
        const double e = std::exp(-std::abs(eta));
        const double log1p_e = std::log1p(e);
        s.expo[at] = e;
        s.logs[2 * at] = std::min(-eta, 0.0) - log1p_e;
        s.logs[2 * at + 1] = std::min(eta, 0.0) - log1p_e;
    }
}

// An entry is linear in the configuration's bits, entry(x) = r.entry + Σ_k bit(x, var_k) 2^shift_k,
// so the chunk's entries follow by doubling: the first from start's high bits, then each low
// bit v adds its weight to copies of the first 2^v (2^m adds, no per-configuration bit loop).
void FactorTables::ref_entries(const Ref& r, long start, int len, Scratch& s) const {
    int* out = s.entries.data();
    out[0] = r.entry;
    for (int k = r.first_bit; k < r.first_bit + r.bits; ++k)
        if ((start >> bits_[sz(k)].var) & 1L) out[0] += 1 << bits_[sz(k)].shift;
    for (int v = 0; (1 << v) < len; ++v) {
        int w = 0;
        for (int k = r.first_bit; k < r.first_bit + r.bits; ++k)
            if (bits_[sz(k)].var == v) w += 1 << bits_[sz(k)].shift;
        const int half = 1 << v;
        for (int p = 0; p < half; ++p) out[half + p] = out[p] + w;
    }
}

const int* FactorTables::entries_of(int r, long start, int len, Scratch& s) const {
    if (start == 0 && kept_at_[sz(r)] >= 0) return kept_entries_.data() + kept_at_[sz(r)];
    ref_entries(refs_[sz(r)], start, len, s);
    return s.entries.data();
}

namespace {

// Σ over refs of logs at each configuration's entry, refs' entries one after another, in the
// order of the general loop (the same bits): Len fixed, so that the sums stay in registers.
template <int Len>
void sum_entries(const int* e, int refs, const double* logs, double* terms) {
    double t[Len] = {};
    for (int r = 0; r < refs; ++r, e += Len)
        for (int i = 0; i < Len; ++i) t[i] += logs[e[i]];
    std::copy(t, t + Len, terms);
}

// e^x in place for x ≤ 0, in a plain loop the compiler vectorises (exp_nonpositive is always
// inlined): one loop for every batch size and form.
void exps_in_place(double* x, int n) {
    for (int i = 0; i < n; ++i) x[i] = inference::exp_nonpositive(x[i]);
}

template <int Len>
void add_weights(const int* e, const int* blocks, int refs, int only_block, const double* terms, double* acc) {
    for (int r = 0; r < refs; ++r, e += Len) {
        if (blocks[r] < 0 || (only_block >= 0 && blocks[r] != only_block)) continue;
        for (int i = 0; i < Len; ++i) acc[e[i]] += terms[i];
    }
}

// Calls f(std::integral_constant<int, L>{}) where len is one of the sizes whose sums are
// unrolled, L = len = 2, 4, …, 32; returns false, f not called, for any other len.
template <class F>
bool with_len(int len, F&& f) {
    switch (len) {
    case 2: f(std::integral_constant<int, 2>{}); return true;
    case 4: f(std::integral_constant<int, 4>{}); return true;
    case 8: f(std::integral_constant<int, 8>{}); return true;
    case 16: f(std::integral_constant<int, 16>{}); return true;
    case 32: f(std::integral_constant<int, 32>{}); return true;
    default: return false;
    }
}

}  // namespace

void FactorTables::chunk_terms_kept(int c, int len, Scratch& s) const {
    const int first = first_ref_[sz(c)], refs = first_ref_[sz(c) + 1] - first;
    const int* e = kept_entries_.data() + kept_first_[sz(c)];
    double* terms = s.terms.data();
    if (with_len(len, [&](auto l) { sum_entries<decltype(l)::value>(e, refs, s.logs.data(), terms); })) return;
    std::fill(terms, terms + len, 0.0);
    for (int r = 0; r < refs; ++r, e += len)
        for (int i = 0; i < len; ++i) terms[i] += s.logs[e[i]];
}

void FactorTables::accumulate_kept(int c, int len, int only_block, Scratch& s) const {
    const int first = first_ref_[sz(c)], refs = first_ref_[sz(c) + 1] - first;
    const int* e = kept_entries_.data() + kept_first_[sz(c)];
    const int* blocks = ref_block_.data() + first;
    const double* terms = s.terms.data();
    double* acc = s.acc.data();
    if (with_len(len, [&](auto l) { add_weights<decltype(l)::value>(e, blocks, refs, only_block, terms, acc); })) return;
    for (int r = 0; r < refs; ++r, e += len) {
        if (blocks[r] < 0 || (only_block >= 0 && blocks[r] != only_block)) continue;
        for (int i = 0; i < len; ++i) acc[e[i]] += terms[i];
    }
}

// log Σ_x e^{t(x)} per component as component() takes it, the components' columns at once:
// the largest t(x) taken out of each, e^{t − top} and the logs of the sums over the whole
// array (exp_nonpositive and Eigen's log, both vectorised), then the components' weighted
// values added in order. Each column's posterior weights go into its factors' entries as
// accumulate_kept's.
template <int Len>
double FactorTables::batch_of(const int* comps, int n, bool accumulate, Scratch& s) const {
    // Len × n contiguous (not a block of the 32-row scratch), so that the exp below runs over
    // one linear array in vector instructions rather than Len entries of a column at a time.
    Eigen::Map<Eigen::Array<double, Len, Eigen::Dynamic>> t(s.batch.data(), Len, n);
    const double* logs = s.logs.data();
    for (int k = 0; k < n; ++k) {
        const int c = comps[k];
        const int first = first_ref_[sz(c)];
        sum_entries<Len>(kept_entries_.data() + kept_first_[sz(c)], first_ref_[sz(c) + 1] - first, logs, &t(0, k));
    }
    // Scratch, not temporaries: nothing is allocated per evaluation.
    auto top = s.batch_top.head(n), sums = s.batch_sum.head(n);
    top = t.colwise().maxCoeff().transpose();
    for (int k = 0; k < n; ++k) t.col(k) -= top[k];
    // t ≤ 0 now: exp_nonpositive in a plain loop over the contiguous array, which the compiler
    // vectorises (Eigen's exp of the broadcast difference called the scalar exp per entry).
    exps_in_place(t.data(), Len * n);
    sums = t.colwise().sum().transpose();
    top += sums.log();  // each component's log Σ_x e^{t(x)}
    double v = 0;
    for (int k = 0; k < n; ++k) v += weight_[sz(comps[k])] * top[k];
    if (!accumulate) return v;
    double* acc = s.acc.data();
    for (int k = 0; k < n; ++k) {
        const int c = comps[k];
        const int first = first_ref_[sz(c)];
        t.col(k) *= weight_[sz(c)] / sums[k];
        add_weights<Len>(kept_entries_.data() + kept_first_[sz(c)], ref_block_.data() + first,
                         first_ref_[sz(c) + 1] - first, -1, &t(0, k), acc);
    }
    return v;
}

// batch_of's arithmetic on the dense form's T, made by DenseBatch::terms, whose column i holds
// configuration i of every component; its rows past n are zero, as accumulate() needs of W.
template <int Len>
double FactorTables::dense_batch_of(const DenseBatch& d, const int* comps, int n, bool accumulate, Scratch& s) const {
    double* base = d.table_part(s.dense.data());
    const int np = d.stride();
    Eigen::Map<Eigen::ArrayXXd, 0, Eigen::OuterStride<>> t(base, n, Len, Eigen::OuterStride<>(np));
    auto top = s.batch_top.head(n), sums = s.batch_sum.head(n);
    top = t.rowwise().maxCoeff();
    const double* high = top.data();
    for (int i = 0; i < Len; ++i) {
        double* x = base + static_cast<long>(i) * np;
        for (int k = 0; k < n; ++k) x[k] -= high[k];
        exps_in_place(x, n);  // t ≤ 0 now
    }
    sums = t.rowwise().sum();
    top += sums.log();  // each component's log Σ_x e^{t(x)}
    double v = 0;
    for (int k = 0; k < n; ++k) v += weight_[sz(comps[k])] * top[k];
    if (!accumulate) return v;
    for (int k = 0; k < n; ++k) sums[k] = weight_[sz(comps[k])] / sums[k];
    for (int i = 0; i < Len; ++i) t.col(i) *= sums;
    d.accumulate(base, s.acc.data());
    return v;
}

double FactorTables::batched_sum(bool accumulate, Scratch& s) const {
    double v = 0;
    for (std::size_t g = 0; g < batches_.size(); ++g) {
        const std::vector<int>& comps = batches_[g];
        for (std::size_t at = 0; at < comps.size(); at += kBatch) {
            const int n = static_cast<int>(std::min<std::size_t>(kBatch, comps.size() - at));
            // Group g holds the components of 2^(g+1) configurations (g < kBatchMaxSize).
            const auto& dense = dense_[g][at / kBatch];
            with_len(2 << static_cast<int>(g), [&](auto l) {
                constexpr int len = decltype(l)::value;
                // Where a log g is not finite the sparse sums take it (DenseBatch::terms).
                if (dense && dense->terms(s.logs.data(), s.dense.data()))
                    v += dense_batch_of<len>(*dense, comps.data() + at, n, accumulate, s);
                else
                    v += batch_of<len>(comps.data() + at, n, accumulate, s);
            });
        }
    }
    return v;
}

void FactorTables::chunk_terms(int c, long start, int len, Scratch& s) const {
    if (start == 0 && kept_first_[sz(c)] >= 0) return chunk_terms_kept(c, len, s);
    double* terms = s.terms.data();
    std::fill(terms, terms + len, 0.0);
    const double* logs = s.logs.data();
    for (int r = first_ref_[sz(c)]; r < first_ref_[sz(c) + 1]; ++r) {
        const int* entries = entries_of(r, start, len, s);
        for (int i = 0; i < len; ++i) terms[i] += logs[entries[i]];
    }
}

// log Σ_x e^{t(x)} over the 2^m configurations, t(x) = Σ_j log g(x_j η_j(x)) (Variational
// MCMC, Sec. 2, case (ii), the sum over x^h), a chunk at a time with the running maximum
// taken out, so that nothing overflows. The gradient is the posterior expectation over x of
// each factor's gradient: the weights p(x | row) go into the entries x reads.
double FactorTables::component(int c, bool accumulate, int only_block, Scratch& s) const {
    double top = 0, sum = 0;
    sum_terms(c, top, sum, s);
    const double value = weight_[sz(c)] * (top + std::log(sum));
    if (!accumulate) return value;
    const long configs = 1L << size_[sz(c)];
    const int len = static_cast<int>(std::min(configs, static_cast<long>(kChunk)));
    double* terms = s.terms.data();
    const double scale = weight_[sz(c)] / sum;
    for (long start = 0; start < configs; start += len) {
        if (configs != len) {  // else terms still holds the one chunk's e^{t(x) − top}
            chunk_terms(c, start, len, s);
            for (int i = 0; i < len; ++i) terms[i] = std::exp(terms[i] - top);
        }
        for (int i = 0; i < len; ++i) terms[i] *= scale;
        accumulate_chunk(c, start, len, only_block, s);
    }
    return value;
}

double FactorTables::log_sum(int c, Scratch& s) const {
    double top = 0, sum = 0;
    sum_terms(c, top, sum, s);
    return top + std::log(sum);
}

// Leaves the last chunk's e^{t(x) − top} in s.terms (all of them when there is one chunk).
void FactorTables::sum_terms(int c, double& top, double& sum, Scratch& s) const {
    const long configs = 1L << size_[sz(c)];
    const int len = static_cast<int>(std::min(configs, static_cast<long>(kChunk)));
    top = -std::numeric_limits<double>::infinity();
    sum = 0;
    double* terms = s.terms.data();
    for (long start = 0; start < configs; start += len) {
        chunk_terms(c, start, len, s);
        const double high = *std::max_element(terms, terms + len);
        if (high > top) {
            if (sum > 0) sum *= std::exp(top - high);
            top = high;
        }
        for (int i = 0; i < len; ++i) {
            terms[i] = std::exp(terms[i] - top);
            sum += terms[i];
        }
    }
}

void FactorTables::accumulate_chunk(int c, long start, int len, int only_block, Scratch& s) const {
    if (start == 0 && kept_first_[sz(c)] >= 0) return accumulate_kept(c, len, only_block, s);
    const double* terms = s.terms.data();
    double* acc = s.acc.data();
    for (int r = first_ref_[sz(c)]; r < first_ref_[sz(c) + 1]; ++r) {
        const int block = ref_block_[sz(r)];
        if (block < 0 || (only_block >= 0 && block != only_block)) continue;
        const int* entries = entries_of(r, start, len, s);
        for (int i = 0; i < len; ++i) acc[entries[i]] += terms[i];
    }
}

void FactorTables::gradient(const std::vector<int>* which, int only_block, double* grad, Scratch& s) const {
    // Every table: each configuration's slope first, in one loop over the whole array.
    if (!which) slopes(0, configurations_, s);
    const int n = which ? static_cast<int>(which->size()) : tables();
    for (int i = 0; i < n; ++i) {
        const Table& t = tables_[sz(which ? (*which)[sz(i)] : i)];
        if (t.block < 0 || (only_block >= 0 && t.block != only_block)) continue;
        if (which) slopes(t.first, t.first + (1 << t.scope), s);
        table_gradient(t, only_block < 0 ? grad + offsets_[sz(t.block)] : grad, s);
    }
}

// d log g(x η)/dη = x g(−x η): with e = e^{−|η|}, g(−η) = (η ≥ 0 ? e : 1) / (1 + e) and
// g(η) = (η ≥ 0 ? 1 : e) / (1 + e). Each configuration's r = Σ_x acc · x g(−x η) into
// s.slope, for configurations [begin, end): a loop without calls, which the compiler
// vectorises.
void FactorTables::slopes(int begin, int end, Scratch& s) const {
    const double *eta = s.eta.data(), *expo = s.expo.data(), *acc = s.acc.data();
    double* slope = s.slope.data();
    for (int at = begin; at < end; ++at) {
        const double e = expo[at];
        const double inv = 1.0 / (1.0 + e);
        const double g_neg = (eta[at] >= 0 ? e : 1.0) * inv, g_pos = (eta[at] >= 0 ? 1.0 : e) * inv;
        slope[at] = acc[2 * at + 1] * g_neg - acc[2 * at] * g_pos;
    }
}

// Each configuration's slope r (slopes()) times ∂η/∂θ_b = f + Σ_links coef_l Π_{mask_l} x
// e_{feature_l}.
void FactorTables::table_gradient(const Table& t, double* grad, Scratch& s) const {
    const int configs = 1 << t.scope;
    double total = 0;
    for (int i = 0; i < configs; ++i) {
        const double r = s.slope[t.first + i];
        total += r;
        for (const auto& l : t.links)
            if (l.feature >= 0) grad[l.feature] += (l.sign(i) > 0 ? r : -r) * l.coef;
    }
    Eigen::Map<Eigen::VectorXd>(grad, t.f.size()) += total * t.f;
}

}  // namespace vbn
