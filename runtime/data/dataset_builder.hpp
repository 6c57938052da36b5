// Builds a Dataset one row at a time (docs/design.md §1 "Patterns, not rows", §2 "Data"): the
// CSV loader feeds it text fields, and in-memory data can be fed as text or already coded.
//
//   DatasetBuilder b(graph, "data.csv");
//   b.set_header(names, 1, &notes);           // optional: map source columns by name
//   while (...) b.add_text_row(fields, line);  // values as written: "1", "no", "NA", "0.25"
//   Dataset d = b.finish();
//
// Rows identical over all columns (binary codes, and covariate values bit for bit) become one
// pattern with a count; patterns keep the order of their first row, so the result does not
// depend on anything but the data.
#pragma once

#include "lang/ir.hpp"
#include "runtime/data/dataset.hpp"
#include "runtime/data/row_blocks.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vbn {

// Value coding (docs/language.md, "Data"), case-insensitive.
// Binary: true, t, yes, y, and any decimal number equal to 1 (1, +1, 1.0, 1e0,
// 1.000000e+00) -> +1; false, f, no, n, and any decimal number equal to 0 or -1 (0, 0.0,
// -1, -1.0) -> -1; a missing value -> 0; anything else -> nullopt. A zero takes no sign:
// -0 is refused rather than guessed at.
std::optional<std::int8_t> parse_binary_value(std::string_view text);
// The same, also saying whether the value was the number 0 or the number -1: the 1/0 and the
// 1/-1 codings both read those as -1, so one column may not hold both.
enum class BinaryNumber : std::uint8_t { other, zero, minus_one };
std::optional<std::int8_t> parse_binary_value(std::string_view text, BinaryNumber& number);
// The spellings of a missing value, case-insensitive: empty, NA, N/A, #N/A, NaN, NULL,
// None, ?.
bool is_missing_value(std::string_view text);
// Covariates: the whole text is a finite real number (an optional sign, digits, a decimal
// point, an exponent). Returns false otherwise.
bool parse_real_value(std::string_view text, double& value);

// Data errors gathered over a whole input so that one run reports many: the first
// `max_messages` in full, then how many more there were. The thrown vbn::Error carries
// the line and column of the first.
class DataErrors {
public:
    static constexpr std::size_t max_messages = 20;

    explicit DataErrors(std::string name) : name_(std::move(name)) {}

    // `message` says what is wrong; "NAME:LINE:COLUMN: " is put in front (the column is left
    // out when 0, line and column when the line is 0).
    void add(long line, long column, std::string_view message);
    // A message that already names its place (a vbn::Error from the CSV reader, say).
    void add_placed(long line, long column, std::string message);

    bool empty() const { return count_ == 0; }
    long count() const { return count_; }
    // Throws one vbn::Error of kind data holding every message, if there were any.
    void throw_if_any() const;

    // "NAME:LINE:COLUMN" as messages print it.
    std::string where(long line, long column) const;
    const std::string& name() const { return name_; }

private:
    std::string name_;
    std::vector<std::string> messages_;
    long count_ = 0;
    long first_line_ = 0;
    long first_column_ = 0;
};

// Rows already seen, keyed on the packed row: an open-addressing hash table whose keys live
// in one flat array, so a million distinct rows cost a few words each and no allocation.
class PatternTable {
public:
    explicit PatternTable(std::size_t words);

    // The pattern equal to `key` (words() words), and whether it was new.
    std::pair<int, bool> insert(const std::uint64_t* key);
    int size() const { return size_; }
    std::size_t words() const { return words_; }
    const std::uint64_t* key(int pattern) const { return keys_.row(static_cast<std::size_t>(pattern)); }
    void release();

private:
    std::uint64_t hash(const std::uint64_t* key) const;
    void grow();

    std::size_t words_;
    int size_ = 0;
    RowBlocks<std::uint64_t> keys_;     // patterns × words_, in blocks that never move
    std::vector<std::uint64_t> slots_;  // (pattern + 1) << 32 | hash bits, 0 empty; a power of two
};

class DatasetBuilder {
public:
    // Columns of the result: the graph's observed binary node elements (binary columns) and
    // covariate elements (real columns), each in element order. `name` is what messages
    // print, usually the CSV path.
    DatasetBuilder(const ir::Graph& graph, std::string name);

    std::size_t binary_columns() const { return out_.binary_names.size(); }
    std::size_t real_columns() const { return out_.real_names.size(); }

    // Maps source columns to the model by name: `y` for a scalar, `v[3]` or `v.3` for an
    // array element. Every observed node element and covariate needs a column; columns for
    // hidden nodes and duplicates are errors, thrown together as one vbn::Error (kind data).
    // Columns the model does not know are ignored, with one notice added to `notes`.
    // Call it before any row. Without a header, source columns are the binary columns then
    // the real columns.
    void set_header(std::span<const std::string_view> names, long line, LoadNotes* notes);

    // One row of values as written, one per source column. Bad values are collected (see
    // errors()) and the row is dropped; `line` is what messages and first_line report.
    void add_text_row(std::span<const std::string_view> fields, long line);

    // Only the binary columns' coding of a row that is not added (another shard's): the 0s
    // and -1s it holds, so that finish() finds a column that mixes the two codings anywhere
    // in the file, as it would had every row been added.
    void note_codings(std::span<const std::string_view> fields, long line) { note_pending(fields, line); }

    // One row already coded: binary_columns() values in {+1, -1, 0 = missing} and
    // real_columns() finite reals. `line` 0 stands for the row's number (1-based). Bad
    // codes are collected like bad text; wrong lengths throw vbn::Error of kind usage.
    void add_coded_row(std::span<const std::int8_t> binary, std::span<const double> real, long line = 0);

    // Also record each row's pattern in Dataset::row_pattern. Call it before any row.
    void keep_row_patterns() { keep_row_patterns_ = true; }

    long rows() const { return out_.rows; }
    DataErrors& errors() { return errors_; }

    // The dataset; call once, last. Throws the collected errors, or an error if no row was
    // added.
    Dataset finish();

private:
    struct Target {
        std::size_t source = 0;  // source column, 0-based
        int column = 0;          // binary or real column of the result
        bool binary = true;
        std::string name;        // as the source names it, for messages
        // Binary columns: whether the column held the number 0 (bit 0) and the number -1
        // (bit 1), and the line of the first of each. The 1/0 and 1/-1 codings both read them
        // as -1, so a column may hold only one of them.
        std::uint8_t numbers_seen = 0;
        long first_zero = 0;
        long first_minus = 0;
    };

    void commit(long line);
    void set_real(int column, double value);
    void check_codings();
    void note_number(Target& t, std::uint8_t number, long line);
    void note_pending(std::span<const std::string_view> fields, long line);
    void reset_pending();

    const ir::Graph* graph_;
    Dataset out_;
    DataErrors errors_;
    std::vector<Target> targets_;
    // Binary targets that have not held the number 0 (the number -1) yet, written "0" ("-1"):
    // the fast path only notes that a row holds one, and these are looked at then.
    std::vector<std::uint32_t> pending_zero_;
    std::vector<std::uint32_t> pending_minus_;
    bool keep_row_patterns_ = false;
    bool listed_binary_ = false;  // a message listed the binary spellings
    std::size_t source_columns_ = 0;
    long header_line_ = 0;
    long coded_rows_ = 0;
    std::size_t binary_words_ = 0;     // packed binary codes: 2 bits per column
    std::vector<std::uint64_t> key_;   // the packed current row
    PatternTable table_;
};

}  // namespace vbn
