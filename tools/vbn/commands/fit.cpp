// `vbn fit MODEL --data CSV`: the fit job (runtime/services/fit.hpp) with a progress display,
// CmdStan CSV files, the summary table, JSON and plots; Ctrl-C stops the chains and the
// summary holds what they drew.
#include "inference/clock.hpp"
#include "runtime/error.hpp"
#include "runtime/services/fit.hpp"
#include "runtime/services/sharded.hpp"
#include "tools/vbn/command_guard.hpp"
#include "tools/vbn/commands.hpp"
#include "tools/vbn/console.hpp"
#include "tools/vbn/plot.hpp"
#include "tools/vbn/progress.hpp"
#include "tools/vbn/sharded.hpp"
#include "tools/vbn/system.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <utility>

namespace vbn::commands {

namespace {

std::string stem(const std::string& path) { return std::filesystem::path(path).stem().string(); }

// Without --output the summary needs every draw of every chain in memory: chains × draws ×
// (parameters + lp) doubles plus one transition record per draw, twice over while they are
// reordered for the summary. Refuse before any work when that exceeds what the machine has.
// (With --output the draws are streamed to the files, not kept, and read back afterwards.)
// Chains that may run on (FitOptions::max_draws) run on only as far as memory allows.
void check_draw_memory(FitOptions& s, int dim, const services::Callbacks& cb) {
    const double per_draw = 8.0 * (2.0 * dim + 1) + static_cast<double>(sizeof(inference::TransitionInfo));
    const double need = static_cast<double>(s.chains) * static_cast<double>(s.draws) * per_draw;
    const double have = available_memory();
    const double fit_draws = std::floor(have / (static_cast<double>(s.chains) * per_draw));
    if (have > 0 && s.max_draws > fit_draws) {
        const int lowered = std::max(s.draws, static_cast<int>(std::min(fit_draws, 1e9)));
        cb.note(fmt::format("--max-draws lowered from {} to {}: the kept draws of {} chains must fit in the {:.1f} GB of "
                            "memory available (with --output they are streamed to files instead)",
                            s.max_draws, lowered, s.chains, have / 1e9));
        s.max_draws = lowered;
    }
    if (have <= 0 || need <= have) return;
    throw Error(ErrorKind::limit,
                fmt::format("keeping {} chains × {} draws of {} parameters needs about {:.1f} GB, more than the {:.1f} GB "
                            "of memory available; stream the draws to files with --output FILE.csv (they are then not "
                            "held while sampling), or ask for fewer draws (--draws {} would fit) or fewer chains",
                            s.chains, s.draws, dim, need / 1e9, have / 1e9, static_cast<long>(fit_draws)));
}

// With --output the summary reads the files back after sampling and then holds every chain's
// draws (chains × draws × parameters doubles) plus the parsed text of one file (all its
// columns). Refuse with a clear message, rather than be killed for want of memory, when that
// exceeds what the machine has; the files are complete and can be read in parts.
void check_readback_memory(const FitResult& r, int dim, const std::string& output) {
    double need = 0, largest = 0;
    for (const auto& ch : r.chains) {
        if (!ch.ok()) continue;
        need += 8.0 * dim * ch.draws_done;
        largest = std::max(largest, 8.0 * (dim + static_cast<double>(sampler_column_names().size())) * ch.draws_done);
    }
    need += 2.0 * largest;
    const double have = available_memory();
    if (have <= 0 || need <= have) return;
    throw Error(ErrorKind::limit,
                fmt::format("the draws are in {} …, but summarising them needs about {:.1f} GB, more than the {:.1f} GB of "
                            "memory available; read fewer of them (e.g. vbn summary on some of the files)",
                            chain_file_path(output, 1), need / 1e9, have / 1e9));
}

// The settings as given, checked where only the command line can be wrong, with the seed.
FitOptions settings_of(const FitArgs& args, std::ostream& err) {
    FitOptions o = args.settings;
    if (o.log_lik && !args.output)
        throw Error(ErrorKind::usage, "--log-lik writes its columns to the CSV files: give --output FILE.csv as well");
    if (args.adapt_delta) {
        // 0 means "automatic" to FitOptions; from the command line it is out of range.
        if (*args.adapt_delta == 0) throw Error(ErrorKind::usage, "--adapt-delta must lie strictly between 0 and 1, got 0");
        o.adapt_delta = *args.adapt_delta;
    }
    if (args.draws) o.draws = *args.draws;
    o.max_draws = args.max_draws.value_or(args.draws ? 0 : default_max_draws);
    if (args.max_draws && *args.max_draws < o.draws)
        throw Error(ErrorKind::usage, fmt::format("--max-draws {} is below --draws {}: give at least as many", *args.max_draws, o.draws));
    o.seed = seed_or_fresh(args.seed, err, args.quiet);
    o.vb.seed = o.seed;  // the restarts' starting points (the first start does not use it)
    o.keep_draws = !args.output;
    return o;
}

void write_plots(const FitArgs& args, const services::FitRun& run, const FitSummary& fs, std::ostream& err) {
    plot::PlotInput pin;
    pin.title = stem(args.model);
    pin.names = run.result.names;
    pin.chains = fs.draws;
    const VbFit& q = run.result.vb.best_fit();
    for (int k : run.result.order) {
        pin.vb_mean.push_back(q.mean[k]);
        pin.vb_sd.push_back(std::sqrt(q.variance(k)));
    }
    const plot::PlotFiles made = plot::write_plots(pin, *args.plots);
    if (!args.quiet) err << fmt::format("wrote {} pictures to {}\n", made.images.size(), *args.plots);
}

// Draws read back from the CSV files: held whole after relabelling where they fit in this many
// bytes, and summarised in groups of columns of at most this many.
constexpr double readback_budget = 64e6;

// The phases the command line runs around the fit: loading, and (with --output) finishing the
// files and relabelling their draws.
struct OwnPhases {
    double load_seconds = 0, files_seconds = 0;
};

// The summary of what ran, the table, the JSON and the plots; the exit status.
int report(const FitArgs& args, const services::FitRun& run, const services::CsvDrawFiles* files, const OwnPhases& own,
           const services::Callbacks& cb, std::ostream& out, std::ostream& err) {
    const FitResult& r = run.result;
    const int dim = static_cast<int>(r.order.size());
    // Streamed: the summary reads the draws back (held since relabelling, or from the files),
    // one chain at a time. The plots need every draw at once; the summary alone reads them in
    // groups of columns, at most readback_budget bytes of draws at a time (one pass over the
    // files per group).
    if (files && args.plots) check_readback_memory(r, dim, files->output());
    FitSummary fs = !files ? services::summarize(run, args.model, args.plots.has_value(), cb)
                           : services::summarize(run, args.model, args.plots.has_value(), cb,
                                                 [files](std::size_t c, Eigen::Index first, Eigen::Index count) {
                                                     return files->read_back(c, first, count);
                                                 },
                                                 readback_budget);
    auto& phases = fs.facts.phase_seconds;
    phases.insert(phases.begin(), {"load", own.load_seconds});
    if (files) {
        const auto summary = std::find_if(phases.begin(), phases.end(), [](const auto& p) { return p.first == "summary"; });
        phases.insert(summary, {"files", own.files_seconds});
    }
    // One line on what the summary holds when it is not every draw asked for.
    const std::string kept = files ? " (the CSV files hold every draw made)" : "";
    if (run.interrupted && fs.truncation.empty())
        err << fmt::format("warning: interrupted; the summary holds only the {} draw{} per chain done before the "
                           "interrupt{}\n",
                           fs.facts.draws, fs.facts.draws == 1 ? "" : "s", kept);
    else if (run.interrupted)
        err << fmt::format("warning: interrupted; {}{}\n", fs.truncation, kept);
    else if (!fs.truncation.empty())
        err << fmt::format("warning: {}\n", fs.truncation);
    out << format_summary(fs.rows, fs.facts);
    if (args.summary_json) write_json_file(*args.summary_json, summary_json(fs.rows, fs.facts));
    if (files && !args.quiet)
        err << fmt::format("wrote {} CmdStan CSV file{} {}\n", files->files(), files->files() == 1 ? "" : "s",
                           chain_file_path(files->output(), 1) + (files->files() > 1 ? " …" : ""));
    if (args.plots) write_plots(args, run, fs, err);
    if (run.interrupted) return exit_status(static_cast<int>(ErrorKind::cancelled));
    const bool failed = std::any_of(r.chains.begin(), r.chains.end(), [](const auto& ch) { return !ch.ok(); });
    return failed ? 2 : 0;
}

// The run once the data are loaded: progress, output files, the fit, the summary.
int run_fit(const FitArgs& args, Loaded& l, double load_seconds, std::ostream& out, std::ostream& err) {
    if (args.plots && plot::find_gnuplot().empty())
        throw Error(ErrorKind::usage, "--plots needs gnuplot, which is not installed (not found on PATH); install it "
                                      "(Debian/Ubuntu: apt-get install gnuplot-nox) or leave out --plots");
    FitOptions o = settings_of(args, err);

    // The progress display owns the terminal while chains run: the first message after
    // them ends its line.
    std::unique_ptr<ProgressDisplay> progress;
    const services::Callbacks printed = console_callbacks(err, args.quiet);
    services::Callbacks cb = printed;
    cb.log = [&](services::LogLevel level, const std::string& message) {
        if (progress) progress->finish();
        printed.log(level, message);
    };
    if (!args.quiet) {
        const bool terminal = &err == &std::cerr && ProgressDisplay::stderr_is_terminal();
        ProgressSettings ps;
        ps.chains = o.chains;
        ps.warmup = o.warmup;
        ps.draws = o.draws;
        ps.terminal = terminal;
        ps.width = terminal ? ProgressDisplay::stderr_width() : 0;
        progress = std::make_unique<ProgressDisplay>(err, ps);
        cb.progress = [&](const inference::ChainProgress& p) { progress->update(p); };
    }
    // With --output the draws go only to the files, streamed (memory does not grow with
    // --draws), and the summary reads them back.
    std::optional<services::CsvDrawFiles> files;
    std::function<void(const services::FitStart&)> on_start;
    if (args.output) {
        files.emplace(*args.output, stem(args.model), args.data, l.graph, o, &l.data);
        cb.on_draw = [&](int c, int d, const Eigen::VectorXd& x, double lp, const inference::TransitionInfo& info) {
            files->draw(c, d, x, lp, info);
        };
        on_start = [&](const services::FitStart& s) { files->start(s); };
    } else {
        check_draw_memory(o, l.graph.dim, cb);
    }
    cb.interrupt = InterruptScope::flag();
    services::FitRun run = [&] {
        const InterruptScope scope;
        // Handed over: the rows are then held once, by the target (the log_lik files, made
        // above, hold their own).
        return services::fit(l.graph, std::move(l.data), o, cb, on_start);
    }();
    if (progress) progress->finish();
    const auto files_started = std::chrono::steady_clock::now();
    if (files) files->finish(run.result);
    if (files && services::has_draws(run)) files->relabel(run, readback_budget);
    const double files_seconds = inference::seconds_since(files_started);
    if (run.interrupted && !services::has_draws(run)) {
        if (files && !args.quiet)
            err << fmt::format("wrote {} CmdStan CSV file{} {}, with no draws\n", files->files(), files->files() == 1 ? "" : "s",
                               chain_file_path(files->output(), 1) + (files->files() > 1 ? " …" : ""));
        throw Error(ErrorKind::cancelled, "interrupted before any chain kept a draw (in warmup or before starting): "
                                          "nothing to summarise");
    }
    return report(args, run, files ? &*files : nullptr, {load_seconds, files_seconds}, printed, out, err);
}

// --shards: every rank loads its shards; rank 0 runs the fit over all of them and alone
// writes anything; the other ranks serve its evaluations, then end.
int fit_sharded(const FitArgs& args, std::ostream& out, std::ostream& err) {
    const FitOptions& f = args.settings;
    // Rank 0's chains run min(threads, chains) at a time, each evaluating on a channel of its own.
    const services::ShardSettings ss{*args.shards, f.max_enumerated, f.threads, std::min(f.threads, f.chains)};
    const auto check = [&] {
        // Refused by fit() too, but only after every rank has read its rows; the --output
        // files would ask for the rows' patterns first.
        if (args.settings.log_lik)
            throw Error(ErrorKind::usage, "--log-lik needs every row's log-likelihood on one process; leave out --shards");
    };
    return run_sharded(args.model, args.data, ss, out, err, check,
                       [&](Loaded& l, services::ShardedData& s, std::ostream& o, std::ostream& e, double load_seconds) {
                           FitArgs sharded = args;
                           sharded.settings.sharded = s.remote;
                           sharded.settings.sharded_variational = services::variational_over(s, l.graph);
                           sharded.settings.shards = *args.shards;
                           return run_fit(sharded, l, load_seconds, o, e);
                       });
}

}  // namespace

int fit(const FitArgs& args, std::ostream& out, std::ostream& err) {
    if (args.shards) return fit_sharded(args, out, err);
    return guarded(err, [&] {
        const auto started = std::chrono::steady_clock::now();
        Loaded l = load_printing(args.model, args.data, err, args.settings.log_lik);
        return run_fit(args, l, inference::seconds_since(started), out, err);
    });
}

}  // namespace vbn::commands
