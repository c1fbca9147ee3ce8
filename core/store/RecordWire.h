// The records of RunRecords.h as bytes, for the two places that carry them between processes: the reader
// process's answers (core/reader/ReaderProtocol.h) and the node exchange of a multi-node run
// (core/train/StepRecorderNodes.cpp). Both ends are the same build, so the encoding is plain: little-endian
// numbers as they are in memory, strings and vectors as a count and their bytes. A record is the members its
// table's rows name (RunSchema.h), in table order, then RecordTable<R>::extras: adding a column changes the
// wire with no edit here. The decoder checks every count against the bytes that are left (a reader process
// that libhdf5 corrupted, or a damaged message, must not make the receiver allocate or read out of bounds).
#pragma once

#include "store/RecordFields.h"
#include "store/RunRecords.h"
#include "store/RunSchema.h"

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

namespace rs::recordwire {

// A malformed message (from a reader process that went wrong, or a node that sent garbage).
class ProtocolError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

class Writer {
public:
    template <class T> void pod(T v) {
        static_assert(std::is_arithmetic_v<T>);
        m_buf.append(reinterpret_cast<const char*>(&v), sizeof v);
    }
    void str(std::string_view s) {
        pod<uint64_t>(s.size());
        m_buf.append(s);
    }
    template <class T> void vec(const std::vector<T>& v) {
        static_assert(std::is_arithmetic_v<T>);
        pod<uint64_t>(v.size());
        m_buf.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
    }
    std::string& bytes() { return m_buf; }

private:
    std::string m_buf;
};

class Reader {
public:
    explicit Reader(std::string_view bytes)
        : m_p(bytes.data())
        , m_end(bytes.data() + bytes.size()) {}
    template <class T> T pod() {
        static_assert(std::is_arithmetic_v<T>);
        need(sizeof(T));
        T v;
        std::memcpy(&v, m_p, sizeof v);
        m_p += sizeof v;
        return v;
    }
    std::string str() {
        const uint64_t n = count(1);
        std::string s(m_p, size_t(n));
        m_p += n;
        return s;
    }
    template <class T> std::vector<T> vec() {
        static_assert(std::is_arithmetic_v<T>);
        const uint64_t n = count(sizeof(T));
        std::vector<T> v(static_cast<size_t>(n));
        if (n)
            std::memcpy(v.data(), m_p, size_t(n) * sizeof(T));
        m_p += n * sizeof(T);
        return v;
    }
    // A count of elements of at least `elemBytes` each that the rest of the payload can hold.
    uint64_t count(size_t elemBytes) {
        const uint64_t n = pod<uint64_t>();
        if (elemBytes && n > uint64_t(m_end - m_p) / elemBytes)
            throw ProtocolError("a count larger than the rest of the message");
        return n;
    }
    bool atEnd() const { return m_p == m_end; }

private:
    void need(size_t n) const {
        if (size_t(m_end - m_p) < n)
            throw ProtocolError("the message ends early");
    }
    const char* m_p;
    const char* m_end;
};

namespace detail {

template <class R> inline constexpr bool kIsRecord = requires {
    runschema::RecordTable<R>::columns;
};

// Calls f(member pointer) for each member of R on the wire: its table's rows that name a member of R, in
// table order, then its extras.
template <class R, class F> constexpr void forEachMember(F&& f) {
    runschema::forEachColumn(runschema::RecordTable<R>::columns, [&](const auto& col) {
        using Field = std::remove_cvref_t<decltype(col.field)>;
        if constexpr (!std::is_same_v<Field, runschema::ParentRow>)
            if constexpr (std::is_same_v<fields::RecordOf<Field>, R>)
                f(col.field);
    });
    std::apply([&](auto... m) { (f(m), ...); }, runschema::RecordTable<R>::extras);
}

// The fewest bytes a value can take on the wire: what a count is checked against.
template <class V> constexpr size_t minBytes() {
    if constexpr (std::is_arithmetic_v<V> || std::is_enum_v<V>) {
        return sizeof(V);
    } else if constexpr (kIsRecord<V>) {
        size_t n = 0;
        forEachMember<V>([&](auto m) { n += minBytes<fields::ValueOf<decltype(m)>>(); });
        return n;
    } else {
        return sizeof(uint64_t); // a string's or a vector's count
    }
}

template <class V> void putValue(Writer& w, const V& v);
template <class V> void getValue(Reader& r, V& v);

template <class R> void putRecord(Writer& w, const R& rec) {
    forEachMember<R>([&](auto m) { putValue(w, rec.*m); });
}

template <class R> void getRecord(Reader& r, R& rec) {
    forEachMember<R>([&](auto m) { getValue(r, rec.*m); });
}

template <class V> void putValue(Writer& w, const V& v) {
    if constexpr (std::is_arithmetic_v<V>) {
        w.pod(v);
    } else if constexpr (std::is_enum_v<V>) {
        w.pod(static_cast<std::underlying_type_t<V>>(v));
    } else if constexpr (fields::kIsString<V>) {
        w.str(v);
    } else if constexpr (fields::kIsVector<V>) {
        if constexpr (std::is_arithmetic_v<typename V::value_type>) {
            w.vec(v);
        } else {
            w.pod<uint64_t>(v.size());
            for (const auto& e : v)
                putValue(w, e);
        }
    } else {
        putRecord(w, v);
    }
}

template <class V> void getValue(Reader& r, V& v) {
    if constexpr (std::is_arithmetic_v<V>) {
        v = r.pod<V>();
    } else if constexpr (std::is_enum_v<V>) {
        v = runschema::fromStored<V>(r.pod<std::underlying_type_t<V>>());
    } else if constexpr (fields::kIsString<V>) {
        v = r.str();
    } else if constexpr (fields::kIsVector<V>) {
        using E = typename V::value_type;
        if constexpr (std::is_arithmetic_v<E>) {
            v = r.vec<E>();
        } else {
            v.resize(size_t(r.count(minBytes<E>())));
            for (auto& e : v)
                getValue(r, e);
        }
    } else {
        getRecord(r, v);
    }
}

} // namespace detail

// Records of one table (StepRecord, WeightRecord, EvalRecord, Event, FlightDump) as a count and the records.
template <class R> void put(Writer& w, const std::vector<R>& records) {
    detail::putValue(w, records);
}

template <class R> std::vector<R> get(Reader& r) {
    std::vector<R> records;
    detail::getValue(r, records);
    return records;
}

} // namespace rs::recordwire
