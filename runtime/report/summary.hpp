// The posterior summary of a run: one row per parameter element (mean, sd, MCSE, quantiles,
// bulk/tail ESS, R-hat), the table printed on stdout, the --summary-json document
// (docs/design.md §4), and the `vbn summary FILE_1.csv …` command.
#pragma once

#include "inference/kernel.hpp"
#include "runtime/report/mode_masses.hpp"
#include "runtime/report/output_csv.hpp"

#include <Eigen/Core>
#include <nlohmann/json_fwd.hpp>

#include <functional>
#include <array>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace vbn {

// The summary warns of an R-hat above summary_rhat_limit and of a bulk- or tail-ESS below
// summary_ess_per_chain per chain (Vehtari et al. 2021, §4: R-hat < 1.01 and ESS > 100 per
// chain, for 4 chains 400, before the estimates are trusted).
constexpr double summary_rhat_limit = 1.01;
constexpr double summary_ess_per_chain = 100;

struct SummaryRow {
    std::string name;  // w[1], W[2,3]
    double mean = 0, sd = 0, mcse_mean = 0;
    double q5 = 0, q50 = 0, q95 = 0;
    double ess_bulk = 0, ess_tail = 0, rhat = 0;
    double mcse_q5 = 0, mcse_q95 = 0;
    bool constant = false;   // all draws equal: ESS and R-hat are NaN
    bool nonfinite = false;  // NaN or infinite draws: diagnostics are NaN
    std::vector<int> stuck_chains{};  // 1-based chains whose draws never changed while others' did
};

// One row per column. `chains` holds one draws × parameters matrix per chain, all the same
// shape, with one column per name. Throws vbn::Error (data) on mismatched shapes. Columns are
// independent, so up to `threads` threads share them; the rows do not depend on it.
std::vector<SummaryRow> summarize(const std::vector<std::string>& names, const std::vector<Eigen::MatrixXd>& chains,
                                  int threads = 1);

// The same where the draws already sit in memory, column by column: column(c, p) points at
// `draws` consecutive draws of parameter p (one per name) in chain c, for c < chains (each
// is copied beside the other chains' as its turn comes, not all at once).
std::vector<SummaryRow> summarize(const std::vector<std::string>& names, std::size_t chains, Eigen::Index draws,
                                  const std::function<const double*(std::size_t c, Eigen::Index p)>& column,
                                  int threads = 1);

struct ChainSeconds {
    double warmup = 0, sampling = 0;
};

// What was done about a model's symmetries after sampling (docs/methods.md, "Relabelling to a
// pivot"): rule "pivot" (draws relabelled), "none" (left as drawn; `why` says why: asked for,
// or too many labelings), "" (no symmetry, or unknown: CSV files). With "pivot", `relabelled`
// of `draws` draws (all chains) were given another labeling.
struct RelabelFacts {
    std::string rule, why;
    long relabelled = 0, draws = 0;
};

// The facts of a run that the table and the JSON report besides the rows. Optional facts
// are left out of the text (and are null in the JSON) when absent.
struct RunFacts {
    std::string model;
    std::string method;
    int chains = 0;
    long draws = 0;   // per chain, after warmup
    long warmup = 0;  // warmup iterations per chain
    std::optional<double> warmup_seconds, sampling_seconds;  // wall time of the whole run
    std::vector<ChainSeconds> chain_seconds;                  // per chain (from CSV files)
    std::vector<inference::KernelStats> kernels;              // acceptance per leaf kernel, all chains
    std::optional<double> mean_accept_stat;                   // mean accept_stat__, when kernels are unknown
    std::optional<long> regenerations;
    std::optional<double> elbo;
    long divergent = 0;  // divergent transitions after warmup, all chains
    bool hidden = false; // the model has hidden nodes (R-hat's warning then names relabelling and --restarts)
    // The model's exact symmetries in words ("48 equivalent labelings: ..."), "" if none or
    // unknown (CSV files), and their count: 1 for none, empty when unknown or above 10^18.
    std::string symmetry;
    std::optional<std::uint64_t> labelings;
    RelabelFacts relabel;
    // The minor modes the symmetry jumps visited, each a flipped copy of the major one, with
    // its share of the draws (runtime/report/mode_masses.hpp); empty when no jump ran.
    std::vector<ModeMass> modes;
    // `vbn fit`'s wall time per phase, in the order they ran (the JSON's "timings"; empty
    // where the run's phases are unknown, as for CSV files).
    std::vector<std::pair<std::string, double>> phase_seconds;
};

// Adds up the per-chain counters of kernels with the same name, keeping first-seen order.
std::vector<inference::KernelStats> merge_kernel_stats(const std::vector<std::vector<inference::KernelStats>>& per_chain);

// Plain-words warnings, each with what to do: R-hat > 1.01, bulk- or tail-ESS below 100 per
// chain, acceptance below 5%, divergent transitions, constant or non-finite draws, a chain
// stuck on some parameters while the others move.
std::vector<std::string> summary_warnings(const std::vector<SummaryRow>& rows, const RunFacts& facts);

// The table (header `name mean sd mcse 5% 50% 95% ess_bulk ess_tail rhat`, aligned
// columns), then the run's facts and the warnings.
std::string format_summary(const std::vector<SummaryRow>& rows, const RunFacts& facts);

// docs/design.md §4: {"method", "chains", "draws", "elbo", "warmup_seconds", "sampling_seconds",
// "parameters": [{"name", "mean", "sd", "mcse_mean", "q5", "q50", "q95", "ess_bulk",
// "ess_tail", "rhat"}]}, in that order; NaN and absent values are null.
nlohmann::ordered_json summary_json(const std::vector<SummaryRow>& rows, const RunFacts& facts);

// `vbn vb`: the variational posterior's marginal means and sds (and the Gaussian 5/50/95%
// quantiles they imply), in the same shape without the MCMC fields (docs/design.md §4). With the
// importance correction (runtime/variational/vb_refine.hpp), its moments go under keys of their own:
// "corrected_mean", "corrected_sd", "corrected_mcse_mean", "corrected_q5", "corrected_q50",
// "corrected_q95", "corrected_mean_abs"; "vb_mean" and "vb_sd" then repeat "mean" and "sd".
struct CorrectedMarginal {
    double mean = 0, sd = 0, mcse_mean = 0, q5 = 0, q50 = 0, q95 = 0;
    double mean_abs = 0;  // E|θ| (of τ itself, E τ, for a learned scale)
};
struct VbParameter {
    std::string name;
    double mean = 0, sd = 0;  // the variational fit's marginal
    std::optional<CorrectedMarginal> corrected{};
    // Its 5%, 50% and 95% quantiles where the marginal is not Gaussian (a learned scale: exp
    // of log τ's); absent, mean ∓ z sd.
    std::optional<std::array<double, 3>> quantiles{};

    std::array<double, 3> marginal_quantiles() const;
};
struct VbFacts {
    std::string method = "vb";
    double elbo = 0;
    long iterations = 0;
    bool converged = false;
    std::optional<double> seconds;
    std::optional<double> log_evidence, log_evidence_se, pareto_k;
    std::optional<std::string> correction;  // "importance" or "tempering" when the corrected_* keys are there
    std::optional<double> correction_ess;
    std::optional<long> correction_draws;
    std::optional<double> correction_rhat;  // tempering: its runs' R-hat
};
nlohmann::ordered_json vb_summary_json(const std::vector<VbParameter>& parameters, const VbFacts& facts);

// Writes a JSON document with a trailing newline; throws vbn::Error (io) naming the file.
void write_json_file(const std::string& path, const nlohmann::ordered_json& doc);

// Chains of unequal length (an interrupted run leaves them so) are summarised over their
// common part: every chain with a draw, each cut to the shortest of them; a chain without a
// draw is left out. draws[c] is chain c's number of draws, labels[c] names it ("chain 3", a
// file). Returns the one line that says which chains, how many draws each and to how many
// they were cut ("" when every chain has the same number).
std::string truncation_note(const std::vector<std::string>& labels, const std::vector<long>& draws);

// CmdStan CSV files that are the chains of one run, as summarised: those with draws, each cut
// to the shortest of them (truncation_note says so when they differ).
struct ChainFiles {
    std::vector<StanCsv> chains;
    std::string truncation;
};

// Reads CmdStan CSV files that are the chains of one run: the same parameter columns, at
// least one, and at least one draw in some file. Throws vbn::Error naming the file (or, when
// none holds a draw, the files). With a range, only those parameter columns' values are kept
// (read_stan_csv).
ChainFiles read_chain_files(const std::vector<std::string>& files, ParameterRange range = {});

// The summary of CmdStan CSV files (one chain each), as `vbn summary` prints it: the rows of
// their parameter columns and the facts the files record. Files larger than memory_budget
// bytes in all are summarised in groups of columns holding at most about that many bytes of
// draws (one more pass over the files per group); the rows are the same. Throws vbn::Error
// (usage for no files; data or io naming the file for unreadable or inconsistent ones).
struct FilesSummary {
    std::vector<SummaryRow> rows;
    RunFacts facts;
    std::string truncation;  // truncation_note of the files: "" unless their lengths differ
};
FilesSummary summarize_files(const std::vector<std::string>& files, double memory_budget = 64e6);

}  // namespace vbn
