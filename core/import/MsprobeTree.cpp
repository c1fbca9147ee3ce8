// readStatCsv: see MsprobeTree.h. The header varies with the monitor's version and configuration (the ops it
// was asked for, micro steps, shape and dtype columns), so columns are found by name.
#include "import/MsprobeTree.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <fmt/format.h>
#include <stdexcept>

namespace rs::msprobe {
namespace {

// The columns of one csv, -1 where it has none.
struct Columns {
    int name = -1, step = -1, micro = -1, vpp = -1, scope = -1;
    int norm = -1, min = -1, max = -1, mean = -1, nans = -1, shape = -1;

    explicit Columns(const CsvTable& csv) {
        for (const char* n : {"name", "module_name", "param_name"})
            if (name < 0)
                name = csv.column(n);
        step = csv.column("step");
        micro = csv.column("micro_step");
        vpp = csv.column("vpp_stage");
        scope = csv.column("scope");
        norm = csv.column("norm");
        min = csv.column("min");
        max = csv.column("max");
        mean = csv.column("mean");
        nans = csv.column("nans");
        shape = csv.column("shape");
    }
};

// Monitor V2's row kinds: the monitor (from the file name) and the row's scope. nullopt: a row no run-file
// column holds.
std::optional<Kind> kindOfScope(const std::string& monitor, const std::string& scope) {
    if (monitor == "weight_grad" && scope == "unreduced")
        return kUnreduced;
    if (monitor == "weight_grad" && scope == "reduced")
        return kReduced;
    if (monitor == "param" && scope == "param_origin")
        return kParamOrigin;
    if (monitor == "param" && scope == "param_updated")
        return kParamUpdated;
    return std::nullopt;
}

// "[4096, 4096]", "(4096, 4096)", "torch.Size([4096, 4096])", "4096x4096", "[]" -> dims; nullopt if
// unparsable.
std::optional<std::vector<int64_t>> parseShape(const std::string& text) {
    std::vector<int64_t> dims;
    int64_t cur = -1;
    bool any = false;
    for (char c : text) {
        if (std::isdigit(static_cast<unsigned char>(c))) {
            if (cur > (int64_t(1) << 40))
                return std::nullopt;
            cur = (cur < 0 ? 0 : cur * 10) + (c - '0');
            any = true;
        } else {
            if (cur >= 0)
                dims.push_back(cur);
            cur = -1;
            if (!(c == '[' || c == ']' || c == '(' || c == ')' || c == ',' || c == ' ' || c == 'x' ||
                  std::isalpha(static_cast<unsigned char>(c)) || c == '.'))
                return std::nullopt;
        }
    }
    if (cur >= 0)
        dims.push_back(cur);
    if (!any && text.find('[') == std::string::npos && text.find('(') == std::string::npos)
        return std::nullopt;
    return dims;
}

int64_t product(const std::vector<int64_t>& dims) {
    int64_t n = 1;
    for (int64_t d : dims)
        if (__builtin_mul_overflow(n, d, &n))
            return -1;
    return n;
}

int paramOf(Tree& t, const std::string& name, const std::optional<std::vector<int64_t>>& shape) {
    auto [it, inserted] = t.paramIndex.emplace(name, int(t.names.size()));
    if (inserted) {
        t.names.push_back(name);
        t.shapes.push_back(shape.value_or(std::vector<int64_t>{}));
        t.numel.push_back(shape ? product(*shape) : -1);
    } else if (shape && t.numel[size_t(it->second)] < 0) {
        t.shapes[size_t(it->second)] = *shape;
        t.numel[size_t(it->second)] = product(*shape);
    }
    return it->second;
}

// Which statistics the tree has, per kind: what is absent from the run file follows from these.
void noteColumns(Tree& t, Kind kind, const Columns& o) {
    const bool grad = kind == kUnreduced || kind == kReduced;
    t.anyMin |= grad && o.min >= 0;
    t.anyMax |= grad && o.max >= 0;
    t.anyNans |= kind == kUnreduced && o.nans >= 0;
    t.anyMeanUnreduced |= kind == kUnreduced && o.mean >= 0;
    t.anyMeanReduced |= kind == kReduced && o.mean >= 0;
    t.anyNormUnreduced |= kind == kUnreduced && o.norm >= 0;
    t.anyNormReduced |= kind == kReduced && o.norm >= 0;
    t.seen[kind] = true;
}

} // namespace

std::optional<int64_t> decimal(std::string_view s) {
    int64_t v = 0;
    if (s.empty() ||
        !std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }) ||
        std::from_chars(s.data(), s.data() + s.size(), v).ec != std::errc())
        return std::nullopt;
    return v;
}

void readStatCsv(Tree& t, const StatFile& file) {
    CsvTable csv(file.path.string());
    const Columns o(csv);
    std::string header;
    for (const auto& h : csv.header())
        header += (header.empty() ? "" : ",") + h;
    auto missing = [&](const char* what) {
        throw ImportError(fmt::format("{}:1: no {} column (header: {})", file.path.string(), what, header));
    };
    if (o.name < 0)
        missing(file.kind ? "'name' (or 'param_name')" : "'module_name'");
    if (o.step < 0)
        missing("'step'");
    if (!file.kind && o.scope < 0)
        missing("'scope'");
    if (o.norm < 0 && o.min < 0 && o.max < 0 && o.mean < 0 && o.nans < 0)
        missing("statistic (norm, min, max, mean or nans)");

    std::vector<std::string> f;
    auto integer = [&](int col, const char* what) -> int64_t {
        const std::string& s = f[size_t(col)];
        char* end = nullptr;
        errno = 0;
        const long long v = std::strtoll(s.c_str(), &end, 10);
        if (s.empty() || end != s.c_str() + s.size() || errno || v < 0)
            csv.fail(fmt::format("{} '{}' is not a whole number", what, s));
        return v;
    };
    auto number = [&](int col) -> float {
        if (col < 0)
            return Stat::kNaN;
        try {
            const auto v = parseCsvNumber(f[size_t(col)]);
            return v ? float(*v) : Stat::kNaN;
        } catch (const std::invalid_argument&) {
            csv.fail(
                fmt::format("column '{}': '{}' is not a number", csv.header()[size_t(col)], f[size_t(col)]));
        }
    };
    while (csv.next(f)) {
        std::optional<Kind> kind = file.kind;
        if (!kind) {
            kind = kindOfScope(file.monitor, f[size_t(o.scope)]);
            if (!kind) {
                t.ignoredScopes.insert(fmt::format("{} scope '{}'", file.monitor, f[size_t(o.scope)]));
                continue;
            }
        }
        noteColumns(t, *kind, o);
        if (*kind == kReduced)
            t.reducedOnRank[size_t(file.rank)] = true;
        const std::string& name = f[size_t(o.name)];
        if (name.empty())
            csv.fail("the parameter name is empty");
        const int64_t step = integer(o.step, "step");
        if (step < file.first || step > file.last)
            csv.fail(fmt::format("step {} is outside the file's range {}-{} (its name says which steps it "
                                 "holds: mixed steps)",
                                 step, file.first, file.last));
        const int64_t micro = o.micro >= 0 ? integer(o.micro, "micro_step") : -1;
        std::optional<std::vector<int64_t>> shape;
        if (o.shape >= 0 && !f[size_t(o.shape)].empty() && f[size_t(o.shape)] != "nan") {
            shape = parseShape(f[size_t(o.shape)]);
            if (!shape)
                csv.fail(fmt::format("column 'shape': '{}' is not a tensor shape", f[size_t(o.shape)]));
        }
        // The vpp stage is part of a parameter's identity under virtual pipeline parallelism.
        std::string key = name;
        if (o.vpp >= 0 && !f[size_t(o.vpp)].empty() && f[size_t(o.vpp)] != "0" &&
            name.rfind(f[size_t(o.vpp)] + ":", 0) != 0)
            key = f[size_t(o.vpp)] + ":" + name;
        const int p = paramOf(t, key, shape);
        auto& row = t.tables[size_t(file.rank)][*kind][step];
        if (row.size() <= size_t(p))
            row.resize(size_t(p) + 1);
        Stat& s = row[size_t(p)];
        if (s.present && (o.micro < 0 || micro == s.microStep))
            csv.fail(
                fmt::format("a second row for {} at step {}{} (two runs written into one output folder?)",
                            key, step, o.micro >= 0 ? fmt::format(", micro step {}", micro) : ""));
        if (s.present)
            t.microSteps = true;
        if (s.present && micro < s.microStep)
            continue; // gradient accumulation: the last micro step's row stands for the step
        s = Stat{number(o.norm), number(o.min), number(o.max), number(o.mean), number(o.nans), micro, true};
    }
    ++t.files;
}

} // namespace rs::msprobe
