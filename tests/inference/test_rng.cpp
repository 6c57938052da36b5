// Rng::normal (inference/rng.hpp), the ziggurat: its layers, and the distribution of its draws
// against the standard normal, in the bulk, in the wedges and in the tail beyond r, which take
// separate paths through the code.
#include "inference/rng.hpp"
#include "validation/sbc.hpp"

#include <boost/math/distributions/normal.hpp>
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <numbers>
#include <vector>

using vbn::inference::Rng;
using vbn::inference::rng_detail::NormalZiggurat;
using vbn::inference::rng_detail::normal_ziggurat;

namespace {

// Upper tail probability of the standard normal, P(Z > x).
double upper(double x) { return boost::math::cdf(boost::math::complement(boost::math::normal(), x)); }

// Pearson's chi-square of counts against expected counts, and its p-value (df = bins - 1).
double chi_square_p(const std::vector<long>& counts, const std::vector<double>& expected) {
    double stat = 0;
    for (std::size_t k = 0; k < counts.size(); ++k) {
        const double d = static_cast<double>(counts[k]) - expected[k];
        stat += d * d / expected[k];
    }
    return vbn::chi_square_upper_tail(stat, static_cast<int>(counts.size()) - 1);
}

}  // namespace

TEST_CASE("the ziggurat's layers have equal areas and close at the top") {
    const NormalZiggurat& z = normal_ziggurat();
    const double v = NormalZiggurat::v, r = NormalZiggurat::r;
    // Layer 0: the rectangle under f(r) up to x_0 is r f(r) plus the tail's area.
    CHECK(z.x[1] == r);
    CHECK(z.x[0] * z.f[1] == doctest::Approx(v).epsilon(1e-14));
    CHECK(r * z.f[1] + std::sqrt(std::numbers::pi / 2) * std::erfc(r / std::numbers::sqrt2) == doctest::Approx(v).epsilon(1e-13));
    for (int i = 1; i < NormalZiggurat::layers; ++i) {
        CAPTURE(i);
        CHECK(z.x[i + 1] < z.x[i]);
        CHECK(z.f[i] == std::exp(-0.5 * z.x[i] * z.x[i]));
        // Layer i spans [0, x_i] × [f(x_i), f(x_{i+1})]; the top one ends at f(0) = 1.
        CHECK(z.x[i] * (z.f[i + 1] - z.f[i]) == doctest::Approx(v).epsilon(1e-9));
    }
    CHECK(z.x[NormalZiggurat::layers] == 0);
    CHECK(z.f[NormalZiggurat::layers] == 1);
}

TEST_CASE("Rng::normal draws the standard normal: bulk, wedges and tail") {
    const long n = 16'000'000;
    Rng rng(20261124, 3);
    // 400 bins equiprobable under N(0, 1); the layers' edges x_i fall inside them, so a wrong
    // wedge test or a wrong layer width would show as a bin's excess or deficit.
    const int bins = 400;
    const boost::math::normal phi;
    std::vector<double> edges(bins - 1);
    for (int k = 1; k < bins; ++k) edges[static_cast<std::size_t>(k - 1)] = boost::math::quantile(phi, static_cast<double>(k) / bins);
    std::vector<long> counts(bins, 0);
    // The tail beyond r in four bins of its own, by |z|.
    const double r = NormalZiggurat::r;
    const double tail_edges[] = {r, r + 0.1, r + 0.25, r + 0.5};
    std::vector<long> tail(4, 0);
    double sum = 0, sum2 = 0, sum4 = 0;
    long negative = 0, nonfinite = 0;
    for (long t = 0; t < n; ++t) {
        const double z = rng.normal();
        nonfinite += !std::isfinite(z);
        sum += z;
        sum2 += z * z;
        sum4 += z * z * z * z;
        negative += z < 0;
        counts[static_cast<std::size_t>(std::upper_bound(edges.begin(), edges.end(), z) - edges.begin())]++;
        const double a = std::abs(z);
        if (a > r) tail[static_cast<std::size_t>(std::upper_bound(std::begin(tail_edges), std::end(tail_edges), a) - std::begin(tail_edges) - 1)]++;
    }
    REQUIRE(nonfinite == 0);
    const double nd = static_cast<double>(n);
    // Moments within 4 standard errors: var(z) = 1, var(z²) = 2, var(z⁴) = 96.
    CHECK(std::abs(sum / nd) < 4 * std::sqrt(1 / nd));
    CHECK(std::abs(sum2 / nd - 1) < 4 * std::sqrt(2 / nd));
    CHECK(std::abs(sum4 / nd - 3) < 4 * std::sqrt(96 / nd));
    CHECK(std::abs(static_cast<double>(negative) / nd - 0.5) < 4 * std::sqrt(0.25 / nd));

    const std::vector<double> expected(bins, nd / bins);
    const double p_bulk = chi_square_p(counts, expected);
    MESSAGE("chi-square over 400 equiprobable bins: p = ", p_bulk);
    CHECK(p_bulk > 1e-4);

    // The tail: about 4,100 draws beyond r = 3.654 of 16 million, spread as the normal's.
    std::vector<double> tail_expected(4);
    for (int k = 0; k < 4; ++k) {
        const double hi = k < 3 ? upper(tail_edges[k + 1]) : 0.0;
        tail_expected[static_cast<std::size_t>(k)] = 2 * nd * (upper(tail_edges[k]) - hi);
    }
    long tail_total = 0;
    for (long c : tail) tail_total += c;
    const double tail_mean = 2 * nd * upper(r);
    MESSAGE("beyond r: ", tail_total, " draws, expected ", tail_mean);
    CHECK(std::abs(static_cast<double>(tail_total) - tail_mean) < 4 * std::sqrt(tail_mean));
    const double p_tail = chi_square_p(tail, tail_expected);
    MESSAGE("the tail's four bins: p = ", p_tail);
    CHECK(p_tail > 1e-4);
}

TEST_CASE("Rng::normal: the same seed and stream give the same draws, other streams others") {
    Rng a(7, 1), b(7, 1), c(7, 2);
    int same = 0, differ = 0;
    for (int i = 0; i < 1000; ++i) {
        const double x = a.normal(), y = b.normal(), w = c.normal();
        same += x == y;
        differ += x != w;
    }
    CHECK(same == 1000);
    CHECK(differ == 1000);
}
