// The data as each node's CPD sees it: "patterns, not rows" (docs/design.md §1).
//
// The likelihood p(x_v | θ) = Π_rows Σ_{unobserved} Π_i g(x_i (α_i + θ_i' f_i)) (Variational
// MCMC, Sec. 2) splits into two kinds of terms:
//
//  * complete families — a node observed together with all its parents. Its factor is
//    g(y (a + θ_i' f)) with everything but θ_i known, so all rows with the same (y, a, f)
//    collapse into one weighted pattern; a node with P binary parents has at most 2^(P+1).
//  * enumerated components — in a row with unobserved entries (hidden nodes, missing
//    values), the unobserved elements that have an observed descendant, split into groups
//    that share no factor. Each group is summed out exactly: over its 2^m configurations,
//    or one variable at a time by variable elimination (runtime/target/elimination.hpp)
//    where that is much cheaper, e.g. a long chain of hidden nodes.
//    Unobserved elements without an observed descendant ("barren") are dropped: their CPDs
//    sum to one. Identical groups from different rows are stored once with a weight.
//
// Both the exact target (runtime/target/target.hpp) and the variational bound read these.
#pragma once

#include "lang/ir.hpp"
#include "runtime/data/dataset.hpp"

#include <Eigen/Core>

#include <array>

#include <string>
#include <vector>

namespace vbn {

// The complete-data patterns of one block's node: rows where the node and all its parents
// are observed, compressed to distinct (y_t, a_t, f_t) with summed counts w_t.
// Its log-likelihood contribution is Σ_t w_t log g(y_t (a_t + f_t' θ_i)).
struct CompleteFamily {
    int element = -1;   // the node element (Graph::elements)
    int block = -1;     // its parameter block (Graph::blocks)
    Eigen::MatrixXd f;  // patterns × block size: feature vectors f_t (signs applied)
    Eigen::VectorXd y;  // the node's value, ±1
    Eigen::VectorXd a;  // offset α_i + Σ fixed terms c_k x_k
    Eigen::VectorXd w;  // rows per pattern

    int patterns() const { return static_cast<int>(w.size()); }
};

// An unobserved parent's term in a factor's linear predictor: coef * x_var, where
// x_var is the component's local variable `var`, and coef = θ_i[feature] * sign for a
// learned weight (feature >= 0) or the fixed coefficient for a fixed term (feature = -1).
// For a product of parents (an interaction `h * o`) with several unobserved factors the
// term is coef * x_var * Π x_also, and coef includes the observed factors' values.
struct FactorLink {
    int var = 0;        // local index into Component::elements
    int feature = -1;   // position in the block, or -1 for a fixed term
    double coef = 0;    // the feature's sign, or the fixed term's coefficient
    // Further local variables of a product, -1 where unused (always for a single parent).
    static_assert(ir::max_product_nodes == 4, "the initialiser below lists max_product_nodes - 1 entries");
    std::array<int, ir::max_product_nodes - 1> also{-1, -1, -1};

    bool product() const { return also[0] >= 0; }
    // x_var Π x_also for the values x of the component's local variables.
    template <typename Values>
    double value(const Values& x) const {
        double v = x[var];
        for (int a : also)
            if (a >= 0) v *= x[a];
        return v;
    }
};

// One CPD inside an enumerated component, with everything observed already folded in:
//     η = base + θ_i' f + Σ_links coef_l x_{var_l}   (θ_i' f omitted when block < 0)
//     log factor = log g(x η),   x = value if observed, else the local variable `self`.
// A parent that appears in several terms has one link per term.
struct Factor {
    int element = -1;        // whose CPD this is
    int block = -1;          // its parameter block, -1 for a fixed CPD
    int value = 0;           // ±1 when the node is observed in these rows, 0 when unobserved
    int self = -1;           // local index of the node when unobserved, else -1
    double base = 0;         // α_i + Σ fixed terms over observed parents
    Eigen::VectorXd f;       // block-size features, 0 where the parent is unobserved
    std::vector<FactorLink> links;
};

// Folds element's CPD into out for values x (±1 observed, 0 unobserved; reals for
// covariates): observed parents go into base and f, a parent with local[e] >= 0 becomes a
// link to local variable local[e]. Sets element, block, base, f and links, not value or
// self (the caller knows whether the node itself is summed out).
void fold_cpd(const ir::Graph& graph, int element, const std::vector<double>& x, const std::vector<int>& local,
              Factor& out);

// The local variables a factor reads (its own when unobserved, and its links'), ascending.
std::vector<int> factor_scope(const Factor& f);

// One distinct summed-out case: a connected group of unobserved elements in some row
// patterns, its factors, and how many rows share it exactly. Its log-likelihood
// contribution is weight * log Σ_{x ∈ {±1}^m} Π_factors g(x_j η_j(x)).
struct Component {
    std::vector<int> elements;   // the unobserved elements (local variable k = elements[k])
    std::vector<Factor> factors; // their CPDs, then observed children's CPDs
    std::vector<int> blocks;     // distinct blocks among the factors, ascending
    double weight = 0;           // rows sharing this case
    long first_line = 0;         // CSV line of one such row (0 when unknown)
    // The most variables summed together at once: the largest clique of the min-fill
    // elimination order (runtime/target/elimination_order.hpp); m when only enumeration was
    // considered (Summation::enumerate).
    int width = 0;
    // The elimination order of the local variables when the component is summed by variable
    // elimination; empty when it is enumerated over its 2^m configurations.
    std::vector<int> order;

    int size() const { return static_cast<int>(elements.size()); }
    bool eliminated() const { return !order.empty(); }
};

// How components are summed out. automatic: enumerated when small or when elimination would
// not be much cheaper, else by variable elimination; the limit bounds the width. enumerate:
// always over 2^m configurations, the limit bounding m. eliminate: by variable elimination
// whenever m ≥ 2 (for tests comparing the two).
enum class Summation { automatic, enumerate, eliminate };

struct FamilyOptions {
    // Largest width summed out exactly: at most this many unobserved values summed together
    // (2^max_enumerated terms per table); with Summation::enumerate, the largest component.
    int max_enumerated = 12;
    Summation summation = Summation::automatic;
    // false: components too wide are left out and counted (Families::too_wide) instead of
    // refused, for reports (`vbn check --data`).
    bool refuse_too_wide = true;
    bool pattern_terms = false;  // record where each data pattern's terms went (PatternTerms)
    // false: the complete families are left empty (0 rows), for reports that need only the
    // summed-out components: at 10^6 distinct rows they are another copy of the data.
    bool complete_rows = true;
};

// Where each data pattern's terms went, so that the pattern's own log-likelihood can be
// formed from the shared ones (Target::pattern_log_likelihoods): log p(x_p | θ) = Σ over its
// complete-family rows of log g(y (a + f'θ)) + Σ over its components of log Σ_x Π g (before
// the weighting by rows) + fixed[p]. Lists in compressed form: pattern p's are entries
// [start[p], start[p + 1]). Patterns with count 0 are recorded like the others.
struct PatternTerms {
    std::vector<int> row_start;        // per pattern, and one past the last
    std::vector<int> rows;             // complete-family rows, numbered through the blocks in order
    std::vector<int> component_start;  // per pattern, and one past the last
    std::vector<int> components;       // indices into Families::components
    std::vector<double> fixed;         // per pattern: log p of its observed fixed-CPD nodes
                                       // with complete families (no θ)
    int patterns() const { return static_cast<int>(fixed.size()); }
};

// Rows with a component wider than the limit: how many, the widest such component and the
// first lines (at most three) where any appeared.
struct TooWide {
    double rows = 0;
    int width = 0;
    int size = 0;                  // the widest one's unobserved values
    std::vector<int> elements;     // and the elements
    std::vector<long> lines;
};

struct Families {
    std::vector<CompleteFamily> complete;          // one per block, indexed by block
    std::vector<Component> components;             // distinct enumerated cases
    std::vector<std::vector<int>> components_of_block;  // per block: components involving it
    // A partition of all blocks: blocks in one group share an enumerated component (directly
    // or through a chain of components), so their posterior does not factorise. Uncoupled
    // blocks are singleton groups. Groups in order of their smallest block.
    std::vector<std::vector<int>> coupled_groups;
    // Σ w log p over observed fixed-CPD nodes with complete families (no θ): the part of
    // log p(x_v | θ) that the patterns above leave out.
    double fixed_log_likelihood = 0;
    PatternTerms pattern_terms;      // empty unless FamilyOptions::pattern_terms
    int largest_component = 0;       // max Component::size(), 0 if none
    long largest_line = 0;           // a CSV line with a component that large (0 when unknown)
    int widest_component = 0;        // max Component::width, 0 if none
    long widest_line = 0;            // a CSV line with a component that wide (0 when unknown)
    TooWide too_wide;                // without FamilyOptions::refuse_too_wide
    std::vector<std::string> notes;  // warnings for the caller to print (not errors)
};

// Builds the per-node patterns and the summed-out components. Throws vbn::Error of kind
// limit when a component's width exceeds max_enumerated (naming CSV lines and suggesting
// `--method gibbs`), and of kind data when the dataset does not fit the graph.
Families build_families(const ir::Graph& graph, const Dataset& data, const FamilyOptions& options = {});

}  // namespace vbn
