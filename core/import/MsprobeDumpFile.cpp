// readDumpFile: see MsprobeDumpFile.h. Entry names and tensor fields follow msprobe's writer
// (core/dump/data_dump/json_writer.py, data_collector.py, data_processor/base.py and pytorch_processor.py;
// docs/en/dump/pytorch_data_dump_instruct.md): APIs are "<Prefix>.<api>.<n>.<forward|backward>", modules
// "Module.<name>.<Class>.<forward|backward>.<n>" (MindSpore: "Cell."), parameter gradients
// "Module.<name>.<Class>.parameters_grad[.<k>]" holding {"<param>": [<tensor>]}.
#include "import/MsprobeDumpFile.h"

#include "import/ImportTarget.h"

#include <cmath>
#include <fmt/format.h>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <streambuf>

namespace rs::msprobe {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

// Python's json.dump writes non-finite floats as bare NaN, Infinity, -Infinity. This stream rewrites each,
// outside strings, into a quoted marker of the same length ("N", "I" and "-I", padded with spaces), so the
// JSON parser accepts the file and byte offsets in its messages stay the file's.
class NonFiniteTokens : public std::streambuf {
public:
    explicit NonFiniteTokens(std::istream& in)
        : m_in(in) {}

protected:
    int_type underflow() override {
        if (gptr() < egptr())
            return traits_type::to_int_type(*gptr());
        if (!fill())
            return traits_type::eof();
        return traits_type::to_int_type(*gptr());
    }

private:
    // Reads on until it has output or the file ends: a chunk may end inside a token and yield nothing yet.
    bool fill() {
        m_out.clear();
        while (m_out.empty()) {
            char raw[1 << 16];
            m_in.read(raw, sizeof raw);
            const std::streamsize n = m_in.gcount();
            const bool eof = n < std::streamsize(sizeof raw);
            m_pending.append(raw, size_t(n));
            rewrite(eof);
            if (eof && m_out.empty() && m_pending.empty())
                return false;
        }
        setg(m_out.data(), m_out.data(), m_out.data() + m_out.size());
        return true;
    }

    // Moves m_pending into m_out with the tokens rewritten, keeping back a tail that may be a token's start
    // unless the file has ended.
    void rewrite(bool eof) {
        size_t i = 0;
        for (; i < m_pending.size(); ++i) {
            const char c = m_pending[i];
            if (m_inString) {
                m_out += c;
                if (m_escape)
                    m_escape = false;
                else if (c == '\\')
                    m_escape = true;
                else if (c == '"')
                    m_inString = false;
                continue;
            }
            if (c == '"') {
                m_inString = true;
                m_out += c;
                continue;
            }
            if (c == 'N' || c == 'I' || c == '-') {
                const std::string_view rest(m_pending.data() + i, m_pending.size() - i);
                if (rest.size() < 9 && !eof)
                    break; // the token may continue in the next chunk
                if (rest.substr(0, 3) == "NaN") {
                    m_out += "\"N\"";
                    i += 2;
                    continue;
                }
                if (rest.substr(0, 8) == "Infinity") {
                    m_out += "\"I\"     ";
                    i += 7;
                    continue;
                }
                if (rest.substr(0, 9) == "-Infinity") {
                    m_out += "\"-I\"     ";
                    i += 8;
                    continue;
                }
            }
            m_out += c;
        }
        m_pending.erase(0, i);
    }

    std::istream& m_in;
    std::string m_pending, m_out;
    bool m_inString = false, m_escape = false;
};

// What an entry's name says.
struct EntryName {
    enum Kind { Api, ModuleCall, ParamGrad, Other } kind = Other;
    std::string module; // "layer1.0.conv1" (modules, parameter gradients)
    bool forward = false;
};

std::vector<std::string> split(const std::string& s) {
    std::vector<std::string> parts;
    size_t start = 0;
    for (size_t dot; (dot = s.find('.', start)) != std::string::npos; start = dot + 1)
        parts.push_back(s.substr(start, dot - start));
    parts.push_back(s.substr(start));
    return parts;
}

bool isNumber(const std::string& s) {
    return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
}

EntryName parseName(const std::string& name) {
    const std::vector<std::string> p = split(name);
    EntryName e;
    if (p.size() >= 3 && (p[0] == "Module" || p[0] == "Cell")) {
        // ... <Class>.parameters_grad[.<k>] | <Class>.<forward|backward>.<n>; the module's name may hold
        // dots.
        size_t dir = p.size() - 1;
        if (isNumber(p[dir]))
            --dir;
        const std::string& d = p[dir];
        if (dir < 3 || (d != "forward" && d != "backward" && d != "parameters_grad"))
            return e;
        for (size_t i = 1; i + 1 < dir; ++i)
            e.module += (i > 1 ? "." : "") + p[i];
        e.kind = d == "parameters_grad" ? EntryName::ParamGrad : EntryName::ModuleCall;
        e.forward = d == "forward";
        return e;
    }
    if (p.size() >= 4 && isNumber(p[p.size() - 2]) && (p.back() == "forward" || p.back() == "backward")) {
        e.kind = EntryName::Api;
        e.forward = p.back() == "forward";
    }
    return e;
}

// A number written as text ("1.5", "nan", "-inf"); nullopt for other text.
std::optional<double> textNumber(const std::string& s) {
    try {
        return parseCsvNumber(s);
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

class EntryReader {
public:
    EntryReader(const fs::path& file, const std::string& entry, DumpFile& out)
        : m_file(file)
        , m_entry(entry)
        , m_out(out) {}

    [[noreturn]] void fail(const std::string& what) const {
        throw ImportError(fmt::format("{}: entry '{}': {}", m_file.string(), m_entry, what));
    }

    // A statistic: a number, true/false (a bool tensor's any/all), null (not recorded), a non-finite token,
    // or text: a number as text is read, any other text is not recorded (and counted, for the notes).
    void stat(const Json& t, const char* key, float& out, uint8_t bit, uint8_t& recorded) const {
        const auto it = t.find(key);
        if (it == t.end() || it->is_null())
            return;
        if (it->is_number())
            out = it->get<float>();
        else if (it->is_boolean())
            out = it->get<bool>() ? 1.f : 0.f;
        else if (it->is_string() && *it == "N")
            out = std::numeric_limits<float>::quiet_NaN();
        else if (it->is_string() && (*it == "I" || *it == "-I"))
            out =
                *it == "I" ? std::numeric_limits<float>::infinity() : -std::numeric_limits<float>::infinity();
        else if (const auto v = it->is_string() ? textNumber(it->get<std::string>()) : std::nullopt)
            out = float(*v);
        else {
            if (m_out.textStats++ == 0)
                m_out.firstTextStat =
                    fmt::format("'{}' of {} is {}", key, m_entry,
                                it->dump(-1, ' ', false, Json::error_handler_t::replace).substr(0, 40));
            return;
        }
        recorded |= bit;
    }

    // The shape: a list of dimensions. Anything else leaves it unknown (shapeKnown false), counted for the
    // notes: the tensor's statistics are still worth reading.
    void readShape(const Json& shape, DumpTensor& d) const {
        bool ok = shape.is_array();
        for (size_t i = 0; ok && i < shape.size(); ++i) {
            ok = shape[i].is_number_integer() && shape[i].get<int64_t>() >= 0;
            if (ok)
                d.shape.push_back(shape[i].get<int64_t>());
        }
        d.shapeKnown = ok;
        if (ok)
            return;
        d.shape.clear();
        if (m_out.badShapes++ == 0)
            m_out.firstBadShape =
                fmt::format("'shape' of {} is {}", m_entry,
                            shape.dump(-1, ' ', false, Json::error_handler_t::replace).substr(0, 40));
    }

    // A tensor dict: a string "dtype" and a "shape" beside a string "type" (every writer's tensors have one),
    // or no "type" at all. A kwargs dict with dtype= and shape= arguments holds {type, value} pairs there,
    // so it is not taken for one. nullopt for any other value (ints, slices, None, process groups).
    std::optional<DumpTensor> tensor(const Json& t) const {
        if (!t.is_object() || !t.contains("shape") || !t.contains("dtype") || !t["dtype"].is_string())
            return std::nullopt;
        if (const auto type = t.find("type"); type != t.end() && !type->is_string())
            return std::nullopt;
        DumpTensor d;
        d.dtype = t["dtype"].get<std::string>();
        readShape(t["shape"], d);
        stat(t, "Max", d.max, 1, d.recorded);
        stat(t, "Min", d.min, 2, d.recorded);
        stat(t, "Mean", d.mean, 4, d.recorded);
        stat(t, "Norm", d.norm, 8, d.recorded);
        return d;
    }

private:
    const fs::path& m_file;
    const std::string& m_entry;
    DumpFile& m_out;
};

std::string shapeText(const std::vector<int64_t>& shape) {
    std::string s;
    for (size_t i = 0; i < shape.size(); ++i)
        s += fmt::format("{}{}", i ? "x" : "", shape[i]);
    return s;
}

// Every tensor under `v` (nested lists and dicts of arguments), named "<prefix>.<index or key>...". With
// keep false they are read (checked, their text statistics counted) but not kept.
void collectTensors(const EntryReader& r, const Json& v, const std::string& name, DumpFile& out, bool keep) {
    if (const auto t = r.tensor(v)) {
        if (!keep)
            return;
        TensorStat s;
        s.order = int64_t(out.tensors.size());
        s.name = columnText(name, 255);
        s.dtype = columnText(t->dtype, 31);
        s.shape = t->shapeKnown ? columnText(shapeText(t->shape), 255) : std::string("not recorded");
        s.max = t->max;
        s.min = t->min;
        s.mean = t->mean;
        s.norm = t->norm;
        s.recorded = t->recorded;
        out.tensors.push_back(std::move(s));
        return;
    }
    // Lists and dicts of arguments are walked; a dict with a string "type" is one argument that is no tensor
    // ({type, value} pairs, torch.ProcessGroup {type, group_ranks, group_id}, ReduceOp, memory_format): it
    // has no statistics to compare. A P2POp ({class_type, tensor, op, peer}) is walked to its tensor.
    if (v.is_array())
        for (size_t i = 0; i < v.size(); ++i)
            collectTensors(r, v[i], fmt::format("{}.{}", name, i), out, keep);
    else if (v.is_object() && !(v.contains("type") && v["type"].is_string()))
        for (const auto& [k, x] : v.items())
            collectTensors(r, x, fmt::format("{}.{}", name, k), out, keep);
}

void readEntry(const fs::path& file, const std::string& name, const Json& e, DumpPart part, DumpFile& out) {
    const EntryReader r(file, name, out);
    if (!e.is_object())
        r.fail(fmt::format("is {}, not an object", e.type_name()));
    ++out.entries;
    const EntryName n = parseName(name);
    if (n.kind == EntryName::ParamGrad) {
        for (const auto& [param, v] : e.items()) {
            // A one-element list per parameter ([null] when the hook saw no gradient).
            const Json& t = v.is_array() && v.size() == 1 ? v[0] : v;
            if (t.is_null())
                continue;
            // Anything but a tensor dict ({} is what msprobe writes for a type it does not know) records
            // nothing.
            if (const auto d = r.tensor(t))
                out.grads[n.module + "." + param] = *d;
        }
        return;
    }
    if (n.kind == EntryName::ModuleCall && n.forward && e.contains("parameters") &&
        e["parameters"].is_object())
        for (const auto& [param, t] : e["parameters"].items())
            if (const auto d = r.tensor(t))
                out.weights.emplace(n.module + "." + param, *d); // the first forward of the step
    for (const char* field : {"input_args", "input_kwargs", "input", "output"})
        if (const auto it = e.find(field); it != e.end())
            collectTensors(r, *it, name + "." + field, out, part == DumpPart::Everything);
}

// Streams the top level; each entry of "data" is built as a small DOM, handed over and dropped.
class DumpSax : public nlohmann::json_sax<Json> {
public:
    DumpSax(const fs::path& file, DumpPart part, DumpFile& out)
        : m_file(file)
        , m_part(part)
        , m_out(out) {}

    bool null() override { return value(nullptr); }
    bool boolean(bool v) override { return value(v); }
    bool number_integer(number_integer_t v) override { return value(v); }
    bool number_unsigned(number_unsigned_t v) override { return value(v); }
    bool number_float(number_float_t v, const string_t&) override { return value(v); }
    bool string(string_t& v) override { return value(v); }
    bool binary(binary_t&) override { return value(nullptr); }
    bool key(string_t& k) override {
        if (m_depth == 1)
            m_topKey = k;
        else if (m_depth == 2 && m_topKey == "data")
            m_entryName = k;
        else if (!m_stack.empty())
            m_key = k;
        return true;
    }
    bool start_object(std::size_t) override { return open(Json::object()); }
    bool start_array(std::size_t) override { return open(Json::array()); }
    bool end_object() override { return close(); }
    bool end_array() override { return close(); }
    bool parse_error(std::size_t pos, const std::string&, const nlohmann::detail::exception& ex) override {
        throw ImportError(fmt::format("{}: byte {}: not JSON ({})", m_file.string(), pos, ex.what()));
    }

    int depthSeen() const { return m_maxDepth; }
    bool sawData() const { return m_sawData; }
    Json::value_t rootType() const { return m_rootType; }

private:
    bool value(Json v) {
        if (m_depth == 0) {
            m_rootType = v.type();
            return true;
        }
        if (m_depth == 1) {
            if (v.is_string() && (m_topKey == "task" || m_topKey == "level" || m_topKey == "framework"))
                (m_topKey == "task"    ? m_out.task
                 : m_topKey == "level" ? m_out.level
                                       : m_out.framework) = v.get<std::string>();
            return true;
        }
        if (m_stack.empty()) // a value directly under "data" that is not an object
            if (m_depth == 2 && m_topKey == "data")
                throw ImportError(fmt::format("{}: entry '{}': is {}, not an object", m_file.string(),
                                              m_entryName, v.type_name()));
        if (!m_stack.empty())
            place(std::move(v));
        return true;
    }
    void place(Json v) {
        Json& top = *m_stack.back();
        if (top.is_array())
            top.push_back(std::move(v));
        else
            top[m_key] = std::move(v);
    }
    bool open(Json v) {
        ++m_depth;
        m_maxDepth = std::max(m_maxDepth, m_depth);
        if (m_depth > 64)
            throw ImportError(fmt::format("{}: values nest more than 64 levels deep", m_file.string()));
        if (m_depth == 1) {
            m_rootType = v.type();
            if (!v.is_object())
                throw ImportError(fmt::format("{}: the dump is a JSON {}, expected an object with 'task' and "
                                              "'data'",
                                              m_file.string(), v.type_name()));
            return true;
        }
        if (m_depth == 2 && m_topKey == "data") {
            m_sawData = true;
            if (!v.is_object())
                throw ImportError(fmt::format("{}: 'data' is a JSON {}, expected an object of entries",
                                              m_file.string(), v.type_name()));
            return true;
        }
        if (m_depth == 3 && m_topKey == "data") {
            m_entry = std::move(v);
            m_stack.push_back(&m_entry);
            return true;
        }
        if (m_stack.empty())
            return true; // inside another top-level value: skipped
        Json& top = *m_stack.back();
        if (top.is_array()) {
            top.push_back(std::move(v));
            m_stack.push_back(&top.back());
        } else {
            top[m_key] = std::move(v);
            m_stack.push_back(&top[m_key]);
        }
        return true;
    }
    bool close() {
        if (!m_stack.empty())
            m_stack.pop_back();
        if (m_depth == 3 && m_topKey == "data") {
            readEntry(m_file, m_entryName, m_entry, m_part, m_out);
            m_entry = Json();
        }
        --m_depth;
        return true;
    }

    const fs::path& m_file;
    DumpPart m_part;
    DumpFile& m_out;
    int m_depth = 0, m_maxDepth = 0;
    std::string m_topKey, m_entryName, m_key;
    Json m_entry;
    std::vector<Json*> m_stack;
    bool m_sawData = false;
    Json::value_t m_rootType = Json::value_t::discarded;
};

} // namespace

DumpFile readDumpFile(const fs::path& file, DumpPart part) {
    std::ifstream in(file, std::ios::binary);
    if (!in)
        throw ImportError(fmt::format("{}: cannot be read", file.string()));
    NonFiniteTokens tokens(in);
    std::istream text(&tokens);
    DumpFile out;
    DumpSax sax(file, part, out);
    Json::sax_parse(text, &sax);
    if (sax.depthSeen() == 0)
        throw ImportError(fmt::format("{}: the dump is a JSON {}, expected an object with 'task' and 'data'",
                                      file.string(), Json(sax.rootType()).type_name()));
    if (!sax.sawData())
        throw ImportError(fmt::format("{}: no 'data' object (the dump's entries)", file.string()));
    if (out.task.empty())
        throw ImportError(fmt::format("{}: no 'task' (statistics, tensor, md5)", file.string()));
    return out;
}

} // namespace rs::msprobe
