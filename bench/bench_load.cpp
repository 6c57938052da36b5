// Loading a large CSV: 10^6 rows × 50 binary columns, the size docs/design.md's data side is
// built for. Two files: every row distinct (the hash table's worst case, nothing compresses)
// and rows drawn from 200 prototypes (the usual case for binary data, heavy compression).
//
// Counters: rows and patterns loaded, file size, and the process's peak resident set size
// (getrusage ru_maxrss), which includes the file text held while parsing.
#include "inference/rng.hpp"
#include "runtime/data/dataset.hpp"

#include <benchmark/benchmark.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

constexpr int kRows = 1'000'000;
constexpr int kColumns = 50;
constexpr int kPrototypes = 200;

namespace fs = std::filesystem;

// node v[50] ~ ...; only the elements matter to the loader.
vbn::ir::Graph make_graph() {
    vbn::ir::Graph g;
    g.name = "bench.vbn";
    vbn::ir::Variable v;
    v.name = "v";
    v.is_array = true;
    v.size = kColumns;
    g.variables.push_back(v);
    for (int k = 0; k < kColumns; ++k) {
        vbn::ir::Element el;
        el.index = k;
        el.name = "v[" + std::to_string(k + 1) + "]";
        g.elements.push_back(el);
    }
    g.cpds.resize(g.elements.size());
    return g;
}

const char* cell(double u) { return u < 0.02 ? "NA" : u < 0.51 ? "1" : "-1"; }

// Writes the file row by row through stdio's buffer, so generating it costs no memory.
void write_file(const fs::path& path, bool distinct) {
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "wb"), &std::fclose);
    if (!f) throw std::runtime_error("cannot write " + path.string());
    vbn::inference::Rng rng(20240611, distinct ? 1 : 2);
    for (int k = 0; k < kColumns; ++k) std::fprintf(f.get(), "%sv[%d]", k ? "," : "", k + 1);
    std::fputc('\n', f.get());
    std::vector<std::string> prototypes;
    for (int p = 0; p < kPrototypes; ++p) {
        std::string row;
        for (int k = 0; k < kColumns; ++k) row += std::string(k ? "," : "") + cell(rng.uniform());
        prototypes.push_back(row + "\n");
    }
    for (int t = 0; t < kRows; ++t) {
        if (!distinct) {
            std::fputs(prototypes[rng.below(kPrototypes)].c_str(), f.get());
            continue;
        }
        for (int k = 0; k < kColumns; ++k) {
            if (k) std::fputc(',', f.get());
            std::fputs(cell(rng.uniform()), f.get());
        }
        std::fputc('\n', f.get());
    }
}

// The generated files live in one temporary directory, removed at exit.
struct Files {
    fs::path dir = fs::temp_directory_path() / ("vbn_bench_load_" + std::to_string(::getpid()));
    Files() { fs::create_directories(dir); }
    ~Files() {
        std::error_code ec;
        fs::remove_all(dir, ec);
    }
    fs::path get(bool distinct) {
        const fs::path p = dir / (distinct ? "distinct.csv" : "prototypes.csv");
        if (!fs::exists(p)) write_file(p, distinct);
        return p;
    }
};

Files& files() {
    static Files f;
    return f;
}

double peak_rss_mb() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

void load(benchmark::State& state, bool distinct) {
    const vbn::ir::Graph g = make_graph();
    const fs::path path = files().get(distinct);
    const auto bytes = static_cast<std::int64_t>(fs::file_size(path));
    long rows = 0;
    int patterns = 0;
    for (auto _ : state) {
        const vbn::Dataset d = vbn::load_csv(g, path.string());
        rows = d.rows;
        patterns = d.patterns;
        benchmark::DoNotOptimize(d.binary.data());
    }
    state.SetBytesProcessed(state.iterations() * bytes);
    state.counters["rows"] = static_cast<double>(rows);
    state.counters["patterns"] = patterns;
    state.counters["file_MB"] = static_cast<double>(bytes) / (1 << 20);
    state.counters["peak_rss_MB"] = peak_rss_mb();
}

void BM_load_distinct_rows(benchmark::State& state) { load(state, true); }
void BM_load_prototype_rows(benchmark::State& state) { load(state, false); }

}  // namespace

BENCHMARK(BM_load_distinct_rows)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(3.0);
BENCHMARK(BM_load_prototype_rows)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(3.0);

BENCHMARK_MAIN();
