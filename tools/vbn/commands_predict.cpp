// `vbn predict` and `vbn compare` (docs/design.md §3): posterior predictive probabilities of
// unobserved nodes, and model comparison by importance-sampled log evidence.
#include "tools/vbn/commands.hpp"
#include "tools/vbn/command_guard.hpp"

#include "runtime/data/dataset.hpp"
#include "runtime/error.hpp"
#include "runtime/variational/evidence.hpp"
#include "runtime/data/model.hpp"
#include "runtime/predictive/predict.hpp"
#include "runtime/variational/vb.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>

namespace vbn::commands {

namespace {

// The element named `name` (a scalar node `y` or an element `v[3]`), or a usage error.
int find_element(const ir::Graph& g, const std::string& name) {
    for (std::size_t e = 0; e < g.elements.size(); ++e)
        if (g.elements[e].name == name) {
            if (!g.elements[e].binary)
                throw Error(ErrorKind::usage, fmt::format("--target {}: a covariate has no distribution to predict", name));
            return static_cast<int>(e);
        }
    throw Error(ErrorKind::usage, fmt::format("--target {}: the model {} has no node of that name", name, g.name));
}

Eigen::MatrixXd variational_draws(const ir::Graph& g, const PredictArgs& args, std::ostream& err) {
    if (!args.train) throw Error(ErrorKind::usage, "--vb needs --train CSV, the data to fit the variational posterior to");
    if (args.vb_draws < 1) throw Error(ErrorKind::usage, "--vb-draws must be at least 1");
    LoadNotes notes;
    const Dataset train = load_csv(g, *args.train, &notes);
    for (const auto& n : notes.notices) err << "note: " << n << '\n';
    VbOptions vo;
    vo.restarts = args.restarts;
    vo.seed = args.seed;
    const VbFit q = variational(g, train, vo).best_fit();
    return gaussian_draws(q, args.vb_draws, args.seed);
}

void write_predictions(const ir::Graph& g, const std::vector<Prediction>& ps, std::ostream& f) {
    f << "row,node,p\n";
    for (const auto& p : ps) f << fmt::format("{},{},{}\n", p.row, g.elements[static_cast<std::size_t>(p.element)].name, p.p);
}
}  // namespace

int predict(const PredictArgs& args, std::ostream& out, std::ostream& err) {
    return guarded(err, [&] {
        if (args.vb == !args.draws.empty())
            throw Error(ErrorKind::usage, "predict needs the posterior: either --draws FILE_1.csv … or --vb --train CSV");
        if (!args.vb && args.train) throw Error(ErrorKind::usage, "--train goes with --vb (the draws files already hold the posterior)");
        std::string warnings;
        const ir::Graph g = load_model(args.model, &warnings);
        err << warnings;
        PredictOptions o;
        if (args.target) o.target = find_element(g, *args.target);
        std::vector<std::string> notices;
        const Dataset rows = load_prediction_csv(g, args.data, &notices);
        const Eigen::MatrixXd draws = args.vb ? variational_draws(g, args, err) : draws_from_stan_csv(g, args.draws, &notices);
        for (const auto& n : notices) err << "note: " << n << '\n';
        const std::vector<Prediction> ps = predict(g, rows, draws, o);

        out << fmt::format("posterior predictive P(node = +1 | the row's observed values, training data), averaged over "
                           "{} draws from {}\n",
                           draws.rows(), args.vb ? "the variational posterior" : "the posterior (CmdStan CSV)");
        std::size_t width = 4;
        for (const auto& p : ps) width = std::max(width, g.elements[static_cast<std::size_t>(p.element)].name.size());
        constexpr std::size_t shown = 20;
        out << fmt::format("{:>6} {:<{}} {:>8}{}\n", "row", "node", width, "p", o.target >= 0 ? "   truth" : "");
        for (std::size_t i = 0; i < ps.size() && i < shown; ++i) {
            const auto& p = ps[i];
            out << fmt::format("{:>6} {:<{}} {:>8.4f}", p.row, g.elements[static_cast<std::size_t>(p.element)].name, width, p.p);
            if (o.target >= 0) out << fmt::format(" {:>7}", p.truth == 0 ? "NA" : p.truth > 0 ? "1" : "-1");
            out << '\n';
        }
        if (ps.size() > shown)
            out << fmt::format("... {} more{}\n", ps.size() - shown, args.output ? fmt::format(" (all in {})", *args.output) : "");
        if (ps.empty()) out << "(no unobserved nodes in any row: nothing to predict)\n";
        const PredictionScores s = score_predictions(ps);
        if (s.scored > 0)
            out << fmt::format("\n{} rows with the true value: accuracy {:.4f}, log loss {:.4f}, Brier score {:.4f}\n", s.scored,
                               s.accuracy, s.log_loss, s.brier);
        if (args.output) {
            std::ofstream f(*args.output, std::ios::binary);
            if (!f) throw Error(ErrorKind::io, fmt::format("cannot write output file '{}'", *args.output));
            write_predictions(g, ps, f);
            if (!f) throw Error(ErrorKind::io, fmt::format("cannot write output file '{}'", *args.output));
            err << fmt::format("wrote {} predictions to {}\n", ps.size(), *args.output);
        }
        return 0;
    });
}

namespace {

struct ModelEvidence {
    std::string name;
    double elbo = 0;
    Evidence evidence;
};

ModelEvidence evaluate(const std::string& path, const std::string& data, const CompareArgs& args, std::ostream& err,
                       std::vector<std::string>& observed) {
    std::string warnings;
    const ir::Graph g = load_model(path, &warnings);
    err << warnings;
    Dataset d;
    try {
        LoadNotes notes;
        d = load_csv(g, data, &notes);
        for (const auto& n : notes.notices) err << "note: " << path << ": " << n << '\n';
    } catch (const Error& e) {
        if (e.kind() != ErrorKind::data) throw;
        throw Error(ErrorKind::data, fmt::format("the data do not fit the model {}:\n{}", path, e.what()), e.line(), e.column());
    }
    observed = d.binary_names;
    std::sort(observed.begin(), observed.end());
    ModelEvidence m;
    m.name = path;
    VbOptions vo;
    vo.restarts = args.restarts;
    vo.seed = args.seed;
    const VbFit q = variational(g, d, vo).best_fit();
    m.elbo = q.elbo;
    EvidenceOptions eo;
    eo.draws = args.evidence_draws;
    eo.seed = args.seed;
    std::string why;
    const auto e = model_evidence(g, d, q, eo, 12, &why);
    if (!e) throw Error(ErrorKind::limit, fmt::format("{}: no log evidence: {}", path, why));
    m.evidence = *e;
    return m;
}
}  // namespace

int compare(const CompareArgs& args, std::ostream& out, std::ostream& err) {
    return guarded(err, [&] {
        std::vector<std::string> obs_a, obs_b;
        const ModelEvidence a = evaluate(args.model_a, args.data, args, err, obs_a);
        const ModelEvidence b = evaluate(args.model_b, args.data, args, err, obs_b);
        if (obs_a != obs_b)
            throw Error(ErrorKind::usage,
                        fmt::format("{} and {} observe different columns ({} vs {}): their evidences are probabilities of "
                                    "different data and cannot be compared",
                                    args.model_a, args.model_b, fmt::join(obs_a, ", "), fmt::join(obs_b, ", ")));
        std::size_t width = 5;
        for (const auto* m : {&a, &b}) width = std::max(width, m->name.size());
        out << fmt::format("{:<{}} {:>14} {:>14} {:>10} {:>8}\n", "model", width, "ELBO", "log evidence", "se", "k-hat");
        for (const auto* m : {&a, &b})
            out << fmt::format("{:<{}} {:>14.4f} {:>14.4f} {:>10.4f} {:>8.3f}\n", m->name, width, m->elbo,
                               m->evidence.log_evidence, m->evidence.se, m->evidence.pareto_k);
        const double lbf = a.evidence.log_evidence - b.evidence.log_evidence;
        const double se = std::hypot(a.evidence.se, b.evidence.se);
        out << fmt::format("\nlog Bayes factor log p(data | A) - log p(data | B) = {:.4f} ± {:.4f}\n", lbf, se);
        out << fmt::format("(A = {}, B = {}; positive favours A", args.model_a, args.model_b);
        out << fmt::format("; the data are {:.3g} times as probable under {})\n", std::exp(std::min(std::abs(lbf), 700.0)),
                           lbf >= 0 ? "A" : "B");
        for (const auto* m : {&a, &b})
            if (!(m->evidence.pareto_k <= 0.7))
                out << fmt::format("warning: {}: Pareto k-hat {:.2f}: {}\n", m->name, m->evidence.pareto_k,
                                   pareto_k_reading(m->evidence.pareto_k));
        return 0;
    });
}

}  // namespace vbn::commands
