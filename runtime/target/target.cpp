#include "runtime/target/target.hpp"

#include "inference/exp_nonpositive.hpp"
#include "inference/math.hpp"
#include "runtime/error.hpp"
#include "runtime/index.hpp"
#include "runtime/target/row_table.hpp"
#include "runtime/target/scale_prior.hpp"

#include <Eigen/Cholesky>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numbers>
#include <numeric>
#include <utility>

#include <fmt/format.h>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace vbn {

namespace {

// Complete-family patterns are processed in chunks small enough that a chunk of F stays in
// cache between the product F θ and the product F' r, so F is read from memory once.
constexpr int chunk_rows = 256;
constexpr int kProductRows = 1000;  // factors in (1, 2] in one product: at most 2^1000
static_assert(chunk_rows <= kProductRows, "a chunk's product of factors in (1, 2] must not overflow");
constexpr int kLogGroup = 16;  // the shortest average run of equal weights given one log per run

// The evaluation by products (complete_term_by_products) applies to a ±1 family whose offsets
// are all within ±kMaxProductOffset, at a θ where |a_t| + Σ_j |θ_j| is at most
// kMaxProductBound: e^η_t and 1 + e^η_t are then normal doubles below 2^93.4, and the
// log density's two sums (Σ w_pos η and Σ w_total log(1 + e^η), about as large as Σ w_total |η|
// each) no more than 64 times the number of rows, so their difference loses little. Beyond it
// (weights of tens) complete_term takes η and exp(-|η|) row by row.
constexpr double kMaxProductOffset = 32;
constexpr double kMaxProductBound = 64;

// ±1 families: parents per sign group (one byte of signs) and the smallest block packed.
constexpr int sign_group_bits = 8;
constexpr int sign_group_size = 1 << sign_group_bits;
constexpr int sign_min_columns = 8;

int sign_group_width(int k, int g) { return std::min(sign_group_bits, k - g * sign_group_bits); }

// With AVX-512, η of a ±1 family with at most 64 columns is summed from tables of 4 columns,
// read 8 rows at a time by a two-register permute (Merged::sign_words). On an Ice Lake server
// CPU a value of the log density over 1,000 rows took 1.45-1.47 against 2.18-2.27 us at 20
// columns and 2.07-2.12 against 3.74-4.11 us at 50 (bench_target, alternated runs).
constexpr int word_group_bits = 4;
constexpr int word_max_columns = 64;
#if defined(__AVX512F__)
constexpr bool word_signs = true;
constexpr int word_group_size = 1 << word_group_bits;
#else
constexpr bool word_signs = false;
#endif

// For each group g of up to `bits` consecutive weights θ_{bits g..}, the sums Σ_k ±θ_{bits g+k}
// for every sign pattern p (bit k set: +), 2^bits entries a group: the all-minus sum, then,
// weight by weight, the patterns with bit k set from those below 2^k, plus twice that weight
// (contiguous runs of adds, which the compiler vectorises).
void build_sign_sums(const Eigen::Ref<const Eigen::VectorXd>& th, int bits, double* sums) {
    const int k = static_cast<int>(th.size());
    const int groups = (k + bits - 1) / bits;
    for (int g = 0; g < groups; ++g) {
        const int width = std::min(bits, k - g * bits);
        const double* w = th.data() + g * bits;
        double* t = sums + g * (1 << bits);
        double all_minus = 0;
        for (int j = 0; j < width; ++j) all_minus -= w[j];
        t[0] = all_minus;
        for (int j = 0; j < width; ++j) {
            const int half = 1 << j;
            const double step = 2 * w[j];
            for (int p = 0; p < half; ++p) t[half + p] = t[p] + step;
        }
    }
}

// Rows t..t+7's sign bytes as one word, row t + r in bits 8r..8r+7: one load where there were
// eight (the table reads and updates keep the load ports busy), the bytes taken out by shifts.
std::uint64_t sign_word(const unsigned char* s) {
    std::uint64_t w = 0;
    if constexpr (std::endian::native == std::endian::little) std::memcpy(&w, s, sizeof w);
    else
        for (int r = 0; r < 8; ++r) w |= std::uint64_t{s[r]} << (8 * r);
    return w;
}

unsigned sign_byte(std::uint64_t w, int r) { return static_cast<unsigned>(w >> (8 * r)) & 0xffu; }

// out[t] = from[t] + the Take groups' table entries for row t's sign bytes, added in group
// order (or, with Multiply, multiplied); Take is a constant so that the inner loop unrolls and
// the row loop stays one pass. The signs are read eight rows to a word.
template <int Take, bool Multiply = false>
void add_sign_groups(int len, const double* from, const unsigned char* const* s, const double* const* tb, double* out) {
    const auto combine = [](double v, double x) { return Multiply ? v * x : v + x; };
    int t = 0;
    for (; t + 8 <= len; t += 8) {
        std::uint64_t w[Take];
        for (int i = 0; i < Take; ++i) w[i] = sign_word(s[i] + t);
        for (int r = 0; r < 8; ++r) {
            double v = from[t + r];
            for (int i = 0; i < Take; ++i) v = combine(v, tb[i][sign_byte(w[i], r)]);
            out[t + r] = v;
        }
    }
    for (; t < len; ++t) {
        double v = from[t];
        for (int i = 0; i < Take; ++i) v = combine(v, tb[i][s[i][t]]);
        out[t] = v;
    }
}

#if defined(__AVX512F__)
// out[t] = from[t] + the Take 4-column groups' table entries for row t, groups first … first +
// Take − 1 in order (or, with Multiply, times them): each table's 16 entries sit in two
// registers and _mm512_permutex2var_pd reads 8 rows' entries at once from the low 4 bits of
// each row's (shifted) sign word. The rows past the last 8 take the same entries in the same
// order, a scalar at a time.
template <int Take, bool Multiply = false>
void add_word_groups(int len, const double* from, const std::uint64_t* words, int first, const double* tables,
                     double* out) {
    __m512d lo[Take], hi[Take];
    for (int i = 0; i < Take; ++i) {
        lo[i] = _mm512_loadu_pd(tables + i * word_group_size);
        hi[i] = _mm512_loadu_pd(tables + i * word_group_size + 8);
    }
    const int shift = first * word_group_bits;
    int t = 0;
    for (; t + 8 <= len; t += 8) {
        const __m512i w = _mm512_srli_epi64(_mm512_loadu_si512(words + t), shift);
        __m512d v = _mm512_loadu_pd(from + t);
        for (int i = 0; i < Take; ++i) {
            const __m512d x = _mm512_permutex2var_pd(lo[i], _mm512_srli_epi64(w, i * word_group_bits), hi[i]);
            v = Multiply ? _mm512_mul_pd(v, x) : _mm512_add_pd(v, x);
        }
        _mm512_storeu_pd(out + t, v);
    }
    for (; t < len; ++t) {
        const std::uint64_t w = words[t] >> shift;
        double v = from[t];
        for (int i = 0; i < Take; ++i) {
            const double x = tables[i * word_group_size + ((w >> (i * word_group_bits)) & 15u)];
            v = Multiply ? v * x : v + x;
        }
        out[t] = v;
    }
}
#endif

// bucket_i[s_i[t]] += r[t] for the Take groups, even rows into the first set of buckets and
// odd rows into the second (`set` doubles on): two independent chains of read-add-writes per
// group instead of one, each row's r read once for all Take groups, and the signs read eight
// rows to a word. Each bucket still adds its rows in order.
template <int Take>
void scatter_sign_groups(int len, const double* r, const unsigned char* const* s, double* const* b, int set) {
    int t = 0;
    for (; t + 8 <= len; t += 8) {
        std::uint64_t w[Take];
        for (int i = 0; i < Take; ++i) w[i] = sign_word(s[i] + t);
        for (int k = 0; k < 8; k += 2) {
            const double even = r[t + k], odd = r[t + k + 1];
            for (int i = 0; i < Take; ++i) {
                b[i][sign_byte(w[i], k)] += even;
                b[i][set + sign_byte(w[i], k + 1)] += odd;
            }
        }
    }
    for (; t + 1 < len; t += 2) {
        const double even = r[t], odd = r[t + 1];
        for (int i = 0; i < Take; ++i) {
            b[i][s[i][t]] += even;
            b[i][set + s[i][t + 1]] += odd;
        }
    }
    if (t < len)
        for (int i = 0; i < Take; ++i) b[i][s[i][t]] += r[t];
}

// Calls f.template operator()<Take>() with Take = take, for take in 1..Max (1 below that).
template <int Max, class F>
void with_take(int take, F&& f) {
    if constexpr (Max > 1) {
        if (take == Max) return f.template operator()<Max>();
        return with_take<Max - 1>(take, f);
    } else {
        f.template operator()<1>();
    }
}

// grad_{8g+k} += Σ_p ±bucket_g[p] (+ where bit k of p is set) for Take consecutive groups of
// the same width, bucket_g being the even rows' set plus the odd rows' set, from the top bit
// down: the difference of the upper and lower halves, then the upper half folded onto the
// lower. The top bit's pass also adds the two sets. The groups go side by side, so that their
// sums (chains of dependent adds, each in order of p) overlap. Each entry is zeroed after its
// last read, so the buckets are zero again for the next gradient (entries past a narrow last
// group's patterns are never written).
template <int Take>
void fold_sign_groups(int width, double* buckets, int set, double* grad) {
    double lower[Take] = {}, upper[Take] = {};
    int half = 1 << (width - 1);
    for (int p = 0; p < half; ++p)
        for (int i = 0; i < Take; ++i) {
            double* b = buckets + i * sign_group_size;
            double* odd = b + set;
            const double lo = b[p] + odd[p], hi = b[p + half] + odd[p + half];
            lower[i] += lo;
            upper[i] += hi;
            b[p] = lo + hi;
            b[p + half] = odd[p] = odd[p + half] = 0;
        }
    for (int i = 0; i < Take; ++i) grad[i * sign_group_bits + width - 1] += upper[i] - lower[i];
    for (int bit = width - 2; bit >= 0; --bit) {
        half = 1 << bit;
        for (int i = 0; i < Take; ++i) lower[i] = upper[i] = 0;
        for (int p = 0; p < half; ++p)
            for (int i = 0; i < Take; ++i) {
                double* b = buckets + i * sign_group_size;
                lower[i] += b[p];
                upper[i] += b[p + half];
                b[p] += b[p + half];
                b[p + half] = 0;
            }
        for (int i = 0; i < Take; ++i) grad[i * sign_group_bits + bit] += upper[i] - lower[i];
    }
    for (int i = 0; i < Take; ++i) buckets[i * sign_group_size] = 0;
}

// The sign gradient of all groups of a k-weight block: full groups up to four at a time.
void add_sign_gradient(int k, int groups, double* buckets, double* grad) {
    const int set = groups * sign_group_size;
    for (int g = 0; g < groups;) {
        const int width = sign_group_width(k, g);
        const int take = width == sign_group_bits ? std::min(4, k / sign_group_bits - g) : 1;
        with_take<4>(take, [&]<int Take>() {
            fold_sign_groups<Take>(width, buckets + g * sign_group_size, set, grad + g * sign_group_bits);
        });
        g += take;
    }
}

// to[r] = from[order[r]], freeing `from`: where the order is the identity (every weight the
// same, as where no two rows are alike) `from` becomes `to` without a copy, which at 10^6
// rows would hold 8 MB twice.
void take_in_order(const std::vector<int>& order, Eigen::VectorXd& from, Eigen::VectorXd& to) {
    bool identity = true;
    for (std::size_t r = 0; identity && r < order.size(); ++r) identity = order[r] == static_cast<int>(r);
    if (identity) {
        to = std::move(from);
        return;
    }
    to.resize(from.size());
    for (std::size_t r = 0; r < order.size(); ++r) to[static_cast<Eigen::Index>(r)] = from[order[r]];
    from = Eigen::VectorXd();
}

}  // namespace

// Rows equal in (a, f) are merged whatever y is; the order is that of first appearance,
// so the result depends on the family only.
Target::Merged Target::merge_signs(const CompleteFamily& cf) {
    const int n = cf.patterns();
    const int k = static_cast<int>(cf.f.cols());
    // Patterns with equal (a_t, f_t) (as doubles: +0 = -0) share a merged row. The table
    // holds pattern numbers only (open addressing, at most half full) and compares the rows
    // in the family itself: a table of keys would be another copy of the data.
    std::vector<int> row_of(sz(n));
    std::vector<int> first;
    std::size_t slots = 16;
    while (slots < 2 * sz(n)) slots *= 2;
    std::vector<int> slot(slots, -1);  // a pattern t with row_of[t] a new row, or -1
    std::vector<double> key(sz(k) + 1);
    auto same = [&](int s, int t) {
        if (!(cf.a[s] == cf.a[t])) return false;
        for (int j = 0; j < k; ++j)
            if (!(cf.f(s, j) == cf.f(t, j))) return false;
        return true;
    };
    for (int t = 0; t < n; ++t) {
        key[0] = cf.a[t];
        for (int j = 0; j < k; ++j) key[sz(j) + 1] = cf.f(t, j);
        std::size_t i = hash_doubles(key.data(), key.size()) & (slots - 1);
        while (slot[i] >= 0 && !same(slot[i], t)) i = (i + 1) & (slots - 1);
        if (slot[i] < 0) {
            slot[i] = t;
            row_of[sz(t)] = static_cast<int>(first.size());
            first.push_back(t);
        } else {
            row_of[sz(t)] = row_of[sz(slot[i])];
        }
    }
    slot = {};
    const int rows = static_cast<int>(first.size());
    Eigen::VectorXd w_pos = Eigen::VectorXd::Zero(rows), w_neg = Eigen::VectorXd::Zero(rows);
    for (int t = 0; t < n; ++t) (cf.y[t] > 0 ? w_pos : w_neg)[row_of[sz(t)]] += cf.w[t];
    row_of = {};
    Eigen::VectorXd w_total = w_pos + w_neg;
    // Rows in runs of equal total weight (their logs are taken of products; see complete_term),
    // taken straight from the family's rows: each merged row r is family row first[order[r]].
    std::vector<int> order(sz(rows));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int r, int q) { return w_total[r] < w_total[q]; });
    // The family's row of each merged row; f is read a column at a time (it is stored so),
    // not a row at a time with a stride of the family's length between entries.
    std::vector<int> from_row(sz(rows));
    for (int r = 0; r < rows; ++r) from_row[sz(r)] = first[sz(order[sz(r)])];
    first = {};
    Merged m;
    take_in_order(order, w_pos, m.w_pos);
    take_in_order(order, w_neg, m.w_neg);
    take_in_order(order, w_total, m.w_total);
    order = {};
    for (int r = 1; r < rows; ++r)
        if (m.w_total[r] != m.w_total[r - 1]) m.run_end.push_back(r);
    m.run_end.push_back(rows);
    m.product_logs = rows >= kLogGroup * static_cast<int>(m.run_end.size());
    bool identity = rows == n;
    for (int r = 0; identity && r < rows; ++r) identity = from_row[sz(r)] == r;
    bool signs = k >= sign_min_columns;
    for (int j = 0; signs && j < k; ++j) {
        const double* col = cf.f.col(j).data();
        for (int r = 0; r < rows; ++r) signs &= col[from_row[sz(r)]] == 1.0 || col[from_row[sz(r)]] == -1.0;
    }
    if (signs || !identity) {
        m.a.resize(rows);
        for (int r = 0; r < rows; ++r) m.a[r] = cf.a[from_row[sz(r)]];
    }
    if (signs) {
        // Packed signs only: the dense rows are not kept (complete_term reads one or the other).
        m.sign_groups = (k + sign_group_bits - 1) / sign_group_bits;
        m.signs.assign(sz(rows) * sz(m.sign_groups), 0);
        for (int j = 0; j < k; ++j) {
            const double* col = cf.f.col(j).data();
            unsigned char* out = m.signs.data() + sz(j / sign_group_bits) * sz(rows);
            const int shift = j % sign_group_bits;
            // Without a branch: the signs are as often + as -, a branch on them mispredicted.
            for (int r = 0; r < rows; ++r)
                out[r] = static_cast<unsigned char>(out[r] | (static_cast<unsigned>(col[from_row[sz(r)]] > 0) << shift));
        }
        if (word_signs && k <= word_max_columns) {
            m.sign_words.assign(sz(rows), 0);
            for (int j = 0; j < k; ++j) {
                const double* col = cf.f.col(j).data();
                for (int r = 0; r < rows; ++r)
                    m.sign_words[sz(r)] |= std::uint64_t{col[from_row[sz(r)]] > 0} << j;
            }
        }
        m.max_abs_a = rows > 0 ? m.a.cwiseAbs().maxCoeff() : 0.0;
        if (m.max_abs_a <= kMaxProductOffset) {
            m.exp_a = m.a.array().exp();
            m.lin_a = m.w_pos.dot(m.a);
            m.lin_f = Eigen::VectorXd::Zero(k);
            for (int j = 0; j < k; ++j) {
                const double* col = cf.f.col(j).data();
                double sum = 0;
                for (int r = 0; r < rows; ++r) sum += col[from_row[sz(r)]] > 0 ? m.w_pos[r] : -m.w_pos[r];
                m.lin_f[j] = sum;
            }
        }
    } else {
        m.shares_family = identity;
        if (identity) {
            // The family's a and w hold the same numbers (w + 0 = w): a copy of each would be
            // 16 MB at 10^6 rows.
            m.w_total = Eigen::VectorXd();
        } else {
            m.f.resize(rows, k);
            for (int j = 0; j < k; ++j)
                for (int r = 0; r < rows; ++r) m.f(r, j) = cf.f(from_row[sz(r)], j);
        }
    }
    return m;
}

// The Student-t entries of block b into p. The Gaussian normaliser counted N(μ, s²) for
// each; returns what turns that into Student-t's log Γ((ν+1)/2) − log Γ(ν/2) − ½ log(νπ) −
// log s.
double Target::add_heavy_entries(const ir::Block& b, const ir::Graph& graph, BlockPrior& p) {
    double change = 0;
    for (int k = 0; k < b.size; ++k) {
        const double nu = b.prior_df[sz(k)];
        if (nu == 0) continue;
        const double s2 = b.prior_cov[sz(k * b.size + k)];
        if (!(nu > 0) || !std::isfinite(nu))
            throw Error(ErrorKind::model, fmt::format("model '{}': the degrees of freedom of {}'s prior must be positive",
                                                      graph.name, graph.theta_name(b.offset + k)));
        p.heavy.push_back(k);
        p.nu.push_back(nu);
        p.scale2.push_back(s2);
        p.gauss_precision.push_back(p.diagonal ? 0.0 : 1.0 / s2);
        if (p.diagonal) p.precision[k] = 0;
        change += inference::log_gamma(0.5 * (nu + 1)) - inference::log_gamma(0.5 * nu) -
                  0.5 * std::log(nu * std::numbers::pi) + 0.5 * std::log(2 * std::numbers::pi);
    }
    return change;
}

Target::Target(const ir::Graph& graph, const Dataset& data, const TargetOptions& options)
    : dim_(graph.dim), sum_out_(options.sum_out), pattern_terms_(options.pattern_terms) {
    if (sum_out_ && (options.max_enumerated < 0 || options.max_enumerated > 30))
        throw Error(ErrorKind::usage, fmt::format("max_enumerated must be between 0 and 30, not {}", options.max_enumerated));
    FamilyOptions fo;
    fo.max_enumerated = sum_out_ ? options.max_enumerated : std::numeric_limits<int>::max();
    fo.summation = sum_out_ ? options.summation : Summation::enumerate;  // no limit: no orders to find
    fo.pattern_terms = options.pattern_terms;
    families_ = build_families(graph, data, fo);
    if (options.data_read) options.data_read();  // nothing below reads `data`
    family_first_.push_back(0);
    for (const auto& cf : families_.complete) family_first_.push_back(family_first_.back() + cf.patterns());

    const double log_2pi = std::log(2 * std::numbers::pi);
    int total = 0;
    for (const auto& b : graph.blocks) {
        const std::string& who = graph.elements[sz(b.element)].name;
        if (b.offset != total || b.size < 0 || b.prior_mean.size() != sz(b.size) ||
            b.prior_cov.size() != sz(b.size) * sz(b.size))
            throw Error(ErrorKind::model, fmt::format("model '{}': the parameter block of node '{}' is malformed",
                                                      graph.name, who));
        total += b.size;
        BlockPrior p;
        p.offset = b.offset;
        p.size = b.size;
        p.diagonal = b.prior_diagonal;
        p.mean = Eigen::Map<const Eigen::VectorXd>(b.prior_mean.data(), b.size);
        const Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>> cov(
            b.prior_cov.data(), b.size, b.size);
        double log_det = 0;
        if (p.diagonal) {
            p.precision = cov.diagonal().cwiseInverse();
            if (!(cov.diagonal().array() > 0).all() || !p.precision.allFinite())
                throw Error(ErrorKind::model,
                            fmt::format("model '{}': the prior variances of node '{}' must be positive and finite",
                                        graph.name, who));
            log_det = cov.diagonal().array().log().sum();
        } else {
            Eigen::LLT<Eigen::MatrixXd> llt(cov);
            if (llt.info() != Eigen::Success || !llt.matrixL().toDenseMatrix().allFinite())
                throw Error(ErrorKind::model,
                            fmt::format("model '{}': the prior covariance of node '{}' is not positive definite",
                                        graph.name, who));
            p.chol = llt.matrixL();
            log_det = 2 * p.chol.diagonal().array().log().sum();
        }
        // Gaussian normaliser -½ (d log 2π + log det Σ), dropped from log_density.
        log_constant_ += -0.5 * (b.size * log_2pi + log_det);
        if (b.heavy_tailed()) log_constant_ += add_heavy_entries(b, graph, p);
        for (int k = 0; b.has_learned_scale() && k < b.size; ++k)
            if (const int sc = b.prior_scale[sz(k)]; sc >= 0) {
                p.scaled.push_back(k);
                p.scale_theta.push_back(graph.scales.at(sz(sc)).theta_index);
                if (p.diagonal) p.precision[k] = 0;
                p.unit_precision = p.diagonal ? 0.0 : 1.0;
            }
        heavy_tailed_ = heavy_tailed_ || !p.heavy.empty();
        max_block_ = std::max(max_block_, b.size);
        blocks_.push_back(std::move(p));
    }
    if (total + static_cast<int>(graph.scales.size()) != dim_)
        throw Error(ErrorKind::model,
                    fmt::format("model '{}': blocks cover {} parameters and {} learned scales, but the model has {}",
                                graph.name, total, graph.scales.size(), dim_));
    add_scales(graph);
    log_constant_ += families_.fixed_log_likelihood;

    separable_.assign(blocks_.size(), 0);
    for (const auto& group : families_.coupled_groups)
        if (group.size() == 1 && group[0] >= 0 && group[0] < blocks() && blocks_[sz(group[0])].scaled.empty())
            separable_[sz(group[0])] = 1;
    merged_.reserve(families_.complete.size());
    for (const auto& cf : families_.complete) merged_.push_back(merge_signs(cf));

    if (sum_out_) {
        std::vector<int> offsets;
        for (const auto& p : blocks_) offsets.push_back(p.offset);
        eliminator_ = Eliminator(families_, offsets);
        tables_ = FactorTables(families_, std::move(offsets), &direct_);
    }
    direct_.resize(families_.components.size(), 0);
    for (std::size_t c = 0; c < families_.components.size(); ++c) {
        if (!direct_[c]) continue;
        const Component& comp = families_.components[c];
        ++direct_count_;
        max_direct_size_ = std::max(max_direct_size_, comp.size());
        max_factors_ = std::max(max_factors_, static_cast<int>(comp.factors.size()));
        int links = 0;
        for (const auto& f : comp.factors) links += static_cast<int>(f.links.size());
        max_links_ = std::max(max_links_, links);
    }
    for (const auto& cf : families_.complete) workspace_rows_ = std::max(workspace_rows_, cf.patterns());
    workspace_rows_ = std::min(workspace_rows_, chunk_rows);
    for (const auto& m : merged_) max_sign_groups_ = std::max(max_sign_groups_, m.sign_groups);
    for (int b = 0; b < blocks() && !some_block_batches_; ++b) some_block_batches_ = block_batch(b) > 1;
}

// Each scale's prior on η = log τ (runtime/target/scale_prior.hpp); its normalising constant
// goes to log_constant_.
void Target::add_scales(const ir::Graph& graph) {
    for (const ir::Scale& sc : graph.scales) {
        const bool args_ok = sc.scale > 0 && std::isfinite(sc.scale) && sc.shape > 0 && std::isfinite(sc.shape) &&
                             sc.rate > 0 && std::isfinite(sc.rate);
        if (!args_ok || sc.theta_index < dim_ - static_cast<int>(graph.scales.size()) || sc.theta_index >= dim_ ||
            sc.means.size() != sc.weights.size())
            throw Error(ErrorKind::model, fmt::format("model '{}': the learned scale '{}' is malformed", graph.name, sc.name));
        log_constant_ += scale_log_norm(sc);
        scales_.push_back(sc);
    }
}

Target::Workspace Target::make_workspace() const {
    Workspace ws;
    ws.eta_.resize(workspace_rows_);
    ws.resid_.resize(workspace_rows_);
    ws.centred_.resize(max_block_);
    ws.tables_ = tables_.make_scratch();
    ws.elim_ = eliminator_.make_scratch();
    ws.eta0_.resize(max_factors_);
    ws.factor_resid_.resize(max_factors_);
    ws.resid_acc_.resize(max_factors_);
    ws.coef_.resize(max_links_);
    ws.link_acc_.resize(max_links_);
    ws.x_.resize(max_direct_size_);
    const int groups = max_sign_groups_;
    ws.sign_sums_.resize(groups * sign_group_size);
    ws.sign_exps_.resize(groups * sign_group_size);
    ws.exp_theta_.resize(max_block_);
    // Even and odd rows; zero between gradients (add_sign_gradient leaves them so).
    ws.sign_buckets_.setZero(2 * groups * sign_group_size);
    if (some_block_batches_) {
        ws.theta_.setZero(dim_);
        ws.lanes_.resize(static_cast<Eigen::Index>(max_block_) * kBlockBatch);
    }
    if (pattern_terms_) {
        ws.family_logs_.resize(family_first_.back());
        ws.component_logs_.resize(static_cast<Eigen::Index>(families_.components.size()));
    }
    return ws;
}

void Target::check_summed_out() const {
    if (!sum_out_ && !families_.components.empty())
        throw Error(ErrorKind::usage,
                    "this target was built without summing out the unobserved values; only its observed terms "
                    "can be evaluated");
}

bool Target::block_separable(int b) const {
    check_block(b);
    return !remote_ && separable_[sz(b)] != 0;
}

void Target::check_block(int b) const {
    if (b < 0 || b >= blocks())
        throw Error(ErrorKind::usage, fmt::format("block {} does not exist; the model has {} blocks", b, blocks()));
}

void Target::check_theta(In theta) const {
    if (theta.size() != dim_)
        throw Error(ErrorKind::usage,
                    fmt::format("the parameter vector has {} entries but the model has {}", theta.size(), dim_));
}

// log N(θ_b; μ_b, Σ_b) + const = -½ (θ_b-μ_b)' Σ_b⁻¹ (θ_b-μ_b), through L⁻¹ (θ_b-μ_b);
// its gradient -Σ_b⁻¹ (θ_b-μ_b) by a second triangular solve with L'.
double Target::prior_term(int b, In theta, double* grad, Workspace& ws) const {
    const BlockPrior& p = blocks_[sz(b)];
    auto c = ws.centred_.head(p.size);
    c.noalias() = theta.segment(p.offset, p.size) - p.mean;
    const double heavy = (p.heavy.empty() ? 0.0 : heavy_term(p, theta, grad)) +
                         (p.scaled.empty() ? 0.0 : scaled_term(p, theta, grad));
    if (p.diagonal) {
        if (grad) Eigen::Map<Eigen::VectorXd>(grad, p.size) -= p.precision.cwiseProduct(c);
        return -0.5 * c.cwiseAbs2().dot(p.precision) + heavy;
    }
    p.chol.triangularView<Eigen::Lower>().solveInPlace(c);
    const double value = -0.5 * c.squaredNorm();
    if (grad) {
        p.chol.transpose().triangularView<Eigen::Upper>().solveInPlace(c);
        Eigen::Map<Eigen::VectorXd>(grad, p.size) -= c;
    }
    return value + heavy;
}

// log t_ν(w; μ, s) + const = −(ν+1)/2 log(1 + r²/(ν s²)), r = w − μ, with gradient
// −(ν+1) r / (ν s² + r²); in the full case plus ½ r²/s² and r/s², which take back the
// N(μ, s²) the Cholesky term counted for this independent entry.
double Target::heavy_term(const BlockPrior& p, In theta, double* grad) {
    double value = 0;
    for (std::size_t j = 0; j < p.heavy.size(); ++j) {
        const int k = p.heavy[j];
        const double r = theta[p.offset + k] - p.mean[k], nu = p.nu[j], s2 = p.scale2[j];
        value += -0.5 * (nu + 1) * std::log1p(r * r / (nu * s2)) + 0.5 * r * r * p.gauss_precision[j];
        if (grad) grad[k] += -(nu + 1) * r / (nu * s2 + r * r) + r * p.gauss_precision[j];
    }
    return value;
}

// log N(w; μ, τ²) + ½ log 2π = −η − ½ r² e^{−2η}, r = w − μ, η = log τ, with gradient
// −r e^{−2η} in w; plus ½ r² and r in the full case, which take back the N(μ, 1) the Cholesky
// term counted for this independent entry.
double Target::scaled_term(const BlockPrior& p, In theta, double* grad) {
    double value = 0;
    for (std::size_t j = 0; j < p.scaled.size(); ++j) {
        const int k = p.scaled[j];
        const double r = theta[p.offset + k] - p.mean[k], eta = theta[p.scale_theta[j]];
        const double precision = std::exp(-2 * eta);
        value += -eta - 0.5 * r * r * (precision - p.unit_precision);
        if (grad) grad[k] += -r * (precision - p.unit_precision);
    }
    return value;
}

// Per scale: log p_η(η) without constants (add_scales); with grad, its derivative in η and
// that of every scaled weight's −η − ½ r² e^{−2η} (whose value prior_term counts).
double Target::scale_term(In theta, double* grad) const {
    double value = 0;
    for (const ir::Scale& sc : scales_) {
        const double eta = theta[sc.theta_index];
        const ScaleLogPrior p = scale_log_prior(sc, eta);
        value += p.value;
        if (!grad) continue;
        double d = p.slope;
        const double precision = std::exp(-2 * eta);
        for (std::size_t j = 0; j < sc.weights.size(); ++j) {
            const double r = theta[sc.weights[j]] - sc.means[j];
            d += r * r * precision - 1;
        }
        grad[sc.theta_index] += d;
    }
    return value;
}

void Target::build_eta_tables(const Merged& m, In theta_b, Workspace& ws) {
    if (m.sign_groups == 0) return;
    build_sign_sums(theta_b, m.sign_words.empty() ? sign_group_bits : word_group_bits, ws.sign_sums_.data());
}

// exp(T_g[p]) for the tables T of build_sign_sums, from e_j = exp(θ_j): entry p of group g is
// the product over the group's weights of e_j where bit j of p is set and 1 / e_j where it is
// not, within a few ulps of the exp of the exact sum. Groups of 4 (sign words, AVX-512) take
// each entry's product directly (16 entries, two registers, one multiply per weight); groups
// of 8 by the recursion of build_sign_sums with products (255 multiplies where the direct
// form would take 2,048).
void Target::build_exp_tables(const Merged& m, In theta_b, Workspace& ws) {
    const int k = static_cast<int>(theta_b.size());
    const int bits = m.sign_words.empty() ? sign_group_bits : word_group_bits;
    const int groups = (k + bits - 1) / bits;
    auto e = ws.exp_theta_.head(k);
    e = theta_b.array().exp();
    double* out = ws.sign_exps_.data();
    for (int g = 0; g < groups; ++g) {
        const int width = std::min(bits, k - g * bits);
        const double* eg = e.data() + g * bits;
        double* t = out + g * (1 << bits);
#if defined(__AVX512F__)
        if (bits == word_group_bits) {
            // Entries 0-7 and 8-15: bit j of the entry's index (j < 3) chooses by the same
            // mask in both halves; bit 3 is clear in the first and set in the second.
            static constexpr __mmask8 bit_set[3] = {0xaa, 0xcc, 0xf0};
            __m512d lo = _mm512_set1_pd(1.0), hi = lo;
            for (int j = 0; j < width; ++j) {
                const __m512d up = _mm512_set1_pd(eg[j]), down = _mm512_set1_pd(1 / eg[j]);
                if (j < 3) {
                    const __m512d f = _mm512_mask_blend_pd(bit_set[j], down, up);
                    lo = _mm512_mul_pd(lo, f);
                    hi = _mm512_mul_pd(hi, f);
                } else {
                    lo = _mm512_mul_pd(lo, down);
                    hi = _mm512_mul_pd(hi, up);
                }
            }
            _mm512_storeu_pd(t, lo);
            _mm512_storeu_pd(t + 8, hi);
            continue;
        }
#endif
        double all_plus = 1;
        for (int j = 0; j < width; ++j) all_plus *= eg[j];
        t[0] = 1 / all_plus;
        for (int j = 0; j < width; ++j) {
            const int half = 1 << j;
            const double step = eg[j] * eg[j];
            for (int q = 0; q < half; ++q) t[half + q] = t[q] * step;
        }
    }
}

// out[t] = from[t] combined (added, or with Multiply multiplied) with one entry per sign group
// of the merged rows start … start + len − 1, from `tables` (laid out as build_sign_sums lays
// them out): with sign words four columns to a table read by permutes, else a byte of signs to
// a table. k is the block's size.
template <bool Multiply>
void Target::combine_sign_tables(const Merged& m, int k, const double* from, const double* tables, int start, int len,
                                 double* out) {
#if defined(__AVX512F__)
    if (!m.sign_words.empty()) {
        // Up to 8 groups a pass (16 registers of tables); the first pass starts from `from`.
        const int word_groups = (k + word_group_bits - 1) / word_group_bits;
        for (int g = 0; g < word_groups; g += 8) {
            const int take = std::min(8, word_groups - g);
            with_take<8>(take, [&]<int Take>() {
                add_word_groups<Take, Multiply>(len, from, m.sign_words.data() + start, g, tables + g * word_group_size, out);
            });
            from = out;
        }
        return;
    }
#else
    (void)k;
#endif
    // Groups in the outer loop, up to four per pass over the chunk's rows: the rows' results
    // are independent of each other (row by row they were one chain of dependent operations),
    // and out is loaded and stored once per pass; the first pass starts from `from`. Each row
    // still takes group 0, 1, ... in order.
    const int groups = m.sign_groups;
    for (int g = 0; g < groups; g += 4) {
        const unsigned char* s[4] = {};
        const double* tb[4] = {};
        const int take = std::min(4, groups - g);
        for (int i = 0; i < take; ++i) {
            s[i] = m.group_signs(g + i, start);
            tb[i] = tables + (g + i) * sign_group_size;
        }
        with_take<4>(take, [&]<int Take>() { add_sign_groups<Take, Multiply>(len, from, s, tb, out); });
        from = out;
    }
}

void Target::complete_exp_eta(int b, int start, int len, Workspace& ws) const {
    const Merged& m = merged_[sz(b)];
    combine_sign_tables<true>(m, blocks_[sz(b)].size, m.exp_a.data() + start, ws.sign_exps_.data(), start, len,
                              ws.eta_.data());
}

void Target::complete_eta(int b, In theta, int start, int len, Workspace& ws) const {
    const Merged& m = merged_[sz(b)];
    const BlockPrior& p = blocks_[sz(b)];
    auto eta = ws.eta_.head(len);
    if (m.sign_groups > 0) {
        combine_sign_tables<false>(m, p.size, m.a.data() + start, ws.sign_sums_.data(), start, len, eta.data());
    } else {
        eta.noalias() = dense_rows(b).middleRows(start, len) * theta.segment(p.offset, p.size);
        eta += row_offsets(b).segment(start, len);
    }
}

// One chunk's share of complete_term's value, from η in ws.eta_ (rows [start, start + len)):
// e = exp(-|η|) into ws.resid_ (the gradient reads it) and Σ w_pos min(η, 0) - w_neg max(η, 0)
// - Σ w log(1 + e), carrying the open product of a run's rows (open_product, open_rows) from
// chunk to chunk. complete_term and log_densities both call it, so both give the same bits.
double Target::chunk_value(const Merged& m, const Eigen::VectorXd& w_total, int start, int len, Workspace& ws,
                           double& open_product, int& open_rows) {
    const auto eta = ws.eta_.head(len);
    const auto wp = m.w_pos.segment(start, len).array();
    const auto wn = m.w_neg.segment(start, len).array();
    auto e = ws.resid_.head(len).array();
    {
        // e = exp(-|η|) by a plain loop the compiler vectorises (Eigen's exp divides); the
        // cheaper form where every e is a normal double, as it is unless |η| > 708. (Where
        // η holds a NaN, the maximum may miss a larger |η|; the log density is NaN anyway.)
        const double* __restrict et = eta.data();
        double* __restrict ev = ws.resid_.data();
        if (eta.cwiseAbs().maxCoeff() <= 708.0)
            for (int t = 0; t < len; ++t) ev[t] = inference::exp_nonpositive_normal(-std::abs(et[t]));
        else
            for (int t = 0; t < len; ++t) ev[t] = inference::exp_nonpositive(-std::abs(et[t]));
    }
    // Σ w log(1 + e) = Σ over runs of equal weight w of w log Π (1 + e): one log per run,
    // of a product carried from chunk to chunk while it holds at most kProductRows factors
    // in (1, 2], which cannot overflow (2^1000). Eigen multiplies each chunk's factors a
    // packet at a time; rounding the product costs a few ulps of its log per factor, as
    // summing the logs does. (One log where there were four a chunk: at 20 weights and
    // 1,000 rows they were 5% of a log density's time.)
    // With short runs (fewer than kLogGroup rows per distinct weight on average, as with
    // few parents and many rows per pattern) the products would hold a factor or two and
    // leave a scalar log per row: there the logs are taken a packet at a time and weighted.
    double logs = 0;
    if (!m.product_logs) logs = (w_total.segment(start, len).array() * (1.0 + e).log()).sum();
    for (int from = start; m.product_logs && from < start + len;) {
        const int run_to = *std::upper_bound(m.run_end.begin(), m.run_end.end(), from);
        const int to = std::min(start + len, run_to);
        // An open product is of the rows just before `from`, in the same run.
        if (open_rows + (to - from) > kProductRows) {
            logs += w_total[from] * std::log(open_product);
            open_product = 1;
            open_rows = 0;
        }
        open_product *= (1.0 + e.segment(from - start, to - from)).prod();
        open_rows += to - from;
        if (to == run_to) {
            logs += w_total[from] * std::log(open_product);
            open_product = 1;
            open_rows = 0;
        }
        from = to;
    }
    return (wp * eta.array().min(0.0) - wn * eta.array().max(0.0)).sum() - logs;
}

// Σ_t w_t log g(y_t (a_t + f_t' θ_i)) and its gradient F' (w ∘ y ∘ g(-y ∘ (a + F θ_i)))
// (Variational MCMC, Sec. 2, the Bernoulli family with a logistic mapping), over the merged
// rows: with η = a + F θ_i and e = exp(-|η|),
//     value = Σ w_pos min(η, 0) - w_neg max(η, 0) - (w_pos + w_neg) log(1 + e),
//     ∂/∂η  = w_pos g(-η) - w_neg g(η),  g(-|η|) = e / (1 + e), g(|η|) = 1 / (1 + e).
// e comes from exp_nonpositive (inference/exp_nonpositive.hpp: within 1 ulp, in a loop the
// compiler vectorises); the logs are one per run of equal weights (of a product) or, with
// short runs, one per row (Eigen's packet log). The value is the same code with and without
// the gradient, so both give the same bits. log(1 + e) for e in (0, 1] is accurate to an ulp
// of 1 in absolute terms, all a log density needs.
double Target::complete_term(int b, In theta, double* grad, Workspace& ws) const {
    const Merged& m = merged_[sz(b)];
    const BlockPrior& p = blocks_[sz(b)];
    const auto th = theta.segment(p.offset, p.size);
    const int n = m.rows();
    const int groups = m.sign_groups;
    if (m.exp_a.size() > 0) {
        // |η_t| <= |a_t| + Σ_j |θ_j|; the comparison is false for a NaN, which then takes the
        // row-by-row evaluation below.
        const double bound = m.max_abs_a + th.cwiseAbs().sum();
        if (bound <= kMaxProductBound) return complete_term_by_products(b, theta, bound, grad, ws);
    }
    build_eta_tables(m, th, ws);
    double value = 0;
    double open_product = 1;  // Π (1 + e) over a run's rows in earlier chunks, not yet logged
    int open_rows = 0;
    for (int start = 0; start < n; start += chunk_rows) {
        const int len = std::min(chunk_rows, n - start);
        complete_eta(b, theta, start, len, ws);
        const auto eta = ws.eta_.head(len);
        value += chunk_value(m, row_totals(b), start, len, ws, open_product, open_rows);
        if (grad) {
            // A plain loop rather than Eigen's select, which this Eigen evaluates a scalar at a
            // time, with a branch and a scalar division.
            {
                const double* __restrict wpos = m.w_pos.data() + start;
                const double* __restrict wneg = m.w_neg.data() + start;
                const double* __restrict et = eta.data();
                double* __restrict r = ws.resid_.data();
                for (int t = 0; t < len; ++t) {
                    // Both arms computed and one kept by multiplying with exactly 1 and 0 (the
                    // compiler leaves a ?: here a branch, mispredicted half the time). At η = -0
                    // the arms are equal, so the sign bit choosing is as good as η >= 0.
                    const double ev = r[t];
                    const double up = 0.5 * (1.0 + std::copysign(1.0, et[t]));
                    const double at_or_above = wpos[t] * ev - wneg[t], below = wpos[t] - wneg[t] * ev;
                    r[t] = (up * at_or_above + (1.0 - up) * below) / (1.0 + ev);
                }
            }
            if (groups > 0) {
                scatter_residuals(m, start, len, ws);
            } else {
                Eigen::Map<Eigen::VectorXd>(grad, p.size).noalias() +=
                    dense_rows(b).middleRows(start, len).transpose() * ws.resid_.head(len);
            }
        }
    }
    if (grad && groups > 0) add_sign_gradient(p.size, groups, ws.sign_buckets_.data(), grad);
    return value;
}

// Residuals r_t (ws.resid_, the chunk's rows) summed into each sign group's buckets by the
// rows' sign patterns; add_sign_gradient turns the buckets into F' r.
void Target::scatter_residuals(const Merged& m, int start, int len, Workspace& ws) {
    const int groups = m.sign_groups;
    for (int g = 0; g < groups; g += 4) {
        const unsigned char* s[4] = {};
        double* bucket[4] = {};
        const int take = std::min(4, groups - g);
        for (int i = 0; i < take; ++i) {
            s[i] = m.group_signs(g + i, start);
            bucket[i] = ws.sign_buckets_.data() + (g + i) * sign_group_size;
        }
        const int set = groups * sign_group_size;
        const double* r = ws.resid_.data();
        with_take<4>(take, [&]<int Take>() { scatter_sign_groups<Take>(len, r, s, bucket, set); });
    }
}

// complete_term for a ±1 family where every |η_t| <= bound <= kMaxProductBound. With E_t = e^η_t,
//     value = Σ_t w_pos η_t - w_total log(1 + E_t)
//           = (Σ w_pos a) + θ' (Σ w_pos f_t) - Σ over runs of equal w_total of w_total log Π (1 + E_t),
//     ∂/∂η_t = w_pos - w_total E_t / (1 + E_t) = (w_pos - w_neg E_t) / (1 + E_t),
// where E_t = exp(a_t) Π_g exp(T_g[signs of row t in group g]) is a product of table entries
// (build_exp_tables): no exp per row, and η itself is not needed. The products of 1 + E_t
// are kept in 16 lanes of at most `per_lane` factors each, every factor below
// 2^(1 + bound log2 e), so that no lane exceeds 2^1000; a lane's log is taken when it is
// full and at the end of each run. E_t is within a few ulps (relative) of e^η_t, so each
// log(1 + E_t) is within a few ulps of 1 (absolute) of the exact value, as in the row-by-row
// evaluation. Value and gradient share the code of the value, so they give the same bits.
double Target::complete_term_by_products(int b, In theta, double bound, double* grad, Workspace& ws) const {
    const Merged& m = merged_[sz(b)];
    const BlockPrior& p = blocks_[sz(b)];
    const auto th = theta.segment(p.offset, p.size);
    const int n = m.rows();
    build_exp_tables(m, th, ws);
    // 16 lanes: two registers of products, independent of each other, per 16 rows.
    using Lanes = Eigen::Array<double, 16, 1>;
    const int per_lane = std::max(1, static_cast<int>(1000.0 / (1.0 + bound * std::numbers::log2e)));
    Lanes lanes = Lanes::Ones();
    int steps = 0;  // factors in the fullest lane
    double logs = 0;
    // Products waiting for their log with their run's weight, eight to a packet log (at most
    // 7 wait between pushes, and a push brings at most 16).
    double pending[24], pending_weight[24];
    int waiting = 0;
    const auto push = [&](const double* values, int count, double weight) {
        for (int l = 0; l < count; ++l) {
            pending[waiting] = values[l];
            pending_weight[waiting++] = weight;
        }
        int done = 0;
        for (; waiting - done >= 8; done += 8) {
            using Packet = Eigen::Array<double, 8, 1>;
            logs += (Eigen::Map<const Packet>(pending_weight + done) * Eigen::Map<const Packet>(pending + done).log()).sum();
        }
        if (done == 0) return;
        waiting -= done;
        std::copy(pending + done, pending + done + waiting, pending);
        std::copy(pending_weight + done, pending_weight + done + waiting, pending_weight);
    };
    const auto flush = [&](double weight) {
        // The lanes halved, each a product of two, while the products stay within the bound.
        if (2 * steps > per_lane) {
            push(lanes.data(), 16, weight);
        } else {
            const Eigen::Array<double, 8, 1> h8 = lanes.head<8>() * lanes.tail<8>();
            if (4 * steps > per_lane) {
                push(h8.data(), 8, weight);
            } else {
                const Eigen::Array<double, 4, 1> h4 = h8.head<4>() * h8.tail<4>();
                if (8 * steps > per_lane) {
                    push(h4.data(), 4, weight);
                } else {
                    const Eigen::Array<double, 2, 1> h2 = h4.head<2>() * h4.tail<2>();
                    if (16 * steps > per_lane) {
                        push(h2.data(), 2, weight);
                    } else {
                        const double h1 = h2[0] * h2[1];
                        push(&h1, 1, weight);
                    }
                }
            }
        }
        lanes.setOnes();
        steps = 0;
    };
    for (int start = 0; start < n; start += chunk_rows) {
        const int len = std::min(chunk_rows, n - start);
        complete_exp_eta(b, start, len, ws);
        const double* e = ws.eta_.data();  // E_t of the chunk's rows
        if (!m.product_logs) {
            logs += (row_totals(b).segment(start, len).array() * (1.0 + ws.eta_.head(len).array()).log()).sum();
        }
        for (int from = start; m.product_logs && from < start + len;) {
            const int run_to = *std::upper_bound(m.run_end.begin(), m.run_end.end(), from);
            const int to = std::min(start + len, run_to);
            const double weight = row_totals(b)[from];
            int t = from - start;
            const int end = to - start;
            while (end - t >= 16) {
                // The products in a local, kept in registers through the loop.
                const int take = std::min((end - t) / 16, per_lane - steps);
                Lanes acc = lanes;
                for (int i = 0; i < take; ++i, t += 16) acc *= 1.0 + Eigen::Map<const Lanes>(e + t);
                lanes = acc;
                steps += take;
                if (steps == per_lane) flush(weight);
            }
            if (t < end) {
                lanes.head(end - t) *= 1.0 + Eigen::Map<const Eigen::ArrayXd>(e + t, end - t);
                if (++steps == per_lane) flush(weight);
            }
            if (to == run_to && steps > 0) flush(weight);
            from = to;
        }
        if (grad) {
            const double* __restrict wpos = m.w_pos.data() + start;
            const double* __restrict wneg = m.w_neg.data() + start;
            double* __restrict r = ws.resid_.data();
            for (int t = 0; t < len; ++t) r[t] = (wpos[t] - wneg[t] * e[t]) / (1.0 + e[t]);
            scatter_residuals(m, start, len, ws);
        }
    }
    for (int l = 0; l < waiting; ++l) logs += pending_weight[l] * std::log(pending[l]);
    if (grad) add_sign_gradient(p.size, m.sign_groups, ws.sign_buckets_.data(), grad);
    return m.lin_a + m.lin_f.dot(th) - logs;
}

bool Target::complete_block(int b) const {
    check_block(b);
    return !remote_ && families_.components_of_block[sz(b)].empty() && blocks_[sz(b)].scaled.empty();
}

void Target::row_features(const Merged& m, const Eigen::MatrixXd& dense, int k, int row, double scale, double* out) {
    if (m.sign_groups == 0) {
        Eigen::Map<Eigen::VectorXd>(out, k) = scale * dense.row(row).transpose();
        return;
    }
    for (int g = 0; g < m.sign_groups; ++g) {
        const unsigned bits = m.group_signs(g, row)[0];
        double* o = out + g * sign_group_bits;
        for (int j = 0; j < sign_group_width(k, g); ++j) o[j] = ((bits >> j) & 1u ? 1.0 : -1.0) * scale;
    }
}

// Σ_b⁻¹ (diagonal, or L⁻ᵀ L⁻¹ from the prior's Cholesky factor), plus per chunk of merged
// rows the rank update X X' with columns x_t = √(w_t g(η_t) g(−η_t)) f_t, g(η) g(−η) =
// e / (1 + e)² with e = exp(−|η|).
Eigen::MatrixXd Target::complete_block_negative_hessian(int b, In theta, Workspace& ws, bool exact_prior_curvature) const {
    check_theta(theta);
    check_local("complete_block_negative_hessian");
    if (!complete_block(b))
        throw Error(ErrorKind::usage, fmt::format("block {} is coupled to unobserved values: it has no exact Hessian here", b));
    const Merged& m = merged_[sz(b)];
    const BlockPrior& p = blocks_[sz(b)];
    const int k = p.size, n = m.rows();
    Eigen::MatrixXd h(k, k);
    if (p.diagonal) {
        h.setZero();
        h.diagonal() = p.precision;
    } else {
        Eigen::MatrixXd inv_l = Eigen::MatrixXd::Identity(k, k);
        p.chol.triangularView<Eigen::Lower>().solveInPlace(inv_l);
        h.noalias() = inv_l.transpose() * inv_l;
    }
    // Student-t entries: the scale mixture's curvature E[λ | w]/s², or the exact one (target.hpp).
    for (std::size_t j = 0; j < p.heavy.size(); ++j) {
        const int i = p.heavy[j];
        const double r = theta[p.offset + i] - p.mean[i];
        const double nu = p.nu[j], s2 = p.scale2[j], denom = nu * s2 + r * r;
        h(i, i) += (exact_prior_curvature ? (nu + 1) * (nu * s2 - r * r) / (denom * denom) : (nu + 1) / denom) -
                   p.gauss_precision[j];
    }
    build_eta_tables(m, theta.segment(p.offset, k), ws);
    Eigen::MatrixXd x(k, std::min(n, chunk_rows));
    for (int start = 0; start < n; start += chunk_rows) {
        const int len = std::min(chunk_rows, n - start);
        complete_eta(b, theta, start, len, ws);
        for (int t = 0; t < len; ++t) {
            const double e = std::exp(-std::abs(ws.eta_[t]));
            const double root = std::sqrt(row_totals(b)[start + t] * e) / (1 + e);
            row_features(m, dense_rows(b), k, start + t, root, x.col(t).data());
        }
        h.selfadjointView<Eigen::Lower>().rankUpdate(x.leftCols(len));
    }
    h.triangularView<Eigen::StrictlyUpper>() = h.transpose();
    return h;
}

// Per merged row: e = exp(−|η|), g(η) g(−η) = e / (1 + e)², 1 − 2 g(η) = −sign(η) (1 − e) / (1 + e)
// and f_t' Σ f_t = |L' f_t|².
namespace {
// d³/dη³ log g(η) = −g(η) g(−η) (1 − 2 g(η)), from e = exp(−|η|) (odd in η).
double third_derivative(double eta) {
    const double e = std::exp(-std::abs(eta));
    return e / ((1 + e) * (1 + e)) * std::copysign(1.0, eta) * (1 - e) / (1 + e);
}
}  // namespace

template <class Visit>
void Target::whitened_third_rows(int b, In theta, const Eigen::MatrixXd& lower, const char* what, Workspace& ws,
                                 Visit visit) const {
    check_theta(theta);
    check_local(what);
    if (!complete_block(b))
        throw Error(ErrorKind::usage, fmt::format("block {} is coupled to unobserved values: it has no {} here", b, what));
    const Merged& m = merged_[sz(b)];
    const BlockPrior& p = blocks_[sz(b)];
    const int k = p.size, n = m.rows();
    if (lower.rows() != k || lower.cols() != k)
        throw Error(ErrorKind::usage, fmt::format("the {} of block {} needs a {}x{} factor, got {}x{}", what, b, k, k,
                                                  lower.rows(), lower.cols()));
    const auto l = lower.triangularView<Eigen::Lower>();
    build_eta_tables(m, theta.segment(p.offset, k), ws);
    // Rows a part at a time, so that large data need no copy of their features: a part's x and
    // c, each chunk's rows f_t' at once, then x_t' = f_t' L for all of them by one triangular
    // product (a product per row took most of the mean correction's time: 0.3-0.5 ms at 20
    // weights).
    constexpr int part_rows = 8192;
    Eigen::MatrixXd x(std::min(n, part_rows), k);
    Eigen::VectorXd c(std::min(n, part_rows));
    Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> f(std::min(n, chunk_rows), k);
    for (int part = 0; part < n; part += part_rows) {
        const int rows = std::min(part_rows, n - part);
        for (int start = part; start < part + rows; start += chunk_rows) {
            const int len = std::min(chunk_rows, part + rows - start);
            complete_eta(b, theta, start, len, ws);
            for (int t = 0; t < len; ++t) {
                row_features(m, dense_rows(b), k, start + t, 1.0, f.row(t).data());
                c[start - part + t] = row_totals(b)[start + t] * third_derivative(ws.eta_[t]);
            }
            x.middleRows(start - part, len).noalias() = f.topRows(len) * l;
        }
        visit(x.topRows(rows), c.head(rows));
    }
}

Eigen::VectorXd Target::complete_block_mean_shift(int b, In theta, const Eigen::MatrixXd& lower, Workspace& ws) const {
    // ½ Σ T[Σ] = ½ L Σ_t c_t |x_t|² x_t with x_t = L' f_t (T[Σ] = Σ_t c_t f_t |x_t|², Σ = L L').
    Eigen::VectorXd whitened = Eigen::VectorXd::Zero(lower.rows());
    whitened_third_rows(b, theta, lower, "mean correction", ws, [&](const auto& x, const auto& c) {
        const Eigen::VectorXd weights = c.cwiseProduct(x.rowwise().squaredNorm());
        whitened.noalias() += x.transpose() * weights;
    });
    whitened *= 0.5;
    return lower.triangularView<Eigen::Lower>() * whitened;
}

std::vector<Eigen::MatrixXd> Target::complete_block_third_derivatives(int b, In theta, const Eigen::MatrixXd& lower,
                                                                       Workspace& ws) const {
    const auto k = static_cast<int>(lower.rows());
    // Each slice's leading (a+1) × (a+1) block by one product per part of the rows (rows ·
    // d³/3 multiply-adds in all, not rows · d³); the rest by the symmetry of the three indices:
    // entry (i, j) of slice a is an entry of slice max(a, i, j)'s leading block.
    std::vector<Eigen::MatrixXd> out(sz(k), Eigen::MatrixXd::Zero(k, k));
    Eigen::MatrixXd scaled;
    whitened_third_rows(b, theta, lower, "third derivatives", ws, [&](const auto& x, const auto& c) {
        scaled.resize(x.rows(), k);
        for (int a = 0; a < k; ++a) {
            const int lead = a + 1;
            scaled.leftCols(lead) = x.leftCols(lead).array().colwise() * (c.array() * x.col(a).array());
            out[sz(a)].topLeftCorner(lead, lead).noalias() += x.leftCols(lead).transpose() * scaled.leftCols(lead);
        }
    });
    for (int a = 0; a < k; ++a)
        for (int j = 0; j < k; ++j)
            for (int i = 0; i < k; ++i) {
                const int top = std::max({a, i, j});
                if (top == a) continue;
                // the other two indices of (a, i, j) once top is taken out
                const int p = top == i ? a : i, q = top == j ? (top == i ? j : a) : j;
                out[sz(a)](i, j) = out[sz(top)](p, q);
            }
    return out;
}

// weight · log Σ_x Π_j g(x_j η_j(x)) over the 2^m configurations x of the component's
// unobserved nodes (Variational MCMC, Sec. 2, case (ii), the sum over x^h). The gradient
// is the posterior expectation over x of each factor's gradient x_j g(-x_j η_j) ∂η_j/∂θ.
// The normaliser and the expectations are accumulated in one pass, rescaling whenever the
// running maximum of the log terms grows, so nothing overflows and nothing is stored per x.
double Target::component_term(int c, double weight, In theta, double* grad, int only_block, Workspace& ws) const {
    const Component& comp = families_.components[sz(c)];
    const int m = comp.size();
    const int nf = static_cast<int>(comp.factors.size());

    int li = 0;
    for (int j = 0; j < nf; ++j) {
        const Factor& f = comp.factors[sz(j)];
        double e0 = f.base;
        if (f.block >= 0) e0 += theta.segment(blocks_[sz(f.block)].offset, f.f.size()).dot(f.f);
        ws.eta0_[j] = e0;
        for (const auto& l : f.links)
            ws.coef_[li++] = l.feature >= 0 ? theta[blocks_[sz(f.block)].offset + l.feature] * l.coef : l.coef;
    }
    const int nl = li;

    double top = -std::numeric_limits<double>::infinity();
    double sum = 0;
    if (grad) {
        ws.resid_acc_.head(nf).setZero();
        ws.link_acc_.head(nl).setZero();
    }
    const unsigned long configs = 1UL << m;
    for (unsigned long cfg = 0; cfg < configs; ++cfg) {
        for (int k = 0; k < m; ++k) ws.x_[k] = (cfg >> k) & 1UL ? 1.0 : -1.0;
        // Σ_j log g(z_j) = Σ_j min(z_j, 0) - log Π_j (1 + e^{-|z_j|}): one log per
        // configuration instead of one per factor. Each product term lies in (1, 2], so the
        // product is folded into the sum before it could overflow; rounding 1 + e costs at
        // most one ulp of 1 per factor in absolute terms.
        double linear = 0, product = 1;
        li = 0;
        for (int j = 0; j < nf; ++j) {
            const Factor& f = comp.factors[sz(j)];
            double eta = ws.eta0_[j];
            for (const auto& l : f.links) eta += ws.coef_[li++] * l.value(ws.x_);
            const double xj = f.value != 0 ? f.value : ws.x_[f.self];
            const double z = xj * eta;
            const double e = std::exp(-std::abs(z));
            linear += std::min(z, 0.0);
            product *= 1.0 + e;
            if (product > 0x1p900) {
                linear -= std::log(product);
                product = 1;
            }
            // x_j g(-z_j), the derivative of log g(z_j) with respect to η_j.
            if (grad) ws.factor_resid_[j] = xj * (z >= 0 ? e : 1.0) / (1.0 + e);
        }
        const double log_term = linear - std::log(product);
        if (log_term > top) {
            const double scale = std::exp(top - log_term);
            sum *= scale;
            if (grad) {
                ws.resid_acc_.head(nf) *= scale;
                ws.link_acc_.head(nl) *= scale;
            }
            top = log_term;
        }
        const double p = std::exp(log_term - top);
        sum += p;
        if (grad) {
            li = 0;
            for (int j = 0; j < nf; ++j) {
                const double r = p * ws.factor_resid_[j];
                ws.resid_acc_[j] += r;
                for (const auto& l : comp.factors[sz(j)].links) ws.link_acc_[li++] += r * l.value(ws.x_);
            }
        }
    }
    const double value = weight * (top + std::log(sum));

    if (grad) {
        const double scale = weight / sum;
        li = 0;
        for (int j = 0; j < nf; ++j) {
            const Factor& f = comp.factors[sz(j)];
            const bool wanted = f.block >= 0 && (only_block < 0 || f.block == only_block);
            if (wanted) {
                double* g = only_block < 0 ? grad + blocks_[sz(f.block)].offset : grad;
                Eigen::Map<Eigen::VectorXd>(g, f.f.size()) += (scale * ws.resid_acc_[j]) * f.f;
                for (std::size_t k = 0; k < f.links.size(); ++k)
                    if (f.links[k].feature >= 0)
                        g[f.links[k].feature] += scale * f.links[k].coef * ws.link_acc_[li + static_cast<int>(k)];
            }
            li += static_cast<int>(f.links.size());
        }
    }
    return value;
}

// The summed-out components (those of block only_block, or all): the tabulated ones from
// their factor tables (runtime/target/factor_tables.hpp), every table they read filled once at
// θ and, for the gradient, one pass over the tables at the end; those with an elimination
// order by eliminator_; the others (direct_) by component_term. Components are added in their fixed order, with or without the gradient.
double Target::summed_out_term(In theta, double* grad, int only_block, Workspace& ws) const {
    if (families_.components.empty()) return 0;
    const std::vector<int>* which = only_block < 0 ? nullptr : &tables_.tables_of_block(only_block);
    tables_.fill(which, theta, grad != nullptr, ws.tables_);
    auto term = [&](int c) {
        const double weight = families_.components[sz(c)].weight;
        if (eliminator_.has(c)) return eliminator_.component(c, weight, theta, grad, only_block, ws.elim_);
        return direct_[sz(c)] ? component_term(c, weight, theta, grad, only_block, ws)
                              : tables_.component(c, grad != nullptr, only_block, ws.tables_);
    };
    double v = 0;
    if (only_block < 0) {
        // The tabulated components of 2–32 configurations many at a time, then the rest.
        v = tables_.batched_sum(grad != nullptr, ws.tables_);
        for (int c = 0; c < static_cast<int>(families_.components.size()); ++c)
            if (eliminator_.has(c) || direct_[sz(c)] || !tables_.batched(c)) v += term(c);
    } else
        for (int c : families_.components_of_block[sz(only_block)]) v += term(c);
    if (grad) tables_.gradient(which, only_block, grad, ws.tables_);
    return v;
}

double Target::log_prior(In theta, Workspace& ws) const {
    check_theta(theta);
    double v = 0;
    for (int b = 0; b < blocks(); ++b) v += prior_term(b, theta, nullptr, ws);
    return v + scale_term(theta, nullptr);
}

double Target::log_likelihood(In theta, Workspace& ws) const {
    check_theta(theta);
    check_summed_out();
    check_local("log_likelihood");
    double v = 0;
    for (int b = 0; b < blocks(); ++b) v += complete_term(b, theta, nullptr, ws);
    v += summed_out_term(theta, nullptr, -1, ws);
    return v;
}

void Target::log_likelihoods(const Eigen::Ref<const Eigen::MatrixXd>& thetas, Out out, Workspace& ws) const {
    check_local("log_likelihoods");
    log_densities(thetas, out, ws);
    for (Eigen::Index j = 0; j < thetas.cols(); ++j) out[j] -= log_prior(thetas.col(j), ws);
}

double Target::log_likelihood_gradient(In theta, Out grad, Workspace& ws) const {
    check_theta(theta);
    check_summed_out();
    check_local("log_likelihood_gradient");
    if (grad.size() != dim_)
        throw Error(ErrorKind::usage, fmt::format("the gradient has {} entries but the model has {}", grad.size(), dim_));
    grad.setZero();
    double v = 0;
    for (int b = 0; b < blocks(); ++b) v += complete_term(b, theta, grad.data() + blocks_[sz(b)].offset, ws);
    v += summed_out_term(theta, grad.data(), -1, ws);
    return v;
}

void Target::check_local(const char* what) const {
    if (remote_)
        throw Error(ErrorKind::usage, fmt::format("{}: the data's rows are sharded (--shards); only the log density and its "
                                                  "gradient are evaluated over the shards",
                                                  what));
}

// The prior's terms in log_density's order, then the remote rows' terms.
double Target::remote_log_density(In theta, double* grad, Workspace& ws) const {
    double v = 0;
    for (int b = 0; b < blocks(); ++b) v += prior_term(b, theta, grad ? grad + blocks_[sz(b)].offset : nullptr, ws);
    if (!scales_.empty()) v += scale_term(theta, grad);
    return v + remote_->value(theta, grad);
}

// Each complete-family row and each component once, however many patterns share it; then
// per pattern the sum of its own (PatternTerms). Allocates nothing with a workspace.
void Target::pattern_log_likelihoods(In theta, Out out, Workspace& ws) const {
    check_theta(theta);
    check_summed_out();
    check_local("pattern_log_likelihoods");
    if (!pattern_terms_)
        throw Error(ErrorKind::usage, "this target was built without the data patterns' terms (TargetOptions::pattern_terms)");
    const PatternTerms& pt = families_.pattern_terms;
    if (out.size() != pt.patterns())
        throw Error(ErrorKind::usage,
                    fmt::format("the output has {} entries but the data have {} patterns", out.size(), pt.patterns()));
    family_logs(theta, ws);
    component_logs(theta, ws);
    for (int p = 0; p < pt.patterns(); ++p) {
        double v = pt.fixed[sz(p)];
        for (int k = pt.row_start[sz(p)]; k < pt.row_start[sz(p) + 1]; ++k) v += ws.family_logs_[pt.rows[sz(k)]];
        for (int k = pt.component_start[sz(p)]; k < pt.component_start[sz(p) + 1]; ++k)
            v += ws.component_logs_[pt.components[sz(k)]];
        out[p] = v;
    }
}

// log g(y (a + f'θ_b)) of every complete-family row, block by block (the rows as stored in
// Families, not merged: each pattern reads its own).
void Target::family_logs(In theta, Workspace& ws) const {
    for (int b = 0; b < blocks(); ++b) {
        const CompleteFamily& cf = families_.complete[sz(b)];
        auto eta = ws.family_logs_.segment(family_first_[sz(b)], cf.patterns());
        eta.noalias() = cf.f * theta.segment(blocks_[sz(b)].offset, blocks_[sz(b)].size);
        for (int t = 0; t < cf.patterns(); ++t) eta[t] = inference::log_inv_logit(cf.y[t] * (cf.a[t] + eta[t]));
    }
}

// log Σ_x Π g of every component, not weighted: from the tables filled once at θ, by
// elimination, or summed directly, as summed_out_term takes each.
void Target::component_logs(In theta, Workspace& ws) const {
    if (families_.components.empty()) return;
    tables_.fill(nullptr, theta, false, ws.tables_);
    for (int c = 0; c < static_cast<int>(families_.components.size()); ++c)
        ws.component_logs_[c] = eliminator_.has(c)  ? eliminator_.component(c, 1.0, theta, nullptr, -1, ws.elim_)
                                : direct_[sz(c)] ? component_term(c, 1.0, theta, nullptr, -1, ws)
                                                 : tables_.log_sum(c, ws.tables_);
}

// Summed in the same order as log_density_gradient, so both return the same bits.
double Target::log_density(In theta, Workspace& ws) const {
    check_theta(theta);
    check_summed_out();
    if (remote_) return remote_log_density(theta, nullptr, ws);
    double v = 0;
    for (int b = 0; b < blocks(); ++b) {
        v += prior_term(b, theta, nullptr, ws);
        v += complete_term(b, theta, nullptr, ws);
    }
    v += summed_out_term(theta, nullptr, -1, ws);
    if (!scales_.empty()) v += scale_term(theta, nullptr);
    return v;
}

double Target::log_density_gradient(In theta, Out grad, Workspace& ws) const {
    check_theta(theta);
    check_summed_out();
    if (grad.size() != dim_)
        throw Error(ErrorKind::usage, fmt::format("the gradient has {} entries but the model has {}", grad.size(), dim_));
    grad.setZero();
    if (remote_) return remote_log_density(theta, grad.data(), ws);
    double v = 0;
    for (int b = 0; b < blocks(); ++b) {
        double* g = grad.data() + blocks_[sz(b)].offset;
        v += prior_term(b, theta, g, ws);
        v += complete_term(b, theta, g, ws);
    }
    v += summed_out_term(theta, grad.data(), -1, ws);
    if (!scales_.empty()) v += scale_term(theta, grad.data());
    return v;
}

void Target::log_densities(const Eigen::Ref<const Eigen::MatrixXd>& thetas, Out out, Workspace& ws) const {
    const auto draws = static_cast<int>(thetas.cols());
    if (out.size() != draws)
        throw Error(ErrorKind::usage, fmt::format("log_densities: {} outputs for {} draws", out.size(), draws));
    check_summed_out();
    for (int j = 0; j < draws; ++j) check_theta(thetas.col(j));
    out.setZero();
    if (remote_) {
        // As remote_log_density: the prior's terms, then the remote rows', a batch at once.
        remote_->values(thetas, out);
        for (int j = 0; j < draws; ++j) out[j] = log_prior(thetas.col(j), ws) + out[j];
        return;
    }
    if (every_block_batches()) {
        // Then log_density is the sum of the blocks' terms: 16 columns a pass per block.
        alignas(64) std::array<double, kBlockBatch> values;
        for (int from = 0; from < draws; from += kBlockBatch) {
            const int n = std::min(kBlockBatch, draws - from);
            Eigen::Map<Eigen::VectorXd> v(values.data(), n);
            for (int b = 0; b < blocks(); ++b) {
                block_log_densities(b, thetas.block(block_offset(b), from, block_size(b), n), v, ws);
                out.segment(from, n) += v;
            }
        }
        return;
    }
    std::vector<double> complete(sz(draws)), open_product(sz(draws));
    std::vector<int> open_rows(sz(draws));
    for (int b = 0; b < blocks(); ++b) {
        const Merged& m = merged_[sz(b)];
        if (m.sign_groups == 0) {
            // complete_term's row-by-row loop with the draws innermost: each chunk of F is
            // read once and stays in cache while every draw takes its η from it.
            std::fill(complete.begin(), complete.end(), 0.0);
            std::fill(open_product.begin(), open_product.end(), 1.0);
            std::fill(open_rows.begin(), open_rows.end(), 0);
            for (int start = 0; start < m.rows(); start += chunk_rows) {
                const int len = std::min(chunk_rows, m.rows() - start);
                for (int j = 0; j < draws; ++j) {
                    complete_eta(b, thetas.col(j), start, len, ws);
                    complete[sz(j)] += chunk_value(m, row_totals(b), start, len, ws, open_product[sz(j)], open_rows[sz(j)]);
                }
            }
        } else {
            for (int j = 0; j < draws; ++j) complete[sz(j)] = complete_term(b, thetas.col(j), nullptr, ws);
        }
        // Added in log_density's order: per block its prior, then its family.
        for (int j = 0; j < draws; ++j) {
            out[j] += prior_term(b, thetas.col(j), nullptr, ws);
            out[j] += complete[sz(j)];
        }
    }
    for (int j = 0; j < draws; ++j) out[j] += summed_out_term(thetas.col(j), nullptr, -1, ws);
    for (int j = 0; j < draws && !scales_.empty(); ++j) out[j] += scale_term(thetas.col(j), nullptr);
}

bool Target::every_block_batches() const {
    if (!families_.components.empty() || !scales_.empty()) return false;
    for (int b = 0; b < blocks(); ++b)
        if (block_batch(b) == 1) return false;
    return true;
}

int Target::block_batch(int b) const {
    if (!complete_block(b)) return 1;
    const Merged& m = merged_[sz(b)];
    const long entries = static_cast<long>(m.rows()) * (block_size(b) + 4);
    return m.sign_groups == 0 && m.product_logs && entries >= kBatchMinEntries ? kBlockBatch : 1;
}

namespace {
// block_log_densities with one run of equal weights' product per lane (Merged::product_logs):
// L values (8 or 16) are the lanes of every operation, so a row's features are read once and
// broadcast, η of all the values is f_t' V (V's rows held as lanes), and exp, the products and
// the sums are vector operations across the values; each lane's product of factors in (1, 2]
// is logged at its run's end or after kProductRows rows, as chunk_value does.
// v: the block's k entries, lane-major (v[i * L + j] = entry i of value j).
template <int L>
void lane_values(const Eigen::MatrixXd& f, const Eigen::VectorXd& a, const Eigen::VectorXd& w_pos,
                 const Eigen::VectorXd& w_neg, const Eigen::VectorXd& w_total, const std::vector<int>& run_end,
                 const double* __restrict v, double* __restrict out) {
    // η's lanes in vectors of 8 (GCC's vector extension: a plain loop over the lanes inside the
    // loop over features was vectorised only in part, with scalar tails).
    using Lanes8 = double __attribute__((vector_size(64)));
    constexpr int V = L / 8;
    static_assert(L % 8 == 0, "whole vectors of 8 lanes");
    const auto rows = static_cast<int>(a.size());
    const auto k = static_cast<int>(f.cols());
    const double* fcol = f.data();
    const auto stride = static_cast<std::ptrdiff_t>(f.rows());
    alignas(64) double lin[L] = {}, logs[L] = {}, product[L], eta[L];
    std::fill(product, product + L, 1.0);
    int in_product = 0;
    auto run = run_end.begin();
    for (int t = 0; t < rows; ++t) {
        Lanes8 acc[V];
        for (int h = 0; h < V; ++h) acc[h] = Lanes8{} + a[t];
        for (int i = 0; i < k; ++i) {
            const double x = fcol[i * stride + t];
            for (int h = 0; h < V; ++h) {
                Lanes8 w;
                std::memcpy(&w, v + i * L + 8 * h, sizeof w);
                acc[h] += x * w;
            }
        }
        std::memcpy(eta, acc, sizeof acc);
        const double wp = w_pos[t], wn = w_neg[t];
        for (int j = 0; j < L; ++j) {
            // Past |η| = 708, e^-|η| adds nothing to 1: the clamp keeps the exp's argument where
            // its cheaper form holds (std::min keeps a NaN, its first argument).
            product[j] *= 1.0 + inference::exp_nonpositive_normal(-std::min(std::abs(eta[j]), 708.0));
            lin[j] += wp * std::min(eta[j], 0.0) - wn * std::max(eta[j], 0.0);
        }
        if (t + 1 == *run) ++run;
        else if (++in_product < kProductRows) continue;
        for (int j = 0; j < L; ++j) logs[j] += w_total[t] * std::log(product[j]);
        std::fill(product, product + L, 1.0);
        in_product = 0;
    }
    for (int j = 0; j < L; ++j) out[j] = lin[j] - logs[j];
}
}  // namespace

// The block's family by lane_values, then each value's prior.
void Target::block_log_densities(int b, const Eigen::Ref<const Eigen::MatrixXd>& values, Out out, Workspace& ws) const {
    check_block(b);
    const auto n = static_cast<int>(values.cols());
    if (block_batch(b) == 1 || n < 1 || n > kBlockBatch || values.rows() != block_size(b) || out.size() != n)
        throw Error(ErrorKind::usage,
                    fmt::format("block_log_densities: block {} takes 1 to {} values of {} entries, not {} of {} into {}",
                                b, block_batch(b), block_size(b), n, values.rows(), out.size()));
    const Merged& m = merged_[sz(b)];
    const BlockPrior& p = blocks_[sz(b)];
    // Lanes: the values, the last repeated to fill them.
    const int lanes = n <= 8 ? 8 : kBlockBatch;
    alignas(64) std::array<double, kBlockBatch> lane_out;
    auto v = ws.lanes_.head(static_cast<Eigen::Index>(p.size) * lanes);
    for (int i = 0; i < p.size; ++i)
        for (int j = 0; j < lanes; ++j) v[i * lanes + j] = values(i, std::min(j, n - 1));
    if (lanes == 8)
        lane_values<8>(dense_rows(b), row_offsets(b), m.w_pos, m.w_neg, row_totals(b), m.run_end, v.data(), lane_out.data());
    else
        lane_values<kBlockBatch>(dense_rows(b), row_offsets(b), m.w_pos, m.w_neg, row_totals(b), m.run_end, v.data(),
                                 lane_out.data());
    for (int j = 0; j < n; ++j) {
        ws.theta_.segment(p.offset, p.size) = values.col(j);
        out[j] = lane_out[sz(j)] + prior_term(b, ws.theta_, nullptr, ws);
    }
}

double Target::block_log_density(int b, In theta, Workspace& ws) const {
    check_block(b);
    check_theta(theta);
    check_summed_out();
    check_local("block_log_density");
    double v = prior_term(b, theta, nullptr, ws) + complete_term(b, theta, nullptr, ws);
    v += summed_out_term(theta, nullptr, b, ws);
    return v;
}

double Target::block_log_density_gradient(int b, In theta, Out grad, Workspace& ws) const {
    check_block(b);
    check_theta(theta);
    check_summed_out();
    check_local("block_log_density_gradient");
    if (grad.size() != block_size(b))
        throw Error(ErrorKind::usage,
                    fmt::format("the block gradient has {} entries but block {} has {}", grad.size(), b, block_size(b)));
    grad.setZero();
    double v = prior_term(b, theta, grad.data(), ws) + complete_term(b, theta, grad.data(), ws);
    v += summed_out_term(theta, grad.data(), b, ws);
    return v;
}

double Target::observed_block_term(int b, In theta, double* grad, Workspace& ws) const {
    check_block(b);
    check_theta(theta);
    check_local("observed_block_term");
    return prior_term(b, theta, grad, ws) + complete_term(b, theta, grad, ws);
}

double Target::log_density(In theta) const {
    auto ws = make_workspace();
    return log_density(theta, ws);
}

double Target::log_density_gradient(In theta, Out grad) const {
    auto ws = make_workspace();
    return log_density_gradient(theta, grad, ws);
}

double Target::block_log_density(int b, In theta) const {
    auto ws = make_workspace();
    return block_log_density(b, theta, ws);
}

double Target::block_log_density_gradient(int b, In theta, Out grad) const {
    auto ws = make_workspace();
    return block_log_density_gradient(b, theta, grad, ws);
}

std::unique_ptr<Target> make_target(const ir::Graph& graph, const Dataset& data, int max_enumerated,
                                    std::function<void()> data_read) {
    return std::make_unique<Target>(graph, data,
                                    TargetOptions{.max_enumerated = max_enumerated, .data_read = std::move(data_read)});
}

std::unique_ptr<Target> make_complete_data_target(const ir::Graph& graph, const Dataset& data,
                                                  std::function<void()> data_read) {
    return std::make_unique<Target>(graph, data, TargetOptions{.sum_out = false, .data_read = std::move(data_read)});
}

}  // namespace vbn
