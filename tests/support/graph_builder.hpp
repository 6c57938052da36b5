// Test and benchmark helpers: ir::Graphs built by hand (one scalar element per variable),
// Datasets filled from rows without the loader, the linear predictor written out independently
// of the runtime, and the paper's unimodal data.
//
//   test::GraphBuilder m;
//   const int x = m.bernoulli("x", 0.5);
//   m.logistic_block("y", false, 0.0, {}, {test::bias(), test::on(x)}, "w", {2}, {0, 0}, {4, 0, 0, 4});
#pragma once

#include "inference/math.hpp"
#include "inference/rng.hpp"
#include "lang/ir.hpp"
#include "runtime/data/dataset.hpp"
#include "runtime/data/dataset_builder.hpp"

#include <Eigen/Core>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace vbn::test {

// Elements must be added parents first; blocks are numbered in that order.
struct GraphBuilder {
    ir::Graph g;

    int add(const std::string& name, bool hidden = false, bool covariate = false) {
        const int e = static_cast<int>(g.elements.size());
        ir::Variable v;
        v.name = name;
        v.kind = covariate ? ir::VariableKind::covariate : ir::VariableKind::binary;
        v.hidden = hidden;
        v.first_element = e;
        g.variables.push_back(v);
        ir::Element el;
        el.variable = static_cast<int>(g.variables.size()) - 1;
        el.name = name;
        el.binary = !covariate;
        el.hidden = hidden;
        g.elements.push_back(el);
        g.cpds.emplace_back();
        if (!covariate) g.topological_order.push_back(e);
        return e;
    }
    int covariate(const std::string& name) { return add(name, false, true); }
    int bernoulli(const std::string& name, double p, bool hidden = false) {
        const int e = add(name, hidden);
        g.cpds[static_cast<std::size_t>(e)].offset = inference::logit(p);
        return e;
    }
    // logit P(x = +1) = offset + Σ fixed + θ' f with θ ~ N(mean, cov) (cov row-major, k × k),
    // θ being the parameter `param` of the given shape. Without features there is no block.
    int logistic_block(const std::string& name, bool hidden, double offset, std::vector<ir::FixedTerm> fixed,
                       std::vector<ir::Feature> features, const std::string& param, std::vector<int> shape,
                       std::vector<double> mean, std::vector<double> cov, bool diagonal = true) {
        const int e = add(name, hidden);
        ir::Cpd& c = g.cpds[static_cast<std::size_t>(e)];
        c.logistic = true;
        c.offset = offset;
        c.fixed = std::move(fixed);
        c.features = std::move(features);
        if (c.features.empty()) return e;
        for (std::size_t k = 0; k < c.features.size(); ++k) c.features[k].weight = static_cast<int>(k);
        ir::Block b;
        b.element = e;
        b.elements = {e};
        b.offset = g.dim;
        b.size = static_cast<int>(c.features.size());
        b.prior_mean = std::move(mean);
        b.prior_cov = std::move(cov);
        b.prior_diagonal = diagonal;
        c.block = static_cast<int>(g.blocks.size());
        ir::Parameter p;
        p.name = param;
        p.shape = std::move(shape);
        for (int k = 0; k < b.size; ++k) p.theta_index.push_back(g.dim + k);
        g.parameters.push_back(p);
        g.dim += b.size;
        g.blocks.push_back(b);
        return e;
    }
};

inline ir::Feature bias() { return {-1, 1.0}; }
inline ir::Feature on(int e, double sign = 1.0) { return {e, sign}; }

// A row gives every element's value: ±1 or 0 (missing) for binary nodes, a real number for
// covariates; entries of hidden nodes are ignored.
using Row = std::vector<double>;

// Fills a Dataset from rows: observed binary nodes then covariates, in element order. With
// `compress`, identical rows become one pattern with a count, as the CSV loader does;
// without, every row is its own pattern.
inline Dataset make_dataset(const ir::Graph& g, const std::vector<Row>& rows, bool compress = true) {
    Dataset d;
    d.name = "test.csv";
    d.rows = static_cast<long>(rows.size());
    for (const auto& el : g.elements) {
        if (!el.binary) {
            d.column_of.push_back(static_cast<int>(d.real_names.size()));
            d.real_names.push_back(el.name);
        } else if (el.hidden) {
            d.column_of.push_back(-1);
        } else {
            d.column_of.push_back(static_cast<int>(d.binary_names.size()));
            d.binary_names.push_back(el.name);
        }
    }
    d.missing.assign(d.binary_names.size(), 0);
    std::map<std::pair<std::vector<std::int8_t>, std::vector<double>>, int> seen;
    for (std::size_t r = 0; r < rows.size(); ++r) {
        std::vector<std::int8_t> bin;
        std::vector<double> real;
        for (std::size_t e = 0; e < g.elements.size(); ++e) {
            const auto& el = g.elements[e];
            if (!el.binary)
                real.push_back(rows[r][e]);
            else if (!el.hidden)
                bin.push_back(static_cast<std::int8_t>(rows[r][e]));
        }
        for (std::size_t c = 0; c < bin.size(); ++c)
            if (bin[c] == 0) ++d.missing[c];
        auto key = std::make_pair(bin, real);
        auto it = seen.find(key);
        if (compress && it != seen.end()) {
            d.count[static_cast<std::size_t>(it->second)] += 1;
            continue;
        }
        seen[key] = d.patterns++;
        d.binary.insert(d.binary.end(), bin.begin(), bin.end());
        d.real.insert(d.real.end(), real.begin(), real.end());
        d.count.push_back(1);
        d.first_line.push_back(static_cast<long>(r) + 2);
    }
    return d;
}

// A diagonal k × k covariance (row-major) with the given standard deviations.
inline std::vector<double> diagonal_cov(const std::vector<double>& sd) {
    const std::size_t k = sd.size();
    std::vector<double> cov(k * k, 0.0);
    for (std::size_t j = 0; j < k; ++j) cov[j * k + j] = sd[j] * sd[j];
    return cov;
}

// η of element e's CPD at θ, with element values x (±1 for binary nodes, real for
// covariates): the reference the tests check the runtime against, so written out here.
template <class Values>
double eta_of(const ir::Graph& g, int e, const Values& x, const Eigen::Ref<const Eigen::VectorXd>& theta) {
    const ir::Cpd& c = g.cpds[static_cast<std::size_t>(e)];
    double eta = c.offset;
    for (const auto& ft : c.fixed) {
        double t = ft.coef * x[static_cast<std::size_t>(ft.element)];
        for (int a : ft.also) t *= x[static_cast<std::size_t>(a)];  // a product of parents
        eta += t;
    }
    for (const auto& f : c.features) {
        double v = f.element < 0 ? f.sign : f.sign * x[static_cast<std::size_t>(f.element)];
        for (int a : f.also) v *= x[static_cast<std::size_t>(a)];
        eta += theta[g.blocks[static_cast<std::size_t>(c.block)].offset + static_cast<Eigen::Index>(f.weight)] * v;
    }
    return eta;
}

// The paper's unimodal data (Variational MCMC, Sec. 5.1) for a graph of the form
// `node x[d] ~ bernoulli(0.5); node y ~ logistic(0.5 + w * x);`: x_k = ±1 with P(+1) = 0.5,
// weights Uniform(0, 1], y drawn from the model, `rows` rows.
inline Dataset unimodal_data(const ir::Graph& g, int d, long rows, std::uint64_t seed) {
    inference::Rng rng(seed);
    std::vector<double> w(static_cast<std::size_t>(d));
    for (double& v : w) v = 1.0 - rng.uniform();  // Uniform(0, 1]
    DatasetBuilder builder(g, "unimodal");
    std::vector<std::int8_t> row(static_cast<std::size_t>(d + 1));
    for (long t = 0; t < rows; ++t) {
        double eta = 0.5;
        for (std::size_t k = 0; k < w.size(); ++k) {
            row[k] = rng.bernoulli(0.5) ? 1 : -1;
            eta += w[k] * row[k];
        }
        row[w.size()] = rng.bernoulli(inference::inv_logit(eta)) ? 1 : -1;
        builder.add_coded_row(row, {});
    }
    return builder.finish();
}

}  // namespace vbn::test
