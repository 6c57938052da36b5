// What the data fuzzers check once a CSV has loaded against a model: the dataset's
// invariants, and that the compiled target gives a finite log density and gradient at
// θ = 0 (where every logistic factor is log 1/2 and the prior is finite).
#pragma once

#include "lang/ir.hpp"
#include "lang/limits.hpp"
#include "runtime/data/dataset.hpp"
#include "runtime/error.hpp"
#include "runtime/target/target.hpp"

#include <Eigen/Core>

#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <numeric>

namespace vbn::fuzz {

// The language's size limits scaled down 20 times (all but one block's size): a model at the full limits takes seconds
// to lower under the sanitizers (20 million fixed weights, about 1 GB), over the 10 s a run
// may take, and says nothing the golden tests of the limits do not.
inline lang::Limits small_limits() {
    lang::Limits l;
    l.elements = 50'000;
    l.covariance_entries = 1'000'000;
    l.fixed_terms = 1'000'000;
    return l;
}

[[noreturn]] inline void finding(const char* what) {
    std::fprintf(stderr, "fuzz finding: %s\n", what);
    std::abort();
}

inline void check_dataset(const Dataset& d) {
    const double total = std::accumulate(d.count.begin(), d.count.end(), 0.0);
    if (total != static_cast<double>(d.rows)) finding("pattern counts do not sum to the rows read");
    if (d.binary.size() != static_cast<std::size_t>(d.patterns) * d.binary_columns()) finding("binary table size");
    if (d.real.size() != static_cast<std::size_t>(d.patterns) * d.real_columns()) finding("real table size");
    for (double x : d.real)
        if (!std::isfinite(x)) finding("a covariate value is not finite");
    for (auto v : d.binary)
        if (v != 1 && v != -1 && v != 0) finding("a binary value is not +1, -1 or 0");
}

// Small limits keep one input cheap: at most 8 unobserved values summed out exactly.
inline void check_target(const ir::Graph& graph, const Dataset& data) {
    if (graph.dim == 0) return;
    TargetOptions o;
    o.max_enumerated = 8;
    try {
        const Target target(graph, data, o);
        const Eigen::VectorXd theta = Eigen::VectorXd::Zero(graph.dim);
        Eigen::VectorXd grad(graph.dim);
        const double lp = target.log_density_gradient(theta, grad);
        if (!std::isfinite(lp)) finding("log density at theta = 0 is not finite");
        if (!grad.allFinite()) finding("gradient at theta = 0 is not finite");
    } catch (const Error& e) {
        if (e.kind() != ErrorKind::limit) throw;  // only the exponential-cost refusal is expected
    }
}

}  // namespace vbn::fuzz
