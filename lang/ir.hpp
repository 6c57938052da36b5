// The IR graph: a checked model in the canonical form that everything after the parser
// works on (docs/design.md §1).
//
// Every binary node element i has
//     logit P(x_i = +1 | parents) = offset_i + Σ_k c_k x_{j_k} + θ_i' f_i
// where the fixed terms c_k x_{j_k} come from `CONST * PARENTS`, f_i is the feature vector
// (parents' values, ±1 for binary parents and real for covariates, and a constant ±1 for a
// learned bias; the product of parents' values for an interaction `h * o`) and θ_i is one
// parameter block with a Gaussian prior N(μ_i, Σ_i), or with some weights independent
// Student-t (Block::prior_df). A block may serve several elements when a declared parameter
// ties them: θ_i is then the block's weights as Feature::weight picks them.
// A root with a fixed probability p has no block and offset logit p.
//
// The graph is immutable once lowered; indices are 0-based throughout, while names shown
// to users are 1-based (`v[3]`, `W[2,3]`).
#pragma once

#include "lang/diagnostics.hpp"

#include <string>
#include <utility>
#include <vector>

namespace vbn::ir {

using lang::Location;

enum class VariableKind { binary, covariate };

// A declared node or covariate, scalar or array.
struct Variable {
    std::string name;
    VariableKind kind = VariableKind::binary;
    bool hidden = false;   // binary only: never observed, no data column
    bool is_array = false;
    int size = 1;          // number of elements (1 for a scalar)
    int first_element = 0; // elements [first_element, first_element + size) in Graph::elements
    Location loc;
};

// One element of a variable: a scalar node, or `v[k]` of an array node.
struct Element {
    int variable = 0;
    int index = 0;          // 0-based position inside its variable (0 for scalars)
    std::string name;       // as in data columns and messages: "y" or "v[3]"
    bool binary = true;     // false: a covariate element (real-valued)
    bool hidden = false;
};

// The most binary nodes in one product of parents: a product of m unobserved values links
// m summed-out variables in one factor (runtime/target/families.hpp).
inline constexpr int max_product_nodes = 4;

// One entry of a node's feature vector f_i: sign × x_element × Π x_also.
struct Feature {
    int element = -1;   // parent element, or -1 for the constant feature of a learned bias
    double sign = 1.0;  // -1 when the term was subtracted (`... - w * h`), times a fixed scale (`2 * w * h`)
    std::vector<int> also{};  // further factors of a product of parents (`h * o`), else empty
    int weight = -1;          // its weight's position in the block (Cpd::block); features of
                              // several elements, or several of one element, may share one
};

// A fixed-weight term c × x_element × Π x_also, part of the node's offset in every row.
struct FixedTerm {
    int element = 0;
    double coef = 0;
    std::vector<int> also{};  // further factors of a product of parents, else empty
};

// The conditional distribution of one binary element.
struct Cpd {
    bool logistic = false;          // false: bernoulli(p) root, offset = logit p
    double offset = 0;              // α_i
    std::vector<FixedTerm> fixed;   // Σ_k c_k x_{j_k}
    std::vector<Feature> features;  // f_i, in the order of θ_i
    int block = -1;                 // index into Graph::blocks, -1 if no learned weights
};

// One parameter block: the learned weights of one node element, or of several elements that
// a declared parameter ties together (`param d;` used by every element of an array node, or
// by several nodes). Each element's features read their weights through Feature::weight.
struct Block {
    int element = 0;                 // the first of its node elements (topological order)
    std::vector<int> elements{};     // all of them, in topological order
    int offset = 0;                  // its first index in the full parameter vector θ
    int size = 0;                    // distinct weights: Cpd::features.size() when untied
    std::vector<double> prior_mean;  // μ_i, size entries
    std::vector<double> prior_cov;   // Σ_i, size × size, row-major, symmetric positive definite
    bool prior_diagonal = true;      // Σ_i diagonal (normal priors only)
    // Heavy-tailed weights (student_t, cauchy): empty when every weight is Gaussian; else one
    // entry per weight, 0 for a Gaussian one and ν > 0 for a Student-t one with location
    // prior_mean[k] and scale² prior_cov[k, k], uncorrelated with the rest of the block.
    // Code that needs a Gaussian prior uses the scale mixture w | λ ~ N(μ, s²/λ),
    // λ ~ Gamma(ν/2, ν/2), so prior_cov alone is the covariance at λ = 1 (docs/methods.md).
    std::vector<double> prior_df;
    // Learned prior scales (`b ~ normal(0, tau)`): empty when no weight has one; else one
    // entry per weight, -1 or the index into Graph::scales of the τ whose N(prior_mean[k], τ²)
    // is the weight's prior. Such a weight is uncorrelated with the rest of the block and its
    // prior_cov[k, k] is 1 (the prior at τ = 1).
    std::vector<int> prior_scale;

    bool heavy_tailed() const { return !prior_df.empty(); }
    bool has_learned_scale() const { return !prior_scale.empty(); }
};

// The prior of a learned scale: half_normal(scale), half_cauchy(scale), or a Gamma(shape,
// rate) on the precision 1/τ² (precision_gamma(shape, rate)).
enum class ScaleKind { half_normal, half_cauchy, precision_gamma };

// A learned prior scale τ > 0 (`b ~ normal(0, tau); tau ~ half_normal(1);`). θ holds
// log τ, unconstrained, at theta_index, after every block's weights; users see τ
// (Graph::constrain). runtime/target/scale_prior.hpp writes its prior out.
struct Scale {
    std::string name;
    ScaleKind kind = ScaleKind::half_normal;
    double scale = 1;             // half_normal, half_cauchy
    double shape = 1, rate = 1;   // precision_gamma
    int theta_index = 0;
    std::vector<int> weights{};     // the θ indices of the weights whose prior it scales
    std::vector<double> means{};    // their prior means
};

// A user-visible parameter (`w`, `b`, `W`) and where its elements live in θ.
struct Parameter {
    std::string name;
    std::vector<int> shape;          // {} scalar, {K} vector, {K, P} matrix
    std::vector<int> theta_index;    // element e (row-major over shape) -> index in θ
    std::string prior;               // the prior as the user wrote it, for display
    Location loc;                    // where the parameter is used in a predictor
    int scale = -1;                  // a learned scale (Graph::scales), not a weight: θ holds its log
};

struct Graph {
    std::string name;                   // the model's display name (usually its file name)
    std::vector<Variable> variables;    // in declaration order
    std::vector<Element> elements;      // variables' elements, in declaration order
    std::vector<Cpd> cpds;              // one per element; unused (default) for covariates
    std::vector<int> topological_order; // binary elements, parents before children
    std::vector<Block> blocks;          // in topological order of their nodes
    std::vector<Parameter> parameters;  // in order of first use in the model text; learned
                                        // scales after the weights
    std::vector<Scale> scales;          // learned prior scales, in θ after the blocks
    int dim = 0;                        // length of θ: the sum of block sizes, then one entry per scale

    // θ's entry k as users see it: exp for a learned scale (θ holds log τ), else itself;
    // unconstrain is its inverse (for a scale, the log of a positive value).
    bool is_scale(int k) const { return k >= dim - static_cast<int>(scales.size()); }
    double constrain(int k, double value) const;
    double unconstrain(int k, double value) const;

    // θ's entry k is element theta_owner[k].second of parameters[theta_owner[k].first]:
    // filled by lowering (index_theta), so that naming every entry is linear in θ, where a
    // search of the parameters for each was quadratic (3 s of `vbn vb` at 2 x 10^5 weights).
    // Where it is empty or out of date, theta_name searches.
    std::vector<std::pair<int, int>> theta_owner;
    void index_theta();

    // Name of θ's entry k as a user sees it: "w[2]", "W[1,3]" or "b".
    std::string theta_name(int k) const;
    // The same with CmdStan CSV's dotted indices: "w.2", "W.1.3".
    std::string theta_csv_name(int k) const;
    // Parents of an element (fixed and learned), without duplicates, in order of appearance.
    std::vector<int> parents(int element) const;
    // Children of an element.
    std::vector<int> children(int element) const;
    // Index of a variable by name, -1 if none.
    int find_variable(const std::string& name) const;
    // True when some element is declared hidden (never in the data).
    bool has_hidden() const;
};

}  // namespace vbn::ir
