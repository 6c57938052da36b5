// Models from files or strings, with errors as vbn::Error (kind model) whose message holds
// every diagnostic, formatted with file:line:column and a caret.
#pragma once

#include "lang/ir.hpp"
#include "lang/limits.hpp"

#include <string>

namespace vbn {

// Compiles model text; `name` is what messages call it. Warnings (if any) are appended to
// *warnings, formatted like errors. `limits` are the language's unless given (the fuzzers
// give smaller ones).
ir::Graph compile_model(const std::string& text, const std::string& name, std::string* warnings = nullptr,
                        const lang::Limits& limits = {});

// Reads and compiles a model file (kind io if it cannot be read).
ir::Graph load_model(const std::string& path, std::string* warnings = nullptr);

// The whole content of a file; throws vbn::Error (kind io) naming the file otherwise.
std::string read_file(const std::string& path, const char* what = "file");

}  // namespace vbn
