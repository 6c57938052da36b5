#include "runtime/services/fit.hpp"

#include "inference/clock.hpp"
#include "inference/nuts.hpp"
#include "runtime/error.hpp"
#include "runtime/services/extension.hpp"
#include "runtime/services/relabel.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <memory>
#include <numeric>
#include <utility>

namespace vbn::services {

namespace {

// The chain runner's callbacks from the job's: draws reach the caller in output order, and
// the divergences and regenerations a streamed run's summary needs are counted as they pass.
// With the extension enabled, each draw is also recorded for its check, and the chain runner
// asks it whether to run on.
inference::ChainCallbacks chain_callbacks(const ir::Graph& graph, const FitOptions& settings, const Callbacks& cb,
                                          const std::vector<int>& order, std::vector<Eigen::VectorXd>& scratch,
                                          std::vector<StreamedCounts>& counts, Extension& extension) {
    inference::ChainCallbacks c;
    c.progress = cb.progress;
    c.progress_interval = cb.progress_interval;
    c.stop = cb.interrupt;
    if (extension.enabled()) c.extend = [&extension](const std::vector<inference::ChainResult>& chains) { return extension.more(chains); };
    if (!cb.on_draw && settings.keep_draws && !extension.enabled()) return c;
    scratch.assign(static_cast<std::size_t>(settings.chains), Eigen::VectorXd(graph.dim));
    c.on_draw = [&graph, &cb, &order, &scratch, &counts, &extension](int chain, int draw, const inference::State& s,
                                                                     const inference::TransitionInfo& info) {
        Eigen::VectorXd& x = scratch[static_cast<std::size_t>(chain)];
        for (std::size_t j = 0; j < order.size(); ++j) x[static_cast<Eigen::Index>(j)] = graph.constrain(order[j], s.x[order[j]]);
        StreamedCounts& n = counts[static_cast<std::size_t>(chain)];
        n.divergent += info.divergent ? 1 : 0;
        n.regenerated += info.regenerated ? 1 : 0;
        extension.record(chain, draw, x, s.lp);
        if (cb.on_draw) cb.on_draw(chain, draw, x, s.lp, info);
    };
    return c;
}

// The minor modes' masses (runtime/report/mode_masses.hpp) where the symmetry jumps ran:
// `full(c)` gives chain c's draws (at least s.facts.draws) of every θ entry, in θ's order,
// for each chain the summary kept. The shares of the draws, then the importance estimates
// from the target the chains ran on.
void mode_masses_of(const FitRun& run, FitSummary& s, const std::function<Eigen::MatrixXd(std::size_t c)>& full) {
    const FlipCopies copies =
        flip_copies(run.result.approximate_flips, run.result.approximate_swaps, run.labelings ? &*run.labelings : nullptr,
                    run.result.exact_jump_moves, run.result.exact_jump_names);
    std::vector<Eigen::MatrixXd> draws, columns;
    for (std::size_t c = 0; c < run.result.chains.size(); ++c) {
        const auto& ch = run.result.chains[c];
        if (!ch.ok() || ch.draws_done <= 0) continue;
        draws.push_back(full(c).topRows(s.facts.draws));
        Eigen::MatrixXd& cols = columns.emplace_back(draws.back().rows(), static_cast<Eigen::Index>(copies.theta.size()));
        for (std::size_t j = 0; j < copies.theta.size(); ++j)
            cols.col(static_cast<Eigen::Index>(j)) = draws.back().col(copies.theta[j]);
    }
    if (columns.empty() || columns.front().rows() == 0) return;
    const CopyAssignment copy = assign_copies(columns, copies);
    s.facts.modes = mode_masses_from(copy, copies);
    if (!run.result.target) return;
    const Target& target = *run.result.target;
    add_importance_masses(
        s.facts.modes, copies, copy,
        [&](std::size_t c, Eigen::Index i) {
            Eigen::VectorXd theta = draws[c].row(i).transpose();
            for (int k = target.scale_offset(); k < target.dim(); ++k) theta[k] = std::log(theta[k]);  // draws hold τ
            return theta;
        },
        [&target]() -> LogDensity {
            auto ws = std::make_shared<Target::Workspace>(target.make_workspace());
            return [&target, ws](const Eigen::VectorXd& theta) { return target.log_density(theta, *ws); };
        },
        run.result.threads);
}

// mode_masses_of, where the jumps ran, timed as the summary's `modes` phase: its importance
// estimates evaluate the target 1 + K times per draw in the major copy (K flipped copies):
// 2.0-2.6 ms of a 14-18 ms run on examples/paper/multimodal on one thread, which no other
// phase counted.
void add_mode_masses(const FitRun& run, FitSummary& s, const std::function<Eigen::MatrixXd(std::size_t c)>& full) {
    if (!run.result.symmetry_jumps()) return;
    const auto started = std::chrono::steady_clock::now();
    mode_masses_of(run, s, full);
    s.facts.phase_seconds.emplace_back("modes", inference::seconds_since(started));
}

void log_failures(const FitSummary& s, const Callbacks& cb) {
    for (const auto& f : s.failures) cb.warning(f);
}

FitRun fit_run(const ir::Graph& graph, const Dataset& data, FitOptions settings, const Callbacks& callbacks,
               const std::function<void(const FitStart&)>& on_start, Dataset* handed) {
    check_relabel_rule(settings.relabel);
    FitRun run;
    run.warmup = settings.warmup;
    run.draws = settings.draws;
    run.counts.resize(static_cast<std::size_t>(std::max(settings.chains, 0)));
    const std::vector<int> order = output_order(graph);
    std::vector<Eigen::VectorXd> scratch;
    Extension extension(graph, settings, [&callbacks](const std::string& n) { callbacks.note(n); });
    settings.callbacks = chain_callbacks(graph, settings, callbacks, order, scratch, run.counts, extension);
    settings.vb.cancel = callbacks.interrupt;
    const int starts = restarts_for(graph, settings.vb.restarts);
    settings.on_vb = [&](const VbFit& q, const std::string& method) {
        // A fit handed in (FitOptions::variational) was warned about by whoever made it.
        if (const std::string w = settings.variational ? "" : idle_hidden_warning(graph, q, starts); !w.empty())
            callbacks.warning(w);
        if (!on_start) return;
        const bool hmc = !find_method(method).hmc_engine.empty();
        on_start(FitStart{q, method, hmc ? nuts_adapt_delta(graph, data, settings.adapt_delta) : 0.0});
    };
    std::size_t announced = 0;  // the notes said before the chains started
    settings.on_note = [&](const std::string& n) {
        callbacks.note(n);
        ++announced;
    };
    run.result = handed ? vbn::fit(graph, std::move(*handed), settings) : vbn::fit(graph, data, settings);
    run.interrupted = callbacks.interrupted();
    if (settings.keep_draws) run.relabel = relabel_kept(graph, settings.relabel, run.result);
    if (run.result.symmetry_jumps()) {
        std::vector<int> identity(static_cast<std::size_t>(graph.dim));
        std::iota(identity.begin(), identity.end(), 0);
        run.labelings = labeling_group(graph, run.result.symmetries, identity);
    }
    for (std::size_t i = announced; i < run.result.notes.size(); ++i) callbacks.note(run.result.notes[i]);
    // The extension's notes were said as it decided.
    run.result.notes.insert(run.result.notes.end(), extension.notes().begin(), extension.notes().end());
    run.draws = extension.draws();
    return run;
}

}  // namespace

FitRun fit(const ir::Graph& graph, const Dataset& data, FitOptions settings, const Callbacks& callbacks,
           const std::function<void(const FitStart&)>& on_start) {
    return fit_run(graph, data, std::move(settings), callbacks, on_start, nullptr);
}

FitRun fit(const ir::Graph& graph, Dataset&& data, FitOptions settings, const Callbacks& callbacks,
           const std::function<void(const FitStart&)>& on_start) {
    return fit_run(graph, data, std::move(settings), callbacks, on_start, &data);
}

bool has_draws(const FitRun& run) {
    const auto& chains = run.result.chains;
    return std::any_of(chains.begin(), chains.end(), [](const inference::ChainResult& ch) { return ch.ok() && ch.draws_done > 0; });
}

FitSummary summarize(const FitRun& run, const std::string& model, bool keep_copy, const Callbacks& callbacks) {
    FitSummary s = summarize_fit(run.result, model, run.warmup, run.draws, keep_copy);
    s.facts.relabel = run.relabel;
    add_mode_masses(run, s, [&](std::size_t c) { return run.result.chains[c].draws; });
    log_failures(s, callbacks);
    return s;
}

FitSummary summarize(const FitRun& run, const std::string& model, bool keep_copy, const Callbacks& callbacks,
                     const ReadBack& draws_of, double memory_budget) {
    const auto all = static_cast<Eigen::Index>(run.result.order.size());
    FitSummary s = keep_copy ? summarize_fit(run.result, model, run.warmup, run.draws, run.counts,
                                             [&](std::size_t c) { return draws_of(c, 0, all); })
                             : summarize_fit(run.result, model, run.warmup, run.draws, run.counts, draws_of, memory_budget);
    s.facts.relabel = run.relabel;
    // The files hold the draws in output order: each θ entry's column there, read one chain at a time.
    const std::vector<int>& order = run.result.order;
    add_mode_masses(run, s, [&](std::size_t c) {
        const Eigen::MatrixXd d = draws_of(c, 0, all);
        Eigen::MatrixXd out(d.rows(), d.cols());
        for (std::size_t j = 0; j < order.size(); ++j) out.col(order[j]) = d.col(static_cast<Eigen::Index>(j));
        return out;
    });
    log_failures(s, callbacks);
    return s;
}

Eigen::MatrixXd output_draws(const FitResult& result, const inference::ChainResult& chain) {
    Eigen::MatrixXd out(chain.draws.rows(), static_cast<Eigen::Index>(result.order.size()));
    for (std::size_t j = 0; j < result.order.size(); ++j) out.col(static_cast<Eigen::Index>(j)) = chain.draws.col(result.order[j]);
    return out;
}

// CmdStan CSV files

Eigen::MatrixXd pointwise_log_lik(const ir::Graph& graph, const Dataset& data, const Eigen::MatrixXd& output_draws,
                                  int max_enumerated) {
    const PointwiseLogLik pw(graph, data, max_enumerated);
    PointwiseLogLik::Workspace ws = pw.make_workspace();
    const std::vector<int> order = output_order(graph);
    Eigen::VectorXd theta(graph.dim), row(pw.rows());
    Eigen::MatrixXd out(output_draws.rows(), pw.rows());
    for (Eigen::Index d = 0; d < output_draws.rows(); ++d) {
        for (std::size_t j = 0; j < order.size(); ++j) theta[order[j]] = output_draws(d, static_cast<Eigen::Index>(j));
        pw.evaluate(theta, row, ws);
        out.row(d) = row.transpose();
    }
    return out;
}

CsvDrawFiles::CsvDrawFiles(std::string output, std::string model, std::string data_file, const ir::Graph& graph,
                           const FitOptions& settings, const Dataset* data)
    : output_(std::move(output)), model_(std::move(model)), data_file_(std::move(data_file)), graph_(graph),
      settings_(settings), order_(output_order(graph)) {
    if (!settings.log_lik) return;
    if (data == nullptr) throw Error(ErrorKind::usage, "the pointwise log-likelihood needs the data");
    log_lik_ = std::make_unique<PointwiseLogLik>(graph, *data, settings.max_enumerated);
    for (int c = 0; c < settings.chains; ++c) {
        log_lik_ws_.push_back(log_lik_->make_workspace());
        theta_.emplace_back(graph.dim);
        line_.emplace_back(static_cast<Eigen::Index>(order_.size()) + log_lik_->rows());
    }
}

CsvDrawFiles::~CsvDrawFiles() = default;

void CsvDrawFiles::start(const FitStart& start) {
    const std::vector<int> order = output_order(graph_);
    std::vector<std::string> csv_names;
    for (int k : order) csv_names.push_back(graph_.theta_name(k));
    if (log_lik_)
        for (long r = 1; r <= log_lik_->rows(); ++r) csv_names.push_back(fmt::format("log_lik[{}]", r));
    // The variational marginals go in the headers (vb_mean, vb_sd: drawn by `vbn plot`).
    std::string means, sds;
    for (int k : order) {
        means += (means.empty() ? "" : ", ") + fmt::format("{}", start.vb.mean[k]);
        sds += (sds.empty() ? "" : ", ") + fmt::format("{}", std::sqrt(start.vb.variance(k)));
    }
    const MethodInfo& method = find_method(start.method);
    const bool hmc = !method.hmc_engine.empty();
    const std::string unrelabelled = unrelabelled_header(graph_, settings_.relabel);
    for (int c = 0; c < settings_.chains; ++c) {
        CsvConfig cfg;
        cfg.model = model_;
        cfg.algorithm = hmc ? "hmc" : start.method;
        cfg.engine = method.hmc_engine;
        cfg.num_samples = settings_.draws;
        cfg.num_warmup = settings_.warmup;
        cfg.metric = !hmc ? MetricKind::unit_e : nuts_dense_metric(graph_.dim) ? MetricKind::dense_e : MetricKind::diag_e;
        cfg.seed = settings_.seed;
        cfg.chain_id = c + 1;
        cfg.data_file = data_file_;
        cfg.extra = {{"vb_elbo", fmt::format("{}", start.vb.elbo)}, {"vb_mean", means}, {"vb_sd", sds}};
        if (hmc) cfg.extra.emplace_back("delta", fmt::format("{}", start.adapt_delta));
        if (method.overrelaxes) cfg.extra.emplace_back("overrelax", fmt::format("{}", settings_.varblock_overrelax));
        if (!unrelabelled.empty()) cfg.extra.emplace_back("relabel", unrelabelled);
        writers_.push_back(std::make_unique<CsvWriter>(chain_file_path(output_, c + 1), cfg, csv_names));
    }
}

void CsvDrawFiles::draw(int chain, int draw, const Eigen::VectorXd& values, double lp, const inference::TransitionInfo& info) {
    CsvWriter& w = *writers_[static_cast<std::size_t>(chain)];
    if (draw == 0) {
        if (info.metric == nullptr)
            w.adaptation_terminated(info.stepsize);
        else if (info.metric->kind() == inference::MetricKind::dense)
            w.adaptation_terminated(info.stepsize, info.metric->inverse());
        else
            w.adaptation_terminated(info.stepsize, info.metric->inverse_diagonal());
    }
    if (!log_lik_) {
        w.write_draw(sampler_values(lp, info), values);
        return;
    }
    const auto c = static_cast<std::size_t>(chain);
    Eigen::VectorXd& theta = theta_[c];
    Eigen::VectorXd& line = line_[c];
    const auto dim = static_cast<Eigen::Index>(order_.size());
    for (Eigen::Index j = 0; j < dim; ++j) theta[order_[static_cast<std::size_t>(j)]] = values[j];
    line.head(dim) = values;
    log_lik_->evaluate(theta, line.tail(log_lik_->rows()), log_lik_ws_[c]);
    w.write_draw(sampler_values(lp, info), line);
}

void CsvDrawFiles::finish(const FitResult& result) {
    for (std::size_t c = 0; c < writers_.size() && c < result.chains.size(); ++c) {
        const inference::ChainResult& ch = result.chains[c];
        writers_[c]->finish(ch.warmup_seconds, ch.sampling_seconds);
        // Run on past --draws (FitOptions::max_draws): the header announced fewer.
        if (ch.iterations_done > settings_.draws) set_num_samples(chain_file_path(output_, static_cast<int>(c) + 1), ch.iterations_done);
    }
}

// Parsing a file costs more than relabelling or summarising its draws (on tests/corpus/housevotes,
// 4 × 1,000 draws of 33 weights, the pivot's three passes and the summary read each file four
// times); held once, the files are parsed once.
void CsvDrawFiles::relabel(FitRun& run, double hold_budget) {
    double bytes = 0;
    for (const auto& ch : run.result.chains)
        bytes += 8.0 * static_cast<double>(run.result.order.size() + 1) * static_cast<double>(std::max(ch.draws_done, ch.iterations_done));
    if (bytes <= hold_budget) parsed_ = parse_chain_files(output_, writers_.size(), run.result);
    run.relabel = relabel_csv_files(graph_, settings_.relabel, output_, writers_.size(), run.result, parsed_);
}

Eigen::MatrixXd CsvDrawFiles::read_back(std::size_t chain, Eigen::Index first, Eigen::Index count) const {
    // A failed chain's entry is empty: its file is read, as it was left.
    if (chain < parsed_.size() && parsed_[chain].draws.cols() > 0) {
        const Eigen::MatrixXd& d = parsed_[chain].draws;
        first = std::min(first, d.cols());
        return d.middleCols(first, std::min(count, d.cols() - first));
    }
    const ParameterRange range{static_cast<std::size_t>(first), static_cast<std::size_t>(count)};
    return read_stan_csv(chain_file_path(output_, static_cast<int>(chain) + 1), range).draws;
}

}  // namespace vbn::services
