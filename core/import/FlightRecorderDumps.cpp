// findDumps, readDump: see FlightRecorderDumps.h. Key names and types follow the writer,
// torch/csrc/distributed/c10d/FlightRecorderDetail.hpp (getCollectiveTrace, getPgConfig) and torch_npu's
// TraceUtils.h (and ProcessGroupHCCL::dumpPythonTraceback for the _py_traceback files); the folder rules
// follow PyTorch's analyser (torch/distributed/flight_recorder/components/loader.py: the prefix anywhere in
// a name, the rank the digits after it), the entry rules its tests (test_fr_analysis.py builds entries with
// string sequence ids, a dtype string, time 0, no record_id).
#include "import/FlightRecorderDumps.h"

#include "import/ImportTarget.h"
#include "import/PickleData.h"
#include "store/RunSchema.h"

#include <algorithm>
#include <cctype>
#include <fmt/format.h>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

namespace rs::flightrec {
namespace {

using Json = nlohmann::json;

constexpr uintmax_t kMaxFileBytes = uintmax_t(256) << 20; // 2,000 entries take about 1 MiB
constexpr size_t kStr32 = 31, kStr256 = 255;              // the run file's string columns, NUL excluded

bool allDigits(std::string_view s) {
    return !s.empty() && s.size() < 10 && std::all_of(s.begin(), s.end(), [](char c) {
        return std::isdigit(static_cast<unsigned char>(c));
    });
}

constexpr std::string_view kTracebackSuffix = "_py_traceback"; // torch_npu: '{path}{rank}_py_traceback'
constexpr std::string_view kPipeSuffix =
    ".pipe"; // the recorder's on-demand pipe (TORCH_NCCL_DEBUG_INFO_PIPE_FILE)

bool endsWith(std::string_view s, std::string_view tail) {
    return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}

bool isSeparator(char c) {
    return c == '.' || c == '_' || c == '-';
}

// run.h5, notes.mp4: a name that ends in digits because of its extension, not a rank.
bool hasExtension(const std::string& name) {
    const size_t dot = name.rfind('.');
    if (dot == std::string::npos || name.size() - dot - 1 > 5 || dot + 1 == name.size())
        return false;
    const std::string_view ext(name.data() + dot + 1, name.size() - dot - 1);
    return std::isalpha(static_cast<unsigned char>(ext[0])) &&
           std::all_of(ext.begin(), ext.end(),
                       [](char c) { return std::isalnum(static_cast<unsigned char>(c)); });
}

// "<prefix><digits>" -> prefix, or nullopt (tracebacks, pipes and names with an extension are not dumps).
std::optional<std::string> prefixOf(const std::string& name) {
    if (endsWith(name, kTracebackSuffix) || endsWith(name, kPipeSuffix) || hasExtension(name))
        return std::nullopt;
    size_t i = name.size();
    while (i > 0 && std::isdigit(static_cast<unsigned char>(name[i - 1])))
        --i;
    if (i == name.size() || name.size() - i >= 10)
        return std::nullopt;
    return name.substr(0, i);
}

// Prefixes that differ only in a host name in front of a common part ("node1.nccl_trace_rank_",
// "node2.nccl_trace_rank_") -> that part: the longest common tail that starts right after a separator in
// every prefix (or is the whole prefix) and holds a letter. "" when there is none ("trace_" and "rank_").
std::string commonTail(const std::vector<std::string>& prefixes) {
    std::string tail = prefixes.front();
    for (const std::string& p : prefixes) {
        size_t n = 0;
        while (n < tail.size() && n < p.size() && tail[tail.size() - 1 - n] == p[p.size() - 1 - n])
            ++n;
        tail = tail.substr(tail.size() - n);
    }
    for (size_t k = 0; k < tail.size(); ++k) {
        std::string t = tail.substr(k);
        if (isSeparator(t.front()) || std::none_of(t.begin(), t.end(), [](char c) {
                return std::isalpha(static_cast<unsigned char>(c));
            }))
            continue;
        if (std::all_of(prefixes.begin(), prefixes.end(), [&](const std::string& p) {
                return p.size() == t.size() || isSeparator(p[p.size() - t.size() - 1]);
            }))
            return t;
    }
    return {};
}

// A file name under a prefix: the host in front of it, the rank after it, whether it is a traceback.
struct NameParts {
    std::string host;
    std::string tail; // what follows the prefix (the rank's digits in a dump's name)
    bool traceback = false;
};

// The prefix is looked for from the right, so that a host name holding its text does not move it. nullopt:
// the name does not hold the prefix (or, for the empty prefix, is not a bare number).
std::optional<NameParts> splitName(const std::string& name, const std::string& prefix) {
    NameParts parts;
    std::string base = name;
    if (endsWith(base, kTracebackSuffix)) {
        parts.traceback = true;
        base.resize(base.size() - kTracebackSuffix.size());
    }
    if (prefix.empty()) {
        if (!allDigits(base))
            return std::nullopt;
        parts.tail = base;
        return parts;
    }
    // The last occurrence: only it can be followed by the rank's digits alone.
    const size_t at = base.rfind(prefix);
    if (at == std::string::npos ||
        (parts.traceback && !allDigits(std::string_view(base).substr(at + prefix.size()))))
        return std::nullopt;
    parts.host = base.substr(0, at);
    parts.tail = base.substr(at + prefix.size());
    return parts;
}

// Digits, or a digit string as PyTorch's analyser tests write sequence ids ("1"); nullopt otherwise.
std::optional<int64_t> integerOf(const Json& v) {
    if (v.is_number_integer())
        return v.get<int64_t>();
    if (!v.is_string())
        return std::nullopt;
    const std::string& s = v.get_ref<const std::string&>();
    const std::string_view digits =
        !s.empty() && s[0] == '-' ? std::string_view(s).substr(1) : std::string_view(s);
    if (digits.empty() || digits.size() > 18 || !std::all_of(digits.begin(), digits.end(), [](char c) {
            return std::isdigit(static_cast<unsigned char>(c));
        }))
        return std::nullopt;
    return std::stoll(s);
}

// A value's type as the dump's writer (Python, or PyTorch's pickler for it) would name it.
const char* pythonType(const Json& v) {
    switch (v.type()) {
    case Json::value_t::object:
        return "dict";
    case Json::value_t::array:
        return "list";
    case Json::value_t::string:
        return "str";
    case Json::value_t::boolean:
        return "bool";
    case Json::value_t::null:
        return "None";
    case Json::value_t::number_float:
        return "float";
    default:
        return "int";
    }
}

// A string member, or "" when it is missing or not a string (frames are for people, not checked).
std::string stringOr(const Json& o, const char* key) {
    const auto it = o.find(key);
    return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
}

class EntryReader {
public:
    EntryReader(const fs::path& file, const Json& e, size_t index)
        : m_file(file)
        , m_e(e)
        , m_index(index) {}

    [[noreturn]] void fail(const std::string& key, const std::string& what) const {
        throw ImportError(fmt::format("{}: entries[{}]: '{}' {}", m_file.string(), m_index, key, what));
    }
    const Json* find(const char* key) const {
        const auto it = m_e.find(key);
        return it == m_e.end() ? nullptr : &*it;
    }
    const Json& need(const char* key) const {
        const Json* v = find(key);
        if (!v)
            fail(key, "is missing");
        return *v;
    }
    int64_t integer(const char* key) const {
        const Json& v = need(key);
        const auto n = integerOf(v);
        if (!n)
            fail(key, fmt::format("is a {}, expected an integer", describe(v)));
        return *n;
    }
    int64_t integerOr(const char* key, int64_t otherwise) const {
        const Json* v = find(key);
        if (!v || v->is_null())
            return otherwise;
        const auto n = integerOf(*v);
        if (!n)
            fail(key, fmt::format("is a {}, expected an integer", describe(*v)));
        return *n;
    }
    // A string's value is named too, so that "is a str" says which one.
    static std::string describe(const Json& v) {
        if (!v.is_string())
            return pythonType(v);
        const std::string& s = v.get_ref<const std::string&>();
        return fmt::format("str '{}'", s.size() > 40 ? s.substr(0, 40) + "..." : s);
    }
    std::string text(const char* key) const {
        const Json& v = need(key);
        if (!v.is_string())
            fail(key, fmt::format("is a {}, expected a string", pythonType(v)));
        return v.get<std::string>();
    }
    bool flag(const char* key, bool otherwise) const {
        const Json* v = find(key);
        if (!v)
            return otherwise;
        if (!v->is_boolean())
            fail(key, fmt::format("is a {}, expected true or false", pythonType(*v)));
        return v->get<bool>();
    }
    // input_sizes / output_sizes: a list of shapes, each a list of integers.
    std::string shapes(const char* key) const {
        const Json& v = need(key);
        if (!v.is_array())
            fail(key, fmt::format("is a {}, expected a list of shapes", pythonType(v)));
        std::string out = "[";
        for (const Json& shape : v) {
            if (!shape.is_array())
                fail(key, "holds a shape that is not a list");
            out += out.size() > 1 ? ", [" : "[";
            for (size_t i = 0; i < shape.size(); ++i) {
                if (!shape[i].is_number_integer())
                    fail(key,
                         fmt::format("holds a dimension that is a {}, not an integer", pythonType(shape[i])));
                out += fmt::format("{}{}", i ? ", " : "", shape[i].get<int64_t>());
            }
            out += "]";
        }
        return out + "]";
    }
    std::string dtypes(const char* key) const {
        const Json& v = need(key);
        if (v.is_string()) // PyTorch's analyser tests write one name ("float32") for the lot
            return v.get<std::string>();
        if (!v.is_array())
            fail(key, fmt::format("is a {}, expected a list of dtype names", pythonType(v)));
        std::set<std::string> names;
        for (const Json& d : v) {
            if (!d.is_string())
                fail(key, "holds a dtype that is not a string");
            names.insert(d.get<std::string>());
        }
        std::string out;
        for (const auto& n : names)
            out += (out.empty() ? "" : ",") + n;
        return out;
    }
    // The innermost frame outside torch (where the job called the collective), "train.py:88 step".
    std::string frame() const {
        const Json* frames = find("frames");
        if (!frames || !frames->is_array())
            return {};
        std::string first;
        for (const Json& f : *frames) {
            if (!f.is_object())
                continue;
            const std::string file = stringOr(f, "filename");
            const auto line = f.find("line");
            std::string where = fmt::format(
                "{}:{} {}", file, line != f.end() && line->is_number_integer() ? line->get<int64_t>() : 0,
                stringOr(f, "name"));
            if (first.empty())
                first = where;
            if (file.find("/torch/") == std::string::npos && file.find("/torch_npu/") == std::string::npos)
                return where;
        }
        return first;
    }

    // The innermost frame's function ("all_reduce" in distributed_c10d.py): torch_npu records no profiling
    // name for most collectives, and this names the operation instead.
    std::string innermostName() const {
        const Json* frames = find("frames");
        if (!frames || !frames->is_array() || frames->empty() || !frames->front().is_object())
            return {};
        return stringOr(frames->front(), "name");
    }

private:
    const fs::path& m_file;
    const Json& m_e;
    size_t m_index;
};

uint8_t stateOf(const EntryReader& r) {
    const std::string s = r.text("state");
    if (s == "scheduled")
        return uint8_t(CollectiveState::Scheduled);
    if (s == "started")
        return uint8_t(CollectiveState::Started);
    if (s == "completed")
        return uint8_t(CollectiveState::Completed);
    r.fail("state", fmt::format("is '{}', expected scheduled, started or completed", s));
}

// One entry. Collective::group is the entry's process-group name (the importer labels it); `desc` gets the
// group description the entry itself carries.
Collective readEntry(const fs::path& file, const Json& e, size_t index, int rank, std::string& backend,
                     std::string& desc) {
    if (!e.is_object())
        throw ImportError(
            fmt::format("{}: entries[{}] is a {}, expected a dict", file.string(), index, pythonType(e)));
    const EntryReader r(file, e, index);
    Collective c;
    c.rank = rank;
    c.recordId = r.integerOr("record_id", int64_t(index)); // the analyser's own tests leave it out
    const Json& pg = r.need("process_group");              // a tuple in a pickle, a list in JSON
    if (!pg.is_array() || pg.size() != 2 || !pg[0].is_string() || !pg[1].is_string())
        r.fail("process_group", "is not a (name, desc) pair of strings");
    c.group = columnText(pg[0].get<std::string>(), kStr256);
    desc = pg[1].get<std::string>();
    // "nccl:all_reduce", "hccl:send 0->1"; torch_npu leaves it "" when the collective has no profiling title.
    const std::string name = r.text("profiling_name");
    const size_t colon = name.find(':');
    if (colon != std::string::npos && backend.empty())
        backend = name.substr(0, colon);
    std::string op = colon == std::string::npos ? name : name.substr(colon + 1);
    if (op.empty())
        op = r.innermostName();
    c.op = columnText(op.empty() ? "(unnamed)" : op, kStr32);
    const bool p2p =
        r.flag("is_p2p", op.rfind("send", 0) == 0 || op.rfind("recv", 0) == 0); // older dumps lack is_p2p
    c.p2p = p2p;
    c.seq = p2p ? r.integerOr("p2p_seq_id", r.integer("collective_seq_id")) : r.integer("collective_seq_id");
    c.createdNs = std::max<int64_t>(0, r.integerOr("time_created_ns", 0)); // 0: not recorded
    c.sizes =
        columnText(fmt::format("in {} out {}", r.shapes("input_sizes"), r.shapes("output_sizes")), kStr256);
    const std::string in = r.dtypes("input_dtypes"), out = r.dtypes("output_dtypes");
    c.dtypes = columnText(in == out || out.empty() ? in : in + "->" + out, kStr32);
    c.state = stateOf(r);
    c.retired = r.flag("retired", false);
    c.timeoutMs = r.integerOr("timeout_ms", -1);
    c.durationMs = std::numeric_limits<float>::quiet_NaN();
    if (const Json* d = r.find("duration_ms"); d && !d->is_null()) {
        if (!d->is_number())
            r.fail("duration_ms", fmt::format("is a {}, expected a number", pythonType(*d)));
        c.durationMs = d->get<float>();
    }
    c.frame = columnText(r.frame(), kStr256);
    return c;
}

// "[0, 1, 2, 3]" (ranks_str); the analyser reads it with ast.literal_eval.
std::vector<int> parseRanks(const std::string& s, const fs::path& file, const std::string& key) {
    auto bad = [&] {
        return ImportError(fmt::format("{}: pg_config['{}']: ranks '{}' is not a list of ranks",
                                       file.string(), key, s.size() > 80 ? s.substr(0, 80) + "..." : s));
    };
    if (s.size() < 2 || s.front() != '[' || s.back() != ']')
        throw bad();
    std::vector<int> ranks;
    std::string_view body(s.data() + 1, s.size() - 2);
    while (!body.empty()) {
        const size_t comma = body.find(',');
        std::string_view item = body.substr(0, comma);
        while (!item.empty() && item.front() == ' ')
            item.remove_prefix(1);
        while (!item.empty() && item.back() == ' ')
            item.remove_suffix(1);
        if (!allDigits(item) || std::stoll(std::string(item)) >= runschema::kMaxWorldSize)
            throw bad();
        ranks.push_back(std::stoi(std::string(item)));
        body = comma == std::string_view::npos ? std::string_view() : body.substr(comma + 1);
    }
    return ranks;
}

std::vector<GroupConfig> readGroups(const Json& doc, const fs::path& file) {
    std::vector<GroupConfig> groups;
    const auto it = doc.find("pg_config");
    if (it == doc.end())
        return groups; // 2.2 dumps: the entries name their groups
    if (!it->is_object())
        throw ImportError(
            fmt::format("{}: 'pg_config' is a {}, expected a dict", file.string(), pythonType(*it)));
    for (const auto& [key, g] : it->items()) {
        if (!g.is_object())
            throw ImportError(fmt::format("{}: pg_config['{}'] is not a dict", file.string(), key));
        GroupConfig gc;
        gc.name = g.contains("name") && g["name"].is_string() ? g["name"].get<std::string>() : key;
        gc.desc = stringOr(g, "desc");
        const auto ranks = g.find("ranks");
        if (ranks != g.end() && ranks->is_array()) { // a list where a writer did not go through ranks_str
            for (const Json& r : *ranks) {
                const auto n = integerOf(r);
                if (!n || *n < 0 || *n >= runschema::kMaxWorldSize)
                    throw ImportError(fmt::format("{}: pg_config['{}']: ranks holds {}, not a rank",
                                                  file.string(), key, r.dump()));
                gc.ranks.push_back(int(*n));
            }
        } else if (ranks != g.end() && ranks->is_string()) {
            gc.ranks = parseRanks(ranks->get<std::string>(), file, key);
        } else {
            throw ImportError(
                fmt::format("{}: pg_config['{}']: 'ranks' is missing or not a string", file.string(), key));
        }
        groups.push_back(std::move(gc));
    }
    return groups;
}

Json parseFile(const fs::path& file, std::string& format) {
    std::error_code ec;
    const uintmax_t size = fs::file_size(file, ec);
    if (ec)
        throw ImportError(fmt::format("{}: cannot be read ({})", file.string(), ec.message()));
    if (size > kMaxFileBytes)
        throw ImportError(
            fmt::format("{}: {} MiB, larger than any flight-recorder dump (at most {} MiB read)",
                        file.string(), size >> 20, kMaxFileBytes >> 20));
    std::ifstream in(file, std::ios::binary);
    std::string bytes(size_t(size), '\0');
    if (!in || !in.read(bytes.data(), std::streamsize(size)))
        throw ImportError(fmt::format("{}: cannot be read", file.string()));
    if (!bytes.empty() && uint8_t(bytes[0]) == 0x80) {
        format = "pickle";
        return readPickleData(bytes, file.string());
    }
    const size_t first = bytes.find_first_not_of(" \t\r\n");
    if (first != std::string::npos && bytes[first] == '{') {
        format = "json";
        // A dump nests 4 deep; deeper input is refused while it is parsed, before it can fill the memory.
        const Json::parser_callback_t shallow = [&](int depth, Json::parse_event_t, Json&) {
            if (depth > 16)
                throw ImportError(fmt::format("{}: values nest more than 16 levels deep", file.string()));
            return true;
        };
        try {
            return Json::parse(bytes, shallow);
        } catch (const Json::parse_error& e) {
            throw ImportError(fmt::format("{}: byte {}: not JSON ({})", file.string(), e.byte, e.what()));
        } catch (const Json::exception& e) {
            throw ImportError(fmt::format("{}: not a JSON dump ({})", file.string(), e.what()));
        }
    }
    throw ImportError(fmt::format(
        "{}: neither a pickle (first byte 0x80) nor JSON: not a flight-recorder dump", file.string()));
}

} // namespace

namespace {

// The prefix of a folder's dump names: exactly one, once host names in front of it are set aside.
std::string detectPrefix(const fs::path& dir, const std::vector<fs::path>& files) {
    std::map<std::string, int> prefixes;
    for (const fs::path& f : files)
        if (const auto p = prefixOf(f.filename().string()))
            ++prefixes[*p];
    if (prefixes.empty())
        throw ImportError(fmt::format("{}: no flight-recorder dumps (files named <prefix><rank>, such as "
                                      "nccl_trace_rank_0)",
                                      dir.string()));
    if (prefixes.size() == 1)
        return prefixes.begin()->first;
    std::vector<std::string> names;
    names.reserve(prefixes.size());
    for (const auto& [p, n] : prefixes)
        names.push_back(p);
    // Host names in front of one prefix, as long as that gives each rank one file.
    if (std::string tail = commonTail(names); !tail.empty()) {
        std::set<int> ranks;
        bool unique = true;
        for (const fs::path& f : files) {
            const auto parts =
                prefixOf(f.filename().string()) ? splitName(f.filename().string(), tail) : std::nullopt;
            if (parts && !parts->traceback && allDigits(parts->tail))
                unique = ranks.insert(std::stoi(parts->tail)).second && unique;
        }
        if (unique)
            return tail;
    }
    std::string list;
    for (const auto& [p, n] : prefixes)
        list += fmt::format("{}'{}' ({} files)", list.empty() ? "" : ", ", p, n);
    throw ImportError(
        fmt::format("{}: files of several prefixes: {}; pass --prefix to pick one", dir.string(), list));
}

} // namespace

DumpSet findDumps(const fs::path& path, const std::string& prefix) {
    std::error_code ec;
    DumpSet set;
    std::string want = prefix;
    bool detect = prefix.empty();
    if (fs::is_regular_file(path, ec)) {
        set.dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
        if (detect) {
            const auto p = prefixOf(path.filename().string());
            if (!p)
                throw ImportError(
                    fmt::format("{}: the name does not end in a rank number (<prefix><rank>, as "
                                "the flight recorder names its dumps)",
                                path.string()));
            want = *p;
            detect = false;
        }
    } else if (fs::is_directory(path, ec)) {
        set.dir = path;
    } else {
        throw ImportError(fmt::format("{}: no such file or folder", path.string()));
    }
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(set.dir, ec))
        if (e.is_regular_file(ec))
            files.push_back(e.path());
    if (ec)
        throw ImportError(fmt::format("{}: cannot list the folder ({})", set.dir.string(), ec.message()));
    std::sort(files.begin(), files.end());
    if (detect)
        want = detectPrefix(set.dir, files);
    set.prefix = want;
    std::map<int, std::pair<fs::path, std::string>> byRank;
    for (const fs::path& f : files) {
        const std::string name = f.filename().string();
        const auto parts = splitName(name, want);
        if (!parts || endsWith(name, kPipeSuffix) ||
            (!parts->traceback && want.empty() && hasExtension(name)))
            continue;
        if (!allDigits(parts->tail))
            throw ImportError(fmt::format("{}: the name's rank '{}' (after the prefix '{}') is not a number",
                                          f.string(), parts->tail, want));
        const int rank = std::stoi(parts->tail);
        if (parts->traceback) {
            set.tracebacks.emplace(rank, f);
            continue;
        }
        if (const auto [it, added] = byRank.emplace(rank, std::pair{f, parts->host}); !added)
            throw ImportError(fmt::format("{}: a second dump for rank {} (also {})", f.string(), rank,
                                          it->second.first.string()));
    }
    if (byRank.empty())
        throw ImportError(fmt::format("{}: no files named '{}<rank>'", set.dir.string(), want));
    for (const auto& [r, f] : byRank) {
        set.ranks.push_back(r);
        set.files.push_back(f.first);
        std::string host = f.second;
        while (!host.empty() && isSeparator(host.back()))
            host.pop_back();
        set.hosts.push_back(host);
    }
    return set;
}

RankDump readDump(const fs::path& file, int rank) {
    RankDump d;
    d.rank = rank;
    d.path = file;
    const Json doc = parseFile(file, d.format);
    if (!doc.is_object())
        throw ImportError(fmt::format("{}: the dump is a {}, expected a dict with 'version' and 'entries'",
                                      file.string(), pythonType(doc)));
    const auto version = doc.find("version");
    if (version == doc.end() || !version->is_string())
        throw ImportError(fmt::format("{}: 'version' is missing or not a string", file.string()));
    d.version = version->get<std::string>();
    // "<major>.<minor>", compared as numbers (the analyser's rule); a new major version changed fields.
    const size_t dot = d.version.find('.');
    if (dot == std::string::npos || !allDigits(d.version.substr(0, dot)) ||
        !allDigits(d.version.substr(dot + 1)))
        throw ImportError(fmt::format("{}: 'version' is '{}', expected <major>.<minor> such as 2.10",
                                      file.string(), d.version));
    if (d.version.substr(0, dot) != "2")
        throw ImportError(fmt::format("{}: version {} (versions 2.x are read)", file.string(), d.version));
    d.groups = readGroups(doc, file);
    for (const char* key : {"comm_lib_version", "nccl_version"}) // 2.8 onwards; 2.5 to 2.7
        if (const auto it = doc.find(key); it != doc.end() && it->is_string() && d.commLib.empty())
            d.commLib = it->get<std::string>();
    const auto entries = doc.find("entries");
    if (entries == doc.end()) {
        // The JSON form leaves out an empty list; the pickle always holds it.
        if (d.format == "pickle")
            throw ImportError(fmt::format("{}: 'entries' is missing (a dump written without its collectives)",
                                          file.string()));
        return d;
    }
    if (!entries->is_array())
        throw ImportError(
            fmt::format("{}: 'entries' is a {}, expected a list", file.string(), pythonType(*entries)));
    d.collectives.reserve(entries->size());
    d.entryDescs.resize(entries->size());
    for (size_t i = 0; i < entries->size(); ++i)
        d.collectives.push_back(readEntry(file, (*entries)[i], i, rank, d.backend, d.entryDescs[i]));
    // No profiling name said it (torch_npu leaves them ""): the communicator-state map names the library.
    for (const char* lib : {"hccl", "nccl"})
        if (d.backend.empty() && doc.contains(std::string(lib) + "_comm_state"))
            d.backend = lib;
    return d;
}

std::string readTraceback(const fs::path& file, size_t limit) {
    std::ifstream in(file, std::ios::binary);
    if (!in)
        throw ImportError(fmt::format("{}: cannot be read", file.string()));
    std::string text(limit + 1, '\0');
    in.read(text.data(), std::streamsize(text.size()));
    text.resize(size_t(in.gcount()));
    if (text.size() <= limit)
        return text;
    std::error_code ec;
    const uintmax_t size = fs::file_size(file, ec);
    text.resize(text.rfind('\n', limit) == std::string::npos ? limit : text.rfind('\n', limit) + 1);
    return text + fmt::format("... ({} more bytes in {})\n", ec ? 0 : size - text.size(), file.string());
}

} // namespace rs::flightrec
