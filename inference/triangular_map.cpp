#include "inference/triangular_map.hpp"

#include "inference/exp_nonpositive.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace vbn::inference {

namespace {

constexpr int lanes = TriangularMap::lanes;

// The forward map's groups of rows k: the first holds d mod lanes rows (lanes if that is 0),
// each later one `lanes`, so that the last groups, which read the most columns, are full.
int first_group_rows(int d) { return d % lanes == 0 ? lanes : d % lanes; }
int group_count(int d) { return d == 0 ? 0 : 1 + (d - first_group_rows(d)) / lanes; }
int group_first_row(int d, int v) { return v == 0 ? 0 : first_group_rows(d) + lanes * (v - 1); }
int group_last_row(int d, int v) { return group_first_row(d, v + 1) - 1; }
int group_of(int d, int k) { return k < first_group_rows(d) ? 0 : 1 + (k - first_group_rows(d)) / lanes; }

// Columns that a group's rows read: the pairs (i, j ≤ i) and the coordinates i with i below
// its last row (a row k reads z_i for i < k only).
int quad_columns(int d, int v) {
    const int last = group_last_row(d, v);
    return last * (last + 1) / 2;
}
int lin_columns(int d, int v) { return group_last_row(d, v); }

// Columns as stored: whole groups of 8 (zero columns after the last), so that columns_times
// takes 8 columns a pass with no remainder.
int padded(int columns) { return (columns + 7) / 8 * 8; }

}  // namespace

TriangularMap TriangularMap::from_third_derivatives(const std::vector<Eigen::MatrixXd>& a) {
    const int d = static_cast<int>(a.size());
    if (d > max_dim) throw std::invalid_argument(fmt::format("triangular map: {} dimensions, more than {}", d, max_dim));
    for (int k = 0; k < d; ++k) {
        const Eigen::MatrixXd& ak = a[static_cast<std::size_t>(k)];
        if (ak.rows() != d || ak.cols() != d)
            throw std::invalid_argument(fmt::format("triangular map: third-derivative slice {} is {}x{}, not {}x{}", k,
                                                    ak.rows(), ak.cols(), d, d));
        if (!ak.allFinite()) throw std::invalid_argument(fmt::format("triangular map: slice {} has a non-finite entry", k));
    }
    TriangularMap t;
    t.b_.resize(d);
    // The coefficients by groups of `lanes` rows k, column by column: entry l of group v's
    // column c is row group_first_row(v) + l's coefficient of product c (the pairs (i, j ≤ i)
    // in order, ½ (A_kij + A_kji)) or of z_c (½ A_kkc), 0 where that row does not read it.
    const int groups = group_count(d);
    t.quad_start_.assign(static_cast<std::size_t>(groups) + 1, 0);
    t.lin_start_.assign(static_cast<std::size_t>(groups) + 1, 0);
    for (int v = 0; v < groups; ++v) {
        t.quad_start_[static_cast<std::size_t>(v) + 1] = t.quad_start_[static_cast<std::size_t>(v)] + padded(quad_columns(d, v));
        t.lin_start_[static_cast<std::size_t>(v) + 1] = t.lin_start_[static_cast<std::size_t>(v)] + padded(lin_columns(d, v));
    }
    t.quad_.assign(static_cast<std::size_t>(t.quad_start_.back()), Column{});
    t.lin_.assign(static_cast<std::size_t>(t.lin_start_.back()), Column{});
    for (int k = 0; k < d; ++k) {
        const Eigen::MatrixXd& ak = a[static_cast<std::size_t>(k)];
        double b = ak(k, k);
        for (int j = k + 1; j < d; ++j) b += ak(j, j);
        t.b_[k] = 0.5 * b;
        const int v = group_of(d, k), l = k - group_first_row(d, v);
        Column* quad = t.quad_.data() + t.quad_start_[static_cast<std::size_t>(v)];
        for (int i = 0; i < k; ++i)
            for (int j = 0; j <= i; ++j) (quad++)->v[l] = i == j ? 0.5 * ak(i, i) : ak(i, j);
        Column* lin = t.lin_.data() + t.lin_start_[static_cast<std::size_t>(v)];
        for (int i = 0; i < k; ++i) lin[i].v[l] = 0.5 * ak(k, i);
    }
    return t;
}

namespace {
// The products y_i y_j (j ≤ i) of the first `rows` coordinates, rows of the lower triangle in
// order, appended from row `from` on: the first k rows are the first k(k+1)/2 entries.
void append_products(const double* y, int from, int rows, double* w) {
    double* out = w + static_cast<std::ptrdiff_t>(from) * (from + 1) / 2;
    for (int i = from; i < rows; ++i)
        for (int j = 0; j <= i; ++j) *out++ = y[i] * y[j];
}

// out[l] = Σ_c cols[lanes·c + l] x[c], l < lanes: `lanes` dot products at once, with no
// horizontal sums and one loop (short dot products of varying lengths cost more in their
// set-up, sums and mispredicted loop exits than in their arithmetic).
void columns_times(const TriangularMap::Column* cols, const double* x, int n, double* out) {
#if defined(__AVX512F__)
    static_assert(lanes == 8, "one register per partial sum");
    __m512d s[8];
    for (auto& r : s) r = _mm512_setzero_pd();
    for (int c = 0; c < n; c += 8)
        for (int r = 0; r < 8; ++r) s[r] = _mm512_fmadd_pd(_mm512_load_pd(cols[c + r].v), _mm512_set1_pd(x[c + r]), s[r]);
    _mm512_storeu_pd(out, _mm512_add_pd(_mm512_add_pd(_mm512_add_pd(s[0], s[1]), _mm512_add_pd(s[2], s[3])),
                                        _mm512_add_pd(_mm512_add_pd(s[4], s[5]), _mm512_add_pd(s[6], s[7]))));
#else
    double s[lanes] = {};
    for (int c = 0; c < n; ++c)
        for (int l = 0; l < lanes; ++l) s[l] += cols[c].v[l] * x[c];
    for (int l = 0; l < lanes; ++l) out[l] = s[l];
#endif
}

// Σ_c cols[c].v[l] x[c] over n columns: one row of a group (the inverse's, one coordinate at
// a time).
double row_times(const TriangularMap::Column* cols, int l, const double* x, int n) {
    double sum = 0;
    for (int c = 0; c < n; ++c) sum += cols[c].v[l] * x[c];
    return sum;
}

// exp(u) for u in [-max_log_scale, max_log_scale] = [-½, ½], as exp(u − ½) e^½ (a loop of
// these vectorises).
static_assert(TriangularMap::max_log_scale == 0.5);
inline double scale_of(double u) {
    constexpr double root_e = 0x1.a61298e1e069cp+0;  // e^½
    return exp_nonpositive_normal(u - 0.5) * root_e;
}
}  // namespace

double TriangularMap::forward(const Eigen::Ref<const Eigen::VectorXd>& z, Eigen::Ref<Eigen::VectorXd> y) const {
    // m_k and u_k depend on z_<k only: all of them at once, `lanes` rows at a time.
    const int d = dim();
    const int groups = group_count(d);
    // The products z_i z_j, j ≤ i, row i at i(i+1)/2: whole groups of `lanes` from a copy of z
    // padded with zeros, each row's last group spilling into the next row's place before that
    // row is written (scalar rows of varying length cost a mispredicted exit each).
    alignas(64) double zp[max_dim + lanes] = {};
    std::copy_n(z.data(), d, zp);
    alignas(64) double products[max_dim * (max_dim + 1) / 2 + 2 * lanes];
    for (int i = 0; i + 1 < d; ++i) {
        double* out = products + i * (i + 1) / 2;
        const double zi = zp[i];
        for (int q = 0; q <= i; q += lanes)
            for (int l = 0; l < lanes; ++l) out[q + l] = zi * zp[q + l];
    }
    std::fill_n(products + std::max(d - 1, 0) * d / 2, lanes, 0.0);  // read by the zero columns
    alignas(64) double m[max_dim + lanes], u[max_dim + lanes];
    for (int v = 0; v < groups; ++v) {
        const int first = group_first_row(d, v);
        columns_times(quad_.data() + quad_start_[static_cast<std::size_t>(v)], products, padded(quad_columns(d, v)), m + first);
        columns_times(lin_.data() + lin_start_[static_cast<std::size_t>(v)], zp, padded(lin_columns(d, v)), u + first);
    }
    alignas(64) double scale[max_dim];
    for (int k = 0; k < d; ++k) {
        u[k] = std::min(std::max(u[k], -max_log_scale), max_log_scale);
        m[k] = std::min(std::max(m[k], -max_drift), max_drift);
        scale[k] = scale_of(u[k]);
    }
    double log_jacobian = 0;
    for (int k = 0; k < d; ++k) log_jacobian += u[k];
    double* __restrict out = y.data();
    const double* __restrict b = b_.data();
    for (int k = 0; k < d; ++k) out[k] = b[k] + m[k] + scale[k] * zp[k];
    return log_jacobian;
}

double TriangularMap::inverse(Eigen::Ref<Eigen::VectorXd> y_to_z) const {
    // From the first coordinate up: z_k needs z_<k, already in place.
    const int d = dim();
    double products[max_dim * (max_dim + 1) / 2];
    double log_jacobian = 0;
    for (int k = 0; k < d; ++k) {
        if (k > 0) append_products(y_to_z.data(), k - 1, k, products);
        const int v = group_of(d, k), l = k - group_first_row(d, v);
        const double m = std::clamp(row_times(quad_.data() + quad_start_[static_cast<std::size_t>(v)], l, products, k * (k + 1) / 2),
                                    -max_drift, max_drift);
        const double u = std::clamp(row_times(lin_.data() + lin_start_[static_cast<std::size_t>(v)], l, y_to_z.data(), k),
                                    -max_log_scale, max_log_scale);
        y_to_z[k] = (y_to_z[k] - b_[k] - m) / scale_of(u);
        log_jacobian += u;
    }
    return log_jacobian;
}

}  // namespace vbn::inference
