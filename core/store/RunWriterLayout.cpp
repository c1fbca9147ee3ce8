// RunWriter, creating the file: checks the RunMeta, writes the root attributes from their rows
// (RootAttributes.h), the fixed datasets, every table's columns (RunSchema.h) with their chunking, and the
// status, then switches to SWMR. Appending rows is in RunWriter.cpp.
#include "store/Hdf5Lock.h"
#include "store/RunWriterImpl.h"

#include <H5Cpp.h>
#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fmt/format.h>
#include <type_traits>

namespace rs {

namespace rsc = runschema;
using h5detail::elementCount;
using h5detail::fileType;
using h5detail::fixedString;
using h5detail::isString;
using h5detail::memType;
using h5detail::putFixedString;
using h5detail::rowDims;
using h5detail::runDims;
using h5detail::shapeString;
using rsc::Dtype;
using rsc::Row;
using runwriter::WColumn;
using runwriter::WTable;

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

// Room kept free for the final flush and close (see SpaceReserve.h). Every step is flushed, so what is
// dirty when a write fails is one row of each table (~0.2 MB for 8 ResNet-50 ranks) plus the metadata
// cache; 8 MiB leaves a wide margin and is nothing next to a run file.
constexpr int64_t kCloseReserveBytes = 8 << 20;
constexpr int64_t kMinFreeBytes = 1 << 20; // beyond the reserve: the file's skeleton and its first steps

std::string utcNowIso() {
    const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm tm{};
    gmtime_r(&now, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

// A string member's attribute text: itself, or a list joined with commas (RunMeta::absent).
const std::string& attributeText(const std::string& s) {
    return s;
}
std::string attributeText(const std::vector<std::string>& list) {
    return rsc::joinAbsent(list);
}

// A column's chunk dims for rows of `row` dims and elemBytes-byte elements, and the bytes of one chunk.
struct Chunking {
    std::vector<hsize_t> dims, maxDims, chunk;
    size_t chunkBytes = 0;
};

Chunking chunking(const std::vector<hsize_t>& row, size_t elemBytes) {
    Chunking k;
    k.dims = {0};
    k.dims.insert(k.dims.end(), row.begin(), row.end());
    k.maxDims = k.dims;
    k.maxDims[0] = H5S_UNLIMITED;
    k.chunk = k.dims;
    size_t chunkRowBytes = elemBytes;
    for (size_t i = 1; i < k.chunk.size(); ++i) {
        k.maxDims[i] = std::max<hsize_t>(k.maxDims[i], 1); // a chunk dim must be >= 1 and <= the max dim
        k.chunk[i] = std::max<hsize_t>(k.chunk[i], 1);
        chunkRowBytes *= k.chunk[i];
    }
    k.chunk[0] = std::clamp<hsize_t>(kChunkTargetBytes / chunkRowBytes, 1, kMaxChunkRows);
    // Rows bigger than kMaxChunkBytes (flight tensors, huge sketches): cut the row dims, leftmost first, to
    // the largest extent that fits (a flight row of T floats gets chunks of min(T, 262144)).
    for (size_t i = 1; i < k.chunk.size() && chunkRowBytes > kMaxChunkBytes; ++i) {
        const size_t others = chunkRowBytes / k.chunk[i];
        k.chunk[i] = std::max<hsize_t>(1, kMaxChunkBytes / others);
        chunkRowBytes = others * k.chunk[i];
    }
    k.chunkBytes = k.chunk[0] * chunkRowBytes;
    return k;
}

H5::H5File createFile(const std::string& path, bool overwrite) {
    H5::FileAccPropList fapl;
    fapl.setLibverBounds(H5F_LIBVER_LATEST, H5F_LIBVER_LATEST);
    return H5::H5File(path, overwrite ? H5F_ACC_TRUNC : H5F_ACC_EXCL, H5::FileCreatPropList::DEFAULT, fapl);
}

// A disk without room for the close reserve and a few steps is refused up front with a plain message; HDF5
// failing inside H5Fcreate says less and leaks its internal state.
void checkFreeSpace(const RunWriter::Impl& d, const std::filesystem::path& dir) {
    std::error_code ec;
    const auto space = std::filesystem::space(dir, ec);
    if (!ec && space.available < uint64_t(kCloseReserveBytes + kMinFreeBytes))
        d.invalid(fmt::format("the disk is full: {:.1f} MiB free in {}, a run file needs at least {} MiB",
                              double(space.available) / (1 << 20), dir.string(),
                              (kCloseReserveBytes + kMinFreeBytes) >> 20));
}

} // namespace

// ---------------------------------------------------------------------------------------------------------
// the meta

void RunWriter::Impl::validateMeta() const {
    checkAttributeRanges();
    checkParams();
    for (const std::string& a : meta.absent)
        if (!rsc::mayBeAbsent(a))
            invalid(fmt::format(
                "meta.absent names '{}', which is not a step or weight column nor an optional root attribute",
                a));
    if (!meta.cards.empty() && int(meta.cards.size()) != meta.worldSize)
        invalid(fmt::format("meta has {} cards, expected 0 or {} (worldSize)", meta.cards.size(),
                            meta.worldSize));
}

// The ranges a reader accepts (RootAttributes.h), so that a file the writer makes always opens.
void RunWriter::Impl::checkAttributeRanges() const {
    rsc::forEachAttribute([&](const auto& a) {
        using Field = std::remove_cvref_t<decltype(a.field)>;
        if constexpr (rsc::kMetaMember<Field>) {
            using V = fields::ValueOf<Field>;
            if constexpr (std::is_integral_v<V> && std::is_signed_v<V>) {
                const int64_t v = meta.*a.field;
                if (v < a.layout.lo || v > a.layout.hi)
                    invalid(fmt::format("meta.{} is {}, expected {}..{}", rsc::camelCase(a.layout.name), v,
                                        a.layout.lo, a.layout.hi));
            }
        }
    });
}

void RunWriter::Impl::checkParams() const {
    if (int64_t(meta.params.size()) > rsc::kMaxParams)
        invalid(fmt::format("meta has {} parameter tensors, at most {} supported", meta.params.size(),
                            rsc::kMaxParams));
    for (const ParamInfo& p : meta.params)
        if (p.numel < 0 || p.offset < 0 || p.numel > rsc::kMaxTotalElements ||
            p.offset > rsc::kMaxTotalElements - p.numel)
            invalid(fmt::format("parameter '{}' has numel {} at offset {}", p.name, p.numel, p.offset));
}

// ---------------------------------------------------------------------------------------------------------
// root attributes, one per row of RootAttributes.h

void RunWriter::Impl::writeRootAttributes() {
    rsc::forEachAttribute([&](const auto& a) { writeAttribute(a); });
}

template <class Field> void RunWriter::Impl::writeAttribute(const rsc::RootAttribute<Field>& a) {
    if constexpr (std::is_same_v<Field, rsc::FormatName>) {
        writeString(a.layout.name, std::string(rsc::kFormatName));
    } else if constexpr (std::is_same_v<Field, rsc::FormatVersion>) {
        writeNumber(a.layout, int32_t(rsc::kFormatVersion));
    } else if constexpr (std::is_arithmetic_v<fields::ValueOf<Field>>) {
        writeNumber(a.layout, meta.*a.field);
    } else {
        std::string value = attributeText(meta.*a.field);
        if (a.layout.optional && value.empty())
            value = attributeText(RunMeta{}.*a.field);
        if (!value.empty() || !a.layout.optional)
            writeString(a.layout.name, value);
    }
}

// A fixed-length string exactly as long as the value and its NUL.
void RunWriter::Impl::writeString(const char* name, const std::string& value) {
    const size_t width = value.size() + 1;
    const H5::StrType type = fixedString(width);
    std::vector<std::byte> buf(width);
    putFixedString(buf.data(), width, value);
    file.createAttribute(name, type, H5::DataSpace(H5S_SCALAR)).write(type, buf.data());
}

template <class T> void RunWriter::Impl::writeNumber(const rsc::Attribute& a, T value) {
    const Dtype t = h5detail::numericDtype(a.type);
    file.createAttribute(a.name, fileType(t), H5::DataSpace(H5S_SCALAR)).write(memType(t), &value);
}

// ---------------------------------------------------------------------------------------------------------
// fixed datasets and the status

template <class T>
void RunWriter::Impl::fixedNumeric(const char* name, Dtype t, const std::vector<T>& values) {
    const hsize_t n = values.size();
    H5::DataSet ds = file.createDataSet(name, fileType(t), H5::DataSpace(1, &n));
    if (n)
        ds.write(values.data(), memType(t));
}

// As wide as the longest value and its NUL.
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
    writeParams();
    writeCards();
    createStatus();
}

void RunWriter::Impl::writeParams() {
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
}

void RunWriter::Impl::writeCards() {
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
}

// Compact (kept in the object header, i.e. metadata), so a SWMR reader sees it after refresh.
void RunWriter::Impl::createStatus() {
    H5::DSetCreatPropList compact;
    compact.setLayout(H5D_COMPACT);
    H5::DataSpace scalar(H5S_SCALAR);
    statusComplete = file.createDataSet(rsc::kStatusComplete, H5::PredType::STD_U8LE, scalar, compact);
    statusReason = file.createDataSet(rsc::kStatusStopReason, fixedString(rsc::kReasonLen), scalar, compact);
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

// ---------------------------------------------------------------------------------------------------------
// table columns

void RunWriter::Impl::createTables() {
    createTable(steps, rsc::kStepColumns);
    createTable(weights, rsc::kWeightColumns);
    createTable(evals, rsc::kEvalColumns);
    createTable(events, rsc::kEventColumns);
    createTable(dumps, rsc::kDumpColumns);
    createTable(entries, rsc::kEntryColumns);
    createTable(collectives, rsc::kCollectiveColumns);
    createTable(tensors, rsc::kTensorColumns);
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

WColumn RunWriter::Impl::createColumn(const rsc::Column& spec) {
    WColumn c;
    c.path = spec.path;
    c.mem = memType(spec.dtype);
    const std::vector<hsize_t> row = rowDims(spec.row, dims);
    const size_t elemBytes = rsc::dtypeBytes(spec.dtype);
    c.rowElems = elementCount(row);
    c.rowBytes = c.rowElems * elemBytes;
    const Chunking k = chunking(row, elemBytes);
    H5::DSetCreatPropList dcpl;
    dcpl.setChunk(int(k.chunk.size()), k.chunk.data());
    if (spec.deflate && !isString(spec.dtype))
        dcpl.setShuffle();
    if (spec.deflate)
        dcpl.setDeflate(kDeflateLevel);
    // The chunk being filled must stay cached (or every row would re-read and re-inflate it); more is waste.
    c.cacheBytes = k.chunkBytes + 4096;
    c.dims = k.dims;
    H5::DataSpace space(int(c.dims.size()), c.dims.data(), k.maxDims.data());
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

// ---------------------------------------------------------------------------------------------------------
// create

void RunWriter::Impl::createLayout() {
    writeRootAttributes();
    for (const char* g : rsc::kGroups)
        file.createGroup(g);
    writeFixedDatasets();
    createTables();
    open = true;
    closeReserve = SpaceReserve(std::filesystem::absolute(path).parent_path().string(), kCloseReserveBytes);
    writeStatus(false, "running");
    if (H5Fstart_swmr_write(file.getId()) < 0)
        invalid(fmt::format("cannot start SWMR write mode: {}", hdf5LastError()));
    reopenColumns();
}

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
    checkFreeSpace(*d, std::filesystem::absolute(path).parent_path());
    Hdf5Guard guard;
    bool created = false;
    try {
        d->file = createFile(path, overwrite);
        created = true;
        d->createLayout();
    } catch (...) {
        d->discardFile(created, existed);
        try {
            throw;
        } catch (const H5::Exception& e) {
            d->fail(created ? "creating the run file" : "cannot create the file", e);
        }
    }
    return std::unique_ptr<RunWriter>(new RunWriter(std::move(d)));
}

// Leaves no half-created file behind; a failed H5Fcreate can leave an empty one.
void RunWriter::Impl::discardFile(bool created, bool existed) {
    try {
        if (created)
            closeAll();
    } catch (...) {
    }
    std::error_code ec;
    if (created || !existed)
        std::filesystem::remove(path, ec);
}

} // namespace rs
