// RunWriter: creates the run file's full layout up front, switches to SWMR, then appends rows.
// Per append, for the rows of the table in RunSchema.h: every record's values are staged (and checked)
// column by column, then every column of the table is extended by the new rows and written with one
// hyperslab, the non-key columns are flushed, then the key column is written and flushed (so a reader never
// counts a row whose data is not on disk yet, even if the process is killed mid-append).
#include "store/RunWriter.h"

#include "store/Hdf5Lock.h"
#include "store/Hdf5Types.h"
#include "store/SpaceReserve.h"

#include <H5Cpp.h>
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fmt/format.h>
#include <limits>
#include <stdexcept>

namespace rs {

namespace rsc = runschema;
using h5detail::Dims;
using h5detail::elementCount;
using h5detail::fileType;
using h5detail::fixedString;
using h5detail::hdf5Detail;
using h5detail::isString;
using h5detail::memType;
using h5detail::putFixedString;
using h5detail::rowDims;
using h5detail::runDims;
using h5detail::shapeString;
using rsc::Dtype;
using rsc::Row;

namespace {

// Chunking: a chunk holds up to kMaxChunkRows rows, and at most kChunkTargetBytes unless one row is larger.
// Every per-step flush rewrites (and recompresses) each partially filled chunk, and the rewritten chunk moves
// in the file, so multi-row chunks of big rows cost time and space: measured for R=8, P=161, K=16, a 64 KiB
// target took 1.7x the time and 2.5x the bytes per step of one row per chunk. Big rows (per-parameter data)
// therefore get one row per chunk, which also lets decimated chart reads skip whole chunks; small rows
// (per-rank scalars) share chunks of up to 64 steps.
constexpr size_t kChunkTargetBytes = 4 << 10;
constexpr hsize_t kMaxChunkRows = 64;
constexpr size_t kMaxChunkBytes = 1 << 20; // a row larger than this is split along its own dims
constexpr int kDeflateLevel = 1;

std::string utcNowIso() {
    const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm tm{};
    gmtime_r(&now, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

// One extendible dataset and what it takes to append to it without re-deriving anything per row.
struct WColumn {
    const char* path = nullptr;
    H5::DataSet ds;
    H5::DataType mem;
    std::vector<hsize_t> dims;  // current extent, [rows, row dims...]
    std::vector<hsize_t> count; // hyperslab count, [n, row dims...]
    std::vector<hsize_t> start; // hyperslab start, [row, 0...]
    H5::DataSpace oneRow;       // memory space of one row
    size_t rowElems = 0;
    size_t rowBytes = 0;
    size_t cacheBytes = 0;      // chunk cache: the chunk being filled, no more
    std::vector<std::byte> buf; // staging for one row (or n rows)
};

struct WTable {
    std::vector<WColumn> cols; // key column last
    hsize_t rows = 0;
};

// Which append a message is about: "appendStep(step 12)"; records of a table appended several at a time
// (flight entries) are named by their index ("entry 1").
struct Origin {
    const char* op;
    int64_t step;
    const char* recordNoun = nullptr;
};

} // namespace

struct RunWriter::Impl {
    std::string path;
    RunMeta meta;
    Dims dims;
    H5::H5File file;
    WTable steps, weights, evals, events, dumps, entries, collectives, tensors;
    std::array<WTable*, 8> tables() {
        return {&steps, &weights, &evals, &events, &dumps, &entries, &collectives, &tensors};
    }
    H5::DataSet statusComplete, statusReason;
    int64_t stepsWritten = 0;
    bool open = false;
    SpaceReserve closeReserve; // given back at close(), so a full disk still gets a clean close

    [[noreturn]] void fail(const std::string& where, const H5::Exception& e) const {
        throw RunFileError(fmt::format("{}: {}: {}", path, where, hdf5Detail(e)));
    }
    [[noreturn]] void invalid(const std::string& what) const {
        throw RunFileError(fmt::format("{}: {}", path, what));
    }
    void requireOpen(const char* op) const {
        if (!open)
            invalid(fmt::format("{} after the writer was closed", op));
    }

    // --- creation -------------------------------------------------------------------------------------
    void validateMeta() const;
    void writeRootAttributes();
    void writeFixedDatasets();
    void createTable(WTable& table, std::span<const rsc::Column> columns);
    WColumn createColumn(const rsc::Column& c);
    template <class T> void fixedNumeric(const char* name, Dtype t, const std::vector<T>& values);
    void fixedStrings(const char* name, const std::vector<std::string>& values);

    // --- appending -------------------------------------------------------------------------------------
    void extendAndWrite(WColumn& c, hsize_t row, hsize_t n, const void* data);
    void writeRows(WColumn& c, hsize_t row, hsize_t n, const void* data);
    void flushColumn(WColumn& c);
    static H5::DSetAccPropList chunkCache(const WColumn& c);
    void reopenColumns(); // after SWMR starts
    // Appends records as rows of a table (RunSchema.h): stages (and so checks) every column's values first,
    // then writes the columns, the key last. parentRow: what ParentRow columns hold (a flight entry's dump).
    template <class Record, class Table>
    void append(WTable& table, const Table& columns, std::span<const Record> records, const Origin& at,
                int64_t parentRow = -1);
    template <class Record, class Field>
    void stage(const rsc::TableColumn<Field>& col, WColumn& c, const Record& rec, size_t i, const Origin& at,
               int64_t parentRow) const;
    void writeStatus(bool complete, const std::string& reason);
    void closeAll();
};

// ---------------------------------------------------------------------------------------------------------
// creation

void RunWriter::Impl::validateMeta() const {
    if (meta.worldSize < 1 || meta.worldSize > rsc::kMaxWorldSize)
        invalid(fmt::format("meta.worldSize is {}, expected 1..{}", meta.worldSize, rsc::kMaxWorldSize));
    if (meta.batchPerRank < 0 || meta.batchPerRank > rsc::kMaxBatch)
        invalid(fmt::format("meta.batchPerRank is {}, expected 0..{}", meta.batchPerRank, rsc::kMaxBatch));
    if (meta.sketchDim < 0 || meta.sketchDim > rsc::kMaxSketchDim)
        invalid(fmt::format("meta.sketchDim is {}, expected 0..{}", meta.sketchDim, rsc::kMaxSketchDim));
    if (int64_t(meta.params.size()) > rsc::kMaxParams)
        invalid(fmt::format("meta has {} parameter tensors, at most {} supported", meta.params.size(),
                            rsc::kMaxParams));
    for (const ParamInfo& p : meta.params)
        if (p.numel < 0 || p.offset < 0 || p.numel > rsc::kMaxTotalElements ||
            p.offset > rsc::kMaxTotalElements - p.numel)
            invalid(fmt::format("parameter '{}' has numel {} at offset {}", p.name, p.numel, p.offset));
    for (const std::string& a : meta.absent)
        if (!rsc::mayBeAbsent(a))
            invalid(fmt::format(
                "meta.absent names '{}', which is not a step or weight column nor an optional root attribute",
                a));
    if (!meta.cards.empty() && int(meta.cards.size()) != meta.worldSize)
        invalid(fmt::format("meta has {} cards, expected 0 or {} (worldSize)", meta.cards.size(),
                            meta.worldSize));
}

void RunWriter::Impl::writeRootAttributes() {
    H5::DataSpace scalar(H5S_SCALAR);
    // Fixed-length strings, each as long as its value: no variable-length string, whose global-heap
    // indirection is where damaged files crash libhdf5's reader (format_version 2).
    auto str = [&](const char* name, const std::string& value) {
        const size_t width = value.size() + 1;
        const H5::StrType type = fixedString(width);
        std::vector<std::byte> buf(width);
        putFixedString(buf.data(), width, value);
        file.createAttribute(name, type, scalar).write(type, buf.data());
    };
    auto i32 = [&](const char* name, int32_t v) {
        file.createAttribute(name, H5::PredType::STD_I32LE, scalar).write(H5::PredType::NATIVE_INT32, &v);
    };
    str(rsc::kAttrFormat, std::string(rsc::kFormatName));
    i32(rsc::kAttrFormatVersion, rsc::kFormatVersion);
    str(rsc::kAttrCreated, meta.createdUtc);
    str(rsc::kAttrModel, meta.model);
    i32(rsc::kAttrWorldSize, meta.worldSize);
    i32(rsc::kAttrBatchPerRank, meta.batchPerRank);
    str(rsc::kAttrPrecision, meta.precision);
    str(rsc::kAttrLossScale, meta.lossScale);
    str(rsc::kAttrData, meta.data);
    const uint64_t seed = meta.seed;
    file.createAttribute(rsc::kAttrSeed, H5::PredType::STD_U64LE, scalar)
        .write(H5::PredType::NATIVE_UINT64, &seed);
    i32(rsc::kAttrSketchDim, meta.sketchDim);
    i32(rsc::kAttrWeightEvery, meta.weightEvery);
    const int64_t planned = meta.plannedSteps;
    file.createAttribute(rsc::kAttrPlannedSteps, H5::PredType::STD_I64LE, scalar)
        .write(H5::PredType::NATIVE_INT64, &planned);
    str(rsc::kAttrConfig, meta.configJson);
    str(rsc::kAttrRankTable, meta.rankTableJson);
    str(rsc::kAttrEnvironment, meta.environment);
    str(rsc::kAttrSource, meta.source.empty() ? std::string(rsc::kDefaultSource) : meta.source);
    if (!meta.absent.empty())
        str(rsc::kAttrAbsent, rsc::joinAbsent(meta.absent));
}

template <class T>
void RunWriter::Impl::fixedNumeric(const char* name, Dtype t, const std::vector<T>& values) {
    const hsize_t n = values.size();
    H5::DataSet ds = file.createDataSet(name, fileType(t), H5::DataSpace(1, &n));
    if (n)
        ds.write(values.data(), memType(t));
}

void RunWriter::Impl::fixedStrings(const char* name, const std::vector<std::string>& values) {
    size_t width = 1;
    for (const std::string& s : values)
        width = std::max(width, s.size() + 1);
    const hsize_t n = values.size();
    const H5::StrType type = fixedString(width);
    H5::DataSet ds = file.createDataSet(name, type, H5::DataSpace(1, &n));
    if (!n)
        return;
    std::vector<std::byte> buf(n * width);
    for (size_t i = 0; i < n; ++i)
        putFixedString(buf.data() + i * width, width, values[i]);
    ds.write(buf.data(), type);
}

void RunWriter::Impl::writeFixedDatasets() {
    std::vector<std::string> names, shapes;
    std::vector<int64_t> numel, offset;
    for (const ParamInfo& p : meta.params) {
        names.push_back(p.name);
        shapes.push_back(shapeString(p.shape));
        numel.push_back(p.numel);
        offset.push_back(p.offset);
    }
    fixedStrings(rsc::kParamName, names);
    fixedStrings(rsc::kParamShape, shapes);
    fixedNumeric(rsc::kParamNumel, Dtype::I64, numel);
    fixedNumeric(rsc::kParamOffset, Dtype::I64, offset);
    fixedStrings(rsc::kBufferNames, meta.bufferNames);

    std::vector<int32_t> rank, deviceId;
    std::vector<std::string> ip, server;
    std::vector<int64_t> hbmTotal, hbmUsed;
    for (const CardInfo& c : meta.cards) {
        rank.push_back(c.rank);
        deviceId.push_back(c.deviceId);
        ip.push_back(c.deviceIp);
        server.push_back(c.serverId);
        hbmTotal.push_back(c.hbmTotalBytes);
        hbmUsed.push_back(c.hbmUsedBytes);
    }
    fixedNumeric(rsc::kCardRank, Dtype::I32, rank);
    fixedNumeric(rsc::kCardDeviceId, Dtype::I32, deviceId);
    fixedStrings(rsc::kCardDeviceIp, ip);
    fixedStrings(rsc::kCardServerId, server);
    fixedNumeric(rsc::kCardHbmTotal, Dtype::I64, hbmTotal);
    fixedNumeric(rsc::kCardHbmUsed, Dtype::I64, hbmUsed);

    // Status: compact (kept in the object header, i.e. metadata), so a SWMR reader sees it after refresh.
    H5::DSetCreatPropList compact;
    compact.setLayout(H5D_COMPACT);
    H5::DataSpace scalar(H5S_SCALAR);
    statusComplete = file.createDataSet(rsc::kStatusComplete, H5::PredType::STD_U8LE, scalar, compact);
    statusReason = file.createDataSet(rsc::kStatusStopReason, fixedString(rsc::kReasonLen), scalar, compact);
}

WColumn RunWriter::Impl::createColumn(const rsc::Column& spec) {
    WColumn c;
    c.path = spec.path;
    c.mem = memType(spec.dtype);
    const std::vector<hsize_t> row = rowDims(spec.row, dims);
    const size_t elemBytes = rsc::dtypeBytes(spec.dtype);
    c.rowElems = elementCount(row);
    c.rowBytes = c.rowElems * elemBytes;

    c.dims = {0};
    c.dims.insert(c.dims.end(), row.begin(), row.end());
    std::vector<hsize_t> maxDims = c.dims;
    maxDims[0] = H5S_UNLIMITED;
    std::vector<hsize_t> chunk = c.dims;
    size_t chunkRowBytes = elemBytes;
    for (size_t i = 1; i < chunk.size(); ++i) {
        maxDims[i] = std::max<hsize_t>(maxDims[i], 1); // a chunk dim must be >= 1 and <= the max dim
        chunk[i] = std::max<hsize_t>(chunk[i], 1);
        chunkRowBytes *= chunk[i];
    }
    chunk[0] = std::clamp<hsize_t>(kChunkTargetBytes / chunkRowBytes, 1, kMaxChunkRows);
    // Rows bigger than kMaxChunkBytes (flight tensors, huge sketches): cut the row dims, leftmost first, to
    // the largest extent that fits (a flight row of T floats gets chunks of min(T, 262144)).
    for (size_t i = 1; i < chunk.size() && chunkRowBytes > kMaxChunkBytes; ++i) {
        const size_t others = chunkRowBytes / chunk[i];
        chunk[i] = std::max<hsize_t>(1, kMaxChunkBytes / others);
        chunkRowBytes = others * chunk[i];
    }
    const size_t chunkBytes = chunk[0] * chunkRowBytes;

    H5::DSetCreatPropList dcpl;
    dcpl.setChunk(int(chunk.size()), chunk.data());
    if (spec.deflate && !isString(spec.dtype))
        dcpl.setShuffle();
    if (spec.deflate)
        dcpl.setDeflate(kDeflateLevel);
    // The chunk being filled must stay cached (or every row would re-read and re-inflate it); more is waste.
    c.cacheBytes = chunkBytes + 4096;

    H5::DataSpace space(int(c.dims.size()), c.dims.data(), maxDims.data());
    c.ds = file.createDataSet(spec.path, fileType(spec.dtype), space, dcpl, chunkCache(c));
    c.count = c.dims;
    c.count[0] = 1;
    c.start.assign(c.dims.size(), 0);
    c.oneRow = H5::DataSpace(int(c.count.size()), c.count.data());
    if (spec.row != Row::T)
        c.buf.resize(c.rowBytes); // flight rows are written from the records
    return c;
}

H5::DSetAccPropList RunWriter::Impl::chunkCache(const WColumn& c) {
    H5::DSetAccPropList dapl;
    dapl.setChunkCache(13, c.cacheBytes, 1.0);
    return dapl;
}

// H5Fstart_swmr_write closes and reopens every open dataset with the default access properties, so each
// got HDF5's default 1 MiB chunk cache back and kept every chunk it wrote until that filled: the soak's RSS
// grew ~1.4 KiB a step, for 32,000+ steps. Reopening each column with its own cache size ends that.
void RunWriter::Impl::reopenColumns() {
    for (WTable* t : tables())
        for (WColumn& c : t->cols) {
            c.ds.close();
            c.ds = file.openDataSet(c.path, chunkCache(c));
        }
}

void RunWriter::Impl::createTable(WTable& table, std::span<const rsc::Column> columns) {
    for (const rsc::Column& spec : columns) {
        try {
            table.cols.push_back(createColumn(spec));
        } catch (const H5::Exception& e) {
            fail(fmt::format("creating dataset {}", spec.path), e);
        }
    }
}

// ---------------------------------------------------------------------------------------------------------
// appending

void RunWriter::Impl::writeRows(WColumn& c, hsize_t row, hsize_t n, const void* data) {
    if (n == 0 || c.rowElems == 0)
        return;
    try {
        H5::DataSpace fileSpace = c.ds.getSpace();
        c.start[0] = row;
        c.count[0] = n;
        fileSpace.selectHyperslab(H5S_SELECT_SET, c.count.data(), c.start.data());
        if (n == 1) {
            c.ds.write(data, c.mem, c.oneRow, fileSpace);
        } else {
            H5::DataSpace memSpace(int(c.count.size()), c.count.data());
            c.ds.write(data, c.mem, memSpace, fileSpace);
        }
    } catch (const H5::Exception& e) {
        fail(fmt::format("writing rows {}..{} of {}", row, row + n, c.path), e);
    }
}

void RunWriter::Impl::extendAndWrite(WColumn& c, hsize_t row, hsize_t n, const void* data) {
    try {
        c.dims[0] = row + n;
        c.ds.extend(c.dims.data());
    } catch (const H5::Exception& e) {
        fail(fmt::format("extending {} to {} rows", c.path, row + n), e);
    }
    writeRows(c, row, n, data);
}

void RunWriter::Impl::flushColumn(WColumn& c) {
    if (H5Dflush(c.ds.getId()) < 0)
        invalid(fmt::format("flushing {}: {}", c.path, hdf5LastError()));
}

void RunWriter::Impl::writeStatus(bool complete, const std::string& reason) {
    try {
        const uint8_t flag = complete ? 1 : 0;
        statusComplete.write(&flag, H5::PredType::NATIVE_UINT8);
        std::vector<std::byte> field(rsc::kReasonLen);
        putFixedString(field.data(), field.size(), reason);
        statusReason.write(field.data(), fixedString(rsc::kReasonLen));
        H5Dflush(statusComplete.getId());
        H5Dflush(statusReason.getId());
    } catch (const H5::Exception& e) {
        fail("writing /status", e);
    }
}

void RunWriter::Impl::closeAll() {
    for (WTable* t : tables()) {
        for (WColumn& c : t->cols)
            c.ds.close();
        t->cols.clear();
    }
    statusComplete.close();
    statusReason.close();
    file.close();
    open = false;
}

namespace {

// The value a row holds where a vector was not recorded: NaN for floats, 0 for integers, -1 in padded
// columns (sample ids).
template <class T> T missing(bool padded) {
    if (padded)
        return T(-1);
    if constexpr (std::is_floating_point_v<T>)
        return std::numeric_limits<T>::quiet_NaN();
    else
        return T(0);
}

// One element in its stored form (an enum as its underlying integer).
template <class T> void putElement(std::byte* dst, const T& v) {
    const fields::Stored<T> stored = static_cast<fields::Stored<T>>(v);
    std::memcpy(dst, &stored, sizeof stored);
}

// A vector into its len-element part of a row: all of it, or nothing (the missing fill); a padded column
// also takes fewer and fills the rest. False if it does not fit.
template <class T> bool putVector(std::byte* dst, size_t len, const std::vector<T>& v, bool padded) {
    if (v.size() != len && !v.empty() && !(padded && v.size() < len))
        return false;
    if (!v.empty())
        std::memcpy(dst, v.data(), v.size() * sizeof(T));
    const T fill = missing<T>(padded);
    for (size_t i = v.size(); i < len; ++i)
        std::memcpy(dst + i * sizeof(T), &fill, sizeof(T));
    return true;
}

// The dataset's name as words, for messages ("/steps/sample_ids" -> "sample ids").
std::string words(const rsc::Column& c) {
    std::string name = c.path;
    name.erase(0, name.rfind('/') + 1);
    std::replace(name.begin(), name.end(), '_', ' ');
    return name;
}

// How a row's length is known, for messages.
const char* dimsNote(Row row) {
    return row == Row::T ? " (all parameter elements)" : row == Row::R ? " (world_size)" : "";
}

// Room kept free for the final flush and close (see SpaceReserve.h). Every step is flushed, so what is
// dirty when a write fails is one row of each table (~0.2 MB for 8 ResNet-50 ranks) plus the metadata
// cache; 8 MiB leaves a wide margin and is nothing next to a run file.
constexpr int64_t kCloseReserveBytes = 8 << 20;
constexpr int64_t kMinFreeBytes = 1 << 20; // beyond the reserve: the file's skeleton and its first steps

} // namespace

// ---------------------------------------------------------------------------------------------------------
// records -> rows, driven by the tables of RunSchema.h

template <class Record, class Field>
void RunWriter::Impl::stage(const rsc::TableColumn<Field>& col, WColumn& c, const Record& rec, size_t i,
                            const Origin& at, int64_t parentRow) const {
    const rsc::Column& spec = col.layout;
    // Record i's bytes in the staging buffer. Row::T columns (flight tensors) have none: their rows go to the
    // file straight from the record, so for them only the sizes are checked here.
    const auto stagedRow = [&] {
        if (c.buf.size() < (i + 1) * c.rowBytes)
            throw std::logic_error(fmt::format("{}: no staged row {}", spec.path, i));
        return c.buf.data() + i * c.rowBytes;
    };
    const size_t R = dims.R;
    auto wrong = [&](const std::string& what) {
        const std::string who = at.recordNoun ? fmt::format("{} {} ", at.recordNoun, i) : std::string();
        invalid(fmt::format("{}(step {}): {}{}", at.op, at.step, who, what));
    };
    if constexpr (std::is_same_v<Field, rsc::ParentRow>) {
        putElement(stagedRow(), parentRow);
    } else {
        using V = fields::ValueOf<Field>;
        using E = fields::Element<V>;
        constexpr int depth = fields::kDepth<V>;
        if constexpr (rsc::ownField<Record, Field>()) {
            const V& v = rec.*col.field;
            if constexpr (fields::kIsString<V>) {
                putFixedString(stagedRow(), c.rowBytes, v);
            } else if constexpr (depth == 0) {
                putElement(stagedRow(), v);
            } else if constexpr (depth == 1) {
                if (v.size() != c.rowElems && at.recordNoun) // "entry 1 has 7 data entries, expected 10"
                    wrong(fmt::format("has {} {} entries, expected {}{}", v.size(), rsc::fieldName(spec),
                                      c.rowElems, dimsNote(spec.row)));
                if (v.size() != c.rowElems)
                    wrong(fmt::format("{} has {} entries, expected {}{}", rsc::fieldName(spec), v.size(),
                                      c.rowElems, dimsNote(spec.row)));
                if (spec.row != Row::T && !v.empty())
                    std::memcpy(stagedRow(), v.data(), c.rowBytes);
            } else {
                if (v.size() != R)
                    wrong(fmt::format("{} has {} entries, expected {} (world_size)", rsc::fieldName(spec),
                                      v.size(), R));
                const size_t len = c.rowElems / R;
                std::byte* const row = stagedRow();
                for (size_t r = 0; r < R; ++r)
                    if (!putVector(row + r * len * sizeof(E), len, v[r], spec.padded))
                        wrong(fmt::format("rank {} {} has {} entries, expected {} or 0", r,
                                          rsc::fieldName(spec), v[r].size(), len));
            }
        } else {
            const auto& ranks = rsc::perRank<Field>(rec);
            if (ranks.size() != R)
                wrong(fmt::format("{} ranks, expected {} (world_size)", ranks.size(), R));
            const size_t len = c.rowElems / R;
            std::byte* const row = stagedRow();
            for (size_t r = 0; r < R; ++r) {
                const V& v = ranks[r].*col.field;
                if constexpr (depth == 0) {
                    putElement(row + r * sizeof(fields::Stored<E>), v);
                } else if (!putVector(row + r * len * sizeof(E), len, v, spec.padded)) {
                    if (spec.padded) // "rank 1 has 5 sample ids, expected at most 4"
                        wrong(fmt::format("rank {} has {} {}, expected at most {}", r, v.size(), words(spec),
                                          len));
                    wrong(fmt::format("rank {} {} has {} entries, expected {} or 0", r, rsc::fieldName(spec),
                                      v.size(), len));
                }
            }
        }
    }
}

template <class Record, class Table>
void RunWriter::Impl::append(WTable& table, const Table& columns, std::span<const Record> records,
                             const Origin& at, int64_t parentRow) {
    const size_t n = records.size();
    if (n == 0)
        return;
    rsc::forEachColumn(columns, [&](const auto& col) {
        WColumn& c = table.cols[size_t(col.id)];
        if (col.layout.row != Row::T && c.buf.size() < c.rowBytes * n)
            c.buf.resize(c.rowBytes * n);
        for (size_t i = 0; i < n; ++i)
            stage(col, c, records[i], i, at, parentRow);
    });
    const hsize_t row = table.rows;
    rsc::forEachColumn(columns, [&](const auto& col) {
        WColumn& c = table.cols[size_t(col.id)];
        if (&c == &table.cols.back())
            return; // the key, last
        using Field = std::remove_cvref_t<decltype(col.field)>;
        if constexpr (rsc::wholeRowVector<Record, Field>()) {
            if (col.layout.row == Row::T) { // big rows (flight tensors): from the records, one at a time
                try {
                    c.dims[0] = row + n;
                    c.ds.extend(c.dims.data());
                } catch (const H5::Exception& e) {
                    fail(fmt::format("extending {} to {} rows", c.path, row + n), e);
                }
                for (size_t i = 0; i < n; ++i)
                    writeRows(c, row + i, 1, (records[i].*col.field).data());
                return;
            }
        }
        extendAndWrite(c, row, n, c.buf.data());
    });
    for (size_t k = 0; k + 1 < table.cols.size(); ++k)
        flushColumn(table.cols[k]);
    WColumn& key = table.cols.back();
    extendAndWrite(key, row, n, key.buf.data());
    flushColumn(key);
    table.rows += n;
}

// ---------------------------------------------------------------------------------------------------------
// public API

RunWriter::RunWriter(std::unique_ptr<Impl> impl)
    : m_d(std::move(impl)) {}

std::unique_ptr<RunWriter> RunWriter::create(const std::string& path, const RunMeta& meta, bool overwrite) {
    auto d = std::make_unique<Impl>();
    d->path = path;
    d->meta = meta;
    if (d->meta.createdUtc.empty())
        d->meta.createdUtc = utcNowIso();
    d->validateMeta();
    d->dims = runDims(meta);

    std::error_code ec;
    const bool existed = std::filesystem::exists(path, ec);
    if (!overwrite && existed)
        d->invalid("the file already exists (pass overwrite=true to replace it)");
    // A disk without room for the close reserve and a few steps is refused up front with a plain message;
    // HDF5 failing inside H5Fcreate says less and leaks its internal state.
    const auto dir = std::filesystem::absolute(path).parent_path();
    const auto space = std::filesystem::space(dir, ec);
    if (!ec && space.available < uint64_t(kCloseReserveBytes + kMinFreeBytes))
        d->invalid(fmt::format("the disk is full: {:.1f} MiB free in {}, a run file needs at least {} MiB",
                               double(space.available) / (1 << 20), dir.string(),
                               (kCloseReserveBytes + kMinFreeBytes) >> 20));

    Hdf5Guard guard;
    bool created = false;
    try {
        H5::FileAccPropList fapl;
        fapl.setLibverBounds(H5F_LIBVER_LATEST, H5F_LIBVER_LATEST);
        d->file =
            H5::H5File(path, overwrite ? H5F_ACC_TRUNC : H5F_ACC_EXCL, H5::FileCreatPropList::DEFAULT, fapl);
        created = true;
        d->writeRootAttributes();
        for (const char* g : rsc::kGroups)
            d->file.createGroup(g);
        d->writeFixedDatasets();
        d->createTable(d->steps, rsc::kStepColumns);
        d->createTable(d->weights, rsc::kWeightColumns);
        d->createTable(d->evals, rsc::kEvalColumns);
        d->createTable(d->events, rsc::kEventColumns);
        d->createTable(d->dumps, rsc::kDumpColumns);
        d->createTable(d->entries, rsc::kEntryColumns);
        d->createTable(d->collectives, rsc::kCollectiveColumns);
        d->createTable(d->tensors, rsc::kTensorColumns);
        d->open = true;
        d->closeReserve = SpaceReserve(dir.string(), kCloseReserveBytes);
        d->writeStatus(false, "running");
        if (H5Fstart_swmr_write(d->file.getId()) < 0)
            d->invalid(fmt::format("cannot start SWMR write mode: {}", hdf5LastError()));
        d->reopenColumns();
    } catch (...) {
        // Leave no half-created file behind.
        try {
            if (created)
                d->closeAll();
        } catch (...) {
        }
        if (created || !existed) // a failed H5Fcreate can leave an empty file behind
            std::filesystem::remove(path, ec);
        try {
            throw;
        } catch (const H5::Exception& e) {
            d->fail(created ? "creating the run file" : "cannot create the file", e);
        }
    }
    return std::unique_ptr<RunWriter>(new RunWriter(std::move(d)));
}

RunWriter::~RunWriter() {
    if (!m_d || !m_d->open)
        return;
    try {
        Hdf5Guard guard;
        m_d->closeReserve.release();
        m_d->writeStatus(false, "aborted: the writer was destroyed without close()");
        m_d->closeAll();
    } catch (...) {
        // A destructor must not throw; the file simply stays "not complete".
    }
}

void RunWriter::appendStep(const StepRecord& rec) {
    Hdf5Guard guard; // also serialises the staging buffers
    Impl& d = *m_d;
    d.requireOpen("appendStep");
    d.append(d.steps, rsc::kStepTable, std::span(&rec, 1), {"appendStep", rec.step});
    ++d.stepsWritten;
}

void RunWriter::appendWeights(const WeightRecord& rec) {
    Hdf5Guard guard;
    Impl& d = *m_d;
    d.requireOpen("appendWeights");
    d.append(d.weights, rsc::kWeightTable, std::span(&rec, 1), {"appendWeights", rec.step});
}

void RunWriter::appendEval(const EvalRecord& rec) {
    Hdf5Guard guard;
    Impl& d = *m_d;
    d.requireOpen("appendEval");
    d.append(d.evals, rsc::kEvalTable, std::span(&rec, 1), {"appendEval", rec.step});
}

void RunWriter::appendEvent(const Event& ev) {
    Hdf5Guard guard;
    Impl& d = *m_d;
    d.requireOpen("appendEvent");
    d.append(d.events, rsc::kEventTable, std::span(&ev, 1), {"appendEvent", ev.step});
}

// The entries first, each naming the dump's row, which is written last: a reader never sees a dump whose
// entries are not all there.
void RunWriter::appendFlightDump(const FlightDump& dump) {
    Hdf5Guard guard;
    Impl& d = *m_d;
    d.requireOpen("appendFlightDump");
    const Origin at{"appendFlightDump", dump.triggerStep, "entry"};
    d.append(d.entries, rsc::kEntryTable, std::span(dump.entries), at, int64_t(d.dumps.rows));
    d.append(d.dumps, rsc::kDumpTable, std::span(&dump, 1), at);
}

void RunWriter::appendCollectives(std::span<const Collective> rows) {
    Hdf5Guard guard;
    Impl& d = *m_d;
    d.requireOpen("appendCollectives");
    if (!rows.empty())
        d.append(d.collectives, rsc::kCollectiveTable, rows, {"appendCollectives", rows.front().step});
}

void RunWriter::appendTensorStats(std::span<const TensorStat> rows) {
    Hdf5Guard guard;
    Impl& d = *m_d;
    d.requireOpen("appendTensorStats");
    if (!rows.empty())
        d.append(d.tensors, rsc::kTensorTable, rows, {"appendTensorStats", rows.front().step});
}

void RunWriter::flush() {
    m_d->requireOpen("flush");
    Hdf5Guard guard;
    if (H5Fflush(m_d->file.getId(), H5F_SCOPE_LOCAL) < 0)
        m_d->invalid(fmt::format("flushing the file: {}", hdf5LastError()));
}

void RunWriter::close(const std::string& stopReason) {
    Impl& d = *m_d;
    d.requireOpen("close");
    Hdf5Guard guard;
    d.closeReserve.release();
    d.writeStatus(true, stopReason);
    try {
        d.closeAll();
    } catch (const H5::Exception& e) {
        d.open = false;
        d.fail("closing the file", e);
    }
}

const std::string& RunWriter::path() const {
    return m_d->path;
}

int64_t RunWriter::stepsWritten() const {
    return m_d->stepsWritten;
}

const RunMeta& RunWriter::meta() const {
    return m_d->meta;
}

} // namespace rs
