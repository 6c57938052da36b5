// vbn: Bayesian parameter estimation for logistic (sigmoid) belief networks, embedded in a
// C++ program. This is the whole public API:
//
//   #include <vbn/vbn.hpp>
//
//   vbn::Model model = vbn::Model::from_string(text, "my model");
//   vbn::Dataset data = vbn::Dataset::from_matrix(model, values, {"x", "y"});
//   vbn::FitResult fit = vbn::fit(model, data);          // variational fit, then MCMC
//   for (const vbn::SummaryRow& row : fit.summary) ...    // posterior mean, sd, quantiles, R-hat
//   vbn::PredictResult p = vbn::predict(model, new_rows, fit.chains[0].draws);  // P(node = +1) per row
//   vbn::EvidenceResult e = vbn::evidence(model, data);  // log p(data), se, Pareto k-hat, ELBO
//   vbn::SimulateResult s = vbn::simulate(model, {.rows = 100, .seed = 7});  // rows sampled forward
//   vbn::DrawsFile f = vbn::read_draws("fit_1.csv");  // a CmdStan CSV file of draws, as `vbn summary` reads it
//
// Link with the CMake target vbn::vbn (find_package(vbn CONFIG REQUIRED)). Errors are
// exceptions derived from vbn::Error (<vbn/error.hpp>). Models and datasets are immutable
// once built and may be shared between threads; fits in different threads do not interfere,
// and a fit gives the same numbers bit for bit whatever else the process runs.
//
// The names below are declared in vbn::api and brought into vbn: write vbn::Model.
#pragma once

#include "vbn/error.hpp"

#include <Eigen/Core>

#include <atomic>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vbn::api {

// The library's version, "MAJOR.MINOR.PATCH".
std::string version();

// A checked model. Immutable; copies share it.
class Model {
public:
    // Compiles model text (docs/language.md). `name` is what messages call it, as in
    // "name:3:14: error: ...". Throws ModelError with the line and column of the first error.
    static Model from_string(std::string_view text, std::string name = "model");
    // Reads and compiles a model file; messages name the path. Throws IoError or ModelError.
    static Model from_file(const std::string& path);

    // The display name given above (or the path).
    const std::string& name() const;
    // Warnings of the compiler, formatted like errors; empty when there are none.
    const std::string& warnings() const;
    // The number of learned weights (the length of a draw).
    int dimension() const;
    // The parameters' elements in the order results report them: "w[1]", "W[2,3]" (matrices
    // column-major, as CmdStan writes them).
    const std::vector<std::string>& parameter_names() const;
    // The data columns the model needs: observed binary node elements ("y", "v[3]"), then
    // covariate elements, each in declaration order.
    const std::vector<std::string>& binary_columns() const;
    const std::vector<std::string>& covariate_columns() const;
    // The network in canonical form, as `vbn check` prints it.
    std::string describe() const;

    struct Impl;
    const Impl& impl() const { return *impl_; }  // for the library itself

private:
    friend class Dataset;
    explicit Model(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
    std::shared_ptr<const Impl> impl_;
};

// One named column of in-memory data (Dataset::from_columns).
struct Column {
    std::string name;            // "y", "v[3]" (or "v.3")
    std::vector<double> values;  // one per row: see Dataset::from_matrix for the coding
};

// Observations of a model's nodes and covariates, validated against the model exactly as
// the command line validates a CSV file, and compressed into distinct rows with counts.
// Immutable; copies share it. A dataset belongs to the model it was built for.
class Dataset {
public:
    // A CSV file with a header row (docs/language.md, "Data"). Throws IoError, or DataError
    // naming file, line and column of the first problem (up to 20 are reported at once).
    static Dataset from_csv_file(const Model& model, const std::string& path);
    // The same from a stream; `name` is what messages call it.
    static Dataset from_csv(const Model& model, std::istream& in, std::string name = "data");
    // A matrix with one row per observation and one column per name in `columns` (the same
    // names as CSV headers). Binary columns hold +1 or -1 (or 1/0, 0 meaning -1, as in CSV
    // files), NaN for a missing value; covariate columns hold finite numbers. Columns the
    // model does not know are ignored (see notes()). Messages call the data `name` and give
    // 1-based row and column numbers. Throws DataError, or UsageError if `columns` does not
    // match the matrix's width.
    static Dataset from_matrix(const Model& model, const Eigen::MatrixXd& values, const std::vector<std::string>& columns,
                               std::string name = "data");
    // Per-column vectors, all the same length (UsageError otherwise), coded as above.
    static Dataset from_columns(const Model& model, const std::vector<Column>& columns, std::string name = "data");

    const std::string& name() const;
    long rows() const;      // observations
    int patterns() const;   // distinct rows
    // Things worth knowing that are not errors (an ignored extra column, say).
    const std::vector<std::string>& notes() const;

    struct Impl;
    const Impl& impl() const { return *impl_; }  // for the library itself

private:
    explicit Dataset(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
    std::shared_ptr<const Impl> impl_;
};

// A flag another thread sets to stop a fit. Copies share the flag, so keep one and pass a
// copy in Callbacks; cancel() is safe from any thread, a signal handler excepted.
class CancellationToken {
public:
    CancellationToken() : flag_(std::make_shared<std::atomic<bool>>(false)) {}
    void cancel() const { flag_->store(true); }
    bool cancelled() const { return flag_->load(); }
    void reset() const { flag_->store(false); }
    const std::atomic<bool>* flag() const { return flag_.get(); }

private:
    std::shared_ptr<std::atomic<bool>> flag_;
};

// Variational EM (Jaakkola-Jordan bound, mean-field over unobserved values; docs/methods.md).
struct VariationalOptions {
    double tolerance = 1e-9;     // stop when |change of ELBO| <= tolerance * |ELBO|
    int max_iterations = 2000;   // EM iterations per restart
    int restarts = 0;            // fits from different starting points, the best kept; 0: 8 with hidden nodes, else 1
    std::uint64_t seed = 1;      // seeds the restarts after the first
};

// `vbn fit`: the variational fit, then MCMC chains built from it (docs/methods.md).
struct FitOptions {
    // "auto" (the default), "rwm", "varmh", "varblock", "varmix", "regen", "nuts" or "gibbs":
    // the names methods() below lists, each with a line on what it does.
    std::string method = "auto";
    int chains = 4;
    int warmup = 1000;            // iterations per chain, adapting, not kept
    int draws = 1000;             // kept iterations per chain
    // Above draws: while, after them, some parameter's R-hat is above 1.01 or its bulk- or
    // tail-ESS below 100 per chain, the chains run on, up to max_draws each, as `vbn fit`
    // without --draws does up to 4000 (docs/methods.md, "Draws until the ESS is enough"). At
    // most draws (the default): exactly draws.
    int max_draws = 0;
    int threads = 2;              // threads for the chains, the calling one among them (results do not depend on it)
    std::uint64_t seed = 1;       // the same seed gives the same draws bit for bit
    bool keep_draws = true;       // false: only stream them (Callbacks::on_draw), keep no matrix
    // NUTS's target acceptance (Stan's adapt_delta), in (0, 1); 0: automatic, 0.65 for a
    // log-concave posterior (every node observed) of more than 20 parameters, else 0.8.
    double adapt_delta = 0;
    // varblock: after warmup, each well-fitted whole block proposes by an overrelaxed move
    // about its t, u* = α u + sqrt(1 - α²) ε in the t's whitened coordinates, in (-1, 1);
    // negative: successive draws antithetic (means more precise, variances less); 0: the
    // independence proposals of the paper (docs/methods.md, "Overrelaxed block moves").
    double overrelax = -0.3;
    // On a model whose posterior has equivalent labelings (sign flips, exchangeable hidden
    // nodes): "pivot" relabels every kept draw, after sampling, to the labeling nearest a
    // common pivot, so the summary describes one labeling; "none" keeps the draws as drawn
    // (docs/methods.md, "Relabelling to a pivot"). Callbacks::on_draw sees draws as drawn.
    std::string relabel = "pivot";
    VariationalOptions variational;
    // Each data row's log-likelihood log p(row | θ) at every kept draw (unobserved values
    // summed out exactly), in Chain::log_lik: the pointwise values PSIS-LOO reads. Needs
    // keep_draws.
    bool log_lik = false;
};

// Where a chain is.
struct Progress {
    int chain = 0;       // 0-based
    int iteration = 0;   // iterations done in this phase
    int iterations = 0;  // iterations in this phase
    bool warmup = true;  // the phase: warmup, or sampling
};

enum class LogLevel { note, warning };

// Optional hooks into a running fit. Calls may come from any thread running a chain (the
// calling one among them); calls of one kind are never concurrent with each other except
// on_draw for different chains.
struct Callbacks {
    // At most once per `progress_interval` seconds per chain, plus when a phase ends.
    std::function<void(const Progress&)> progress;
    double progress_interval = 0.5;
    // Every kept draw, in the order of Model::parameter_names(), as soon as it is made:
    // in order within a chain; different chains may call concurrently.
    std::function<void(int chain, int draw, const Eigen::VectorXd& values, double log_density)> on_draw;
    // Notes and warnings the command line would print (which method `auto` chose, a chain
    // that failed, R-hat above 1.01 ...); called from the thread that called fit().
    std::function<void(LogLevel level, const std::string& message)> log;
    // Checked between iterations; when cancelled the fit stops soon and throws CancelledError.
    std::optional<CancellationToken> cancel;
};

// One row of the posterior summary (the table `vbn fit` prints).
struct SummaryRow {
    std::string name;  // w[1], W[2,3]
    double mean = 0, sd = 0, mcse_mean = 0;
    double q5 = 0, q50 = 0, q95 = 0;
    double ess_bulk = 0, ess_tail = 0, rhat = 0;  // NaN when the draws are constant
};

// The variational posterior: a Gaussian over the weights, in Model::parameter_names() order.
struct VariationalResult {
    // The Gaussian over θ. A learned scale's entry (docs/language.md, "Learned prior scales")
    // is log τ, which is what θ holds: q(τ) itself is not Gaussian.
    Eigen::VectorXd mean;
    Eigen::MatrixXd covariance;        // zero between blocks (the fit factorises over them)
    double elbo = 0;                   // a lower bound on log p(data), with all its constants
    std::vector<double> elbo_trace;    // after each iteration of the kept fit (non-decreasing)
    std::vector<double> restart_elbos; // the final ELBO of every restart
    int iterations = 0;
    bool converged = false;            // false: stopped at max_iterations
    double seconds = 0;                // wall time
};

// Acceptance of one kernel over all chains' sampling iterations.
struct Acceptance {
    std::string kernel;
    long proposed = 0, accepted = 0;
    double rate() const { return proposed > 0 ? static_cast<double>(accepted) / static_cast<double>(proposed) : 0.0; }
};

// The sampler's statistics of each kept draw: the sampler columns `vbn fit --output` writes
// to its CmdStan CSV files (docs/design.md §4), one entry per kept draw (none without
// FitOptions::keep_draws). accept_stat is filled by every kernel; the others are HMC's and
// are 0 for the kernels that are not NUTS.
struct SamplerStats {
    Eigen::VectorXd accept_stat;  // accept_stat__: MH, min(1, ratio) of the proposal; NUTS, the mean over the tree
    Eigen::VectorXd stepsize;     // stepsize__: NUTS's step size (after warmup, the adapted one)
    Eigen::VectorXi treedepth;    // treedepth__: the depth of NUTS's tree
    Eigen::VectorXi n_leapfrog;   // n_leapfrog__: leapfrog steps taken
    Eigen::VectorXi divergent;    // divergent__: 1 for a divergent transition, else 0
    Eigen::VectorXd energy;       // energy__: the Hamiltonian at the draw
};

struct Chain {
    int chain = 0;               // 0-based
    Eigen::MatrixXd draws;       // kept draws x parameters (Model::parameter_names() order)
    Eigen::VectorXd log_density; // the log posterior (up to a constant) of each kept draw: lp__
    SamplerStats sampler;        // the other sampler columns of each kept draw
    Eigen::MatrixXd log_lik;     // with FitOptions::log_lik: kept draws x data rows (in row order)
    std::vector<Acceptance> acceptance;
    long divergent = 0;          // divergent transitions (nuts)
    long regenerations = 0;      // regeneration times (regen)
    double warmup_seconds = 0, sampling_seconds = 0;
    std::string error;           // non-empty if the chain failed (it is left out of summary)
};

// A minor mode: the copy of the major mode with some hidden nodes' signs flipped, where a prior
// or a fixed offset only partly breaks that symmetry (docs/methods.md, "Symmetry jumps").
struct ModeMass {
    std::string flip;   // the nodes flipped in this copy: "d1", "d1 + d2"
    double mass = 0;    // its share of the kept draws, all chains
    double mcse = 0;    // the share's Monte Carlo standard error
    // The copy's mass by importance sampling from the major copy's draws (docs/methods.md,
    // "Weighing the modes"), its Monte Carlo standard error and the Pareto k-hat of the
    // ratios (reliable below 0.7); NaN where it was not computed.
    double importance = std::numeric_limits<double>::quiet_NaN();
    double importance_mcse = std::numeric_limits<double>::quiet_NaN();
    double importance_khat = std::numeric_limits<double>::quiet_NaN();
};

struct FitResult {
    std::string method;                  // the method run ("auto" resolved)
    std::string kernel;                  // its kernel, in words
    std::vector<std::string> names;      // Model::parameter_names()
    std::vector<Chain> chains;
    std::vector<SummaryRow> summary;     // over the chains that did not fail
    std::vector<Acceptance> acceptance;  // all chains
    VariationalResult variational;       // the fit the chains started from
    double warmup_seconds = 0, sampling_seconds = 0;  // wall time of the chains' phases
    // Wall time of the phases before them (variational.seconds is the variational fit's):
    // building the target from the data, and the proposals and kernel (Newton, pilot draws,
    // mode search); and of the summary after them: the diagnostics and, where symmetry jumps
    // ran, the minor modes' masses (0 without keep_draws).
    double target_seconds = 0, proposal_seconds = 0, summary_seconds = 0;
    // What was done about the posterior's labelings: "pivot" (relabelled_draws of the kept
    // draws were given another labeling), "none", or "" when the model has none.
    std::string relabel;
    long relabelled_draws = 0;
    // The minor modes the symmetry jumps visited, one per flipped copy (empty when no jump ran,
    // or without keep_draws): what the summary's "Minor modes" line says.
    std::vector<ModeMass> modes;
    std::vector<std::string> notes;      // what Callbacks::log received as notes
    std::vector<std::string> warnings;   // ... and as warnings
    std::string table;                   // the summary as `vbn fit` prints it: name mean sd
                                         // mcse 5% 50% 95% ess_bulk ess_tail rhat, then
                                         // acceptance, ELBO, times and warnings
};

// Variational EM alone (`vbn vb`). Throws UsageError, DataError, InferenceError.
VariationalResult variational(const Model& model, const Dataset& data, const VariationalOptions& options = {});

// The variational fit, then MCMC. Throws UsageError (bad options), LimitError (exact
// summation would be exponential), InferenceError (every chain failed), CancelledError.
FitResult fit(const Model& model, const Dataset& data, const FitOptions& options = {}, const Callbacks& callbacks = {});

// Posterior predictive probabilities (`vbn predict`; docs/methods.md, "Prediction").
struct PredictOptions {
    // The node element ("y", "v[3]") to predict in every row (its observed values are hidden
    // from the prediction and kept for scoring); empty: every unobserved binary element of
    // each row.
    std::string target;
    long vb_draws = 4000;    // with a VariationalResult: draws from it (as `--vb-draws`)
    std::uint64_t seed = 1;  // seeds those draws (as `--seed`)
};

// One predicted value: P(node = +1 | the row's observed values, the posterior).
struct Prediction {
    long row = 0;      // 1-based row of the dataset, in input order
    std::string node;  // "y", "v[3]"
    double p = 0;
    int truth = 0;     // the target's value in the row (+1 or -1), 0 when unknown
};

// Scores over the predictions whose truth is known (with PredictOptions::target).
struct PredictionScores {
    long scored = 0;      // predictions with a known truth
    double accuracy = 0;  // share with (p > 0.5) == (truth = +1)
    double log_loss = 0;  // mean -log P(truth)
    double brier = 0;     // mean (p - [truth = +1])^2
};

struct PredictResult {
    std::vector<Prediction> predictions;     // by row, then node in declaration order
    std::optional<PredictionScores> scores;  // present when some truth is known
    long draws = 0;                          // posterior draws averaged over
};

// Predictions for the rows of `rows` (a dataset of this model: NaN, or an empty CSV field,
// marks what is unobserved) from posterior draws, one per matrix row, in
// Model::parameter_names() order (a Chain's draws, or several stacked). Throws UsageError
// (unknown target, draws of the wrong width or not finite), LimitError.
PredictResult predict(const Model& model, const Dataset& rows, const Eigen::MatrixXd& draws, const PredictOptions& options = {});
// The same from a variational fit (of this model, to training data): options.vb_draws
// draws of N(mean, covariance) from seed options.seed, as `vbn predict --vb`.
PredictResult predict(const Model& model, const Dataset& rows, const VariationalResult& posterior,
                      const PredictOptions& options = {});

// The log evidence log p(data) (`vbn compare`; docs/methods.md, "Log evidence and Pareto
// k-hat"): the variational fit, then the importance correction `vbn vb` runs, so the same
// options give the numbers `vbn vb` prints.
struct EvidenceOptions {
    long draws = 4000;       // importance draws per round (as `--correction-draws`)
    std::uint64_t seed = 1;  // seeds the importance draws (as `--seed`)
    VariationalOptions variational;
};

struct EvidenceResult {
    double log_evidence = 0;  // log p(data), estimated (exact when the model has no parameters)
    double se = 0;            // its Monte Carlo standard error
    double pareto_k = 0;      // Pareto k-hat of the importance weights: above 0.7 the estimate
                              // cannot be trusted; NaN when exact
    double elbo = 0;          // the variational lower bound on log p(data)
    long draws = 0;           // 0 when exact
    bool from_mode = false;   // the proposal sat at the exact posterior mode (else at the fit)
    // k-hat above 0.7 sent the estimate to tempering (docs/methods.md, "The tempered
    // correction"): log_evidence and se are then the tempered runs', and runs_rhat (reliable
    // below 1.01) says whether they agree.
    bool tempered = false;
    double runs_rhat = 0;
};

// Throws UsageError (bad options), LimitError (exact summation would be exponential),
// InferenceError.
EvidenceResult evidence(const Model& model, const Dataset& data, const EvidenceOptions& options = {});

// Forward simulation (`vbn simulate`): parameters from their priors (or given), then rows
// sampled in topological order; covariates, which have no distribution in the model, iid N(0, 1).
struct SimulateOptions {
    long rows = 100;
    std::uint64_t seed = 1;       // the same seed gives the rows `vbn simulate --seed` writes
    bool include_hidden = false;  // also the hidden nodes' values (as `--include-hidden`)
    // Parameter values as the JSON of `--params`: {"w": [2, -1], "W": [[1, 2], [3, 4]]}
    // (matrices as arrays of rows); parameters it leaves out are drawn from their priors.
    // Empty: every parameter is drawn. Invalid JSON or a wrong name or shape: UsageError.
    std::string params_json;
};

struct SimulateResult {
    std::vector<Column> columns;    // one per element in declaration order: binary as +1/-1
    Eigen::VectorXd parameters;     // the values the rows were drawn with, Model::parameter_names() order
    std::vector<std::string> notes; // what `vbn simulate` prints as notes
};

// Throws UsageError (rows < 1, bad parameters).
SimulateResult simulate(const Model& model, const SimulateOptions& options = {});

// A CmdStan CSV file of draws, one chain: `vbn fit --output`'s FILE_1.csv ... or CmdStan's
// (docs/design.md §4), read by the reader `vbn summary` and `vbn loo` use.
struct DrawsFile {
    std::string path;
    // The `# key = value` lines before the header, in file order, "(Default)" dropped:
    // {"algorithm", "hmc"}, {"engine", "nuts"}, {"seed", "3"} ...
    std::vector<std::pair<std::string, std::string>> config;
    std::vector<std::string> sampler_columns;    // the header's names ending in "__" (lp__, accept_stat__ ...)
    Eigen::MatrixXd sampler;                     // kept draws x sampler_columns
    std::vector<std::string> parameter_columns;  // the others as the file spells them: "w.1", "W.2.3", "log_lik.1"
    Eigen::MatrixXd draws;                       // kept draws x parameter_columns
    // The value of a configuration key (its first occurrence), if present.
    std::optional<std::string> setting(const std::string& key) const;
};

// Reads one file; saved warmup draws (save_warmup = 1) are left out. Throws IoError (no such
// file, unreadable) or DataError naming the file and line of the problem ("FILE:LINE: ...":
// no header, a draw of the wrong width, a value that is not a number).
DrawsFile read_draws(const std::string& path);

// The methods FitOptions::method takes, in the order `vbn fit --help` lists them, each with
// a line on what it does (docs/methods.md has a section on each).
struct MethodDescription {
    std::string name;
    std::string description;
};
std::vector<MethodDescription> methods();

}  // namespace vbn::api

// (The library's own implementation, which also sees internal types of the same names,
// defines VBN_API_IMPLEMENTATION and spells these names vbn::api::.)
#ifndef VBN_API_IMPLEMENTATION
namespace vbn {
using namespace vbn::api;
}  // namespace vbn
#endif
