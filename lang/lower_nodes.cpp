// Node distributions into the canonical form of docs/design.md §1: per element i,
//   logit P(x_i = +1 | parents) = offset_i + Σ c_k x_{j_k} + θ_i' f_i.
// Constant terms add to the offset, `CONST * PARENTS` gives fixed terms, a parameter gives
// learned features; shapes of parameters follow from the node and the parent count (§2).
#include "lang/lower_state.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace vbn::lang::lowering {

namespace x3 = boost::spirit::x3;

namespace {

const char* kind_word(const ir::Variable& v) { return v.kind == ir::VariableKind::binary ? "node" : "covariate"; }

std::vector<std::string> variable_names(const Lowering& s) {
    std::vector<std::string> out;
    for (std::size_t v = 0; v < s.g.variables.size(); ++v)
        if (!s.duplicate[v]) out.push_back(s.g.variables[v].name);
    return out;
}

// The parents of one node, element by element, with the checks that need the whole list.
struct NodeContext {
    int variable = 0;
    // Entries already used by an earlier term or item: a parent {e}, or a product's
    // factors, sorted.
    std::set<std::vector<int>> seen;
    const ast::identifier* bias = nullptr;  // the node's first learned bias, if any
    Location bias_loc;
    double bias_sign = 1.0;
};

// A second learned bias adds to the logit exactly as the first does (both multiply the
// constant feature f = 1 of eq. (1)), so the likelihood depends only on their sum: each is
// identified by its prior alone, and the posterior is a ridge along b - c.
void warn_second_bias(Lowering& s, const NodeContext& node, const ast::identifier& id, Location loc, double sign) {
    const std::string sum = fmt::format("{}{} {} {}", node.bias_sign < 0 ? "-" : "", node.bias->name, sign < 0 ? '-' : '+', id.name);
    s.diag.warning(loc, fmt::format("'{}' is a second learned bias of '{}' (after '{}' on line {}); the data inform only "
                                    "{}, so each alone is known only through its prior: keep one bias",
                                    id.name, s.variable(node.variable).name, node.bias->name, node.bias_loc.line, sum));
}

void unknown_parent(Lowering& s, const std::string& name, Location loc) {
    if (s.parameter_names.count(name)) {
        s.diag.error(loc, fmt::format("'{}' is a parameter, not a node or covariate; a parent must be a declared node or "
                                      "covariate",
                                      name));
        return;
    }
    const auto names = variable_names(s);
    const std::string guess = closest_name(name, names);
    if (!guess.empty()) s.diag.error(loc, fmt::format("unknown parent '{}'; did you mean '{}'?", name, guess));
    else if (names.empty()) s.diag.error(loc, fmt::format("unknown parent '{}'; no nodes or covariates are declared", name));
    else s.diag.error(loc, fmt::format("unknown parent '{}'; declared nodes and covariates are {}", name, name_list(names)));
}

// The elements one parent item names: all of an array, one element, or a scalar.
std::vector<int> resolve_item(Lowering& s, const ast::parent_ref& r, Location loc, bool& complete) {
    const auto found = s.variable_by_name.find(r.name.name);
    if (found == s.variable_by_name.end()) {
        unknown_parent(s, r.name.name, loc);
        complete = false;
        return {};
    }
    const ir::Variable& v = s.variable(found->second);
    if (!r.index) {
        std::vector<int> all;
        for (int k = 0; k < v.size; ++k) all.push_back(v.first_element + k);
        return all;
    }
    const int index = *r.index;
    if (!v.is_array) {
        s.diag.error(s.bracket_after(r.name.name, r, loc),
                     fmt::format("'{}' is a single {}, not an array, so it cannot be indexed; write '{}'", v.name, kind_word(v), v.name));
        return {v.first_element};  // the intent is clear, so go on with it
    }
    if (index < 1 || index > v.size) {
        s.diag.error(s.bracket_after(r.name.name, r, loc),
                     fmt::format("index {} is out of range for '{}', which has {} element{}; indices run from 1 to {}", index,
                                 v.name, v.size, v.size == 1 ? "" : "s", v.size));
        complete = false;
        return {};
    }
    return {v.first_element + index - 1};
}

std::string product_text(const Lowering& s, const std::vector<int>& factors) {
    std::string out;
    for (int e : factors) out += (out.empty() ? "" : " * ") + s.element(e).name;
    return out;
}

// A product of parents: every factor one element (a scalar, `v[2]`), no binary node twice
// (x * x = 1 for x = ±1: a constant, not an interaction), at most max_product_nodes
// binary factors. Returns the factors, or nothing after an error.
std::vector<int> resolve_product(Lowering& s, const std::vector<const ast::parent_ref*>& refs, Location loc,
                                 bool& complete) {
    std::vector<int> factors;
    int binary = 0;
    for (const ast::parent_ref* r : refs) {
        const Location at = s.name_at(r->name, *r, loc);
        const std::vector<int> es = resolve_item(s, *r, at, complete);
        if (es.empty()) return {};
        if (es.size() > 1) {
            s.diag.error(at, fmt::format("'{}' is an array of {} elements; a product of parents takes one element of it, "
                                         "e.g. '{}[1]'",
                                         r->name.name, es.size(), r->name.name));
            complete = false;
            return {};
        }
        const int e = es.front();
        if (s.element(e).binary) {
            if (std::find(factors.begin(), factors.end(), e) != factors.end()) {
                s.diag.error(at, fmt::format("'{}' appears twice in a product; {} * {} = 1 for a node with values ±1, so "
                                             "the product is not an interaction: leave the repeated factor out",
                                             s.element(e).name, s.element(e).name, s.element(e).name));
                complete = false;
                return {};
            }
            if (++binary > ir::max_product_nodes) {
                s.diag.error(at, fmt::format("a product of parents may hold at most {} nodes", ir::max_product_nodes));
                complete = false;
                return {};
            }
        }
        factors.push_back(e);
    }
    return factors;
}

// Adds one entry (a parent or a product) to out, refusing an entry used before.
void add_entry(Lowering& s, NodeContext& node, Parents& out, std::vector<int> factors, Location loc, bool& reported) {
    std::vector<int> key = factors;
    std::sort(key.begin(), key.end());
    if (!node.seen.insert(key).second && !reported) {
        if (factors.size() == 1)
            s.diag.error(loc, fmt::format("parent '{}' appears twice in the predictor of '{}'; list each parent once",
                                          s.element(factors.front()).name, s.variable(node.variable).name));
        else
            s.diag.error(loc, fmt::format("the product '{}' appears twice in the predictor of '{}'; list each product once",
                                          product_text(s, factors), s.variable(node.variable).name));
        reported = true;
    }
    out.elements.push_back(factors.front());  // kept even when repeated, so shapes stay as written
    out.also.emplace_back(factors.begin() + 1, factors.end());
}

// `lead`, when given, is the first factor of the list's single product (`w * h * o`).
Parents resolve(Lowering& s, NodeContext& node, const ast::parent_list& list, Location fallback,
                const ast::parent_ref* lead = nullptr) {
    Parents out;
    const Location list_loc = s.at(list, fallback);
    for (const auto& item : list.items) {
        std::vector<const ast::parent_ref*> refs;
        if (lead) refs.push_back(lead);
        for (const auto& r : item.factors) refs.push_back(&r);
        if (refs.empty()) continue;
        const ast::parent_ref& first = *refs.front();
        const Location loc = s.name_at(first.name, first, s.at(item, s.at(first, list_loc)));
        bool reported = false;
        if (refs.size() == 1) {
            for (int e : resolve_item(s, first, loc, out.complete)) add_entry(s, node, out, {e}, loc, reported);
            continue;
        }
        std::vector<int> factors = resolve_product(s, refs, loc, out.complete);
        if (!factors.empty()) add_entry(s, node, out, std::move(factors), loc, reported);
    }
    return out;
}

void add_offset(Lowering& s, const ir::Variable& v, double c, Location loc) {
    const double before = s.g.cpds[static_cast<std::size_t>(v.first_element)].offset;
    if (!std::isfinite(before + c)) {
        s.diag.error(loc, fmt::format("the fixed offset of '{}' is not finite ({} + {}); constants must add up to a finite "
                                      "number",
                                      v.name, format_number(before), format_number(c)));
        return;
    }
    for (int k = 0; k < v.size; ++k) s.g.cpds[static_cast<std::size_t>(v.first_element + k)].offset += c;
}

// Fixed weights: coefs[q] on entry q of the parents.
void add_fixed(Lowering& s, const ir::Variable& v, const Parents& parents, const std::vector<double>& coefs,
               Location loc) {
    const long added = static_cast<long>(v.size) * static_cast<long>(parents.elements.size());
    if (s.fixed_terms + added > s.limits.fixed_terms) {
        s.diag.error(loc, fmt::format("the model is too large: with this term it has {} fixed weights, and at most {} fit",
                                      s.fixed_terms + added, s.limits.fixed_terms));
        return;
    }
    s.fixed_terms += added;
    for (int k = 0; k < v.size; ++k)
        for (std::size_t q = 0; q < parents.elements.size(); ++q)
            s.g.cpds[static_cast<std::size_t>(v.first_element + k)].fixed.push_back(
                {parents.elements[q], coefs[q], parents.also[q]});
}

// Whether P more learned weights per element of `v` stay within the limits on block sizes.
bool fits(Lowering& s, const ir::Variable& v, const ParamInfo& info, int P) {
    const auto before = static_cast<long>(s.g.cpds[static_cast<std::size_t>(v.first_element)].features.size());
    const long after = before + P;
    if (after > s.limits.block_size) {
        s.diag.error(info.loc, fmt::format("too many learned weights: with '{}' each element of '{}' has {}, and one block "
                                           "holds at most {}",
                                           info.name, v.name, after, s.limits.block_size));
        return false;
    }
    const long added = static_cast<long>(v.size) * (after * after - before * before);
    if (s.covariance_entries + added > s.limits.covariance_entries) {
        s.diag.error(info.loc, fmt::format("the model is too large: with '{}' the prior covariances of its blocks need {} "
                                           "entries, and at most {} fit",
                                           info.name, s.covariance_entries + added, s.limits.covariance_entries));
        return false;
    }
    s.covariance_entries += added;
    return true;
}

// A new parameter and its features. Element-wise over an array node of size K: a bias is
// vector[K] and weights on P parents are K×P (vector[K] when P = 1); for a scalar node the
// weights are vector[P] (scalar when P = 1).
void add_parameter(Lowering& s, int node, const ast::identifier& id, Location loc, double sign, const Parents* parents) {
    const ir::Variable& v = s.variable(node);
    const int p = static_cast<int>(s.params.size());
    ParamInfo info;
    info.name = id.name;
    info.node = node;
    info.loc = loc;
    const int K = v.size;
    const int P = parents ? static_cast<int>(parents->elements.size()) : 1;
    if (parents) info.shape_known = parents->complete;
    if (v.is_array) info.shape = P == 1 ? std::vector<int>{K} : std::vector<int>{K, P};
    else if (P != 1) info.shape = {P};
    if (!fits(s, v, info, P)) {
        info.shape_known = false;  // declared, so its prior is still checked for a name
        s.param_by_name.emplace(id.name, p);
        s.params.push_back(std::move(info));
        return;
    }
    for (int k = 0; k < K; ++k) {
        const auto e = static_cast<std::size_t>(v.first_element + k);
        for (int q = 0; q < P; ++q) {
            const auto qq = static_cast<std::size_t>(q);
            if (parents) s.g.cpds[e].features.push_back({parents->elements[qq], sign, parents->also[qq]});
            else s.g.cpds[e].features.push_back({-1, sign, {}});
            s.weights[e].push_back({p, k * P + q});
        }
    }
    s.param_by_name.emplace(id.name, p);
    s.params.push_back(std::move(info));
}

// `h * w`, `h * o * w` or `h * w * o`: a parameter among the factors after a node. The
// weight goes first; say so, spelt with the user's names ("; the parameter goes first, as in
// 'w * h * o'"). Empty unless one unbracketed product holds exactly one parameter and every
// other factor is a declared node or covariate (else the usual errors say more).
std::string weight_first_hint(const Lowering& s, const ast::identifier& coef, const ast::term& t) {
    if (t.parents && (t.parents->bracketed || t.parents->items.size() != 1)) return {};
    std::vector<std::string> names{t.middle.name};
    if (t.parents)
        for (const auto& f : t.parents->items.front().factors)
            names.push_back(f.index ? fmt::format("{}[{}]", f.name.name, *f.index) : f.name.name);
    std::string param, rest = coef.name;
    for (const auto& n : names) {
        if (n.empty()) continue;  // no middle name
        const std::string base = n.substr(0, n.find('['));
        if (n == base && s.parameter_names.count(n) && !s.variable_by_name.count(n)) {
            if (!param.empty()) return {};
            param = n;
        } else if (s.variable_by_name.count(base)) {
            rest += " * " + n;
        } else {
            return {};
        }
    }
    if (param.empty()) return {};
    return fmt::format("; the parameter goes first, as in '{} * {}'", param, rest);
}

// `h * w`, `h * o * w`, `h * w * o`: one error at the node, with the fix, instead of the
// node-as-coefficient and parameter-as-parent errors one after the other. True if reported.
bool node_before_parameter(Lowering& s, const ast::term& t, Location term_loc) {
    const auto* coef = boost::get<ast::identifier>(&t.coef.get());
    if (!coef || !t.parents) return false;
    const auto known = s.variable_by_name.find(coef->name);
    if (known == s.variable_by_name.end()) return false;
    const std::string hint = weight_first_hint(s, *coef, t);
    if (hint.empty()) return false;
    s.diag.error(s.name_at(*coef, t, term_loc),
                 fmt::format("'{}' is a {}, not a parameter; the coefficient before '*' must be a parameter name or a "
                             "constant{}",
                             coef->name, kind_word(s.variable(known->second)), hint));
    return true;
}

// A learned term: parameter `id` with features sign × parents (or a bias without them).
void lower_learned(Lowering& s, NodeContext& node, const ast::identifier& id, const ast::term& t, Location loc,
                   double sign, const Parents* parents) {
    if (const auto known = s.variable_by_name.find(id.name); known != s.variable_by_name.end()) {
        const char* kind = kind_word(s.variable(known->second));
        if (t.parents)
            s.diag.error(loc, fmt::format("'{}' is a {}, not a parameter; the coefficient before '*' must be a parameter name "
                                          "or a constant",
                                          id.name, kind));
        else
            s.diag.error(loc, fmt::format("'{}' is a {}, but a term without '*' is a constant or a learned bias; to weight "
                                          "'{}' put a parameter or a constant before it, e.g. 'w * {}'",
                                          id.name, kind, id.name, id.name));
        return;
    }
    if (!use_declared(s, node.variable, id, loc, sign, parents)) {
        if (const auto used = s.param_by_name.find(id.name); used != s.param_by_name.end()) {
            const ParamInfo& first = s.params[static_cast<std::size_t>(used->second)];
            s.diag.error(loc, fmt::format("parameter '{}' is already used on line {}; an undeclared parameter belongs to "
                                          "exactly one term of one node: give this term a parameter of its own, or "
                                          "declare 'param {};' to share one weight",
                                          id.name, first.loc.line, id.name));
            return;
        }
        add_parameter(s, node.variable, id, loc, sign, parents);
    }
    if (parents) return;
    if (node.bias) warn_second_bias(s, node, id, loc, sign);
    else {
        node.bias = &id;
        node.bias_loc = loc;
        node.bias_sign = sign;
    }
}

// `[1, 2] * [h, o]`: one fixed weight per entry of the list, 1·h + 2·o.
void lower_vector_weights(Lowering& s, NodeContext& node, const ast::array_literal& arr, const ast::term& t,
                          Location term_loc, double sign) {
    const ir::Variable& v = s.variable(node.variable);
    if (!t.parents || !t.middle.name.empty()) {
        s.diag.error(term_loc, "a vector of fixed weights multiplies a bracketed list of parents, one weight each, as in "
                               "'[1, 2] * [h, o]'");
        return;
    }
    const Parents parents = resolve(s, node, *t.parents, term_loc);
    const auto lit = s.eval.value(ast::value(x3::forward_ast<ast::array_literal>(arr)), term_loc);
    if (!lit || !parents.complete) return;
    if (lit->shape.size() != 1) {
        s.diag.error(lit->loc, fmt::format("fixed weights on parents are a vector, one per parent, not a {}",
                                           shape_text(lit->shape)));
        return;
    }
    const std::size_t n = parents.elements.size();
    if (lit->values.size() != n) {
        s.diag.error(lit->loc, fmt::format("the vector of fixed weights has {} entries, but the parents after '*' are {}; "
                                           "give one weight per parent",
                                           lit->values.size(), n));
        return;
    }
    std::vector<double> coefs(lit->values);
    for (double& c : coefs) c *= sign;
    add_fixed(s, v, parents, coefs, lit->loc);
}

void lower_term(Lowering& s, NodeContext& node, const ast::term& t, Location node_loc) {
    const ir::Variable& v = s.variable(node.variable);
    const double sign = t.sign == '-' ? -1.0 : 1.0;
    const Location term_loc = s.at(t, node_loc);
    if (const auto* arr = boost::get<x3::forward_ast<ast::array_literal>>(&t.coef.get())) {
        lower_vector_weights(s, node, arr->get(), t, term_loc, sign);
        return;
    }
    if (node_before_parameter(s, t, term_loc)) return;
    // The name between two '*' (ast::term): a node or covariate starts a product of
    // parents; after a constant anything else is the parameter of a scaled term.
    ast::parent_ref lead;
    const ast::parent_ref* lead_ptr = nullptr;
    const ast::identifier* scaled = nullptr;
    if (!t.middle.name.empty()) {
        const Location mloc = s.name_at(t.middle, t, term_loc);
        static_cast<x3::position_tagged&>(lead) = t;  // so name_at finds it inside the term
        lead.name = t.middle;
        if (s.variable_by_name.count(t.middle.name)) {
            if (t.parents && t.parents->bracketed) {
                s.diag.error(mloc, fmt::format("a product of parents multiplies single parents, not a list; write each "
                                               "product in the list, e.g. '[{} * a, {} * b]'",
                                               t.middle.name, t.middle.name));
                return;
            }
            lead_ptr = &lead;
        } else if (boost::get<ast::expression>(&t.coef.get())) {
            scaled = &t.middle;
        } else if (s.parameter_names.count(t.middle.name)) {
            s.diag.error(mloc, fmt::format("'{}' is a second parameter in one term; a term has one parameter, and a fixed "
                                           "scale goes first, as in '2 * w * h'",
                                           t.middle.name));
            return;
        } else {
            unknown_parent(s, t.middle.name, mloc);
            return;
        }
    }
    const Parents parents = t.parents ? resolve(s, node, *t.parents, term_loc, lead_ptr) : Parents{};

    if (const auto* e = boost::get<ast::expression>(&t.coef.get())) {
        const auto c = s.eval.expression(*e, term_loc);
        if (!c) return;
        if (scaled) {
            // `2 * w * h`: the learned weight w on the feature 2·h.
            // After the error the term is still lowered, so that its parameter counts as used.
            if (*c == 0)
                s.diag.error(s.at(*e, term_loc), fmt::format("a fixed scale of 0 makes '{}' do nothing; leave the term "
                                                             "out or use another scale",
                                                             scaled->name));
            lower_learned(s, node, *scaled, t, s.name_at(*scaled, t, term_loc), sign * *c, &parents);
            return;
        }
        if (t.parents)
            add_fixed(s, v, parents, std::vector<double>(parents.elements.size(), sign * *c), s.at(*e, term_loc));
        else add_offset(s, v, sign * *c, s.at(*e, term_loc));
        return;
    }
    const auto& id = boost::get<ast::identifier>(t.coef.get());
    lower_learned(s, node, id, t, s.name_at(id, t, term_loc), sign, t.parents ? &parents : nullptr);
}

void lower_bernoulli(Lowering& s, const ir::Variable& v, const ast::bernoulli_dist& b, Location node_loc) {
    const Location loc = s.at(b.p, s.at(b, node_loc));
    const auto p = s.eval.expression(b.p, loc);
    if (!p) return;
    if (!(*p > 0 && *p < 1)) {
        s.diag.error(loc, fmt::format("bernoulli needs a probability strictly between 0 and 1, found {}", format_number(*p)));
        return;
    }
    for (int k = 0; k < v.size; ++k) {
        ir::Cpd& c = s.g.cpds[static_cast<std::size_t>(v.first_element + k)];
        c.logistic = false;
        c.offset = logit(*p);
    }
}

}  // namespace

void lower_nodes(Lowering& s) {
    for (int vi = 0; vi < static_cast<int>(s.g.variables.size()); ++vi) {
        const ast::node_decl* decl = s.node_decls[static_cast<std::size_t>(vi)];
        if (!decl) continue;
        const ir::Variable& v = s.variable(vi);
        const Location node_loc = s.at(*decl, v.loc);
        if (const auto* b = boost::get<ast::bernoulli_dist>(&decl->dist.get())) {
            lower_bernoulli(s, v, *b, node_loc);
            continue;
        }
        for (int k = 0; k < v.size; ++k) s.g.cpds[static_cast<std::size_t>(v.first_element + k)].logistic = true;
        NodeContext node{vi, {}, nullptr, {}, 1.0};
        const auto& logistic = boost::get<ast::logistic_dist>(decl->dist.get());
        for (const auto& t : logistic.linear.terms) lower_term(s, node, t, node_loc);
    }
}

}  // namespace vbn::lang::lowering
