// What the passes of lowering share while they turn an AST into an IR graph. Internal to
// lang/: lower.cpp runs the passes in order,
//   declare (lower.cpp)        names, variables, elements, array sizes
//   declare_params (lower_params.cpp)  `param` declarations: names and shapes
//   lower_nodes (lower_nodes.cpp)   predictors -> offsets, fixed terms, features, parameters
//   lower_priors (lower_priors.cpp) priors -> each parameter's mean and covariance
//   order_graph (lower_graph.cpp)   acyclicity, topological order, warnings
//   build_blocks (lower_graph.cpp)  parameter blocks and θ indices (only without errors)
#pragma once

#include "lang/const_eval.hpp"
#include "lang/frontend.hpp"
#include "lang/ir.hpp"
#include "lang/suggest.hpp"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace vbn::lang::lowering {


// The parameter element whose value is the weight of one feature.
struct WeightRef {
    int param = -1;
    int element = 0;  // row-major over the parameter's shape
};

struct ParamInfo {
    std::string name;
    std::vector<int> shape;      // {} scalar, {K} vector, {K, P} matrix
    bool shape_known = true;     // false when a parent of its term could not be resolved
    int node = -1;               // the variable whose predictor uses it
    Location loc;                // its use in that predictor
    bool has_prior = false;
    Location prior_loc;
    bool prior_ok = false;       // mean and cov hold a checked prior
    std::vector<double> mean;    // one per element
    std::vector<double> var;     // one per element: the diagonal of the covariance (student_t: scale²)
    std::vector<double> df;      // student_t and cauchy only: degrees of freedom per element
    std::vector<double> cov;     // mvnormal only: elements × elements, row-major
    std::string prior_text;
    int scale = -1;              // normal(MEAN, NAME): its learned scale, an index into Lowering::scales
    bool declared = false;       // by `param NAME[...]`: shape as declared, usable in several terms
    bool split = false;          // some use gives different node elements different entries

    int size() const {
        int n = 1;
        for (int d : shape) n *= d;
        return n;
    }
};

// A learned prior scale: a name in normal's standard deviation (`b ~ normal(0, tau);`) with
// a prior of its own (`tau ~ half_normal(1);`).
struct ScaleInfo {
    std::string name;
    Location loc;             // its first use in a normal prior
    bool has_prior = false;
    Location prior_loc;
    bool prior_ok = false;
    ir::ScaleKind kind = ir::ScaleKind::half_normal;
    double scale = 1;               // half_normal, half_cauchy
    double shape = 1, rate = 1;     // precision_gamma
    std::string prior_text;
};

// A `param` declaration, before and after its first use in a predictor.
struct DeclaredParam {
    std::vector<int> shape;
    Location loc;     // the name in the declaration
    int param = -1;   // index into Lowering::params once used
    bool ok = true;   // false after an error in the declaration (its uses are not checked)
};

// The entries of a parent list: entry q is the element elements[q] times, for a product of
// parents, the further factors also[q].
struct Parents {
    std::vector<int> elements;
    std::vector<std::vector<int>> also;  // parallel to elements
    bool complete = true;  // false when an item could not be resolved
};

struct Lowering {
    Lowering(const SourceMap& m, Diagnostics& d, const Limits& l) : map(m), diag(d), eval(m, d), limits(l) {}

    const SourceMap& map;
    Diagnostics& diag;
    ConstEval eval;
    Limits limits;
    ir::Graph g;

    std::map<std::string, int> variable_by_name;
    std::vector<const ast::node_decl*> node_decls;  // per variable; null for covariates
    // Per variable: a second declaration of a name. It is lowered like any other, so the
    // errors inside it are found, but its name resolves to the first declaration.
    std::vector<bool> duplicate;
    std::set<std::string> parameter_names;          // coefficient and prior names, for messages
    std::vector<ParamInfo> params;                  // in order of first use
    std::map<std::string, int> param_by_name;
    std::map<std::string, DeclaredParam> declared; // `param` declarations by name
    std::vector<ScaleInfo> scales;                  // learned prior scales, in order of first use
    std::map<std::string, int> scale_by_name;
    std::vector<std::vector<WeightRef>> weights;    // per element, parallel to Cpd::features
    long covariance_entries = 0;                    // Σ over elements of (learned weights)²
    long fixed_terms = 0;                           // Σ over elements of fixed terms

    Location at(const boost::spirit::x3::position_tagged& node, Location fallback = {}) const {
        return eval.at(node, fallback);
    }
    // Where `id` is, searched for by name inside `enclosing` when the parser left the
    // identifier itself untagged.
    Location name_at(const ast::identifier& id, const boost::spirit::x3::position_tagged& enclosing,
                     Location fallback) const;
    // The place of the number inside `name[...]` within `enclosing`: an index or an array
    // size, which the AST stores as a plain int.
    Location bracket_after(const std::string& name, const boost::spirit::x3::position_tagged& enclosing,
                           Location fallback) const;
    const ir::Variable& variable(int v) const { return g.variables[static_cast<std::size_t>(v)]; }
    const ir::Element& element(int e) const { return g.elements[static_cast<std::size_t>(e)]; }
};

void declare_params(Lowering& s, const ast::program& program);
// A term of node `node` weighted by the declared parameter `id`: its features and weights.
// False when `id` is not declared (the caller then lowers it as an undeclared parameter).
bool use_declared(Lowering& s, int node, const ast::identifier& id, Location loc, double sign, const Parents* parents);
// Errors for declared parameters that no predictor uses.
void check_declared_used(Lowering& s);
void lower_nodes(Lowering& s);
void lower_priors(Lowering& s, const ast::program& program);
void order_graph(Lowering& s);
void build_blocks(Lowering& s);

// The candidate closest to a name by edit distance (lang/suggest.hpp).
using vbn::lang::closest_name;
// "a, b and c", at most `limit` names then "and N more".
std::string name_list(const std::vector<std::string>& names, std::size_t limit = 8);

}  // namespace vbn::lang::lowering
