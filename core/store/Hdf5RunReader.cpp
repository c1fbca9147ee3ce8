// Hdf5RunReader: validates a run file against RunSchema.h before reading anything a file claims
// (Hdf5RunReaderValidation.cpp), then reads tables by hyperslab, a column at a time, into the record members
// the table's rows name. Row counts are the minimum extent over a
// table's columns, so rows a killed writer left half-written (beyond the key column) are never returned.
#include "store/Hdf5Lock.h"
#include "store/Hdf5RunReaderImpl.h"
#include "store/ReadTrace.h"

#include <H5Cpp.h>
#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <type_traits>

namespace rs {

namespace rsc = runschema;
using h5detail::fixedString;
using h5detail::getFixedString;
using h5detail::memType;

// ---------------------------------------------------------------------------------------------------------
// reading rows

void Hdf5RunReader::Impl::checkRange(const char* what, int64_t begin, int64_t end, hsize_t rows) const {
    if (begin < 0 || end < begin || hsize_t(end) > rows)
        fail(fmt::format("{}({}, {}): outside the {} rows in the file", what, begin, end, rows));
}

void Hdf5RunReader::Impl::readRows(const RColumn& c, hsize_t begin, hsize_t n, void* out,
                                   const H5::DataType& mem) const {
    if (n == 0 || c.rowElems == 0 || c.missing) // a missing column (addedLater) reads as zeros
        return;
    readtrace::atDataset(c.spec->path);
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
std::vector<T> Hdf5RunReader::Impl::readColumn(const RColumn& c, hsize_t begin, hsize_t n) const {
    std::vector<T> v(n * c.rowElems);
    readRows(c, begin, n, v.data(), memType(c.spec->dtype));
    return v;
}

std::vector<char> Hdf5RunReader::Impl::readStringColumn(const RColumn& c, hsize_t begin, hsize_t n) const {
    const size_t width = size_t(rsc::dtypeBytes(c.spec->dtype));
    std::vector<char> v(n * width);
    readRows(c, begin, n, v.data(), fixedString(width));
    return v;
}

namespace {

// A stored element as the record's type (an enum clamped to its values, RunSchema.h fromStored).
template <class E> E load(fields::Stored<E> v) {
    if constexpr (std::is_enum_v<E>)
        return rsc::fromStored<E>(v);
    else
        return v;
}

// A row's values into a member of the record itself: one element, the whole row, or [rank][element].
template <class V, class S> void loadOwn(V& dst, const S* row, size_t rowElems, size_t R) {
    constexpr int depth = fields::kDepth<V>;
    if constexpr (depth == 0) {
        dst = load<V>(row[0]);
    } else if constexpr (depth == 1) {
        dst.assign(row, row + rowElems);
    } else {
        const size_t len = R ? rowElems / R : 0; // a rank's part of the row
        dst.resize(R);
        for (size_t r = 0; r < R; ++r)
            dst[r].assign(row + r * len, row + (r + 1) * len);
    }
}

// A row's values into a member of the record's per-rank records (RankStep in StepRecord).
template <class Rank, class V, class S>
void loadRanks(std::vector<Rank>& ranks, V Rank::*field, const S* row, size_t rowElems, size_t R) {
    const size_t len = R ? rowElems / R : 0;
    ranks.resize(R);
    for (size_t r = 0; r < R; ++r) {
        if constexpr (fields::kDepth<V> == 0)
            ranks[r].*field = load<V>(row[r]);
        else
            (ranks[r].*field).assign(row + r * len, row + (r + 1) * len);
    }
}

} // namespace

template <class Record, class Field>
void Hdf5RunReader::Impl::readField(const rsc::TableColumn<Field>& col, const RColumn& c, hsize_t b,
                                    std::vector<Record>& out) const {
    using V = fields::ValueOf<Field>;
    const size_t n = out.size();
    if constexpr (fields::kIsString<V>) {
        const size_t width = size_t(rsc::dtypeBytes(c.spec->dtype));
        const std::vector<char> v = readStringColumn(c, b, n);
        for (size_t i = 0; i < n; ++i)
            out[i].*col.field = getFixedString(v.data() + i * width, width);
        return;
    } else if constexpr (rsc::wholeRowVector<Record, Field>()) {
        if (col.layout.row == rsc::Row::T) { // big rows (flight tensors): into each record, a row at a time
            for (size_t i = 0; i < n; ++i) {
                V& v = out[i].*col.field;
                v.resize(c.rowElems);
                readRows(c, b + i, 1, v.data(), memType(c.spec->dtype));
            }
            return;
        }
    }
    if constexpr (!fields::kIsString<V>) {
        const auto v = readColumn<fields::Stored<fields::Element<V>>>(c, b, n);
        for (size_t i = 0; i < n; ++i) {
            const auto* row = v.data() + i * c.rowElems;
            if constexpr (rsc::ownField<Record, Field>())
                loadOwn(out[i].*col.field, row, c.rowElems, dims.R);
            else
                loadRanks(rsc::perRank<Field>(out[i]), col.field, row, c.rowElems, dims.R);
        }
    }
}

template <class Record, class Table>
std::vector<Record> Hdf5RunReader::Impl::readRecords(const RTable& table, const Table& columns, hsize_t b,
                                                     hsize_t n, bool vectors,
                                                     std::vector<int64_t>* parentRows) const {
    std::vector<Record> out(n);
    // One column at a time, so only one column's buffer is alive besides the records.
    rsc::forEachColumn(columns, [&](const auto& col) {
        using Field = std::remove_cvref_t<decltype(col.field)>;
        const RColumn& c = table.cols[size_t(col.id)];
        if constexpr (std::is_same_v<Field, rsc::ParentRow>) {
            if (parentRows)
                *parentRows = readColumn<int64_t>(c, b, n);
        } else if (vectors || fields::kDepth<fields::ValueOf<Field>> == 0) {
            readField(col, c, b, out);
        }
    });
    return out;
}

// ---------------------------------------------------------------------------------------------------------
// public API

Hdf5RunReader::Hdf5RunReader(std::unique_ptr<Impl> impl)
    : m_d(std::move(impl)) {}

Hdf5RunReader::~Hdf5RunReader() {
    if (!m_d)
        return;
    try {
        Hdf5Guard guard;
        m_d.reset(); // closes every dataset and the file under the lock
    } catch (...) {
    }
}

// A plain message for what is not an HDF5 file at all (missing, a directory, empty, another format).
void Hdf5RunReader::Impl::checkIsHdf5() {
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::file_status st = fs::status(path, ec);
    if (!fs::exists(st))
        fail("no such file");
    if (fs::is_directory(st))
        fail("is a directory, not a run file");
    fileBytes = fs::file_size(path, ec);
    if (ec)
        fail(fmt::format("cannot read the file size: {}", ec.message()));
    if (fileBytes == 0)
        throw RunFileError(fmt::format("{} is not an HDF5 file (the file is empty)", path));
    Hdf5Guard guard;
    readtrace::atFile("the file's HDF5 signature");
    const htri_t isHdf5 = H5Fis_hdf5(path.c_str());
    if (isHdf5 == 0)
        throw RunFileError(
            fmt::format("{} is not an HDF5 file (no HDF5 signature in its {} bytes)", path, fileBytes));
    if (isHdf5 < 0)
        fail(fmt::format("cannot read the file: {}", hdf5LastError()));
}

std::unique_ptr<Hdf5RunReader> Hdf5RunReader::open(const std::string& path) {
    auto d = std::make_unique<Impl>();
    d->path = path;
    Hdf5Guard guard;
    d->checkIsHdf5();
    try {
        d->openFile();
        d->readRoot();
        d->readFixed();
        d->openStatus();
        d->readStatus(); // first: a file its writer did not close may have a table it cannot read
        d->openTables();
        d->updateExtents(false);
        d->checkLastChunks();
    } catch (const H5::Exception& e) {
        d->fail("reading the run file", e);
    }
    return std::unique_ptr<Hdf5RunReader>(new Hdf5RunReader(std::move(d)));
}

const std::string& Hdf5RunReader::path() const {
    return m_d->path;
}
const RunMeta& Hdf5RunReader::meta() const {
    return m_d->meta;
}
int Hdf5RunReader::formatVersion() const {
    return m_d->formatVersion;
}

bool Hdf5RunReader::complete() const {
    Hdf5Guard guard;
    return m_d->complete;
}

std::string Hdf5RunReader::stopReason() const {
    Hdf5Guard guard;
    return m_d->stopReason;
}

int64_t Hdf5RunReader::totalElements() const {
    return int64_t(m_d->dims.T);
}

bool Hdf5RunReader::refresh() {
    Hdf5Guard guard;
    Impl& d = *m_d;
    if (!d.swmr)
        return false;
    std::vector<hsize_t> before;
    for (const Impl::RTable* t : d.tables())
        before.push_back(t->rows);
    const bool wasComplete = d.complete;
    const std::string wasReason = d.stopReason;
    // In-process writers share HDF5's caches with us, so there is nothing to refresh (and evicting their
    // metadata would be wrong); other processes' writes need H5Drefresh.
    const bool refreshFirst = !d.sharedWrite;
    if (refreshFirst) {
        readtrace::atDataset("/status");
        if (H5Drefresh(d.statusComplete.getId()) < 0 || H5Drefresh(d.statusReason.getId()) < 0)
            d.fail(fmt::format("refreshing /status: {}", hdf5LastError()));
    }
    d.updateExtents(refreshFirst);
    d.readStatus();
    std::vector<hsize_t> after;
    for (const Impl::RTable* t : d.tables())
        after.push_back(t->rows);
    return before != after || wasComplete != d.complete || wasReason != d.stopReason;
}

int64_t Hdf5RunReader::stepCount() const {
    Hdf5Guard guard;
    return int64_t(m_d->steps.rows);
}
int64_t Hdf5RunReader::weightCount() const {
    Hdf5Guard guard;
    return int64_t(m_d->weights.rows);
}
int64_t Hdf5RunReader::evalCount() const {
    Hdf5Guard guard;
    return int64_t(m_d->evals.rows);
}
int64_t Hdf5RunReader::eventCount() const {
    Hdf5Guard guard;
    return int64_t(m_d->events.rows);
}
int64_t Hdf5RunReader::flightDumpCount() const {
    Hdf5Guard guard;
    return int64_t(m_d->dumps.rows);
}

std::vector<StepRecord> Hdf5RunReader::readSteps(int64_t begin, int64_t end, bool perParam) const {
    Hdf5Guard guard;
    const Impl& d = *m_d;
    d.checkRange("readSteps", begin, end, d.steps.rows);
    return d.readRecords<StepRecord>(d.steps, rsc::kStepTable, hsize_t(begin), hsize_t(end - begin),
                                     perParam);
}

std::vector<float> Hdf5RunReader::readStepScalar(rsc::StepCol column, int64_t begin, int64_t end) const {
    Hdf5Guard guard;
    const Impl& d = *m_d;
    if (!rsc::isRankScalar(column))
        d.fail(fmt::format("readStepScalar: column {} is not a per-rank scalar step column ({}..{})",
                           int(column), rsc::kStepColumns[rsc::kFirstRankScalar].path,
                           rsc::kStepColumns[rsc::kLastRankScalar].path));
    d.checkRange("readStepScalar", begin, end, d.steps.rows);
    const Impl::RColumn& c = d.steps.cols[column];
    std::vector<float> v(size_t(end - begin) * c.rowElems);
    d.readRows(c, hsize_t(begin), hsize_t(end - begin), v.data(), H5::PredType::NATIVE_FLOAT);
    return v;
}

int64_t Hdf5RunReader::collectiveCount() const {
    Hdf5Guard guard;
    return int64_t(m_d->collectives.rows);
}
int64_t Hdf5RunReader::tensorStatCount() const {
    Hdf5Guard guard;
    return int64_t(m_d->tensors.rows);
}

std::vector<Collective> Hdf5RunReader::readCollectives(int64_t begin, int64_t end) const {
    Hdf5Guard guard;
    const Impl& d = *m_d;
    d.checkRange("readCollectives", begin, end, d.collectives.rows);
    return d.readRecords<Collective>(d.collectives, rsc::kCollectiveTable, hsize_t(begin),
                                     hsize_t(end - begin));
}

std::vector<TensorStat> Hdf5RunReader::readTensorStats(int64_t begin, int64_t end) const {
    Hdf5Guard guard;
    const Impl& d = *m_d;
    d.checkRange("readTensorStats", begin, end, d.tensors.rows);
    return d.readRecords<TensorStat>(d.tensors, rsc::kTensorTable, hsize_t(begin), hsize_t(end - begin));
}

std::vector<int64_t> Hdf5RunReader::readStepNumbers(int64_t begin, int64_t end) const {
    Hdf5Guard guard;
    const Impl& d = *m_d;
    d.checkRange("readStepNumbers", begin, end, d.steps.rows);
    return d.readColumn<int64_t>(d.steps.cols[rsc::kStep], hsize_t(begin), hsize_t(end - begin));
}

std::vector<int64_t> Hdf5RunReader::readWeightSteps(int64_t begin, int64_t end) const {
    Hdf5Guard guard;
    const Impl& d = *m_d;
    d.checkRange("readWeightSteps", begin, end, d.weights.rows);
    return d.readColumn<int64_t>(d.weights.cols[rsc::kWStep], hsize_t(begin), hsize_t(end - begin));
}

std::vector<WeightRecord> Hdf5RunReader::readWeights(int64_t begin, int64_t end) const {
    Hdf5Guard guard;
    const Impl& d = *m_d;
    d.checkRange("readWeights", begin, end, d.weights.rows);
    return d.readRecords<WeightRecord>(d.weights, rsc::kWeightTable, hsize_t(begin), hsize_t(end - begin));
}

std::vector<EvalRecord> Hdf5RunReader::readEvals(int64_t begin, int64_t end) const {
    Hdf5Guard guard;
    const Impl& d = *m_d;
    d.checkRange("readEvals", begin, end, d.evals.rows);
    return d.readRecords<EvalRecord>(d.evals, rsc::kEvalTable, hsize_t(begin), hsize_t(end - begin));
}

std::vector<Event> Hdf5RunReader::readEvents(int64_t begin, int64_t end) const {
    Hdf5Guard guard;
    const Impl& d = *m_d;
    d.checkRange("readEvents", begin, end, d.events.rows);
    return d.readRecords<Event>(d.events, rsc::kEventTable, hsize_t(begin), hsize_t(end - begin));
}

std::vector<FlightDump> Hdf5RunReader::readFlightDumps() const {
    Hdf5Guard guard;
    const Impl& d = *m_d;
    std::vector<FlightDump> out = d.readRecords<FlightDump>(d.dumps, rsc::kDumpTable, 0, d.dumps.rows);
    std::vector<int64_t> dump;
    std::vector<FlightEntry> entries =
        d.readRecords<FlightEntry>(d.entries, rsc::kEntryTable, 0, d.entries.rows, true, &dump);
    for (size_t i = 0; i < entries.size(); ++i) {
        // Entries of a dump whose own row is not complete yet (a killed or ongoing write) are skipped.
        if (dump[i] < 0 || uint64_t(dump[i]) >= out.size())
            continue;
        out[size_t(dump[i])].entries.push_back(std::move(entries[i]));
    }
    return out;
}

} // namespace rs
