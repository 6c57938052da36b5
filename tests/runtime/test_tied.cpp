// Declared parameters that tie weights across elements and nodes (docs/language.md, "Shared
// weights"): the tied model's likelihood is the untied model's with the copies set equal, its
// gradient is exact, and every method fits a tied model with a hidden node and missing
// values to its posterior integrated on a grid.
#include "inference/rng.hpp"
#include "runtime/data/dataset.hpp"
#include "runtime/data/model.hpp"
#include "runtime/predictive/simulate.hpp"
#include "runtime/sampling/fit.hpp"
#include "runtime/target/target.hpp"
#include "runtime/variational/vb.hpp"
#include "runtime/variational/vb_refine.hpp"
#include "tests/runtime/per_chain.hpp"
#include "validation/grid_posterior.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <map>
#include <sstream>
#include <string>
#include <vector>

using namespace vbn;

namespace {

// A hidden cause d, two tests sharing one sensitivity s, a symptom array whose weights r on
// [d, t1] are shared by its elements, and one weight w on the sum of t1 and t2.
const char* const tied_text = "node g ~ bernoulli(0.5);\n"
                              "node d hidden ~ logistic(a + u * g);\n"
                              "param s;\n"
                              "node t1 ~ logistic(b1 + s * d);\n"
                              "node t2 ~ logistic(b2 + s * d);\n"
                              "param r[2];\n"
                              "node q[3] ~ logistic(c + r * [d, t1]);\n"
                              "param w;\n"
                              "node k ~ logistic(w * [t1, t2]);\n"
                              "a, u, b1, b2, c, r, w ~ normal(0, 1.5);\n"
                              "s ~ normal(1, 1);\n";

// The same network with every copy a weight of its own.
const char* const untied_text = "node g ~ bernoulli(0.5);\n"
                                "node d hidden ~ logistic(a + u * g);\n"
                                "node t1 ~ logistic(b1 + s1 * d);\n"
                                "node t2 ~ logistic(b2 + s2 * d);\n"
                                "node q[3] ~ logistic(c + R * [d, t1]);\n"
                                "node k ~ logistic(W * [t1, t2]);\n"
                                "a, u, b1, b2, c, R, W, s1, s2 ~ normal(0, 1.5);\n";

// The tied θ entry an untied entry copies, by name.
std::string tied_name(const std::string& untied) {
    if (untied == "s1" || untied == "s2") return "s";
    if (untied.rfind("R[", 0) == 0) return fmt::format("r[{}]", untied[untied.size() - 2]);
    if (untied.rfind("W[", 0) == 0) return "w";
    return untied;
}

// Simulated rows with t1 and q[2] blanked in some of them, so that summed-out factors hold
// links through the shared weights as well as observed features.
std::string tied_csv(const ir::Graph& g) {
    Eigen::VectorXd theta(g.dim);
    for (int i = 0; i < g.dim; ++i) theta[i] = 0.4 + 0.1 * i;
    inference::Rng rng(7);
    std::ostringstream csv;
    simulate_csv(g, theta, SimulateOptions{400, false}, rng, csv);
    std::istringstream in(csv.str());
    std::string line, out;
    std::getline(in, line);
    REQUIRE(line == "g,t1,t2,q[1],q[2],q[3],k");
    out = line + "\n";
    for (int row = 0; std::getline(in, line); ++row) {
        std::vector<std::string> cells;
        std::istringstream fields(line);
        for (std::string c; std::getline(fields, c, ',');) cells.push_back(c);
        if (row % 7 == 3) cells[1] = "";
        if (row % 5 == 1) cells[4] = "";
        for (std::size_t k = 0; k < cells.size(); ++k) out += (k ? "," : "") + cells[k];
        out += "\n";
    }
    return out;
}

}  // namespace

TEST_CASE("a tied model's likelihood is the untied model's with the copies equal, and its gradient is exact") {
    const ir::Graph tied = compile_model(tied_text, "tied.vbn");
    const ir::Graph untied = compile_model(untied_text, "untied.vbn");
    const std::string csv = tied_csv(tied);
    std::istringstream in1(csv), in2(csv);
    const Dataset data_tied = load_csv(tied, in1, "tied.csv");
    const Dataset data_untied = load_csv(untied, in2, "tied.csv");
    const Target t(tied, data_tied), u(untied, data_untied);
    REQUIRE(tied.dim == 11);
    REQUIRE(untied.dim == 17);
    CHECK(t.blocks() == 4);  // d; t1 with t2; q[1..3] (r); k
    std::map<std::string, int> index;
    for (int i = 0; i < tied.dim; ++i) index[tied.theta_name(i)] = i;
    inference::Rng rng(3);
    for (int trial = 0; trial < 5; ++trial) {
        Eigen::VectorXd phi(tied.dim), theta(untied.dim);
        for (int i = 0; i < tied.dim; ++i) phi[i] = rng.normal() * 1.5;
        for (int i = 0; i < untied.dim; ++i) theta[i] = phi[index.at(tied_name(untied.theta_name(i)))];
        auto wt = t.make_workspace();
        auto wu = u.make_workspace();
        CHECK(t.log_likelihood(phi, wt) == doctest::Approx(u.log_likelihood(theta, wu)).epsilon(1e-12));
        Eigen::VectorXd grad(tied.dim);
        const double lp = t.log_density_gradient(phi, grad);
        CHECK(lp == doctest::Approx(t.log_density(phi)).epsilon(1e-12));
        for (int i = 0; i < tied.dim; ++i) {
            const double h = 1e-6;
            Eigen::VectorXd up = phi, down = phi;
            up[i] += h;
            down[i] -= h;
            CAPTURE(tied.theta_name(i));
            CHECK(grad[i] == doctest::Approx((t.log_density(up) - t.log_density(down)) / (2 * h)).epsilon(1e-6));
        }
    }
}

TEST_CASE("one detection rate shared by four visits: every method against the grid" * doctest::timeout(300)) {
    const ir::Graph g = compile_model("node h hidden ~ bernoulli(0.35);\n"
                                      "param c;\n"
                                      "param v;\n"
                                      "node y[4] ~ logistic(c + v * h);\n"
                                      "c ~ normal(0, 2);\n"
                                      "v ~ normal(1, 1);\n",
                                      "visits.vbn");
    Eigen::VectorXd theta(2);
    theta << -0.5, 1.5;
    inference::Rng rng(21);
    std::ostringstream csv;
    simulate_csv(g, theta, SimulateOptions{250, false}, rng, csv);
    std::string text = csv.str();
    // A visit missed in every third row: its column blank there.
    std::istringstream lines(text);
    std::string line, blanked;
    for (int r = -1; std::getline(lines, line); ++r) blanked += (r >= 0 && r % 3 == 2 ? line.substr(0, line.rfind(',') + 1) : line) + "\n";
    std::istringstream in(blanked);
    const Dataset data = load_csv(g, in, "visits.csv");
    const auto target = make_target(g, data);
    const GridPosterior grid = grid_posterior(*target, Eigen::Vector2d(-6, -5), Eigen::Vector2d(5, 7), 501);
    REQUIRE(grid.edge_log_ratio < -25);
    for (const std::string method : {"auto", "nuts", "gibbs"}) {
        CAPTURE(method);
        FitOptions o;
        o.method = method;
        o.seed = 5;
        o.warmup = 1000;
        o.draws = 4000;
        o.chains = 4;
        o.threads = 2;
        const FitResult r = fit(g, data, o);
        const std::string failures = test::moment_failures(r, grid.mean, grid.cov);
        CHECK_MESSAGE(failures.empty(), failures);
    }
    const RefinedPosterior vb = refine(*target, variational(g, data).best_fit());
    for (int i = 0; i < 2; ++i) {
        CAPTURE(i);
        CHECK(std::abs(vb.mean[i] - grid.mean[i]) <= 4 * vb.mcse[i] + 1e-3 * std::sqrt(grid.cov(i, i)));
    }
}
