// vbn._vbn: the embedding API (<vbn/vbn.hpp>) as a Python module. Only types are converted
// here; the Python layer (python/vbn/) turns the results into numpy arrays and DataFrames.
// The GIL is released while the library runs; callbacks re-acquire it.
#include "vbn/vbn.hpp"

#include <pybind11/eigen.h>
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <mutex>
#include <optional>

namespace py = pybind11;

namespace {

// vbn::Error as the exception class of the same kind in vbn.errors (defined in Python, so
// that it carries the message's parts as attributes). Translators run with the GIL held.
void translate(const vbn::Error& e) {
    static const char* const names[] = {"UsageError", "ModelError", "DataError", "LimitError",
                                        "InferenceError", "IoError", "CancelledError"};
    const py::object cls = py::module_::import("vbn.errors").attr(names[static_cast<int>(e.kind())]);
    const py::object exc = cls(e.what(), e.line(), e.column());
    PyErr_SetObject(cls.ptr(), exc.ptr());
}

// What a Python callback raised (KeyboardInterrupt from the signal check among it), kept
// until the library has stopped and the GIL is back with the thread that called it.
class PendingError {
public:
    // Called with the GIL held, a Python error set.
    void keep(const vbn::CancellationToken& token) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!error_) error_ = std::make_unique<py::error_already_set>();
        else PyErr_Clear();
        token.cancel();
    }
    void keep(py::error_already_set& e, const vbn::CancellationToken& token) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!error_) error_ = std::make_unique<py::error_already_set>(std::move(e));
        token.cancel();
    }
    // With the GIL held: raises the kept error, if any.
    void raise() {
        if (error_) throw py::error_already_set(std::move(*error_));
    }

private:
    std::mutex mutex_;
    std::unique_ptr<py::error_already_set> error_;
};

// Runs `body` without the GIL and with Ctrl-C watched: the progress hook (which chains call
// at least every `interval` seconds) re-acquires the GIL, calls `progress` if given and
// checks for signals; a raised exception cancels the run, which then stops cleanly, and is
// raised here instead of CancelledError.
template <class F>
auto watched(vbn::Callbacks& callbacks, const std::optional<py::function>& progress, double interval, F&& body) {
    auto pending = std::make_shared<PendingError>();
    const vbn::CancellationToken token;
    callbacks.cancel = token;
    callbacks.progress_interval = interval;
    callbacks.progress = [pending, token, progress](const vbn::Progress& p) {
        py::gil_scoped_acquire gil;
        if (token.cancelled()) return;
        if (progress) {
            try {
                (*progress)(p.chain, p.iteration, p.iterations, p.warmup);
            } catch (py::error_already_set& e) {
                pending->keep(e, token);
                return;
            }
        }
        if (PyErr_CheckSignals() != 0) pending->keep(token);
    };
    std::optional<decltype(body())> result;
    try {
        py::gil_scoped_release release;
        result.emplace(body());
    } catch (const vbn::CancelledError&) {
        pending->raise();
        throw;
    }
    pending->raise();  // an interrupt that came as the run ended
    return std::move(*result);
}

vbn::FitResult fit(const vbn::Model& model, const vbn::Dataset& data, const vbn::FitOptions& options,
                   const std::optional<py::function>& progress, double interval, const std::optional<py::function>& log) {
    vbn::Callbacks callbacks;
    if (log)
        callbacks.log = [log](vbn::LogLevel level, const std::string& message) {
            py::gil_scoped_acquire gil;
            (*log)(level == vbn::LogLevel::warning ? "warning" : "note", message);
        };
    return watched(callbacks, progress, interval, [&] { return vbn::fit(model, data, options, callbacks); });
}

vbn::Dataset from_columns(const vbn::Model& model, const std::vector<std::pair<std::string, Eigen::VectorXd>>& columns,
                          const std::string& name) {
    std::vector<vbn::Column> cols;
    for (const auto& [n, v] : columns) cols.push_back({n, std::vector<double>(v.data(), v.data() + v.size())});
    py::gil_scoped_release release;
    return vbn::Dataset::from_columns(model, cols, name);
}

template <class F>
auto without_gil(F&& body) {
    py::gil_scoped_release release;
    return body();
}

void bind_model(py::module_& m) {
    py::class_<vbn::Model>(m, "Model")
        .def_static("from_string", &vbn::Model::from_string, py::arg("text"), py::arg("name") = "model")
        .def_static("from_file", &vbn::Model::from_file, py::arg("path"))
        .def_property_readonly("name", &vbn::Model::name)
        .def_property_readonly("warnings", &vbn::Model::warnings)
        .def_property_readonly("dimension", &vbn::Model::dimension)
        .def_property_readonly("parameter_names", &vbn::Model::parameter_names)
        .def_property_readonly("binary_columns", &vbn::Model::binary_columns)
        .def_property_readonly("covariate_columns", &vbn::Model::covariate_columns)
        .def("describe", &vbn::Model::describe);
    py::class_<vbn::Dataset>(m, "Dataset")
        .def_static("from_csv_file", &vbn::Dataset::from_csv_file, py::arg("model"), py::arg("path"))
        .def_static("from_columns", &from_columns, py::arg("model"), py::arg("columns"), py::arg("name") = "data")
        .def_property_readonly("name", &vbn::Dataset::name)
        .def_property_readonly("rows", &vbn::Dataset::rows)
        .def_property_readonly("patterns", &vbn::Dataset::patterns)
        .def_property_readonly("notes", &vbn::Dataset::notes);
}

void bind_options(py::module_& m) {
    py::class_<vbn::VariationalOptions>(m, "VariationalOptions")
        .def(py::init<>())
        .def_readwrite("tolerance", &vbn::VariationalOptions::tolerance)
        .def_readwrite("max_iterations", &vbn::VariationalOptions::max_iterations)
        .def_readwrite("restarts", &vbn::VariationalOptions::restarts)
        .def_readwrite("seed", &vbn::VariationalOptions::seed);
    py::class_<vbn::FitOptions>(m, "FitOptions")
        .def(py::init<>())
        .def_readwrite("method", &vbn::FitOptions::method)
        .def_readwrite("chains", &vbn::FitOptions::chains)
        .def_readwrite("warmup", &vbn::FitOptions::warmup)
        .def_readwrite("draws", &vbn::FitOptions::draws)
        .def_readwrite("max_draws", &vbn::FitOptions::max_draws)
        .def_readwrite("threads", &vbn::FitOptions::threads)
        .def_readwrite("seed", &vbn::FitOptions::seed)
        .def_readwrite("adapt_delta", &vbn::FitOptions::adapt_delta)
        .def_readwrite("overrelax", &vbn::FitOptions::overrelax)
        .def_readwrite("relabel", &vbn::FitOptions::relabel)
        .def_readwrite("variational", &vbn::FitOptions::variational)
        .def_readwrite("log_lik", &vbn::FitOptions::log_lik);
    py::class_<vbn::PredictOptions>(m, "PredictOptions")
        .def(py::init<>())
        .def_readwrite("target", &vbn::PredictOptions::target)
        .def_readwrite("vb_draws", &vbn::PredictOptions::vb_draws)
        .def_readwrite("seed", &vbn::PredictOptions::seed);
    py::class_<vbn::EvidenceOptions>(m, "EvidenceOptions")
        .def(py::init<>())
        .def_readwrite("draws", &vbn::EvidenceOptions::draws)
        .def_readwrite("seed", &vbn::EvidenceOptions::seed)
        .def_readwrite("variational", &vbn::EvidenceOptions::variational);
    py::class_<vbn::SimulateOptions>(m, "SimulateOptions")
        .def(py::init<>())
        .def_readwrite("rows", &vbn::SimulateOptions::rows)
        .def_readwrite("seed", &vbn::SimulateOptions::seed)
        .def_readwrite("include_hidden", &vbn::SimulateOptions::include_hidden)
        .def_readwrite("params_json", &vbn::SimulateOptions::params_json);
}

void bind_fit_results(py::module_& m) {
    py::class_<vbn::SummaryRow>(m, "SummaryRow")
        .def_readonly("name", &vbn::SummaryRow::name)
        .def_readonly("mean", &vbn::SummaryRow::mean)
        .def_readonly("sd", &vbn::SummaryRow::sd)
        .def_readonly("mcse_mean", &vbn::SummaryRow::mcse_mean)
        .def_readonly("q5", &vbn::SummaryRow::q5)
        .def_readonly("q50", &vbn::SummaryRow::q50)
        .def_readonly("q95", &vbn::SummaryRow::q95)
        .def_readonly("ess_bulk", &vbn::SummaryRow::ess_bulk)
        .def_readonly("ess_tail", &vbn::SummaryRow::ess_tail)
        .def_readonly("rhat", &vbn::SummaryRow::rhat);
    py::class_<vbn::VariationalResult>(m, "VariationalResult")
        .def_readonly("mean", &vbn::VariationalResult::mean)
        .def_readonly("covariance", &vbn::VariationalResult::covariance)
        .def_readonly("elbo", &vbn::VariationalResult::elbo)
        .def_readonly("elbo_trace", &vbn::VariationalResult::elbo_trace)
        .def_readonly("restart_elbos", &vbn::VariationalResult::restart_elbos)
        .def_readonly("iterations", &vbn::VariationalResult::iterations)
        .def_readonly("converged", &vbn::VariationalResult::converged)
        .def_readonly("seconds", &vbn::VariationalResult::seconds);
    py::class_<vbn::ModeMass>(m, "ModeMass")
        .def_readonly("flip", &vbn::ModeMass::flip)
        .def_readonly("mass", &vbn::ModeMass::mass)
        .def_readonly("mcse", &vbn::ModeMass::mcse)
        .def_readonly("importance", &vbn::ModeMass::importance)
        .def_readonly("importance_mcse", &vbn::ModeMass::importance_mcse)
        .def_readonly("importance_khat", &vbn::ModeMass::importance_khat);
    py::class_<vbn::Acceptance>(m, "Acceptance")
        .def_readonly("kernel", &vbn::Acceptance::kernel)
        .def_readonly("proposed", &vbn::Acceptance::proposed)
        .def_readonly("accepted", &vbn::Acceptance::accepted);
    py::class_<vbn::SamplerStats>(m, "SamplerStats")
        .def_readonly("accept_stat", &vbn::SamplerStats::accept_stat)
        .def_readonly("stepsize", &vbn::SamplerStats::stepsize)
        .def_readonly("treedepth", &vbn::SamplerStats::treedepth)
        .def_readonly("n_leapfrog", &vbn::SamplerStats::n_leapfrog)
        .def_readonly("divergent", &vbn::SamplerStats::divergent)
        .def_readonly("energy", &vbn::SamplerStats::energy);
    py::class_<vbn::Chain>(m, "Chain")
        .def_readonly("chain", &vbn::Chain::chain)
        .def_readonly("draws", &vbn::Chain::draws)
        .def_readonly("log_density", &vbn::Chain::log_density)
        .def_readonly("sampler", &vbn::Chain::sampler)
        .def_readonly("log_lik", &vbn::Chain::log_lik)
        .def_readonly("acceptance", &vbn::Chain::acceptance)
        .def_readonly("divergent", &vbn::Chain::divergent)
        .def_readonly("regenerations", &vbn::Chain::regenerations)
        .def_readonly("warmup_seconds", &vbn::Chain::warmup_seconds)
        .def_readonly("sampling_seconds", &vbn::Chain::sampling_seconds)
        .def_readonly("error", &vbn::Chain::error);
    py::class_<vbn::FitResult>(m, "FitResult")
        .def_readonly("method", &vbn::FitResult::method)
        .def_readonly("kernel", &vbn::FitResult::kernel)
        .def_readonly("names", &vbn::FitResult::names)
        .def_readonly("chains", &vbn::FitResult::chains)
        .def_readonly("summary", &vbn::FitResult::summary)
        .def_readonly("acceptance", &vbn::FitResult::acceptance)
        .def_readonly("variational", &vbn::FitResult::variational)
        .def_readonly("warmup_seconds", &vbn::FitResult::warmup_seconds)
        .def_readonly("sampling_seconds", &vbn::FitResult::sampling_seconds)
        .def_readonly("target_seconds", &vbn::FitResult::target_seconds)
        .def_readonly("proposal_seconds", &vbn::FitResult::proposal_seconds)
        .def_readonly("summary_seconds", &vbn::FitResult::summary_seconds)
        .def_readonly("relabel", &vbn::FitResult::relabel)
        .def_readonly("relabelled_draws", &vbn::FitResult::relabelled_draws)
        .def_readonly("modes", &vbn::FitResult::modes)
        .def_readonly("notes", &vbn::FitResult::notes)
        .def_readonly("warnings", &vbn::FitResult::warnings)
        .def_readonly("table", &vbn::FitResult::table);
}

void bind_other_results(py::module_& m) {
    py::class_<vbn::Prediction>(m, "Prediction")
        .def_readonly("row", &vbn::Prediction::row)
        .def_readonly("node", &vbn::Prediction::node)
        .def_readonly("p", &vbn::Prediction::p)
        .def_readonly("truth", &vbn::Prediction::truth);
    py::class_<vbn::PredictionScores>(m, "PredictionScores")
        .def_readonly("scored", &vbn::PredictionScores::scored)
        .def_readonly("accuracy", &vbn::PredictionScores::accuracy)
        .def_readonly("log_loss", &vbn::PredictionScores::log_loss)
        .def_readonly("brier", &vbn::PredictionScores::brier);
    py::class_<vbn::PredictResult>(m, "PredictResult")
        .def_readonly("predictions", &vbn::PredictResult::predictions)
        .def_readonly("scores", &vbn::PredictResult::scores)
        .def_readonly("draws", &vbn::PredictResult::draws);
    py::class_<vbn::EvidenceResult>(m, "EvidenceResult")
        .def_readonly("log_evidence", &vbn::EvidenceResult::log_evidence)
        .def_readonly("se", &vbn::EvidenceResult::se)
        .def_readonly("pareto_k", &vbn::EvidenceResult::pareto_k)
        .def_readonly("elbo", &vbn::EvidenceResult::elbo)
        .def_readonly("draws", &vbn::EvidenceResult::draws)
        .def_readonly("from_mode", &vbn::EvidenceResult::from_mode)
        .def_readonly("tempered", &vbn::EvidenceResult::tempered)
        .def_readonly("runs_rhat", &vbn::EvidenceResult::runs_rhat);
    py::class_<vbn::SimulateResult>(m, "SimulateResult")
        .def_readonly("columns", &vbn::SimulateResult::columns)
        .def_readonly("parameters", &vbn::SimulateResult::parameters)
        .def_readonly("notes", &vbn::SimulateResult::notes);
    py::class_<vbn::DrawsFile>(m, "DrawsFile")
        .def_readonly("path", &vbn::DrawsFile::path)
        .def_readonly("config", &vbn::DrawsFile::config)
        .def_readonly("sampler_columns", &vbn::DrawsFile::sampler_columns)
        .def_readonly("sampler", &vbn::DrawsFile::sampler)
        .def_readonly("parameter_columns", &vbn::DrawsFile::parameter_columns)
        .def_readonly("draws", &vbn::DrawsFile::draws)
        .def("setting", &vbn::DrawsFile::setting, py::arg("key"));
    py::class_<vbn::Column>(m, "Column")
        .def_readonly("name", &vbn::Column::name)
        .def_readonly("values", &vbn::Column::values);
}

void bind_jobs(py::module_& m) {
    m.def("version", &vbn::version);
    m.def("methods", [] {
        std::vector<std::pair<std::string, std::string>> out;
        for (const auto& d : vbn::methods()) out.emplace_back(d.name, d.description);
        return out;
    });
    m.def("fit", &fit, py::arg("model"), py::arg("data"), py::arg("options"), py::arg("progress"), py::arg("interval"),
          py::arg("log"));
    m.def("variational", [](const vbn::Model& model, const vbn::Dataset& data, const vbn::VariationalOptions& o) {
        return without_gil([&] { return vbn::variational(model, data, o); });
    });
    m.def("predict_draws", [](const vbn::Model& model, const vbn::Dataset& rows, const Eigen::MatrixXd& draws,
                              const vbn::PredictOptions& o) { return without_gil([&] { return vbn::predict(model, rows, draws, o); }); });
    m.def("predict_variational", [](const vbn::Model& model, const vbn::Dataset& rows, const vbn::VariationalResult& q,
                                    const vbn::PredictOptions& o) { return without_gil([&] { return vbn::predict(model, rows, q, o); }); });
    m.def("evidence", [](const vbn::Model& model, const vbn::Dataset& data, const vbn::EvidenceOptions& o) {
        return without_gil([&] { return vbn::evidence(model, data, o); });
    });
    m.def("read_draws", [](const std::string& path) { return without_gil([&] { return vbn::read_draws(path); }); },
          py::arg("path"));
    m.def("simulate", [](const vbn::Model& model, const vbn::SimulateOptions& o) {
        return without_gil([&] { return vbn::simulate(model, o); });
    });
}

}  // namespace

PYBIND11_MODULE(_vbn, m) {
    m.doc() = "vbn's embedding API (<vbn/vbn.hpp>); use the package vbn, not this module.";
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const vbn::Error& e) {
            translate(e);
        }
    });
    bind_model(m);
    bind_options(m);
    bind_fit_results(m);
    bind_other_results(m);
    bind_jobs(m);
}
