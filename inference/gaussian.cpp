#include "inference/gaussian.hpp"

#include "inference/math.hpp"

#include <Eigen/Cholesky>
#include <fmt/format.h>

#include <cmath>
#include <numbers>
#include <stdexcept>
#include <utility>
#include <vector>
#include <algorithm>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace vbn::inference {

namespace {

#if defined(__AVX512F__)
// out = L z for an n × n lower-triangular L (column-major, zeros above the diagonal) with
// 8 (V − 1) < n ≤ 8 V: out's V vectors stay in registers while the columns go past, every
// column times all V of them (the zeros above the diagonal add nothing). Each entry is the
// same chain of fused multiply-adds, in order of the column, as the loop over the triangle
// makes; only where that sum is zero can the sign of the zero differ. In a loop of products
// at 20 weights this took 40 ns against 120-140 ns for the loop over the triangle, whose
// accumulators go through memory (at 50, 490 against 580-650 ns).
template <int V>
void lower_times(const double* l, Eigen::Index n, const double* z, double* out) {
    __m512d acc[V];
    for (int v = 0; v < V; ++v) acc[v] = _mm512_setzero_pd();
    const auto last = static_cast<__mmask8>((1u << (n - 8 * (V - 1))) - 1);
    for (Eigen::Index j = 0; j < n; ++j) {
        const __m512d zj = _mm512_set1_pd(z[j]);
        const double* col = l + j * n;
        for (int v = 0; v + 1 < V; ++v) acc[v] = _mm512_fmadd_pd(_mm512_loadu_pd(col + 8 * v), zj, acc[v]);
        acc[V - 1] = _mm512_fmadd_pd(_mm512_maskz_loadu_pd(last, col + 8 * (V - 1)), zj, acc[V - 1]);
    }
    for (int v = 0; v + 1 < V; ++v) _mm512_storeu_pd(out + 8 * v, acc[v]);
    _mm512_mask_storeu_pd(out + 8 * (V - 1), last, acc[V - 1]);
}

// lower_times<(n + 7) / 8>; false (nothing done) for n > 64.
bool lower_times_registers(const double* l, Eigen::Index n, const double* z, double* out) {
    switch ((n + 7) / 8) {
    case 1: lower_times<1>(l, n, z, out); return true;
    case 2: lower_times<2>(l, n, z, out); return true;
    case 3: lower_times<3>(l, n, z, out); return true;
    case 4: lower_times<4>(l, n, z, out); return true;
    case 5: lower_times<5>(l, n, z, out); return true;
    case 6: lower_times<6>(l, n, z, out); return true;
    case 7: lower_times<7>(l, n, z, out); return true;
    case 8: lower_times<8>(l, n, z, out); return true;
    default: return false;
    }
}
#endif

void check_df(double df) {
    if (!(df > 0)) throw std::invalid_argument(fmt::format("proposal: degrees of freedom must be positive, got {}", df));
}

// Marsaglia & Tsang (2000): Gamma(shape, 1) for shape >= 1. Their squeeze u < 1 - 0.0331 z^4
// lies inside the exact test, so it decides only what the exact test would (no draw changes)
// and spares its two logs about 92% of the time (a t proposal draws one Gamma per move).
double gamma_marsaglia_tsang(Rng& rng, double shape) {
    const double d = shape - 1.0 / 3.0;
    const double c = 1.0 / std::sqrt(9.0 * d);
    for (;;) {
        const double z = rng.normal();
        const double t = 1.0 + c * z;
        if (t <= 0) continue;
        const double v = t * t * t;
        const double u = rng.uniform();
        const double z2 = z * z;
        if (u < 1.0 - 0.0331 * z2 * z2) return d * v;
        if (std::log(u) < 0.5 * z2 + d - d * v + d * std::log(v)) return d * v;
    }
}

}  // namespace

double sample_chi_square(Rng& rng, double df) {
    check_df(df);
    const double shape = 0.5 * df;
    if (shape >= 1) return 2.0 * gamma_marsaglia_tsang(rng, shape);
    // Gamma(a) = Gamma(a + 1) U^(1/a) for a < 1, done in log space so tiny draws do not
    // underflow to exactly 0 (which would make the t draw infinite).
    const double g = gamma_marsaglia_tsang(rng, shape + 1.0);
    const double log_draw = std::log(g) + std::log(rng.uniform()) / shape;
    return 2.0 * std::max(std::exp(log_draw), std::numeric_limits<double>::min());
}

namespace {

// The lower Cholesky factor of one diagonal block of a covariance whose first coordinate is
// `first` (for the messages), after checking the block is finite, symmetric and positive definite.
Eigen::MatrixXd checked_factor(const Eigen::MatrixXd& covariance, Eigen::Index first) {
    const Eigen::Index d = covariance.rows();
    if (covariance.cols() != d) {
        throw std::invalid_argument(fmt::format("proposal: the covariance block at {} is {}x{}, not square", first,
                                                covariance.rows(), covariance.cols()));
    }
    if (!covariance.allFinite()) throw std::invalid_argument("proposal: the covariance has a non-finite entry");
    const double tol = 1e-8 * std::max(1.0, covariance.cwiseAbs().maxCoeff());
    for (Eigen::Index j = 0; j < d; ++j) {
        for (Eigen::Index i = j + 1; i < d; ++i) {
            if (std::abs(covariance(i, j) - covariance(j, i)) > tol) {
                throw std::invalid_argument(fmt::format("proposal: the covariance is not symmetric at ({}, {}): {} vs {}",
                                                        first + i, first + j, covariance(i, j), covariance(j, i)));
            }
        }
    }
    Eigen::LLT<Eigen::MatrixXd> llt(covariance);
    if (llt.info() != Eigen::Success) throw std::invalid_argument("proposal: the covariance is not positive definite");
    return llt.matrixL();
}

}  // namespace

GaussianProposal::GaussianProposal(Eigen::VectorXd mean, const Eigen::MatrixXd& covariance, double df)
    : mean_(std::move(mean)), df_(df) {
    const Eigen::Index d = mean_.size();
    if (covariance.rows() != d || covariance.cols() != d) {
        throw std::invalid_argument(fmt::format("proposal: the covariance is {}x{} but the mean has {} entries",
                                                covariance.rows(), covariance.cols(), d));
    }
    chol_.push_back(checked_factor(covariance, 0));
    block_offset_.push_back(0);
    finish();
}

GaussianProposal::GaussianProposal(Eigen::VectorXd mean, const std::vector<Eigen::MatrixXd>& blocks, double df)
    : mean_(std::move(mean)), df_(df) {
    Eigen::Index total = 0;
    for (const Eigen::MatrixXd& b : blocks) total += b.rows();
    if (total != mean_.size()) {
        throw std::invalid_argument(fmt::format(
            "proposal: the covariance blocks cover {} coordinates but the mean has {} entries", total, mean_.size()));
    }
    Eigen::Index offset = 0;
    for (const Eigen::MatrixXd& b : blocks) {
        if (b.rows() == 0) continue;
        chol_.push_back(checked_factor(b, offset));
        block_offset_.push_back(offset);
        offset += b.rows();
    }
    finish();
}

GaussianProposal GaussianProposal::from_cholesky(Eigen::VectorXd mean, Eigen::MatrixXd lower, double df) {
    GaussianProposal q;
    const Eigen::Index d = mean.size();
    if (lower.rows() != d || lower.cols() != d) {
        throw std::invalid_argument(fmt::format("proposal: the Cholesky factor is {}x{} but the mean has {} entries",
                                                lower.rows(), lower.cols(), d));
    }
    q.mean_ = std::move(mean);
    lower.triangularView<Eigen::StrictlyUpper>().setZero();
    q.df_ = df;
    for (Eigen::Index i = 0; i < d; ++i) {
        if (!(lower(i, i) > 0)) {
            throw std::invalid_argument(fmt::format("proposal: Cholesky diagonal entry {} is {}, not positive", i, lower(i, i)));
        }
    }
    q.chol_.push_back(std::move(lower));
    q.block_offset_.push_back(0);
    q.finish();
    return q;
}

void GaussianProposal::finish() {
    check_df(df_);
    if (!mean_.allFinite()) throw std::invalid_argument("proposal: the mean has a non-finite entry");
    double log_det_half = 0;  // log |L| = ½ log |Σ|
    for (const Eigen::MatrixXd& l : chol_) {
        if (!l.allFinite()) throw std::invalid_argument("proposal: the scale has a non-finite entry");
        log_det_half += l.diagonal().array().log().sum();
    }
    const double d = static_cast<double>(dim());
    if (is_student_t()) {
        // Multivariate t: Γ((ν+d)/2) / (Γ(ν/2) (νπ)^(d/2) |Σ|^(1/2)).
        log_norm_ = log_gamma(0.5 * (df_ + d)) - log_gamma(0.5 * df_) - 0.5 * d * std::log(df_ * std::numbers::pi) -
                    log_det_half;
    } else {
        log_norm_ = -0.5 * d * std::log(2.0 * std::numbers::pi) - log_det_half;
    }
    scratch_.resize(mean_.size());
    if (map_) {
        map_y_.resize(mean_.size());
    }
    if (has_split()) split_z_.resize(mean_.size());
}

void GaussianProposal::set_df(double df) {
    check_df(df);
    df_ = df;
    finish();
}

void GaussianProposal::set_map(std::shared_ptr<const TriangularMap> map) {
    if (map && (chol_.size() != 1 || map->dim() != dim())) {
        throw std::invalid_argument(fmt::format("proposal: a triangular map of {} dimensions for a proposal of {} in {} blocks",
                                                map->dim(), dim(), chol_.size()));
    }
    map_ = std::move(map);
    finish();
}

void GaussianProposal::set_split(const Eigen::Ref<const Eigen::VectorXd>& below, const Eigen::Ref<const Eigen::VectorXd>& above) {
    if (below.size() == 0 && above.size() == 0) {
        split_below_.resize(0);
        split_above_.resize(0);
        log_split_below_.resize(0);
        log_split_above_.resize(0);
        return;
    }
    if (chol_.size() != 1 || below.size() != dim() || above.size() != dim())
        throw std::invalid_argument(fmt::format("proposal: split scales of {} and {} entries for a proposal of {} in {} blocks",
                                                below.size(), above.size(), dim(), chol_.size()));
    const auto usable = [](const Eigen::Ref<const Eigen::VectorXd>& v) {
        return v.allFinite() && (v.array() > 0).all();
    };
    if (!usable(below) || !usable(above)) throw std::invalid_argument("proposal: a split scale is not positive and finite");
    split_below_ = below;
    split_above_ = above;
    log_split_below_ = below.array().log();
    log_split_above_ = above.array().log();
    finish();
}

// out = z' (inverse: z from z', the stretch keeping each sign; out may be z); returns log |∂z'/∂z|.
double GaussianProposal::stretch(const Eigen::Ref<const Eigen::VectorXd>& z, Eigen::Ref<Eigen::VectorXd> out, bool inverse) const {
    double log_jacobian = 0;
    for (Eigen::Index k = 0; k < z.size(); ++k) {
        const bool up = z[k] >= 0;
        const double s = up ? split_above_[k] : split_below_[k];
        out[k] = inverse ? z[k] / s : z[k] * s;
        log_jacobian += up ? log_split_above_[k] : log_split_below_[k];
    }
    return log_jacobian;
}

Eigen::MatrixXd GaussianProposal::cholesky() const {
    if (chol_.size() == 1) return chol_.front();
    Eigen::MatrixXd l = Eigen::MatrixXd::Zero(dim(), dim());
    for (std::size_t b = 0; b < chol_.size(); ++b) {
        const Eigen::Index o = block_offset_[b], n = chol_[b].rows();
        l.block(o, o, n, n) = chol_[b];
    }
    return l;
}

Eigen::MatrixXd GaussianProposal::scale_matrix() const {
    const Eigen::MatrixXd l = cholesky();
    return l * l.transpose();
}

Eigen::VectorXd GaussianProposal::scale_diagonal() const {
    Eigen::VectorXd v(dim());
    for (std::size_t b = 0; b < chol_.size(); ++b)
        v.segment(block_offset_[b], chol_[b].rows()) = chol_[b].rowwise().squaredNorm();
    return v;
}

void GaussianProposal::inflate(double factor) {
    if (!(factor > 0) || !std::isfinite(factor)) {
        throw std::invalid_argument(fmt::format("proposal: inflation factor must be positive and finite, got {}", factor));
    }
    for (Eigen::MatrixXd& l : chol_) l *= std::sqrt(factor);
    finish();
}

void GaussianProposal::assign(const Eigen::Ref<const Eigen::VectorXd>& mean, const Eigen::Ref<const Eigen::MatrixXd>& lower) {
    const Eigen::Index d = mean_.size();
    if (mean.size() != d || lower.rows() != d || lower.cols() != d) {
        throw std::invalid_argument(
            fmt::format("proposal: cannot assign a mean of {} entries and a {}x{} factor to a proposal of {} dimensions",
                        mean.size(), lower.rows(), lower.cols(), d));
    }
    if (!mean.allFinite()) throw std::invalid_argument("proposal: the mean has a non-finite entry");
    for (Eigen::Index j = 0; j < d; ++j) {
        if (!(lower(j, j) > 0)) {
            throw std::invalid_argument(fmt::format("proposal: Cholesky diagonal entry {} is {}, not positive", j, lower(j, j)));
        }
        for (Eigen::Index i = j; i < d; ++i) {
            if (!std::isfinite(lower(i, j))) throw std::invalid_argument("proposal: the scale has a non-finite entry");
        }
    }
    mean_ = mean;
    map_.reset();
    set_split(Eigen::VectorXd(), Eigen::VectorXd());
    if (chol_.size() != 1) {
        chol_.assign(1, Eigen::MatrixXd(d, d));
        block_offset_.assign(1, 0);
    }
    chol_.front().triangularView<Eigen::Lower>() = lower;
    chol_.front().triangularView<Eigen::StrictlyUpper>().setZero();
    finish();
}

GaussianProposal GaussianProposal::marginal(int offset, int size) const {
    if (offset < 0 || size < 0 || offset + size > dim()) {
        throw std::invalid_argument(
            fmt::format("proposal: marginal of coordinates {}..{} outside 0..{}", offset, offset + size - 1, dim() - 1));
    }
    if (!affine()) {
        if (offset == 0 && size == dim()) return *this;
        throw std::invalid_argument(fmt::format(
            "proposal: a proposal skewed by a triangular map or split scales has no marginal of coordinates {}..{}", offset, offset + size - 1));
    }
    // The blocks the range overlaps; the marginal of each is taken over its part of the range
    // and the parts stay independent. Σ_rr = L_r· L_r·' over the rows r of a block: recompute
    // its factor rather than slicing L, whose diagonal block is the factor only for the leading rows.
    // The first block is found by bisection (the offsets ascend): a scan of every block made
    // a random walk's per-block marginals quadratic in the blocks (10^4 blocks: 10^8 steps).
    std::vector<Eigen::MatrixXd> parts;
    const Eigen::Index lo = offset, hi = offset + size;
    const auto after = std::upper_bound(block_offset_.begin(), block_offset_.end(), lo);
    const std::size_t first = after == block_offset_.begin() ? 0 : static_cast<std::size_t>(after - block_offset_.begin()) - 1;
    for (std::size_t b = first; b < chol_.size() && block_offset_[b] < hi; ++b) {
        const Eigen::Index o = block_offset_[b], n = chol_[b].rows();
        const Eigen::Index from = std::max(lo, o), to = std::min(hi, o + n);
        if (from >= to) continue;
        const Eigen::MatrixXd rows = chol_[b].middleRows(from - o, to - from);
        parts.push_back(rows * rows.transpose());
    }
    if (parts.size() == 1) return GaussianProposal(mean_.segment(offset, size), parts.front(), df_);
    return GaussianProposal(mean_.segment(offset, size), parts, df_);
}

// Column by column, each an axpy over the column's lower part that the compiler vectorises: at
// the block sizes proposals have (up to a few dozen) Eigen's blocked triangular product spends
// more on its panels than on the arithmetic (one draw at 20 weights: 4% of a whole fit's CPU).
void GaussianProposal::times_lower(const Eigen::Ref<const Eigen::VectorXd>& z, Eigen::Ref<Eigen::VectorXd> out) const {
    for (std::size_t b = 0; b < chol_.size(); ++b) {
        const Eigen::Index o = block_offset_[b], n = chol_[b].rows();
        const double* __restrict zb = z.data() + o;
        double* __restrict ob = out.data() + o;
        const double* l = chol_[b].data();
#if defined(__AVX512F__)
        if (lower_times_registers(l, n, zb, ob)) continue;
#endif
        for (Eigen::Index i = 0; i < n; ++i) ob[i] = 0;
        for (Eigen::Index j = 0; j < n; ++j) {
            const double zj = zb[j];
            const double* __restrict col = l + j * n;
            for (Eigen::Index i = j; i < n; ++i) ob[i] += col[i] * zj;
        }
    }
}

double GaussianProposal::place(const Eigen::Ref<const Eigen::VectorXd>& z, double mahalanobis, Eigen::Ref<Eigen::VectorXd> out) {
    const double split_jacobian = has_split() ? stretch(z, split_z_) : 0.0;
    const Eigen::Ref<const Eigen::VectorXd> stretched = has_split() ? Eigen::Ref<const Eigen::VectorXd>(split_z_) : z;
    double log_jacobian = split_jacobian;
    if (map_) {
        log_jacobian += map_->forward(stretched, map_y_);
        times_lower(map_y_, out);
    } else {
        times_lower(stretched, out);
    }
    out += mean_;
    return log_density_at(mahalanobis) - log_jacobian;
}

double GaussianProposal::point(const Eigen::Ref<const Eigen::VectorXd>& z, Eigen::Ref<Eigen::VectorXd> out) {
    return place(z, z.squaredNorm(), out);
}

double GaussianProposal::draw(Rng& rng, Eigen::Ref<Eigen::VectorXd> out) {
    for (Eigen::Index i = 0; i < scratch_.size(); ++i) scratch_[i] = rng.normal();
    if (!affine()) {
        double m = scratch_.squaredNorm();
        if (is_student_t()) {
            const double w = sample_chi_square(rng, df_) / df_;
            scratch_ /= std::sqrt(w);
            m /= w;
        }
        return place(scratch_, m, out);
    }
    times_lower(scratch_, out);
    double m = scratch_.squaredNorm();
    if (is_student_t()) {
        const double w = sample_chi_square(rng, df_) / df_;
        out /= std::sqrt(w);
        m /= w;
    }
    out += mean_;
    return log_density_at(m);
}

void GaussianProposal::sample(Rng& rng, Eigen::Ref<Eigen::VectorXd> out) { draw(rng, out); }

double GaussianProposal::sample_log_density(Rng& rng, Eigen::Ref<Eigen::VectorXd> out) { return draw(rng, out); }

double GaussianProposal::log_density_at(double m) const {
    if (is_student_t()) return log_norm_ - 0.5 * (df_ + static_cast<double>(dim())) * std::log1p(m / df_);
    return log_norm_ - 0.5 * m;
}

double GaussianProposal::whiten(const Eigen::Ref<const Eigen::VectorXd>& x, Eigen::Ref<Eigen::VectorXd> u) const {
    u = x - mean_;
    for (std::size_t b = 0; b < chol_.size(); ++b) {
        const Eigen::Index o = block_offset_[b], n = chol_[b].rows();
        chol_[b].triangularView<Eigen::Lower>().solveInPlace(u.segment(o, n));
    }
    double log_jacobian = map_ ? map_->inverse(u) : 0.0;
    if (has_split()) log_jacobian += stretch(u, u, true);
    return log_density_at(u.squaredNorm()) - log_jacobian;
}

double GaussianProposal::sample_overrelaxed(Rng& rng, double alpha, const Eigen::Ref<const Eigen::VectorXd>& u,
                                            Eigen::Ref<Eigen::VectorXd> out, Eigen::Ref<Eigen::VectorXd> u_out) {
    const double chi_square = overrelax_noise(rng, u_out);
    return overrelaxed_from(alpha, u, u_out, chi_square, out, u_out);
}

double GaussianProposal::overrelax_noise(Rng& rng, Eigen::Ref<Eigen::VectorXd> normals) const {
    for (Eigen::Index i = 0; i < normals.size(); ++i) normals[i] = rng.normal();
    return is_student_t() ? sample_chi_square(rng, df_ + static_cast<double>(dim())) : 0.0;
}

double GaussianProposal::overrelaxed_from(double alpha, const Eigen::Ref<const Eigen::VectorXd>& u,
                                          const Eigen::Ref<const Eigen::VectorXd>& normals, double chi_square,
                                          Eigen::Ref<Eigen::VectorXd> out, Eigen::Ref<Eigen::VectorXd> u_out) {
    double spread = std::sqrt(1.0 - alpha * alpha);
    // λ | u ~ Gamma((ν + d)/2, rate (ν + |u|²)/2), that is χ²(ν + d) / (ν + |u|²).
    if (is_student_t()) spread /= std::sqrt(chi_square / (df_ + u.squaredNorm()));
    u_out = alpha * u + spread * normals;  // element by element, so u_out may be normals
    return place(u_out, u_out.squaredNorm(), out);
}

double GaussianProposal::log_density(const Eigen::Ref<const Eigen::VectorXd>& x) { return whiten(x, scratch_); }

}  // namespace vbn::inference
