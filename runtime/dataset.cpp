#include "runtime/dataset.hpp"

#include "runtime/csv.hpp"
#include "runtime/dataset_builder.hpp"
#include "runtime/error.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <new>
#include <vector>

namespace vbn {

namespace {

constexpr std::size_t kChunk = std::size_t{1} << 20;

std::string read_file(const std::string& path) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
        throw Error(ErrorKind::io, fmt::format("cannot read data file '{}': it is a directory", path));
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
    if (!f) throw Error(ErrorKind::io, fmt::format("cannot open data file '{}': {}", path, std::strerror(errno)));
    // Read in one piece at the size the file claims, so the text is held once, with no
    // doubling copy; whatever else arrives (a file still growing, a pipe) is appended.
    std::string text;
    const auto size = std::filesystem::file_size(path, ec);
    if (!ec && size > 0) {
        text.resize(static_cast<std::size_t>(size));
        text.resize(std::fread(text.data(), 1, text.size(), f.get()));
    }
    std::vector<char> chunk(kChunk);
    while (!std::ferror(f.get()) && !std::feof(f.get())) {
        const std::size_t n = std::fread(chunk.data(), 1, chunk.size(), f.get());
        text.append(chunk.data(), n);
    }
    if (std::ferror(f.get()))
        throw Error(ErrorKind::io, fmt::format("cannot read data file '{}': {}", path, std::strerror(errno)));
    return text;
}

std::string read_stream(std::istream& in, const std::string& name) {
    std::string text;
    std::vector<char> chunk(kChunk);
    while (in) {
        in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
        text.append(chunk.data(), static_cast<std::size_t>(in.gcount()));
    }
    if (in.bad()) throw Error(ErrorKind::io, fmt::format("cannot read data '{}'", name));
    return text;
}

Dataset load_text(const ir::Graph& graph, std::string& text, const std::string& name, LoadNotes* notes, bool keep_rows) {
    CsvReader reader(text, name);
    DatasetBuilder builder(graph, name);
    if (keep_rows) builder.keep_row_patterns();
    if (!reader.next())
        throw Error(ErrorKind::data,
                    fmt::format("{}: the file is empty; expected a header row naming the columns, then one row per "
                                "observation",
                                name));
    builder.set_header(reader.fields(), reader.line(), notes);
    try {
        while (reader.next()) builder.add_text_row(reader.fields(), reader.line());
    } catch (const Error& e) {
        // A broken record structure (an unterminated quote, binary bytes) ends the reading;
        // it is reported after the value errors met before it.
        if (e.kind() != ErrorKind::data) throw;
        builder.errors().add_placed(e.line(), e.column(), e.what());
    }
    text = std::string();  // the patterns are all that is kept; free the text before unpacking them
    return builder.finish();
}

Dataset load_guarded(const ir::Graph& graph, std::string& text, const std::string& name, LoadNotes* notes, bool keep_rows) {
    try {
        return load_text(graph, text, name, notes, keep_rows);
    } catch (const std::bad_alloc&) {
        throw Error(ErrorKind::limit, fmt::format("{}: not enough memory to load the data", name));
    }
}

}  // namespace

Dataset load_csv(const ir::Graph& graph, const std::string& path, LoadNotes* notes, bool keep_row_patterns) {
    std::string text;
    try {
        text = read_file(path);
    } catch (const std::bad_alloc&) {
        throw Error(ErrorKind::limit, fmt::format("{}: the file is too large to read into memory", path));
    }
    return load_guarded(graph, text, path, notes, keep_row_patterns);
}

Dataset load_csv(const ir::Graph& graph, std::istream& in, const std::string& name, LoadNotes* notes,
                 bool keep_row_patterns) {
    std::string text;
    try {
        text = read_stream(in, name);
    } catch (const std::bad_alloc&) {
        throw Error(ErrorKind::limit, fmt::format("{}: the data is too large to read into memory", name));
    }
    return load_guarded(graph, text, name, notes, keep_row_patterns);
}

}  // namespace vbn
