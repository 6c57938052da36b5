// The registry of `vbn fit --method`: one row per method with its name, a one-line
// description, when `auto` chooses it, the properties the stages of fit() ask about, and the
// function that builds its kernel (runtime/sampling/kernels.hpp). The command line's help, the
// "unknown method" error, vbn::api::methods() and the headings of docs/methods.md (checked by
// tests/runtime/test_methods.cpp) come from this table: adding a method is adding a row.
#pragma once

#include "lang/ir.hpp"
#include "runtime/data/dataset.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace vbn {

struct KernelInputs;
struct KernelBuild;

// Models with unobserved values and at most this many weights get the search for the exact
// posterior's modes (MethodInfo::searches_modes; the reason `auto` picks varmix for them).
constexpr int mode_search_max_dim = 10;

enum class Method { auto_choice, rwm, varmh, varblock, varmix, regen, nuts, gibbs };

// How a method moves learned prior scales (ir::Graph::scales, θ's last entries): with the
// weights, its moves spanning all of θ; by a slice-sampling step after each of its sweeps
// (runtime/sampling/scale_kernel.hpp), its moves being the blocks'; or not at all, so a model
// with learned scales is refused.
enum class ScaleMoves { with_weights, cycled, refused };

struct MethodInfo {
    Method id;
    std::string_view name;         // as --method takes it
    std::string_view description;  // one line
    // When `auto` chooses it, as the note "method auto chose NAME: WHEN" says it: a format
    // string whose named arguments are the model's figures (choose_method); empty when
    // `auto` never does. when_modes: the same for a model on which the method searches the
    // exact posterior's modes (searches_modes), where that differs.
    std::string_view when;
    std::string_view when_modes;
    // Its kernel from the prepared posterior; null for `auto`, which stands for another row.
    KernelBuild (*build)(const KernelInputs&);
    // Proposes independently from the exact posterior's Laplace fit (FitOptions::proposal
    // "laplace"), checked by a pilot (runtime/sampling/laplace_proposal.hpp), else from VB.
    bool independence_proposal = false;
    // On a model with unobserved values and at most mode_search_max_dim weights, takes its
    // proposal from the exact posterior's modes (runtime/sampling/posterior_modes.hpp).
    bool searches_modes = false;
    // Moves blocks above FitOptions::varblock_split.above weights in whitened sub-blocks, so
    // their pilot k-hat says nothing about how the kernel proposes them.
    bool splits_blocks = false;
    // Samples the unobserved values with θ (runtime/sampling/gibbs.hpp): the target sums
    // nothing out and lp__ is the complete-data log joint.
    bool samples_unobserved = false;
    // Adapts dense dim × dim covariances: refused above max_dense_dim weights.
    bool dense_only = false;
    // Reports its regenerations in the summary, even when there were none.
    bool regenerates = false;
    // Hamiltonian Monte Carlo with this engine, as CmdStan's CSV header names it (algorithm
    // hmc); it adapts a metric and a step size towards FitOptions::adapt_delta. Empty: not HMC.
    std::string_view hmc_engine = {};
    // Overrelaxes its whole blocks after warmup (FitOptions::varblock_overrelax).
    bool overrelaxes = false;
    ScaleMoves scales = ScaleMoves::with_weights;
};

// The rows, in the order --method's help and the error list them.
const std::vector<MethodInfo>& methods();
const MethodInfo& method_info(Method id);
// The row named `name`, or null.
const MethodInfo* lookup_method(std::string_view name);
// The row named `name`; throws Error(usage) "unknown method 'NAME'; choose one of ...".
const MethodInfo& find_method(std::string_view name);
// Names accepted by --method, in the table's order.
const std::vector<std::string>& method_names();
// "auto, rwm, ..., nuts or gibbs" (last: the word before the last name).
std::string method_list(std::string_view last = ", ");

// Hidden nodes, or observed binary nodes with missing entries in the data.
bool has_unobserved_values(const ir::Graph& graph, const Dataset& data);

// Whether `method` takes its proposal from the exact posterior's modes on this model (a
// small one with unobserved values); the Laplace proposal at one mode is then only its
// fallback when none is found.
bool searches_modes(const MethodInfo& method, const ir::Graph& graph, bool unobserved);

// The method `auto` stands for on this model (and why, in one line: its row's `when`).
std::string choose_method(const ir::Graph& graph, const Dataset& data, std::string* why = nullptr);

}  // namespace vbn
