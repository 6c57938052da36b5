// The paper's Fig. 14-16 (Variational MCMC Sec. 5.2) on the multimodal model: the exact
// posterior on a grid and 5,000 draws of one chain each of random-walk Metropolis from a poor
// start (Fig. 14), naive VarMCMC (varmh, Fig. 15) and VarMixMCMC (varmix, Fig. 16), plus
// the mass each puts in each mode against the grid's; then every method's errors against
// the grid with four long chains.
//
//   build/bench/multimodal_figures OUTDIR [NAME ...]     (default names: multimodal bimodal)
//
// Run from the source tree; reads examples/paper/NAME.{vbn,csv}. Writes OUTDIR/NAME_grid.dat
// (x y density/top, gnuplot grid blocks), OUTDIR/NAME_vb.dat (the VB mean and 1/2-sd
// ellipse), OUTDIR/NAME_METHOD.dat (draws) and prints a table; bench/multimodal_figures.gp
// plots them (bench/multimodal_figures.sh does both).
#include "inference/chains.hpp"
#include "inference/diagnostics.hpp"
#include "inference/random_walk.hpp"
#include "runtime/data/dataset.hpp"
#include "runtime/sampling/fit.hpp"
#include "validation/grid_posterior.hpp"
#include "runtime/data/model.hpp"
#include "runtime/target/target.hpp"

#include <Eigen/Eigenvalues>
#include <fmt/format.h>
#include <fmt/os.h>

#include <cmath>
#include <cstdlib>
#include <numbers>
#include <string>
#include <vector>

using namespace vbn;

namespace {

constexpr int draws = 5000;

Eigen::MatrixXd random_walk_from(const Target& target, const Eigen::MatrixXd& shape, const Eigen::Vector2d& start) {
    // The paper's random walk: fixed Gaussian steps shaped by the variational covariance,
    // no warmup, started far from the posterior mass.
    inference::RandomWalkOptions ro;
    ro.adapt = false;
    const inference::RandomWalk kernel(shape, ro);
    TargetDensityFactory factory(target);
    inference::ChainSettings s;
    s.warmup = 0;
    s.draws = draws;
    s.chains = 1;
    s.threads = 1;
    s.seed = 14;
    return inference::run_chains(factory, kernel, {Eigen::VectorXd(start)}, s)[0].draws;
}

Eigen::MatrixXd one_chain(const ir::Graph& g, const Dataset& d, const std::string& method, VbFit* vb = nullptr) {
    FitOptions o;
    o.method = method;
    o.chains = 1;
    o.threads = 1;
    o.warmup = 500;
    o.draws = draws;
    o.seed = 15;
    o.proposal = "vb";  // the figures show the paper's kernels, which propose from the VB fit
    FitResult r = fit(g, d, o);
    if (vb) *vb = r.vb.best_fit();
    return r.chains[0].draws;
}

// Four chains of 10,000 draws (as tests/runtime/test_grid_checks.cpp runs them): the errors
// of the means and of the second mode's mass against the grid, in MCSE units, and R-hat.
void against_grid(const ir::Graph& g, const Dataset& d, const GridPosterior& grid, const std::string& name) {
    for (const std::string method : {"rwm", "varmh", "varblock", "varmix", "regen", "nuts"}) {
        FitOptions o;
        o.method = method;
        o.seed = 7;
        o.draws = 10000;
        o.proposal = "vb";  // varmh and varblock as the paper has them (docs/experiments-multimodal.md)
        const FitResult r = fit(g, d, o);
        auto series = [&](auto f) {
            Eigen::MatrixXd m(o.draws, o.chains);
            for (int c = 0; c < o.chains; ++c)
                for (int i = 0; i < o.draws; ++i) m(i, c) = f(Eigen::Vector2d(r.chains[static_cast<std::size_t>(c)].draws.row(i).head(2).transpose()));
            return m;
        };
        std::string line = fmt::format("{:<11} {:<8}", name, method);
        for (int k = 0; k < 2; ++k) {
            const Eigen::MatrixXd x = series([&](const Eigen::Vector2d& v) { return v[k]; });
            line += fmt::format("  w[{}] {:6.3f} (exact {:6.3f}, mcse {:.3f}, R-hat {:.3f})", k + 1, x.mean(), grid.mean[k],
                                inference::mcse_mean(x), inference::rhat(x));
        }
        if (grid.modes.size() > 1) {
            const Eigen::MatrixXd m2 = series([&](const Eigen::Vector2d& v) { return grid.basin_of(v) == 1 ? 1.0 : 0.0; });
            line += fmt::format("  mode-2 mass {:.3f} (exact {:.3f}, mcse {:.3f})", m2.mean(), grid.modes[1].mass, inference::mcse_mean(m2));
        }
        fmt::print("{}\n", line);
    }
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        fmt::print(stderr, "usage: multimodal_figures OUTDIR [NAME ...]\n");
        return 2;
    }
    const std::string out = argv[1];
    std::vector<std::string> names;
    for (int i = 2; i < argc; ++i) names.emplace_back(argv[i]);
    if (names.empty()) names = {"multimodal", "bimodal"};
    fmt::print("{:<11} {:<8} {:>8} {:>8} {:>8} {:>8} {:>8}\n", "example", "draws", "mean1", "mean2", "sd1", "sd2", "mass2");
    for (const std::string& name : names) {
        const ir::Graph g = load_model("examples/paper/" + name + ".vbn");
        const Dataset d = load_csv(g, "examples/paper/" + name + ".csv");
        const auto target = make_target(g, d);
        const GridPosterior grid = grid_posterior(*target, Eigen::Vector2d(-8, -8), Eigen::Vector2d(14, 6), 221);
        const GridPosterior wide = grid_posterior(*target, Eigen::Vector2d(-20, -20), Eigen::Vector2d(25, 25), 451);
        {
            auto f = fmt::output_file(out + "/" + name + "_grid.dat");
            for (int i = 0; i < grid.points; ++i) {
                for (int j = 0; j < grid.points; ++j) f.print("{} {} {}\n", grid.x(i), grid.y(j), std::exp(grid.log_density(i, j)));
                f.print("\n");
            }
        }
        auto row = [&](const std::string& what, const Eigen::Vector2d& mean, const Eigen::Vector2d& sd, double mass2) {
            fmt::print("{:<11} {:<8} {:8.3f} {:8.3f} {:8.3f} {:8.3f} {:8.3f}\n", name, what, mean[0], mean[1], sd[0], sd[1], mass2);
        };
        row("grid", wide.mean, wide.cov.diagonal().cwiseSqrt(), wide.modes.size() > 1 ? wide.modes[1].mass : 0.0);
        VbFit vb;
        const Eigen::MatrixXd varmh = one_chain(g, d, "varmh", &vb);
        {
            // The VB mean and its 2-sd ellipse.
            auto f = fmt::output_file(out + "/" + name + "_vb.dat");
            const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(vb.dense_cov());
            for (int k = 0; k <= 100; ++k) {
                const double a = 2 * std::numbers::pi * k / 100;
                const Eigen::Vector2d u(std::cos(a), std::sin(a));
                const Eigen::VectorXd p = vb.mean + es.eigenvectors() * (2 * es.eigenvalues().cwiseSqrt().cwiseProduct(u));
                f.print("{} {}\n", p[0], p[1]);
            }
        }
        const std::vector<std::pair<std::string, Eigen::MatrixXd>> runs{
            {"rwm", random_walk_from(*target, vb.dense_cov(), Eigen::Vector2d(-6, 4))}, {"varmh", varmh}, {"varmix", one_chain(g, d, "varmix")}};
        for (const auto& [method, x] : runs) {
            auto f = fmt::output_file(out + "/" + name + "_" + method + ".dat");
            for (Eigen::Index i = 0; i < x.rows(); ++i) f.print("{} {}\n", x(i, 0), x(i, 1));
            const Eigen::Vector2d mean = x.colwise().mean().transpose();
            const Eigen::Vector2d sd = ((x.rowwise() - mean.transpose()).array().square().colwise().sum() / (x.rows() - 1)).sqrt().transpose();
            const std::vector<double> f2 = wide.basin_fractions(x);
            row(method, mean, sd, f2.size() > 1 ? f2[1] : 0.0);
        }
        row("vb", vb.mean, vb.variances().cwiseSqrt(), 0.0);
    }
    fmt::print("\n4 chains x 10,000 draws after 1,000 warmup, seed 7, against the grid:\n");
    for (const std::string& name : names) {
        const ir::Graph g = load_model("examples/paper/" + name + ".vbn");
        const Dataset d = load_csv(g, "examples/paper/" + name + ".csv");
        const auto target = make_target(g, d);
        against_grid(g, d, grid_posterior(*target, Eigen::Vector2d(-20, -20), Eigen::Vector2d(25, 25), 451), name);
    }
    return EXIT_SUCCESS;
}
