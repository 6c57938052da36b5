// Golden files: every tests/lang/bad/NAME.vbn is compiled and its diagnostics must equal
// NAME.expected byte for byte, so a message changes only on purpose. Files named warn_*
// must compile (with warnings); all others must fail.
#include "lang/frontend.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace vbn;

namespace {

std::string read_file(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
}

// The first line that differs, then both texts in full: enough to see what changed.
std::string diff(const std::string& expected, const std::string& actual) {
    const auto e = lines_of(expected), a = lines_of(actual);
    std::size_t k = 0;
    while (k < e.size() && k < a.size() && e[k] == a[k]) ++k;
    std::ostringstream out;
    out << "first difference at line " << k + 1 << ":\n"
        << "  expected: " << (k < e.size() ? e[k] : "<end of text>") << "\n"
        << "  actual:   " << (k < a.size() ? a[k] : "<end of text>") << "\n"
        << "--- expected ---\n" << expected << "--- actual ---\n" << actual << "---";
    return out.str();
}

std::vector<fs::path> models(const fs::path& dir) {
    std::vector<fs::path> out;
    for (const auto& entry : fs::directory_iterator(dir))
        if (entry.is_regular_file() && entry.path().extension() == ".vbn") out.push_back(entry.path());
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace

TEST_CASE("every bad model gives exactly the diagnostics in its .expected file") {
    const fs::path dir = fs::path(VBN_SOURCE_DIR) / "tests" / "lang" / "bad";
    const auto files = models(dir);
    REQUIRE(!files.empty());
    for (const auto& model : files) {
        const std::string name = model.filename().string();
        SUBCASE(name.c_str()) {
            fs::path expected_path = model;
            expected_path.replace_extension(".expected");
            INFO("golden file ", expected_path.string());
            REQUIRE_MESSAGE(fs::exists(expected_path), name, " has no .expected file beside it");

            lang::Source source{name, read_file(model)};
            lang::Diagnostics diag{source};
            const auto graph = lang::compile(source, diag);
            const std::string actual = diag.format();
            const std::string expected = read_file(expected_path);
            CHECK_MESSAGE(actual == expected, diff(expected, actual));
            if (name.rfind("warn_", 0) == 0) {
                CHECK(graph.has_value());
                CHECK(diag.error_count() == 0);
            } else {
                CHECK(!graph.has_value());
                CHECK(diag.error_count() > 0);
            }
        }
    }
}
