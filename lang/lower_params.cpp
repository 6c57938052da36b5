// Declared parameters (docs/language.md, "Shared weights"): `param d0;`, `param b[8];`,
// `param W[8, 3];`. A declared parameter keeps its declared shape and may weight several
// terms and nodes; every use reads the same entries of θ. Its shape says how a term's
// features map onto its entries:
//   array node of K elements, P parents:  []     one weight for all
//                                         [K]    one per element          (P = 1)
//                                         [P]    one per parent, shared by the elements (P > 1)
//                                         [K, P] one per element and parent
//   scalar node, P parents:               []     one weight (on their sum when P > 1)
//                                         [P]    one per parent
// A bias counts as P = 1. Undeclared parameters keep the shapes inferred in lower_nodes.cpp.
#include "lang/lower_state.hpp"

#include <fmt/format.h>

namespace vbn::lang::lowering {

namespace {

constexpr long max_declared_size = 1'000'000;

// The declared shape's entry for element k and parent q of the node, or -1 if the shape does
// not fit the term. `shared` is set when every element reads the same entries.
int entry_of(const std::vector<int>& shape, const ir::Variable& v, int P, int k, int q, bool& shared) {
    shared = true;
    if (shape.empty()) return 0;
    const int K = v.size;
    if (shape.size() == 1 && shape[0] == P && (P > 1 || !v.is_array)) return q;
    shared = false;
    if (v.is_array && P == 1 && shape.size() == 1 && shape[0] == K) return k;
    if (v.is_array && shape.size() == 2 && shape[0] == K && shape[1] == P) return k * P + q;
    return -1;
}

// The shapes a term of node v with P parents accepts, for the error message.
std::string accepted_shapes(const ir::Variable& v, int P) {
    if (!v.is_array) return P == 1 ? "a scalar" : fmt::format("a scalar or a {} (one per parent)", shape_text({P}));
    if (P == 1)
        return fmt::format("a scalar (shared by the elements of '{}') or a {} (one per element)", v.name, shape_text({v.size}));
    return fmt::format("a scalar, a {} (one per parent, shared by the elements of '{}') or a {} (one per element and "
                       "parent)",
                       shape_text({P}), v.name, shape_text({v.size, P}));
}

void declare_one(Lowering& s, const ast::param_decl& d) {
    const Location loc = s.name_at(d.name, d, s.at(d));
    if (const auto v = s.variable_by_name.find(d.name.name); v != s.variable_by_name.end()) {
        s.diag.error(loc, fmt::format("duplicate name '{}'; a {} '{}' is already declared on line {}, and names must be "
                                      "unique",
                                      d.name.name, s.variable(v->second).kind == ir::VariableKind::binary ? "node" : "covariate",
                                      d.name.name, s.variable(v->second).loc.line));
        return;
    }
    if (const auto first = s.declared.find(d.name.name); first != s.declared.end()) {
        s.diag.error(loc, fmt::format("parameter '{}' is already declared on line {}; declare each parameter once",
                                      d.name.name, first->second.loc.line));
        return;
    }
    DeclaredParam out;
    out.shape = d.shape;
    out.loc = loc;
    long size = 1;
    if (d.shape.size() > 2) {
        s.diag.error(s.bracket_after(d.name.name, d, loc),
                     fmt::format("a parameter is a scalar, a vector or a matrix, not a {}-dimensional array",
                                 d.shape.size()));
        out.ok = false;
    }
    for (int n : d.shape) {
        if (n < 1) {
            s.diag.error(s.bracket_after(d.name.name, d, loc),
                         fmt::format("a parameter's sizes must be at least 1, found {}; write 'param {};' for a scalar",
                                     n, d.name.name));
            out.ok = false;
            break;
        }
        size *= n;
        if (size > max_declared_size) {
            s.diag.error(s.bracket_after(d.name.name, d, loc),
                         fmt::format("parameter '{}' is too large; a parameter holds at most {} weights", d.name.name,
                                     max_declared_size));
            out.ok = false;
            break;
        }
    }
    s.parameter_names.insert(d.name.name);
    s.declared.emplace(d.name.name, std::move(out));
}

// The parameter's entry in Lowering::params, made at its first use.
int param_index(Lowering& s, DeclaredParam& d, const std::string& name, int node, Location loc) {
    if (d.param >= 0) return d.param;
    ParamInfo info;
    info.name = name;
    info.shape = d.shape;
    info.node = node;
    info.loc = loc;
    info.declared = true;
    d.param = static_cast<int>(s.params.size());
    s.param_by_name.emplace(name, d.param);
    s.params.push_back(std::move(info));
    return d.param;
}

}  // namespace

void declare_params(Lowering& s, const ast::program& program) {
    for (const auto& st : program.statements)
        if (const auto* d = boost::get<ast::param_decl>(&st.get())) declare_one(s, *d);
}

bool use_declared(Lowering& s, int node, const ast::identifier& id, Location loc, double sign, const Parents* parents) {
    const auto found = s.declared.find(id.name);
    if (found == s.declared.end()) return false;
    DeclaredParam& d = found->second;
    const int p = param_index(s, d, id.name, node, loc);
    if (!d.ok || (parents && !parents->complete)) {
        s.params[static_cast<std::size_t>(p)].shape_known = d.ok;
        return true;  // an error is already reported; the use still counts
    }
    const ir::Variable& v = s.variable(node);
    const int P = parents ? static_cast<int>(parents->elements.size()) : 1;
    bool shared = true;
    if (entry_of(d.shape, v, P, 0, 0, shared) < 0) {
        s.diag.error(loc, fmt::format("parameter '{}' is declared {} on line {}, but this term of '{}' ({}{} parent{}) "
                                      "needs {}",
                                      id.name, d.shape.empty() ? std::string("a scalar") : shape_text(d.shape), d.loc.line,
                                      v.name, v.is_array ? fmt::format("{} elements, ", v.size) : std::string(),
                                      parents ? P : 0, P == 1 && parents ? "" : "s",
                                      accepted_shapes(v, P)));
        return true;
    }
    const long per_element = static_cast<long>(s.g.cpds[static_cast<std::size_t>(v.first_element)].features.size()) + P;
    if (per_element > s.limits.block_size) {
        s.diag.error(loc, fmt::format("too many learned weights: with '{}' each element of '{}' has {}, and one block "
                                      "holds at most {}",
                                      id.name, v.name, per_element, s.limits.block_size));
        return true;
    }
    ParamInfo& info = s.params[static_cast<std::size_t>(p)];
    if (!shared && v.size > 1) info.split = true;
    for (int k = 0; k < v.size; ++k) {
        const auto e = static_cast<std::size_t>(v.first_element + k);
        for (int q = 0; q < P; ++q) {
            const auto qq = static_cast<std::size_t>(q);
            if (parents) s.g.cpds[e].features.push_back({parents->elements[qq], sign, parents->also[qq]});
            else s.g.cpds[e].features.push_back({-1, sign, {}});
            s.weights[e].push_back({p, entry_of(d.shape, v, P, k, q, shared)});
        }
    }
    return true;
}

void check_declared_used(Lowering& s) {
    for (const auto& [name, d] : s.declared)
        if (d.param < 0 && d.ok)
            s.diag.error(d.loc, fmt::format("parameter '{}' is declared but no predictor uses it; use it as a coefficient, "
                                            "e.g. 'logistic({} * x)', or remove the declaration",
                                            name, name));
}

}  // namespace vbn::lang::lowering
