// The fit job's relabelling step (FitOptions::relabel; runtime/report/relabel.hpp has the
// rule): whether it applies to a model, and applying it to kept draws or to the CmdStan CSV
// files of streamed ones.
#pragma once

#include "lang/ir.hpp"
#include "lang/symmetry.hpp"
#include "runtime/report/relabel.hpp"
#include "runtime/report/summary.hpp"
#include "runtime/sampling/fit.hpp"

#include <optional>
#include <string>
#include <vector>

namespace vbn::services {

// Throws vbn::Error (usage) unless rule is "pivot" or "none".
void check_relabel_rule(const std::string& rule);

// The group to relabel with, acting on columns where column j is θ's entry order[j], or none;
// `facts` gets the rule applied and, if none, why (no symmetry leaves it ""). `symmetries`
// are the model's (lang::find_symmetries, or FitResult::symmetries where a fit found them).
std::optional<LabelingGroup> relabel_group(const ir::Graph& graph, const lang::Symmetries& symmetries,
                                           const std::string& rule, const std::vector<int>& order,
                                           RelabelFacts& facts);

// What a CSV file's header says when the draws will not be relabelled though the model has
// symmetries ("none, 48 labelings"); "" otherwise.
std::string unrelabelled_header(const ir::Graph& graph, const std::string& rule);

// Relabels the kept draws of result's chains (θ's layout) in place, by the symmetries the fit
// found (result.symmetries); so does relabel_csv_files below.
RelabelFacts relabel_kept(const ir::Graph& graph, const std::string& rule, FitResult& result);

// The θ columns (output order) and lp__ of the finished files FILE_1.csv … as written, one
// entry per file (empty for a chain that failed).
ChainDraws parse_chain_file(const std::string& output, std::size_t chain, const FitResult& result);
std::vector<ChainDraws> parse_chain_files(const std::string& output, std::size_t files, const FitResult& result);

// Relabels the draws in the finished files FILE_1.csv … (one per chain of result), rewriting
// each with a `# relabel = …` line in its header. `parsed` is empty, or holds the files as
// parse_chain_files read them: then they are read from there, not again from the files, and
// relabelled in place as the files are. Throws vbn::Error (io) if a file cannot be rewritten.
RelabelFacts relabel_csv_files(const ir::Graph& graph, const std::string& rule, const std::string& output,
                               std::size_t files, const FitResult& result, std::vector<ChainDraws>& parsed);

}  // namespace vbn::services
