#include "runtime/data/dataset.hpp"

#include "runtime/data/csv.hpp"
#include "runtime/data/dataset_builder.hpp"
#include "runtime/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <new>
#include <vector>

namespace vbn {

namespace {

// The data are read a chunk at a time (runtime/data/csv.hpp) and kept only as patterns, so
// loading holds O(patterns + chunk) memory, not the file.
Dataset load_stream(const ir::Graph& graph, std::istream& in, const std::string& name, LoadNotes* notes, bool keep_rows) {
    CsvReader reader(in, name);
    DatasetBuilder builder(graph, name);
    if (keep_rows) builder.keep_row_patterns();
    if (!reader.next())
        throw Error(ErrorKind::data,
                    fmt::format("{}: the file is empty; expected a header row naming the columns, then one row per "
                                "observation",
                                name));
    if (notes && reader.separator() != ',') notes->notices.push_back(reader.separator_notice());
    builder.set_header(reader.fields(), reader.line(), notes);
    try {
        while (reader.next()) builder.add_text_row(reader.fields(), reader.line());
    } catch (const Error& e) {
        // A broken record structure (an unterminated quote, binary bytes) ends the reading;
        // it is reported after the value errors met before it.
        if (e.kind() != ErrorKind::data) throw;
        builder.errors().add_placed(e.line(), e.column(), e.what());
    }
    return builder.finish();
}

Dataset load_guarded(const ir::Graph& graph, std::istream& in, const std::string& name, LoadNotes* notes, bool keep_rows) {
    try {
        return load_stream(graph, in, name, notes, keep_rows);
    } catch (const std::bad_alloc&) {
        throw Error(ErrorKind::limit, fmt::format("{}: not enough memory to load the data", name));
    }
}

std::ifstream open_data_file(const std::string& path) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
        throw Error(ErrorKind::io, fmt::format("cannot read data file '{}': it is a directory", path));
    errno = 0;
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(ErrorKind::io, fmt::format("cannot open data file '{}': {}", path, std::strerror(errno)));
    return in;
}

// One builder per kept shard; the header goes to each, the notes from the first only.
std::vector<Dataset> load_shards_stream(const ir::Graph& graph, std::istream& in, const std::string& name, int shards,
                                        int first, int last, LoadNotes* notes) {
    CsvReader reader(in, name);
    std::vector<DatasetBuilder> builders;
    for (int k = first; k < last; ++k) builders.emplace_back(graph, name);
    if (!reader.next())
        throw Error(ErrorKind::data, fmt::format("{}: the file is empty; expected a header row naming the columns", name));
    if (notes && reader.separator() != ',') notes->notices.push_back(reader.separator_notice());
    for (std::size_t k = 0; k < builders.size(); ++k) builders[k].set_header(reader.fields(), reader.line(), k ? nullptr : notes);
    long row = 0;
    try {
        for (; reader.next(); ++row) {
            const auto shard = static_cast<int>(row % shards);
            if (shard >= first && shard < last)
                builders[static_cast<std::size_t>(shard - first)].add_text_row(reader.fields(), reader.line());
            // The first builder sees every row's coding: a column that mixes 1/0 with 1/-1
            // anywhere in the file fails on every rank, as it does unsharded.
            if (shard != first && !builders.empty()) builders.front().note_codings(reader.fields(), reader.line());
        }
    } catch (const Error& e) {
        if (e.kind() != ErrorKind::data) throw;
        if (builders.empty()) throw;
        builders.front().errors().add_placed(e.line(), e.column(), e.what());
    }
    if (row < shards)
        throw Error(ErrorKind::data, fmt::format("{}: {} data row{} cannot be dealt into {} shards; ask for at most {} "
                                                 "(--shards)",
                                                 name, row, row == 1 ? "" : "s", shards, std::max(1L, row)));
    std::vector<Dataset> out;
    for (auto& b : builders) out.push_back(b.finish());
    return out;
}

}  // namespace

std::vector<Dataset> load_csv_shards(const ir::Graph& graph, const std::string& path, int shards, int first, int last,
                                     LoadNotes* notes) {
    if (shards < 1 || first < 0 || first > last || last > shards)
        throw Error(ErrorKind::usage, fmt::format("shards {} … {} of {} do not exist", first, last - 1, shards));
    std::ifstream in = open_data_file(path);
    try {
        return load_shards_stream(graph, in, path, shards, first, last, notes);
    } catch (const std::bad_alloc&) {
        throw Error(ErrorKind::limit, fmt::format("{}: not enough memory to load the data", path));
    }
}

void Dataset::drop_values() {
    // Swapped with empty vectors, not cleared: clear() keeps the capacity.
    std::vector<std::int8_t>().swap(binary);
    std::vector<double>().swap(real);
    std::vector<double>().swap(count);
    std::vector<long>().swap(first_line);
    std::vector<int>().swap(row_pattern);
}

Dataset load_csv(const ir::Graph& graph, const std::string& path, LoadNotes* notes, bool keep_row_patterns) {
    std::ifstream in = open_data_file(path);
    return load_guarded(graph, in, path, notes, keep_row_patterns);
}

Dataset load_csv(const ir::Graph& graph, std::istream& in, const std::string& name, LoadNotes* notes,
                 bool keep_row_patterns) {
    return load_guarded(graph, in, name, notes, keep_row_patterns);
}

}  // namespace vbn
