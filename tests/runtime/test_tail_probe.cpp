// The tail probe (runtime/sampling/tail_probe.hpp) on a one-node logistic regression: a t(100) at
// the Laplace fit misses the tail of a posterior whose data leave one cell empty (along b + w
// the likelihood tends to 1, so the posterior decays like its prior, far slower than the fit),
// and fits the tails of one with 2,000 rows in every cell.
#include "inference/rng.hpp"
#include "runtime/data/dataset.hpp"
#include "runtime/data/model.hpp"
#include "runtime/sampling/fit.hpp"
#include "runtime/sampling/laplace_proposal.hpp"
#include "runtime/sampling/tail_probe.hpp"
#include "runtime/target/target.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <sstream>
#include <string>

using namespace vbn;

// Named, not anonymous, and holding the test cases: the sanitizer build compiles test files
// together (unity batches), where two files' anonymous helpers of one name collide.
namespace tail_probe_test {

const char* model = "node a ~ bernoulli(0.5);\nnode y ~ logistic(b + w * a);\nb ~ normal(0, 2.5);\nw ~ normal(0, 2.5);\n";

// n rows of each (a, y) cell, but `empty` rows of a = +1, y = -1.
std::string rows(int n, int empty) {
    std::string csv = "a,y\n";
    for (int i = 0; i < n; ++i) csv += "1,1\n-1,1\n-1,-1\n";
    for (int i = 0; i < empty; ++i) csv += "1,-1\n";
    return csv;
}

TailProbe probe(const std::string& csv, std::uint64_t seed) {
    const ir::Graph g = compile_model(model, "probe.vbn");
    std::istringstream in(csv);
    const Dataset d = load_csv(g, in, "probe.csv");
    const auto target = make_target(g, d);
    const auto exact = laplace_proposal(*target, Eigen::VectorXd::Zero(target->dim()));
    REQUIRE(exact);
    inference::GaussianProposal q = exact->blocks[0];
    q.set_df(100);
    Eigen::VectorXd theta = Eigen::VectorXd::Constant(target->dim(), 0.25);
    Target::Workspace ws = target->make_workspace();
    inference::Rng rng(seed);
    const TailProbe p = probe_tails(*target, 0, q, theta, ws, rng, 64);
    CHECK(theta == Eigen::VectorXd::Constant(target->dim(), 0.25));  // restored
    CHECK(std::isfinite(p.mean_log_w));
    CHECK(std::isfinite(p.probe_log_w));
    return p;
}


TEST_CASE("tail probe: flags a t(100) on a posterior with an empty cell, not on one with 2,000 rows per cell") {
    for (const std::uint64_t seed : {1, 2, 3}) {
        CAPTURE(seed);
        const TailProbe separated = probe(rows(10, 0), seed);
        CHECK(separated.light());
        const TailProbe informed = probe(rows(2000, 2000), seed);
        CHECK_FALSE(informed.light());
        INFO("excess over the mean weight: " << separated.probe_log_w - separated.mean_log_w << " and "
                                             << informed.probe_log_w - informed.mean_log_w);
        CHECK(separated.probe_log_w - separated.mean_log_w > informed.probe_log_w - informed.mean_log_w + 2);
    }
}

// fit()'s use of it: with a flagged block of more than two weights, `auto` takes NUTS (a
// random walk mixes too slowly there); an explicit varblock keeps varblock, with the flagged
// block's walk. The data: 40 rows of 8 binary parents in which y = p[1] but in the first row,
// so that p[1] nearly separates y (signs of p[1..8] then y per row; Python's random, seed 7).
TEST_CASE("tail probe: auto takes NUTS over varblock where a flagged block has more than two weights") {
    const ir::Graph g = compile_model("node p[8] ~ bernoulli(0.5);\nnode y ~ logistic(b + w * p);\nb ~ normal(0, 2.5);\n"
                                      "w ~ normal(0, 2.5);\n",
                                      "separated.vbn");
    const std::string rows =
        "+-+---+-- ---++---- +----+--+ --++--+-- --+----+- ++++++--+ --+++++-- -+-+-++-- -+++++--- ++--+++++ "
        "+-++--+-+ -+--+++-- -+++-+++- ++------+ --+-++--- +++--++++ ++-++---+ -+--+---- --+---+-- ++++--+++ "
        "+++---+++ +---+--++ -++-+-+-- --+--++-- -+++-+++- +----+-++ -+-++--+- -+-++-++- +------++ -++------ "
        "-+---+-+- -+++--++- +---+---+ --+--++-- ---+--+-- -++-+++-- +-+-+-+++ +--+--+-+ -+-+-+--- ++---++++";
    std::string csv = "p[1],p[2],p[3],p[4],p[5],p[6],p[7],p[8],y\n";
    for (std::size_t r = 0; r < rows.size(); r += 10)
        for (std::size_t k = 0; k < 9; ++k) csv += std::string(rows[r + k] == '+' ? "1" : "-1") + (k < 8 ? "," : "\n");
    std::istringstream in(csv);
    const Dataset d = load_csv(g, in, "separated.csv");
    REQUIRE(d.rows == 40);
    FitOptions o;
    o.seed = 3;
    o.draws = 200;
    o.warmup = 200;
    const FitResult automatic = fit(g, d, o);
    CHECK(automatic.method == "nuts");
    bool noted = false;
    for (const auto& n : automatic.notes) noted = noted || n.find("method auto chose nuts: the exact posterior's tails") == 0;
    CHECK(noted);
    o.method = "varblock";
    const FitResult asked = fit(g, d, o);
    CHECK(asked.method == "varblock");
    CHECK(asked.kernel.find("cycle") != std::string::npos);
}

}  // namespace tail_probe_test
