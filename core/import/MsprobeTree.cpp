// readStatCsv: see MsprobeTree.h. The header varies with the monitor's version and configuration (the ops it
// was asked for, micro steps, shape and dtype columns), so columns are found by name.
#include "import/MsprobeTree.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fmt/format.h>
#include <stdexcept>

namespace rs::msprobe {
namespace {

// The columns of one csv, -1 where it has none.
struct Columns {
    int name = -1, step = -1, micro = -1, vpp = -1, scope = -1, shape = -1;
    std::array<int, kOpCount> op{};

    explicit Columns(const CsvTable& csv) {
        for (const char* n : {"name", "module_name", "param_name"})
            if (name < 0)
                name = csv.column(n);
        step = csv.column("step");
        micro = csv.column("micro_step");
        vpp = csv.column("vpp_stage");
        scope = csv.column("scope");
        shape = csv.column("shape");
        for (int o = 0; o < kOpCount; ++o)
            op[size_t(o)] = csv.column(opName(Op(o)));
    }
    bool anyOp() const {
        return std::any_of(op.begin(), op.end(), [](int c) { return c >= 0; });
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
void noteRow(Tree& t, Kind kind, const Columns& o, const Stat& s) {
    const std::array<float, kOpCount> values{s.norm, s.min, s.max, s.mean, s.nans};
    for (int op = 0; op < kOpCount; ++op) {
        t.column[kind][size_t(op)] |= o.op[size_t(op)] >= 0;
        t.valued[kind][size_t(op)] |= !std::isnan(values[size_t(op)]);
    }
    t.seen[kind] = true;
}

// The parameter's identity: its name, with the virtual-pipeline stage where the name does not carry it.
// Monitor V1 writes the stage apart (vpp_stage 1, name layers.0.weight); Monitor V2 keeps it in the name
// (0:layers.0.weight) and writes -1 for a single model's parameters, which have no stage. Stage 0 is left
// off, so a run without virtual pipelining keeps its parameters' own names.
std::string paramKey(const std::string& name, const std::string& vpp) {
    const auto stage = decimal(vpp);
    if (!stage || *stage == 0 || name.rfind(vpp + ":", 0) == 0)
        return name;
    return vpp + ":" + name;
}

} // namespace

const char* opName(Op op) {
    static constexpr const char* kNames[kOpCount] = {"norm", "min", "max", "mean", "nans"};
    return kNames[op];
}

std::optional<int64_t> decimal(std::string_view s) {
    int64_t v = 0;
    if (s.empty() ||
        !std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }) ||
        std::from_chars(s.data(), s.data() + s.size(), v).ec != std::errc())
        return std::nullopt;
    return v;
}

namespace {

// The file's table: its own header, or (a part file) the header of the file it continues.
CsvTable openStatCsv(const StatFile& file) {
    if (file.headerFrom.empty())
        return CsvTable(file.path.string());
    std::error_code ec;
    if (!fs::is_regular_file(file.headerFrom, ec))
        throw ImportError(fmt::format("{}: a part file without {}, the file whose header row names its "
                                      "columns (msprobe writes the header there and the rows of a large "
                                      "write into _part_<k> files)",
                                      file.path.string(), file.headerFrom.filename().string()));
    return CsvTable(file.path.string(), CsvTable(file.headerFrom.string()).header());
}

} // namespace

void readStatCsv(Tree& t, const StatFile& file) {
    CsvTable csv = openStatCsv(file);
    const Columns o(csv);
    std::string header;
    for (const auto& h : csv.header())
        header += (header.empty() ? "" : ",") + h;
    const std::string headerFile = (file.headerFrom.empty() ? file.path : file.headerFrom).string();
    auto missing = [&](const char* what) {
        throw ImportError(fmt::format("{}:1: no {} column (header: {})", headerFile, what, header));
    };
    if (o.name < 0)
        missing(file.kind ? "'name' (or 'param_name')" : "'module_name'");
    if (o.step < 0)
        missing("'step'");
    if (!file.kind && o.scope < 0)
        missing("'scope'");
    if (!o.anyOp())
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
    // A statistic; nan where the column is missing, or the field is empty (msprobe before 2025-01 wrote nan
    // so) or nan.
    auto number = [&](Op op) -> float {
        const int col = o.op[size_t(op)];
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
        // A row without a micro step (an empty field: the writer's header came from rows that had one) is
        // the step's only row.
        const int64_t micro =
            o.micro >= 0 && !f[size_t(o.micro)].empty() ? integer(o.micro, "micro_step") : -1;
        std::optional<std::vector<int64_t>> shape;
        if (o.shape >= 0 && !f[size_t(o.shape)].empty() && f[size_t(o.shape)] != "nan") {
            shape = parseShape(f[size_t(o.shape)]);
            if (!shape)
                csv.fail(fmt::format("column 'shape': '{}' is not a tensor shape", f[size_t(o.shape)]));
        }
        const std::string key = paramKey(name, o.vpp >= 0 ? f[size_t(o.vpp)] : std::string());
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
        s = Stat{number(kNorm), number(kMin), number(kMax), number(kMean), number(kNans), micro, true};
        noteRow(t, *kind, o, s);
    }
    ++t.files;
}

} // namespace rs::msprobe
