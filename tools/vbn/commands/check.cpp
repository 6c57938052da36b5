// `vbn check MODEL [--data CSV] [--dot FILE]`: parse and check; print the network.
#include "lang/approximate_symmetry.hpp"
#include "lang/describe.hpp"
#include "lang/symmetry.hpp"
#include "runtime/data/describe_data.hpp"
#include "runtime/target/describe_summation.hpp"
#include "tools/vbn/command_guard.hpp"
#include "tools/vbn/commands.hpp"
#include "tools/vbn/console.hpp"

#include <fmt/format.h>

namespace vbn::commands {

int check(const CheckArgs& args, std::ostream& out, std::ostream& err) {
    return guarded(err, [&] {
        const ir::Graph g = load_model_printing(args.model, err);
        out << lang::describe(g);
        const std::string symmetry = lang::describe_symmetries(g, lang::find_symmetries(g));
        if (!symmetry.empty()) out << "\nsymmetries: " << symmetry << '\n';
        const auto flips = lang::find_approximate_flips(g);
        if (!flips.empty()) {
            std::string names;
            for (const auto& f : flips) names += fmt::format("{}{{{}}}", names.empty() ? "" : ", ", f.name);
            out << fmt::format("\napproximate symmetries: flipping {} with the weights the flip negates changes only "
                               "a fixed offset or a prior: the flipped copies are minor modes, which fit visits by "
                               "symmetry jumps\n",
                               names);
        }
        const auto swaps = lang::find_approximate_swaps(g);
        if (!swaps.empty()) {
            std::string names;
            for (const auto& w : swaps) names += fmt::format("{}{{{}}}", names.empty() ? "" : ", ", w.name);
            out << fmt::format("\napproximate symmetries: exchanging {} with their weights changes only a fixed offset or "
                               "a prior: the exchanged copies are minor modes, which fit visits by symmetry jumps\n",
                               names);
        }
        if (args.dot) {
            write_text_file(*args.dot, lang::to_dot(g), "DOT file");
            out << fmt::format("\nwrote {}\n", *args.dot);
        }
        if (args.data) {
            LoadNotes notes;
            const Dataset d = load_csv(g, *args.data, &notes);
            print_notes(notes.notices, err);
            out << '\n' << describe_data(g, d) << describe_summation(g, d);
        }
        return 0;
    });
}

}  // namespace vbn::commands
