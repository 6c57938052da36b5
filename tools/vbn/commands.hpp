// The subcommands of the `vbn` binary (docs/design.md §3), one file each under commands/,
// callable from tests. Each takes its command line's values (the job's settings structure
// from runtime/services, bound directly by main.cpp, plus what only the command line has:
// file names and presentation) and returns the process exit status: 0 success, 1
// model/data/usage error, 2 inference failure, 130 interrupted. Results go to `out`,
// messages to `err`.
#pragma once

#include "runtime/sampling/fit.hpp"
#include "runtime/services/predict.hpp"
#include "runtime/services/variational.hpp"

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace vbn::commands {

struct CheckArgs {
    std::string model;
    std::optional<std::string> data;
    std::optional<std::string> dot;
};
int check(const CheckArgs& args, std::ostream& out, std::ostream& err);

struct SimulateArgs {
    std::string model;
    long rows = 0;
    std::optional<std::uint64_t> seed;
    std::optional<std::string> params;  // JSON file
    bool include_hidden = false;
    std::optional<std::string> output;  // CSV file; stdout if absent
};
int simulate(const SimulateArgs& args, std::ostream& out, std::ostream& err);

struct VbArgs {
    std::string model;
    std::string data;
    std::optional<std::string> summary_json;
    services::VariationalSettings settings;  // --restarts, --tolerance, --max-iterations, --correction-draws
    std::optional<std::uint64_t> seed;       // the restarts' and the correction's; absent: fresh, printed
    std::string correction = "auto";  // importance, then tempering where k-hat > 0.7; "importance", "tempering", "none"
    std::optional<int> shards;        // the rows dealt into this many shards over the MPI ranks
};
int vb(const VbArgs& args, std::ostream& out, std::ostream& err);

struct FitArgs {
    std::string model;
    std::string data;
    FitOptions settings;                 // --method, --chains, --warmup, --threads, --proposal, --overrelax, --restarts, --relabel
    std::optional<std::uint64_t> seed;   // absent: a fresh one, printed
    std::optional<int> draws;            // absent: 1000, run on to max_draws while short of ESS or R-hat
    std::optional<int> max_draws;        // absent: 4000 without --draws, else exactly --draws
    std::optional<double> adapt_delta;   // NUTS's target acceptance; absent: automatic
    std::optional<std::string> output;   // CmdStan CSV, one file per chain
    std::optional<std::string> summary_json;
    bool quiet = false;
    std::optional<std::string> plots;    // directory for trace, density, pair and rank plots
    std::optional<int> shards;           // the rows dealt into this many shards over the MPI ranks
};
int fit(const FitArgs& args, std::ostream& out, std::ostream& err);

struct PredictArgs {
    std::string model;
    std::string data;                       // rows to predict
    std::vector<std::string> draws;         // CmdStan CSV files, or
    bool vb = false;                        // the variational posterior fitted to `train`
    std::optional<std::string> train;
    std::optional<std::string> target;      // a node name, e.g. y or v[3]
    std::optional<std::string> output;      // CSV file: row,node,p
    services::PredictSettings settings;     // --vb-draws, --restarts
    std::optional<std::uint64_t> seed;      // for --vb; absent: a fresh one, printed
};
int predict(const PredictArgs& args, std::ostream& out, std::ostream& err);

struct CompareArgs {
    std::vector<std::string> models;  // two or more
    std::string data;
    int evidence_draws = 4000;
    int restarts = 0;  // VB restarts per model, the best ELBO used (0: automatic, restarts_for)
    std::optional<std::uint64_t> seed;  // absent: a fresh one, printed
    std::string by = "evidence";        // or "loo": fit each model and rank by PSIS-LOO
};
int compare(const CompareArgs& args, std::ostream& out, std::ostream& err);

// `vbn summary FILE_1.csv …`: the summary table of CmdStan CSV files. Files larger than
// memory_budget bytes in all are read in groups of columns.
int summary(const std::vector<std::string>& files, std::ostream& out, std::ostream& err, double memory_budget = 256e6);

// `vbn loo FILE_1.csv …`: PSIS-LOO from the log_lik columns of one fit's chain files.
int loo(const std::vector<std::string>& files, std::ostream& out, std::ostream& err);

// `vbn plot FILE_1.csv … --output-dir DIR`.
int plot(const std::vector<std::string>& files, const std::string& dir, std::ostream& out, std::ostream& err);

// Exit status for an error kind (docs/design.md §3).
int exit_status(int error_kind);

// A seed for runs where the user gave none (printed so the run can be repeated).
std::uint64_t fresh_seed();
// The seed of a run that draws random numbers: the one given, or a fresh one announced on err
// as "note: seed S (pass --seed S to repeat this run)" unless quiet. Every command takes its
// default seed this way (docs/design.md §3, Seeds).
std::uint64_t seed_or_fresh(const std::optional<std::uint64_t>& given, std::ostream& err, bool quiet = false);

}  // namespace vbn::commands
