// The run file's root attributes as schema rows, like table columns (ColumnTable.h): each row names the
// attribute, its type, whether files must have it, the values a reader accepts, and the RunMeta member it
// holds. RunWriter writes the rows in this order (and checks a RunMeta against their ranges), Hdf5RunReader
// reads and checks them (Hdf5RunReaderRoot.cpp), and `ranksight-cli schema` lists them (python/ranksight/
// runfile.py is checked against that). Adding one: docs/run-file.md, "Adding a root attribute".
// No HDF5 types here.
#pragma once

#include "store/RecordFields.h"
#include "store/RunLimits.h"
#include "store/RunRecords.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

namespace rs::runschema {

inline constexpr std::string_view kFormatName = "ranksight-run";
// Bump when a reader of the previous version would misread a new file, or when the new layout lets a reader
// refuse what it had to accept before. Adding groups, datasets or attributes that old readers can ignore does
// not bump it (see docs/run-file.md, "Versioning").
// 2: root string attributes are fixed-length (1 had variable-length ones, which a reader of 2 still reads,
// and refuses in a file that says 2).
// 3: /grads/local_fp may be defined otherwise, as the root attribute local_fp_version says (a reader of 2
// would compare such fingerprints with another file's as if they were alike).
inline constexpr int kFormatVersion = 3;

// Root attribute names, for the code that asks whether a file recorded one (RunMeta::recorded).
inline constexpr const char* kAttrFormat = "format";                // kFormatName
inline constexpr const char* kAttrFormatVersion = "format_version"; // kFormatVersion
inline constexpr const char* kAttrCreated = "created";              // ISO 8601 UTC
inline constexpr const char* kAttrModel = "model";
inline constexpr const char* kAttrWorldSize = "world_size";        // R
inline constexpr const char* kAttrBatchPerRank = "batch_per_rank"; // B
inline constexpr const char* kAttrPrecision = "precision";
inline constexpr const char* kAttrLossScale = "loss_scale";
inline constexpr const char* kAttrData = "data";
inline constexpr const char* kAttrSeed = "seed";
inline constexpr const char* kAttrSketchDim = "sketch_dim"; // K
inline constexpr const char* kAttrWeightEvery = "weight_every";
inline constexpr const char* kAttrPlannedSteps = "planned_steps";
inline constexpr const char* kAttrConfig = "config";           // JSON
inline constexpr const char* kAttrRankTable = "rank_table";    // JSON (hccl.json)
inline constexpr const char* kAttrEnvironment = "environment"; // JSON
// Who wrote the file: ranksight-engine | pytorch-ddp | msprobe. Files without it were written by the engine.
inline constexpr const char* kAttrSource = "source";
inline constexpr const char* kDefaultSource = "ranksight-engine";
// The datasets the source could not record, comma-separated paths of step and weight columns (e.g.
// "/grads/sketch,/grads/synced_fp"), and root attributes it could not know. Their rows hold the "missing"
// fill (NaN, 0, -1) and diagnosis does not read them. Files without the attribute recorded everything.
inline constexpr const char* kAttrAbsent = "absent";
// How /grads/local_fp is defined (docs/run-file.md, "Fingerprints"): 1, a chain over the bytes in order; 2, a
// sum over the elements that does not depend on how the tensor is cut (PieceFingerprint), which the engine
// takes in pieces in the all-reduce's own read. Files without it hold 1. Fingerprints of different versions
// are never compared.
inline constexpr const char* kAttrLocalFpVersion = "local_fp_version";
inline constexpr int kLocalFpVersion = 2; // what the engine writes

// How an attribute is stored. A string is fixed-length, exactly as long as its value and its NUL: no
// variable-length string, whose global-heap indirection is where damaged files crash libhdf5's reader
// (format_version 1 files hold variable-length ones, which readers still read).
enum class AttrType : uint8_t { Str, I32, I64, U64 };

// A root attribute's layout.
struct Attribute {
    const char* name;
    AttrType type;
    // Files may lack it (they predate it): such a file reads as a default-constructed RunMeta's member. The
    // writer leaves it out when its value is empty and so is that default, and writes the default for an
    // empty value otherwise.
    bool optional = false;
    // A source may declare it absent (kAttrAbsent) when it cannot know it (an msprobe tree names no model,
    // batch, precision, loss scale or seed): the attribute then holds a placeholder that no view shows.
    bool mayBeAbsent = false;
    // I32 and I64: the values a reader accepts and the writer checks a RunMeta against. U64 takes any value.
    int64_t lo = INT64_MIN, hi = INT64_MAX;
};

struct AttrOptions {
    bool optional = false;
    bool mayBeAbsent = false;
    int64_t lo = INT64_MIN, hi = INT64_MAX;
};
inline constexpr AttrOptions kInt32Range{.lo = INT32_MIN, .hi = INT32_MAX};
inline constexpr AttrOptions kOptional{.optional = true};
inline constexpr AttrOptions kMayBeAbsent{.mayBeAbsent = true};

// The two attributes that say what the file is; no RunMeta member holds them. The reader checks them first,
// with their own messages ("not a RankSight run file", "written by a newer RankSight").
struct FormatName {};    // kFormatName
struct FormatVersion {}; // kFormatVersion

// One root attribute: its layout and where its value is: a RunMeta member, FormatName or FormatVersion.
// A std::vector<std::string> member (RunMeta::absent) is stored as one comma-separated string.
template <class Field> struct RootAttribute {
    Attribute layout;
    Field field;
};

template <class Field>
constexpr RootAttribute<Field> rootAttr(const char* name, AttrType type, Field field, AttrOptions o = {}) {
    return {Attribute{name, type, o.optional, o.mayBeAbsent, o.lo, o.hi}, field};
}

// In the order they are written and read.
inline constexpr std::tuple kRootAttributes{
    rootAttr(kAttrFormat, AttrType::Str, FormatName{}),
    rootAttr(kAttrFormatVersion, AttrType::I32, FormatVersion{}, kInt32Range),
    rootAttr(kAttrCreated, AttrType::Str, &RunMeta::createdUtc),
    rootAttr(kAttrModel, AttrType::Str, &RunMeta::model, kMayBeAbsent),
    rootAttr(kAttrWorldSize, AttrType::I32, &RunMeta::worldSize, {.lo = 1, .hi = kMaxWorldSize}),
    rootAttr(kAttrBatchPerRank, AttrType::I32, &RunMeta::batchPerRank,
             {.mayBeAbsent = true, .lo = 0, .hi = kMaxBatch}),
    rootAttr(kAttrPrecision, AttrType::Str, &RunMeta::precision, kMayBeAbsent),
    rootAttr(kAttrLossScale, AttrType::Str, &RunMeta::lossScale, kMayBeAbsent),
    rootAttr(kAttrData, AttrType::Str, &RunMeta::data, kMayBeAbsent),
    rootAttr(kAttrSeed, AttrType::U64, &RunMeta::seed, kMayBeAbsent),
    rootAttr(kAttrSketchDim, AttrType::I32, &RunMeta::sketchDim, {.lo = 0, .hi = kMaxSketchDim}),
    rootAttr(kAttrWeightEvery, AttrType::I32, &RunMeta::weightEvery, kInt32Range),
    rootAttr(kAttrPlannedSteps, AttrType::I64, &RunMeta::plannedSteps),
    rootAttr(kAttrConfig, AttrType::Str, &RunMeta::configJson),
    rootAttr(kAttrRankTable, AttrType::Str, &RunMeta::rankTableJson),
    rootAttr(kAttrEnvironment, AttrType::Str, &RunMeta::environment),
    rootAttr(kAttrSource, AttrType::Str, &RunMeta::source, kOptional),
    rootAttr(kAttrAbsent, AttrType::Str, &RunMeta::absent, kOptional),
    rootAttr(kAttrLocalFpVersion, AttrType::I32, &RunMeta::localFpVersion,
             {.optional = true, .lo = 1, .hi = kLocalFpVersion}),
};

// Calls f(row) for each root attribute, in order.
template <class F> constexpr void forEachAttribute(F&& f) {
    std::apply([&](const auto&... a) { (f(a), ...); }, kRootAttributes);
}

// Whether a row's value is a RunMeta member (else FormatName or FormatVersion).
template <class Field> inline constexpr bool kMetaMember = std::is_member_object_pointer_v<Field>;

// A row that breaks a rule below calls one of these while the table is checked at compile time: they are not
// constexpr, so the build fails with an error that names the rule.
namespace attrerror {
inline void typeIsNotTheMembersType() {}
inline void memberIsNotInRunMeta() {}
inline void rangeIsOutsideTheType() {}
} // namespace attrerror

// The C++ type a member of this attribute type holds: strings (and the absent list) are Str, int is I32,
// int64_t I64, uint64_t U64.
template <class V> constexpr bool storedAs(AttrType t) {
    switch (t) {
    case AttrType::Str:
        return fields::kIsString<V> || std::is_same_v<V, std::vector<std::string>>;
    case AttrType::I32:
        return std::is_same_v<V, int32_t>;
    case AttrType::I64:
        return std::is_same_v<V, int64_t>;
    case AttrType::U64:
        return std::is_same_v<V, uint64_t>;
    }
    return false;
}

template <class Field> constexpr bool validAttribute(const RootAttribute<Field>& a) {
    const Attribute& l = a.layout;
    if constexpr (std::is_same_v<Field, FormatName>) {
        if (l.type != AttrType::Str)
            attrerror::typeIsNotTheMembersType();
    } else if constexpr (std::is_same_v<Field, FormatVersion>) {
        if (l.type != AttrType::I32)
            attrerror::typeIsNotTheMembersType();
    } else if constexpr (!std::is_same_v<fields::RecordOf<Field>, RunMeta>) {
        attrerror::memberIsNotInRunMeta();
    } else if (!storedAs<fields::ValueOf<Field>>(l.type)) {
        attrerror::typeIsNotTheMembersType();
    }
    if (l.type == AttrType::I32 && (l.lo < INT32_MIN || l.hi > INT32_MAX || l.lo > l.hi))
        attrerror::rangeIsOutsideTheType();
    return true;
}
static_assert(std::apply([](const auto&... a) { return (validAttribute(a) && ...); }, kRootAttributes));

inline constexpr size_t kRootAttributeCount = std::tuple_size_v<decltype(kRootAttributes)>;

// The rows' layouts alone, in order: for code that needs no RunMeta (`ranksight-cli schema`).
inline constexpr std::array<Attribute, kRootAttributeCount> kRootAttributeLayouts =
    std::apply([](const auto&... a) { return std::array<Attribute, kRootAttributeCount>{a.layout...}; },
               kRootAttributes);

inline constexpr const Attribute* findAttribute(std::string_view name) {
    for (const Attribute& a : kRootAttributeLayouts)
        if (name == a.name)
            return &a;
    return nullptr;
}

// The root attributes a file may declare absent (Attribute::mayBeAbsent), in order. Readers of files that
// predate this list drop these names (splitAbsent), as for any unknown name.
inline constexpr auto kAbsentAttributes = [] {
    constexpr size_t n = [] {
        size_t count = 0;
        for (const Attribute& a : kRootAttributeLayouts)
            count += a.mayBeAbsent;
        return count;
    }();
    std::array<const char*, n> out{};
    size_t i = 0;
    for (const Attribute& a : kRootAttributeLayouts)
        if (a.mayBeAbsent)
            out[i++] = a.name;
    return out;
}();

inline constexpr const char* attrTypeName(AttrType t) {
    switch (t) {
    case AttrType::Str:
        return "string";
    case AttrType::I32:
        return "int32";
    case AttrType::I64:
        return "int64";
    case AttrType::U64:
        return "uint64";
    }
    return "?";
}

} // namespace rs::runschema
