// `vbn compare MODEL_1 MODEL_2 [MODEL_3 …] --data CSV`: each model's log evidence, the
// ranking with log Bayes factors against the best and posterior model probabilities
// (runtime/services/compare.hpp); with two models also the log Bayes factor of A against B.
#include "runtime/error.hpp"
#include "runtime/report/loo_table.hpp"
#include "runtime/services/compare.hpp"
#include "tools/vbn/command_guard.hpp"
#include "tools/vbn/commands.hpp"
#include "tools/vbn/console.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ostream>

namespace vbn::commands {

namespace {

Dataset load_data(const ir::Graph& g, const std::string& path, const CompareArgs& args, std::ostream& err) {
    try {
        LoadNotes notes;
        Dataset d = load_csv(g, args.data, &notes, args.by == "loo");
        for (const auto& n : notes.notices) err << "note: " << path << ": " << n << '\n';
        return d;
    } catch (const Error& e) {
        if (e.kind() != ErrorKind::data) throw;
        throw Error(ErrorKind::data, fmt::format("the data do not fit the model {}:\n{}", path, e.what()), e.line(), e.column());
    }
}

std::size_t name_width(const std::vector<std::string>& names) {
    std::size_t width = 5;
    for (const auto& n : names) width = std::max(width, n.size());
    return width;
}

// The two-model lines `vbn compare` has always printed: A against B, whichever is better.
void print_pair(const services::CompareRun& run, const std::vector<std::string>& names, std::ostream& out) {
    const Evidence& a = run.evidence[0].evidence;
    const Evidence& b = run.evidence[1].evidence;
    const double lbf = a.log_evidence - b.log_evidence;
    out << fmt::format("\nlog Bayes factor log p(data | A) - log p(data | B) = {:.4f} ± {:.4f}\n", lbf, std::hypot(a.se, b.se));
    out << fmt::format("(A = {}, B = {}; positive favours A", names[0], names[1]);
    out << fmt::format("; the data are {:.3g} times as probable under {})\n", std::exp(std::min(std::abs(lbf), 700.0)),
                       lbf >= 0 ? "A" : "B");
}

void print_ranking(const services::CompareRun& run, const std::vector<std::string>& names, std::ostream& out) {
    const std::size_t width = name_width(names);
    out << "\nranking (equal prior probabilities; log BF = log p(data | model) - log p(data | best)):\n";
    out << fmt::format("{:>4}  {:<{}} {:>14} {:>12} {:>10} {:>12}\n", "rank", "model", width, "log evidence", "log BF", "se",
                       "probability");
    for (std::size_t r = 0; r < run.ranking.size(); ++r) {
        const services::RankedModel& m = run.ranking[r];
        out << fmt::format("{:>4}  {:<{}} {:>14.4f} {:>12.4f} {:>10.4f} {:>12.4g}\n", r + 1, names[m.model], width,
                           run.evidence[m.model].evidence.log_evidence, m.log_bayes_factor, m.se, m.probability);
    }
}

void print(const services::CompareRun& run, const std::vector<std::string>& names, std::ostream& out) {
    const std::size_t width = name_width(names);
    out << fmt::format("{:<{}} {:>14} {:>14} {:>10} {:>8}\n", "model", width, "ELBO", "log evidence", "se", "k-hat");
    for (std::size_t k = 0; k < names.size(); ++k) {
        const services::EvidenceRun& e = run.evidence[k];
        out << fmt::format("{:<{}} {:>14.4f} {:>14.4f} {:>10.4f} {:>8.3f}\n", names[k], width, e.elbo,
                           e.evidence.log_evidence, e.evidence.se, e.evidence.pareto_k);
    }
    if (names.size() == 2) print_pair(run, names, out);
    print_ranking(run, names, out);
    for (std::size_t k = 0; k < names.size(); ++k) {
        const Evidence& e = run.evidence[k].evidence;
        if (e.tempered && e.reliable())
            out << fmt::format("note: {}: Pareto k-hat {:.2f} is above 0.7, so its log evidence comes from tempering (the runs "
                               "agree: R-hat {:.3f})\n",
                               names[k], e.pareto_k, e.runs_rhat);
        else if (e.tempered)
            out << fmt::format("warning: {}: its log evidence comes from tempering, whose runs disagree (R-hat {:.3f}): it "
                               "cannot be trusted\n",
                               names[k], e.runs_rhat);
        else if (!e.reliable())
            out << fmt::format("warning: {}: Pareto k-hat {:.2f}: {}\n", names[k], e.pareto_k, pareto_k_reading(e.pareto_k));
    }
}

// `--by loo`: each model's PSIS-LOO, then the ranking by elpd_loo as loo_compare gives it.
void print_loo(const services::CompareLooRun& run, const std::vector<std::string>& names, std::ostream& out,
               std::ostream& err) {
    const std::size_t width = name_width(names);
    out << fmt::format("{:<{}} {:>10} {:>10} {:>8} {:>8} {:>8} {:>10}\n", "model", width, "method", "elpd_loo", "se",
                       "p_loo", "looic", "k-hat>0.7");
    for (std::size_t k = 0; k < names.size(); ++k) {
        const inference::LooResult& r = run.loo[k];
        const auto bad = std::count_if(r.points.begin(), r.points.end(),
                                       [](const inference::LooPoint& p) { return inference::pareto_k_bin(p.pareto_k) >= 2; });
        out << fmt::format("{:<{}} {:>10} {:>10.1f} {:>8.1f} {:>8.1f} {:>8.1f} {:>10}\n", names[k], width, run.methods[k],
                           r.elpd_loo, r.se_elpd_loo, r.p_loo, r.looic, bad);
    }
    out << "\nranking by elpd_loo (elpd_diff = elpd_loo(model) - elpd_loo(best); se_diff = se of the pointwise "
           "differences):\n";
    out << fmt::format("{:>4}  {:<{}} {:>10} {:>10}\n", "rank", "model", width, "elpd_diff", "se_diff");
    for (std::size_t r = 0; r < run.ranking.size(); ++r) {
        const services::LooRanked& m = run.ranking[r];
        out << fmt::format("{:>4}  {:<{}} {:>10.1f} {:>10.1f}\n", r + 1, names[m.model], width, m.elpd_diff, m.se_diff);
    }
    out.flush();
    for (std::size_t k = 0; k < names.size(); ++k) {
        const std::string w = loo_khat_warning(run.loo[k]);
        if (!w.empty()) err << "warning: " << names[k] << ": " << w << '\n';
    }
}

int compare_by_loo(const CompareArgs& args, const std::vector<services::CompareModel>& models, std::ostream& out,
                   std::ostream& err) {
    FitOptions s;
    s.seed = seed_or_fresh(args.seed, err);
    s.vb.seed = s.seed;
    s.vb.restarts = args.restarts;
    // The fits' notes (the method auto chose, …) would repeat per model; warnings still show.
    print_loo(services::compare_loo(models, s, console_callbacks(err, true)), args.models, out, err);
    return 0;
}

}  // namespace

int compare(const CompareArgs& args, std::ostream& out, std::ostream& err) {
    return guarded(err, [&] {
        services::check_model_count(args.models);  // before loading anything
        std::vector<ir::Graph> graphs;
        std::vector<Dataset> data;
        graphs.reserve(args.models.size());
        data.reserve(args.models.size());
        std::vector<services::CompareModel> models;
        for (const std::string& path : args.models) {
            graphs.push_back(load_model_printing(path, err));
            data.push_back(load_data(graphs.back(), path, args, err));
            models.push_back({path, &graphs.back(), &data.back()});
        }
        if (args.by == "loo") return compare_by_loo(args, models, out, err);
        services::EvidenceSettings s;
        s.vb.restarts = args.restarts;
        s.vb.seed = seed_or_fresh(args.seed, err);
        s.evidence.draws = args.evidence_draws;
        s.evidence.seed = s.vb.seed;
        print(services::compare(models, s), args.models, out);
        return 0;
    });
}

}  // namespace vbn::commands
