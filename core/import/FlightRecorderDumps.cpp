// findDumps, readDump: see FlightRecorderDumps.h. Key names and types follow the writer,
// torch/csrc/distributed/c10d/FlightRecorderDetail.hpp (getCollectiveTrace, getPgConfig) and torch_npu's
// TraceUtils.h; the folder rules follow PyTorch's analyser (flight_recorder/components/loader.py).
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

// "<prefix><digits>" -> prefix, or nullopt.
std::optional<std::string> prefixOf(const std::string& name) {
    size_t i = name.size();
    while (i > 0 && std::isdigit(static_cast<unsigned char>(name[i - 1])))
        --i;
    if (i == name.size() || name.size() - i >= 10)
        return std::nullopt;
    return name.substr(0, i);
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
        if (!v.is_number_integer())
            fail(key, fmt::format("is a {}, expected an integer", pythonType(v)));
        return v.get<int64_t>();
    }
    int64_t integerOr(const char* key, int64_t otherwise) const {
        const Json* v = find(key);
        if (!v || v->is_null())
            return otherwise;
        if (!v->is_number_integer())
            fail(key, fmt::format("is a {}, expected an integer", pythonType(*v)));
        return v->get<int64_t>();
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

Collective readEntry(const fs::path& file, const Json& e, size_t index, int rank, std::string& backend) {
    if (!e.is_object())
        throw ImportError(
            fmt::format("{}: entries[{}] is a {}, expected a dict", file.string(), index, pythonType(e)));
    const EntryReader r(file, e, index);
    Collective c;
    c.rank = rank;
    c.recordId = r.integer("record_id");
    const Json& pg = r.need("process_group");
    if (!pg.is_array() || pg.size() != 2 || !pg[0].is_string() || !pg[1].is_string())
        r.fail("process_group", "is not a (name, desc) pair of strings");
    c.group = groupLabel(pg[0].get<std::string>(), pg[1].get<std::string>());
    // "nccl:all_reduce", "hccl:send 0->1"; torch_npu leaves it "" when profiling is unsupported.
    const std::string name = r.text("profiling_name");
    const size_t colon = name.find(':');
    if (colon != std::string::npos && backend.empty())
        backend = name.substr(0, colon);
    const std::string op = colon == std::string::npos ? name : name.substr(colon + 1);
    c.op = columnText(op.empty() ? "(unnamed)" : op, kStr32);
    const bool p2p =
        r.flag("is_p2p", op.rfind("send", 0) == 0 || op.rfind("recv", 0) == 0); // older dumps lack is_p2p
    c.p2p = p2p;
    c.seq = p2p ? r.integerOr("p2p_seq_id", r.integer("collective_seq_id")) : r.integer("collective_seq_id");
    c.createdNs = r.integer("time_created_ns");
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
        if (ranks == g.end() || !ranks->is_string())
            throw ImportError(
                fmt::format("{}: pg_config['{}']: 'ranks' is missing or not a string", file.string(), key));
        gc.ranks = parseRanks(ranks->get<std::string>(), file, key);
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

std::string groupLabel(const std::string& name, const std::string& desc) {
    return columnText(desc.empty() || desc == "undefined" ? name : fmt::format("{} ({})", name, desc),
                      kStr256);
}

DumpSet findDumps(const fs::path& path, const std::string& prefix) {
    std::error_code ec;
    DumpSet set;
    std::string want = prefix;
    if (fs::is_regular_file(path, ec)) {
        set.dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
        if (want.empty()) {
            const auto p = prefixOf(path.filename().string());
            if (!p)
                throw ImportError(
                    fmt::format("{}: the name does not end in a rank number (<prefix><rank>, as "
                                "the flight recorder names its dumps)",
                                path.string()));
            want = *p;
        }
    } else if (fs::is_directory(path, ec)) {
        set.dir = path;
    } else {
        throw ImportError(fmt::format("{}: no such file or folder", path.string()));
    }
    std::map<std::string, int> prefixes;
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(set.dir, ec)) {
        if (!e.is_regular_file(ec))
            continue;
        files.push_back(e.path());
        if (const auto p = prefixOf(e.path().filename().string()))
            ++prefixes[*p];
    }
    if (ec)
        throw ImportError(fmt::format("{}: cannot list the folder ({})", set.dir.string(), ec.message()));
    if (want.empty()) {
        if (prefixes.empty())
            throw ImportError(fmt::format("{}: no flight-recorder dumps (files named <prefix><rank>, such as "
                                          "nccl_trace_rank_0)",
                                          set.dir.string()));
        if (prefixes.size() > 1) {
            std::string list;
            for (const auto& [p, n] : prefixes)
                list += fmt::format("{}'{}' ({} files)", list.empty() ? "" : ", ", p, n);
            throw ImportError(fmt::format("{}: files of several prefixes: {}; pass --prefix to pick one",
                                          set.dir.string(), list));
        }
        want = prefixes.begin()->first;
    }
    set.prefix = want;
    std::map<int, fs::path> byRank;
    for (const fs::path& f : files) {
        const std::string name = f.filename().string();
        if (name.size() <= want.size() || name.compare(0, want.size(), want) != 0)
            continue;
        const std::string tail = name.substr(want.size());
        if (!allDigits(tail)) {
            if (tail.size() > 5 && tail.compare(tail.size() - 5, 5, ".pipe") == 0)
                continue; // the recorder's on-demand pipe (TORCH_NCCL_DEBUG_INFO_PIPE_FILE)
            throw ImportError(fmt::format("{}: the name's rank '{}' (after the prefix '{}') is not a number",
                                          f.string(), tail, want));
        }
        const int rank = std::stoi(tail);
        if (!byRank.emplace(rank, f).second)
            throw ImportError(fmt::format("{}: a second dump for rank {} (also {})", f.string(), rank,
                                          byRank[rank].string()));
    }
    if (byRank.empty())
        throw ImportError(fmt::format("{}: no files named '{}<rank>'", set.dir.string(), want));
    for (const auto& [r, f] : byRank) {
        set.ranks.push_back(r);
        set.files.push_back(f);
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
    for (size_t i = 0; i < entries->size(); ++i)
        d.collectives.push_back(readEntry(file, (*entries)[i], i, rank, d.backend));
    return d;
}

} // namespace rs::flightrec
