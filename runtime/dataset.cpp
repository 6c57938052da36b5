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

namespace vbn {

namespace {

constexpr std::size_t kChunk = std::size_t{1} << 20;

std::string read_file(const std::string& path) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
        throw Error(ErrorKind::io, fmt::format("cannot read data file '{}': it is a directory", path));
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
    if (!f) throw Error(ErrorKind::io, fmt::format("cannot open data file '{}': {}", path, std::strerror(errno)));
    std::string text;
    const auto size = std::filesystem::file_size(path, ec);
    if (!ec) text.reserve(static_cast<std::size_t>(size) + 1);
    for (;;) {
        const std::size_t old = text.size();
        text.resize(old + kChunk);
        const std::size_t n = std::fread(text.data() + old, 1, kChunk, f.get());
        text.resize(old + n);
        if (n < kChunk) break;
    }
    if (std::ferror(f.get()))
        throw Error(ErrorKind::io, fmt::format("cannot read data file '{}': {}", path, std::strerror(errno)));
    return text;
}

std::string read_stream(std::istream& in, const std::string& name) {
    std::string text;
    for (;;) {
        const std::size_t old = text.size();
        text.resize(old + kChunk);
        in.read(text.data() + old, static_cast<std::streamsize>(kChunk));
        text.resize(old + static_cast<std::size_t>(in.gcount()));
        if (!in) break;
    }
    if (in.bad()) throw Error(ErrorKind::io, fmt::format("cannot read data '{}'", name));
    return text;
}

Dataset load_text(const ir::Graph& graph, std::string& text, const std::string& name, LoadNotes* notes) {
    CsvReader reader(text, name);
    DatasetBuilder builder(graph, name);
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

Dataset load_guarded(const ir::Graph& graph, std::string& text, const std::string& name, LoadNotes* notes) {
    try {
        return load_text(graph, text, name, notes);
    } catch (const std::bad_alloc&) {
        throw Error(ErrorKind::limit, fmt::format("{}: not enough memory to load the data", name));
    }
}

}  // namespace

Dataset load_csv(const ir::Graph& graph, const std::string& path, LoadNotes* notes) {
    std::string text;
    try {
        text = read_file(path);
    } catch (const std::bad_alloc&) {
        throw Error(ErrorKind::limit, fmt::format("{}: the file is too large to read into memory", path));
    }
    return load_guarded(graph, text, path, notes);
}

Dataset load_csv(const ir::Graph& graph, std::istream& in, const std::string& name, LoadNotes* notes) {
    std::string text;
    try {
        text = read_stream(in, name);
    } catch (const std::bad_alloc&) {
        throw Error(ErrorKind::limit, fmt::format("{}: the data is too large to read into memory", name));
    }
    return load_guarded(graph, text, name, notes);
}

}  // namespace vbn
