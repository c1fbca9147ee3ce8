// A table column of the run file as a schema row: its layout (path, dtype, row dims, flags), the record
// member it holds, and the compile-time rules that keep the two consistent. RunSchema.h lists the tables; the
// code that reads or writes them (RunWriter, Hdf5RunReader, RecordWire.h, CsvExport) iterates rows with
// forEachColumn. No HDF5 types here: Hdf5Types.h maps Dtype and Row to HDF5.
#pragma once

#include "store/RecordFields.h"

#include <array>
#include <concepts>
#include <cstdint>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>

namespace rs::runschema {

inline constexpr int kEventCodeLen = 32;     // bytes incl. the terminating NUL
inline constexpr int kEventMessageLen = 256; // bytes incl. the terminating NUL
inline constexpr int kReasonLen = 256;       // stop reason, flight dump reason

enum class Dtype : uint8_t { I32, I64, U8, U32, U64, F32, F64, Str32, Str256 };

// Dims of one row of a table (after the leading, extendible row dimension).
// R world size, B batch per rank, P parameter tensors, K sketch dim, T total parameter elements.
enum class Row : uint8_t { Scalar, R, RB, RP, RPK, T };

// deflate: shuffle + deflate(1). Off for per-rank float columns whose mantissas are noise (gradient
// statistics, sketches, flight tensors): zlib saves ~10-15% there but costs ~4 ms per ResNet-50 step on 8
// ranks. On for everything that repeats across ranks (synced values, fingerprints), counts (mostly 0), and
// small rows.
struct Column {
    const char* path;
    Dtype dtype;
    Row row;
    bool deflate = true;
    // Added to format 2 after its first files were written: a file without it opens, and the column reads
    // as absent (RunMeta::absent names it, its values are zeros). Old readers ignore it in new files.
    bool addedLater = false;
    // A rank's vector may be shorter than its part of the row; the rest is -1 (sample ids, up to B). Any
    // other vector is all there or empty: not recorded, stored as NaN (floats) or 0 (integers).
    bool padded = false;
};

// A table row's flags beyond its path, dtype and dims (see Column).
struct ColumnOptions {
    bool deflate = true;
    bool addedLater = false;
    bool padded = false;
};

// The flight entries' `dump` column: the row of the /flight/dumps record an entry belongs to. The entry does
// not hold it: the writer knows it, the reader groups entries by it.
struct ParentRow {};

// One row of a table: its id (the row's index, an enum value below), its layout in the file, and where its
// values are in the table's record: a member of the record, a member of the per-rank records in its `ranks`
// (RankStep in StepRecord), or ParentRow. Everything that reads or writes a table iterates these rows:
// RunWriter, Hdf5RunReader, the wire (RecordWire.h), CSV export, `ranksight-cli schema`.
template <class Field> struct TableColumn {
    int id;
    Column layout;
    Field field;
};

template <class Field>
constexpr TableColumn<Field> col(int id, const char* path, Dtype dtype, Row row, Field field,
                                 ColumnOptions o = {}) {
    return {id, Column{path, dtype, row, o.deflate, o.addedLater, o.padded}, field};
}

// Calls f(row) for each row of a table, in order.
template <class Table, class F> constexpr void forEachColumn(const Table& table, F&& f) {
    std::apply([&](const auto&... c) { (f(c), ...); }, table);
}

// Whether a row's value is a member of the table's record itself (else of its per-rank records).
template <class Record, class Field> constexpr bool ownField() {
    if constexpr (std::is_same_v<Field, ParentRow>)
        return true;
    else
        return std::is_same_v<fields::RecordOf<Field>, Record>;
}

// A record's per-rank records (StepRecord::ranks) for a row whose member is in them. Depends on the row's
// field, so that generic code also compiles for records without `ranks` (the branch that uses it is
// discarded only once the field is known).
template <class Field, class Record> constexpr auto& perRank(Record& rec) {
    return rec.ranks;
}

// Whether a row's value is a vector of the record itself that is the whole row (Row::R or Row::T).
template <class Record, class Field> constexpr bool wholeRowVector() {
    if constexpr (std::is_same_v<Field, ParentRow> || !ownField<Record, Field>())
        return false;
    else
        return fields::kDepth<fields::ValueOf<Field>> == 1;
}

// Whether elements of C++ type T are stored as dtype t exactly (nothing is converted on the way).
template <class T> constexpr bool holds(Dtype t) {
    using S = fields::Stored<T>;
    switch (t) {
    case Dtype::I32:
        return std::is_same_v<S, int32_t>;
    case Dtype::I64:
        return std::is_same_v<S, int64_t>;
    case Dtype::U8:
        return std::is_same_v<S, uint8_t>;
    case Dtype::U32:
        return std::is_same_v<S, uint32_t>;
    case Dtype::U64:
        return std::is_same_v<S, uint64_t>;
    case Dtype::F32:
        return std::is_same_v<S, float>;
    case Dtype::F64:
        return std::is_same_v<S, double>;
    case Dtype::Str32:
    case Dtype::Str256:
        return fields::kIsString<T>;
    }
    return false;
}

// A row that breaks a rule below calls one of these while the table is checked at compile time: they are not
// constexpr, so the build fails with an error that names the rule and shows the row's member type.
namespace rowerror {
inline void notAtItsEnumPosition() {}
inline void dtypeIsNotTheMembersType() {}
inline void dimsDoNotFitTheMember() {}
inline void memberIsNotInTheTablesRecords() {}
inline void onlyPerRankIntegerVectorsArePadded() {}
inline void keyIsNotAnInt64Scalar() {}
} // namespace rowerror

// Where a value sits decides the row's dims: an element per row is Scalar; a vector that is the whole row is
// R or T; a vector per rank ([rank][param]) is RP; a per-rank record's element is R, its vector RB, RP or
// RPK.
template <class Record, class Field> constexpr bool validColumn(const TableColumn<Field>& c, int index) {
    if (c.id != index)
        rowerror::notAtItsEnumPosition();
    const Row r = c.layout.row;
    if constexpr (std::is_same_v<Field, ParentRow>) {
        if (c.layout.dtype != Dtype::I64 || r != Row::Scalar)
            rowerror::dimsDoNotFitTheMember();
    } else {
        using V = fields::ValueOf<Field>;
        constexpr int depth = fields::kDepth<V>;
        if (!holds<fields::Element<V>>(c.layout.dtype))
            rowerror::dtypeIsNotTheMembersType();
        bool fits = false;
        if constexpr (ownField<Record, Field>())
            fits = depth == 0 ? r == Row::Scalar : depth == 1 ? (r == Row::R || r == Row::T) : r == Row::RP;
        else if constexpr (requires(const Record& x) {
                               { x.ranks[0] } -> std::same_as<const fields::RecordOf<Field>&>;
                           })
            fits = depth == 0 ? r == Row::R : depth == 1 && (r == Row::RB || r == Row::RP || r == Row::RPK);
        else
            rowerror::memberIsNotInTheTablesRecords();
        if (!fits)
            rowerror::dimsDoNotFitTheMember();
        if (c.layout.padded &&
            (ownField<Record, Field>() || depth != 1 || !std::is_integral_v<fields::Element<V>>))
            rowerror::onlyPerRankIntegerVectorsArePadded();
    }
    return true;
}

template <class Record, class... F> constexpr bool validTable(const std::tuple<TableColumn<F>...>& table) {
    int index = 0;
    bool ok = std::apply([&](const auto&... c) { return (validColumn<Record>(c, index++) && ...); }, table);
    const Column& key = std::get<sizeof...(F) - 1>(table).layout;
    if (key.dtype != Dtype::I64 || key.row != Row::Scalar)
        rowerror::keyIsNotAnInt64Scalar();
    return ok;
}

// A table's layouts alone, indexed by its enum (RunSchema.h's kStepColumns).
template <class... F>
constexpr std::array<Column, sizeof...(F)> layoutsOf(const std::tuple<TableColumn<F>...>& t) {
    return std::apply([](const auto&... c) { return std::array<Column, sizeof...(F)>{c.layout...}; }, t);
}

// A snake_case name as RunRecords.h spells members: "synced_fp" -> "syncedFp".
inline std::string camelCase(std::string_view name) {
    std::string out;
    bool upper = false;
    for (char ch : name) {
        if (ch == '_') {
            upper = true;
            continue;
        }
        out += upper && ch >= 'a' && ch <= 'z' ? char(ch - 'a' + 'A') : ch;
        upper = false;
    }
    return out;
}

// The record member a column holds, as messages name it: the dataset's name in camelCase, which is how
// RunRecords.h spells its fields ("/grads/synced_fp" -> "syncedFp").
inline std::string fieldName(const Column& c) {
    const std::string_view path = c.path;
    return camelCase(path.substr(path.rfind('/') + 1));
}

inline int dtypeBytes(Dtype t) {
    switch (t) {
    case Dtype::U8:
        return 1;
    case Dtype::I32:
    case Dtype::U32:
    case Dtype::F32:
        return 4;
    case Dtype::I64:
    case Dtype::U64:
    case Dtype::F64:
        return 8;
    case Dtype::Str32:
        return kEventCodeLen;
    case Dtype::Str256:
        return kEventMessageLen;
    }
    return 1;
}

inline const char* dtypeName(Dtype t) {
    switch (t) {
    case Dtype::I32:
        return "int32";
    case Dtype::I64:
        return "int64";
    case Dtype::U8:
        return "uint8";
    case Dtype::U32:
        return "uint32";
    case Dtype::U64:
        return "uint64";
    case Dtype::F32:
        return "float32";
    case Dtype::F64:
        return "float64";
    case Dtype::Str32:
        return "string[32]";
    case Dtype::Str256:
        return "string[256]";
    }
    return "?";
}

} // namespace rs::runschema
