// `vbn predict MODEL --data NEW.csv (--draws FILE_1.csv … | --vb --train CSV)`: posterior
// predictive probabilities of the unobserved nodes of new rows (runtime/services/predict.hpp).
#include "runtime/error.hpp"
#include "runtime/services/predict.hpp"
#include "tools/vbn/command_guard.hpp"
#include "tools/vbn/commands.hpp"
#include "tools/vbn/console.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>

namespace vbn::commands {

namespace {

const std::string& element_name(const ir::Graph& g, const Prediction& p) { return g.elements[static_cast<std::size_t>(p.element)].name; }

void write_predictions(const ir::Graph& g, const std::vector<Prediction>& ps, const std::string& path, std::ostream& err) {
    std::ofstream f(path, std::ios::binary);
    if (!f) throw Error(ErrorKind::io, fmt::format("cannot write output file '{}'", path));
    f << "row,node,p\n";
    for (const auto& p : ps) f << fmt::format("{},{},{}\n", p.row, element_name(g, p), p.p);
    if (!f) throw Error(ErrorKind::io, fmt::format("cannot write output file '{}'", path));
    err << fmt::format("wrote {} predictions to {}\n", ps.size(), path);
}

void print_predictions(const ir::Graph& g, const PredictArgs& args, const services::PredictRun& run, std::ostream& out) {
    const auto& ps = run.predictions;
    out << fmt::format("posterior predictive P(node = +1 | the row's observed values, training data), averaged over "
                       "{} draws from {}\n",
                       run.draws, args.vb ? "the variational posterior" : "the posterior (CmdStan CSV)");
    std::size_t width = 4;
    for (const auto& p : ps) width = std::max(width, element_name(g, p).size());
    const bool targeted = args.target.has_value();
    constexpr std::size_t shown = 20;
    out << fmt::format("{:>6} {:<{}} {:>8}{}\n", "row", "node", width, "p", targeted ? "   truth" : "");
    for (std::size_t i = 0; i < ps.size() && i < shown; ++i) {
        const auto& p = ps[i];
        out << fmt::format("{:>6} {:<{}} {:>8.4f}", p.row, element_name(g, p), width, p.p);
        if (targeted) out << fmt::format(" {:>7}", p.truth == 0 ? "NA" : p.truth > 0 ? "1" : "-1");
        out << '\n';
    }
    if (ps.size() > shown)
        out << fmt::format("... {} more{}\n", ps.size() - shown, args.output ? fmt::format(" (all in {})", *args.output) : "");
    if (ps.empty()) out << "(no unobserved nodes in any row: nothing to predict)\n";
    const PredictionScores& s = run.scores;
    if (s.scored > 0)
        out << fmt::format("\n{} rows with the true value: accuracy {:.4f}, log loss {:.4f}, Brier score {:.4f}\n", s.scored,
                           s.accuracy, s.log_loss, s.brier);
}

}  // namespace

int predict(const PredictArgs& args, std::ostream& out, std::ostream& err) {
    return guarded(err, [&] {
        if (args.vb && !args.draws.empty())
            throw Error(ErrorKind::usage, "--draws and --vb are two sources of the posterior: give one, either the draws "
                                          "files of a fit or --vb --train CSV for a variational fit");
        if (!args.vb && args.draws.empty())
            throw Error(ErrorKind::usage, "predict needs the posterior: either --draws FILE_1.csv … or --vb --train CSV");
        if (!args.vb && args.train) throw Error(ErrorKind::usage, "--train goes with --vb (the draws files already hold the posterior)");
        const ir::Graph g = load_model_printing(args.model, err);
        services::PredictSettings s = args.settings;
        if (args.target) {
            s.target = *args.target;
            services::target_element(g, s.target);  // a bad name is refused before any data are read
        }
        std::vector<std::string> notices;
        const Dataset rows = load_prediction_csv(g, args.data, &notices);
        Eigen::MatrixXd draws;
        if (args.vb) {
            if (!args.train) throw Error(ErrorKind::usage, "--vb needs --train CSV, the data to fit the variational posterior to");
            if (s.vb_draws < 1) throw Error(ErrorKind::usage, "--vb-draws must be at least 1");
            LoadNotes notes;
            const Dataset train = load_csv(g, *args.train, &notes);
            print_notes(notes.notices, err);
            s.seed = seed_or_fresh(args.seed, err);
            draws = services::variational_draws(g, train, s);
        } else {
            draws = draws_from_stan_csv(g, args.draws, &notices);
        }
        print_notes(notices, err);
        const services::PredictRun run = services::predict(g, rows, draws, s);
        print_predictions(g, args, run, out);
        if (args.output) write_predictions(g, run.predictions, *args.output, err);
        return 0;
    });
}

}  // namespace vbn::commands
