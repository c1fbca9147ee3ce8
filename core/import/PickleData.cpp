// readPickleData: see PickleData.h. A stack machine over Python's pickle opcodes (Lib/pickletools.py
// documents each), restricted to the ones that build plain values.
#include "import/PickleData.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fmt/format.h>
#include <unordered_map>
#include <vector>

namespace rs {
namespace {

using Json = nlohmann::json;

constexpr size_t kMaxDepth = 64;              // dumps nest 4 deep (entries, entry, frames, frame)
constexpr uint64_t kMaxStringBytes = 1 << 24; // one string
constexpr uint64_t kNodeBytes = 16;           // what a value costs beyond its string bytes, roughly
// What a file may build in all (memo copies and references included), from its own size: a dump expands
// about 10x (memo references to shared frames), a hostile file that references itself to double its size
// each time is stopped long before it fills the memory.
uint64_t budgetFor(size_t fileBytes) {
    return (uint64_t(64) << 20) + 64 * uint64_t(fileBytes);
}

// Opcodes that import or call Python objects, by the name pickletools gives them: the refusal names it.
const char* forbiddenName(uint8_t op) {
    switch (op) {
    case 'c':
        return "GLOBAL";
    case 0x93:
        return "STACK_GLOBAL";
    case 'R':
        return "REDUCE";
    case 'b':
        return "BUILD";
    case 'i':
        return "INST";
    case 'o':
        return "OBJ";
    case 0x81:
        return "NEWOBJ";
    case 0x92:
        return "NEWOBJ_EX";
    case 'P':
        return "PERSID";
    case 'Q':
        return "BINPERSID";
    case 0x82:
    case 0x83:
    case 0x84:
        return "EXT";
    default:
        return nullptr;
    }
}

// A value on the stack, with how deep it nests and how many values it holds (itself included): kept as it is
// built, so that no check walks a value (a hostile one could nest deep enough to overflow a recursive walk).
struct Val {
    explicit Val(Json value = {}, uint32_t d = 0, uint64_t b = kNodeBytes)
        : v(std::move(value))
        , depth(d)
        , bytes(b) {}
    Json v;
    uint32_t depth;
    uint64_t bytes;                // what it holds, roughly (strings' bytes, kNodeBytes per value)
    uint64_t id = 0;               // a container's identity while it is on the stack (memo references)
    std::vector<uint64_t> aliases; // memo ids naming this very container
};

// A memo entry: a copy of the value, or, for a container still being filled on the stack (Python memoizes a
// container when it is created, then fills it), a reference to its stack slot, copied when it leaves.
struct MemoEntry {
    Val value;
    bool live = false;
    size_t slot = 0;
    uint64_t id = 0;
};

class Machine {
public:
    Machine(std::string_view bytes, const std::string& name)
        : m_in(bytes)
        , m_name(name)
        , m_limit(budgetFor(bytes.size())) {}

    Json run() {
        while (true) {
            if (m_pos >= m_in.size())
                fail("the pickle ends before its STOP opcode (the file is truncated)");
            m_opAt = m_pos;
            const uint8_t op = uint8_t(m_in[m_pos++]);
            if (op == '.')
                return finish();
            step(op);
        }
    }

private:
    [[noreturn]] void fail(const std::string& what) const {
        throw ImportError(fmt::format("{}: byte {}: {}", m_name, m_opAt, what));
    }

    std::string_view take(uint64_t n) {
        if (n > m_in.size() - m_pos)
            fail(fmt::format("the pickle ends inside a value ({} bytes announced, {} left: truncated)", n,
                             m_in.size() - m_pos));
        const std::string_view s = m_in.substr(m_pos, size_t(n));
        m_pos += size_t(n);
        return s;
    }
    template <class T> T little() {
        T v{};
        std::memcpy(&v, take(sizeof(T)).data(), sizeof(T));
        return v; // x86 and ARM Linux are little-endian, as pickle's binary integers are
    }

    void charge(uint64_t bytes) {
        m_budget += bytes;
        if (m_budget > m_limit)
            fail(fmt::format("the pickle expands into more than {} MiB (memo references repeated): refused",
                             m_limit >> 20));
    }
    void push(Val v) {
        charge(v.bytes);
        if (v.v.is_structured())
            v.id = ++m_ids;
        m_stack.push_back(std::move(v));
    }
    void push(Json v) { push(Val(std::move(v))); }
    Val pop(const char* opName) {
        if (m_stack.size() <= floor())
            fail(fmt::format("{} with nothing on the stack", opName));
        Val v = std::move(m_stack.back());
        m_stack.pop_back();
        return v;
    }
    Val& top(const char* opName) {
        if (m_stack.size() <= floor())
            fail(fmt::format("{} with nothing on the stack", opName));
        return m_stack.back();
    }
    size_t floor() const { return m_marks.empty() ? 0 : m_marks.back(); }
    // The items pushed since the last MARK, which is dropped.
    std::vector<Val> popMark(const char* opName) {
        if (m_marks.empty())
            fail(fmt::format("{} without a MARK", opName));
        const size_t at = m_marks.back();
        m_marks.pop_back();
        std::vector<Val> items(std::make_move_iterator(m_stack.begin() + long(at)),
                               std::make_move_iterator(m_stack.end()));
        m_stack.resize(at);
        return items;
    }
    // `child` leaves the stack into `parent`: the parent's depth and size follow, and the memo entries that
    // referenced the child on the stack keep a copy of it as it is now.
    void adopt(Val& parent, Val& child) {
        parent.depth = std::max(parent.depth, child.depth + 1);
        parent.bytes += child.bytes;
        if (parent.depth > kMaxDepth)
            fail(fmt::format("values nest more than {} levels deep", kMaxDepth));
        leaving(child);
    }
    void leaving(Val& v) {
        for (uint64_t alias : v.aliases) {
            MemoEntry& e = m_memo[alias];
            if (!e.live || e.id != v.id)
                continue;
            charge(v.bytes);
            e.value = Val(v.v, v.depth, v.bytes);
            e.live = false;
        }
        v.aliases.clear();
    }
    // A new container of `items`, as an array.
    Val arrayOf(std::vector<Val>& items) {
        Val t(Json::array());
        for (Val& x : items) {
            adopt(t, x);
            t.v.push_back(std::move(x.v));
        }
        return t;
    }

    std::string key(const Json& k) const {
        if (k.is_string())
            return k.get<std::string>();
        if (k.is_number_integer())
            return std::to_string(k.get<int64_t>());
        fail(fmt::format("a dict key is a {}, not a string or an integer", k.type_name()));
    }
    void setItems(Val& dict, std::vector<Val>& kv, const char* opName) {
        if (!dict.v.is_object())
            fail(fmt::format("{} on a {}, not a dict", opName, dict.v.type_name()));
        if (kv.size() % 2)
            fail(fmt::format("{} with an odd number of keys and values", opName));
        for (size_t i = 0; i < kv.size(); i += 2) {
            adopt(dict, kv[i + 1]);
            leaving(kv[i]);
            dict.v[key(kv[i].v)] = std::move(kv[i + 1].v);
        }
    }
    void append(Val& list, std::vector<Val>& items, const char* opName) {
        if (!list.v.is_array())
            fail(fmt::format("{} on a {}, not a list", opName, list.v.type_name()));
        for (Val& x : items) {
            adopt(list, x);
            list.v.push_back(std::move(x.v));
        }
    }

    // PyTorch's Pickler memoizes a container once it is complete; Python's pickle when it is still empty, and
    // fills it afterwards: an entry for a container on the stack references its slot until it leaves.
    void put(uint64_t id) {
        Val& v = top("a memo PUT");
        MemoEntry e;
        if (v.v.is_structured()) {
            e.live = true;
            e.slot = m_stack.size() - 1;
            e.id = v.id;
            v.aliases.push_back(id);
        } else {
            charge(v.bytes);
            e.value = Val(v.v, v.depth, v.bytes);
        }
        m_memo[id] = std::move(e);
    }
    void get(uint64_t id) {
        const auto it = m_memo.find(id);
        if (it == m_memo.end())
            fail(fmt::format("memo reference {} to nothing stored", id));
        const MemoEntry& e = it->second;
        const Val& src =
            e.live && e.slot < m_stack.size() && m_stack[e.slot].id == e.id ? m_stack[e.slot] : e.value;
        if (e.live && &src == &e.value)
            fail(fmt::format("memo reference {} to a value no longer on the stack", id));
        push(Val(src.v, src.depth, src.bytes));
    }
    void string(uint64_t n) {
        if (n > kMaxStringBytes)
            fail(fmt::format("a string of {} bytes (more than 16 MiB)", n));
        push(Val(Json(std::string(take(n))), 0, kNodeBytes + n));
    }
    void tuple(size_t n) {
        if (m_stack.size() < floor() + n)
            fail(fmt::format("TUPLE{} with {} values on the stack", n, m_stack.size() - floor()));
        std::vector<Val> items(std::make_move_iterator(m_stack.end() - long(n)),
                               std::make_move_iterator(m_stack.end()));
        m_stack.resize(m_stack.size() - n);
        m_stack.push_back(arrayOf(items));
    }

    void step(uint8_t op) {
        if (const char* bad = forbiddenName(op))
            fail(fmt::format("opcode {} (0x{:02x}) would import or call Python code; a dump holds only data, "
                             "so the file is refused (nothing was run)",
                             bad, op));
        switch (op) {
        case 0x80: // PROTO
            if (const uint8_t v = little<uint8_t>(); v < 2 || v > 5)
                fail(fmt::format("pickle protocol {} (2 to 5 are read)", v));
            return;
        case 0x95: // FRAME (protocol 4): a length hint only
            little<uint64_t>();
            return;
        case '(': // MARK
            m_marks.push_back(m_stack.size());
            if (m_marks.size() > 4 * kMaxDepth)
                fail(fmt::format("MARKs nest more than {} levels deep", 4 * kMaxDepth));
            return;
        case '}':
            return push(Json::object());
        case ']':
        case ')': // EMPTY_TUPLE: tuples are read as lists
            return push(Json::array());
        case 'u': { // SETITEMS
            std::vector<Val> kv = popMark("SETITEMS");
            return setItems(top("SETITEMS"), kv, "SETITEMS");
        }
        case 's': { // SETITEM
            Val v = pop("SETITEM");
            Val k = pop("SETITEM");
            std::vector<Val> kv;
            kv.push_back(std::move(k));
            kv.push_back(std::move(v));
            return setItems(top("SETITEM"), kv, "SETITEM");
        }
        case 'e': { // APPENDS
            std::vector<Val> items = popMark("APPENDS");
            return append(top("APPENDS"), items, "APPENDS");
        }
        case 'a': { // APPEND
            std::vector<Val> items;
            items.push_back(pop("APPEND"));
            return append(top("APPEND"), items, "APPEND");
        }
        case 't': { // TUPLE
            std::vector<Val> items = popMark("TUPLE");
            m_stack.push_back(arrayOf(items));
            return;
        }
        case 0x85:
            return tuple(1);
        case 0x86:
            return tuple(2);
        case 0x87:
            return tuple(3);
        case 'l': { // LIST (protocol 0/1 form of a list)
            std::vector<Val> items = popMark("LIST");
            m_stack.push_back(arrayOf(items));
            return;
        }
        case 'd': { // DICT
            std::vector<Val> kv = popMark("DICT");
            Val d(Json::object());
            setItems(d, kv, "DICT");
            m_stack.push_back(std::move(d));
            return;
        }
        case 'X': // BINUNICODE
            return string(little<uint32_t>());
        case 0x8c: // SHORT_BINUNICODE
            return string(little<uint8_t>());
        case 0x8d: // BINUNICODE8
            return string(little<uint64_t>());
        case 'q': // BINPUT
            return put(little<uint8_t>());
        case 'r': // LONG_BINPUT
            return put(little<uint32_t>());
        case 0x94: // MEMOIZE
            return put(m_memo.size());
        case 'h': // BINGET
            return get(little<uint8_t>());
        case 'j': // LONG_BINGET
            return get(little<uint32_t>());
        case 'K': // BININT1
            return push(Json(int64_t(little<uint8_t>())));
        case 'M': // BININT2
            return push(Json(int64_t(little<uint16_t>())));
        case 'J': // BININT
            return push(Json(int64_t(little<int32_t>())));
        case 0x8a: { // LONG1: little-endian two's complement of n bytes
            const uint8_t n = little<uint8_t>();
            if (n > 8)
                fail(fmt::format("an integer of {} bytes (more than 64 bits)", n));
            const std::string_view b = take(n);
            uint64_t v = 0;
            for (size_t i = 0; i < n; ++i)
                v |= uint64_t(uint8_t(b[i])) << (8 * i);
            if (n > 0 && n < 8 && (uint8_t(b[n - 1]) & 0x80))
                v |= ~uint64_t(0) << (8 * n); // sign-extend
            return push(Json(int64_t(v)));
        }
        case 'G': { // BINFLOAT: big-endian IEEE double
            uint64_t raw = 0;
            for (char c : take(8))
                raw = (raw << 8) | uint8_t(c);
            return push(Json(std::bit_cast<double>(raw)));
        }
        case 0x88:
            return push(Json(true));
        case 0x89:
            return push(Json(false));
        case 'N':
            return push(Json(nullptr));
        case '0': { // POP
            Val v = pop("POP");
            leaving(v);
            return;
        }
        default:
            fail(fmt::format("opcode 0x{:02x} is not one that builds plain data (dicts, lists, strings, "
                             "numbers): not a flight-recorder dump, or a newer pickle",
                             op));
        }
    }

    Json finish() {
        if (!m_marks.empty())
            fail("STOP inside an unfinished MARK");
        if (m_stack.size() != 1)
            fail(fmt::format("STOP with {} values on the stack, expected 1", m_stack.size()));
        if (m_pos != m_in.size())
            fail(fmt::format("{} bytes after the pickle's STOP", m_in.size() - m_pos));
        return std::move(m_stack.back().v);
    }

    std::string_view m_in;
    const std::string& m_name;
    size_t m_pos = 0, m_opAt = 0;
    std::vector<Val> m_stack;
    std::vector<size_t> m_marks;
    std::unordered_map<uint64_t, MemoEntry> m_memo;
    uint64_t m_budget = 0, m_limit = 0, m_ids = 0;
};

} // namespace

nlohmann::json readPickleData(std::string_view bytes, const std::string& name) {
    return Machine(bytes, name).run();
}

} // namespace rs
