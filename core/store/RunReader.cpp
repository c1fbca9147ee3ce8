// RunReader: validates a run file against RunSchema.h before reading anything a file claims, then reads
// tables by hyperslab. Row counts are the minimum extent over a table's columns, so rows a killed writer
// left half-written (beyond the key column) are never returned.
#include "store/RunReader.h"

#include "store/Hdf5Lock.h"

#include <H5Cpp.h>
#include <algorithm>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>

namespace rs {

namespace rsc = runschema;
using rsc::Dtype;
using rsc::Row;

namespace {

struct Dims {
    hsize_t R = 0, B = 0, P = 0, K = 0, T = 0;
};

std::vector<hsize_t> rowDims(Row row, const Dims& d) {
    switch (row) {
    case Row::Scalar:
        return {};
    case Row::R:
        return {d.R};
    case Row::RB:
        return {d.R, d.B};
    case Row::RP:
        return {d.R, d.P};
    case Row::RPK:
        return {d.R, d.P, d.K};
    case Row::T:
        return {d.T};
    }
    return {};
}

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

H5T_class_t expectedClass(Dtype t) {
    switch (t) {
    case Dtype::I32:
    case Dtype::I64:
    case Dtype::U8:
    case Dtype::U32:
    case Dtype::U64:
        return H5T_INTEGER;
    case Dtype::F32:
    case Dtype::F64:
        return H5T_FLOAT;
    case Dtype::Str32:
    case Dtype::Str256:
        return H5T_STRING;
    }
    return H5T_NO_CLASS;
}

const char* className(H5T_class_t c) {
    switch (c) {
    case H5T_INTEGER:
        return "integer";
    case H5T_FLOAT:
        return "float";
    case H5T_STRING:
        return "string";
    case H5T_COMPOUND:
        return "compound";
    case H5T_ENUM:
        return "enum";
    case H5T_ARRAY:
        return "array";
    case H5T_VLEN:
        return "vlen";
    case H5T_OPAQUE:
        return "opaque";
    case H5T_BITFIELD:
        return "bitfield";
    case H5T_REFERENCE:
        return "reference";
    case H5T_TIME:
        return "time";
    default:
        return "unknown";
    }
}

H5::StrType fixedString(size_t bytes) {
    H5::StrType t(H5::PredType::C_S1, std::max<size_t>(bytes, 1));
    t.setStrpad(H5T_STR_NULLTERM);
    t.setCset(H5T_CSET_UTF8);
    return t;
}

H5::DataType memType(Dtype t) {
    switch (t) {
    case Dtype::I32:
        return H5::PredType::NATIVE_INT32;
    case Dtype::I64:
        return H5::PredType::NATIVE_INT64;
    case Dtype::U8:
        return H5::PredType::NATIVE_UINT8;
    case Dtype::U32:
        return H5::PredType::NATIVE_UINT32;
    case Dtype::U64:
        return H5::PredType::NATIVE_UINT64;
    case Dtype::F32:
        return H5::PredType::NATIVE_FLOAT;
    case Dtype::F64:
        return H5::PredType::NATIVE_DOUBLE;
    case Dtype::Str32:
        return fixedString(rsc::kEventCodeLen);
    case Dtype::Str256:
        return fixedString(rsc::kEventMessageLen);
    }
    return H5::PredType::NATIVE_UINT8;
}

std::string dimsString(const std::vector<hsize_t>& dims) {
    std::string s = "(";
    for (size_t i = 0; i < dims.size(); ++i) {
        if (i) s += ',';
        s += std::to_string(dims[i]);
    }
    s += ')';
    return s;
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

// a * b, saturating at UINT64_MAX.
uint64_t satMul(uint64_t a, uint64_t b) {
    uint64_t r;
    return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

std::string fixedToString(const char* field, size_t size) {
    return std::string(field, strnlen(field, size));
}

struct RColumn {
    const rsc::Column* spec = nullptr;
    H5::DataSet ds;
    std::vector<hsize_t> row; // expected row dims
    size_t rowElems = 0;
    size_t fileElemBytes = 0;
    hsize_t extent = 0;
};

struct RTable {
    explicit RTable(char s)
        : symbol(s) {}
    char symbol; // leading dim in messages
    std::vector<RColumn> cols;
    hsize_t rows = 0;
};

} // namespace

struct RunReader::Impl {
    std::string path;
    H5::H5File file;
    bool swmr = false;        // opened with H5F_ACC_SWMR_READ
    bool sharedWrite = false; // the file is open for writing in this very process (shares its cache)
    uint64_t fileBytes = 0;
    RunMeta meta;
    int formatVersion = 0;
    bool complete = false;
    std::string stopReason;
    Dims dims;
    RTable steps{'S'}, weights{'W'}, evals{'E'}, events{'N'}, dumps{'D'}, entries{'M'};
    H5::DataSet statusComplete, statusReason;

    [[noreturn]] void fail(const std::string& what) const {
        throw RunFileError(fmt::format("{}: {}", path, what));
    }
    [[noreturn]] void fail(const std::string& where, const H5::Exception& e) const {
        const std::string inner = hdf5LastError();
        fail(fmt::format("{}: {}{}", where, e.getDetailMsg(), inner.empty() ? "" : ": " + inner));
    }

    void openFile();
    void readRoot();
    void readFixed();
    void openTables();
    void readStatus();
    void updateExtents(bool refreshFirst);
    void checkLastChunks() const;

    bool linkExists(const std::string& objPath) const;
    H5::DataSet openDataset(const char* objPath) const;
    void checkClass(const H5::DataSet& ds, const char* objPath, H5T_class_t expected) const;
    std::vector<hsize_t> datasetDims(const H5::DataSet& ds) const;
    void checkBytes(const char* objPath, uint64_t logicalBytes, const std::string& claim) const;

    std::string stringAttr(const char* name) const;
    int64_t intAttr(const char* name, int64_t lo, int64_t hi) const;
    uint64_t u64Attr(const char* name) const;
    H5::Attribute attr(const char* name, H5T_class_t expected) const;

    template <class T> std::vector<T> readFixedNumeric(const char* objPath, Dtype t, hsize_t n) const;
    std::vector<std::string> readFixedStrings(const char* objPath, hsize_t n) const;
    hsize_t fixedExtent(const char* objPath) const;

    void openTable(RTable& table, std::span<const rsc::Column> columns);
    void readRows(const RColumn& c, hsize_t begin, hsize_t n, void* out, const H5::DataType& mem) const;
    template <class T> std::vector<T> readColumn(const RColumn& c, hsize_t begin, hsize_t n) const;
    std::vector<char> readStringColumn(const RColumn& c, hsize_t begin, hsize_t n) const;
    void checkRange(const char* what, int64_t begin, int64_t end, hsize_t rows) const;
};

// ---------------------------------------------------------------------------------------------------------
// opening and validation

void RunReader::Impl::openFile() {
    hdf5ClearLastError();
    hid_t id = H5Fopen(path.c_str(), H5F_ACC_RDONLY | H5F_ACC_SWMR_READ, H5P_DEFAULT);
    swmr = id >= 0;
    const std::string swmrError = hdf5LastError();
    if (id < 0) {
        // Files without SWMR support (written by other tools) only open the plain way; we still want to
        // tell the user what they are.
        hdf5ClearLastError();
        id = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    }
    if (id < 0) {
        std::string err = hdf5LastError();
        if (err.empty()) err = swmrError;
        if (err.find("truncated file") != std::string::npos)
            fail(fmt::format("the file is truncated ({} bytes on disk; HDF5 says: {}); was it copied or "
                             "downloaded incompletely?",
                             fileBytes, err));
        if (err.find("already open for write") != std::string::npos ||
            err.find("unable to lock") != std::string::npos)
            fail(fmt::format("the file is open for writing by a process that is not in SWMR mode ({}); if "
                             "that writer died, `h5clear -s --increment=0 FILE` clears the flag without "
                             "losing data",
                             err));
        fail(fmt::format("cannot open the HDF5 file: {}", err.empty() ? swmrError : err));
    }
    file = H5::H5File(id); // takes its own reference
    H5Fclose(id);
    unsigned intent = 0;
    if (H5Fget_intent(file.getId(), &intent) >= 0) sharedWrite = (intent & H5F_ACC_RDWR) != 0;
}

H5::Attribute RunReader::Impl::attr(const char* name, H5T_class_t expected) const {
    if (!file.attrExists(name)) fail(fmt::format("root attribute '{}' is missing", name));
    H5::Attribute a = file.openAttribute(name);
    const H5T_class_t cls = a.getTypeClass();
    if (cls != expected)
        fail(fmt::format("root attribute '{}' is a {}, expected a {}", name, className(cls),
                         className(expected)));
    if (a.getSpace().getSimpleExtentNpoints() != 1)
        fail(fmt::format("root attribute '{}' holds {} values, expected 1", name,
                         a.getSpace().getSimpleExtentNpoints()));
    return a;
}

std::string RunReader::Impl::stringAttr(const char* name) const {
    H5::Attribute a = attr(name, H5T_STRING);
    H5::StrType type = a.getStrType();
    if (!type.isVariableStr() && type.getSize() > size_t(rsc::kMaxStringBytes))
        fail(fmt::format("root attribute '{}' is a {}-byte string, at most {} supported", name,
                         type.getSize(), rsc::kMaxStringBytes));
    std::string value;
    a.read(type, value);
    if (!type.isVariableStr()) value.resize(strnlen(value.c_str(), value.size()));
    return value;
}

int64_t RunReader::Impl::intAttr(const char* name, int64_t lo, int64_t hi) const {
    H5::Attribute a = attr(name, H5T_INTEGER);
    int64_t v = 0;
    a.read(H5::PredType::NATIVE_INT64, &v);
    if (v < lo || v > hi) fail(fmt::format("root attribute '{}' is {}, expected {}..{}", name, v, lo, hi));
    return v;
}

uint64_t RunReader::Impl::u64Attr(const char* name) const {
    H5::Attribute a = attr(name, H5T_INTEGER);
    uint64_t v = 0;
    a.read(H5::PredType::NATIVE_UINT64, &v);
    return v;
}

void RunReader::Impl::readRoot() {
    try {
        if (!file.attrExists(rsc::kAttrFormat))
            fail(fmt::format("not a RankSight run file (format attribute missing; expected format='{}')",
                             rsc::kFormatName));
        H5::Attribute a = file.openAttribute(rsc::kAttrFormat);
        if (a.getTypeClass() != H5T_STRING)
            fail(fmt::format(
                "not a RankSight run file (format attribute is of class {}, expected the string '{}')",
                className(a.getTypeClass()), rsc::kFormatName));
        const std::string format = stringAttr(rsc::kAttrFormat);
        if (format != rsc::kFormatName)
            fail(fmt::format("not a RankSight run file (found format '{}', expected '{}')", format,
                             rsc::kFormatName));
        const int64_t version = intAttr(rsc::kAttrFormatVersion, INT32_MIN, INT32_MAX);
        if (version > rsc::kFormatVersion)
            fail(fmt::format("written by a newer RankSight: format_version {}, this build reads up to {}",
                             version, rsc::kFormatVersion));
        if (version < 1)
            fail(fmt::format("format_version {} is invalid (expected 1..{})", version, rsc::kFormatVersion));
        formatVersion = int(version);

        meta.createdUtc = stringAttr(rsc::kAttrCreated);
        meta.model = stringAttr(rsc::kAttrModel);
        meta.worldSize = int(intAttr(rsc::kAttrWorldSize, 1, rsc::kMaxWorldSize));
        meta.batchPerRank = int(intAttr(rsc::kAttrBatchPerRank, 0, rsc::kMaxBatch));
        meta.precision = stringAttr(rsc::kAttrPrecision);
        meta.lossScale = stringAttr(rsc::kAttrLossScale);
        meta.data = stringAttr(rsc::kAttrData);
        meta.seed = u64Attr(rsc::kAttrSeed);
        meta.sketchDim = int(intAttr(rsc::kAttrSketchDim, 0, rsc::kMaxSketchDim));
        meta.weightEvery = int(intAttr(rsc::kAttrWeightEvery, INT32_MIN, INT32_MAX));
        meta.plannedSteps = intAttr(rsc::kAttrPlannedSteps, INT64_MIN, INT64_MAX);
        meta.configJson = stringAttr(rsc::kAttrConfig);
        meta.rankTableJson = stringAttr(rsc::kAttrRankTable);
        meta.environment = stringAttr(rsc::kAttrEnvironment);
    } catch (const H5::Exception& e) {
        fail("reading the root attributes", e);
    }
}

bool RunReader::Impl::linkExists(const std::string& objPath) const {
    // H5Lexists fails (rather than returning false) when an intermediate group is missing: walk the path.
    size_t pos = 0;
    while ((pos = objPath.find('/', pos + 1)) != std::string::npos)
        if (H5Lexists(file.getId(), objPath.substr(0, pos).c_str(), H5P_DEFAULT) <= 0) return false;
    return H5Lexists(file.getId(), objPath.c_str(), H5P_DEFAULT) > 0;
}

H5::DataSet RunReader::Impl::openDataset(const char* objPath) const {
    if (!linkExists(objPath)) fail(fmt::format("dataset {} is missing", objPath));
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

void RunReader::Impl::checkClass(const H5::DataSet& ds, const char* objPath, H5T_class_t expected) const {
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

std::vector<hsize_t> RunReader::Impl::datasetDims(const H5::DataSet& ds) const {
    const H5::DataSpace space = ds.getSpace();
    const int rank = space.getSimpleExtentNdims();
    std::vector<hsize_t> d(size_t(std::max(rank, 0)));
    if (rank > 0) space.getSimpleExtentDims(d.data());
    return d;
}

void RunReader::Impl::checkBytes(const char* objPath, uint64_t logicalBytes, const std::string& claim) const {
    const uint64_t cap = satMul(fileBytes, rsc::kMaxInflation) + rsc::kInflationSlackBytes;
    if (logicalBytes > cap)
        fail(fmt::format("dataset {} claims {} ({}), more than a {} file can hold: the file is corrupt",
                         objPath, claim, humanBytes(double(logicalBytes)), humanBytes(double(fileBytes))));
}

hsize_t RunReader::Impl::fixedExtent(const char* objPath) const {
    H5::DataSet ds = openDataset(objPath);
    const std::vector<hsize_t> d = datasetDims(ds);
    if (d.size() != 1)
        fail(fmt::format("dataset {} has dims {}, expected one dimension", objPath, dimsString(d)));
    return d[0];
}

template <class T>
std::vector<T> RunReader::Impl::readFixedNumeric(const char* objPath, Dtype t, hsize_t n) const {
    H5::DataSet ds = openDataset(objPath);
    checkClass(ds, objPath, expectedClass(t));
    const std::vector<hsize_t> d = datasetDims(ds);
    if (d.size() != 1 || d[0] != n)
        fail(fmt::format("dataset {} has dims {}, expected ({})", objPath, dimsString(d), n));
    checkBytes(objPath, satMul(n, sizeof(T)), fmt::format("{} values", n));
    std::vector<T> v(n);
    try {
        if (n) ds.read(v.data(), memType(t));
    } catch (const H5::Exception& e) {
        fail(fmt::format("reading {}", objPath), e);
    }
    return v;
}

std::vector<std::string> RunReader::Impl::readFixedStrings(const char* objPath, hsize_t n) const {
    H5::DataSet ds = openDataset(objPath);
    checkClass(ds, objPath, H5T_STRING);
    const std::vector<hsize_t> d = datasetDims(ds);
    if (d.size() != 1 || d[0] != n)
        fail(fmt::format("dataset {} has dims {}, expected ({})", objPath, dimsString(d), n));
    const size_t width = ds.getStrType().getSize();
    checkBytes(objPath, satMul(n, width), fmt::format("{} strings of {} bytes", n, width));
    std::vector<std::string> out;
    if (!n) return out;
    std::vector<char> buf(n * width);
    try {
        ds.read(buf.data(), fixedString(width));
    } catch (const H5::Exception& e) {
        fail(fmt::format("reading {}", objPath), e);
    }
    out.reserve(n);
    for (size_t i = 0; i < n; ++i)
        out.push_back(fixedToString(buf.data() + i * width, width));
    return out;
}

void RunReader::Impl::readFixed() {
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
        const std::string& s = shapes[i];
        for (size_t pos = 0; pos < s.size();) {
            size_t next = s.find('x', pos);
            if (next == std::string::npos) next = s.size();
            int64_t dim = 0;
            const auto [ptr, ec] = std::from_chars(s.data() + pos, s.data() + next, dim);
            if (ec != std::errc() || ptr != s.data() + next || dim < 0)
                fail(fmt::format("{}[{}] is '{}', expected dims like 64x3x3x3", rsc::kParamShape, i, s));
            p.shape.push_back(dim);
            pos = next + 1;
        }
    }
    const hsize_t nb = fixedExtent(rsc::kBufferNames);
    if (nb > hsize_t(rsc::kMaxParams))
        fail(fmt::format("dataset {} lists {} buffers, at most {} supported", rsc::kBufferNames, nb,
                         rsc::kMaxParams));
    meta.bufferNames = readFixedStrings(rsc::kBufferNames, nb);

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

    dims.R = hsize_t(meta.worldSize);
    dims.B = hsize_t(meta.batchPerRank);
    dims.P = P;
    dims.K = hsize_t(meta.sketchDim);
    dims.T = hsize_t(rsc::totalElements(meta.params));
}

void RunReader::Impl::openTable(RTable& table, std::span<const rsc::Column> columns) {
    for (const rsc::Column& spec : columns) {
        RColumn c;
        c.spec = &spec;
        c.ds = openDataset(spec.path);
        checkClass(c.ds, spec.path, expectedClass(spec.dtype));
        c.row = rowDims(spec.row, dims);
        c.rowElems = 1;
        for (hsize_t d : c.row)
            c.rowElems = size_t(satMul(c.rowElems, d));
        c.fileElemBytes = c.ds.getDataType().getSize();
        table.cols.push_back(std::move(c));
    }
}

void RunReader::Impl::openTables() {
    openTable(steps, rsc::kStepColumns);
    openTable(weights, rsc::kWeightColumns);
    openTable(evals, rsc::kEvalColumns);
    openTable(events, rsc::kEventColumns);
    openTable(dumps, rsc::kDumpColumns);
    openTable(entries, rsc::kEntryColumns);
    statusComplete = openDataset(rsc::kStatusComplete);
    checkClass(statusComplete, rsc::kStatusComplete, H5T_INTEGER);
    statusReason = openDataset(rsc::kStatusStopReason);
    checkClass(statusReason, rsc::kStatusStopReason, H5T_STRING);
}

void RunReader::Impl::readStatus() {
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
        stopReason = fixedToString(buf.data(), width);
    } catch (const H5::Exception& e) {
        fail("reading /status", e);
    }
}

void RunReader::Impl::updateExtents(bool refreshFirst) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(path, ec);
    if (!ec) fileBytes = size;
    for (RTable* t : {&steps, &weights, &evals, &events, &dumps, &entries}) {
        hsize_t rows = std::numeric_limits<hsize_t>::max();
        for (RColumn& c : t->cols) {
            if (refreshFirst && H5Drefresh(c.ds.getId()) < 0)
                fail(fmt::format("refreshing {}: {}", c.spec->path, hdf5LastError()));
            const std::vector<hsize_t> d = datasetDims(c.ds);
            bool ok = d.size() == c.row.size() + 1;
            for (size_t i = 0; ok && i < c.row.size(); ++i)
                ok = d[i + 1] == c.row[i];
            if (!ok) {
                std::string expected = fmt::format("({}", t->symbol);
                for (hsize_t x : c.row)
                    expected += fmt::format(",{}", x);
                fail(fmt::format("dataset {} has dims {}, expected {}){}", c.spec->path, dimsString(d),
                                 expected, rowLegend(c.spec->row)));
            }
            checkBytes(c.spec->path, satMul(satMul(d[0], c.rowElems), c.fileElemBytes),
                       fmt::format("{} rows", d[0]));
            c.extent = d[0];
            rows = std::min(rows, c.extent);
        }
        t->rows = rows;
    }
}

// A killed writer leaves the file flagged for SWMR writing, and HDF5 then skips its own "truncated file"
// check (the superblock's end-of-file is stale by design). So a truncated copy of a live or killed run opens
// fine and its missing tail would read as zeros where chunks are not compressed. Chunks are allocated in file
// order as rows arrive, so checking the chunk that holds each column's last row catches a cut file.
void RunReader::Impl::checkLastChunks() const {
    for (const RTable* t : {&steps, &weights, &evals, &events, &dumps, &entries}) {
        for (const RColumn& c : t->cols) {
            if (c.extent == 0 || c.rowElems == 0) continue;
            hid_t dcpl = H5Dget_create_plist(c.ds.getId());
            std::vector<hsize_t> chunk(c.row.size() + 1, 0);
            const bool chunked = H5Pget_layout(dcpl) == H5D_CHUNKED &&
                                 H5Pget_chunk(dcpl, int(chunk.size()), chunk.data()) == int(chunk.size());
            H5Pclose(dcpl);
            if (!chunked || chunk[0] == 0) continue;
            std::vector<hsize_t> offset(chunk.size(), 0);
            offset[0] = (c.extent - 1) / chunk[0] * chunk[0];
            unsigned filterMask = 0;
            haddr_t addr = HADDR_UNDEF;
            hsize_t size = 0;
            if (H5Dget_chunk_info_by_coord(c.ds.getId(), offset.data(), &filterMask, &addr, &size) < 0)
                continue;
            if (addr == HADDR_UNDEF || addr + size <= fileBytes) continue;
            // A live writer may have appended since fileBytes was taken; its chunks reach the disk before the
            // index that points to them, so the file's size now must cover them.
            std::error_code ec;
            const uint64_t now = std::filesystem::file_size(path, ec);
            if (!ec && addr + size <= now) continue;
            fail(fmt::format("the file is truncated: the last row of {} lies at bytes {}..{}, the file has "
                             "{} bytes; was it copied or downloaded incompletely?",
                             c.spec->path, addr, addr + size, ec ? fileBytes : now));
        }
    }
}

// ---------------------------------------------------------------------------------------------------------
// reading rows

void RunReader::Impl::checkRange(const char* what, int64_t begin, int64_t end, hsize_t rows) const {
    if (begin < 0 || end < begin || hsize_t(end) > rows)
        fail(fmt::format("{}({}, {}): outside the {} rows in the file", what, begin, end, rows));
}

void RunReader::Impl::readRows(const RColumn& c, hsize_t begin, hsize_t n, void* out,
                               const H5::DataType& mem) const {
    if (n == 0 || c.rowElems == 0) return;
    try {
        std::vector<hsize_t> start(c.row.size() + 1, 0), count(c.row.size() + 1);
        start[0] = begin;
        count[0] = n;
        std::copy(c.row.begin(), c.row.end(), count.begin() + 1);
        H5::DataSpace fileSpace = c.ds.getSpace();
        fileSpace.selectHyperslab(H5S_SELECT_SET, count.data(), start.data());
        H5::DataSpace memSpace(int(count.size()), count.data());
        c.ds.read(out, mem, memSpace, fileSpace);
    } catch (const H5::Exception& e) {
        fail(fmt::format("reading rows {}..{} of {}", begin, begin + n, c.spec->path), e);
    }
}

template <class T>
std::vector<T> RunReader::Impl::readColumn(const RColumn& c, hsize_t begin, hsize_t n) const {
    std::vector<T> v(n * c.rowElems);
    readRows(c, begin, n, v.data(), memType(c.spec->dtype));
    return v;
}

std::vector<char> RunReader::Impl::readStringColumn(const RColumn& c, hsize_t begin, hsize_t n) const {
    const size_t width = size_t(rsc::dtypeBytes(c.spec->dtype));
    std::vector<char> v(n * width);
    readRows(c, begin, n, v.data(), fixedString(width));
    return v;
}

// ---------------------------------------------------------------------------------------------------------
// public API

RunReader::RunReader(std::unique_ptr<Impl> impl)
    : m_d(std::move(impl)) {}

RunReader::~RunReader() {
    if (!m_d) return;
    try {
        Hdf5Guard guard;
        m_d.reset(); // closes every dataset and the file under the lock
    } catch (...) {
    }
}

std::unique_ptr<RunReader> RunReader::open(const std::string& path) {
    namespace fs = std::filesystem;
    auto d = std::make_unique<Impl>();
    d->path = path;
    std::error_code ec;
    const fs::file_status st = fs::status(path, ec);
    if (!fs::exists(st)) d->fail("no such file");
    if (fs::is_directory(st)) d->fail("is a directory, not a run file");
    d->fileBytes = fs::file_size(path, ec);
    if (ec) d->fail(fmt::format("cannot read the file size: {}", ec.message()));
    if (d->fileBytes == 0)
        throw RunFileError(fmt::format("{} is not an HDF5 file (the file is empty)", path));

    Hdf5Guard guard;
    const htri_t isHdf5 = H5Fis_hdf5(path.c_str());
    if (isHdf5 == 0)
        throw RunFileError(
            fmt::format("{} is not an HDF5 file (no HDF5 signature in its {} bytes)", path, d->fileBytes));
    if (isHdf5 < 0) d->fail(fmt::format("cannot read the file: {}", hdf5LastError()));
    try {
        d->openFile();
        d->readRoot();
        d->readFixed();
        d->openTables();
        d->updateExtents(false);
        d->checkLastChunks();
        d->readStatus();
    } catch (const H5::Exception& e) {
        d->fail("reading the run file", e);
    }
    return std::unique_ptr<RunReader>(new RunReader(std::move(d)));
}

const std::string& RunReader::path() const {
    return m_d->path;
}
const RunMeta& RunReader::meta() const {
    return m_d->meta;
}
int RunReader::formatVersion() const {
    return m_d->formatVersion;
}

bool RunReader::complete() const {
    Hdf5Guard guard;
    return m_d->complete;
}

std::string RunReader::stopReason() const {
    Hdf5Guard guard;
    return m_d->stopReason;
}

int64_t RunReader::totalElements() const {
    return int64_t(m_d->dims.T);
}

bool RunReader::refresh() {
    Hdf5Guard guard;
    Impl& d = *m_d;
    if (!d.swmr) return false;
    const hsize_t before[] = {d.steps.rows,  d.weights.rows, d.evals.rows,
                              d.events.rows, d.dumps.rows,   d.entries.rows};
    const bool wasComplete = d.complete;
    const std::string wasReason = d.stopReason;
    // In-process writers share HDF5's caches with us, so there is nothing to refresh (and evicting their
    // metadata would be wrong); other processes' writes need H5Drefresh.
    const bool refreshFirst = !d.sharedWrite;
    if (refreshFirst) {
        if (H5Drefresh(d.statusComplete.getId()) < 0 || H5Drefresh(d.statusReason.getId()) < 0)
            d.fail(fmt::format("refreshing /status: {}", hdf5LastError()));
    }
    d.updateExtents(refreshFirst);
    d.readStatus();
    const hsize_t after[] = {d.steps.rows,  d.weights.rows, d.evals.rows,
                             d.events.rows, d.dumps.rows,   d.entries.rows};
    return !std::equal(std::begin(before), std::end(before), std::begin(after)) ||
           wasComplete != d.complete || wasReason != d.stopReason;
}

int64_t RunReader::stepCount() const {
    Hdf5Guard guard;
    return int64_t(m_d->steps.rows);
}
int64_t RunReader::weightCount() const {
    Hdf5Guard guard;
    return int64_t(m_d->weights.rows);
}
int64_t RunReader::evalCount() const {
    Hdf5Guard guard;
    return int64_t(m_d->evals.rows);
}
int64_t RunReader::eventCount() const {
    Hdf5Guard guard;
    return int64_t(m_d->events.rows);
}
int64_t RunReader::flightDumpCount() const {
    Hdf5Guard guard;
    return int64_t(m_d->dumps.rows);
}

std::vector<StepRecord> RunReader::readSteps(int64_t begin, int64_t end, bool perParam) const {
    Hdf5Guard guard;
    const Impl& d = *m_d;
    d.checkRange("readSteps", begin, end, d.steps.rows);
    const hsize_t b = hsize_t(begin), n = hsize_t(end - begin);
    const size_t R = d.dims.R, B = d.dims.B, P = d.dims.P, K = d.dims.K;
    const auto& c = d.steps.cols;
    std::vector<StepRecord> out(n);

    const auto step = d.readColumn<int64_t>(c[rsc::kStep], b, n);
    const auto epoch = d.readColumn<int64_t>(c[rsc::kEpoch], b, n);
    const auto lr = d.readColumn<float>(c[rsc::kLr], b, n);
    const auto loss = d.readColumn<float>(c[rsc::kLoss], b, n);
    const auto accuracy = d.readColumn<float>(c[rsc::kAccuracy], b, n);
    const auto lossScale = d.readColumn<float>(c[rsc::kLossScale], b, n);
    const auto stepMs = d.readColumn<float>(c[rsc::kStepMs], b, n);
    const auto computeMs = d.readColumn<float>(c[rsc::kComputeMs], b, n);
    const auto commMs = d.readColumn<float>(c[rsc::kCommMs], b, n);
    const auto overflow = d.readColumn<uint8_t>(c[rsc::kOverflow], b, n);
    const auto skipped = d.readColumn<uint8_t>(c[rsc::kSkipped], b, n);
    const auto state = d.readColumn<uint8_t>(c[rsc::kState], b, n);
    const auto sampleFp = d.readColumn<uint64_t>(c[rsc::kSampleFp], b, n);
    for (size_t i = 0; i < n; ++i) {
        StepRecord& s = out[i];
        s.step = step[i];
        s.epoch = epoch[i];
        s.lr = lr[i];
        s.ranks.resize(R);
        for (size_t r = 0; r < R; ++r) {
            RankStep& rs = s.ranks[r];
            const size_t k = i * R + r;
            rs.loss = loss[k];
            rs.accuracy = accuracy[k];
            rs.lossScale = lossScale[k];
            rs.stepMs = stepMs[k];
            rs.computeMs = computeMs[k];
            rs.commMs = commMs[k];
            rs.overflow = overflow[k];
            rs.skipped = skipped[k];
            rs.state = state[k];
            rs.sampleFp = sampleFp[k];
        }
    }
    if (!perParam) return out;

    // Per-parameter columns, one at a time so only one column's buffer is alive besides the records.
    auto scatter = [&](auto tag, int col, size_t len, auto member) {
        using T = decltype(tag);
        const std::vector<T> v = d.readColumn<T>(c[col], b, n);
        for (size_t i = 0; i < n; ++i)
            for (size_t r = 0; r < R; ++r) {
                const T* src = v.data() + (i * R + r) * len;
                (out[i].ranks[r].*member).assign(src, src + len);
            }
    };
    scatter(int32_t{}, rsc::kSampleIds, B, &RankStep::sampleIds);
    scatter(float{}, rsc::kLocalNorm, P, &RankStep::localNorm);
    scatter(float{}, rsc::kLocalMax, P, &RankStep::localMax);
    scatter(double{}, rsc::kLocalSum, P, &RankStep::localSum);
    scatter(uint32_t{}, rsc::kNonfinite, P, &RankStep::nonfinite);
    scatter(uint32_t{}, rsc::kOverflowCount, P, &RankStep::overflowCount);
    scatter(uint32_t{}, rsc::kUnderflowCount, P, &RankStep::underflowCount);
    scatter(float{}, rsc::kSketch, P * K, &RankStep::sketch);
    scatter(float{}, rsc::kSyncedNorm, P, &RankStep::syncedNorm);
    scatter(double{}, rsc::kSyncedSum, P, &RankStep::syncedSum);
    scatter(uint64_t{}, rsc::kSyncedFp, P, &RankStep::syncedFp);
    return out;
}

std::vector<float> RunReader::readStepScalar(const std::string& name, int64_t begin, int64_t end) const {
    static constexpr std::pair<const char*, int> kNames[] = {
        {"loss", rsc::kLoss},         {"accuracy", rsc::kAccuracy},    {"loss_scale", rsc::kLossScale},
        {"step_ms", rsc::kStepMs},    {"compute_ms", rsc::kComputeMs}, {"comm_ms", rsc::kCommMs},
        {"overflow", rsc::kOverflow}, {"skipped", rsc::kSkipped},      {"state", rsc::kState}};
    Hdf5Guard guard;
    const Impl& d = *m_d;
    const auto it =
        std::find_if(std::begin(kNames), std::end(kNames), [&](const auto& p) { return name == p.first; });
    if (it == std::end(kNames))
        d.fail(fmt::format("readStepScalar: unknown column '{}' (known: loss, accuracy, loss_scale, step_ms, "
                           "compute_ms, comm_ms, overflow, skipped, state)",
                           name));
    d.checkRange("readStepScalar", begin, end, d.steps.rows);
    const RColumn& c = d.steps.cols[it->second];
    std::vector<float> v(size_t(end - begin) * c.rowElems);
    d.readRows(c, hsize_t(begin), hsize_t(end - begin), v.data(), H5::PredType::NATIVE_FLOAT);
    return v;
}

std::vector<WeightRecord> RunReader::readWeights() const {
    Hdf5Guard guard;
    const Impl& d = *m_d;
    const hsize_t n = d.weights.rows;
    const size_t R = d.dims.R, P = d.dims.P;
    const auto& c = d.weights.cols;
    const auto step = d.readColumn<int64_t>(c[rsc::kWStep], 0, n);
    const auto fp = d.readColumn<uint64_t>(c[rsc::kWFp], 0, n);
    const auto norm = d.readColumn<float>(c[rsc::kWNorm], 0, n);
    const auto bufferFp = d.readColumn<uint64_t>(c[rsc::kWBufferFp], 0, n);
    const auto drift = d.readColumn<float>(c[rsc::kWBufferDrift], 0, n);
    std::vector<WeightRecord> out(n);
    for (size_t i = 0; i < n; ++i) {
        WeightRecord& w = out[i];
        w.step = step[i];
        w.fp.resize(R);
        w.norm.resize(R);
        for (size_t r = 0; r < R; ++r) {
            const size_t at = (i * R + r) * P;
            w.fp[r].assign(fp.begin() + at, fp.begin() + at + P);
            w.norm[r].assign(norm.begin() + at, norm.begin() + at + P);
        }
        w.bufferFp.assign(bufferFp.begin() + i * R, bufferFp.begin() + (i + 1) * R);
        w.bufferDrift.assign(drift.begin() + i * R, drift.begin() + (i + 1) * R);
    }
    return out;
}

std::vector<EvalRecord> RunReader::readEvals() const {
    Hdf5Guard guard;
    const Impl& d = *m_d;
    const hsize_t n = d.evals.rows;
    const size_t R = d.dims.R;
    const auto& c = d.evals.cols;
    const auto step = d.readColumn<int64_t>(c[rsc::kEStep], 0, n);
    const auto accuracy = d.readColumn<float>(c[rsc::kEAccuracy], 0, n);
    const auto loss = d.readColumn<float>(c[rsc::kELoss], 0, n);
    std::vector<EvalRecord> out(n);
    for (size_t i = 0; i < n; ++i) {
        out[i].step = step[i];
        out[i].accuracy.assign(accuracy.begin() + i * R, accuracy.begin() + (i + 1) * R);
        out[i].loss.assign(loss.begin() + i * R, loss.begin() + (i + 1) * R);
    }
    return out;
}

std::vector<Event> RunReader::readEvents() const {
    Hdf5Guard guard;
    const Impl& d = *m_d;
    const hsize_t n = d.events.rows;
    const auto& c = d.events.cols;
    const auto step = d.readColumn<int64_t>(c[rsc::kVStep], 0, n);
    const auto rank = d.readColumn<int32_t>(c[rsc::kVRank], 0, n);
    const auto severity = d.readColumn<uint8_t>(c[rsc::kVSeverity], 0, n);
    const auto code = d.readStringColumn(c[rsc::kVCode], 0, n);
    const auto message = d.readStringColumn(c[rsc::kVMessage], 0, n);
    std::vector<Event> out(n);
    for (size_t i = 0; i < n; ++i) {
        out[i].step = step[i];
        out[i].rank = rank[i];
        out[i].severity = Severity(std::min<uint8_t>(severity[i], uint8_t(Severity::Error)));
        out[i].code = fixedToString(code.data() + i * rsc::kEventCodeLen, rsc::kEventCodeLen);
        out[i].message = fixedToString(message.data() + i * rsc::kEventMessageLen, rsc::kEventMessageLen);
    }
    return out;
}

std::vector<FlightDump> RunReader::readFlightDumps() const {
    Hdf5Guard guard;
    const Impl& d = *m_d;
    const hsize_t nd = d.dumps.rows, ne = d.entries.rows;
    const auto& dc = d.dumps.cols;
    const auto& ec = d.entries.cols;
    const auto trigger = d.readColumn<int64_t>(dc[rsc::kDTriggerStep], 0, nd);
    const auto reason = d.readStringColumn(dc[rsc::kDReason], 0, nd);
    std::vector<FlightDump> out(nd);
    for (size_t i = 0; i < nd; ++i) {
        out[i].triggerStep = trigger[i];
        out[i].reason = fixedToString(reason.data() + i * rsc::kReasonLen, rsc::kReasonLen);
    }
    const auto dump = d.readColumn<int64_t>(ec[rsc::kFDump], 0, ne);
    const auto step = d.readColumn<int64_t>(ec[rsc::kFStep], 0, ne);
    const auto rank = d.readColumn<int32_t>(ec[rsc::kFRank], 0, ne);
    const auto kind = d.readColumn<uint8_t>(ec[rsc::kFKind], 0, ne);
    for (size_t i = 0; i < ne; ++i) {
        // Entries of a dump whose own row is not complete yet (a killed or ongoing write) are skipped.
        if (dump[i] < 0 || hsize_t(dump[i]) >= nd) continue;
        FlightEntry e;
        e.step = step[i];
        e.rank = rank[i];
        e.kind = kind[i];
        e.data.resize(d.dims.T);
        d.readRows(ec[rsc::kFData], i, 1, e.data.data(), H5::PredType::NATIVE_FLOAT);
        out[size_t(dump[i])].entries.push_back(std::move(e));
    }
    return out;
}

RunData RunReader::readAll() const {
    Hdf5Guard guard;
    RunData data;
    data.meta = m_d->meta;
    data.formatVersion = m_d->formatVersion;
    data.complete = m_d->complete;
    data.stopReason = m_d->stopReason;
    data.steps = readSteps(0, int64_t(m_d->steps.rows), true);
    data.weights = readWeights();
    data.evals = readEvals();
    data.events = readEvents();
    data.flightDumps = readFlightDumps();
    return data;
}

} // namespace rs
