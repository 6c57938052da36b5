#include "runtime/target/pointwise.hpp"

#include "runtime/error.hpp"

#include <cstddef>
#include <memory>
#include <string>

namespace vbn {

namespace {

// Pattern p of data as a dataset of one row.
Dataset single_pattern(const Dataset& data, int p) {
    Dataset one;
    one.name = data.name;
    one.rows = 1;
    one.column_of = data.column_of;
    one.binary_names = data.binary_names;
    one.real_names = data.real_names;
    one.patterns = 1;
    const std::size_t nb = data.binary_columns(), nr = data.real_columns(), pp = static_cast<std::size_t>(p);
    one.binary.assign(data.binary.begin() + static_cast<std::ptrdiff_t>(pp * nb),
                      data.binary.begin() + static_cast<std::ptrdiff_t>((pp + 1) * nb));
    one.real.assign(data.real.begin() + static_cast<std::ptrdiff_t>(pp * nr),
                    data.real.begin() + static_cast<std::ptrdiff_t>((pp + 1) * nr));
    one.count = {1.0};
    one.first_line = {data.first_line[pp]};
    one.missing.resize(nb);
    for (std::size_t c = 0; c < nb; ++c) one.missing[c] = one.binary[c] == 0 ? 1 : 0;
    return one;
}

// The target's limit error says what is too large; its advice (sample the values with
// gibbs) does not apply here, where every row's values must be summed out whatever the method.
std::unique_ptr<Target> target_of_pattern(const ir::Graph& graph, const Dataset& data, int p, int max_enumerated) {
    try {
        return make_target(graph, single_pattern(data, p), max_enumerated);
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
    targets_.reserve(static_cast<std::size_t>(data.patterns));
    fixed_.reserve(static_cast<std::size_t>(data.patterns));
    for (int p = 0; p < data.patterns; ++p) {
        targets_.push_back(target_of_pattern(graph, data, p, max_enumerated));
        fixed_.push_back(targets_.back()->families().fixed_log_likelihood);
    }
}

PointwiseLogLik::Workspace PointwiseLogLik::make_workspace() const {
    Workspace ws;
    ws.targets_.reserve(targets_.size());
    for (const auto& t : targets_) ws.targets_.push_back(t->make_workspace());
    ws.per_pattern_.resize(static_cast<Eigen::Index>(targets_.size()));
    return ws;
}

double PointwiseLogLik::pattern_log_lik(int pattern, Target::In theta, Workspace& ws) const {
    const auto p = static_cast<std::size_t>(pattern);
    return targets_[p]->log_likelihood(theta, ws.targets_[p]) + fixed_[p];
}

void PointwiseLogLik::evaluate(Target::In theta, Target::Out out, Workspace& ws) const {
    if (out.size() != rows())
        throw Error(ErrorKind::usage, "pointwise log-likelihood: the output has the wrong number of rows");
    for (int p = 0; p < patterns(); ++p) ws.per_pattern_[p] = pattern_log_lik(p, theta, ws);
    for (std::size_t r = 0; r < row_pattern_.size(); ++r)
        out[static_cast<Eigen::Index>(r)] = ws.per_pattern_[row_pattern_[r]];
}

}  // namespace vbn
