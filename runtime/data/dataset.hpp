// Observations of a model's nodes and covariates, coded ±1 (0 = missing) and compressed
// into weighted patterns: identical rows are stored once with a count (docs/design.md §1).
#pragma once

#include "lang/ir.hpp"

#include <cstdint>
#include <istream>
#include <string>
#include <vector>

namespace vbn {

struct Dataset {
    std::string name;                 // display name for messages (usually the CSV path)
    long rows = 0;                    // T, the number of data rows read

    // Columns. Binary columns hold observed node elements, real columns covariate elements.
    // column_of[e] for graph element e: index into binary_names (binary node), into
    // real_names (covariate), or -1 for a hidden node.
    std::vector<int> column_of;
    std::vector<std::string> binary_names;
    std::vector<std::string> real_names;

    // Patterns: distinct rows in order of first appearance.
    int patterns = 0;
    std::vector<std::int8_t> binary;  // patterns × binary_names.size(), row-major: +1, -1, 0 missing
    std::vector<double> real;         // patterns × real_names.size(), row-major
    std::vector<double> count;        // rows per pattern (sums to `rows`)
    std::vector<long> first_line;     // CSV line of each pattern's first row (1 = header)

    std::vector<long> missing;        // per binary column: rows with the value missing

    // Per data row in input order, its pattern. Empty unless the builder was asked to keep
    // it (DatasetBuilder::keep_row_patterns), for outputs that go row by row (predictions).
    std::vector<int> row_pattern;

    // Frees the patterns' values, counts and lines (and row_pattern), keeping the columns, the
    // number of patterns and the missing counts: for a fit that owns its data once the target
    // holds its own copy of them (services::fit given a Dataset&&). At 10^6 rows x 10
    // covariates that is 96 MB. A target built from what is left is refused (Families checks
    // that the values fill patterns x columns).
    void drop_values();

    std::size_t binary_columns() const { return binary_names.size(); }
    std::size_t real_columns() const { return real_names.size(); }
    // More than 2^20 values in the patterns (8 MB): a second copy of the data's families, as
    // the variational fit builds for itself, then costs more memory than it saves time, so
    // fit and vb run the fit on the exact target's families instead. At 2 x 10^5 rows x 10
    // covariates two copies and their construction buffers made a peak of 177 MB against 125.
    bool large() const {
        const double values = static_cast<double>(patterns) * static_cast<double>(binary_columns() + real_columns());
        return values > static_cast<double>(1 << 20);
    }
    std::int8_t value(int pattern, int binary_column) const {
        return binary[static_cast<std::size_t>(pattern) * binary_names.size() + static_cast<std::size_t>(binary_column)];
    }
    double real_value(int pattern, int real_column) const {
        return real[static_cast<std::size_t>(pattern) * real_names.size() + static_cast<std::size_t>(real_column)];
    }
};

// Messages that are not errors (an ignored extra column, say), for the caller to print.
struct LoadNotes {
    std::vector<std::string> notices;
};

// Reads a CSV file (RFC 4180) against a model (docs/design.md §2, "Data"). Throws vbn::Error
// of kind data (naming file, line and column) or io.
// keep_row_patterns: record each row's pattern (Dataset::row_pattern), as predictions need.
Dataset load_csv(const ir::Graph& graph, const std::string& path, LoadNotes* notes = nullptr, bool keep_row_patterns = false);
Dataset load_csv(const ir::Graph& graph, std::istream& in, const std::string& name, LoadNotes* notes = nullptr,
                 bool keep_row_patterns = false);

// The rows of a CSV file dealt into `shards` fixed slices by their order, data row i (0-based)
// into shard i mod shards, whatever the number of processes that hold them: a run whose rows
// are sharded over MPI ranks (runtime/distributed/) keeps only shards first … last - 1, each as
// a Dataset of its own, and reads past the other rows without checking their values (the rank
// that keeps them does). Throws as load_csv, and Error(data) when the file has fewer data rows
// than shards.
std::vector<Dataset> load_csv_shards(const ir::Graph& graph, const std::string& path, int shards, int first, int last,
                                     LoadNotes* notes = nullptr);

}  // namespace vbn
