// The graph as a whole: acyclicity and a deterministic topological order (Kahn's
// algorithm, ties broken by declaration order), warnings about nodes that cannot matter,
// and the parameter blocks θ_i laid end to end in that order.
#include "lang/lower_state.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <queue>

#include <fmt/format.h>

namespace vbn::lang::lowering {

namespace {

// Binary parents and children of every element: the edges that order the network.
// Covariates are inputs, outside the order.
struct Edges {
    std::vector<std::vector<int>> parents;
    std::vector<std::vector<int>> children;
};

Edges binary_edges(const Lowering& s) {
    const auto n = s.g.elements.size();
    Edges out{std::vector<std::vector<int>>(n), std::vector<std::vector<int>>(n)};
    for (std::size_t e = 0; e < n; ++e) {
        if (!s.g.elements[e].binary) continue;
        for (int p : s.g.parents(static_cast<int>(e)))
            if (s.element(p).binary) {
                out.parents[e].push_back(p);
                out.children[static_cast<std::size_t>(p)].push_back(static_cast<int>(e));
            }
    }
    return out;
}

// A cycle through `start`, which has a parent that is not done yet, as a list in
// parent-to-child order beginning with its earliest-declared element.
std::vector<int> find_cycle(const Edges& edges, const std::vector<bool>& done, int start) {
    std::vector<int> path;
    std::vector<int> position(edges.parents.size(), -1);
    int cur = start;
    while (position[static_cast<std::size_t>(cur)] < 0) {
        position[static_cast<std::size_t>(cur)] = static_cast<int>(path.size());
        path.push_back(cur);
        // Every element left after Kahn's algorithm has a parent that is left too.
        for (int p : edges.parents[static_cast<std::size_t>(cur)])
            if (!done[static_cast<std::size_t>(p)]) {
                cur = p;
                break;
            }
    }
    // The walk went from child to parent; reverse it into the direction of the edges.
    std::vector<int> cycle(path.begin() + position[static_cast<std::size_t>(cur)], path.end());
    std::reverse(cycle.begin(), cycle.end());
    std::rotate(cycle.begin(), std::min_element(cycle.begin(), cycle.end()), cycle.end());
    return cycle;
}

void report_cycle(Lowering& s, const std::vector<int>& cycle) {
    std::string text;
    for (int e : cycle) text += s.element(e).name + " -> ";
    text += s.element(cycle.front()).name;
    const ir::Variable& first = s.variable(s.element(cycle.front()).variable);
    const char* advice = cycle.size() == 1 ? "a node cannot be its own parent"
                                           : "a belief network must be acyclic, so remove one of these edges";
    s.diag.error(first.loc, fmt::format("the graph has a cycle: {}; {}", text, advice));
}

void warn_childless_hidden(Lowering& s, const Edges& edges) {
    for (std::size_t vi = 0; vi < s.g.variables.size(); ++vi) {
        const ir::Variable& v = s.g.variables[vi];
        if (v.kind != ir::VariableKind::binary || !v.hidden || s.duplicate[vi]) continue;
        std::vector<std::string> childless;
        for (int k = 0; k < v.size; ++k)
            if (edges.children[static_cast<std::size_t>(v.first_element + k)].empty())
                childless.push_back(s.element(v.first_element + k).name);
        if (childless.empty()) continue;
        if (static_cast<int>(childless.size()) == v.size)
            s.diag.warning(v.loc, fmt::format("hidden node '{}' has no children, so it does not affect the posterior; make it "
                                              "a parent of another node or remove it",
                                              v.name));
        else
            s.diag.warning(v.loc, fmt::format("hidden element{} {} of '{}' {} no children, so {} not affect the posterior",
                                              childless.size() == 1 ? "" : "s", name_list(childless),
                                              v.name, childless.size() == 1 ? "has" : "have",
                                              childless.size() == 1 ? "it does" : "they do"));
    }
}

// A covariate that is no node's parent changes no likelihood term: its column is read and
// ignored, which is almost always a forgotten term or a misspelt parent.
void warn_unused_covariates(Lowering& s) {
    std::vector<bool> used(s.g.elements.size(), false);
    for (std::size_t e = 0; e < s.g.elements.size(); ++e)
        if (s.g.elements[e].binary)
            for (int p : s.g.parents(static_cast<int>(e))) used[static_cast<std::size_t>(p)] = true;
    for (std::size_t vi = 0; vi < s.g.variables.size(); ++vi) {
        const ir::Variable& v = s.g.variables[vi];
        if (v.kind != ir::VariableKind::covariate || s.duplicate[vi]) continue;
        std::vector<std::string> unused;
        for (int k = 0; k < v.size; ++k)
            if (!used[static_cast<std::size_t>(v.first_element + k)]) unused.push_back(s.element(v.first_element + k).name);
        if (unused.empty()) continue;
        if (static_cast<int>(unused.size()) == v.size)
            s.diag.warning(v.loc, fmt::format("covariate '{}' is not a parent of any node, so it does not affect the posterior; "
                                              "use it in a predictor (e.g. 'w * {}') or remove it",
                                              v.name, v.name));
        else
            s.diag.warning(v.loc, fmt::format("element{} {} of covariate '{}' {} of any node, so {} not affect the posterior",
                                              unused.size() == 1 ? "" : "s", name_list(unused), v.name,
                                              unused.size() == 1 ? "is not a parent" : "are not parents",
                                              unused.size() == 1 ? "it does" : "they do"));
    }
}

}  // namespace

void order_graph(Lowering& s) {
    const Edges edges = binary_edges(s);
    const auto n = s.g.elements.size();
    std::vector<int> missing(n, 0);
    std::vector<bool> done(n, false);
    std::priority_queue<int, std::vector<int>, std::greater<>> ready;
    std::size_t binary = 0;
    for (std::size_t e = 0; e < n; ++e) {
        if (!s.g.elements[e].binary) continue;
        ++binary;
        missing[e] = static_cast<int>(edges.parents[e].size());
        if (missing[e] == 0) ready.push(static_cast<int>(e));
    }
    std::size_t finished = 0;
    auto finish = [&](int e) {
        done[static_cast<std::size_t>(e)] = true;
        ++finished;
        for (int c : edges.children[static_cast<std::size_t>(e)])
            if (!done[static_cast<std::size_t>(c)] && --missing[static_cast<std::size_t>(c)] == 0) ready.push(c);
    };
    std::set<int> reported;  // variables already named in a cycle message
    while (finished < binary) {
        while (!ready.empty()) {
            const int e = ready.top();
            ready.pop();
            if (done[static_cast<std::size_t>(e)]) continue;
            s.g.topological_order.push_back(e);
            finish(e);
        }
        if (finished == binary) break;
        // Stuck: what is left holds a cycle. Report it, then take it out and go on, so
        // every independent cycle is reported once.
        int start = 0;
        while (done[static_cast<std::size_t>(start)] || !s.g.elements[static_cast<std::size_t>(start)].binary) ++start;
        const std::vector<int> cycle = find_cycle(edges, done, start);
        bool is_new = false;
        for (int e : cycle) is_new = reported.insert(s.element(e).variable).second || is_new;
        if (is_new) report_cycle(s, cycle);
        for (int e : cycle)
            if (!done[static_cast<std::size_t>(e)]) finish(e);
    }
    warn_childless_hidden(s, edges);
    // After an error (an unknown or misspelt parent, say) the covariate may well be meant as a
    // parent: the error says what to fix, and the warning would only repeat it.
    if (s.diag.error_count() == 0) warn_unused_covariates(s);
}

namespace {

// The node elements tied together by shared weights, as lists in topological order: each
// element with learned features is in exactly one list (itself alone when nothing is shared).
std::vector<std::vector<int>> tied_groups(const Lowering& s) {
    const auto n = s.g.elements.size();
    std::vector<int> root(n);
    for (std::size_t e = 0; e < n; ++e) root[e] = static_cast<int>(e);
    auto at = [](int e) { return static_cast<std::size_t>(e); };
    auto find = [&](int e) {  // with path halving
        while (root[at(e)] != e) e = root[at(e)] = root[at(root[at(e)])];
        return e;
    };
    std::map<std::pair<int, int>, int> first_user;  // (parameter, entry) -> an element using it
    for (int e : s.g.topological_order)
        for (const WeightRef& w : s.weights[static_cast<std::size_t>(e)]) {
            const auto [where, fresh] = first_user.emplace(std::pair(w.param, w.element), e);
            if (!fresh) root[at(find(e))] = find(where->second);
        }
    std::map<int, std::size_t> group_of_root;
    std::vector<std::vector<int>> groups;
    for (int e : s.g.topological_order) {
        const ir::Cpd& cpd = s.g.cpds[static_cast<std::size_t>(e)];
        if (!cpd.logistic || cpd.features.empty()) continue;
        const auto [where, fresh] = group_of_root.emplace(find(e), groups.size());
        if (fresh) groups.emplace_back();
        groups[where->second].push_back(e);
    }
    return groups;
}

// The prior of weight a of block b from its parameter entry; within one mvnormal
// parameter, the covariances with the block's weights before it.
void set_prior(const Lowering& s, const std::vector<WeightRef>& refs, std::size_t a, ir::Block& b) {
    const auto m = static_cast<std::size_t>(b.size);
    const WeightRef& w = refs[a];
    const ParamInfo& pa = s.params[static_cast<std::size_t>(w.param)];
    const auto ea = static_cast<std::size_t>(w.element);
    b.prior_mean[a] = pa.mean[ea];
    b.prior_cov[a * m + a] = pa.var[ea];
    if (!pa.df.empty()) {
        if (b.prior_df.empty()) b.prior_df.assign(m, 0.0);
        b.prior_df[a] = pa.df[ea];
    }
    if (pa.scale >= 0) {
        if (b.prior_scale.empty()) b.prior_scale.assign(m, -1);
        b.prior_scale[a] = pa.scale;
    }
    if (pa.cov.empty()) return;
    for (std::size_t c = 0; c < a; ++c) {
        if (refs[c].param != w.param) continue;
        const double v = pa.cov[ea * static_cast<std::size_t>(pa.size()) + static_cast<std::size_t>(refs[c].element)];
        b.prior_cov[a * m + c] = b.prior_cov[c * m + a] = v;
        if (v != 0) b.prior_diagonal = false;
    }
}

// One block for a group of tied elements: its distinct weights in order of first use, each
// element's features pointed at them. False (with an error) when the block is too large.
bool add_block(Lowering& s, const std::vector<int>& group) {
    std::map<std::pair<int, int>, int> local;
    std::vector<WeightRef> refs;
    for (int e : group)
        for (const WeightRef& w : s.weights[static_cast<std::size_t>(e)])
            if (local.emplace(std::pair(w.param, w.element), static_cast<int>(refs.size())).second) refs.push_back(w);
    // Errors point at the first declared parameter of the block: the one that ties it.
    const auto tying = std::find_if(refs.begin(), refs.end(), [&s](const WeightRef& w) {
        return s.params[static_cast<std::size_t>(w.param)].declared;
    });
    const Location at = s.params[static_cast<std::size_t>((tying == refs.end() ? refs.front() : *tying).param)].loc;
    if (static_cast<long>(refs.size()) > s.limits.block_size) {
        s.diag.error(at, fmt::format("too many learned weights in one block: the declared parameters tie {} node "
                                        "elements with {} weights together, and one block holds at most {}",
                                        group.size(), refs.size(), s.limits.block_size));
        return false;
    }
    // An untied element's prior covariance is already counted (lower_nodes.cpp); a tied
    // block's is counted here, so that many large tied blocks cannot exhaust memory either.
    const long entries = static_cast<long>(refs.size()) * static_cast<long>(refs.size());
    if (group.size() > 1 && s.covariance_entries + entries > s.limits.covariance_entries) {
        s.diag.error(at, fmt::format("the model is too large: with this tied block the prior covariances of its "
                                        "blocks need {} entries, and at most {} fit",
                                        s.covariance_entries + entries, s.limits.covariance_entries));
        return false;
    }
    if (group.size() > 1) s.covariance_entries += entries;
    ir::Block b;
    b.element = group.front();
    b.elements = group;
    b.offset = s.g.dim;
    b.size = static_cast<int>(refs.size());
    const auto m = refs.size();
    b.prior_mean.resize(m);
    b.prior_cov.assign(m * m, 0.0);
    for (std::size_t a = 0; a < m; ++a) {
        set_prior(s, refs, a, b);
        s.g.parameters[static_cast<std::size_t>(refs[a].param)].theta_index[static_cast<std::size_t>(refs[a].element)] =
            b.offset + static_cast<int>(a);
    }
    const int index = static_cast<int>(s.g.blocks.size());
    for (int e : group) {
        ir::Cpd& cpd = s.g.cpds[static_cast<std::size_t>(e)];
        const auto& w = s.weights[static_cast<std::size_t>(e)];
        cpd.block = index;
        for (std::size_t k = 0; k < cpd.features.size(); ++k)
            cpd.features[k].weight = local.at(std::pair(w[k].param, w[k].element));
    }
    s.g.blocks.push_back(std::move(b));
    s.g.dim += static_cast<int>(m);
    return true;
}

// The learned scales after every block's weights in θ (as log τ), each a parameter of its
// own for users, with the weights whose prior it scales.
void add_scales(Lowering& s) {
    for (const ScaleInfo& sc : s.scales) {
        ir::Scale out;
        out.name = sc.name;
        out.kind = sc.kind;
        out.scale = sc.scale;
        out.shape = sc.shape;
        out.rate = sc.rate;
        out.theta_index = s.g.dim;
        ir::Parameter p;
        p.name = sc.name;
        p.theta_index = {s.g.dim};
        p.prior = sc.prior_text;
        p.loc = sc.loc;
        p.scale = static_cast<int>(s.g.scales.size());
        s.g.scales.push_back(std::move(out));
        s.g.parameters.push_back(std::move(p));
        ++s.g.dim;
    }
    for (const ir::Block& b : s.g.blocks)
        for (int k = 0; b.has_learned_scale() && k < b.size; ++k)
            if (const int sc = b.prior_scale[static_cast<std::size_t>(k)]; sc >= 0) {
                s.g.scales[static_cast<std::size_t>(sc)].weights.push_back(b.offset + k);
                s.g.scales[static_cast<std::size_t>(sc)].means.push_back(b.prior_mean[static_cast<std::size_t>(k)]);
            }
}

}  // namespace

// Untied, each element's block holds its features' weights in order, as before declared
// parameters existed; tied elements share one block placed where the first of them is.
void build_blocks(Lowering& s) {
    for (auto& p : s.params) {
        ir::Parameter out;
        out.name = p.name;
        out.shape = p.shape;
        out.theta_index.assign(static_cast<std::size_t>(p.size()), -1);
        out.prior = p.prior_text;
        out.loc = p.loc;
        s.g.parameters.push_back(std::move(out));
    }
    for (const auto& group : tied_groups(s))
        if (!add_block(s, group)) return;
    add_scales(s);
    s.g.index_theta();
}

}  // namespace vbn::lang::lowering
