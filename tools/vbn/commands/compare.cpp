// `vbn compare MODEL_A MODEL_B --data CSV`: each model's log evidence (runtime/services/
// evidence.hpp) and the log Bayes factor.
#include "runtime/error.hpp"
#include "runtime/services/evidence.hpp"
#include "tools/vbn/command_guard.hpp"
#include "tools/vbn/commands.hpp"
#include "tools/vbn/console.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace vbn::commands {

namespace {

struct ModelEvidence {
    std::string name;
    std::vector<std::string> observed;  // the data's binary columns, sorted
    services::EvidenceRun run;
};

ModelEvidence evaluate(const std::string& path, const CompareArgs& args, std::ostream& err) {
    const ir::Graph g = load_model_printing(path, err);
    Dataset d;
    try {
        LoadNotes notes;
        d = load_csv(g, args.data, &notes);
        for (const auto& n : notes.notices) err << "note: " << path << ": " << n << '\n';
    } catch (const Error& e) {
        if (e.kind() != ErrorKind::data) throw;
        throw Error(ErrorKind::data, fmt::format("the data do not fit the model {}:\n{}", path, e.what()), e.line(), e.column());
    }
    ModelEvidence m;
    m.name = path;
    m.observed = d.binary_names;
    std::sort(m.observed.begin(), m.observed.end());
    services::EvidenceSettings s;
    s.vb.restarts = args.restarts;
    s.vb.seed = args.seed;
    s.evidence.draws = args.evidence_draws;
    s.evidence.seed = args.seed;
    m.run = services::evidence(g, d, s);
    return m;
}

}  // namespace

int compare(const CompareArgs& args, std::ostream& out, std::ostream& err) {
    return guarded(err, [&] {
        const ModelEvidence a = evaluate(args.model_a, args, err);
        const ModelEvidence b = evaluate(args.model_b, args, err);
        if (a.observed != b.observed)
            throw Error(ErrorKind::usage,
                        fmt::format("{} and {} observe different columns ({} vs {}): their evidences are probabilities of "
                                    "different data and cannot be compared",
                                    args.model_a, args.model_b, fmt::join(a.observed, ", "), fmt::join(b.observed, ", ")));
        std::size_t width = 5;
        for (const auto* m : {&a, &b}) width = std::max(width, m->name.size());
        out << fmt::format("{:<{}} {:>14} {:>14} {:>10} {:>8}\n", "model", width, "ELBO", "log evidence", "se", "k-hat");
        for (const auto* m : {&a, &b})
            out << fmt::format("{:<{}} {:>14.4f} {:>14.4f} {:>10.4f} {:>8.3f}\n", m->name, width, m->run.elbo,
                               m->run.evidence.log_evidence, m->run.evidence.se, m->run.evidence.pareto_k);
        const double lbf = a.run.evidence.log_evidence - b.run.evidence.log_evidence;
        const double se = std::hypot(a.run.evidence.se, b.run.evidence.se);
        out << fmt::format("\nlog Bayes factor log p(data | A) - log p(data | B) = {:.4f} ± {:.4f}\n", lbf, se);
        out << fmt::format("(A = {}, B = {}; positive favours A", args.model_a, args.model_b);
        out << fmt::format("; the data are {:.3g} times as probable under {})\n", std::exp(std::min(std::abs(lbf), 700.0)),
                           lbf >= 0 ? "A" : "B");
        for (const auto* m : {&a, &b})
            if (!(m->run.evidence.pareto_k <= 0.7))
                out << fmt::format("warning: {}: Pareto k-hat {:.2f}: {}\n", m->name, m->run.evidence.pareto_k,
                                   pareto_k_reading(m->run.evidence.pareto_k));
        return 0;
    });
}

}  // namespace vbn::commands
