// CmdStan's CSV format for MCMC draws (docs/design.md §4): a writer that streams one chain's
// draws to FILE_<chain>.csv as they come, and a reader for such files (ours or CmdStan's).
//
// Layout of a file, as CmdStan writes it:
//   # key = value                      configuration comment lines
//   lp__,accept_stat__,stepsize__,treedepth__,n_leapfrog__,divergent__,energy__,w.1,W.2.3
//   # Adaptation terminated            after warmup, then step size and metric lines
//   -7.1,0.93,0.82,2,3,0,7.4,0.21,...  one line per draw
//   #  Elapsed Time: ... seconds (Warm-up)   the timing block at the end
#pragma once

#include "inference/kernel.hpp"

#include <Eigen/Core>

#include <cstdint>
#include <fstream>
#include <istream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace vbn {

// CmdStan's sampler columns, in file order.
inline const std::vector<std::string>& sampler_column_names() {
    static const std::vector<std::string> names{"lp__",         "accept_stat__", "stepsize__", "treedepth__",
                                                "n_leapfrog__", "divergent__",   "energy__"};
    return names;
}

// One draw's sampler columns.
struct SamplerValues {
    double lp = 0;
    double accept_stat = 1;
    double stepsize = 0;
    int treedepth = 0;
    int n_leapfrog = 0;
    bool divergent = false;
    double energy = 0;
};
SamplerValues sampler_values(double lp, const inference::TransitionInfo& info);

// The inverse metric CmdStan reports after adaptation ("metric" in the config lines).
enum class MetricKind { unit_e, diag_e, dense_e };

// What the configuration comment lines say. The keys readers rely on (model, method,
// num_samples, num_warmup, save_warmup, thin, algorithm, max_depth, metric, id, seed) are
// always written, `engine` when not empty; `extra` adds more `key = value` lines (values
// without '=' so that cmdstanpy keeps them).
struct CsvConfig {
    std::string model;              // model name (the file's stem)
    std::string algorithm = "hmc";  // "hmc" for NUTS (as CmdStan), else our --method name
    std::string engine = "nuts";    // the HMC engine; empty for non-HMC methods
    long num_samples = 1000;
    long num_warmup = 1000;
    int thin = 1;
    bool save_warmup = false;
    int max_depth = 10;  // NUTS tree depth limit; cmdstanpy requires the key for every method
    MetricKind metric = MetricKind::unit_e;
    std::uint64_t seed = 0;
    int chain_id = 1;
    std::string data_file;
    std::vector<std::pair<std::string, std::string>> extra;
};

// Rewrites a finished file's `num_samples` line to say n: chains run on past the draws they
// were started with (FitOptions::max_draws) hold more draws than the header announced when
// it was written, and cmdstanpy checks the count against it. Throws vbn::Error (io).
void set_num_samples(const std::string& path, long n);

// FILE.csv → FILE_<chain>.csv (1-based); a name without ".csv" gets "_<chain>.csv" appended.
std::string chain_file_path(const std::string& output, int chain);
// w[1] → w.1, W[2,3] → W.2.3 (CmdStan column names); names without brackets are unchanged.
std::string csv_column_name(const std::string& name);
// w.1 → w[1], W.2.3 → W[2,3] (the inverse, for summaries of CSV files).
std::string display_name(const std::string& column);

// Streams one chain: the header on construction, then each draw as one line as soon as it is
// given (nothing is held back beyond the stream's buffer), then the timing block in finish().
// Values are written in the shortest form that reads back to the same double.
class CsvWriter {
public:
    // Throws vbn::Error (io) if the file cannot be opened.
    CsvWriter(const std::string& path, const CsvConfig& config, const std::vector<std::string>& parameter_names);
    // Writes to a caller's stream (tests, stdout).
    CsvWriter(std::ostream& out, const CsvConfig& config, const std::vector<std::string>& parameter_names);
    CsvWriter(const CsvWriter&) = delete;
    CsvWriter& operator=(const CsvWriter&) = delete;
    ~CsvWriter();

    // "# Adaptation terminated", the step size and the inverse metric, as CmdStan writes them
    // after warmup: a diagonal metric is a vector, a dense one a square matrix, a unit one
    // empty; it must match config.metric.
    void adaptation_terminated(double step_size, const Eigen::MatrixXd& inverse_metric = {});
    void write_draw(const SamplerValues& sampler, const Eigen::Ref<const Eigen::VectorXd>& x);
    // The elapsed-time block, then flush; no draw may follow.
    void finish(double warmup_seconds, double sampling_seconds);

    long draws_written() const { return draws_; }

private:
    void write_header(const CsvConfig& config, const std::vector<std::string>& parameter_names);
    void check_stream(const char* what);

    std::ofstream file_;
    std::ostream* out_;
    std::string path_;
    MetricKind metric_;
    std::size_t parameters_;
    long draws_ = 0;
    bool finished_ = false;
    std::string line_;  // reused for every draw
};

// A Stan CSV file read back.
struct StanCsv {
    std::string path;
    std::vector<std::pair<std::string, std::string>> config;  // key = value lines, "(Default)" dropped
    std::vector<std::string> columns;                          // header as in the file
    std::vector<std::string> parameter_columns;                // columns not ending in "__"
    std::vector<std::string> sampler_columns;                  // columns ending in "__"
    Eigen::MatrixXd draws;                                     // post-warmup draws × parameters
    Eigen::MatrixXd sampler;                                   // post-warmup draws × sampler columns
    Eigen::MatrixXd warmup_draws;                              // saved warmup rows (all columns), if any
    std::optional<double> step_size;
    Eigen::MatrixXd inverse_metric;  // 1 × n for diag_e, n × n for dense_e, empty otherwise
    std::optional<double> warmup_seconds, sampling_seconds;

    // The value of a configuration key (the first occurrence), if present.
    std::optional<std::string> config_value(const std::string& key) const;
    // Index of a column by name, or -1.
    int column_index(const std::string& name) const;
    // Post-warmup values of a sampler column (e.g. "divergent__"), if present.
    std::optional<Eigen::VectorXd> sampler_column(const std::string& name) const;
};

// Reads a Stan CSV file. Errors (vbn::Error, kind io for a missing file, data for bad
// content) name the file and the line.
StanCsv read_stan_csv(const std::string& path);
StanCsv read_stan_csv(std::istream& in, const std::string& name);

// Parameter columns first .. first+count-1 (counted among the parameter columns, from 0).
struct ParameterRange {
    std::size_t first = 0;
    std::size_t count = static_cast<std::size_t>(-1);  // all from first on
};
// The same, keeping the values of those parameter columns only (and the sampler columns):
// draws and warmup_draws hold just them, so a file too large to hold can be read in parts.
// The other values are not parsed.
StanCsv read_stan_csv(const std::string& path, ParameterRange range);
StanCsv read_stan_csv(std::istream& in, const std::string& name, ParameterRange range);

}  // namespace vbn
