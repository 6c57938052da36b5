#include "runtime/predictive/predict.hpp"

#include "inference/gaussian.hpp"
#include "inference/math.hpp"
#include "inference/rng.hpp"
#include "runtime/data/csv.hpp"
#include "runtime/data/dataset_builder.hpp"
#include "runtime/error.hpp"
#include "runtime/data/model.hpp"
#include "runtime/report/output_csv.hpp"
#include "runtime/predictive/simulate.hpp"
#include "runtime/target/elimination.hpp"
#include "runtime/target/elimination_order.hpp"
#include "runtime/target/families.hpp"
#include "runtime/variational/vb.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <cmath>
#include <limits>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <string_view>

namespace vbn {

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// log Σ exp(x) accumulated one term at a time.
struct LogSum {
    double max = kNegInf;
    double sum = 0;
    void add(double v) {
        if (v == kNegInf) return;
        if (v <= max) {
            sum += std::exp(v - max);
        } else {
            sum = sum * std::exp(max - v) + 1;
            max = v;
        }
    }
    double value() const { return max == kNegInf ? kNegInf : max + std::log(sum); }
};

double log_factor(const ir::Graph& g, int e, const Eigen::Ref<const Eigen::VectorXd>& theta, const std::vector<double>& x) {
    return inference::log_inv_logit(x[static_cast<std::size_t>(e)] * linear_predictor(g, e, theta, x));
}

// A group too large to enumerate, summed out by variable elimination
// (runtime/target/elimination.hpp): case 0 is the group itself, log p(group's part of x_o);
// case k is the group with its k-th query clamped to +1, log p(x_q = +1, group's part of x_o).
struct EliminatedGroup {
    Families cases;
    // Per case: the factors left with no unobserved value (a CPD read only by the clamped
    // query), added apart: the eliminator's buckets hold factors over some variable.
    std::vector<std::vector<Factor>> constant;
    std::vector<int> case_of;  // per query of the row: its case, or -1 when in another group
    std::vector<int> offsets;  // where each block starts in θ
    Eliminator sum;
    Eliminator::Scratch scratch;
};

// A group of unobserved elements summed out together, with the CPDs that involve them.
struct Group {
    std::vector<int> vars;     // elements, local variable k = vars[k]
    std::vector<int> factors;  // elements whose CPD is in the group
    std::unique_ptr<EliminatedGroup> eliminated;  // set when vars exceed max_enumerated
};

// What one row pattern needs: its values, the CPDs that involve only observed values, the
// groups, and the elements asked for (with their group and local index).
struct RowPlan {
    std::vector<double> x;
    std::vector<int> complete;
    std::vector<Group> groups;
    std::vector<int> queries;
    std::vector<std::pair<int, int>> where;  // per query: (group, local variable)
    int truth = 0;
};

// Union-find with path halving.
int find_root(std::vector<int>& parent, int i) {
    auto at = [&](int k) -> int& { return parent[static_cast<std::size_t>(k)]; };
    while (at(i) != i) {
        at(i) = at(at(i));
        i = at(i);
    }
    return i;
}

// log Π g(value · η) over factors without unobserved values.
double constant_log(const std::vector<Factor>& factors, const Eigen::Ref<const Eigen::VectorXd>& theta,
                    const std::vector<int>& offsets) {
    double sum = 0;
    for (const Factor& f : factors) {
        double eta = f.base;
        if (f.block >= 0) eta += theta.segment(offsets[static_cast<std::size_t>(f.block)], f.f.size()).dot(f.f);
        sum += inference::log_inv_logit(f.value * eta);
    }
    return sum;
}

// The group as a case for the eliminator, its local variable `clamped` (or none: -1)
// observed at +1, with its min-fill order when no clique is wider than `limit`; factors that
// clamping leaves without an unobserved value go to `constant`.
Component group_case(const ir::Graph& g, const Group& grp, std::vector<double> x, int clamped, int limit,
                     std::vector<Factor>& constant) {
    Component comp;
    std::vector<int> local(x.size(), -1);
    for (std::size_t k = 0; k < grp.vars.size(); ++k) {
        const auto e = static_cast<std::size_t>(grp.vars[k]);
        if (static_cast<int>(k) == clamped) {
            x[e] = 1.0;
            continue;
        }
        local[e] = comp.size();
        comp.elements.push_back(grp.vars[k]);
    }
    std::vector<std::vector<int>> scopes;
    for (int e : grp.factors) {
        Factor f;
        fold_cpd(g, e, x, local, f);
        f.self = local[static_cast<std::size_t>(e)];
        f.value = f.self >= 0 ? 0 : static_cast<int>(x[static_cast<std::size_t>(e)]);
        std::vector<int> scope = factor_scope(f);
        if (scope.empty()) {
            constant.push_back(std::move(f));
            continue;
        }
        if (f.block >= 0) comp.blocks.push_back(f.block);
        scopes.push_back(std::move(scope));
        comp.factors.push_back(std::move(f));
    }
    std::sort(comp.blocks.begin(), comp.blocks.end());
    comp.blocks.erase(std::unique(comp.blocks.begin(), comp.blocks.end()), comp.blocks.end());
    comp.weight = 1;
    const EliminationOrder order = min_fill_order(comp.size(), scopes, limit);
    comp.width = order.width;
    if (order.width <= limit) comp.order = order.order;
    return comp;
}

// Group gi of the row has more unobserved values than max_enumerated: it is summed out by
// variable elimination, once as it is and once per query in it clamped to +1, so that
// P(x_q = +1 | x_o, θ) = e^{log Z(x_q = +1) − log Z}. Refused, naming the row, when the
// best order found still sums more than max_enumerated values at once.
void plan_elimination(const ir::Graph& g, const Dataset& d, int pattern, const PredictOptions& o,
                      const std::vector<int>& block_offsets, std::size_t gi, RowPlan& plan) {
    Group& grp = plan.groups[gi];
    auto eg = std::make_unique<EliminatedGroup>();
    eg->case_of.assign(plan.queries.size(), -1);
    eg->offsets = block_offsets;
    eg->constant.emplace_back();
    eg->cases.components.push_back(group_case(g, grp, plan.x, -1, o.max_enumerated, eg->constant.back()));
    for (std::size_t q = 0; q < plan.queries.size(); ++q) {
        if (plan.where[q].first != static_cast<int>(gi)) continue;
        eg->case_of[q] = static_cast<int>(eg->cases.components.size());
        eg->constant.emplace_back();
        eg->cases.components.push_back(
            group_case(g, grp, plan.x, plan.where[q].second, o.max_enumerated, eg->constant.back()));
    }
    int width = 0;
    for (const Component& c : eg->cases.components) width = std::max(width, c.width);
    if (width > o.max_enumerated) {
        std::string names;
        for (std::size_t k = 0; k < grp.vars.size() && k < 8; ++k)
            names += (k ? ", " : "") + g.elements[static_cast<std::size_t>(grp.vars[k])].name;
        if (grp.vars.size() > 8) names += ", …";
        const long line = d.first_line.empty() ? 0 : d.first_line[static_cast<std::size_t>(pattern)];
        throw Error(ErrorKind::limit,
                    fmt::format("{}:{}: predicting this row sums {} unobserved values ({}) out together, and the best "
                                "elimination order found still sums {} of them at once (2^{} terms per row and "
                                "draw); the limit is {}. {}",
                                d.name, line, grp.vars.size(), names, width, width, o.max_enumerated,
                                o.target >= 0 ? fmt::format("The target {} is linked to them through the nodes they "
                                                            "share; observe more of the row's values.",
                                                            g.elements[static_cast<std::size_t>(o.target)].name)
                                              : "Observe more of the row's values, or predict one node with --target."),
                    line, 0);
    }
    eg->sum = Eliminator(eg->cases, block_offsets);
    eg->scratch = eg->sum.make_scratch();
    grp.eliminated = std::move(eg);
}

// log Σ over case k's unobserved values of its factors' product.
double eliminated_log(EliminatedGroup& eg, int k, const Eigen::Ref<const Eigen::VectorXd>& theta) {
    return eg.sum.component(k, 1.0, theta, nullptr, -1, eg.scratch) +
           constant_log(eg.constant[static_cast<std::size_t>(k)], theta, eg.offsets);
}

RowPlan plan_row(const ir::Graph& g, const Dataset& d, int pattern, const PredictOptions& o,
                 const std::vector<std::vector<int>>& parents, const std::vector<int>& block_offsets) {
    const auto n = g.elements.size();
    RowPlan plan;
    plan.x.assign(n, 0.0);
    std::vector<char> unobserved(n, 0);
    for (std::size_t e = 0; e < n; ++e) {
        const ir::Element& el = g.elements[e];
        const int col = d.column_of[e];
        if (!el.binary) {
            plan.x[e] = d.real_value(pattern, col);
            continue;
        }
        if (col >= 0) plan.x[e] = d.value(pattern, col);
        if (static_cast<int>(e) == o.target) {
            plan.truth = static_cast<int>(plan.x[e]);
            plan.x[e] = 0;
        }
        unobserved[e] = plan.x[e] == 0;
    }
    if (o.target >= 0) {
        plan.queries.push_back(o.target);
    } else {
        for (std::size_t e = 0; e < n; ++e)
            if (unobserved[e]) plan.queries.push_back(static_cast<int>(e));
    }
    // Relevant unobserved elements: the queries and the unobserved ancestors of an observed
    // element or a query. The others are barren: their CPDs sum to one.
    std::vector<char> relevant(n, 0);
    std::vector<int> stack;
    for (int q : plan.queries) relevant[static_cast<std::size_t>(q)] = 1;
    for (std::size_t e = 0; e < n; ++e)
        if (g.elements[e].binary && (!unobserved[e] || relevant[e])) stack.push_back(static_cast<int>(e));
    while (!stack.empty()) {
        const int e = stack.back();
        stack.pop_back();
        for (int p : parents[static_cast<std::size_t>(e)])
            if (unobserved[static_cast<std::size_t>(p)] && !relevant[static_cast<std::size_t>(p)]) {
                relevant[static_cast<std::size_t>(p)] = 1;
                stack.push_back(p);
            }
    }
    // Union the relevant elements that share a CPD.
    std::vector<int> root(n);
    std::iota(root.begin(), root.end(), 0);
    std::vector<int> attached;  // CPDs that involve a relevant element
    for (std::size_t e = 0; e < n; ++e) {
        if (!g.elements[e].binary || (unobserved[e] && !relevant[e])) continue;
        int anchor = relevant[e] ? static_cast<int>(e) : -1;
        for (int p : parents[e]) {
            if (!relevant[static_cast<std::size_t>(p)]) continue;
            if (anchor < 0) anchor = p;
            else root[static_cast<std::size_t>(find_root(root, p))] = find_root(root, anchor);
        }
        if (anchor < 0) plan.complete.push_back(static_cast<int>(e));
        else attached.push_back(static_cast<int>(e));
    }
    std::vector<int> group_of(n, -1), local(n, -1);
    for (std::size_t e = 0; e < n; ++e) {
        if (!relevant[e]) continue;
        const auto r = static_cast<std::size_t>(find_root(root, static_cast<int>(e)));
        if (group_of[r] < 0) {
            group_of[r] = static_cast<int>(plan.groups.size());
            plan.groups.emplace_back();
        }
        Group& grp = plan.groups[static_cast<std::size_t>(group_of[r])];
        group_of[e] = group_of[r];
        local[e] = static_cast<int>(grp.vars.size());
        grp.vars.push_back(static_cast<int>(e));
    }
    for (int e : attached) {
        int member = relevant[static_cast<std::size_t>(e)] ? e : -1;
        if (member < 0)
            for (int p : parents[static_cast<std::size_t>(e)])
                if (relevant[static_cast<std::size_t>(p)]) member = p;
        plan.groups[static_cast<std::size_t>(group_of[static_cast<std::size_t>(member)])].factors.push_back(e);
    }
    for (int q : plan.queries) plan.where.emplace_back(group_of[static_cast<std::size_t>(q)], local[static_cast<std::size_t>(q)]);
    for (std::size_t gi = 0; gi < plan.groups.size(); ++gi)
        if (static_cast<int>(plan.groups[gi].vars.size()) > o.max_enumerated)
            plan_elimination(g, d, pattern, o, block_offsets, gi, plan);
    return plan;
}
}  // namespace

std::vector<Prediction> predict(const ir::Graph& g, const Dataset& d, const Eigen::MatrixXd& draws, const PredictOptions& o) {
    if (o.target >= static_cast<int>(g.elements.size()) ||
        (o.target >= 0 && !g.elements[static_cast<std::size_t>(o.target)].binary))
        throw Error(ErrorKind::usage, "predict: the target must be a node of the model");
    if (draws.cols() != g.dim)
        throw Error(ErrorKind::usage, fmt::format("predict: the draws have {} values each, the model {} parameters", draws.cols(), g.dim));
    if (draws.rows() == 0) throw Error(ErrorKind::usage, "predict: no posterior draws");
    if (!draws.allFinite()) throw Error(ErrorKind::usage, "predict: a posterior draw is not finite");
    if (d.row_pattern.size() != static_cast<std::size_t>(d.rows))
        throw Error(ErrorKind::usage, "predict: the dataset does not record its rows' order");
    std::vector<int> block_offsets;
    for (const auto& b : g.blocks) block_offsets.push_back(b.offset);
    std::vector<std::vector<int>> parents(g.elements.size());
    for (std::size_t e = 0; e < g.elements.size(); ++e)
        if (g.elements[e].binary) parents[e] = g.parents(static_cast<int>(e));

    // Per pattern: P(x_j = +1 | x_o, D) for each query.
    std::vector<std::vector<double>> p_of(static_cast<std::size_t>(d.patterns));
    std::vector<int> truth_of(static_cast<std::size_t>(d.patterns), 0);
    std::vector<RowPlan> plans;
    std::vector<double> terms;
    const Eigen::MatrixXd by_draw = draws.transpose();  // one θ per column: no copy per draw
    for (int pat = 0; pat < d.patterns; ++pat) {
        RowPlan plan = plan_row(g, d, pat, o, parents, block_offsets);
        truth_of[static_cast<std::size_t>(pat)] = plan.truth;
        std::size_t most = 1;
        for (const Group& grp : plan.groups)
            if (!grp.eliminated) most = std::max(most, std::size_t{1} << grp.vars.size());
        terms.resize(std::max(terms.size(), most));
        const std::size_t nq = plan.queries.size();
        std::vector<LogSum> numerator(nq);
        LogSum denominator;
        std::vector<double> conditional(nq), group_total(plan.groups.size());
        for (Eigen::Index s = 0; s < by_draw.cols(); ++s) {
            const auto theta = by_draw.col(s);
            double log_obs = 0;
            for (int e : plan.complete) log_obs += log_factor(g, e, theta, plan.x);
            for (std::size_t gi = 0; gi < plan.groups.size(); ++gi) {
                const Group& grp = plan.groups[gi];
                if (grp.eliminated) {
                    EliminatedGroup& eg = *grp.eliminated;
                    group_total[gi] = eliminated_log(eg, 0, theta);
                    log_obs += group_total[gi];
                    for (std::size_t q = 0; q < nq; ++q)
                        if (eg.case_of[q] >= 0) conditional[q] = eliminated_log(eg, eg.case_of[q], theta) - group_total[gi];
                    continue;
                }
                const std::size_t configs = std::size_t{1} << grp.vars.size();
                for (std::size_t c = 0; c < configs; ++c) {
                    for (std::size_t k = 0; k < grp.vars.size(); ++k)
                        plan.x[static_cast<std::size_t>(grp.vars[k])] = (c >> k) & 1u ? 1.0 : -1.0;
                    double lt = 0;
                    for (int e : grp.factors) lt += log_factor(g, e, theta, plan.x);
                    terms[c] = lt;
                }
                group_total[gi] = inference::log_sum_exp(terms.begin(), terms.begin() + static_cast<std::ptrdiff_t>(configs));
                log_obs += group_total[gi];
                for (std::size_t q = 0; q < nq; ++q) {
                    if (plan.where[q].first != static_cast<int>(gi)) continue;
                    LogSum plus;
                    for (std::size_t c = 0; c < configs; ++c)
                        if ((c >> plan.where[q].second) & 1u) plus.add(terms[c]);
                    conditional[q] = plus.value() - group_total[gi];
                }
            }
            denominator.add(log_obs);
            for (std::size_t q = 0; q < nq; ++q) numerator[q].add(log_obs + conditional[q]);
        }
        auto& p = p_of[static_cast<std::size_t>(pat)];
        for (std::size_t q = 0; q < nq; ++q) p.push_back(std::clamp(std::exp(numerator[q].value() - denominator.value()), 0.0, 1.0));
        for (Group& grp : plan.groups) grp.eliminated.reset();  // only the queries are read below
        plans.push_back(std::move(plan));
    }
    std::vector<Prediction> out;
    for (std::size_t r = 0; r < d.row_pattern.size(); ++r) {
        const auto pat = static_cast<std::size_t>(d.row_pattern[r]);
        for (std::size_t q = 0; q < plans[pat].queries.size(); ++q)
            out.push_back({static_cast<long>(r + 1), plans[pat].queries[q], p_of[pat][q], truth_of[pat]});
    }
    return out;
}

PredictionScores score_predictions(const std::vector<Prediction>& predictions) {
    PredictionScores s;
    double correct = 0;
    for (const auto& p : predictions) {
        if (p.truth == 0) continue;
        ++s.scored;
        const double y = p.truth > 0 ? 1.0 : 0.0;
        correct += (p.p > 0.5) == (p.truth > 0);
        s.log_loss -= std::log(std::max(p.truth > 0 ? p.p : 1 - p.p, std::numeric_limits<double>::min()));
        s.brier += (p.p - y) * (p.p - y);
    }
    if (s.scored > 0) {
        s.accuracy = correct / static_cast<double>(s.scored);
        s.log_loss /= static_cast<double>(s.scored);
        s.brier /= static_cast<double>(s.scored);
    }
    return s;
}

Eigen::MatrixXd draws_from_stan_csv(const ir::Graph& g, const std::vector<std::string>& files, std::vector<std::string>* notices) {
    if (files.empty()) throw Error(ErrorKind::usage, "predict: no draw files given");
    std::vector<std::string> names;
    for (int k = 0; k < g.dim; ++k) names.push_back(g.theta_csv_name(k));
    std::vector<Eigen::MatrixXd> parts;
    Eigen::Index total = 0;
    for (const auto& f : files) {
        const StanCsv c = read_stan_csv(f);
        std::vector<int> index;
        for (int k = 0; k < g.dim; ++k) {
            const auto it = std::find(c.parameter_columns.begin(), c.parameter_columns.end(), names[static_cast<std::size_t>(k)]);
            if (it == c.parameter_columns.end())
                throw Error(ErrorKind::data,
                            fmt::format("{}: no column '{}' for the parameter {} of model {}; were these draws made with "
                                        "another model? (the file's parameter columns: {})",
                                        f, names[static_cast<std::size_t>(k)], g.theta_name(k), g.name,
                                        c.parameter_columns.empty() ? std::string("none") : fmt::format("{}", fmt::join(c.parameter_columns, ", "))));
            index.push_back(static_cast<int>(it - c.parameter_columns.begin()));
        }
        std::vector<std::string> extra;
        for (const auto& col : c.parameter_columns)
            if (std::find(names.begin(), names.end(), col) == names.end()) extra.push_back(col);
        if (!extra.empty() && notices)
            notices->push_back(fmt::format("{}: columns that are not parameters of the model are ignored: {}", f, fmt::join(extra, ", ")));
        if (c.draws.rows() == 0) throw Error(ErrorKind::data, fmt::format("{}: the file holds no draws", f));
        Eigen::MatrixXd part(c.draws.rows(), g.dim);
        for (int k = 0; k < g.dim; ++k) part.col(k) = c.draws.col(index[static_cast<std::size_t>(k)]);
        if (!part.allFinite()) throw Error(ErrorKind::data, fmt::format("{}: a draw of the model's parameters is not finite", f));
        total += part.rows();
        parts.push_back(std::move(part));
    }
    Eigen::MatrixXd out(total, g.dim);
    Eigen::Index row = 0;
    for (const auto& p : parts) {
        out.middleRows(row, p.rows()) = p;
        row += p.rows();
    }
    return out;
}

Dataset load_prediction_csv(const ir::Graph& g, const std::string& path, std::vector<std::string>* notices) {
    std::string text = read_file(path, "data file");
    CsvReader reader(text, path);
    if (!reader.next())
        throw Error(ErrorKind::data, fmt::format("{}: the file is empty; expected a header row naming the columns, then one "
                                                 "row per case to predict",
                                                 path));
    if (notices && reader.separator() != ',') notices->push_back(reader.separator_notice());
    std::vector<std::string_view> header(reader.fields().begin(), reader.fields().end());
    // Observed nodes without a column are missing in every row.
    std::vector<std::string> absent;
    for (const auto& el : g.elements) {
        if (!el.binary || el.hidden) continue;
        std::string dotted = el.name;
        std::replace(dotted.begin(), dotted.end(), '[', '.');
        dotted.erase(std::remove(dotted.begin(), dotted.end(), ']'), dotted.end());
        if (std::find(header.begin(), header.end(), el.name) == header.end() &&
            std::find(header.begin(), header.end(), dotted) == header.end())
            absent.push_back(el.name);
    }
    for (const auto& a : absent) header.emplace_back(a);
    if (!absent.empty() && notices)
        notices->push_back(fmt::format("{}: no column for {}: predicted in every row", path, fmt::join(absent, ", ")));
    DatasetBuilder builder(g, path);
    builder.keep_row_patterns();
    LoadNotes notes;
    builder.set_header(header, reader.line(), &notes);
    if (notices) notices->insert(notices->end(), notes.notices.begin(), notes.notices.end());
    std::vector<std::string_view> row;
    try {
        while (reader.next()) {
            row.assign(reader.fields().begin(), reader.fields().end());
            row.resize(row.size() + absent.size());
            builder.add_text_row(row, reader.line());
        }
    } catch (const Error& e) {
        if (e.kind() != ErrorKind::data) throw;
        builder.errors().add_placed(e.line(), e.column(), e.what());
    }
    return builder.finish();
}

namespace {
Eigen::MatrixXd gaussian_draws(const Eigen::VectorXd& mean, const std::function<inference::GaussianProposal()>& make,
                               long n, std::uint64_t seed) {
    Eigen::MatrixXd draws(n, mean.size());
    if (mean.size() == 0) return draws;
    inference::GaussianProposal normal = [&] {
        try {
            return make();
        } catch (const std::invalid_argument& e) {
            throw Error(ErrorKind::inference, fmt::format("the variational posterior cannot be sampled: {}", e.what()));
        }
    }();
    inference::Rng rng(seed, 0);
    Eigen::VectorXd theta(mean.size());
    for (long s = 0; s < n; ++s) {
        normal.sample(rng, theta);
        draws.row(s) = theta.transpose();
    }
    return draws;
}
}  // namespace

Eigen::MatrixXd gaussian_draws(const Eigen::VectorXd& mean, const Eigen::MatrixXd& cov, long n, std::uint64_t seed) {
    return gaussian_draws(mean, [&] { return inference::GaussianProposal(mean, cov); }, n, seed);
}

Eigen::MatrixXd gaussian_draws(const VbFit& q, long n, std::uint64_t seed) {
    return gaussian_draws(q.mean, [&] { return q.proposal(); }, n, seed);
}

}  // namespace vbn
