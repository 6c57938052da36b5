// The embedding API (include/vbn/vbn.hpp) over the runtime's services (runtime/services):
// this file only converts types, the public ones to the services' settings and their results
// back. The public names live in vbn::api; the runtime's types of the same names
// (vbn::Dataset, vbn::FitOptions, ...) are always written qualified here.
#define VBN_API_IMPLEMENTATION
#include "vbn/vbn.hpp"

#include "lang/describe.hpp"
#include "runtime/data/dataset.hpp"
#include "runtime/data/dataset_builder.hpp"
#include "runtime/data/model.hpp"
#include "runtime/error.hpp"
#include "runtime/report/output_csv.hpp"
#include "runtime/report/summary.hpp"
#include "runtime/sampling/methods.hpp"
#include "runtime/services/evidence.hpp"
#include "runtime/services/fit.hpp"
#include "runtime/services/predict.hpp"
#include "runtime/services/simulate.hpp"
#include "runtime/services/variational.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <utility>

namespace vbn::api {

struct Model::Impl {
    ir::Graph graph;
    std::string name;
    std::string warnings;
    std::vector<int> order;  // output_order(graph)
    std::vector<std::string> parameter_names, binary_columns, covariate_columns;
};

struct Dataset::Impl {
    std::shared_ptr<const Model::Impl> model;
    vbn::Dataset data;
    std::vector<std::string> notes;
};

namespace {

// The runtime throws vbn::Error; hosts catch its subclass for the kind.
[[noreturn]] void rethrow_typed(const Error& e) {
    switch (e.kind()) {
    case ErrorKind::usage: throw UsageError(e.what(), e.line(), e.column());
    case ErrorKind::model: throw ModelError(e.what(), e.line(), e.column());
    case ErrorKind::data: throw DataError(e.what(), e.line(), e.column());
    case ErrorKind::limit: throw LimitError(e.what());
    case ErrorKind::inference: throw InferenceError(e.what());
    case ErrorKind::io: throw IoError(e.what());
    case ErrorKind::cancelled: throw CancelledError(e.what());
    }
    throw;
}

template <class F>
auto typed_errors(F&& body) -> decltype(body()) {
    try {
        return body();
    } catch (const Error& e) {
        rethrow_typed(e);
    }
}

std::shared_ptr<const Model::Impl> make_model(ir::Graph graph, std::string name, std::string warnings) {
    auto m = std::make_shared<Model::Impl>();
    m->order = vbn::output_order(graph);
    for (int k : m->order) m->parameter_names.push_back(graph.theta_name(k));
    for (const auto& el : graph.elements) {
        if (!el.binary) m->covariate_columns.push_back(el.name);
        else if (!el.hidden) m->binary_columns.push_back(el.name);
    }
    m->graph = std::move(graph);
    m->name = std::move(name);
    m->warnings = std::move(warnings);
    return m;
}

vbn::VbOptions vb_options(const VariationalOptions& o) {
    vbn::VbOptions v;
    v.tolerance = o.tolerance;
    v.max_iterations = o.max_iterations;
    v.restarts = o.restarts;
    v.seed = o.seed;
    return v;
}

const Model::Impl& model_of(const Model& model, const Dataset& data) {
    if (data.impl().model.get() != &model.impl())
        throw UsageError(fmt::format("the dataset '{}' was built for another model than '{}'; build it with this model",
                                     data.name(), model.name()));
    return model.impl();
}

// θ (graph order) to the reported order.
void reorder(const std::vector<int>& order, const Eigen::VectorXd& theta, Eigen::VectorXd& out) {
    for (std::size_t j = 0; j < order.size(); ++j) out[static_cast<Eigen::Index>(j)] = theta[order[j]];
}

VariationalResult variational_result(const std::vector<int>& order, const vbn::VbResult& r) {
    const vbn::VbFit& q = r.best_fit();
    const auto n = static_cast<Eigen::Index>(order.size());
    VariationalResult out;
    out.mean.resize(n);
    reorder(order, q.mean, out.mean);
    out.covariance.resize(n, n);
    const Eigen::MatrixXd cov = q.dense_cov();
    for (Eigen::Index i = 0; i < n; ++i)
        for (Eigen::Index j = 0; j < n; ++j) out.covariance(i, j) = cov(order[static_cast<std::size_t>(i)], order[static_cast<std::size_t>(j)]);
    out.elbo = q.elbo;
    out.elbo_trace = q.elbo_trace;
    for (const auto& f : r.fits) out.restart_elbos.push_back(f.elbo);
    out.iterations = q.iterations;
    out.converged = q.converged;
    out.seconds = r.seconds;
    return out;
}

std::vector<Acceptance> acceptance(const std::vector<inference::KernelStats>& stats) {
    std::vector<Acceptance> out;
    for (const auto& s : stats) out.push_back({s.name, s.proposed, s.accepted});
    return out;
}

// A value as the CSV reader would see it written, so that in-memory data get the same
// validation and messages: NaN is a missing value, integers print without a point, other
// numbers in the shortest form that reads back to the same double.
std::string as_text(double v) {
    if (std::isnan(v)) return "NaN";
    return fmt::format("{}", v);
}

std::shared_ptr<const Dataset::Impl> build_columns(std::shared_ptr<const Model::Impl> model, const std::vector<std::string>& names,
                                                   long rows, const std::function<double(long, std::size_t)>& value,
                                                   std::string name) {
    auto d = std::make_shared<Dataset::Impl>();
    d->model = std::move(model);
    vbn::DatasetBuilder builder(d->model->graph, std::move(name));
    builder.keep_row_patterns();  // predict() reports by row
    std::vector<std::string_view> header(names.begin(), names.end());
    vbn::LoadNotes notes;
    builder.set_header(header, 0, &notes);
    std::vector<std::string> text(names.size());
    std::vector<std::string_view> fields(names.size());
    for (long r = 0; r < rows; ++r) {
        for (std::size_t c = 0; c < names.size(); ++c) {
            text[c] = as_text(value(r, c));
            fields[c] = text[c];
        }
        builder.add_text_row(fields, r + 1);
    }
    d->data = builder.finish();
    d->notes = std::move(notes.notices);
    return d;
}

}  // namespace

std::string version() { return VBN_VERSION; }

// Model

Model Model::from_string(std::string_view text, std::string name) {
    return typed_errors([&] {
        std::string warnings;
        ir::Graph graph = vbn::compile_model(std::string(text), name, &warnings);
        return Model(make_model(std::move(graph), std::move(name), std::move(warnings)));
    });
}

Model Model::from_file(const std::string& path) {
    return typed_errors([&] {
        std::string warnings;
        ir::Graph graph = vbn::load_model(path, &warnings);
        return Model(make_model(std::move(graph), path, std::move(warnings)));
    });
}

const std::string& Model::name() const { return impl_->name; }
const std::string& Model::warnings() const { return impl_->warnings; }
int Model::dimension() const { return impl_->graph.dim; }
const std::vector<std::string>& Model::parameter_names() const { return impl_->parameter_names; }
const std::vector<std::string>& Model::binary_columns() const { return impl_->binary_columns; }
const std::vector<std::string>& Model::covariate_columns() const { return impl_->covariate_columns; }
std::string Model::describe() const { return lang::describe(impl_->graph); }

// Dataset

Dataset Dataset::from_csv_file(const Model& model, const std::string& path) {
    return typed_errors([&] {
        auto d = std::make_shared<Dataset::Impl>();
        d->model = model.impl_;
        vbn::LoadNotes notes;
        d->data = vbn::load_csv(model.impl().graph, path, &notes, true);
        d->notes = std::move(notes.notices);
        return Dataset(std::move(d));
    });
}

Dataset Dataset::from_csv(const Model& model, std::istream& in, std::string name) {
    return typed_errors([&] {
        auto d = std::make_shared<Dataset::Impl>();
        d->model = model.impl_;
        vbn::LoadNotes notes;
        d->data = vbn::load_csv(model.impl().graph, in, name, &notes, true);
        d->notes = std::move(notes.notices);
        return Dataset(std::move(d));
    });
}

Dataset Dataset::from_matrix(const Model& model, const Eigen::MatrixXd& values, const std::vector<std::string>& columns,
                             std::string name) {
    if (static_cast<Eigen::Index>(columns.size()) != values.cols())
        throw UsageError(fmt::format("{}: {} column names for a matrix of {} columns", name, columns.size(), values.cols()));
    return typed_errors([&] {
        return Dataset(build_columns(
            model.impl_, columns, values.rows(), [&](long r, std::size_t c) { return values(r, static_cast<Eigen::Index>(c)); },
            std::move(name)));
    });
}

Dataset Dataset::from_columns(const Model& model, const std::vector<Column>& columns, std::string name) {
    std::vector<std::string> names;
    for (const auto& c : columns) {
        names.push_back(c.name);
        if (c.values.size() != columns.front().values.size())
            throw UsageError(fmt::format("{}: column '{}' has {} values but column '{}' has {}", name, c.name, c.values.size(),
                                         columns.front().name, columns.front().values.size()));
    }
    const long rows = columns.empty() ? 0 : static_cast<long>(columns.front().values.size());
    return typed_errors([&] {
        return Dataset(build_columns(
            model.impl_, names, rows, [&](long r, std::size_t c) { return columns[c].values[static_cast<std::size_t>(r)]; },
            std::move(name)));
    });
}

const std::string& Dataset::name() const { return impl_->data.name; }
long Dataset::rows() const { return impl_->data.rows; }
int Dataset::patterns() const { return impl_->data.patterns; }
const std::vector<std::string>& Dataset::notes() const { return impl_->notes; }

// Inference

VariationalResult variational(const Model& model, const Dataset& data, const VariationalOptions& options) {
    const Model::Impl& m = model_of(model, data);
    services::VariationalSettings settings;
    settings.vb = vb_options(options);
    settings.correct = false;
    return typed_errors([&] { return variational_result(m.order, services::variational(m.graph, data.impl().data, settings).result); });
}

namespace {

vbn::FitOptions fit_settings(const FitOptions& options) {
    vbn::FitOptions o;
    o.method = options.method;
    o.adapt_delta = options.adapt_delta;
    o.varblock_overrelax = options.overrelax;
    o.relabel = options.relabel;
    inference::copy_chain_settings(options, o);
    o.max_draws = options.max_draws;
    o.vb = vb_options(options.variational);
    o.log_lik = options.log_lik;
    return o;
}

// The host's hooks as the services' callbacks; messages are also kept in `out`.
services::Callbacks fit_callbacks(const Callbacks& callbacks, FitResult& out) {
    services::Callbacks cb;
    cb.log = [&callbacks, &out](services::LogLevel level, const std::string& message) {
        const LogLevel l = level == services::LogLevel::note ? LogLevel::note : LogLevel::warning;
        (l == LogLevel::note ? out.notes : out.warnings).push_back(message);
        if (callbacks.log) callbacks.log(l, message);
    };
    cb.interrupt = callbacks.cancel ? callbacks.cancel->flag() : nullptr;
    if (callbacks.progress) {
        cb.progress = [&callbacks](const inference::ChainProgress& p) {
            callbacks.progress(Progress{p.chain, p.iteration, p.iterations, p.warmup});
        };
        cb.progress_interval = callbacks.progress_interval;
    }
    if (callbacks.on_draw)
        cb.on_draw = [&callbacks](int chain, int draw, const Eigen::VectorXd& x, double lp, const inference::TransitionInfo&) {
            callbacks.on_draw(chain, draw, x, lp);
        };
    return cb;
}

// Each kept draw's transition as the CSV writer turns it into sampler columns
// (sampler_values), so that both report the same numbers.
SamplerStats sampler_stats(const inference::ChainResult& ch) {
    const auto n = static_cast<Eigen::Index>(ch.info.size());
    SamplerStats s{Eigen::VectorXd(n), Eigen::VectorXd(n), Eigen::VectorXi(n),
                   Eigen::VectorXi(n), Eigen::VectorXi(n), Eigen::VectorXd(n)};
    for (Eigen::Index k = 0; k < n; ++k) {
        const vbn::SamplerValues v = vbn::sampler_values(ch.lp[k], ch.info[static_cast<std::size_t>(k)]);
        s.accept_stat[k] = v.accept_stat;
        s.stepsize[k] = v.stepsize;
        s.treedepth[k] = v.treedepth;
        s.n_leapfrog[k] = v.n_leapfrog;
        s.divergent[k] = v.divergent ? 1 : 0;
        s.energy[k] = v.energy;
    }
    return s;
}

Chain chain_result(const vbn::FitResult& r, const inference::ChainResult& ch) {
    Chain c;
    c.chain = ch.chain;
    c.draws = services::output_draws(r, ch);
    c.log_density = ch.lp;
    c.sampler = sampler_stats(ch);
    c.acceptance = acceptance(ch.stats);
    for (const auto& info : ch.info) {
        c.divergent += info.divergent ? 1 : 0;
        c.regenerations += info.regenerated ? 1 : 0;
    }
    c.warmup_seconds = ch.warmup_seconds;
    c.sampling_seconds = ch.sampling_seconds;
    c.error = ch.error;
    return c;
}

void add_summary(const services::FitRun& run, const std::string& model, const services::Callbacks& cb, FitResult& out) {
    const vbn::FitSummary s = services::summarize(run, model, false, cb);
    // Everything after the chains: the "summary" phase, and "modes" where the jumps ran.
    for (const auto& [phase, seconds] : s.facts.phase_seconds)
        if (phase == "summary" || phase == "modes") out.summary_seconds += seconds;
    for (const auto& row : s.rows)
        out.summary.push_back({row.name, row.mean, row.sd, row.mcse_mean, row.q5, row.q50, row.q95, row.ess_bulk, row.ess_tail, row.rhat});
    out.acceptance = acceptance(s.facts.kernels);
    for (const auto& mm : s.facts.modes)
        out.modes.push_back({mm.flip, mm.mass, mm.mcse, mm.importance, mm.importance_mcse, mm.importance_khat});
    for (const auto& w : vbn::summary_warnings(s.rows, s.facts)) cb.warning(w);
    out.table = vbn::format_summary(s.rows, s.facts);
}

}  // namespace

FitResult fit(const Model& model, const Dataset& data, const FitOptions& options, const Callbacks& callbacks) {
    const Model::Impl& m = model_of(model, data);
    return typed_errors([&] {
        if (options.log_lik && !options.keep_draws)
            throw UsageError("FitOptions::log_lik needs keep_draws: the values are computed from the kept draws");
        FitResult out;
        const services::Callbacks cb = fit_callbacks(callbacks, out);
        const services::FitRun run = services::fit(m.graph, data.impl().data, fit_settings(options), cb);
        if (run.interrupted) throw CancelledError("the fit was cancelled");
        const vbn::FitResult& r = run.result;
        out.method = r.method;
        out.kernel = r.kernel;
        out.names = r.names;
        out.variational = variational_result(m.order, r.vb);
        out.warmup_seconds = r.warmup_seconds;
        out.sampling_seconds = r.sampling_seconds;
        out.target_seconds = r.target_seconds;
        out.proposal_seconds = r.proposal_seconds;
        out.relabel = run.relabel.rule;
        out.relabelled_draws = run.relabel.relabelled;
        for (const auto& ch : r.chains) out.chains.push_back(chain_result(r, ch));
        if (options.log_lik)
            for (Chain& c : out.chains)
                c.log_lik = services::pointwise_log_lik(m.graph, data.impl().data, c.draws, fit_settings(options).max_enumerated);
        if (options.keep_draws) add_summary(run, m.name, cb, out);
        return out;
    });
}

// Prediction and evidence

namespace {

PredictResult predict_graph_order(const Model::Impl& m, const Dataset& rows, const Eigen::MatrixXd& draws,
                                  const PredictOptions& options) {
    services::PredictSettings settings;
    settings.target = options.target;
    const services::PredictRun run = services::predict(m.graph, rows.impl().data, draws, settings);
    PredictResult out;
    out.draws = run.draws;
    for (const auto& p : run.predictions)
        out.predictions.push_back({p.row, m.graph.elements[static_cast<std::size_t>(p.element)].name, p.p, p.truth});
    const vbn::PredictionScores& sc = run.scores;
    if (sc.scored > 0) out.scores = PredictionScores{sc.scored, sc.accuracy, sc.log_loss, sc.brier};
    return out;
}

}  // namespace

PredictResult predict(const Model& model, const Dataset& rows, const Eigen::MatrixXd& draws, const PredictOptions& options) {
    const Model::Impl& m = model_of(model, rows);
    if (draws.cols() != m.graph.dim)
        throw UsageError(fmt::format("predict: the draws have {} columns, the model '{}' {} parameters", draws.cols(), m.name,
                                     m.graph.dim));
    // Reported order to the graph's.
    Eigen::MatrixXd theta(draws.rows(), draws.cols());
    for (std::size_t j = 0; j < m.order.size(); ++j) theta.col(m.order[j]) = draws.col(static_cast<Eigen::Index>(j));
    return typed_errors([&] { return predict_graph_order(m, rows, theta, options); });
}

PredictResult predict(const Model& model, const Dataset& rows, const VariationalResult& posterior, const PredictOptions& options) {
    const Model::Impl& m = model_of(model, rows);
    const auto d = static_cast<Eigen::Index>(m.graph.dim);
    if (posterior.mean.size() != d || posterior.covariance.rows() != d || posterior.covariance.cols() != d)
        throw UsageError(fmt::format("predict: the variational posterior has {} parameters, the model '{}' {}",
                                     posterior.mean.size(), m.name, d));
    if (options.vb_draws < 1) throw UsageError("predict: vb_draws must be at least 1");
    Eigen::VectorXd mean(d);
    Eigen::MatrixXd cov(d, d);
    for (Eigen::Index i = 0; i < d; ++i) {
        const auto gi = m.order[static_cast<std::size_t>(i)];
        mean[gi] = posterior.mean[i];
        for (Eigen::Index j = 0; j < d; ++j) cov(gi, m.order[static_cast<std::size_t>(j)]) = posterior.covariance(i, j);
    }
    return typed_errors([&] {
        return predict_graph_order(m, rows, vbn::gaussian_draws(mean, cov, options.vb_draws, options.seed), options);
    });
}

EvidenceResult evidence(const Model& model, const Dataset& data, const EvidenceOptions& options) {
    const Model::Impl& m = model_of(model, data);
    services::EvidenceSettings settings;
    settings.vb = vb_options(options.variational);
    settings.evidence.draws = options.draws;
    settings.evidence.seed = options.seed;
    return typed_errors([&] {
        const services::EvidenceRun run = services::evidence(m.graph, data.impl().data, settings);
        const vbn::Evidence& e = run.evidence;
        return EvidenceResult{e.log_evidence, e.se, e.pareto_k, run.elbo, e.draws, e.from_mode, e.tempered, e.runs_rhat};
    });
}

// Simulation

namespace {

// The CSV services::simulate writes (a header of names, then numbers only) as columns.
std::vector<Column> csv_columns(std::istream& in) {
    std::vector<Column> columns;
    std::string line, field;
    std::getline(in, line);
    std::istringstream header(line);
    while (std::getline(header, field, ',')) columns.push_back({field, {}});
    while (std::getline(in, line)) {
        std::istringstream row(line);
        for (auto& c : columns) {
            std::getline(row, field, ',');
            c.values.push_back(std::stod(field));
        }
    }
    return columns;
}

}  // namespace

SimulateResult simulate(const Model& model, const SimulateOptions& options) {
    const Model::Impl& m = model.impl();
    return typed_errors([&] {
        services::SimulateSettings s;
        s.rows = options.rows;
        s.seed = options.seed;
        s.include_hidden = options.include_hidden;
        if (!options.params_json.empty()) {
            try {
                s.params = nlohmann::json::parse(options.params_json);
            } catch (const nlohmann::json::parse_error& e) {
                throw UsageError(fmt::format("simulate: the parameters are not valid JSON: {}", e.what()));
            }
        }
        SimulateResult out;
        services::Callbacks cb;
        cb.log = [&out](services::LogLevel, const std::string& message) { out.notes.push_back(message); };
        std::stringstream csv;
        const Eigen::VectorXd theta = services::simulate(m.graph, s, csv, cb);
        out.parameters.resize(static_cast<Eigen::Index>(m.order.size()));
        reorder(m.order, theta, out.parameters);
        out.columns = csv_columns(csv);
        return out;
    });
}

// CmdStan CSV files

std::optional<std::string> DrawsFile::setting(const std::string& key) const {
    for (const auto& [k, v] : config)
        if (k == key) return v;
    return std::nullopt;
}

DrawsFile read_draws(const std::string& path) {
    return typed_errors([&] {
        vbn::StanCsv csv = vbn::read_stan_csv(path);
        return DrawsFile{std::move(csv.path),    std::move(csv.config),            std::move(csv.sampler_columns),
                         std::move(csv.sampler), std::move(csv.parameter_columns), std::move(csv.draws)};
    });
}

std::vector<MethodDescription> methods() {
    std::vector<MethodDescription> out;
    for (const auto& m : vbn::methods()) out.push_back({std::string(m.name), std::string(m.description)});
    return out;
}

}  // namespace vbn::api
