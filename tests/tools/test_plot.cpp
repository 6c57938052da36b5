// Plots: the data behind the pictures (histogram bins, rank counts, the 2-D kernel density,
// its highest-density levels, the choice of pairs), the files `write_plots` leaves, its
// message when gnuplot is missing.
#include "inference/rng.hpp"
#include "runtime/error.hpp"
#include "tools/vbn/plot.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numbers>
#include <sstream>
#include <string>

#include <unistd.h>

using namespace vbn;
using namespace vbn::plot;
namespace fs = std::filesystem;

namespace {

struct TempDir {
    fs::path path;
    explicit TempDir(const std::string& tag) {
        path = fs::temp_directory_path() / fmt::format("vbn-test-plot-{}-{}", tag, ::getpid());
        fs::remove_all(path);
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
};

Eigen::VectorXd normals(inference::Rng& rng, long n, double mean = 0, double sd = 1) {
    Eigen::VectorXd x(n);
    for (long i = 0; i < n; ++i) x[i] = mean + sd * rng.normal();
    return x;
}

std::string slurp(const fs::path& p) {
    std::ifstream f(p);
    return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST_CASE("histogram: equal bins over the range, densities integrate to one, non-finite values dropped") {
    Eigen::VectorXd x(12);
    x << 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity();
    const Histogram h = histogram(x, 3);
    CHECK(h.dropped == 2);
    CHECK(h.lo == 0);
    CHECK(h.width == doctest::Approx(3.0));
    REQUIRE(h.count.size() == 3);
    // [0,3) holds 0,1,2; [3,6) holds 3,4,5; the last bin [6,9] includes its right end.
    CHECK(h.count[0] == 3);
    CHECK(h.count[1] == 3);
    CHECK(h.count[2] == 4);
    double area = 0;
    for (double d : h.density) area += d * h.width;
    CHECK(area == doctest::Approx(1.0));
    CHECK(h.density[2] == doctest::Approx(4.0 / (10 * 3.0)));

    // Freedman-Diaconis on 4000 normal draws: width 2 IQR n^(-1/3) = 2 * 1.349 / 15.87 = 0.17,
    // about 7.5 / 0.17 = 44 bins, inside the clamp [20, 60].
    inference::Rng rng(5, 0);
    const Histogram fd = histogram(normals(rng, 4000));
    CHECK(fd.count.size() >= 30);
    CHECK(fd.count.size() <= 60);
    long total = 0;
    for (long c : fd.count) total += c;
    CHECK(total == 4000);

    // A constant sample: twenty bins of width 1/20 over [2, 3], all draws in one of the middle two.
    const Histogram c = histogram(Eigen::VectorXd::Constant(50, 2.5));
    REQUIRE(c.count.size() == 20);
    CHECK(c.lo == doctest::Approx(2.0));
    CHECK(c.width == doctest::Approx(0.05));
    CHECK(c.count[9] + c.count[10] == 50);
}

TEST_CASE("rank counts: pooled ranks, ties averaged, counted per chain") {
    // Ranks 1..4: chain 1 holds ranks 1 and 4, chain 2 ranks 2 and 3; two bins split them.
    Eigen::MatrixXd k = rank_counts({Eigen::Vector2d(1, 4), Eigen::Vector2d(2, 3)}, 2);
    CHECK(k(0, 0) == 1);
    CHECK(k(1, 0) == 1);
    CHECK(k(0, 1) == 1);
    CHECK(k(1, 1) == 1);
    // Three tied values share rank 2 (bin 0 of 2); the largest has rank 4 (bin 1).
    k = rank_counts({Eigen::Vector2d(1, 1), Eigen::Vector2d(1, 2)}, 2);
    CHECK(k(0, 0) == 2);
    CHECK(k(1, 0) == 0);
    CHECK(k(0, 1) == 1);
    CHECK(k(1, 1) == 1);

    // A chain stuck above the others takes the top quarter of the ranks: all of it in the
    // top five of twenty bins, none elsewhere.
    inference::Rng rng(8, 0);
    std::vector<Eigen::VectorXd> chains{normals(rng, 500), normals(rng, 500), normals(rng, 500), normals(rng, 500, 50)};
    k = rank_counts(chains, 20);
    CHECK(k.col(3).tail(5).sum() == 500);
    CHECK(k.col(3).head(15).sum() == 0);
    for (int c = 0; c < 4; ++c) CHECK(k.col(c).sum() == 500);
    CHECK_THROWS(rank_counts(chains, 0));
}

TEST_CASE("kde2d: its mean is the data density smoothed by the kernel, and it integrates to one") {
    // For N(0, I) data the expected estimate is N(0, (1 + h²) I) per axis, h = sd n^(-1/6).
    // Its Monte Carlo sd at a point is about sqrt(f / (4 π n hx hy)); the check allows 5 of them.
    inference::Rng rng(21, 0);
    const long n = 4000;
    const Eigen::VectorXd x = normals(rng, n), y = normals(rng, n);
    const Grid2 g = kde2d(x, y, 61);
    const double hx = kde_bandwidth(x), hy = kde_bandwidth(y);
    // For normal data the robust scale is the sd, up to sampling error.
    const double sx = std::sqrt((x.array() - x.mean()).square().sum() / (n - 1));
    CHECK(hx == doctest::Approx(sx * std::pow(n, -1.0 / 6)).epsilon(0.05));
    int checked = 0;
    for (Eigen::Index i = 0; i < g.x.size(); i += 6)
        for (Eigen::Index j = 0; j < g.y.size(); j += 6) {
            const double vx = 1 + hx * hx, vy = 1 + hy * hy;
            const double expected = std::exp(-0.5 * (g.x[i] * g.x[i] / vx + g.y[j] * g.y[j] / vy)) / (2 * std::numbers::pi * std::sqrt(vx * vy));
            if (expected < 0.01) continue;
            const double mc_sd = std::sqrt(expected / (4 * std::numbers::pi * n * hx * hy));
            CHECK(std::abs(g.density(i, j) - expected) < 5 * mc_sd);
            ++checked;
        }
    CHECK(checked >= 15);
    const double cell = (g.x[1] - g.x[0]) * (g.y[1] - g.y[0]);
    CHECK(g.density.sum() * cell == doctest::Approx(1.0).epsilon(0.01));
    // The grid covers the sample with three bandwidths to spare.
    CHECK(g.x[0] == doctest::Approx(x.minCoeff() - 3 * hx));
    CHECK(g.y[g.y.size() - 1] == doctest::Approx(y.maxCoeff() + 3 * hy));
    CHECK_THROWS(kde2d(x.head(1), y.head(1)));
}

TEST_CASE("the kernel bandwidth uses the interquartile range when modes are far apart") {
    // Two equal modes at ±5, sd 0.5: the sd (about 5) is below IQR / 1.349 (about 10 / 1.349
    // = 7.4), so it is used.
    inference::Rng rng(6, 0);
    Eigen::VectorXd x(2000);
    for (int i = 0; i < 2000; ++i) x[i] = (i % 2 == 0 ? -5 : 5) + 0.5 * rng.normal();
    const double sd = std::sqrt((x.array() - x.mean()).square().sum() / 1999);
    CHECK(kde_bandwidth(x) == doctest::Approx(std::min(sd, 10.0 / 1.349) * std::pow(2000.0, -1.0 / 6)).epsilon(0.03));
    // Three modes, most of the mass in the middle one: the IQR is narrow and wins.
    for (int i = 0; i < 2000; ++i) x[i] = (i % 10 == 0 ? -6 : i % 10 == 1 ? 6 : 0) + 0.5 * rng.normal();
    const double sd3 = std::sqrt((x.array() - x.mean()).square().sum() / 1999);
    CHECK(kde_bandwidth(x) < 0.5 * sd3 * std::pow(2000.0, -1.0 / 6));
    CHECK(kde_bandwidth(Eigen::VectorXd::Constant(10, 3.0)) > 0);
}

TEST_CASE("hpd levels of a standard bivariate normal are (1 - p) / 2π") {
    Grid2 g;
    g.x = Eigen::VectorXd::LinSpaced(301, -7, 7);
    g.y = g.x;
    g.density.resize(301, 301);
    for (int i = 0; i < 301; ++i)
        for (int j = 0; j < 301; ++j) g.density(i, j) = std::exp(-0.5 * (g.x[i] * g.x[i] + g.y[j] * g.y[j])) / (2 * std::numbers::pi);
    const auto levels = hpd_levels(g, {0.5, 0.8, 0.95});
    REQUIRE(levels.size() == 3);
    for (std::size_t k = 0; k < 3; ++k) {
        const double p = std::vector<double>{0.5, 0.8, 0.95}[k];
        CHECK(levels[k] == doctest::Approx((1 - p) / (2 * std::numbers::pi)).epsilon(0.01));
    }
    CHECK(levels[0] > levels[1]);
    CHECK(levels[1] > levels[2]);
}

TEST_CASE("pairs: every pair of a small model, the most correlated pairs of a large one") {
    inference::Rng rng(4, 0);
    Eigen::MatrixXd small(200, 3);
    for (int k = 0; k < 3; ++k) small.col(k) = normals(rng, 200);
    const auto all = choose_pairs({small});
    CHECK(all == std::vector<std::pair<int, int>>{{0, 1}, {0, 2}, {1, 2}});

    Eigen::MatrixXd big(1000, 8);
    for (int k = 0; k < 8; ++k) big.col(k) = normals(rng, 1000);
    big.col(5) = big.col(1) + 0.2 * normals(rng, 1000);  // strongly correlated pairs
    big.col(7) = -big.col(2) + 0.5 * normals(rng, 1000);
    big.col(4) = big.col(0) + 1.0 * normals(rng, 1000);
    const auto some = choose_pairs({big.topRows(500), big.bottomRows(500)});
    CHECK(some.size() == 6);
    const auto has = [&](int a, int b) { return std::find(some.begin(), some.end(), std::make_pair(a, b)) != some.end(); };
    CHECK(has(1, 5));
    CHECK(has(2, 7));
    CHECK(has(0, 4));
}

TEST_CASE("the variational fit recorded in CSV comments is read back, or ignored when it does not fit") {
    const auto [m, s] = parse_vb_comments("0.5, -1.25e-3, 2", "0.1, 0.2, 0.3", 3);
    CHECK(m == std::vector<double>{0.5, -1.25e-3, 2});
    CHECK(s == std::vector<double>{0.1, 0.2, 0.3});
    CHECK(parse_vb_comments("0.5, 1", "0.1, 0.2", 3).first.empty());
    CHECK(parse_vb_comments("0.5, x, 1", "0.1, 0.2, 0.3", 3).first.empty());
}

TEST_CASE("write_plots leaves data, scripts and PNG files; without gnuplot it says what to install") {
    inference::Rng rng(2, 0);
    PlotInput in;
    in.title = "test_model";
    in.names = {"w[1]", "w[2]", "b"};
    for (int c = 0; c < 2; ++c) {
        Eigen::MatrixXd d(300, 3);
        for (int k = 0; k < 3; ++k) d.col(k) = normals(rng, 300, k);
        in.chains.push_back(d);
    }
    in.vb_mean = {0, 1, 2};
    in.vb_sd = {1, 1, 1};

    {
        TempDir dir("nognuplot");
        struct PathGuard {
            std::string saved = std::getenv("PATH") ? std::getenv("PATH") : "";
            PathGuard() { ::setenv("PATH", "/nonexistent-dir", 1); }
            ~PathGuard() { ::setenv("PATH", saved.c_str(), 1); }
        };
        {
            const PathGuard no_gnuplot;
            try {
                write_plots(in, dir.path.string());
                FAIL("expected an error without gnuplot");
            } catch (const Error& e) {
                CHECK(e.kind() == ErrorKind::usage);
                CHECK(std::string(e.what()).find("gnuplot-nox") != std::string::npos);
            }
        }
        // The scripts and data are there for later.
        for (const char* f : {"draws.dat", "density.dat", "ranks.dat", "trace.gp", "density.gp", "pairs.gp", "rank.gp", "pair_3.dat"})
            CHECK_MESSAGE(fs::exists(dir.path / f), f);
        // draws.dat: a header, then 300 rows per chain in two blocks.
        const std::string draws = slurp(dir.path / "draws.dat");
        CHECK(draws.rfind("# iteration w.1 w.2 b\n# chain 1\n1 ", 0) == 0);
        CHECK(draws.find("\n\n\n# chain 2\n1 ") != std::string::npos);
        // The density script draws the variational Gaussians with the given means and sds.
        const std::string density = slurp(dir.path / "density.gp");
        CHECK(density.find("gauss(x, 2, 1) with lines") != std::string::npos);
        CHECK(density.find("set title 'w[1]'") != std::string::npos);
    }
    if (find_gnuplot().empty()) {
        MESSAGE("gnuplot not installed: the pictures themselves are not drawn here");
        return;
    }
    TempDir dir("gnuplot");
    const PlotFiles made = write_plots(in, dir.path.string());
    std::vector<std::string> names;
    for (const auto& i : made.images) names.push_back(fs::path(i).filename().string());
    CHECK(names == std::vector<std::string>{"density_1.png", "pairs_1.png", "rank_1.png", "trace_1.png"});
    for (const auto& i : made.images) {
        std::ifstream f(i, std::ios::binary);
        char magic[4] = {};
        f.read(magic, 4);
        CHECK(std::string(magic + 1, 3) == "PNG");
        CHECK(fs::file_size(i) > 5000);
    }
    CHECK_FALSE(fs::exists(dir.path / "pairs.log"));  // gnuplot had nothing to complain about
}
