// The fit job (`vbn fit`, vbn::api::fit): the variational fit, then MCMC chains of the chosen
// method, then the summary of what ran. The command line and the embedding API both call
// these functions; they only convert types and present results.
//
//   services::FitRun run = services::fit(graph, data, settings, callbacks);
//   FitSummary summary = services::summarize(run, graph.name);
#pragma once

#include "lang/ir.hpp"
#include "runtime/data/dataset.hpp"
#include "runtime/report/fit_summary.hpp"
#include "runtime/report/output_csv.hpp"
#include "runtime/report/relabel.hpp"
#include "runtime/report/summary.hpp"
#include "runtime/sampling/fit.hpp"
#include "runtime/target/pointwise.hpp"
#include "runtime/services/callbacks.hpp"

#include <Eigen/Core>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace vbn::services {

// The job's one settings structure is the sampling stage's FitOptions (method, chains,
// warmup, draws, seed, threads, keep_draws, proposals, NUTS and varblock settings, VB
// options); its callbacks and on_vb are set by fit() from Callbacks and FitStart.

// What is known once the variational fit is done, before any chain starts.
struct FitStart {
    const VbFit& vb;
    std::string method;  // auto resolved
    double adapt_delta;  // NUTS's target acceptance for this run (0 unless NUTS)
};

struct FitRun {
    FitResult result;                     // chains in the graph's layout, the VB fit, notes
    std::vector<StreamedCounts> counts;   // per chain: divergences and regenerations as draws passed
    bool interrupted = false;             // Callbacks::interrupt was set before the chains ended
    int warmup = 0, draws = 0;            // the settings the chains ran with
    RelabelFacts relabel;                 // what was done about the model's symmetries
    // The model's exact labelings on θ's layout, where the symmetry jumps ran and it has some:
    // the summary reports the flipped copies they exchange as one mode (mode_masses.hpp).
    std::optional<LabelingGroup> labelings;
};

// Runs the fit. With kept draws (FitOptions::keep_draws) they are then relabelled to one
// labeling as FitOptions::relabel says (streamed draws: CsvDrawFiles::relabel). `on_start` (optional) is called once the variational fit and the method are
// known, before any chain starts (e.g. to open output files that record them). The run's
// notes go to callbacks.log once the chains are done. Interrupted, it returns what the chains
// drew (FitRun::interrupted; has_draws() tells whether any chain drew at all). Throws
// vbn::Error: usage (bad settings), limit (exact summation would be exponential), inference
// (every chain failed), cancelled (interrupted during the variational fit).
FitRun fit(const ir::Graph& graph, const Dataset& data, FitOptions settings, const Callbacks& callbacks,
           const std::function<void(const FitStart&)>& on_start = {});
// The same, handed the data (a caller done with them, as the command line is): their values
// are dropped once the target holds its own copy (vbn::fit(graph, Dataset&&, ...)).
FitRun fit(const ir::Graph& graph, Dataset&& data, FitOptions settings, const Callbacks& callbacks,
           const std::function<void(const FitStart&)>& on_start = {});

// Whether some chain that did not fail made a draw (an interrupted run may have none).
bool has_draws(const FitRun& run);

// The summary of a run whose draws were kept (FitOptions::keep_draws). With keep_copy the
// draws in output order stay in FitSummary::draws (for plots). Chain failures go to
// callbacks.log as warnings.
FitSummary summarize(const FitRun& run, const std::string& model, bool keep_copy, const Callbacks& callbacks);

// The same for a run whose draws were streamed, not kept: draws_of(c, first, count) reads
// chain c's draws of output columns first .. first+count-1 back (e.g. from its CmdStan CSV
// file), at most memory_budget bytes at once; with keep_copy every column is read at once.
using ReadBack = std::function<Eigen::MatrixXd(std::size_t chain, Eigen::Index first, Eigen::Index count)>;
FitSummary summarize(const FitRun& run, const std::string& model, bool keep_copy, const Callbacks& callbacks,
                     const ReadBack& draws_of, double memory_budget);

// Chain c's kept draws (FitOptions::keep_draws) in output order: draws × parameters.
Eigen::MatrixXd output_draws(const FitResult& result, const inference::ChainResult& chain);

// Each kept draw's pointwise log-likelihood (FitOptions::log_lik): one row per draw, one
// column per data row, chain's draws in output order (output_order(graph)). `data` must carry
// row_pattern.
Eigen::MatrixXd pointwise_log_lik(const ir::Graph& graph, const Dataset& data, const Eigen::MatrixXd& output_draws,
                                  int max_enumerated);

// Streams every chain's draws to CmdStan CSV files, FILE_1.csv … (docs/design.md §4): opened
// when the fit starts, so that their headers record the method and the variational fit,
// written as draws come (each file only by its chain's thread), finished after the run.
// With FitOptions::log_lik each line also holds log_lik.1 … log_lik.N, the draw's
// log-likelihood of each data row (`data` must then carry row_pattern).
class CsvDrawFiles {
public:
    // `output` is FILE.csv; model and data name the run in the headers. Throws what
    // PointwiseLogLik throws when log_lik is asked for.
    CsvDrawFiles(std::string output, std::string model, std::string data_file, const ir::Graph& graph,
                 const FitOptions& settings, const Dataset* data = nullptr);
    ~CsvDrawFiles();
    CsvDrawFiles(const CsvDrawFiles&) = delete;
    CsvDrawFiles& operator=(const CsvDrawFiles&) = delete;

    void start(const FitStart& start);  // opens the files
    void draw(int chain, int draw, const Eigen::VectorXd& values, double lp, const inference::TransitionInfo& info);
    void finish(const FitResult& result);  // the timing blocks; flushes
    // After finish(): relabels the files' draws to one labeling as FitOptions::relabel says,
    // rewriting each file with a `# relabel = …` line; records what was done in run.relabel.
    // Where every chain's parameter columns fit in hold_budget bytes, the files are parsed
    // once here and held, as rewritten, for read_back.
    void relabel(FitRun& run, double hold_budget);
    std::size_t files() const { return writers_.size(); }
    const std::string& output() const { return output_; }
    // Chain c's draws of output columns first .. first+count-1, as its file holds them (from
    // what relabel() held, or read back from the file).
    Eigen::MatrixXd read_back(std::size_t chain, Eigen::Index first, Eigen::Index count) const;

private:
    std::string output_, model_, data_file_;
    const ir::Graph& graph_;
    const FitOptions& settings_;
    std::vector<std::unique_ptr<CsvWriter>> writers_;
    // With log_lik: the evaluator, and per chain its workspace, θ in the graph's layout and
    // the line's values (parameters, then rows), so a draw allocates nothing.
    std::unique_ptr<PointwiseLogLik> log_lik_;
    std::vector<PointwiseLogLik::Workspace> log_lik_ws_;
    std::vector<Eigen::VectorXd> theta_, line_;
    std::vector<int> order_;
    std::vector<ChainDraws> parsed_;  // the files' θ columns, as relabel() left them; empty: not held
};

}  // namespace vbn::services
