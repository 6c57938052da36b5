// The value coding, the error collector and the pattern-compressing DatasetBuilder.
#include "inference/rng.hpp"
#include "runtime/data/dataset_builder.hpp"
#include "runtime/error.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "tests/runtime/data_graph.hpp"

using namespace vbn;
using vbn::test::make_graph;
using vbn::test::Var;

namespace {

// The error finish() throws (a test fails if it throws none).
Error finish_error(DatasetBuilder& b) {
    try {
        (void)b.finish();
    } catch (const Error& e) {
        return e;
    }
    FAIL("finish() did not throw");
    return Error(ErrorKind::usage, "");
}

// A row as the tests see it, for comparing multisets of patterns.
using CodedRow = std::pair<std::vector<int>, std::vector<double>>;

std::map<CodedRow, double> pattern_counts(const Dataset& d) {
    std::map<CodedRow, double> out;
    for (int p = 0; p < d.patterns; ++p) {
        CodedRow r;
        for (std::size_t c = 0; c < d.binary_columns(); ++c) r.first.push_back(d.value(p, static_cast<int>(c)));
        for (std::size_t c = 0; c < d.real_columns(); ++c) r.second.push_back(d.real_value(p, static_cast<int>(c)));
        out[r] += d.count[static_cast<std::size_t>(p)];
    }
    return out;
}

Dataset build_coded(const ir::Graph& g, const std::vector<CodedRow>& rows) {
    DatasetBuilder b(g, "rows");
    for (const CodedRow& r : rows) {
        std::vector<std::int8_t> bin(r.first.begin(), r.first.end());
        b.add_coded_row(bin, r.second);
    }
    return b.finish();
}

}  // namespace

TEST_CASE("every accepted binary spelling codes to +1 or -1, in any case") {
    for (std::string_view s : {"1", "+1", "true", "TRUE", "True", "yes", "YES", "Yes", "y", "Y", "t", "T"})
        CHECK_MESSAGE(parse_binary_value(s) == std::optional<std::int8_t>(1), s);
    for (std::string_view s : {"-1", "0", "false", "FALSE", "False", "no", "NO", "No", "n", "N", "f", "F"})
        CHECK_MESSAGE(parse_binary_value(s) == std::optional<std::int8_t>(-1), s);
}

TEST_CASE("any decimal spelling of exactly 1, 0 or -1 is that number; a zero takes no sign") {
    BinaryNumber number = BinaryNumber::other;
    for (std::string_view s : {"1", "+1", "1.0", "1.", "01", "1.000", "+1.0", "1e0", "1E+0", "1e-0", "0.1e1", "10e-1",
                               "100E-2", ".1e1", "1.000000000000000000e+00", "1e00000000000000000000"}) {
        CHECK_MESSAGE(parse_binary_value(s, number) == std::optional<std::int8_t>(1), s);
        CHECK(number == BinaryNumber::other);
    }
    for (std::string_view s : {"0", "0.0", "0.", ".0", "00", "0e0", "0.000000000000000000e+00", "0e-999"}) {
        CHECK_MESSAGE(parse_binary_value(s, number) == std::optional<std::int8_t>(-1), s);
        CHECK_MESSAGE(number == BinaryNumber::zero, s);
    }
    for (std::string_view s : {"-1", "-1.0", "-1.", "-01", "-1e0", "-10E-1", "-1.000000000000000000e+00"}) {
        CHECK_MESSAGE(parse_binary_value(s, number) == std::optional<std::int8_t>(-1), s);
        CHECK_MESSAGE(number == BinaryNumber::minus_one, s);
    }
    // The words and missing values are neither number.
    for (std::string_view s : {"no", "false", "n", "f", "yes", "NA", ""}) {
        (void)parse_binary_value(s, number);
        CHECK_MESSAGE(number == BinaryNumber::other, s);
    }
    // Exactly: not the nearest double (1.0000000000000001 and 1e-400 are 1 and 0 as doubles).
    for (std::string_view s : {"1.0000000000000001", "0.99999999999999999", "1e-400", "-0", "+0", "-0.0", "+0e0",
                               "2", "10", "0.5", "1e1", "1e-1", "11", "1.01", "-2", "1e9999999999999999999"})
        CHECK_MESSAGE(!parse_binary_value(s).has_value(), s);
}

TEST_CASE("every missing spelling codes to 0") {
    for (std::string_view s : {"", "NA", "na", "Na", "NaN", "nan", "NAN", "?", "N/A", "n/a", "#N/A", "#n/a", "NULL", "null",
                               "Null", "None", "none", "NONE"}) {
        CHECK_MESSAGE(parse_binary_value(s) == std::optional<std::int8_t>(0), s);
        CHECK_MESSAGE(is_missing_value(s), s);
    }
    for (std::string_view s : {"0", "N", "-", "nil", "NA?", "N/", "/A", "n\x0f" "a", "#NA", "nul", "nonE "})
        CHECK_MESSAGE(!is_missing_value(s), s);
}

TEST_CASE("anything else is not a binary value") {
    for (std::string_view s : {"2", "-0", "01.0.0", "--1", "+-1", "maybe", "tt", "ff", "yess", "tru", "falsey", "N/",
                               " 1", "1 ", "\"1\"", "ye", "nA?", "x", ".", "+", "-", "e1", "1e", "1e+", "0x1", "inf",
                               "1,0", "1.0.", "1 0", "T1", "\x14", "n\x0f" "a"})
        CHECK_MESSAGE(!parse_binary_value(s).has_value(), s);
}

TEST_CASE("a covariate value is a whole, finite real number") {
    double x = 0;
    CHECK((parse_real_value("0.5", x) && x == 0.5));
    CHECK((parse_real_value("-3", x) && x == -3));
    CHECK((parse_real_value("+2.5e-3", x) && x == 2.5e-3));
    CHECK((parse_real_value("1E3", x) && x == 1000));
    CHECK((parse_real_value(".25", x) && x == 0.25));
    x = 7;
    for (std::string_view s : {"", "NA", "nan", "inf", "-inf", "Infinity", "1e999", "abc", "1.5x", "1,5", " 1", "1 ",
                               "+", "-", "++1", "+-1", "0x10", "e5"})
        CHECK_MESSAGE(!parse_real_value(s, x), s);
    CHECK(x == 7);  // untouched on failure
}

TEST_CASE("data errors: the first 20 in full, then a count, at the place of the first") {
    DataErrors errors("d.csv");
    CHECK_NOTHROW(errors.throw_if_any());
    for (int i = 0; i < 25; ++i) errors.add(i + 2, 3, "bad " + std::to_string(i));
    CHECK(errors.count() == 25);
    try {
        errors.throw_if_any();
        FAIL("no throw");
    } catch (const Error& e) {
        const std::string m = e.what();
        CHECK(e.kind() == ErrorKind::data);
        CHECK(e.line() == 2);
        CHECK(e.column() == 3);
        CHECK(m.find("d.csv:2:3: bad 0") == 0);
        CHECK(m.find("d.csv:21:3: bad 19") != std::string::npos);
        CHECK(m.find("bad 20") == std::string::npos);
        CHECK(m.find("\n... and 5 more errors") != std::string::npos);
        CHECK(std::count(m.begin(), m.end(), '\n') == 20);
    }
    CHECK(errors.where(0, 0) == "d.csv");
    CHECK(errors.where(4, 0) == "d.csv:4");
}

TEST_CASE("builder columns: observed binary elements and covariates in element order, hidden nodes without one") {
    const auto g = make_graph({{"h", ir::VariableKind::binary, true, 2},
                               {"x", ir::VariableKind::covariate},
                               {"y", ir::VariableKind::binary},
                               {"v", ir::VariableKind::binary, false, 3}});
    DatasetBuilder b(g, "rows");
    CHECK(b.binary_columns() == 4);
    CHECK(b.real_columns() == 1);
    const std::int8_t bin[] = {1, -1, 0, 1};
    const double real[] = {0.5};
    b.add_coded_row(bin, real);
    const Dataset d = b.finish();
    CHECK(d.binary_names == std::vector<std::string>{"y", "v[1]", "v[2]", "v[3]"});
    CHECK(d.real_names == std::vector<std::string>{"x"});
    CHECK(d.column_of == std::vector<int>{-1, -1, 0, 0, 1, 2, 3});
    CHECK(d.rows == 1);
    CHECK(d.patterns == 1);
    CHECK(d.value(0, 0) == 1);
    CHECK(d.value(0, 1) == -1);
    CHECK(d.value(0, 2) == 0);
    CHECK(d.value(0, 3) == 1);
    CHECK(d.real_value(0, 0) == 0.5);
    CHECK(d.missing == std::vector<long>{0, 0, 1, 0});
    CHECK(d.first_line == std::vector<long>{1});
}

TEST_CASE("identical rows are one pattern with a count, in order of first appearance") {
    const auto g = make_graph({{"a"}, {"b"}, {"x", ir::VariableKind::covariate}});
    const std::vector<CodedRow> rows = {
        {{1, -1}, {0.5}}, {{1, -1}, {0.5}}, {{-1, 0}, {0.5}}, {{1, -1}, {1.5}},
        {{-1, 0}, {0.5}}, {{1, -1}, {0.5}}, {{0, 0}, {2.0}},
    };
    const Dataset d = build_coded(g, rows);
    CHECK(d.rows == 7);
    REQUIRE(d.patterns == 4);
    CHECK(d.count == std::vector<double>{3, 2, 1, 1});
    CHECK(d.first_line == std::vector<long>{1, 3, 4, 7});
    CHECK(d.value(1, 0) == -1);
    CHECK(d.value(1, 1) == 0);
    CHECK(d.real_value(2, 0) == 1.5);
    CHECK(d.missing == std::vector<long>{1, 3});
}

TEST_CASE("covariates are compared by bit pattern: 0 and -0 are different patterns") {
    const auto g = make_graph({{"x", ir::VariableKind::covariate}});
    const Dataset d = build_coded(g, {{{}, {0.0}}, {{}, {-0.0}}, {{}, {0.0}}});
    CHECK(d.patterns == 2);
    CHECK(d.count == std::vector<double>{2, 1});
    CHECK(std::signbit(d.real_value(1, 0)));
}

TEST_CASE("duplicated and shuffled rows give the same multiset of patterns") {
    const auto g = make_graph({{"v", ir::VariableKind::binary, false, 5}, {"x", ir::VariableKind::covariate}});
    inference::Rng rng(20240611);
    std::vector<CodedRow> rows;
    for (int t = 0; t < 2000; ++t) {
        CodedRow r;
        for (int c = 0; c < 5; ++c) {
            const double u = rng.uniform();
            r.first.push_back(u < 0.1 ? 0 : u < 0.6 ? 1 : -1);
        }
        r.second.push_back(static_cast<double>(rng.below(3)) * 0.5);
        rows.push_back(r);
    }
    const Dataset base = build_coded(g, rows);
    const auto counts = pattern_counts(base);

    // Against a plain count of the rows.
    std::map<CodedRow, double> expected;
    for (const CodedRow& r : rows) expected[r] += 1;
    CHECK(counts == expected);
    CHECK(base.patterns == static_cast<int>(expected.size()));

    // Patterns come in order of first appearance, with the line of that first row.
    std::map<CodedRow, int> first_seen;
    std::vector<CodedRow> order;
    for (std::size_t t = 0; t < rows.size(); ++t)
        if (first_seen.emplace(rows[t], static_cast<int>(t) + 1).second) order.push_back(rows[t]);
    for (int p = 0; p < base.patterns; ++p) {
        const CodedRow& r = order[static_cast<std::size_t>(p)];
        for (int c = 0; c < 5; ++c) CHECK(base.value(p, c) == r.first[static_cast<std::size_t>(c)]);
        CHECK(base.first_line[static_cast<std::size_t>(p)] == first_seen[r]);
    }

    std::vector<CodedRow> shuffled = rows;
    for (std::size_t i = shuffled.size() - 1; i > 0; --i) std::swap(shuffled[i], shuffled[rng.below(i + 1)]);
    CHECK(pattern_counts(build_coded(g, shuffled)) == counts);

    std::vector<CodedRow> doubled = rows;
    doubled.insert(doubled.end(), shuffled.begin(), shuffled.end());
    const Dataset twice = build_coded(g, doubled);
    CHECK(twice.rows == 4000);
    CHECK(twice.patterns == base.patterns);
    for (const auto& [row, n] : pattern_counts(twice)) CHECK(n == 2 * counts.at(row));
    for (std::size_t c = 0; c < 5; ++c) CHECK(twice.missing[c] == 2 * base.missing[c]);
}

TEST_CASE("many distinct rows over several packed words survive the hash table intact") {
    // 70 columns span three 64-bit words of 2-bit codes; 30000 random rows are nearly all distinct.
    const auto g = make_graph({{"v", ir::VariableKind::binary, false, 70}});
    inference::Rng rng(7);
    std::vector<CodedRow> rows;
    for (int t = 0; t < 30000; ++t) {
        CodedRow r;
        for (int c = 0; c < 70; ++c) r.first.push_back(static_cast<int>(rng.below(3)) - 1);
        rows.push_back(r);
        if (t % 3 == 0) rows.push_back(r);  // some repeats
    }
    const Dataset d = build_coded(g, rows);
    std::map<CodedRow, double> expected;
    for (const CodedRow& r : rows) expected[r] += 1;
    CHECK(d.rows == static_cast<long>(rows.size()));
    CHECK(d.patterns == static_cast<int>(expected.size()));
    CHECK(pattern_counts(d) == expected);
}

TEST_CASE("text rows: values coded, bad values collected with line, column and name") {
    const auto g = make_graph({{"y"}, {"x", ir::VariableKind::covariate}});
    DatasetBuilder b(g, "mem");
    const std::string_view r1[] = {"yes", "1.5"};
    const std::string_view r2[] = {"maybe", "NA"};
    const std::string_view r3[] = {"1"};
    b.add_text_row(r1, 10);
    b.add_text_row(r2, 11);
    b.add_text_row(r3, 12);
    CHECK(b.rows() == 1);
    CHECK(b.errors().count() == 3);
    try {
        (void)b.finish();
        FAIL("no throw");
    } catch (const Error& e) {
        const std::string m = e.what();
        CHECK(e.line() == 11);
        CHECK(e.column() == 1);
        CHECK(m.find("mem:11:1: column 'y': 'maybe' is not a binary value; expected 1/-1 or 1/0 (also written as "
                     "decimals: 1.0, -1.0, 0.0), true/false, t/f, yes/no or y/n (in any case), or a missing value "
                     "(empty, NA, N/A, NaN, NULL, None, ?)") != std::string::npos);
        CHECK(m.find("mem:11:2: column 'x': covariate values may not be missing (found 'NA')") != std::string::npos);
        CHECK(m.find("mem:12:2: this row has 1 field but the header has 2") != std::string::npos);
    }
}

TEST_CASE("coded rows: bad codes and non-finite reals are errors; wrong lengths are usage errors") {
    const auto g = make_graph({{"y"}, {"x", ir::VariableKind::covariate}});
    DatasetBuilder b(g, "mem");
    const std::int8_t ok[] = {1};
    const std::int8_t bad[] = {3};
    const double fine[] = {0.0};
    const double inf[] = {std::numeric_limits<double>::infinity()};
    b.add_coded_row(ok, fine);
    b.add_coded_row(bad, fine);
    b.add_coded_row(ok, inf);
    CHECK_THROWS_AS(b.add_coded_row(std::span<const std::int8_t>{}, fine), Error);
    try {
        (void)b.finish();
        FAIL("no throw");
    } catch (const Error& e) {
        const std::string m = e.what();
        CHECK(e.kind() == ErrorKind::data);
        CHECK(m.find("mem:2:1: column 'y': code 3 is not +1, -1 or 0") != std::string::npos);
        CHECK(m.find("mem:3:2: column 'x': inf is not a finite real number") != std::string::npos);
    }
}

TEST_CASE("a builder with no rows is an error") {
    const auto g = make_graph({{"y"}});
    DatasetBuilder b(g, "mem");
    CHECK_THROWS_AS(b.finish(), Error);
}

TEST_CASE("a header maps named source columns; it must come before the rows") {
    const auto g = make_graph({{"a"}, {"b"}});
    DatasetBuilder b(g, "mem");
    const std::string_view names[] = {"b", "id", "a"};
    LoadNotes notes;
    b.set_header(names, 1, &notes);
    CHECK(notes.notices.size() == 1);
    const std::string_view row[] = {"no", "17", "yes"};
    b.add_text_row(row, 2);
    try {
        b.set_header(names, 1, &notes);
        FAIL("no throw");
    } catch (const Error& e) {
        CHECK(e.kind() == ErrorKind::usage);
    }
    const Dataset d = b.finish();
    CHECK(d.value(0, 0) == 1);   // a
    CHECK(d.value(0, 1) == -1);  // b
}

TEST_CASE("text rows: a column holding both 0 and -1 is one error at the later of the two, naming both") {
    const auto g = make_graph({{"a"}, {"b"}});
    for (const bool minus_first : {true, false}) {
        CAPTURE(minus_first);
        DatasetBuilder b(g, "mem");
        const std::string_view zero[] = {"0", "1.0"}, minus[] = {"-1.0", "1"}, words[] = {"no", "false"};
        b.add_text_row(words, 1);
        b.add_text_row(minus_first ? minus : zero, 2);
        b.add_text_row(minus_first ? zero : minus, 3);
        b.add_text_row(zero, 4);
        b.add_text_row(minus, 5);
        CHECK(b.rows() == 5);
        const Error e = finish_error(b);
        const std::string m = e.what();
        CHECK(e.kind() == ErrorKind::data);
        CHECK(e.line() == 3);
        CHECK(e.column() == 1);
        CHECK(m.find(fmt::format("mem:3:1: column 'a' mixes the 1/0 and 1/-1 codings: its 0s (the first at mem:{}:1) "
                                 "and its -1s (the first at mem:{}:1) would both be read as -1",
                                 minus_first ? 3 : 2, minus_first ? 2 : 3)) == 0);
        CHECK(std::count(m.begin(), m.end(), '\n') == 0);
    }
    // In different columns, or as words, or as coded rows, either coding is fine.
    DatasetBuilder b(g, "mem");
    const std::string_view r1[] = {"0", "-1"}, r2[] = {"no", "1"}, r3[] = {"1", "n"};
    b.add_text_row(r1, 1);
    b.add_text_row(r2, 2);
    b.add_text_row(r3, 3);
    CHECK(b.finish().rows == 3);
}
