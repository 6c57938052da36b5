// Relabelling draws to one labeling (docs/methods.md, "Relabelling to a pivot"). A posterior
// with exact symmetries (lang/symmetry.hpp) has equal copies of every mode, and chains may
// settle in different copies; relabelling maps every draw θ to the copy g(θ) nearest a common
// pivot, so that R-hat, ESS and the summary describe one labeling. The group element g acts
// on θ as a signed permutation: θ'_k = s_k θ_{p_k}.
//
//   LabelingGroup group = labeling_group(graph, order, max_labelings);   // empty if too large
//   PivotRelabelling r = relabel_to_pivot(*group, chains, read_chain);
//   apply_labeling(*group, r.element[c], draws_of_chain_c);
#pragma once

#include "lang/ir.hpp"
#include "lang/symmetry.hpp"

#include <Eigen/Core>

#include <cstddef>
#include <functional>
#include <optional>
#include <vector>

namespace vbn {

// Above this many labelings the group is not enumerated and the draws are left as they are
// (each draw is compared with every labeling: 5,040 = 7! is a class of 7 exchangeable nodes).
constexpr std::size_t max_relabel_labelings = 5040;

struct LabelingGroup {
    // One signed permutation per labeling, the identity first: code[k] = ±(p_k + 1) means
    // θ'_k = ±θ_{p_k}, in the columns of the draws it acts on.
    std::vector<std::vector<int>> elements;
    std::vector<int> support;  // columns some element moves or negates, ascending
    std::size_t size() const { return elements.size(); }
};

// The group the model's symmetries generate (sign flips, swaps within exchangeable classes),
// acting on draws whose column j is θ's entry order[j] (output_order; the identity for θ's own
// layout). Empty when it has more than max_labelings elements or the model has no symmetry.
std::optional<LabelingGroup> labeling_group(const ir::Graph& graph, const std::vector<int>& order,
                                            std::size_t max_labelings = max_relabel_labelings);
// The same from the model's symmetries as found already (FitResult::symmetries).
std::optional<LabelingGroup> labeling_group(const ir::Graph& graph, const lang::Symmetries& symmetries,
                                            const std::vector<int>& order,
                                            std::size_t max_labelings = max_relabel_labelings);

// g(x) for the group's element e, in place.
void apply_labeling(const LabelingGroup& group, int e, Eigen::Ref<Eigen::VectorXd> x);
// Row i of draws (draws × columns) replaced by its image under element[i].
void apply_labeling(const LabelingGroup& group, const std::vector<int>& element, Eigen::MatrixXd& draws);

struct ChainDraws {
    Eigen::MatrixXd draws;  // draws × columns (the group's columns)
    Eigen::VectorXd lp;     // each draw's log density
};

struct PivotRelabelling {
    std::vector<std::vector<int>> element;  // per chain, per draw: the group element applied (0: none)
    Eigen::VectorXd pivot;                  // the final pivot, the mean of the relabelled draws
    long relabelled = 0, draws = 0;         // draws given another labeling, of all draws
    int passes = 0;                         // passes over the draws
    bool converged = true;                  // the last pass changed no draw's element
};

// The rule: the pivot starts as the draw of highest log density (of all chains; the first on
// ties); each pass gives every draw the element g minimising |g(θ) − pivot|² over the support
// (the lowest-numbered on ties, so the identity wins them), then the pivot becomes the mean of
// the relabelled draws; it stops after a pass that changes no draw's element, or after
// max_passes. Last, the whole set is moved to the labeling most draws were drawn in (the
// element most of them got becomes the identity). read(c) gives chain c's draws (chains with none give an empty matrix); it is
// called once per chain per pass.
PivotRelabelling relabel_to_pivot(const LabelingGroup& group, std::size_t chains,
                                  const std::function<ChainDraws(std::size_t c)>& read, int max_passes = 100);

}  // namespace vbn
