// What every subcommand shares: loading a model and its data with their warnings and notes
// printed, the services' messages printed as `note:` and `warning:` lines, and writing a file
// whole.
#pragma once

#include "lang/ir.hpp"
#include "runtime/data/dataset.hpp"
#include "runtime/services/callbacks.hpp"

#include <ostream>
#include <string>

namespace vbn::commands {

struct Loaded {
    ir::Graph graph;
    Dataset data;
};

// The model file and a CSV of data for it; compiler warnings and the loader's notes go to err.
ir::Graph load_model_printing(const std::string& model, std::ostream& err);
// keep_row_patterns: record each row's pattern (Dataset::row_pattern), for outputs by row.
Loaded load_printing(const std::string& model, const std::string& csv, std::ostream& err, bool keep_row_patterns = false);
void print_notes(const std::vector<std::string>& notes, std::ostream& err);

// Callbacks whose messages go to err as "note: …" and "warning: …" lines; with quiet, notes
// are dropped (warnings never are).
services::Callbacks console_callbacks(std::ostream& err, bool quiet = false);

// Writes text to path; throws vbn::Error (io) naming the file and what it is.
void write_text_file(const std::string& path, const std::string& text, const char* what);

}  // namespace vbn::commands
