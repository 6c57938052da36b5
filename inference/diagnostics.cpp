// Convergence diagnostics, following R's posterior package (1.4, R/convergence.R) step by
// step so that its values are reproduced to rounding; tests/inference/fixtures holds
// posterior's values for a range of cases (scripts/make-diagnostics-fixtures.R).
//
// One deliberate difference: posterior ranks infinite draws and may return a finite R-hat
// for them; here any non-finite draw makes every diagnostic NaN, since an infinite draw
// means the sampler failed and no convergence number should suggest otherwise.
#include "inference/diagnostics.hpp"

#include <boost/math/distributions/normal.hpp>
#include <boost/math/special_functions/beta.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <numbers>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <utility>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace vbn::inference {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Whether every draw is finite, and the least and greatest draw.
struct Range {
    bool finite;
    double lo, hi;
};
Range range_of(const DrawsRef& x) {
    // A NaN makes both NaN, an infinite draw the least or the greatest. With every draw finite
    // (Σ 0·x is 0, NaN otherwise) Eigen's vectorised minimum and maximum give the same; its
    // NaN-propagating ones, and hasNaN, go an entry at a time (13% of a parameter's diagnostics
    // in bench_diagnostics under perf, 7% with these).
    if ((x.array() * 0.0).sum() == 0.0) {
        const double lo = x.minCoeff(), hi = x.maxCoeff();
        return {.finite = true, .lo = lo, .hi = hi};
    }
    const double lo = x.minCoeff<Eigen::PropagateNaN>(), hi = x.maxCoeff<Eigen::PropagateNaN>();
    return {.finite = false, .lo = lo, .hi = hi};
}

bool any_nonfinite(const DrawsRef& x) { return !range_of(x).finite; }

// posterior's is_constant: an absolute tolerance of machine epsilon (of finite draws).
bool is_constant(const Range& r) { return std::abs(r.hi - r.lo) < std::numeric_limits<double>::epsilon(); }

// posterior's should_return_NA.
bool undefined(const DrawsRef& x) {
    if (x.size() == 0) return true;
    const Range r = range_of(x);
    return !r.finite || is_constant(r);
}

// Sample variance (denominator n − 1, two passes as R's var); NaN for fewer than 2 values.
template <class V>
double sample_var(const V& v) {
    const auto n = v.size();
    if (n < 2) return kNaN;
    const double m = v.mean();
    return (v.array() - m).square().sum() / static_cast<double>(n - 1);
}

// Standard deviation of all draws pooled (R's sd).
double pooled_sd(const DrawsRef& x) {
    if (x.size() < 2) return kNaN;
    const double m = x.mean();
    return std::sqrt((x.array() - m).square().sum() / static_cast<double>(x.size() - 1));
}

void require_draws(const DrawsRef& x) {
    if (x.rows() == 0 || x.cols() == 0)
        throw std::invalid_argument("convergence diagnostics need at least one draw in at least one chain");
}

std::vector<double> pooled_sorted(const DrawsRef& x) {
    std::vector<double> v(static_cast<std::size_t>(x.size()));
    std::size_t k = 0;
    for (Eigen::Index j = 0; j < x.cols(); ++j)
        for (Eigen::Index i = 0; i < x.rows(); ++i) v[k++] = x(i, j);
    std::sort(v.begin(), v.end());
    return v;
}

double median_sorted(const std::vector<double>& s) {
    const std::size_t n = s.size();
    return n % 2 == 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2.0;
}

// ESS of I(x ≤ q) over the split chains `split` (the indicators of the split draws are the
// split indicators), q a quantile of the pooled draws.
double ess_indicator(const DrawsRef& split, double q) {
    thread_local Eigen::MatrixXd indicator;  // keeps its storage from one parameter to the next
    indicator = (split.array() <= q).cast<double>().matrix();
    // Finite by construction, so undefined exactly where constant: all 0 or all 1.
    const double ones = indicator.sum();
    if (ones == 0 || ones == static_cast<double>(indicator.size())) return kNaN;
    return diag::ess_raw_defined(indicator);
}

double quantile_prob_for_ess(double prob, Eigen::Index size) {
    if (prob < 0 || prob > 1) throw std::invalid_argument("a quantile's probability must lie in [0, 1]");
    // posterior moves p = 1 inside the sample so that I(x ≤ q) is not constant.
    if (prob == 1) {
        const double len = static_cast<double>(size);
        return (len - 0.5) / len;
    }
    return prob;
}

// The places s·q of the Beta(a, b) quantiles q at lo_p and hi_p, q as Boost's ibeta_inv returns
// it with its default policy (long double inside): only floor(s·q₁) and ceil(s·q₂) are used. That
// costs about 5 µs a quantile, most of a parameter's mcse time; with double precision inside it
// costs 1 µs and agrees to far better than 1e-9 relative, so its places are used when both lie
// further than that from an integer (then floor and ceil cannot differ), and the long double
// ones otherwise or when it fails.
std::pair<double, double> beta_quantile_places(double a, double b, double lo_p, double hi_p, double s) {
    using Fast = boost::math::policies::policy<boost::math::policies::promote_double<false>>;
    const auto clear_of_integers = [](double x) {
        return std::isfinite(x) && std::abs(x - std::round(x)) > 1e-9 * std::max(1.0, std::abs(x));
    };
    try {
        const double x1 = boost::math::ibeta_inv(a, b, lo_p, Fast()) * s;
        const double x2 = boost::math::ibeta_inv(a, b, hi_p, Fast()) * s;
        if (clear_of_integers(x1) && clear_of_integers(x2)) return {x1, x2};
    } catch (const std::exception&) {
        // the default policy below decides, as it always did
    }
    return {boost::math::ibeta_inv(a, b, lo_p) * s, boost::math::ibeta_inv(a, b, hi_p) * s};
}

double mcse_quantile_sorted(const std::vector<double>& sorted, double prob, double ess) {
    if (std::isnan(ess)) return kNaN;
    // ±1 sd of the standard normal: Φ(−1) and Φ(1), the values posterior uses.
    const double lo_p = 0.1586553, hi_p = 0.8413447;
    const double a = ess * prob + 1, b = ess * (1 - prob) + 1;
    const auto s = static_cast<double>(sorted.size());
    const auto [x1, x2] = beta_quantile_places(a, b, lo_p, hi_p, s);
    const auto i1 = static_cast<std::size_t>(std::max(std::floor(x1), 1.0));
    const auto i2 = static_cast<std::size_t>(std::min(std::ceil(x2), s));
    return (sorted[i2 - 1] - sorted[i1 - 1]) / 2.0;
}

// The twiddle factors of a radix-2 FFT of `size` points, stage by stage: the stage that joins
// transforms of len/2 points into ones of len reads exp(−2πi k / len), k < len/2, side by
// side from offset len/2 − 1, real and imaginary parts apart. Made once per size and thread.
struct Twiddles {
    std::size_t size = 0;
    std::vector<double> re, im;

    void make(std::size_t n) {
        if (n == size) return;
        size = n;
        re.assign(n, 0.0);
        im.assign(n, 0.0);
        for (std::size_t len = 2; len <= n; len <<= 1)
            for (std::size_t k = 0; k < len / 2; ++k) {
                const std::complex<double> w = std::polar(1.0, -2.0 * std::numbers::pi * static_cast<double>(k * (n / len)) /
                                                                     static_cast<double>(n));
                re[len / 2 - 1 + k] = w.real();
                im[len / 2 - 1 + k] = w.imag();
            }
    }
};

// In-place iterative radix-2 FFT (decimation in time) of re + i·im, `size` points each, with
// the parts in separate arrays so that each stage's butterflies run in vector instructions
// (std::complex's interleaved parts went through the stack, 8 ns a butterfly).
void fft_inplace(double* re, double* im, std::size_t n, const Twiddles& tw) {
    for (std::size_t i = 1, j = 0; i < n; ++i) {
        std::size_t bit = n >> 1;
        for (; j & bit; bit >>= 1) j ^= bit;
        j ^= bit;
        if (i < j) std::swap(re[i], re[j]), std::swap(im[i], im[j]);
    }
    for (std::size_t len = 2; len <= n; len <<= 1) {
        const std::size_t half = len / 2;
        const double* wr = tw.re.data() + half - 1;
        const double* wi = tw.im.data() + half - 1;
        for (std::size_t i = 0; i < n; i += len) {
            double *ur = re + i, *ui = im + i, *br = re + i + half, *bi = im + i + half;
            for (std::size_t k = 0; k < half; ++k) {
                const double vr = br[k] * wr[k] - bi[k] * wi[k];
                const double vi = br[k] * wi[k] + bi[k] * wr[k];
                br[k] = ur[k] - vr;
                bi[k] = ui[k] - vi;
                ur[k] += vr;
                ui[k] += vi;
            }
        }
    }
}

Eigen::MatrixXd fold_about(const DrawsRef& x, double median) { return (x.array() - median).abs().matrix(); }

bool all_equal(std::span<const double> x) {
    return std::all_of(x.begin(), x.end(), [&](double v) { return v == x[0]; });
}

}  // namespace

namespace diag {
namespace {

// Lags computed directly first; a sequence that runs past them gets twice as many, then
// (past kMaxDirectLags) every lag at once.
constexpr std::size_t kInitialLags = 8;
constexpr std::size_t kMaxDirectLags = 64;

// Lags summed side by side: the block's independent sums proceed together (one vector
// operation a step), each in kLagStreams partial sums over i mod kLagStreams added at the end,
// so that a step does not wait for the previous one's addition to finish (one stream was bound
// by that latency: a fifth of a parameter's diagnostics). A lag's sum is then not the one a
// loop over i in order gives (it differs in the last bits), but the same whichever block or
// round asks for it; where the compiler fuses products with additions, and with AVX-512,
// products and sums are fused.
constexpr std::size_t kLagBlock = 8;
constexpr std::size_t kLagStreams = 4;

// out[k − from] = Σ_{i<n−k} d_i d_{i+k} for the lags k = from … to−1.
void lag_products(std::span<const double> d, std::size_t from, std::size_t to, double* out) {
    const std::size_t n = d.size();
    if (to - from != kLagBlock || to > n) {
        for (std::size_t k = from; k < to; ++k) {
            double sum = 0;
            for (std::size_t i = 0; i + k < n; ++i) sum += d[i] * d[i + k];
            out[k - from] = sum;
        }
        return;
    }
    static_assert(kLagStreams == 4, "four partial sums below");
    std::array<double, kLagBlock> s0{}, s1{}, s2{}, s3{};
    const std::size_t all = n - (to - 1);  // i < all: every lag of the block has d_{i+k}
    const std::size_t whole = all - all % kLagStreams;
    const double* ahead = d.data() + from;
#if defined(__AVX512F__)
    // GCC turned the loop below into shuffles across the streams, slower than one stream was:
    // here each partial sum is one register, updated by a fused multiply-add.
    static_assert(kLagBlock == 8, "one 8-double register per partial sum");
    __m512d p0 = _mm512_setzero_pd(), p1 = p0, p2 = p0, p3 = p0;
    for (std::size_t i = 0; i < whole; i += kLagStreams) {
        p0 = _mm512_fmadd_pd(_mm512_set1_pd(d[i]), _mm512_loadu_pd(ahead + i), p0);
        p1 = _mm512_fmadd_pd(_mm512_set1_pd(d[i + 1]), _mm512_loadu_pd(ahead + i + 1), p1);
        p2 = _mm512_fmadd_pd(_mm512_set1_pd(d[i + 2]), _mm512_loadu_pd(ahead + i + 2), p2);
        p3 = _mm512_fmadd_pd(_mm512_set1_pd(d[i + 3]), _mm512_loadu_pd(ahead + i + 3), p3);
    }
    _mm512_storeu_pd(s0.data(), p0);
    _mm512_storeu_pd(s1.data(), p1);
    _mm512_storeu_pd(s2.data(), p2);
    _mm512_storeu_pd(s3.data(), p3);
#else
    for (std::size_t i = 0; i < whole; i += kLagStreams) {
        for (std::size_t b = 0; b < kLagBlock; ++b) s0[b] += d[i] * ahead[i + b];
        for (std::size_t b = 0; b < kLagBlock; ++b) s1[b] += d[i + 1] * ahead[i + 1 + b];
        for (std::size_t b = 0; b < kLagBlock; ++b) s2[b] += d[i + 2] * ahead[i + 2 + b];
        for (std::size_t b = 0; b < kLagBlock; ++b) s3[b] += d[i + 3] * ahead[i + 3 + b];
    }
#endif
    for (std::size_t i = whole; i < all; ++i)
        for (std::size_t b = 0; b < kLagBlock; ++b) s0[b] += d[i] * ahead[i + b];
    std::array<double, kLagBlock> sum;
    for (std::size_t b = 0; b < kLagBlock; ++b) sum[b] = (s0[b] + s1[b]) + (s2[b] + s3[b]);
    for (std::size_t b = 0; b < kLagBlock; ++b) {
        for (std::size_t i = all; i + from + b < n; ++i) sum[b] += d[i] * d[i + from + b];
        out[b] = sum[b];
    }
}

// The chains of one ess_raw call, each less its mean, kept across the rounds of lags; a
// constant chain is flagged (its autocovariances are all zero).
struct CentredChains {
    std::vector<double> data, sums;
    std::vector<bool> constant;
    std::size_t n = 0;

    void assign(const DrawsRef& x) {
        n = static_cast<std::size_t>(x.rows());
        data.resize(n * static_cast<std::size_t>(x.cols()));
        constant.assign(static_cast<std::size_t>(x.cols()), false);
        // Each chain's sum in order, as std::accumulate, but the chains' sums side by side.
        sums.assign(static_cast<std::size_t>(x.cols()), 0.0);
        for (Eigen::Index i = 0; i < x.rows(); ++i)
            for (Eigen::Index j = 0; j < x.cols(); ++j) sums[static_cast<std::size_t>(j)] += x(i, j);
        for (Eigen::Index j = 0; j < x.cols(); ++j) {
            const std::span<const double> chain(x.col(j).data(), n);
            constant[static_cast<std::size_t>(j)] = all_equal(chain);
            const double mu = sums[static_cast<std::size_t>(j)] / static_cast<double>(n);
            double* d = data.data() + static_cast<std::size_t>(j) * n;
            for (std::size_t i = 0; i < n; ++i) d[i] = chain[i] - mu;
        }
    }
    std::span<const double> chain(std::size_t j) const { return {data.data() + j * n, n}; }
};

// Mean over chains of the autocovariances at lags from … lags−1, written into mean[from …]
// (mean has at least `lags` entries). Each lag is the same sum however many are asked for,
// so computing them in rounds gives the same bits as computing them at once.
void mean_autocovariance(const DrawsRef& x, const CentredChains& centred, std::size_t from, std::size_t lags,
                         std::vector<double>& mean) {
    const auto n = static_cast<std::size_t>(x.rows());
    std::fill(mean.begin() + static_cast<std::ptrdiff_t>(from), mean.begin() + static_cast<std::ptrdiff_t>(lags), 0.0);
    const bool fft = lags == n && n > static_cast<std::size_t>(kDirectAutocovarianceMax);  // as autocovariance()
    std::vector<double> one(fft ? n : 0);
    std::array<double, kLagBlock> block;
    for (Eigen::Index j = 0; j < x.cols(); ++j) {
        if (fft) {
            autocovariance(std::span<const double>(x.col(j).data(), n), one);
            for (std::size_t k = from; k < lags; ++k) mean[k] += one[k];
        } else if (!centred.constant[static_cast<std::size_t>(j)]) {
            for (std::size_t k = from; k < lags; k += kLagBlock) {
                const std::size_t to = std::min(lags, k + kLagBlock);
                lag_products(centred.chain(static_cast<std::size_t>(j)), k, to, block.data());
                for (std::size_t b = k; b < to; ++b) mean[b] += block[b - k] / static_cast<double>(n);
            }
        }
    }
    for (std::size_t k = from; k < lags; ++k) mean[k] /= static_cast<double>(x.cols());
}

// τ = −1 + 2 Σ ρ_t from the mean autocovariances, or nothing when Geyer's sequence needs
// more than the first `lags` of them.
std::optional<double> geyer_tau(const std::vector<double>& acov, Eigen::Index n, Eigen::Index m, double chain_means_var,
                                std::size_t lags) {
    const double nd = static_cast<double>(n);
    const double mean_var = acov[0] * nd / (nd - 1);
    double var_plus = mean_var * (nd - 1) / nd;
    if (m > 1) var_plus += chain_means_var;

    // Geyer's initial positive sequence: sum autocorrelations in pairs (ρ_2k + ρ_2k+1)
    // while the pair sums stay positive.
    thread_local std::vector<double> rho;
    rho.assign(static_cast<std::size_t>(n), 0.0);
    auto rho_at = [&](std::size_t k) { return 1 - (mean_var - acov[k]) / var_plus; };
    std::size_t t = 0;
    double rho_even = 1;
    double rho_odd = rho_at(1);
    rho[0] = rho_even;
    rho[1] = rho_odd;
    while (static_cast<Eigen::Index>(t) < n - 5 && !std::isnan(rho_even + rho_odd) && rho_even + rho_odd > 0) {
        t += 2;
        if (t + 1 >= lags) return std::nullopt;
        rho_even = rho_at(t);
        rho_odd = rho_at(t + 1);
        if (rho_even + rho_odd >= 0) {
            rho[t] = rho_even;
            rho[t + 1] = rho_odd;
        }
    }
    const std::size_t max_t = t;
    if (rho_even > 0) rho[max_t] = rho_even;

    // Geyer's initial monotone sequence: pair sums may not increase.
    for (t = 2; t + 2 <= max_t; t += 2) {
        if (rho[t] + rho[t + 1] > rho[t - 2] + rho[t - 1]) {
            rho[t] = (rho[t - 2] + rho[t - 1]) / 2;
            rho[t + 1] = rho[t];
        }
    }

    // posterior sums rho_hat_t[1:max_t], which for max_t = 0 is R's 1:0, i.e. ρ_0 alone.
    double sum = 0;
    if (max_t == 0)
        sum = rho[0];
    else
        for (std::size_t k = 0; k < max_t; ++k) sum += rho[k];
    const double tau = -1 + 2 * sum + rho[max_t];
    // Antithetic chains can make τ tiny; posterior caps the ESS at S·log10(S).
    return std::max(tau, 1 / std::log10(static_cast<double>(m) * nd));
}

}  // namespace

Eigen::MatrixXd split_chains(const DrawsRef& x) {
    const Eigen::Index n = x.rows(), m = x.cols();
    if (n <= 1) return x;
    const Eigen::Index half = n / 2;
    const Eigen::Index second = n - half;  // skips the middle draw of an odd length
    Eigen::MatrixXd out(half, 2 * m);
    out.leftCols(m) = x.topRows(half);
    out.rightCols(m) = x.middleRows(second, half);
    return out;
}

namespace {

using Ranked = std::vector<std::pair<double, Eigen::Index>>;  // (value, position), by value

// A double's bits as an unsigned key in the same order as the value (negative values with all
// bits flipped, the others with the sign bit set); -0 sorts just below +0, a tie for the
// callers, which compare values.
std::uint64_t sort_key(double v) {
    const auto u = std::bit_cast<std::uint64_t>(v);
    return u >> 63 ? ~u : u | (std::uint64_t{1} << 63);
}

// sort_key's inverse.
double key_value(std::uint64_t key) {
    return std::bit_cast<double>(key >> 63 ? key & ~(std::uint64_t{1} << 63) : ~key);
}

// (value, position) pairs of x's entries sorted by value. The keys' bits above the highest
// one that differs between draws (the sign and exponent, mostly) are shared; the 32 bits from
// there down are sorted 11 bits at a time (least significant first, stable, skipping digits
// all keys share) with the positions alongside, and the rare runs that agree in all of them
// are then sorted by the whole key. Thousands of draws sort several times faster this way than
// by comparisons, whose outcomes a branch predictor cannot guess.
Ranked ranked(const DrawsRef& x) {
    const auto n = static_cast<std::size_t>(x.size());
    if (n == 0) return {};
    if (n > 0xffffffff) throw std::invalid_argument("too many draws to rank (positions are 32-bit)");
    thread_local std::vector<std::uint64_t> keys, items, buffer;
    keys.resize(n);
    items.resize(n);
    buffer.resize(n);
    std::size_t k = 0;
    for (Eigen::Index j = 0; j < x.cols(); ++j)
        for (Eigen::Index i = 0; i < x.rows(); ++i) keys[k++] = sort_key(x(i, j));
    std::uint64_t differ = 0;
    for (const std::uint64_t key : keys) differ |= key ^ keys[0];
    const int low = std::max(0, 64 - std::countl_zero(differ) - 32);  // bits low … low+31 are sorted

    constexpr int kDigitBits = 11, kDigits = 3;
    constexpr std::uint64_t kDigitMask = (1u << kDigitBits) - 1;
    std::array<std::array<std::uint32_t, std::size_t{1} << kDigitBits>, kDigits> count{};
    for (std::size_t i = 0; i < n; ++i) {
        const std::uint64_t window = (keys[i] >> low) & 0xffffffff;
        items[i] = window << 32 | i;
        for (int d = 0; d < kDigits; ++d) ++count[static_cast<std::size_t>(d)][(window >> (kDigitBits * d)) & kDigitMask];
    }
    for (int d = 0; d < kDigits; ++d) {
        auto& c = count[static_cast<std::size_t>(d)];
        const int shift = 32 + kDigitBits * d;
        if (c[(items[0] >> shift) & kDigitMask] == n) continue;  // one digit value
        std::uint32_t sum = 0;
        for (auto& e : c) sum += std::exchange(e, sum);
        for (const std::uint64_t item : items) buffer[c[(item >> shift) & kDigitMask]++] = item;
        items.swap(buffer);
    }
    auto position = [](std::uint64_t item) { return static_cast<std::size_t>(item & 0xffffffff); };
    if (low > 0) {
        for (std::size_t i = 0; i < n;) {
            std::size_t j = i + 1;
            while (j < n && items[j] >> 32 == items[i] >> 32) ++j;
            if (j - i > 1)
                std::sort(items.begin() + static_cast<std::ptrdiff_t>(i), items.begin() + static_cast<std::ptrdiff_t>(j),
                          [&](std::uint64_t a, std::uint64_t b) { return keys[position(a)] < keys[position(b)]; });
            i = j;
        }
    }
    Ranked order(n);
    for (std::size_t i = 0; i < n; ++i) {
        const std::size_t p = position(items[i]);
        order[i] = {key_value(keys[p]), static_cast<Eigen::Index>(p)};
    }
    return order;
}

// The z-scale of a rows × cols matrix whose entries, in position order, `order` ranks. Only
// the sequence of values and the positions of each run of equal values matter, so any order
// among ties gives the same result.
Eigen::MatrixXd z_scale_ranked(const Ranked& order, Eigen::Index rows, Eigen::Index cols) {
    const auto size = static_cast<Eigen::Index>(order.size());
    Eigen::MatrixXd z(rows, cols);
    // Double precision throughout: Boost would otherwise evaluate in long double, several
    // times slower for no visible gain at double output.
    using Policy = boost::math::policies::policy<boost::math::policies::promote_double<false>>;
    const boost::math::normal_distribution<double, Policy> normal;
    const double s = static_cast<double>(size);
    constexpr double c = 3.0 / 8.0;
    // A run of ties at sorted places i … j shares the average of their ranks, (i + j)/2 + 1, so
    // the z of every run is one of 2 size − 1 values, indexed by i + j: those are computed on
    // first use, once per thread and number of draws, whatever the parameter.
    if (size == 0) return z;
    thread_local std::vector<double> by_rank_sum;
    const auto sums = static_cast<std::size_t>(2 * size - 1);
    if (by_rank_sum.size() != sums) by_rank_sum.assign(sums, kNaN);
    for (Eigen::Index i = 0; i < size;) {
        Eigen::Index j = i;
        const double v = order[static_cast<std::size_t>(i)].first;
        while (j + 1 < size && order[static_cast<std::size_t>(j + 1)].first == v) ++j;
        double& zr = by_rank_sum[static_cast<std::size_t>(i + j)];
        if (std::isnan(zr)) {
            const double rank = (static_cast<double>(i + 1) + static_cast<double>(j + 1)) / 2.0;
            zr = boost::math::quantile(normal, (rank - c) / (s - 2 * c + 1));
        }
        for (Eigen::Index k = i; k <= j; ++k) z.data()[order[static_cast<std::size_t>(k)].second] = zr;
        i = j + 1;
    }
    return z;
}

// The ranking of |x − median| from the ranking of x, without a second sort: the entries at or
// above the median in ascending order, and those below it in descending order, each rise in
// |x − median|; the two runs are merged. The values are those fold_about computes.
Ranked ranked_fold(const Ranked& order, double median) {
    const auto n = static_cast<std::ptrdiff_t>(order.size());
    std::ptrdiff_t up = std::lower_bound(order.begin(), order.end(), median,
                                         [](const auto& a, double m) { return a.first < m; }) -
                        order.begin();
    std::ptrdiff_t down = up - 1;
    Ranked folded(order.size());
    for (auto& out : folded) {
        const bool take_up = down < 0 || (up < n && std::abs(order[static_cast<std::size_t>(up)].first - median) <=
                                                          std::abs(order[static_cast<std::size_t>(down)].first - median));
        const auto& from = order[static_cast<std::size_t>(take_up ? up++ : down--)];
        out = {std::abs(from.first - median), from.second};
    }
    return folded;
}

}  // namespace

Eigen::MatrixXd z_scale(const DrawsRef& x) { return z_scale_ranked(ranked(x), x.rows(), x.cols()); }

Eigen::MatrixXd fold(const DrawsRef& x) { return fold_about(x, median_sorted(pooled_sorted(x))); }

void autocovariance_direct(std::span<const double> x, std::span<double> out) {
    const std::size_t n = x.size();
    if (all_equal(x)) {
        std::fill(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(n), 0.0);
        return;
    }
    const double mean = std::accumulate(x.begin(), x.end(), 0.0) / static_cast<double>(n);
    std::vector<double> d(n);
    for (std::size_t i = 0; i < n; ++i) d[i] = x[i] - mean;
    for (std::size_t k = 0; k < n; k += kLagBlock) lag_products(d, k, std::min(n, k + kLagBlock), out.data() + k);
    for (std::size_t k = 0; k < n; ++k) out[k] /= static_cast<double>(n);
}

void autocovariance_fft(std::span<const double> x, std::span<double> out) {
    const std::size_t n = x.size();
    if (all_equal(x)) {
        std::fill(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(n), 0.0);
        return;
    }
    std::size_t size = 1;
    while (size < 2 * n) size <<= 1;
    thread_local Twiddles tw;
    thread_local std::vector<double> re, im;
    tw.make(size);
    const double mean = std::accumulate(x.begin(), x.end(), 0.0) / static_cast<double>(n);
    re.assign(size, 0.0);
    im.assign(size, 0.0);
    for (std::size_t i = 0; i < n; ++i) re[i] = x[i] - mean;
    fft_inplace(re.data(), im.data(), size, tw);
    for (std::size_t j = 0; j < size; ++j) {
        re[j] = re[j] * re[j] + im[j] * im[j];
        im[j] = 0.0;
    }
    // The power spectrum is real and even, so a forward transform inverts it up to 1/size.
    fft_inplace(re.data(), im.data(), size, tw);
    const double scale = 1.0 / (static_cast<double>(size) * static_cast<double>(n));
    for (std::size_t k = 0; k < n; ++k) out[k] = re[k] * scale;
}

void autocovariance(std::span<const double> x, std::span<double> out) {
    if (out.size() < x.size()) throw std::invalid_argument("autocovariance: output shorter than the series");
    if (x.size() <= static_cast<std::size_t>(kDirectAutocovarianceMax))
        autocovariance_direct(x, out);
    else
        autocovariance_fft(x, out);
}

double rhat_raw(const DrawsRef& x) {
    if (undefined(x)) return kNaN;
    return rhat_raw_defined(x);
}

double rhat_raw_defined(const DrawsRef& x) {
    const double n = static_cast<double>(x.rows());
    const Eigen::VectorXd chain_mean = x.colwise().mean().transpose();
    Eigen::VectorXd chain_var(x.cols());
    for (Eigen::Index j = 0; j < x.cols(); ++j) chain_var(j) = sample_var(x.col(j));
    const double var_between = n * sample_var(chain_mean);
    const double var_within = chain_var.mean();
    return std::sqrt((var_between / var_within + n - 1) / n);
}

double ess_raw(const DrawsRef& x) {
    if (x.rows() < 3 || undefined(x)) return kNaN;
    return ess_raw_defined(x);
}

double ess_raw_defined(const DrawsRef& x) {
    const Eigen::Index n = x.rows(), m = x.cols();
    if (n < 3) return kNaN;
    const double nd = static_cast<double>(n);
    const double chain_means_var = m > 1 ? sample_var(Eigen::VectorXd(x.colwise().mean().transpose())) : 0.0;

    // Well-mixing chains stop Geyer's sequence after a few lags, so lags are computed
    // directly in rounds of doubling length; only a chain that needs more than
    // kMaxDirectLags gets every lag (by FFT when long).
    const auto nz = static_cast<std::size_t>(n);
    thread_local std::vector<double> acov;
    thread_local CentredChains centred;
    acov.assign(nz, 0.0);
    centred.assign(x);
    std::size_t have = 0;
    std::optional<double> tau;
    for (std::size_t want = std::min(nz, kInitialLags);; want = std::min(nz, 2 * want)) {
        if (want > kMaxDirectLags) want = nz;
        if (want == nz) have = 0;  // all lags at once, as autocovariance() computes them
        mean_autocovariance(x, centred, have, want, acov);
        have = want;
        tau = geyer_tau(acov, n, m, chain_means_var, have);
        if (tau || have == nz) break;
    }
    return static_cast<double>(m) * nd / *tau;
}

double quantile_sorted(std::span<const double> sorted, double prob) {
    const std::size_t n = sorted.size();
    if (n == 0) return kNaN;
    if (std::isnan(sorted.back()) || std::isnan(sorted.front())) return kNaN;
    // R's type 7, with R's own arithmetic order (1-based index, then (1 − h) lo + h hi).
    const double index = 1 + static_cast<double>(n - 1) * prob;
    const double lo = std::floor(index), hi = std::ceil(index);
    const double qs = sorted[static_cast<std::size_t>(lo) - 1];
    const double xhi = sorted[static_cast<std::size_t>(hi) - 1];
    if (index > lo && xhi != qs) {
        const double h = index - lo;
        return (1 - h) * qs + h * xhi;
    }
    return qs;
}

}  // namespace diag

double rhat_basic(const DrawsRef& x, bool split) {
    require_draws(x);
    return split ? diag::rhat_raw(diag::split_chains(x)) : diag::rhat_raw(x);
}

double rhat(const DrawsRef& x) {
    require_draws(x);
    if (any_nonfinite(x)) return kNaN;
    const double bulk = diag::rhat_raw(diag::z_scale(diag::split_chains(x)));
    const double tail = diag::rhat_raw(diag::z_scale(diag::split_chains(diag::fold(x))));
    if (std::isnan(bulk) || std::isnan(tail)) return kNaN;
    return std::max(bulk, tail);
}

double ess_basic(const DrawsRef& x, bool split) {
    require_draws(x);
    return split ? diag::ess_raw(diag::split_chains(x)) : diag::ess_raw(x);
}

double ess_mean(const DrawsRef& x) { return ess_basic(x, true); }

double ess_bulk(const DrawsRef& x) {
    require_draws(x);
    if (any_nonfinite(x)) return kNaN;
    return diag::ess_raw(diag::z_scale(diag::split_chains(x)));
}

double ess_quantile(const DrawsRef& x, double prob) {
    require_draws(x);
    prob = quantile_prob_for_ess(prob, x.size());
    if (undefined(x)) return kNaN;
    const std::vector<double> sorted = pooled_sorted(x);
    return ess_indicator(diag::split_chains(x), diag::quantile_sorted(sorted, prob));
}

double ess_tail(const DrawsRef& x) {
    const double lo = ess_quantile(x, 0.05), hi = ess_quantile(x, 0.95);
    if (std::isnan(lo) || std::isnan(hi)) return kNaN;
    return std::min(lo, hi);
}

double mcse_mean(const DrawsRef& x) {
    require_draws(x);
    if (any_nonfinite(x)) return kNaN;
    return pooled_sd(x) / std::sqrt(ess_mean(x));
}

double mcse_quantile(const DrawsRef& x, double prob) {
    const double ess = ess_quantile(x, prob);
    return mcse_quantile_sorted(pooled_sorted(x), prob, ess);
}

double quantile(const DrawsRef& x, double prob) {
    require_draws(x);
    if (prob < 0 || prob > 1) throw std::invalid_argument("a quantile's probability must lie in [0, 1]");
    if (x.hasNaN()) return kNaN;
    return diag::quantile_sorted(pooled_sorted(x), prob);
}

ScalarDiagnostics diagnose(const DrawsRef& x) {
    require_draws(x);
    ScalarDiagnostics d;
    d.mean = x.mean();
    d.sd = pooled_sd(x);
    const Range range = range_of(x);
    d.nonfinite = !range.finite;

    // One sort serves the quantiles, the bulk z-scale and (by a merge) the folded one: split
    // chains hold every draw when the chains' length is even.
    const Eigen::MatrixXd split = diag::split_chains(x);
    // Eigen's hasNaN goes an entry at a time: only draws that are not all finite can hold one.
    const bool has_nan = !range.finite && x.hasNaN();
    const bool one_sort = split.size() == x.size() && !has_nan;
    const diag::Ranked order = one_sort ? diag::ranked(split) : diag::Ranked{};
    std::vector<double> sorted;
    if (one_sort) {
        sorted.reserve(order.size());
        for (const auto& [value, position] : order) sorted.push_back(value);
    } else {
        sorted = pooled_sorted(x);
    }
    d.q5 = has_nan ? kNaN : diag::quantile_sorted(sorted, 0.05);
    d.q50 = has_nan ? kNaN : diag::quantile_sorted(sorted, 0.5);
    d.q95 = has_nan ? kNaN : diag::quantile_sorted(sorted, 0.95);

    if (d.nonfinite) {
        d.rhat = d.ess_bulk = d.ess_tail = d.mcse_mean = d.mcse_q5 = d.mcse_q95 = kNaN;
        return d;
    }
    d.constant = is_constant(range);

    const double median = median_sorted(sorted);
    double bulk = kNaN, tail = kNaN;
    if (one_sort) {
        // What undefined() would find without another pass: z-scores are finite, and constant
        // exactly where the values they rank are all equal; so are the split draws, whose range
        // is that of x.
        const bool z_constant = order.front().first == order.back().first;
        const Eigen::MatrixXd z_split = diag::z_scale_ranked(order, split.rows(), split.cols());
        const diag::Ranked folded = diag::ranked_fold(order, median);
        if (!z_constant) {
            bulk = diag::rhat_raw_defined(z_split);
            d.ess_bulk = diag::ess_raw_defined(z_split);
        } else {
            d.ess_bulk = kNaN;
        }
        if (folded.front().first != folded.back().first)
            tail = diag::rhat_raw_defined(diag::z_scale_ranked(folded, split.rows(), split.cols()));
    } else {
        const Eigen::MatrixXd z_split = diag::z_scale(split);
        bulk = diag::rhat_raw(z_split);
        tail = diag::rhat_raw(diag::z_scale(diag::split_chains(fold_about(x, median))));
        d.ess_bulk = diag::ess_raw(z_split);
    }
    d.rhat = std::isnan(bulk) || std::isnan(tail) ? kNaN : std::max(bulk, tail);

    const double ess_q5 = d.constant ? kNaN : ess_indicator(split, d.q5);
    const double ess_q95 = d.constant ? kNaN : ess_indicator(split, d.q95);
    d.ess_tail = std::isnan(ess_q5) || std::isnan(ess_q95) ? kNaN : std::min(ess_q5, ess_q95);
    d.mcse_q5 = mcse_quantile_sorted(sorted, 0.05, ess_q5);
    d.mcse_q95 = mcse_quantile_sorted(sorted, 0.95, ess_q95);
    d.mcse_mean = d.sd / std::sqrt(one_sort ? (d.constant ? kNaN : diag::ess_raw_defined(split)) : diag::ess_raw(split));
    return d;
}

}  // namespace vbn::inference
