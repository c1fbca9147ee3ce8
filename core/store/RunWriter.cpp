// RunWriter: creates the run file's full layout up front, switches to SWMR, then appends rows.
// Per append: every column of the table is extended by the new rows and written with one hyperslab, the
// non-key columns are flushed, then the key column is written and flushed (so a reader never counts a row
// whose data is not on disk yet, even if the process is killed mid-append).
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

} // namespace

struct RunWriter::Impl {
    std::string path;
    RunMeta meta;
    Dims dims;
    H5::H5File file;
    WTable steps, weights, evals, events, dumps, entries;
    std::array<WTable*, 6> tables() { return {&steps, &weights, &evals, &events, &dumps, &entries}; }
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
    void reopenColumns();                      // after SWMR starts
    void appendRows(WTable& table, hsize_t n); // from each column's buf
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

void RunWriter::Impl::appendRows(WTable& table, hsize_t n) {
    const hsize_t row = table.rows;
    WColumn& key = table.cols.back();
    for (size_t i = 0; i + 1 < table.cols.size(); ++i)
        extendAndWrite(table.cols[i], row, n, table.cols[i].buf.data());
    for (size_t i = 0; i + 1 < table.cols.size(); ++i)
        flushColumn(table.cols[i]);
    extendAndWrite(key, row, n, key.buf.data());
    flushColumn(key);
    table.rows += n;
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

template <class T> void put(std::vector<std::byte>& buf, size_t index, T value) {
    std::memcpy(buf.data() + index * sizeof(T), &value, sizeof(T));
}

// Copies one rank's per-parameter vector into its slot of a row; empty = not recorded (fill value).
template <class T, class OnWrongSize>
void putRankVector(std::vector<std::byte>& buf, size_t rank, size_t len, const std::vector<T>& v, T missing,
                   OnWrongSize&& wrongSize) {
    std::byte* dst = buf.data() + rank * len * sizeof(T);
    if (v.size() == len) {
        if (len)
            std::memcpy(dst, v.data(), len * sizeof(T));
    } else if (v.empty()) {
        for (size_t i = 0; i < len; ++i)
            std::memcpy(dst + i * sizeof(T), &missing, sizeof(T));
    } else {
        wrongSize(v.size());
    }
}

// Room kept free for the final flush and close (see SpaceReserve.h). Every step is flushed, so what is
// dirty when a write fails is one row of each table (~0.2 MB for 8 ResNet-50 ranks) plus the metadata
// cache; 8 MiB leaves a wide margin and is nothing next to a run file.
constexpr int64_t kCloseReserveBytes = 8 << 20;
constexpr int64_t kMinFreeBytes = 1 << 20; // beyond the reserve: the file's skeleton and its first steps

constexpr float kNaNf = std::numeric_limits<float>::quiet_NaN();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

} // namespace

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
    const size_t R = d.dims.R, B = d.dims.B, P = d.dims.P, K = d.dims.K;
    if (rec.ranks.size() != R)
        d.invalid(fmt::format("appendStep(step {}): {} ranks, expected {} (world_size)", rec.step,
                              rec.ranks.size(), R));
    auto& c = d.steps.cols;
    put(c[rsc::kStep].buf, 0, rec.step);
    put(c[rsc::kEpoch].buf, 0, rec.epoch);
    put(c[rsc::kLr].buf, 0, rec.lr);
    for (size_t r = 0; r < R; ++r) {
        const RankStep& s = rec.ranks[r];
        put(c[rsc::kLoss].buf, r, s.loss);
        put(c[rsc::kAccuracy].buf, r, s.accuracy);
        put(c[rsc::kLossScale].buf, r, s.lossScale);
        put(c[rsc::kStepMs].buf, r, s.stepMs);
        put(c[rsc::kComputeMs].buf, r, s.computeMs);
        put(c[rsc::kCommMs].buf, r, s.commMs);
        put(c[rsc::kOverflow].buf, r, s.overflow);
        put(c[rsc::kSkipped].buf, r, s.skipped);
        put(c[rsc::kState].buf, r, s.state);
        put(c[rsc::kSampleFp].buf, r, s.sampleFp);
        put(c[rsc::kBufferFpStep].buf, r, s.bufferFp);
        if (s.sampleIds.size() > B)
            d.invalid(fmt::format("appendStep(step {}): rank {} has {} sample ids, expected at most {}",
                                  rec.step, r, s.sampleIds.size(), B));
        for (size_t i = 0; i < B; ++i)
            put(c[rsc::kSampleIds].buf, r * B + i, i < s.sampleIds.size() ? s.sampleIds[i] : int32_t(-1));

        auto sizeCheck = [&](const char* field, size_t expected) {
            return [&d, &rec, r, field, expected](size_t got) {
                d.invalid(fmt::format("appendStep(step {}): rank {} {} has {} entries, expected {} or 0",
                                      rec.step, r, field, got, expected));
            };
        };
        putRankVector(c[rsc::kLocalNorm].buf, r, P, s.localNorm, kNaNf, sizeCheck("localNorm", P));
        putRankVector(c[rsc::kLocalMax].buf, r, P, s.localMax, kNaNf, sizeCheck("localMax", P));
        putRankVector(c[rsc::kLocalSum].buf, r, P, s.localSum, kNaN, sizeCheck("localSum", P));
        putRankVector(c[rsc::kNonfinite].buf, r, P, s.nonfinite, 0u, sizeCheck("nonfinite", P));
        putRankVector(c[rsc::kOverflowCount].buf, r, P, s.overflowCount, 0u, sizeCheck("overflowCount", P));
        putRankVector(c[rsc::kUnderflowCount].buf, r, P, s.underflowCount, 0u,
                      sizeCheck("underflowCount", P));
        putRankVector(c[rsc::kSketch].buf, r, P * K, s.sketch, kNaNf, sizeCheck("sketch", P * K));
        putRankVector(c[rsc::kSyncedNorm].buf, r, P, s.syncedNorm, kNaNf, sizeCheck("syncedNorm", P));
        putRankVector(c[rsc::kSyncedSum].buf, r, P, s.syncedSum, kNaN, sizeCheck("syncedSum", P));
        putRankVector(c[rsc::kSyncedFp].buf, r, P, s.syncedFp, uint64_t(0), sizeCheck("syncedFp", P));
    }
    d.appendRows(d.steps, 1);
    ++d.stepsWritten;
}

void RunWriter::appendWeights(const WeightRecord& rec) {
    Hdf5Guard guard; // also serialises the staging buffers
    Impl& d = *m_d;
    d.requireOpen("appendWeights");
    const size_t R = d.dims.R, P = d.dims.P;
    auto check = [&](const char* field, size_t got, size_t expected) {
        if (got != expected)
            d.invalid(fmt::format("appendWeights(step {}): {} has {} entries, expected {}", rec.step, field,
                                  got, expected));
    };
    check("fp", rec.fp.size(), R);
    check("norm", rec.norm.size(), R);
    check("bufferFp", rec.bufferFp.size(), R);
    check("bufferDrift", rec.bufferDrift.size(), R);
    auto& c = d.weights.cols;
    put(c[rsc::kWStep].buf, 0, rec.step);
    for (size_t r = 0; r < R; ++r) {
        auto wrong = [&](const char* field) {
            return [&d, &rec, r, field, P](size_t got) {
                d.invalid(fmt::format("appendWeights(step {}): rank {} {} has {} entries, expected {} or 0",
                                      rec.step, r, field, got, P));
            };
        };
        putRankVector(c[rsc::kWFp].buf, r, P, rec.fp[r], uint64_t(0), wrong("fp"));
        putRankVector(c[rsc::kWNorm].buf, r, P, rec.norm[r], kNaNf, wrong("norm"));
        put(c[rsc::kWBufferFp].buf, r, rec.bufferFp[r]);
        put(c[rsc::kWBufferDrift].buf, r, rec.bufferDrift[r]);
    }
    d.appendRows(d.weights, 1);
}

void RunWriter::appendEval(const EvalRecord& rec) {
    Hdf5Guard guard; // also serialises the staging buffers
    Impl& d = *m_d;
    d.requireOpen("appendEval");
    const size_t R = d.dims.R;
    if (rec.accuracy.size() != R || rec.loss.size() != R)
        d.invalid(fmt::format("appendEval(step {}): {} accuracies and {} losses, expected {} (world_size)",
                              rec.step, rec.accuracy.size(), rec.loss.size(), R));
    auto& c = d.evals.cols;
    put(c[rsc::kEStep].buf, 0, rec.step);
    std::memcpy(c[rsc::kEAccuracy].buf.data(), rec.accuracy.data(), R * sizeof(float));
    std::memcpy(c[rsc::kELoss].buf.data(), rec.loss.data(), R * sizeof(float));
    d.appendRows(d.evals, 1);
}

void RunWriter::appendEvent(const Event& ev) {
    Hdf5Guard guard; // also serialises the staging buffers
    Impl& d = *m_d;
    d.requireOpen("appendEvent");
    auto& c = d.events.cols;
    put(c[rsc::kVStep].buf, 0, ev.step);
    put(c[rsc::kVRank].buf, 0, int32_t(ev.rank));
    put(c[rsc::kVSeverity].buf, 0, uint8_t(ev.severity));
    putFixedString(c[rsc::kVCode].buf.data(), rsc::kEventCodeLen, ev.code);
    putFixedString(c[rsc::kVMessage].buf.data(), rsc::kEventMessageLen, ev.message);
    d.appendRows(d.events, 1);
}

void RunWriter::appendFlightDump(const FlightDump& dump) {
    Hdf5Guard guard; // also serialises the staging buffers
    Impl& d = *m_d;
    d.requireOpen("appendFlightDump");
    const size_t n = dump.entries.size();
    for (size_t i = 0; i < n; ++i)
        if (dump.entries[i].data.size() != d.dims.T)
            d.invalid(fmt::format("appendFlightDump(step {}): entry {} has {} floats, expected {} (all "
                                  "parameter elements)",
                                  dump.triggerStep, i, dump.entries[i].data.size(), d.dims.T));
    const int64_t dumpRow = int64_t(d.dumps.rows);
    if (n) {
        // Entries first (data row by row straight from the records, the small columns in one go), key last.
        auto& c = d.entries.cols;
        for (size_t k : {size_t(rsc::kFStep), size_t(rsc::kFRank), size_t(rsc::kFKind), size_t(rsc::kFDump)})
            c[k].buf.resize(c[k].rowBytes * n);
        for (size_t i = 0; i < n; ++i) {
            const FlightEntry& e = dump.entries[i];
            put(c[rsc::kFStep].buf, i, e.step);
            put(c[rsc::kFRank].buf, i, int32_t(e.rank));
            put(c[rsc::kFKind].buf, i, e.kind);
            put(c[rsc::kFDump].buf, i, dumpRow);
        }
        const hsize_t row = d.entries.rows;
        WColumn& data = c[rsc::kFData];
        try {
            data.dims[0] = row + n;
            data.ds.extend(data.dims.data());
        } catch (const H5::Exception& e) {
            d.fail(fmt::format("extending {}", data.path), e);
        }
        for (size_t i = 0; i < n; ++i)
            d.writeRows(data, row + i, 1, dump.entries[i].data.data());
        for (size_t k : {size_t(rsc::kFStep), size_t(rsc::kFRank), size_t(rsc::kFKind)})
            d.extendAndWrite(c[k], row, n, c[k].buf.data());
        for (size_t k = 0; k < size_t(rsc::kFDump); ++k)
            d.flushColumn(c[k]);
        d.extendAndWrite(c[rsc::kFDump], row, n, c[rsc::kFDump].buf.data());
        d.flushColumn(c[rsc::kFDump]);
        d.entries.rows += n;
    }
    auto& c = d.dumps.cols;
    put(c[rsc::kDTriggerStep].buf, 0, dump.triggerStep);
    putFixedString(c[rsc::kDReason].buf.data(), rsc::kReasonLen, dump.reason);
    d.appendRows(d.dumps, 1);
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
