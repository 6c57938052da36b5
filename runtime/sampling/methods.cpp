#include "runtime/sampling/methods.hpp"

#include "inference/triangular_map.hpp"
#include "runtime/error.hpp"
#include "runtime/sampling/kernels.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace vbn {

const std::vector<MethodInfo>& methods() {
    static const std::vector<MethodInfo> table{
        {.id = Method::auto_choice, .name = "auto",
         .description = "the default: varblock, nuts, varmix or gibbs by the model's shape",
         .when = "", .when_modes = "", .build = nullptr},
        {.id = Method::rwm, .name = "rwm",
         .description = "random-walk Metropolis on all weights, steps shaped by the variational covariance",
         .when = "", .when_modes = "", .build = build_rwm_kernel},
        {.id = Method::varmh, .name = "varmh",
         .description = "independence MH with one proposal for all weights (§4.1)",
         .when = "", .when_modes = "", .build = build_varmh_kernel, .independence_proposal = true},
        {.id = Method::varblock, .name = "varblock",
         .description = "block MH, each node's weights proposed from their own independence proposal (§4.2)",
         .when = "every node is observed and no node has more than {max_block} weights: block independence "
                 "proposals from the exact posterior's Laplace fit",
         .when_modes = "", .build = build_varblock_kernel, .independence_proposal = true, .splits_blocks = true,
         .overrelaxes = true, .scales = ScaleMoves::cycled},
        {.id = Method::varmix, .name = "varmix",
         .description = "varblock's moves mixed with a block random walk (§4.3); mode jumps in small models with "
                        "unobserved values",
         .when = "hidden or missing values in a model of more than {max_mode_search} weights: block moves mixed with a "
                 "random walk (nuts instead where summed-out values couple the blocks)",
         .when_modes = "hidden or missing values in a small model: varmix searches the exact posterior's modes and "
                       "jumps between them",
         .build = build_varmix_kernel, .independence_proposal = true, .searches_modes = true,
         .scales = ScaleMoves::refused},
        {.id = Method::regen, .name = "regen",
         .description = "adaptive independence MH, its proposal re-fitted at regeneration times (§4.4)",
         .when = "", .when_modes = "", .build = build_regen_kernel, .independence_proposal = true,
         .searches_modes = true, .dense_only = true, .regenerates = true, .scales = ScaleMoves::refused},
        {.id = Method::nuts, .name = "nuts",
         .description = "the No-U-Turn sampler with Stan's adaptation, started from the Laplace covariance",
         .when = "a node has {largest_block} weights, more than the {max_block} one skewed independence proposal "
                 "takes (varblock's whitened sub-blocks are slower there): NUTS",
         .when_modes = "", .build = build_nuts_kernel, .hmc_engine = "nuts"},
        {.id = Method::gibbs, .name = "gibbs",
         .description = "the unobserved values sampled with the weights: a Gibbs sweep, then block MH given them",
         .when = "some rows need more than {max_enumerated} unobserved values summed together, too many to sum out",
         .when_modes = "", .build = build_gibbs_kernel, .samples_unobserved = true, .scales = ScaleMoves::cycled},
    };
    return table;
}

const MethodInfo& method_info(Method id) {
    const auto& table = methods();
    const auto it = std::find_if(table.begin(), table.end(), [id](const MethodInfo& m) { return m.id == id; });
    if (it == table.end()) throw std::logic_error("a method without a row in the registry");
    return *it;
}

const MethodInfo* lookup_method(std::string_view name) {
    const auto& table = methods();
    const auto it = std::find_if(table.begin(), table.end(), [name](const MethodInfo& m) { return m.name == name; });
    return it == table.end() ? nullptr : &*it;
}

const MethodInfo& find_method(std::string_view name) {
    if (const MethodInfo* m = lookup_method(name)) return *m;
    throw Error(ErrorKind::usage, fmt::format("unknown method '{}'; choose one of {}", name, method_list()));
}

const std::vector<std::string>& method_names() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> out;
        for (const auto& m : methods()) out.emplace_back(m.name);
        return out;
    }();
    return names;
}

std::string method_list(std::string_view last) {
    const auto& names = method_names();
    std::string out;
    for (std::size_t i = 0; i < names.size(); ++i) {
        if (i > 0) out += i + 1 == names.size() ? last : std::string_view(", ");
        out += names[i];
    }
    return out;
}

bool has_unobserved_values(const ir::Graph& graph, const Dataset& data) {
    bool unobserved = false;
    for (std::size_t e = 0; e < graph.elements.size(); ++e) {
        const ir::Element& el = graph.elements[e];
        if (!el.binary) continue;
        if (el.hidden) unobserved = true;
        else if (data.column_of[e] >= 0 && data.missing[static_cast<std::size_t>(data.column_of[e])] > 0) unobserved = true;
    }
    return unobserved;
}

bool searches_modes(const MethodInfo& method, const ir::Graph& graph, bool unobserved) {
    return method.searches_modes && unobserved && graph.dim <= mode_search_max_dim;
}

// By the figures of bench/speed_table and the grid and SBC checks (docs/methods.md,
// "Choosing a method"; docs/experiments-multimodal.md). Every node observed: the posterior
// factorises over blocks, each a Bayesian logistic regression that a t at its mode with the
// Laplace covariance fits closely (runtime/sampling/laplace_proposal.hpp), and block independence MH
// beats NUTS per second (2-6x at 10-20 weights). A plain t for a whole block of 50 weights
// sticks (its importance weights vary too much: ESS 17 of 4,000), and varblock's whitened
// sub-blocks (FitOptions::varblock_split) reach only 0.9-1.0x NUTS's bulk-ESS per second there;
// but skewed by the triangular map of the block's third derivatives (21-64 weights,
// LaplaceProposalOptions::skew_map) the whole block moves at twice NUTS's bulk-ESS per second on
// unimodal_d50 (docs/methods.md, "The triangular map"). Larger blocks keep NUTS. Hidden or missing values in a
// small model: the posterior can have several modes (a hidden cause's sign flipped) that VB
// and NUTS miss (SBC fails for nuts there), and varmix jumps between the exact posterior's
// modes. Larger models with unobserved values: varmix's block moves mixed with a random walk,
// which fit() replaces by NUTS where summed-out values couple the blocks (no exact proposal
// per block; runtime/sampling/fit.cpp, no_exact_proposal_takes_nuts). (When the exact target
// refuses the data, fit() falls back to gibbs.)
std::string choose_method(const ir::Graph& graph, const Dataset& data, std::string* why) {
    const bool unobserved = has_unobserved_values(graph, data);
    // Learned prior scales: the blocks given the scales, then the scales given the weights by
    // slice sampling (runtime/sampling/scale_kernel.hpp). Where the data say little about each
    // weight the scale and its weights form a funnel, on which NUTS diverges (hundreds of
    // divergent transitions and τ's lower tail cut off on tests/runtime/test_scales.cpp's
    // two-group model) while the alternation stays exact: varblock where every node is
    // observed, gibbs where values are unobserved (varmix does not move scales).
    if (!graph.scales.empty()) {
        const MethodInfo& m = method_info(unobserved ? Method::gibbs : Method::varblock);
        if (why)
            *why = fmt::format("the model has learned prior scales: {} moves the weights given them, and a slice-sampling "
                               "step each scale given its weights",
                               m.name);
        return std::string(m.name);
    }
    int largest_block = 0;
    for (const auto& b : graph.blocks) largest_block = std::max(largest_block, b.size);
    // varblock ahead of nuts up to here: blocks of 21-64 weights are skewed by the triangular map
    // and moved whole (50 weights: twice NUTS's bulk-ESS per second on unimodal_d50)
    constexpr int max_independence_block = inference::TriangularMap::max_dim;
    const MethodInfo& m = method_info(!unobserved ? (largest_block <= max_independence_block ? Method::varblock : Method::nuts)
                                                  : Method::varmix);
    if (why)
        *why = fmt::format(fmt::runtime(searches_modes(m, graph, unobserved) ? m.when_modes : m.when),
                           fmt::arg("max_block", max_independence_block), fmt::arg("largest_block", largest_block),
                           fmt::arg("max_mode_search", mode_search_max_dim));
    return std::string(m.name);
}

}  // namespace vbn
