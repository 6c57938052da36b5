#include "runtime/target/pointwise.hpp"

#include "runtime/error.hpp"

#include <memory>
#include <string>

namespace vbn {

namespace {

// The target's limit error says what is too large; its advice (sample the values with
// gibbs) does not apply here, where every row's values must be summed out whatever the method.
std::unique_ptr<Target> target_with_patterns(const ir::Graph& graph, const Dataset& data, int max_enumerated) {
    try {
        return std::make_unique<Target>(graph, data,
                                        TargetOptions{.max_enumerated = max_enumerated, .pattern_terms = true});
    } catch (const Error& e) {
        if (e.kind() != ErrorKind::limit) throw;
        std::string what = e.what();
        const auto advice = what.find(". `vbn fit --method gibbs`");
        if (advice != std::string::npos) what.erase(advice);
        throw Error(ErrorKind::limit, what + "; each row's log-likelihood (--log-lik, vbn loo) needs them summed out "
                                             "exactly, whatever the method",
                    e.line(), e.column());
    }
}

}  // namespace

PointwiseLogLik::PointwiseLogLik(const ir::Graph& graph, const Dataset& data, int max_enumerated)
    : row_pattern_(data.row_pattern) {
    if (static_cast<long>(row_pattern_.size()) != data.rows)
        throw Error(ErrorKind::usage, "pointwise log-likelihood: the data were read without their rows' patterns");
    target_ = target_with_patterns(graph, data, max_enumerated);
}

PointwiseLogLik::Workspace PointwiseLogLik::make_workspace() const {
    Workspace ws;
    ws.target_ = target_->make_workspace();
    ws.per_pattern_.resize(patterns());
    return ws;
}

void PointwiseLogLik::evaluate(Target::In theta, Target::Out out, Workspace& ws) const {
    if (out.size() != rows())
        throw Error(ErrorKind::usage, "pointwise log-likelihood: the output has the wrong number of rows");
    target_->pattern_log_likelihoods(theta, ws.per_pattern_, ws.target_);
    for (std::size_t r = 0; r < row_pattern_.size(); ++r)
        out[static_cast<Eigen::Index>(r)] = ws.per_pattern_[row_pattern_[r]];
}

}  // namespace vbn
