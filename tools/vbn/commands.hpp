// The commands of the `vbn` binary (docs/design.md §3), callable from tests and other programs.
// Each returns the process exit status: 0 success, 1 model/data/usage error, 2 inference
// failure. Results go to `out`, messages to `err`.
#pragma once

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
    int restarts = 1;
    double tolerance = 1e-9;
    int max_iterations = 2000;
    std::uint64_t seed = 1;
    std::string correction = "importance";  // or "none": the raw VB fit (runtime/variational/vb_refine.hpp)
    long correction_draws = 4000;
};
int vb(const VbArgs& args, std::ostream& out, std::ostream& err);

struct FitArgs {
    std::string model;
    std::string data;
    std::string method = "auto";
    int chains = 4;
    int warmup = 1000;
    int draws = 1000;
    std::optional<std::uint64_t> seed;
    int threads = 2;
    std::optional<std::string> output;        // CmdStan CSV, one file per chain
    std::optional<std::string> summary_json;
    bool quiet = false;
    std::optional<std::string> plots;  // directory for trace, density, pair and rank plots
    std::string proposal = "laplace";  // independence kernels' proposal: laplace or vb (FitOptions::proposal)
    std::optional<double> adapt_delta;  // NUTS's target acceptance (FitOptions::adapt_delta); unset: automatic
    std::optional<double> overrelax;    // varblock's overrelaxation (FitOptions::varblock_overrelax); unset: its default
};
int fit(const FitArgs& args, std::ostream& out, std::ostream& err);

// `vbn predict` (tools/vbn/commands_predict.cpp): posterior predictive probabilities.
struct PredictArgs {
    std::string model;
    std::string data;                       // rows to predict
    std::vector<std::string> draws;         // CmdStan CSV files, or
    bool vb = false;                        // the variational posterior fitted to `train`
    std::optional<std::string> train;
    int vb_draws = 4000;                    // draws from q(θ) with --vb
    int restarts = 1;                       // VB restarts with --vb (the best ELBO is used)
    std::uint64_t seed = 1;
    std::optional<std::string> target;      // a node name, e.g. y or v[3]
    std::optional<std::string> output;      // CSV file: row,node,p
};
int predict(const PredictArgs& args, std::ostream& out, std::ostream& err);

// `vbn compare`: both models' ELBO and log evidence, and the log Bayes factor.
struct CompareArgs {
    std::string model_a, model_b;
    std::string data;
    int evidence_draws = 4000;
    int restarts = 1;  // VB restarts per model (the best ELBO is used)
    std::uint64_t seed = 1;
};
int compare(const CompareArgs& args, std::ostream& out, std::ostream& err);

// Exit status for an error kind (docs/design.md §3).
int exit_status(int error_kind);

// A seed for runs where the user gave none (printed so the run can be repeated).
std::uint64_t fresh_seed();

}  // namespace vbn::commands
