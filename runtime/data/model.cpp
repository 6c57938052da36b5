#include "runtime/data/model.hpp"

#include "lang/frontend.hpp"
#include "runtime/error.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace vbn {

std::string read_file(const std::string& path, const char* what) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
        throw Error(ErrorKind::io, fmt::format("cannot read {} '{}': it is a directory", what, path));
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(ErrorKind::io, fmt::format("cannot read {} '{}': {}", what, path, std::strerror(errno)));
    std::ostringstream buf;
    buf << in.rdbuf();
    if (in.bad()) throw Error(ErrorKind::io, fmt::format("cannot read {} '{}': read error", what, path));
    return std::move(buf).str();
}

ir::Graph compile_model(const std::string& text, const std::string& name, std::string* warnings,
                        const lang::Limits& limits) {
    const lang::Source source(name, text);
    lang::Diagnostics diag(source);
    std::optional<ir::Graph> graph = lang::compile(source, diag, limits);
    if (!graph || diag.has_errors()) {
        lang::Location first;
        for (const auto& d : diag.items())
            if (d.severity == lang::Severity::error) {
                first = d.location;
                break;
            }
        throw Error(ErrorKind::model, diag.format(), first.line, first.column);
    }
    if (warnings) *warnings += diag.format();
    return std::move(*graph);
}

ir::Graph load_model(const std::string& path, std::string* warnings) {
    return compile_model(read_file(path, "model file"), path, warnings);
}

}  // namespace vbn
