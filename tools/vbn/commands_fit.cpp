// `vbn vb` and `vbn fit`: load, infer, report (docs/design.md §3–4).
#include "tools/vbn/commands.hpp"
#include "tools/vbn/command_guard.hpp"

#include "runtime/data/dataset.hpp"
#include "inference/clock.hpp"
#include "inference/nuts.hpp"
#include "runtime/error.hpp"
#include "runtime/variational/evidence.hpp"
#include "runtime/sampling/fit.hpp"
#include "runtime/report/fit_summary.hpp"
#include "runtime/data/model.hpp"
#include "runtime/report/output_csv.hpp"
#include "tools/vbn/plot.hpp"
#include "tools/vbn/progress.hpp"
#include "runtime/report/summary.hpp"
#include "runtime/target/target.hpp"
#include "runtime/variational/vb.hpp"
#include "runtime/variational/vb_refine.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <boost/math/distributions/normal.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <unistd.h>

namespace vbn::commands {

namespace {

struct Loaded {
    ir::Graph graph;
    Dataset data;
};

Loaded load(const std::string& model, const std::string& csv, std::ostream& err) {
    std::string warnings;
    Loaded l{load_model(model, &warnings), {}};
    err << warnings;
    LoadNotes notes;
    l.data = load_csv(l.graph, csv, &notes);
    for (const auto& n : notes.notices) err << "note: " << n << '\n';
    return l;
}

std::string stem(const std::string& path) { return std::filesystem::path(path).stem().string(); }

// SIGINT during `vbn fit`: the handler only sets a lock-free flag (async-signal-safe); the
// chains check it between iterations, finish the current one and stop. Installed only while
// the fit runs; the previous disposition is restored after, so a second Ctrl-C once
// sampling is over (or outside fit) behaves as usual.
std::atomic<bool> interrupt_flag{false};
static_assert(std::atomic<bool>::is_always_lock_free);
extern "C" void on_interrupt(int) { interrupt_flag.store(true, std::memory_order_relaxed); }

class InterruptScope {
public:
    InterruptScope() {
        interrupt_flag.store(false);
        struct sigaction sa {};
        sa.sa_handler = on_interrupt;
        sigemptyset(&sa.sa_mask);
        installed_ = sigaction(SIGINT, &sa, &previous_) == 0;
    }
    ~InterruptScope() {
        if (installed_) sigaction(SIGINT, &previous_, nullptr);
    }
    InterruptScope(const InterruptScope&) = delete;
    InterruptScope& operator=(const InterruptScope&) = delete;

private:
    struct sigaction previous_ {};
    bool installed_ = false;
};

// Bytes of memory available to this process: MemAvailable from /proc/meminfo, else the
// physical memory from sysconf; 0 when neither is known.
double available_memory() {
    std::ifstream in("/proc/meminfo");
    for (std::string key; in >> key;) {
        double kb = 0;
        in >> kb;
        if (key == "MemAvailable:") return kb * 1024.0;
        in.ignore(256, '\n');
    }
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    return pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) : 0.0;
}

// Without --output the summary needs every draw of every chain in memory: chains × draws ×
// (parameters + lp) doubles plus one transition record per draw, twice over while they are
// reordered for the summary. Refuse before any work when that exceeds what the machine has.
// (With --output the draws are streamed to the files, not kept, and read back afterwards.)
void check_draw_memory(const FitArgs& a, int dim) {
    const double per_draw = 8.0 * (2.0 * dim + 1) + static_cast<double>(sizeof(inference::TransitionInfo));
    const double need = static_cast<double>(a.chains) * static_cast<double>(a.draws) * per_draw;
    const double have = available_memory();
    if (have <= 0 || need <= have) return;
    const double fit_draws = std::floor(have / (static_cast<double>(a.chains) * per_draw));
    throw Error(ErrorKind::limit,
                fmt::format("keeping {} chains × {} draws of {} parameters needs about {:.1f} GB, more than the {:.1f} GB "
                            "of memory available; stream the draws to files with --output FILE.csv (they are then not "
                            "held while sampling), or ask for fewer draws (--draws {} would fit) or fewer chains",
                            a.chains, a.draws, dim, need / 1e9, have / 1e9, static_cast<long>(fit_draws)));
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
}  // namespace

// The importance correction of the VB fit, or nothing when the exact target cannot be built
// (a summed-out group too large to enumerate: the VB fit alone is then reported).
std::optional<RefinedPosterior> correct(const Loaded& l, const VbFit& q, const RefineOptions& ro, std::ostream& err) {
    if (l.graph.dim == 0) return std::nullopt;  // no parameters: nothing to correct
    if (l.graph.dim > max_dense_dim) {
        err << fmt::format("note: no importance correction: its Newton step needs a dense {0} x {0} Hessian, too large "
                           "for {0} parameters (at most {1}); the numbers below are the raw variational fit\n",
                           l.graph.dim, max_dense_dim);
        return std::nullopt;
    }
    std::optional<Target> target;
    try {
        target.emplace(l.graph, l.data);
    } catch (const Error& e) {
        if (e.kind() != ErrorKind::limit) throw;
        err << "note: no importance correction (it needs the exact posterior): " << e.what()
            << "\nnote: the numbers below are the raw variational fit\n";
        return std::nullopt;
    }
    return refine(*target, q, ro);
}

int vb(const VbArgs& args, std::ostream& out, std::ostream& err) {
    return guarded(err, [&] {
        const Loaded l = load(args.model, args.data, err);
        VbOptions o;
        o.restarts = args.restarts;
        o.tolerance = args.tolerance;
        o.max_iterations = args.max_iterations;
        o.seed = args.seed;
        const VbResult r = variational(l.graph, l.data, o);
        const VbFit& q = r.best_fit();
        RefineOptions ro;
        ro.draws = args.correction_draws;
        ro.seed = args.seed;
        const std::optional<RefinedPosterior> c =
            args.correction == "importance" ? correct(l, q, ro, err) : std::nullopt;

        std::vector<VbParameter> params;
        std::size_t width = 4;
        for (int k = 0; k < l.graph.dim; ++k) {
            VbParameter p;
            p.name = l.graph.theta_name(k);
            p.mean = q.mean[k];
            p.sd = std::sqrt(q.variance(k));
            if (c)
                p.corrected = CorrectedMarginal{c->mean[k], std::sqrt(c->cov(k, k)), c->mcse[k], c->q5[k], c->q50[k], c->q95[k]};
            params.push_back(std::move(p));
            width = std::max(width, params.back().name.size());
        }
        const double z95 = boost::math::quantile(boost::math::normal(), 0.95);
        if (c) {
            out << fmt::format("{:<{}} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}\n", "name", width, "mean", "sd",
                               "mcse", "5%", "50%", "95%", "vb_mean", "vb_sd");
            for (const auto& p : params)
                out << fmt::format("{:<{}} {:>10.4g} {:>10.4g} {:>10.2g} {:>10.4g} {:>10.4g} {:>10.4g} {:>10.4g} {:>10.4g}\n",
                                   p.name, width, p.corrected->mean, p.corrected->sd, p.corrected->mcse_mean, p.corrected->q5,
                                   p.corrected->q50, p.corrected->q95, p.mean, p.sd);
            out << '\n' << describe(*c, ro) << '\n';
            out << fmt::format("log p(data) ~ {:.4f} +- {:.4f} (importance sampling); {:.3f} s\n", c->log_evidence,
                               c->log_evidence_se, c->seconds);
        } else {
            out << fmt::format("{:<{}} {:>10} {:>10} {:>10} {:>10} {:>10}\n", "name", width, "mean", "sd", "5%", "50%", "95%");
            for (const auto& p : params)
                out << fmt::format("{:<{}} {:>10.4g} {:>10.4g} {:>10.4g} {:>10.4g} {:>10.4g}\n", p.name, width, p.mean, p.sd,
                                   p.mean - z95 * p.sd, p.mean, p.mean + z95 * p.sd);
            out << '\n';
        }
        out << fmt::format("variational EM (Jaakkola-Jordan bound, mean-field q over unobserved values){}\n",
                           c ? ": vb_mean, vb_sd" : "");
        out << fmt::format("ELBO {:.6f} (a lower bound on log p(data)); {} iterations, {}; {:.3f} s\n", q.elbo, q.iterations,
                           q.converged ? "converged" : "NOT converged (iteration cap reached)", r.seconds);
        if (r.fits.size() > 1) {
            out << "restarts (ELBO):";
            for (std::size_t i = 0; i < r.fits.size(); ++i)
                out << fmt::format(" {}{:.6f}", static_cast<int>(i) == r.best ? "*" : "", r.fits[i].elbo);
            out << "   (* used)\n";
        }
        if (c && !(c->pareto_k < 0.7))
            err << fmt::format("warning: importance-correction k-hat {:.2f} > 0.7: the corrected means and sds are not "
                               "reliable; compare with vb_mean and vb_sd or run vbn fit\n",
                               c->pareto_k);
        if (args.summary_json) {
            VbFacts f;
            f.elbo = q.elbo;
            f.iterations = q.iterations;
            f.converged = q.converged;
            f.seconds = r.seconds;
            if (c) {
                f.log_evidence = c->log_evidence;
                f.log_evidence_se = c->log_evidence_se;
                f.pareto_k = c->pareto_k;
                f.correction = "importance";
                f.correction_draws = c->draws;
                f.correction_ess = c->ess;
                f.seconds = r.seconds + c->seconds;
            }
            write_json_file(*args.summary_json, vb_summary_json(params, f));
        }
        return 0;
    });
}

int fit(const FitArgs& args, std::ostream& out, std::ostream& err) {
    return guarded(err, [&] {
        const auto started = std::chrono::steady_clock::now();
        const Loaded l = load(args.model, args.data, err);
        const double load_seconds = inference::seconds_since(started);
        if (args.plots && plot::find_gnuplot().empty())
            throw Error(ErrorKind::usage, "--plots needs gnuplot, which is not installed (not found on PATH); install it "
                                          "(Debian/Ubuntu: apt-get install gnuplot-nox) or leave out --plots");
        FitOptions o;
        o.method = args.method;
        o.proposal = args.proposal;
        if (args.adapt_delta) {
            // 0 means "automatic" to FitOptions; from the command line it is out of range.
            if (*args.adapt_delta == 0) throw Error(ErrorKind::usage, "--adapt-delta must lie strictly between 0 and 1, got 0");
            o.adapt_delta = *args.adapt_delta;
        }
        if (args.overrelax) o.varblock_overrelax = *args.overrelax;
        o.chains = args.chains;
        o.warmup = args.warmup;
        o.draws = args.draws;
        o.threads = args.threads;
        o.seed = args.seed ? *args.seed : fresh_seed();
        if (!args.seed && !args.quiet) err << fmt::format("note: seed {} (pass --seed {} to repeat this run)\n", o.seed, o.seed);

        std::unique_ptr<ProgressDisplay> progress;
        if (!args.quiet) {
            const bool terminal = &err == &std::cerr && ProgressDisplay::stderr_is_terminal();
            progress = std::make_unique<ProgressDisplay>(err, args.chains, terminal, 2.0, terminal ? ProgressDisplay::stderr_width() : 0);
            o.callbacks.progress = [&](const inference::ChainProgress& p) { progress->update(p); };
            o.callbacks.progress_interval = 0.5;
        }

        // CmdStan CSV, streamed: one writer per chain, each touched only by its chain's thread.
        std::vector<std::unique_ptr<CsvWriter>> writers;
        std::vector<Eigen::VectorXd> scratch;  // per chain: a draw in output order
        // With --output the draws go only to the files (memory does not grow with --draws);
        // what the summary needs besides them is counted here as they pass, per chain.
        std::vector<StreamedCounts> counts(static_cast<std::size_t>(args.chains));
        o.keep_draws = !args.output;
        const std::vector<int> order = output_order(l.graph);
        if (args.output) {
            std::vector<std::string> csv_names;
            for (int k : order) csv_names.push_back(l.graph.theta_name(k));
            scratch.assign(static_cast<std::size_t>(args.chains), Eigen::VectorXd(l.graph.dim));
            // The files are opened once the variational fit is known, so that their headers can
            // record it (vb_mean, vb_sd: the variational marginals, drawn by `vbn plot`).
            o.on_vb = [&, csv_names](const VbFit& q, const std::string& method) {
                std::string means, sds;
                for (int k : order) {
                    means += (means.empty() ? "" : ", ") + fmt::format("{}", q.mean[k]);
                    sds += (sds.empty() ? "" : ", ") + fmt::format("{}", std::sqrt(q.variance(k)));
                }
                for (int c = 0; c < args.chains; ++c) {
                    CsvConfig cfg;
                    cfg.model = stem(args.model);
                    cfg.algorithm = method == "nuts" ? "hmc" : method;
                    cfg.engine = method == "nuts" ? "nuts" : "";
                    cfg.num_samples = args.draws;
                    cfg.num_warmup = args.warmup;
                    cfg.metric = method != "nuts"                   ? MetricKind::unit_e
                                 : nuts_dense_metric(l.graph.dim) ? MetricKind::dense_e
                                                                  : MetricKind::diag_e;
                    cfg.seed = o.seed;
                    cfg.chain_id = c + 1;
                    cfg.data_file = args.data;
                    cfg.extra = {{"vb_elbo", fmt::format("{}", q.elbo)}, {"vb_mean", means}, {"vb_sd", sds}};
                    if (method == "nuts") cfg.extra.emplace_back("delta", fmt::format("{}", nuts_adapt_delta(l.graph, l.data, o.adapt_delta)));
                    if (method == "varblock") cfg.extra.emplace_back("overrelax", fmt::format("{}", o.varblock_overrelax));
                    writers.push_back(std::make_unique<CsvWriter>(chain_file_path(*args.output, c + 1), cfg, csv_names));
                }
            };
            o.callbacks.on_draw = [&](int chain, int draw, const inference::State& s, const inference::TransitionInfo& info) {
                CsvWriter& w = *writers[static_cast<std::size_t>(chain)];
                Eigen::VectorXd& x = scratch[static_cast<std::size_t>(chain)];
                for (std::size_t j = 0; j < order.size(); ++j) x[static_cast<Eigen::Index>(j)] = s.x[order[j]];
                if (draw == 0) {
                    if (info.metric == nullptr)
                        w.adaptation_terminated(info.stepsize);
                    else if (info.metric->kind() == inference::MetricKind::dense)
                        w.adaptation_terminated(info.stepsize, info.metric->inverse());
                    else
                        w.adaptation_terminated(info.stepsize, info.metric->inverse_diagonal());
                }
                w.write_draw(sampler_values(s.lp, info), x);
                StreamedCounts& n = counts[static_cast<std::size_t>(chain)];
                n.divergent += info.divergent ? 1 : 0;
                n.regenerated += info.regenerated ? 1 : 0;
            };
        }

        if (!args.output) check_draw_memory(args, l.graph.dim);
        o.callbacks.stop = &interrupt_flag;
        o.vb.cancel = &interrupt_flag;
        FitResult r = [&] {
            const InterruptScope scope;
            return vbn::fit(l.graph, l.data, o);
        }();
        const bool interrupted = interrupt_flag.load();
        if (progress) progress->finish();
        if (!args.quiet)
            for (const auto& n : r.notes) err << "note: " << n << '\n';

        for (std::size_t c = 0; c < writers.size() && c < r.chains.size(); ++c)
            writers[c]->finish(r.chains[c].warmup_seconds, r.chains[c].sampling_seconds);
        const bool any_draws = std::any_of(r.chains.begin(), r.chains.end(),
                                           [](const inference::ChainResult& ch) { return ch.ok() && ch.draws_done > 0; });
        if (interrupted && !any_draws) throw Error(ErrorKind::cancelled, "interrupted before any draw was made");
        // Streamed: the summary reads the draws back from the files, one chain at a time. The
        // plots need every draw at once; the summary alone reads them in groups of columns, at
        // most readback_budget bytes of draws at a time (one pass over the files per group).
        if (args.output && args.plots) check_readback_memory(r, l.graph.dim, *args.output);
        const auto read_back = [&](std::size_t c, Eigen::Index first, Eigen::Index count) {
            const ParameterRange range{static_cast<std::size_t>(first), static_cast<std::size_t>(count)};
            return read_stan_csv(chain_file_path(*args.output, static_cast<int>(c) + 1), range).draws;
        };
        constexpr double readback_budget = 64e6;
        FitSummary fs = !args.output ? summarize_fit(r, args.model, args.warmup, args.draws, args.plots.has_value())
                        : args.plots ? summarize_fit(r, args.model, args.warmup, args.draws, counts,
                                                     [&](std::size_t c) { return read_back(c, 0, static_cast<Eigen::Index>(r.order.size())); })
                                     : summarize_fit(r, args.model, args.warmup, args.draws, counts, read_back, readback_budget);
        fs.facts.phase_seconds.insert(fs.facts.phase_seconds.begin(), {"load", load_seconds});
        for (const auto& f : fs.failures) err << "warning: " << f << '\n';
        const auto& rows = fs.rows;
        const RunFacts& facts = fs.facts;
        if (interrupted)
            err << fmt::format("warning: interrupted; the summary holds only the {} draw{} per chain done before the "
                               "interrupt{}\n",
                               facts.draws, facts.draws == 1 ? "" : "s",
                               args.output ? " (the CSV files hold every draw made)" : "");
        out << format_summary(rows, facts);
        if (args.summary_json) write_json_file(*args.summary_json, summary_json(rows, facts));
        if (args.output && !args.quiet)
            err << fmt::format("wrote {} CmdStan CSV file{} {}\n", writers.size(), writers.size() == 1 ? "" : "s",
                               chain_file_path(*args.output, 1) + (writers.size() > 1 ? " …" : ""));
        if (args.plots) {
            plot::PlotInput pin;
            pin.title = stem(args.model);
            pin.names = r.names;
            pin.chains = fs.draws;
            for (int k : order) {
                pin.vb_mean.push_back(r.vb.best_fit().mean[k]);
                pin.vb_sd.push_back(std::sqrt(r.vb.best_fit().variance(k)));
            }
            const plot::PlotFiles made = plot::write_plots(pin, *args.plots);
            if (!args.quiet) err << fmt::format("wrote {} pictures to {}\n", made.images.size(), *args.plots);
        }
        bool failed = false;
        for (const auto& ch : r.chains) failed = failed || !ch.ok();
        if (interrupted) return exit_status(static_cast<int>(ErrorKind::cancelled));
        return failed ? 2 : 0;
    });
}

}  // namespace vbn::commands
