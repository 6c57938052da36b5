// Relabelling draws to a pivot (runtime/report/relabel.hpp, runtime/services/relabel.hpp): the
// enumerated group is the model's whole symmetry group and leaves the log posterior equal;
// draws scattered over the labelings return to one; relabelling twice changes nothing; kept
// and streamed draws are relabelled alike; predictions do not change.
#include "runtime/report/relabel.hpp"
#include "runtime/services/fit.hpp"
#include "runtime/services/predict.hpp"
#include "runtime/services/relabel.hpp"

#include "fit_options.hpp"
#include "lang/symmetry.hpp"
#include "runtime/data/model.hpp"
#include "runtime/error.hpp"
#include "runtime/target/target.hpp"
#include "tests/runtime/paper_dir.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <filesystem>
#include <random>
#include <set>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <unistd.h>

namespace {

using namespace vbn;

using test::paper;
const std::string corpus = std::string(VBN_SOURCE_DIR) + "/tests/corpus/";
// 8 labelings and few rows: chains cross between labelings, so relabelling moves many draws.
const std::string sbn_2x4 = std::string(VBN_SOURCE_DIR) + "/tests/cli/golden/inputs/relabel/sbn_2x4";

std::vector<int> identity_order(int dim) {
    std::vector<int> order(static_cast<std::size_t>(dim));
    for (int k = 0; k < dim; ++k) order[static_cast<std::size_t>(k)] = k;
    return order;
}

Eigen::VectorXd image(const LabelingGroup& group, int e, Eigen::VectorXd x) {
    apply_labeling(group, e, x);
    return x;
}

// A point with distinct, well separated entries (no labeling maps it near itself), draws
// scattered about it with sd 0.05, each then sent to a random labeling.
struct Scattered {
    Eigen::VectorXd centre;
    Eigen::MatrixXd near, draws;  // near the centre; and their random images
    std::vector<int> sent;
};
Scattered scatter(const LabelingGroup& group, int dim, int n, std::mt19937& rng) {
    std::normal_distribution<double> z(0, 1);
    std::uniform_int_distribution<int> pick(0, static_cast<int>(group.size()) - 1);
    Scattered s;
    s.centre.resize(dim);
    for (int k = 0; k < dim; ++k) s.centre[k] = (k % 2 ? -1.0 : 1.0) * (1.0 + 0.37 * k);
    s.near.resize(n, dim);
    s.draws.resize(n, dim);
    for (int i = 0; i < n; ++i) {
        for (int k = 0; k < dim; ++k) s.near(i, k) = s.centre[k] + 0.05 * z(rng);
        s.sent.push_back(pick(rng));
        s.draws.row(i) = image(group, s.sent.back(), s.near.row(i).transpose()).transpose();
    }
    return s;
}

}  // namespace

TEST_CASE("the enumerated labelings are the model's whole group, and each leaves the log posterior equal") {
    for (const auto& [file, data, order] : {std::tuple{paper + "sbn_3x8.vbn", paper + "sbn_3x8.csv", 48},
                                            std::tuple{corpus + "sbn2/model.vbn", corpus + "sbn2/data.csv", 384}}) {
        CAPTURE(file);
        const ir::Graph g = load_model(file);
        const Dataset d = load_csv(g, data);
        const std::optional<LabelingGroup> group = labeling_group(g, output_order(g));
        REQUIRE(group);
        CHECK(group->size() == static_cast<std::size_t>(order));
        CHECK(lang::find_symmetries(g).labelings == static_cast<std::uint64_t>(order));
        CHECK(std::set<std::vector<int>>(group->elements.begin(), group->elements.end()).size() == group->size());
        // In θ's own layout, against the exact target.
        const LabelingGroup theta = *labeling_group(g, identity_order(g.dim));
        const Target target(g, d);
        auto ws = target.make_workspace();
        std::mt19937 rng(7);
        std::normal_distribution<double> z(0, 1.5);
        Eigen::VectorXd th(g.dim);
        for (int k = 0; k < g.dim; ++k) th[k] = z(rng);
        const double lp = target.log_density(th, ws);
        for (std::size_t e = 0; e < theta.size(); ++e) {
            const Eigen::VectorXd moved = image(theta, static_cast<int>(e), th);
            CHECK(target.log_density(moved, ws) == doctest::Approx(lp).epsilon(1e-10));
            if (e > 0) CHECK((moved - th).norm() > 1e-6);
        }
    }
}

TEST_CASE("a group too large to enumerate is refused, and a model without symmetry has none") {
    const ir::Graph g = load_model(paper + "sbn_3x8.vbn");
    CHECK_FALSE(labeling_group(g, output_order(g), 47));
    CHECK(labeling_group(g, output_order(g), 48));
    const ir::Graph plain = compile_model("node y ~ logistic(b);\nb ~ normal(0, 1);\n", "plain.vbn");
    CHECK_FALSE(labeling_group(plain, output_order(plain)));
}

TEST_CASE("draws sent to random labelings around one point all return to one labeling of it; again changes nothing") {
    for (const std::string& file : {paper + "sbn_3x8.vbn", corpus + "sbn2/model.vbn"}) {
        CAPTURE(file);
        const ir::Graph g = load_model(file);
        const LabelingGroup group = *labeling_group(g, output_order(g));
        std::mt19937 rng(31);
        const int chains = 3, n = 200;
        std::vector<Scattered> sc;
        for (int c = 0; c < chains; ++c) sc.push_back(scatter(group, g.dim, n, rng));
        auto read = [&](std::size_t c) {
            return ChainDraws{sc[c].draws, -((sc[c].near.rowwise() - sc[c].centre.transpose()).rowwise().squaredNorm())};
        };
        const PivotRelabelling r = relabel_to_pivot(group, chains, read);
        CHECK(r.converged);
        CHECK(r.draws == chains * n);
        CHECK(r.relabelled > 0);
        // The labeling they all landed in is the first draw's: the g with g(near) = relabelled.
        Eigen::MatrixXd first = sc[0].draws;
        apply_labeling(group, r.element[0], first);
        int landed = -1;
        for (std::size_t e = 0; e < group.size(); ++e)
            if ((image(group, static_cast<int>(e), sc[0].near.row(0).transpose()) - first.row(0).transpose()).norm() == 0)
                landed = static_cast<int>(e);
        REQUIRE(landed >= 0);
        std::vector<ChainDraws> again;
        for (int c = 0; c < chains; ++c) {
            Eigen::MatrixXd y = sc[static_cast<std::size_t>(c)].draws;
            apply_labeling(group, r.element[static_cast<std::size_t>(c)], y);
            for (Eigen::Index i = 0; i < n; ++i)
                CHECK((y.row(i).transpose() - image(group, landed, sc[static_cast<std::size_t>(c)].near.row(i).transpose())).norm() == 0);
            again.push_back({y, read(static_cast<std::size_t>(c)).lp});
        }
        // Idempotent: the relabelled draws are left as they are.
        const PivotRelabelling twice = relabel_to_pivot(group, chains, [&](std::size_t c) { return again[c]; });
        CHECK(twice.relabelled == 0);
        CHECK(twice.passes == 2);
    }
}

TEST_CASE("services: kept draws are labelings of the streamed ones, and the files are relabelled alike") {
    const ir::Graph g = load_model(sbn_2x4 + ".vbn");
    const Dataset d = load_csv(g, sbn_2x4 + ".csv");
    FitOptions o = test::short_run("nuts", 2, 150, 150, 3);
    std::vector<std::vector<Eigen::VectorXd>> raw(2);
    services::Callbacks cb;
    cb.on_draw = [&](int c, int, const Eigen::VectorXd& x, double, const inference::TransitionInfo&) {
        raw[static_cast<std::size_t>(c)].push_back(x);  // each chain only from its own thread
    };
    const services::FitRun run = services::fit(g, d, o, cb);
    CHECK(run.relabel.rule == "pivot");
    CHECK(run.relabel.draws == 300);
    const LabelingGroup group = *labeling_group(g, output_order(g));
    long moved = 0;
    for (const auto& ch : run.result.chains) {
        const Eigen::MatrixXd kept = services::output_draws(run.result, ch);
        for (Eigen::Index i = 0; i < kept.rows(); ++i) {
            const Eigen::VectorXd& x = raw[static_cast<std::size_t>(ch.chain)][static_cast<std::size_t>(i)];
            bool is_image = false;
            for (std::size_t e = 0; e < group.size() && !is_image; ++e)
                is_image = image(group, static_cast<int>(e), x) == kept.row(i).transpose();
            CHECK(is_image);
            moved += x == kept.row(i).transpose() ? 0 : 1;
        }
    }
    CHECK(moved == run.relabel.relabelled);
    CHECK(moved > 0);  // else the comparisons prove little

    // The same run streamed to files: relabelled the same, with the header line.
    const auto dir = std::filesystem::temp_directory_path() / ("vbn-test-relabel-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    o.keep_draws = false;
    services::CsvDrawFiles files((dir / "fit.csv").string(), "sbn_2x4", "sbn_2x4.csv", g, o);
    services::Callbacks fcb;
    fcb.on_draw = [&](int c, int k, const Eigen::VectorXd& x, double lp, const inference::TransitionInfo& info) {
        files.draw(c, k, x, lp, info);
    };
    services::FitRun streamed = services::fit(g, d, o, fcb, [&](const services::FitStart& s) { files.start(s); });
    files.finish(streamed.result);
    files.relabel(streamed, 64e6);  // the files parsed once and held
    CHECK(streamed.relabel.relabelled == run.relabel.relabelled);
    for (std::size_t c = 0; c < 2; ++c) {
        const StanCsv f = read_stan_csv(chain_file_path((dir / "fit.csv").string(), static_cast<int>(c) + 1));
        CHECK(f.draws == services::output_draws(run.result, run.result.chains[c]));
        // What is held was relabelled as the text was: the same doubles as the file read again.
        CHECK(files.read_back(c, 0, f.draws.cols()) == f.draws);
        CHECK(files.read_back(c, 3, 2) == f.draws.middleCols(3, 2));
        REQUIRE(f.config_value("relabel"));
        CHECK(f.config_value("relabel")->starts_with("pivot, 8 labelings, "));
    }
    std::filesystem::remove_all(dir);
}

TEST_CASE("predictions from relabelled draws equal those from the raw draws") {
    const ir::Graph g = load_model(sbn_2x4 + ".vbn");
    const Dataset d = load_csv(g, sbn_2x4 + ".csv");
    FitOptions o = test::short_run("nuts", 2, 150, 150, 4);
    const services::FitRun pivot = services::fit(g, d, o, {});
    o.relabel = "none";
    const services::FitRun none = services::fit(g, d, o, {});
    CHECK(none.relabel.rule == "none");
    REQUIRE(pivot.relabel.relabelled > 0);  // else the comparison would prove nothing
    auto stacked = [](const services::FitRun& r) {
        Eigen::MatrixXd all(r.result.chains[0].draws.rows() + r.result.chains[1].draws.rows(), r.result.chains[0].draws.cols());
        all << r.result.chains[0].draws, r.result.chains[1].draws;
        return all;
    };
    CHECK(stacked(pivot) != stacked(none));
    std::istringstream rows("v[1],v[2],v[3],v[4]\n1,,-1,\n,1,,-1\n,,,\n");
    const Dataset test_rows = load_csv(g, rows, "rows.csv", nullptr, true);
    services::PredictSettings ps;
    const services::PredictRun a = services::predict(g, test_rows, stacked(pivot), ps);
    const services::PredictRun b = services::predict(g, test_rows, stacked(none), ps);
    REQUIRE(a.predictions.size() == b.predictions.size());
    // Every observed node's prediction is labeling-invariant; a hidden node's is not (a flip
    // turns P(h = +1) into P(h = -1)), which is why relabelling gives it a meaning.
    REQUIRE(a.predictions.size() == 14);  // 8 observed, 2 hidden per row
    int observed = 0;
    for (std::size_t i = 0; i < a.predictions.size(); ++i) {
        REQUIRE(a.predictions[i].element == b.predictions[i].element);
        if (g.elements[static_cast<std::size_t>(a.predictions[i].element)].hidden) continue;
        CHECK(a.predictions[i].p == doctest::Approx(b.predictions[i].p).epsilon(1e-12));
        ++observed;
    }
    CHECK(observed == 8);
}

TEST_CASE("an unknown relabel rule is a usage error") {
    const ir::Graph g = load_model(paper + "sbn_3x8.vbn");
    const Dataset d = load_csv(g, paper + "sbn_3x8.csv");
    FitOptions o = test::short_run("nuts", 1, 10, 10, 1);
    o.relabel = "stephens";
    CHECK_THROWS_WITH_AS(services::fit(g, d, o, {}), "unknown relabel rule 'stephens'; choose pivot or none", Error);
}

TEST_CASE("above the bound the draws are left as drawn, and the Symmetry line and CSV header say why") {
    // 8 exchangeable, flippable hidden nodes: 2^8 · 8! labelings, far above 5,040.
    const ir::Graph g = compile_model("node h[8] hidden ~ bernoulli(0.5);\nnode v[2] ~ logistic(W * h);\nW ~ normal(0, 1);\n",
                                      "wide.vbn");
    REQUIRE(lang::find_symmetries(g).labelings == 256ULL * 40320ULL);
    RelabelFacts facts;
    CHECK_FALSE(services::relabel_group(g, lang::find_symmetries(g), "pivot", output_order(g), facts));
    CHECK(facts.rule == "none");
    CHECK(facts.why == "more than 5040 labelings to compare each draw with");
    CHECK(services::unrelabelled_header(g, "pivot") == "none, 10321920 labelings (more than 5040)");
    CHECK(services::unrelabelled_header(g, "none") == "none, 10321920 labelings");
    // A model it can relabel says nothing in the header before the draws are in.
    CHECK(services::unrelabelled_header(load_model(paper + "sbn_3x8.vbn"), "pivot").empty());
}
