// RunReader, validation: checks a run file against RunSchema.h (fixed datasets, every table column's class
// and dims, sizes against the file's size, a truncated tail) before anything a file claims is allocated or
// read. Opening the file and its root attributes are in Hdf5RunReaderRoot.cpp; row reading and the public
// API in Hdf5RunReader.cpp.
#include "store/Hdf5Lock.h"
#include "store/Hdf5RunReaderImpl.h"
#include "store/ReadTrace.h"

#include <H5Cpp.h>
#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <limits>
#include <optional>

namespace rs {

namespace rsc = runschema;
using h5detail::className;
using h5detail::dimsString;
using h5detail::elementCount;
using h5detail::fixedString;
using h5detail::getFixedString;
using h5detail::memType;
using h5detail::parseShape;
using h5detail::rowDims;
using h5detail::runDims;
using h5detail::satMul;
using h5detail::typeClass;
using rsc::Dtype;
using rsc::Row;

namespace {

const char* rowLegend(Row row) {
    switch (row) {
    case Row::Scalar:
        return "";
    case Row::R:
        return " [R=world_size]";
    case Row::RB:
        return " [R=world_size, B=batch_per_rank]";
    case Row::RP:
        return " [R=world_size, P=params]";
    case Row::RPK:
        return " [R=world_size, P=params, K=sketch_dim]";
    case Row::T:
        return " [T=parameter elements]";
    }
    return "";
}

std::string humanBytes(double bytes) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    int u = 0;
    while (bytes >= 1024 && u < 6) {
        bytes /= 1024;
        ++u;
    }
    return fmt::format("{:.1f} {}", bytes, units[u]);
}

} // namespace

bool Hdf5RunReader::Impl::linkExists(const std::string& objPath) const {
    // H5Lexists fails (rather than returning false) when an intermediate group is missing: walk the path.
    size_t pos = 0;
    while ((pos = objPath.find('/', pos + 1)) != std::string::npos)
        if (H5Lexists(file.getId(), objPath.substr(0, pos).c_str(), H5P_DEFAULT) <= 0)
            return false;
    return H5Lexists(file.getId(), objPath.c_str(), H5P_DEFAULT) > 0;
}

H5::DataSet Hdf5RunReader::Impl::openDataset(const char* objPath) const {
    readtrace::atDataset(objPath);
    if (!linkExists(objPath))
        fail(fmt::format("dataset {} is missing", objPath));
    try {
        H5O_info_t info;
        if (H5Oget_info_by_name2(file.getId(), objPath, &info, H5O_INFO_BASIC, H5P_DEFAULT) < 0 ||
            info.type != H5O_TYPE_DATASET)
            fail(fmt::format("{} is not a dataset", objPath));
        return file.openDataSet(objPath);
    } catch (const H5::Exception& e) {
        fail(fmt::format("opening dataset {}", objPath), e);
    }
}

void Hdf5RunReader::Impl::checkClass(const H5::DataSet& ds, const char* objPath, H5T_class_t expected) const {
    const H5T_class_t cls = ds.getTypeClass();
    if (cls != expected)
        fail(fmt::format("dataset {} has dtype class {}, expected {}", objPath, className(cls),
                         className(expected)));
    if (cls == H5T_STRING) {
        const H5::StrType t = ds.getStrType();
        if (t.isVariableStr())
            fail(fmt::format("dataset {} holds variable-length strings, expected fixed-length", objPath));
        if (t.getSize() > size_t(rsc::kMaxStringBytes))
            fail(fmt::format("dataset {} holds {}-byte strings, at most {} supported", objPath, t.getSize(),
                             rsc::kMaxStringBytes));
    }
}

std::vector<hsize_t> Hdf5RunReader::Impl::datasetDims(const H5::DataSet& ds) const {
    const H5::DataSpace space = ds.getSpace();
    const int rank = space.getSimpleExtentNdims();
    std::vector<hsize_t> d(size_t(std::max(rank, 0)));
    if (rank > 0)
        space.getSimpleExtentDims(d.data());
    return d;
}

void Hdf5RunReader::Impl::checkBytes(const char* objPath, uint64_t logicalBytes,
                                     const std::string& claim) const {
    const uint64_t cap = satMul(fileBytes, rsc::kMaxInflation) + rsc::kInflationSlackBytes;
    if (logicalBytes > cap)
        fail(fmt::format("dataset {} claims {} ({}), more than a {} file can hold: the file is corrupt",
                         objPath, claim, humanBytes(double(logicalBytes)), humanBytes(double(fileBytes))));
}

void Hdf5RunReader::Impl::checkNumeric(const H5::DataSet& ds, const char* objPath, Dtype t) const {
    checkClass(ds, objPath, typeClass(t));
    const H5::DataType type = ds.getDataType();
    const size_t bytes = type.getSize();
    const bool wantSigned = t == Dtype::I32 || t == Dtype::I64;
    bool ok = bytes == size_t(rsc::dtypeBytes(t));
    if (ok && typeClass(t) == H5T_INTEGER)
        ok = (H5Tget_sign(type.getId()) == H5T_SGN_2) == wantSigned;
    if (!ok)
        fail(fmt::format("dataset {} holds {}-byte {}{} values, expected {}", objPath, bytes,
                         typeClass(t) == H5T_INTEGER
                             ? (H5Tget_sign(type.getId()) == H5T_SGN_2 ? "signed " : "unsigned ")
                             : "",
                         className(typeClass(t)), rsc::dtypeName(t)));
}

H5::DataSet Hdf5RunReader::Impl::openVector(const char* objPath, H5T_class_t expected, hsize_t n) const {
    H5::DataSet ds = openDataset(objPath);
    checkClass(ds, objPath, expected);
    const std::vector<hsize_t> d = datasetDims(ds);
    if (d.size() != 1 || d[0] != n)
        fail(fmt::format("dataset {} has dims {}, expected ({})", objPath, dimsString(d), n));
    return ds;
}

hsize_t Hdf5RunReader::Impl::fixedExtent(const char* objPath) const {
    H5::DataSet ds = openDataset(objPath);
    const std::vector<hsize_t> d = datasetDims(ds);
    if (d.size() != 1)
        fail(fmt::format("dataset {} has dims {}, expected one dimension", objPath, dimsString(d)));
    return d[0];
}

template <class T>
std::vector<T> Hdf5RunReader::Impl::readFixedNumeric(const char* objPath, Dtype t, hsize_t n) const {
    H5::DataSet ds = openVector(objPath, typeClass(t), n);
    checkNumeric(ds, objPath, t);
    checkBytes(objPath, satMul(n, sizeof(T)), fmt::format("{} values", n));
    std::vector<T> v(n);
    try {
        if (n)
            ds.read(v.data(), memType(t));
    } catch (const H5::Exception& e) {
        fail(fmt::format("reading {}", objPath), e);
    }
    return v;
}

std::vector<std::string> Hdf5RunReader::Impl::readFixedStrings(const char* objPath, hsize_t n) const {
    H5::DataSet ds = openVector(objPath, H5T_STRING, n);
    const size_t width = ds.getStrType().getSize();
    checkBytes(objPath, satMul(n, width), fmt::format("{} strings of {} bytes", n, width));
    std::vector<std::string> out;
    if (!n)
        return out;
    std::vector<char> buf(n * width);
    try {
        ds.read(buf.data(), fixedString(width));
    } catch (const H5::Exception& e) {
        fail(fmt::format("reading {}", objPath), e);
    }
    out.reserve(n);
    for (size_t i = 0; i < n; ++i)
        out.push_back(getFixedString(buf.data() + i * width, width));
    return out;
}

void Hdf5RunReader::Impl::readFixed() {
    readParams();
    const hsize_t nb = fixedExtent(rsc::kBufferNames);
    if (nb > hsize_t(rsc::kMaxParams))
        fail(fmt::format("dataset {} lists {} buffers, at most {} supported", rsc::kBufferNames, nb,
                         rsc::kMaxParams));
    meta.bufferNames = readFixedStrings(rsc::kBufferNames, nb);
    readCards();
    dims = runDims(meta);
}

void Hdf5RunReader::Impl::readParams() {
    const hsize_t P = fixedExtent(rsc::kParamNumel);
    if (P > hsize_t(rsc::kMaxParams))
        fail(fmt::format("dataset {} lists {} parameters, at most {} supported", rsc::kParamNumel, P,
                         rsc::kMaxParams));
    const auto numel = readFixedNumeric<int64_t>(rsc::kParamNumel, Dtype::I64, P);
    const auto offset = readFixedNumeric<int64_t>(rsc::kParamOffset, Dtype::I64, P);
    const auto names = readFixedStrings(rsc::kParamName, P);
    const auto shapes = readFixedStrings(rsc::kParamShape, P);
    meta.params.resize(P);
    for (size_t i = 0; i < P; ++i) {
        ParamInfo& p = meta.params[i];
        p.name = names[i];
        p.numel = numel[i];
        p.offset = offset[i];
        if (p.numel < 0 || p.offset < 0 || p.numel > rsc::kMaxTotalElements ||
            p.offset > rsc::kMaxTotalElements - p.numel)
            fail(fmt::format("parameter {} ('{}') has numel {} at offset {}", i, p.name, p.numel, p.offset));
        std::optional<std::vector<int64_t>> shape = parseShape(shapes[i]);
        if (!shape)
            fail(fmt::format("{}[{}] is '{}', expected dims like 64x3x3x3", rsc::kParamShape, i, shapes[i]));
        p.shape = std::move(*shape);
    }
}

void Hdf5RunReader::Impl::readCards() {
    const hsize_t C = fixedExtent(rsc::kCardRank);
    if (C != 0 && C != hsize_t(meta.worldSize))
        fail(fmt::format("dataset {} has dims ({}), expected (0) or ({}) (world_size)", rsc::kCardRank, C,
                         meta.worldSize));
    const auto rank = readFixedNumeric<int32_t>(rsc::kCardRank, Dtype::I32, C);
    const auto deviceId = readFixedNumeric<int32_t>(rsc::kCardDeviceId, Dtype::I32, C);
    const auto ip = readFixedStrings(rsc::kCardDeviceIp, C);
    const auto server = readFixedStrings(rsc::kCardServerId, C);
    const auto hbmTotal = readFixedNumeric<int64_t>(rsc::kCardHbmTotal, Dtype::I64, C);
    const auto hbmUsed = readFixedNumeric<int64_t>(rsc::kCardHbmUsed, Dtype::I64, C);
    meta.cards.resize(C);
    for (size_t i = 0; i < C; ++i)
        meta.cards[i] = CardInfo{rank[i], deviceId[i], ip[i], server[i], hbmTotal[i], hbmUsed[i]};
}

void Hdf5RunReader::Impl::openTable(RTable& table, std::span<const rsc::Column> columns) {
    if (complete || &table == &steps)
        return openColumns(table, columns);
    // A writer killed in the middle of a write can leave one of its objects torn: a SIGKILL stops a write
    // that spans pages between two pages, and the object's checksum then fails. The steps are the run; any
    // other table of a file its writer did not close is read when it can be and otherwise left out, named
    // (meta.unreadable), rather than refusing the steps with it.
    try {
        openColumns(table, columns);
    } catch (const H5::Exception& e) {
        loseTable(table, columns, h5detail::hdf5Detail(e));
    } catch (const RunFileError& e) {
        const std::string what = e.what(), prefix = path + ": "; // the note is about the table, not the file
        loseTable(table, columns, what.rfind(prefix, 0) == 0 ? what.substr(prefix.size()) : what);
    }
}

void Hdf5RunReader::Impl::loseTable(RTable& table, std::span<const rsc::Column> columns,
                                    const std::string& why) {
    table.cols.clear();
    for (const rsc::Column& spec : columns) {
        RColumn c;
        c.spec = &spec;
        c.missing = true; // never read: the table has no rows, and every view shows it as not recorded
        c.row = rowDims(spec.row, dims);
        c.rowElems = size_t(elementCount(c.row));
        if (meta.recorded(spec.path))
            meta.unreadable.emplace_back(spec.path);
        table.cols.push_back(std::move(c));
    }
    const std::string first = columns.front().path;
    meta.unreadableWhy +=
        fmt::format("{}{} cannot be read ({}): its writer stopped while writing it",
                    meta.unreadableWhy.empty() ? "" : "; ", first.substr(0, first.rfind('/')), why);
}

void Hdf5RunReader::Impl::openColumns(RTable& table, std::span<const rsc::Column> columns) {
    // A file that predates a whole table (every column added later, none there) has no rows of it; that is
    // not a column its source could not record, so it is not listed absent.
    const bool tableLater = std::all_of(columns.begin(), columns.end(), [&](const rsc::Column& c) {
        return c.addedLater && !linkExists(c.path);
    });
    for (const rsc::Column& spec : columns) {
        if (!spec.addedLater || linkExists(spec.path)) {
            table.cols.push_back(openColumn(spec));
            continue;
        }
        RColumn c;
        c.spec = &spec;
        c.missing = true; // the file predates the column: absent, never read, reads as zeros
        c.row = rowDims(spec.row, dims);
        c.rowElems = size_t(elementCount(c.row));
        if (!tableLater && meta.recorded(spec.path))
            meta.absent.emplace_back(spec.path);
        table.cols.push_back(std::move(c));
    }
}

Hdf5RunReader::Impl::RColumn Hdf5RunReader::Impl::openColumn(const rsc::Column& spec) const {
    RColumn c;
    c.spec = &spec;
    c.ds = openDataset(spec.path);
    if (h5detail::isString(spec.dtype))
        checkClass(c.ds, spec.path, H5T_STRING);
    else
        checkNumeric(c.ds, spec.path, spec.dtype);
    c.row = rowDims(spec.row, dims);
    c.rowElems = size_t(elementCount(c.row));
    c.fileElemBytes = c.ds.getDataType().getSize();
    c.chunk = chunkDims(c.ds, c.row.size() + 1);
    return c;
}

// Empty when the dataset is not chunked, or its chunks are not of `rank` non-zero dims (refused when the dims
// are checked).
std::vector<hsize_t> Hdf5RunReader::Impl::chunkDims(const H5::DataSet& ds, size_t rank) const {
    std::vector<hsize_t> chunk;
    const hid_t dcpl = H5Dget_create_plist(ds.getId());
    if (dcpl >= 0 && H5Pget_layout(dcpl) == H5D_CHUNKED) {
        chunk.assign(rank, 0);
        if (H5Pget_chunk(dcpl, int(chunk.size()), chunk.data()) != int(chunk.size()) ||
            std::count(chunk.begin(), chunk.end(), hsize_t(0)))
            chunk.clear();
    }
    if (dcpl >= 0)
        H5Pclose(dcpl);
    return chunk;
}

void Hdf5RunReader::Impl::openTables() {
    openTable(steps, rsc::kStepColumns);
    openTable(weights, rsc::kWeightColumns);
    openTable(evals, rsc::kEvalColumns);
    openTable(events, rsc::kEventColumns);
    openTable(dumps, rsc::kDumpColumns);
    openTable(entries, rsc::kEntryColumns);
    openTable(collectives, rsc::kCollectiveColumns);
    openTable(tensors, rsc::kTensorColumns);
}

void Hdf5RunReader::Impl::openStatus() {
    statusComplete = openDataset(rsc::kStatusComplete);
    checkNumeric(statusComplete, rsc::kStatusComplete, Dtype::U8);
    statusReason = openDataset(rsc::kStatusStopReason);
    checkClass(statusReason, rsc::kStatusStopReason, H5T_STRING);
}

void Hdf5RunReader::Impl::readStatus() {
    readtrace::atDataset("/status");
    try {
        for (auto [ds, p] : {std::pair{&statusComplete, rsc::kStatusComplete},
                             std::pair{&statusReason, rsc::kStatusStopReason}})
            if (ds->getSpace().getSimpleExtentNpoints() != 1)
                fail(fmt::format("dataset {} holds {} values, expected 1", p,
                                 ds->getSpace().getSimpleExtentNpoints()));
        uint8_t flag = 0;
        statusComplete.read(&flag, H5::PredType::NATIVE_UINT8);
        complete = flag != 0;
        const size_t width = statusReason.getStrType().getSize();
        std::vector<char> buf(width);
        statusReason.read(buf.data(), fixedString(width));
        stopReason = getFixedString(buf.data(), width);
    } catch (const H5::Exception& e) {
        fail("reading /status", e);
    }
}

void Hdf5RunReader::Impl::updateExtents(bool refreshFirst) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(path, ec);
    if (!ec)
        fileBytes = size;
    for (RTable* t : tables()) {
        for (RColumn& c : t->cols)
            if (!c.missing)
                c.claimed = claimedRows(*t, c, refreshFirst);
        checkKeyLead(*t);
        hsize_t rows = std::numeric_limits<hsize_t>::max();
        for (RColumn& c : t->cols) {
            if (c.missing)
                continue;
            c.extent = writtenRows(c, c.claimed);
            rows = std::min(rows, c.extent);
        }
        t->rows = rows == std::numeric_limits<hsize_t>::max() ? 0 : rows; // every column missing: none
    }
}

// The rows a column's dataspace claims, once its row dims are the schema's and its size fits the file.
hsize_t Hdf5RunReader::Impl::claimedRows(const RTable& t, const RColumn& c, bool refreshFirst) const {
    readtrace::atDataset(c.spec->path);
    if (refreshFirst && H5Drefresh(c.ds.getId()) < 0)
        fail(fmt::format("refreshing {}: {}", c.spec->path, hdf5LastError()));
    const std::vector<hsize_t> d = datasetDims(c.ds);
    bool ok = d.size() == c.row.size() + 1;
    for (size_t i = 0; ok && i < c.row.size(); ++i)
        ok = d[i + 1] == c.row[i];
    if (!ok) {
        std::string expected = fmt::format("({}", t.symbol);
        for (hsize_t x : c.row)
            expected += fmt::format(",{}", x);
        fail(fmt::format("dataset {} has dims {}, expected {}){}", c.spec->path, dimsString(d), expected,
                         rowLegend(c.spec->row)));
    }
    checkBytes(c.spec->path, satMul(satMul(d[0], c.rowElems), c.fileElemBytes), fmt::format("{} rows", d[0]));
    return d[0];
}

// The writer adds one row to every column, then to the key column (last), so no column is more than one row
// ahead of its key. Flight entries are added a whole dump at a time, so they are exempt. (A SWMR reader sees
// each column's extent when it reads that column's header, key last, so a live file can only show the key
// further ahead, never a column.)
void Hdf5RunReader::Impl::checkKeyLead(const RTable& t) const {
    const RColumn& key = t.cols.back();
    if (&t == &entries)
        return;
    for (const RColumn& c : t.cols)
        if (c.claimed > key.claimed + 1)
            fail(fmt::format("dataset {} has {} rows but {} has {}: a column is at most one row ahead of its "
                             "table's key column; the file is corrupt",
                             c.spec->path, c.claimed, key.spec->path, key.claimed));
}

// Whether the chunks holding row `row` were written: the first and the last chunk of the row (a big row
// spans several chunks along its own dims).
bool Hdf5RunReader::Impl::chunkWritten(const RColumn& c, hsize_t row) const {
    readtrace::atChunkIndex(c.spec->path);
    std::vector<hsize_t> first(c.chunk.size(), 0);
    first[0] = row / c.chunk[0] * c.chunk[0];
    std::vector<hsize_t> last = first;
    for (size_t i = 1; i < c.chunk.size(); ++i)
        last[i] = c.row[i - 1] ? (c.row[i - 1] - 1) / c.chunk[i] * c.chunk[i] : 0;
    for (const std::vector<hsize_t>* coord : {&first, &last}) {
        // An index lookup (unlike H5Dget_chunk_info_by_coord, which walks every chunk in HDF5 1.10). It fails
        // both for a chunk that was never written ("chunk storage is not allocated") and when the index
        // itself cannot be read (a corrupt or cut file): only the first means "not written".
        hdf5ClearLastError();
        hsize_t bytes = 0;
        if (H5Dget_chunk_storage_size(c.ds.getId(), coord->data(), &bytes) >= 0 && bytes > 0)
            continue;
        const std::string err = hdf5LastError();
        hdf5ClearLastError();
        if (!err.empty() && err.find("not allocated") == std::string::npos)
            fail(fmt::format("cannot read the chunk index of {} (row {}): {}{}", c.spec->path, row, err,
                             superblockSaysClosed()
                                 ? ""
                                 : fmt::format("; the file has {} bytes: was it copied or downloaded "
                                               "incompletely?",
                                               fileBytes)));
        return false;
    }
    return true;
}

// The rows of a column that are backed by written data. RunWriter writes every row it adds, so the chunk
// holding a column's last row exists, except for the row a live writer is adding right now (its new extent
// can reach a SWMR reader before the chunk does). An extent that runs further past the written chunks claims
// rows that never existed (e.g. 3,000,000,000 rows in a 60 KB file): such a file is refused before any read
// is sized by it.
hsize_t Hdf5RunReader::Impl::writtenRows(const RColumn& c, hsize_t claimed) const {
    if (claimed == 0 || c.rowElems == 0)
        return claimed;
    if (c.chunk.empty()) { // contiguous or compact: the storage is all there or not at all
        const uint64_t want = satMul(satMul(claimed, c.rowElems), c.fileElemBytes);
        const hsize_t have = H5Dget_storage_size(c.ds.getId());
        if (have < want)
            fail(fmt::format(
                "dataset {} has {} rows ({} bytes) but holds {} bytes of data: the file is corrupt",
                c.spec->path, claimed, want, have));
        return claimed;
    }
    if (chunkWritten(c, claimed - 1))
        return claimed;
    const hsize_t start = (claimed - 1) / c.chunk[0] * c.chunk[0]; // first row of the last chunk
    if (start == 0)
        return 0; // the first rows are being written
    if (chunkWritten(c, start - 1))
        return start; // the last chunk is being written
    fail(fmt::format("dataset {} has {} rows, but the data of rows {}..{} was never written: the file claims "
                     "rows it does not hold; it is corrupt",
                     c.spec->path, claimed, start - std::min(start, c.chunk[0]), claimed - 1));
}

// A killed writer leaves the file flagged for SWMR writing, and HDF5 then skips its own "truncated file"
// check (the superblock's end-of-file is stale by design). So a truncated copy of a live or killed run opens
// fine and its missing tail would read as zeros where chunks are not compressed. Chunks are allocated in file
// order as rows arrive, so checking the chunk that holds each column's last row catches a cut file.
// The superblock (version >= 2, at offset 0 in every file RunWriter makes) keeps "file consistency flags":
// bit 0 while a writer has the file open, bit 2 in SWMR write mode. HDF5 clears them on a clean close, and
// only then checks the file's size against the superblock when a SWMR reader opens it.
bool Hdf5RunReader::Impl::superblockSaysClosed() const {
    static constexpr unsigned char kSignature[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
    if (sharedWrite)
        return false;
    std::ifstream in(path, std::ios::binary);
    unsigned char head[12] = {};
    if (!in.read(reinterpret_cast<char*>(head), sizeof head))
        return false;
    return std::equal(std::begin(kSignature), std::end(kSignature), head) && head[8] >= 2 && head[11] == 0;
}

void Hdf5RunReader::Impl::checkLastChunks() const {
    // Fast path for a file its writer closed: HDF5 itself refuses such a file when it is shorter than its
    // superblock says (the "truncated copy" case), so nothing can lie past the end. The per-chunk walk below
    // costs ~1 s on a 100k-step file (HDF5 1.10 visits every chunk of every column), so it only runs for
    // files still being written or left by a killed writer, whose superblock end of allocation is stale.
    if (superblockSaysClosed())
        return;
    for (const RTable* t : {&steps, &weights, &evals, &events, &dumps, &entries})
        for (const RColumn& c : t->cols)
            if (!c.missing && c.extent != 0 && c.rowElems != 0)
                checkLastChunk(c);
}

void Hdf5RunReader::Impl::checkLastChunk(const RColumn& c) const {
    readtrace::atChunkIndex(c.spec->path);
    hid_t dcpl = H5Dget_create_plist(c.ds.getId());
    std::vector<hsize_t> chunk(c.row.size() + 1, 0);
    const bool chunked = H5Pget_layout(dcpl) == H5D_CHUNKED &&
                         H5Pget_chunk(dcpl, int(chunk.size()), chunk.data()) == int(chunk.size());
    H5Pclose(dcpl);
    if (!chunked || chunk[0] == 0)
        return;
    std::vector<hsize_t> offset(chunk.size(), 0);
    offset[0] = (c.extent - 1) / chunk[0] * chunk[0];
    unsigned filterMask = 0;
    haddr_t addr = HADDR_UNDEF;
    hsize_t size = 0;
    if (H5Dget_chunk_info_by_coord(c.ds.getId(), offset.data(), &filterMask, &addr, &size) < 0)
        return;
    // addr and size come from the file: compare without adding them (a forged address near 2^64 would wrap
    // around and look like it lies inside the file).
    auto inside = [&](uint64_t bytes) { return size <= bytes && addr <= bytes - size; };
    if (addr == HADDR_UNDEF || inside(fileBytes))
        return;
    // A live writer may have appended since fileBytes was taken; its chunks reach the disk before the index
    // that points to them, so the file's size now must cover them.
    std::error_code ec;
    const uint64_t now = std::filesystem::file_size(path, ec);
    if (!ec && inside(now))
        return;
    fail(fmt::format("the file is truncated: the last row of {} lies at bytes {}..{}, the file has {} bytes; "
                     "was it copied or downloaded incompletely?",
                     c.spec->path, addr, h5detail::satAdd(addr, size), ec ? fileBytes : now));
}

} // namespace rs
