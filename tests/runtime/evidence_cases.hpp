// Models whose log evidence log p(x_v) is known by quadrature, for the evidence test
// (tests/runtime/test_evidence.cpp) and the calibration sweep over seeds
// (bench/evidence_calibration.cpp): two small skewed posteriors (one and two parameters,
// 12 and 15 rows), the near-Gaussian unimodal_d1 example and the bimodal multimodal one.
#pragma once

#include "inference/math.hpp"
#include "runtime/data/dataset.hpp"
#include "runtime/sampling/fit.hpp"
#include "runtime/data/model.hpp"
#include "runtime/target/target.hpp"
#include "runtime/variational/vb.hpp"
#include "tests/support/quadrature.hpp"

#include <Eigen/Core>

#include <cmath>
#include <sstream>
#include <string>

namespace vbn::evidence_cases {

using quadrature::log_integral_1d;
using quadrature::log_normal_pdf;

struct Case {
    ir::Graph graph;
    Dataset data;
    double exact = 0;  // log p(x_v) by quadrature
};

inline Dataset data_from(const ir::Graph& g, const std::string& csv) {
    std::istringstream in(csv);
    return load_csv(g, in, "data.csv");
}

// y ~ logistic(b), b ~ N(0.5, 2²), 9 of 12 rows +1.
inline Case one_parameter() {
    using inference::log_inv_logit;
    ir::Graph g = compile_model("node y ~ logistic(b);\nb ~ normal(0.5, 2);\n", "one.vbn");
    Dataset d = data_from(g, "y\n1\n1\n1\n-1\n1\n1\n-1\n1\n1\n-1\n1\n1\n");
    const double exact = log_integral_1d(
        [](double b) { return log_normal_pdf(b, 0.5, 2) + 9 * log_inv_logit(b) + 3 * log_inv_logit(-b); }, -20, 20, 4000);
    return {std::move(g), std::move(d), exact};
}

// x ~ Bernoulli(0.4), y ~ logistic(b + w x), b ~ N(0, 1.5²), w ~ N(1, 2²); (x, y) counts:
// (+,+) 6, (+,-) 1, (-,+) 3, (-,-) 5.
inline Case two_parameters() {
    using inference::log_inv_logit;
    ir::Graph g = compile_model("node x ~ bernoulli(0.4);\nnode y ~ logistic(b + w * x);\nb ~ normal(0, 1.5);\nw ~ normal(1, 2);\n",
                                "two.vbn");
    std::string csv = "x,y\n";
    auto rows = [&](const char* r, int n) {
        for (int i = 0; i < n; ++i) csv += r;
    };
    rows("1,1\n", 6);
    rows("1,-1\n", 1);
    rows("-1,1\n", 3);
    rows("-1,-1\n", 5);
    Dataset d = data_from(g, csv);
    const double log_px = 7 * std::log(0.4) + 8 * std::log(0.6);
    // The inner integral over w for each b, then over b.
    auto inner = [&](double b) {
        return log_integral_1d(
            [&](double w) {
                return log_normal_pdf(w, 1, 2) + 6 * log_inv_logit(b + w) + 1 * log_inv_logit(-(b + w)) + 3 * log_inv_logit(b - w) +
                       5 * log_inv_logit(-(b - w));
            },
            -20, 22, 1500);
    };
    const double exact = log_px + log_integral_1d([&](double b) { return log_normal_pdf(b, 0, 1.5) + inner(b); }, -12, 12, 1200);
    return {std::move(g), std::move(d), exact};
}

// examples/paper/unimodal_d1: one weight, 1,000 rows; the integral over ±3 of the VB mean
// (the posterior sd is about 0.07).
inline Case unimodal_d1() {
    const std::string dir = std::string(VBN_SOURCE_DIR) + "/examples/paper/";
    ir::Graph g = load_model(dir + "unimodal_d1.vbn");
    Dataset d = load_csv(g, dir + "unimodal_d1.csv");
    const double centre = variational(g, d).best_fit().mean[0];
    const auto target = make_target(g, d);
    const Target& t = *target;
    const double exact = log_integral_1d(
        [&](double w) { return t.log_density(Eigen::VectorXd::Constant(1, w)) + t.log_constant(); }, centre - 3, centre + 3, 6000);
    return {std::move(g), std::move(d), exact};
}

// examples/paper/multimodal (Sec. 5.2): w's posterior has two modes (h = ±1 explain the data
// equally well up to the prior); 2-D quadrature of the exact joint p(x_v, w).
inline Case multimodal() {
    const std::string dir = std::string(VBN_SOURCE_DIR) + "/examples/paper/";
    ir::Graph g = load_model(dir + "multimodal.vbn");
    Dataset d = load_csv(g, dir + "multimodal.csv");
    const auto target = make_target(g, d);
    const Target& t = *target;
    auto inner = [&](double w1) {
        return log_integral_1d([&](double w2) { return t.log_density(Eigen::Vector2d(w1, w2)) + t.log_constant(); }, -15, 21, 360);
    };
    const double exact = log_integral_1d(inner, -15, 21, 360);
    return {std::move(g), std::move(d), exact};
}

}  // namespace vbn::evidence_cases
