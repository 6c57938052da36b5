// Convergence diagnostics: agreement with R's posterior package on committed fixtures, and
// known cases (iid draws, AR(1) chains, stuck chains, degenerate input).
#include "inference/diagnostics.hpp"
#include "inference/rng.hpp"

#include "tests/inference/fixture_csv.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

using namespace vbn::inference;

namespace {

const std::string kFixtures = vbn::test::fixture_dir("");
using vbn::test::parse_value;
using vbn::test::split_commas;

// A fixture: one column per chain, one row per iteration.
Eigen::MatrixXd read_draws(const std::string& name) {
    std::ifstream in(kFixtures + name + ".csv");
    REQUIRE_MESSAGE(in.good(), "missing fixture " << name);
    std::string line;
    std::getline(in, line);
    const auto chains = split_commas(line).size();
    std::vector<std::vector<double>> rows;
    while (std::getline(in, line)) {
        if (line.empty()) continue;
        std::vector<double> row;
        for (const auto& f : split_commas(line)) row.push_back(parse_value(f));
        REQUIRE(row.size() == chains);
        rows.push_back(row);
    }
    Eigen::MatrixXd x(static_cast<Eigen::Index>(rows.size()), static_cast<Eigen::Index>(chains));
    for (std::size_t i = 0; i < rows.size(); ++i)
        for (std::size_t j = 0; j < chains; ++j) x(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j)) = rows[i][j];
    return x;
}

struct Expected {
    std::string name;
    std::map<std::string, double> values;
};

std::vector<Expected> read_expected() {
    std::ifstream in(kFixtures + "expected.csv");
    REQUIRE(in.good());
    std::string line;
    std::vector<std::string> header;
    std::vector<Expected> out;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        const auto fields = split_commas(line);
        if (header.empty()) {
            header = fields;
            continue;
        }
        REQUIRE(fields.size() == header.size());
        Expected e{fields[0], {}};
        for (std::size_t k = 1; k < fields.size(); ++k) e.values[header[k]] = parse_value(fields[k]);
        out.push_back(e);
    }
    return out;
}

// Relative difference, with NaN matching NaN (posterior's NA) and infinities matching.
double rel_diff(double ours, double theirs) {
    if (std::isnan(theirs)) return std::isnan(ours) ? 0.0 : std::numeric_limits<double>::infinity();
    if (std::isinf(theirs)) return ours == theirs ? 0.0 : std::numeric_limits<double>::infinity();
    if (theirs == 0) return std::abs(ours) < 1e-12 ? 0.0 : std::numeric_limits<double>::infinity();
    return std::abs(ours - theirs) / std::abs(theirs);
}

Eigen::MatrixXd iid_normal(Rng& rng, Eigen::Index n, Eigen::Index m) {
    Eigen::MatrixXd x(n, m);
    for (Eigen::Index j = 0; j < m; ++j)
        for (Eigen::Index i = 0; i < n; ++i) x(i, j) = rng.normal();
    return x;
}

// Stationary AR(1) with unit marginal variance.
Eigen::MatrixXd ar1(Rng& rng, Eigen::Index n, Eigen::Index m, double rho) {
    Eigen::MatrixXd x(n, m);
    const double s = std::sqrt(1 - rho * rho);
    for (Eigen::Index j = 0; j < m; ++j) {
        x(0, j) = rng.normal();
        for (Eigen::Index i = 1; i < n; ++i) x(i, j) = rho * x(i - 1, j) + s * rng.normal();
    }
    return x;
}

struct MeanSe {
    double mean, se;
};
MeanSe mean_and_se(const std::vector<double>& v) {
    double m = 0;
    for (double a : v) m += a;
    m /= static_cast<double>(v.size());
    double ss = 0;
    for (double a : v) ss += (a - m) * (a - m);
    const double sd = std::sqrt(ss / static_cast<double>(v.size() - 1));
    return {m, sd / std::sqrt(static_cast<double>(v.size()))};
}

}  // namespace

TEST_CASE("diagnostics agree with R's posterior package to 1% on every fixture") {
    const auto expected = read_expected();
    REQUIRE(expected.size() >= 15);
    double worst = 0;
    std::string worst_at;
    for (const auto& e : expected) {
        CAPTURE(e.name);
        const Eigen::MatrixXd x = read_draws(e.name);
        const ScalarDiagnostics d = diagnose(x);
        const std::map<std::string, double> ours{
            {"rhat", d.rhat},           {"ess_bulk", d.ess_bulk}, {"ess_tail", d.ess_tail},
            {"mcse_mean", d.mcse_mean}, {"mcse_q5", d.mcse_q5},   {"mcse_q95", d.mcse_q95},
            {"mean", d.mean},           {"sd", d.sd},             {"q5", d.q5},
            {"q50", d.q50},             {"q95", d.q95},
        };
        for (const auto& [key, theirs] : e.values) {
            CAPTURE(key);
            REQUIRE(ours.count(key) == 1);
            const double r = rel_diff(ours.at(key), theirs);
            CHECK_MESSAGE(r <= 0.01, "ours " << ours.at(key) << ", posterior " << theirs);
            if (r > worst) {
                worst = r;
                worst_at = e.name + " " + key;
            }
        }
        // The one-function-per-diagnostic API gives the same numbers as diagnose().
        CHECK(rel_diff(rhat(x), d.rhat) == 0);
        CHECK(rel_diff(ess_bulk(x), d.ess_bulk) == 0);
        CHECK(rel_diff(ess_tail(x), d.ess_tail) == 0);
        CHECK(rel_diff(mcse_mean(x), d.mcse_mean) <= 1e-12);
        CHECK(rel_diff(mcse_quantile(x, 0.05), d.mcse_q5) == 0);
        CHECK(rel_diff(quantile(x, 0.95), d.q95) == 0);
    }
    MESSAGE("largest relative difference from posterior: " << worst << " (" << worst_at << ")");
}

TEST_CASE("iid draws: bulk-ESS is about the number of draws") {
    // The ESS estimate of iid draws scatters around S; its spread is measured here over
    // independent replicates, and the mean must sit within 4 standard errors of S.
    Rng rng(20240601, 1);
    const Eigen::Index n = 500, m = 4;
    std::vector<double> ratio;
    for (int r = 0; r < 200; ++r) ratio.push_back(ess_bulk(iid_normal(rng, n, m)) / static_cast<double>(n * m));
    const auto [mean, se] = mean_and_se(ratio);
    MESSAGE("iid: mean ESS/S = " << mean << " ± " << se);
    CHECK(std::abs(mean - 1) < 4 * se + 0.01);
    // A single fixed-seed run lies within 4 sd of the replicates' spread.
    const double sd = se * std::sqrt(static_cast<double>(ratio.size()));
    Rng one(7, 0);
    CHECK(std::abs(ess_bulk(iid_normal(one, n, m)) / static_cast<double>(n * m) - 1) < 4 * sd);
}

TEST_CASE("AR(1) chains: ESS of the mean is about S (1 - rho) / (1 + rho)") {
    Rng rng(20240602, 2);
    const Eigen::Index n = 1000, m = 4;
    for (double rho : {0.5, 0.9, -0.3}) {
        CAPTURE(rho);
        const double expected = (1 - rho) / (1 + rho);
        std::vector<double> ratio;
        for (int r = 0; r < 100; ++r) ratio.push_back(ess_mean(ar1(rng, n, m, rho)) / static_cast<double>(n * m));
        const auto [mean, se] = mean_and_se(ratio);
        MESSAGE("AR(1) rho " << rho << ": mean ESS/S = " << mean << " ± " << se << ", theory " << expected);
        // Geyer's truncation biases the estimate by a few percent at this length; the band
        // allows that plus 4 standard errors of the replicate mean.
        CHECK(std::abs(mean / expected - 1) < 4 * se / expected + 0.05);
    }
}

TEST_CASE("chains stuck at different places give R-hat far above 1") {
    Rng rng(11, 3);
    Eigen::MatrixXd x = iid_normal(rng, 400, 4);
    CHECK(rhat(x) < 1.01);
    x.col(2).array() += 3;
    x.col(3).array() += 6;
    CHECK(rhat(x) > 1.5);
    CHECK(ess_bulk(x) < 50);
}

TEST_CASE("one chain with a different scale: the folded (tail) R-hat sees it, the classic one does not") {
    Rng rng(12, 4);
    Eigen::MatrixXd x = iid_normal(rng, 1000, 4);
    x.col(3) *= 4;
    CHECK(rhat_basic(x) < 1.01);
    CHECK(rhat(x) > 1.1);
}

TEST_CASE("a single chain is split in two and diagnosed") {
    Rng rng(13, 5);
    const Eigen::MatrixXd x = iid_normal(rng, 1001, 1);
    const auto d = diagnose(x);
    CHECK(std::isfinite(d.rhat));
    CHECK(d.rhat < 1.05);
    CHECK(d.ess_bulk > 600);
    CHECK(d.ess_bulk < 1500);
}

TEST_CASE("constant draws: R-hat and ESS are NaN with a flag, quantiles are the constant") {
    const Eigen::MatrixXd x = Eigen::MatrixXd::Constant(50, 3, 2.5);
    const auto d = diagnose(x);
    CHECK(d.constant);
    CHECK_FALSE(d.nonfinite);
    CHECK(std::isnan(d.rhat));
    CHECK(std::isnan(d.ess_bulk));
    CHECK(std::isnan(d.ess_tail));
    CHECK(std::isnan(d.mcse_mean));
    CHECK(d.mean == 2.5);
    CHECK(d.sd == 0);
    CHECK(d.q5 == 2.5);
    CHECK(d.q95 == 2.5);
}

TEST_CASE("very short chains give NaN instead of failing") {
    for (Eigen::Index n : {1, 2, 3, 4, 5}) {
        CAPTURE(n);
        Eigen::MatrixXd x(n, 2);
        for (Eigen::Index i = 0; i < n; ++i) {
            x(i, 0) = 0.3 * static_cast<double>(i) - 1;
            x(i, 1) = std::sin(static_cast<double>(i + 1));
        }
        const auto d = diagnose(x);
        CHECK(std::isnan(d.ess_bulk));  // split chains shorter than 3 draws
        if (n < 4) CHECK(std::isnan(d.rhat));  // split chains of one draw have no variance
        CHECK(std::isfinite(d.mean));
        CHECK(std::isfinite(d.q50));
    }
    const Eigen::MatrixXd one = Eigen::MatrixXd::Constant(1, 1, 4.0);
    CHECK(diagnose(one).q95 == 4.0);
    CHECK(std::isnan(diagnose(one).sd));
}

TEST_CASE("non-finite draws make every diagnostic NaN and raise the flag") {
    Rng rng(14, 6);
    Eigen::MatrixXd x = iid_normal(rng, 100, 2);
    x(17, 1) = std::numeric_limits<double>::infinity();
    auto d = diagnose(x);
    CHECK(d.nonfinite);
    CHECK(std::isnan(d.rhat));
    CHECK(std::isnan(d.ess_bulk));
    CHECK(std::isnan(d.mcse_q95));
    x(17, 1) = -std::numeric_limits<double>::infinity();
    d = diagnose(x);
    CHECK(d.nonfinite);
    CHECK(std::isnan(d.ess_tail));
    CHECK(std::isnan(diag::ess_raw(x)));
    x(17, 1) = std::numeric_limits<double>::quiet_NaN();
    d = diagnose(x);
    CHECK(d.nonfinite);
    CHECK(std::isnan(d.q50));
}

TEST_CASE("empty draws are rejected with a message") {
    const Eigen::MatrixXd empty(0, 4);
    CHECK_THROWS_WITH_AS(diagnose(empty), doctest::Contains("at least one draw"), std::invalid_argument);
    CHECK_THROWS_AS(rhat(Eigen::MatrixXd(10, 0)), std::invalid_argument);
}

TEST_CASE("FFT and direct autocovariances agree, and match a hand-computed series") {
    Rng rng(15, 7);
    for (std::size_t n : {2u, 7u, 129u, 300u, 1024u, 1500u}) {
        CAPTURE(n);
        std::vector<double> x(n), a(n), b(n);
        x[0] = rng.normal() + 2;
        for (std::size_t i = 1; i < n; ++i) x[i] = 0.7 * x[i - 1] + rng.normal() + 0.6;
        diag::autocovariance_direct(x, a);
        diag::autocovariance_fft(x, b);
        for (std::size_t k = 0; k < n; ++k) CHECK(std::abs(a[k] - b[k]) <= 1e-12 * a[0]);
    }
    // The twiddle factors are kept per transform size: series of other lengths in between
    // leave the same series' autocovariances bit for bit the same.
    std::vector<double> x(3000), first(3000), again(3000), other(100), scratch(100);
    for (double& v : x) v = rng.normal();
    for (double& v : other) v = rng.normal();
    diag::autocovariance_fft(x, first);
    diag::autocovariance_fft(other, scratch);
    diag::autocovariance_fft(x, again);
    CHECK(first == again);
    // Alternating ±1 has mean 0 and γ_k = (−1)^k (n − k) / n.
    const std::size_t n = 300;
    std::vector<double> alt(n), g(n);
    for (std::size_t i = 0; i < n; ++i) alt[i] = i % 2 == 0 ? 1.0 : -1.0;
    diag::autocovariance(alt, g);
    for (std::size_t k = 0; k < n; ++k) {
        const double expected = (k % 2 == 0 ? 1.0 : -1.0) * static_cast<double>(n - k) / static_cast<double>(n);
        CHECK(g[k] == doctest::Approx(expected).epsilon(1e-12));
    }
    std::vector<double> c(200, 3.0), gc(200, 1.0);
    diag::autocovariance(c, gc);
    for (double v : gc) CHECK(v == 0.0);
}

TEST_CASE("split chains drop the middle draw of an odd length; z-scores are symmetric and share ties") {
    Eigen::MatrixXd x(5, 1);
    x << 1, 2, 3, 4, 5;
    const Eigen::MatrixXd s = diag::split_chains(x);
    REQUIRE(s.rows() == 2);
    REQUIRE(s.cols() == 2);
    CHECK(s(0, 0) == 1);
    CHECK(s(1, 0) == 2);
    CHECK(s(0, 1) == 4);
    CHECK(s(1, 1) == 5);

    Eigen::MatrixXd y(3, 2);
    y << 1, 7, 2, 2, 9, 4;
    const Eigen::MatrixXd z = diag::z_scale(y);
    CHECK(z(1, 0) == z(1, 1));                           // the two 2s tie
    CHECK(z(0, 0) == doctest::Approx(-z(2, 0)));         // smallest and largest mirror
    CHECK(z(0, 0) < z(1, 0));

    // Negative and positive zero are equal values, so they tie; negative values rank below.
    Eigen::MatrixXd w(2, 2);
    w << -0.0, -1e-300, 0.0, -3.0;
    const Eigen::MatrixXd zw = diag::z_scale(w);
    CHECK(zw(0, 0) == zw(1, 0));
    CHECK(zw(1, 1) < zw(0, 1));
    CHECK(zw(0, 1) < zw(0, 0));
}

// The ranking sorts 32 bits of each key below those all draws share, then the runs that agree
// in them by the whole key: z must rise with x and tie where x ties, whichever bits differ.
TEST_CASE("z-scores follow the order of the draws wherever their bits differ") {
    Rng rng(20261123, 1);
    auto check_order = [](const Eigen::MatrixXd& x) {
        const Eigen::MatrixXd z = diag::z_scale(x);
        for (Eigen::Index a = 0; a < x.size(); ++a)
            for (Eigen::Index b = 0; b < x.size(); ++b) {
                if (x.data()[a] < x.data()[b]) REQUIRE(z.data()[a] < z.data()[b]);
                if (x.data()[a] == x.data()[b]) REQUIRE(z.data()[a] == z.data()[b]);
            }
    };
    Eigen::MatrixXd x(150, 4);
    for (const double offset : {0.0, 0.7, 1e6, 1e15}) {
        INFO("offset " << offset);
        for (Eigen::Index i = 0; i < x.size(); ++i)  // a tenth repeat the previous draw
            x.data()[i] = i > 0 && rng.uniform() < 0.1 ? x.data()[i - 1] : offset + rng.normal();
        check_order(x);
    }
    // Neighbouring doubles (a handful of last bits differ) among a few of either sign far away,
    // so that the bits sorted first are the same for all the neighbours; tiny values.
    for (Eigen::Index i = 0; i < x.size(); ++i) {
        x.data()[i] = 1.0;
        for (int k = static_cast<int>(rng.uniform() * 8); k > 0; --k) x.data()[i] = std::nextafter(x.data()[i], 2.0);
        if (i % 10 == 0) x.data()[i] = 1e300 * rng.normal();
    }
    check_order(x);
    for (Eigen::Index i = 0; i < x.size(); ++i) x.data()[i] = 1e-300 * rng.normal();
    check_order(x);
}

// diagnose() ranks the split draws once and derives the quantiles and the folded ranking from
// that sort; the building blocks rank each on its own. Both must give the same bits, with
// the ties a Metropolis chain makes (repeated values, some straddling the median) and with
// an odd chain length, where the split drops draws and diagnose sorts separately.
TEST_CASE("diagnose where a transformed draw is constant: folded draws, and an indicator at a quantile") {
    Rng rng(20261124, 4);
    // ±1 in equal numbers: the median is 0, so every |x − median| is 1 and the folded R-hat
    // (so R-hat) is NaN, while the bulk ones are defined.
    Eigen::MatrixXd x(200, 4);
    for (Eigen::Index i = 0; i < x.size(); ++i) x.data()[i] = i % 2 == 0 ? 1.0 : -1.0;
    for (Eigen::Index i = x.size() - 1; i > 0; --i) std::swap(x.data()[i], x.data()[static_cast<Eigen::Index>(rng.uniform() * static_cast<double>(i + 1))]);
    ScalarDiagnostics d = diagnose(x);
    CHECK(std::isnan(d.rhat));
    CHECK(std::isnan(rhat(x)));
    CHECK(d.ess_bulk == ess_bulk(x));
    CHECK(std::isfinite(d.ess_bulk));
    // Its 95% quantile is 1, the largest value: the tail-ESS is NaN too.
    CHECK(std::isnan(d.ess_tail));
    CHECK(std::isnan(ess_tail(x)));
    // 6% of the draws at the largest value: the 95% quantile is that value, I(x ≤ q95) is all
    // ones, and the tail-ESS is NaN.
    for (Eigen::Index i = 0; i < x.size(); ++i) x.data()[i] = i % 50 < 3 ? 1.0 : rng.uniform() - 1.0;
    d = diagnose(x);
    CHECK(d.q95 == 1.0);
    CHECK(std::isnan(d.ess_tail));
    CHECK(std::isnan(ess_tail(x)));
    CHECK(d.ess_bulk == ess_bulk(x));
    CHECK(d.rhat == rhat(x));
    CHECK(std::isfinite(d.ess_bulk));
}

TEST_CASE("diagnose gives the building blocks' R-hat and ESS, bit for bit, with ties and odd lengths") {
    Rng rng(20261122, 4);
    for (const Eigen::Index n : {200, 201}) {
        Eigen::MatrixXd x(n, 4);
        for (Eigen::Index j = 0; j < x.cols(); ++j) {
            // The last chain is three times wider, so the folded (tail) R-hat is the larger.
            const double scale = j == 3 ? 3 : 1;
            double v = 0;
            for (Eigen::Index i = 0; i < n; ++i) {
                if (rng.uniform() < 0.6) v = std::round(4 * scale * rng.normal()) / 4;  // else repeat: a rejection
                x(i, j) = v;
            }
        }
        const ScalarDiagnostics d = diagnose(x);
        const Eigen::MatrixXd z_bulk = diag::z_scale(diag::split_chains(x));
        const double bulk = diag::rhat_raw(z_bulk);
        const double tail = diag::rhat_raw(diag::z_scale(diag::split_chains(diag::fold(x))));
        INFO("n = " << n);
        REQUIRE(tail > bulk);
        CHECK(d.rhat == tail);
        CHECK(d.ess_bulk == diag::ess_raw(z_bulk));
        CHECK(d.q50 == diag::quantile_sorted(
                           [&] {
                               std::vector<double> v(x.data(), x.data() + x.size());
                               std::sort(v.begin(), v.end());
                               return v;
                           }(),
                           0.5));
    }
}
