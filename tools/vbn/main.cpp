// vbn: the command-line interpreter (docs/design.md §3). Only argument parsing lives here: the
// options bind to the jobs' settings (runtime/services) and each subcommand is a function in
// tools/vbn/commands.hpp, one file each under tools/vbn/commands/.
#include "tools/vbn/commands.hpp"
#include "runtime/sampling/methods.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <iostream>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace {

// A seed is a whole number from 0 to 2^64 - 1: CLI11 would read "-1" into the unsigned seed
// as 2^64 - 1 without a word, so the text is checked first.
const CLI::Validator kSeed(
    [](std::string& text) -> std::string {
        const bool digits = !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
        if (digits && (text.size() < 20 || (text.size() == 20 && text <= "18446744073709551615"))) return {};
        return "a seed is a whole number from 0 to 18446744073709551615, not " + text;
    },
    "SEED");

// A count of starts: a whole number from 1 (0 is VbOptions's "automatic", the default when the
// option is absent, not a value to type).
const CLI::Validator kRestarts(
    [](std::string& text) -> std::string {
        const bool digits = !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
        if (digits && text.size() < 11 && std::stoll(text) >= 1 && std::stoll(text) <= 2147483647) return {};
        return "the number of starts is a whole number from 1 to 2147483647, not " + text;
    },
    "K");

// The default of every --restarts: VbOptions::restarts 0, resolved by restarts_for.
const std::string kAutoRestarts = fmt::format(" (default: {} on a model with hidden nodes, else 1)", vbn::hidden_node_restarts);

}  // namespace

int main(int argc, char** argv) {
    using namespace vbn::commands;
#if defined(__GLIBC__)
    // A run sets up with buffers as large as its data (patterns, families, their merged rows)
    // and frees many of them before sampling. glibc raises its mmap threshold to the size of
    // each mmapped block freed, so later buffers of up to 32 MB come from the heap, where
    // freed pages stay resident: a fixed threshold gives every buffer of 1 MB or more back
    // when it is freed (vbn fit at 2 x 10^5 rows x 10 covariates: 157 -> 83 MB while sampling).
    mallopt(M_MMAP_THRESHOLD, 1 << 20);
#endif
    CLI::App app{"vbn: Bayesian inference for logistic (sigmoid) belief networks"};
    app.require_subcommand(1);
    app.set_version_flag("--version", "vbn 0.1.0");

    CheckArgs check_args;
    auto* check_cmd = app.add_subcommand("check", "Parse and check a model (and data against it); print the graph");
    check_cmd->add_option("model", check_args.model, "Model file (.vbn)")->required();
    check_cmd->add_option("--data", check_args.data, "CSV file to check against the model");
    check_cmd->add_option("--dot", check_args.dot, "Write the network as Graphviz DOT to this file");

    SimulateArgs sim_args;
    auto* sim_cmd = app.add_subcommand("simulate", "Draw parameters (prior or given) and sample rows forward");
    sim_cmd->add_option("model", sim_args.model, "Model file (.vbn)")->required();
    sim_cmd->add_option("--rows", sim_args.rows, "Number of rows to sample")->required();
    sim_cmd->add_option("--seed", sim_args.seed, "Random seed (default: a fresh one, printed)")->check(kSeed);
    sim_cmd->add_option("--params", sim_args.params, R"(JSON file of parameter values, e.g. {"w": [2, -1]})");
    sim_cmd->add_flag("--include-hidden", sim_args.include_hidden, "Also write the hidden nodes' values");
    sim_cmd->add_option("--output", sim_args.output, "CSV file to write (default: standard output)");

    VbArgs vb_args;
    auto* vb_cmd = app.add_subcommand("vb", "Variational posterior (Jaakkola-Jordan bounds, closed-form EM)");
    vb_cmd->add_option("model", vb_args.model, "Model file (.vbn)")->required();
    vb_cmd->add_option("--data", vb_args.data, "CSV file of observations")->required();
    vb_cmd->add_option("--summary-json", vb_args.summary_json, "Write the summary as JSON to this file");
    vb_cmd->add_option("--restarts", vb_args.settings.vb.restarts, "Fits from different starting q(h); the best ELBO is used" + kAutoRestarts)
        ->check(kRestarts);
    vb_cmd->add_option("--tolerance", vb_args.settings.vb.tolerance, "Relative change of the ELBO at convergence")->capture_default_str();
    vb_cmd->add_option("--max-iterations", vb_args.settings.vb.max_iterations, "EM iteration cap")->capture_default_str();
    vb_cmd->add_option("--seed", vb_args.seed, "Seed for the restarts' starting points and the correction's draws (default: a fresh one, printed)")->check(kSeed);
    vb_cmd->add_option("--correction", vb_args.correction,
                       "auto: correct the VB fit by importance sampling of the exact posterior, or by tempering where the "
                       "importance weights' k-hat is above 0.7; importance or tempering: that one alone; none: raw VB fit")
        ->check(CLI::IsMember({"auto", "importance", "tempering", "none"}))
        ->capture_default_str();
    vb_cmd->add_option("--shards", vb_args.shards,
                       "Deal the data rows into K fixed shards, held by the MPI ranks under mpirun (by this process "
                       "alone without it): EM and the correction sum every shard's terms. The fit does not depend on the "
                       "number of ranks")
        ->check(CLI::Range(1, 1 << 20));
    vb_cmd->add_option("--correction-draws", vb_args.settings.correction.draws, "Importance draws of the correction per round, at most")
        ->check(CLI::Range(100L, 100000000L))
        ->capture_default_str();
    vb_cmd->add_option("--correction-ess", vb_args.settings.correction.ess,
                       "A round of the correction stops when its weights' ESS reaches this (0: always --correction-draws)")
        ->check(CLI::Range(0.0, 1e8))
        ->capture_default_str();

    FitArgs fit_args;
    auto* fit_cmd = app.add_subcommand("fit", "MCMC: variational fit, then chains of the chosen method");
    fit_cmd->add_option("model", fit_args.model, "Model file (.vbn)")->required();
    fit_cmd->add_option("--data", fit_args.data, "CSV file of observations")->required();
    fit_cmd->add_option("--method", fit_args.settings.method, vbn::method_list(" or "))->capture_default_str();
    fit_cmd->add_option("--chains", fit_args.settings.chains, "Number of chains")->capture_default_str();
    fit_cmd->add_option("--warmup", fit_args.settings.warmup, "Warmup iterations per chain")->capture_default_str();
    fit_cmd->add_option("--draws", fit_args.draws,
                        "Draws per chain after warmup (default: 1000, and more up to --max-draws while some R-hat is above "
                        "1.01 or some ESS below 100 per chain)");
    fit_cmd->add_option("--max-draws", fit_args.max_draws,
                        "Draws per chain the chains may run on to while some R-hat is above 1.01 or some ESS below 100 per "
                        "chain (default: 4000 without --draws; with --draws, exactly that many)");
    fit_cmd->add_option("--seed", fit_args.seed, "Random seed (default: a fresh one, printed)")->check(kSeed);
    fit_cmd->add_option("--restarts", fit_args.settings.vb.restarts,
                        "Variational fits from different starting q(h) before the chains; the best ELBO starts them" + kAutoRestarts)
        ->check(kRestarts);
    fit_cmd->add_option("--threads", fit_args.settings.threads, "Worker threads (results do not depend on it)")->capture_default_str();
    fit_cmd->add_option("--output", fit_args.output, "CmdStan CSV output, one file per chain: FILE.csv -> FILE_1.csv, ...");
    fit_cmd->add_flag("--log-lik", fit_args.settings.log_lik,
                      "Add each data row's log-likelihood at every draw to the --output files (log_lik.1 ... log_lik.N, "
                      "in row order), for vbn loo");
    fit_cmd->add_option("--summary-json", fit_args.summary_json, "Write the summary as JSON to this file");
    fit_cmd->add_flag("--quiet", fit_args.quiet, "No progress or notes on stderr");
    fit_cmd->add_option("--proposal", fit_args.settings.proposal,
                        "Independence kernels' proposal: laplace (exact posterior mode, checked) or vb (the variational fit)")
        ->check(CLI::IsMember({"laplace", "vb"}))
        ->capture_default_str();
    fit_cmd->add_option("--adapt-delta", fit_args.adapt_delta,
                        "NUTS's target acceptance, in (0, 1) (default: 0.65 for a log-concave posterior with more than 20 "
                        "parameters, else 0.8)");
    fit_cmd->add_option("--overrelax", fit_args.settings.varblock_overrelax,
                        "varblock: after warmup, whole blocks propose u* = A u + sqrt(1 - A^2) e about their t (A in "
                        "(-1, 1); negative: antithetic draws; 0: independence proposals) (default: -0.3)");
    fit_cmd->add_option("--relabel", fit_args.settings.relabel,
                        "On a model with equivalent labelings (vbn check lists them): pivot relabels every draw to the "
                        "labeling nearest a common pivot before the summary and the CSV files; none keeps the draws as drawn")
        ->check(CLI::IsMember({"pivot", "none"}))
        ->capture_default_str();
    fit_cmd->add_option("--plots", fit_args.plots, "Write trace, density, pair and rank plots (PNG, by gnuplot) to this directory");
    fit_cmd->add_option("--shards", fit_args.shards,
                        "Deal the data rows into K fixed shards, held by the MPI ranks under mpirun (by this process "
                        "alone without it); NUTS only (auto chooses it). The draws do not depend on the number of ranks")
        ->check(CLI::Range(1, 1 << 20));

    std::vector<std::string> summary_files;
    auto* summary_cmd = app.add_subcommand("summary", "Summary table from CmdStan CSV files (one per chain)");
    summary_cmd->add_option("files", summary_files, "CmdStan CSV files, e.g. fit_1.csv fit_2.csv")->required();

    std::vector<std::string> loo_files;
    auto* loo_cmd = app.add_subcommand("loo", "PSIS leave-one-out cross-validation from the log_lik columns of fit --log-lik");
    loo_cmd->add_option("files", loo_files, "One fit's CmdStan CSV files, e.g. fit_1.csv fit_2.csv")->required();

    PredictArgs predict_args;
    auto* predict_cmd = app.add_subcommand("predict", "Posterior predictive P(node = +1) of unobserved nodes in new rows");
    predict_cmd->add_option("model", predict_args.model, "Model file (.vbn)")->required();
    predict_cmd->add_option("--data", predict_args.data, "CSV file of rows to predict (missing values are predicted)")->required();
    predict_cmd->add_option("--draws", predict_args.draws, "Posterior draws: CmdStan CSV files, e.g. fit_1.csv fit_2.csv");
    predict_cmd->add_flag("--vb", predict_args.vb, "Use the variational posterior fitted to --train instead of draws");
    predict_cmd->add_option("--train", predict_args.train, "Training data for --vb");
    predict_cmd->add_option("--vb-draws", predict_args.settings.vb_draws, "Draws from the variational posterior with --vb")
        ->capture_default_str();
    predict_cmd->add_option("--restarts", predict_args.settings.restarts, "With --vb: variational fits from different starts, best ELBO used" + kAutoRestarts)
        ->check(kRestarts);
    predict_cmd->add_option("--seed", predict_args.seed, "Seed for the --vb draws and restarts (default: a fresh one, printed)")->check(kSeed);
    predict_cmd->add_option("--target", predict_args.target, "Predict only this node (its values, if given, are scored)");
    predict_cmd->add_option("--output", predict_args.output, "Write all predictions as CSV (row,node,p)");

    CompareArgs compare_args;
    auto* compare_cmd = app.add_subcommand("compare", "Log evidence of two or more models on the same data, ranked with Bayes factors");
    compare_cmd->add_option("models", compare_args.models, "Model files (.vbn), two or more")->required();
    compare_cmd->add_option("--data", compare_args.data, "CSV file of observations")->required();
    compare_cmd->add_option("--evidence-draws", compare_args.evidence_draws, "Importance draws per model")->capture_default_str();
    compare_cmd->add_option("--restarts", compare_args.restarts, "Variational fits per model from different starts" + kAutoRestarts)
        ->check(kRestarts);
    compare_cmd->add_option("--by", compare_args.by,
                            "Rank by the log evidence (variational fit and importance sampling) or by loo (fit --log-lik "
                            "at the defaults, then PSIS-LOO's elpd_loo)")
        ->check(CLI::IsMember({"evidence", "loo"}))
        ->capture_default_str();
    compare_cmd->add_option("--seed", compare_args.seed, "Seed for the importance draws and restarts (default: a fresh one, printed)")->check(kSeed);
    std::vector<std::string> plot_files;
    std::string plot_dir;
    auto* plot_cmd = app.add_subcommand("plot", "Trace, density, pair and rank plots (PNG, by gnuplot) from CmdStan CSV files");
    plot_cmd->add_option("files", plot_files, "CmdStan CSV files, e.g. fit_1.csv fit_2.csv")->required();
    plot_cmd->add_option("--output-dir", plot_dir, "Directory for the pictures, data files and gnuplot scripts")->required();

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        const int code = app.exit(e);
        return code == 0 ? 0 : 1;
    }

    if (*check_cmd) return check(check_args, std::cout, std::cerr);
    if (*sim_cmd) return simulate(sim_args, std::cout, std::cerr);
    if (*vb_cmd) return vb(vb_args, std::cout, std::cerr);
    if (*fit_cmd) return fit(fit_args, std::cout, std::cerr);
    if (*predict_cmd) return predict(predict_args, std::cout, std::cerr);
    if (*compare_cmd) return compare(compare_args, std::cout, std::cerr);
    if (*summary_cmd) return summary(summary_files, std::cout, std::cerr);
    if (*loo_cmd) return loo(loo_files, std::cout, std::cerr);
    if (*plot_cmd) return plot(plot_files, plot_dir, std::cout, std::cerr);
    return 1;
}
