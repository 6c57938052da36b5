// Each data row's log-likelihood log p(x_row | θ), its unobserved values (hidden nodes,
// missing cells) summed out exactly: the pointwise values that leave-one-out cross-validation
// reads (`vbn fit --log-lik`, inference/loo.hpp).
//
// Rows with the same values share a pattern (runtime/data/dataset.hpp), so each pattern is
// evaluated once per θ and its value written to each of its rows. The patterns' values come
// from one exact target (runtime/target/target.hpp) over all the data, which forms each
// pattern's log-likelihood from the terms it shares with the others
// (Target::pattern_log_likelihoods), the θ-free terms of observed fixed-probability nodes
// included.
//
//   PointwiseLogLik pw(graph, data);        // data loaded with keep_row_patterns
//   auto ws = pw.make_workspace();          // one per thread; evaluation then allocates nothing
//   Eigen::VectorXd ll(pw.rows());
//   pw.evaluate(theta, ll, ws);
#pragma once

#include "lang/ir.hpp"
#include "runtime/data/dataset.hpp"
#include "runtime/target/target.hpp"

#include <Eigen/Core>

#include <memory>
#include <vector>

namespace vbn {

class PointwiseLogLik {
public:
    class Workspace {
        friend class PointwiseLogLik;
        Target::Workspace target_;
        Eigen::VectorXd per_pattern_;
    };

    // Throws vbn::Error (usage) when data has no row_pattern, and what the target throws
    // (limit: a group of a row's unobserved values exceeds max_enumerated, naming its line).
    PointwiseLogLik(const ir::Graph& graph, const Dataset& data, int max_enumerated = 12);

    long rows() const { return static_cast<long>(row_pattern_.size()); }
    int patterns() const { return target_->patterns(); }
    Workspace make_workspace() const;

    // log p(x_row | θ) for every row in input order into out (rows() entries); θ in the
    // graph's layout.
    void evaluate(Target::In theta, Target::Out out, Workspace& ws) const;

private:
    std::unique_ptr<Target> target_;  // over all the data, with its patterns' terms
    std::vector<int> row_pattern_;
};

}  // namespace vbn
