#include "tools/vbn/console.hpp"

#include "runtime/data/model.hpp"
#include "runtime/error.hpp"
#include "tools/vbn/commands.hpp"

#include <fmt/format.h>

#include <chrono>
#include <fstream>
#include <random>

namespace vbn::commands {

int exit_status(int kind) {
    switch (static_cast<ErrorKind>(kind)) {
        case ErrorKind::inference: return 2;
        case ErrorKind::cancelled: return 130;
        default: return 1;
    }
}

std::uint64_t fresh_seed() {
    std::random_device rd;
    const auto t = static_cast<std::uint64_t>(std::chrono::high_resolution_clock::now().time_since_epoch().count());
    return ((static_cast<std::uint64_t>(rd()) << 32) ^ rd() ^ t) % 4294967296ULL;
}

std::uint64_t seed_or_fresh(const std::optional<std::uint64_t>& given, std::ostream& err, bool quiet) {
    if (given) return *given;
    const std::uint64_t seed = fresh_seed();
    if (!quiet) err << fmt::format("note: seed {} (pass --seed {} to repeat this run)\n", seed, seed);
    return seed;
}

ir::Graph load_model_printing(const std::string& model, std::ostream& err) {
    std::string warnings;
    ir::Graph g = load_model(model, &warnings);
    err << warnings;
    return g;
}

void print_notes(const std::vector<std::string>& notes, std::ostream& err) {
    for (const auto& n : notes) err << "note: " << n << '\n';
}

Loaded load_printing(const std::string& model, const std::string& csv, std::ostream& err, bool keep_row_patterns) {
    Loaded l{load_model_printing(model, err), {}};
    LoadNotes notes;
    l.data = load_csv(l.graph, csv, &notes, keep_row_patterns);
    print_notes(notes.notices, err);
    return l;
}

services::Callbacks console_callbacks(std::ostream& err, bool quiet) {
    services::Callbacks cb;
    cb.log = [&err, quiet](services::LogLevel level, const std::string& message) {
        if (level == services::LogLevel::warning)
            err << "warning: " << message << '\n';
        else if (!quiet)
            err << "note: " << message << '\n';
    };
    return cb;
}

void write_text_file(const std::string& path, const std::string& text, const char* what) {
    std::ofstream f(path, std::ios::binary);
    if (!f) throw Error(ErrorKind::io, fmt::format("cannot write {} '{}'", what, path));
    f << text;
    if (!f) throw Error(ErrorKind::io, fmt::format("cannot write {} '{}'", what, path));
}

}  // namespace vbn::commands
