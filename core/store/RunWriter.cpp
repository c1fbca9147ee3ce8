// RunWriter, appending: records become rows of the tables in RunSchema.h. Per append, for the rows of the
// table: every record's values are staged (and checked) column by column, then every column of the table is
// extended by the new rows and written with one hyperslab, the non-key columns are flushed, then the key
// column is written and flushed (so a reader never counts a row whose data is not on disk yet, even if the
// process is killed mid-append). Creating the file is in RunWriterLayout.cpp.
#include "store/Hdf5Lock.h"
#include "store/RunWriterImpl.h"

#include <H5Cpp.h>
#include <algorithm>
#include <cstring>
#include <fmt/format.h>
#include <limits>
#include <stdexcept>
#include <type_traits>

namespace rs {

namespace rsc = runschema;
using h5detail::putFixedString;
using rsc::Row;
using runwriter::Origin;
using runwriter::WColumn;

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

// Where record i of an append goes in a column's staging buffer, and how a message names what is wrong with
// its values: "appendStep(step 12): rank 1 has 5 sample ids, expected at most 4".
struct Slot {
    const RunWriter::Impl& d;
    const rsc::Column& spec;
    WColumn& c;
    size_t i;
    const Origin& at;
    size_t R;

    // Record i's bytes. Row::T columns (flight tensors) have none: their rows go to the file straight from
    // the records, so for them only the sizes are checked.
    std::byte* row() const {
        if (c.buf.size() < (i + 1) * c.rowBytes)
            throw std::logic_error(fmt::format("{}: no staged row {}", spec.path, i));
        return c.buf.data() + i * c.rowBytes;
    }
    [[noreturn]] void wrong(const std::string& what) const {
        const std::string who = at.recordNoun ? fmt::format("{} {} ", at.recordNoun, i) : std::string();
        d.invalid(fmt::format("{}(step {}): {}{}", at.op, at.step, who, what));
    }
    size_t rankLength() const { return c.rowElems / R; }
};

// A vector member of the record that is the whole row (Row::R, Row::T).
template <class T> void stageWholeRow(const Slot& s, const std::vector<T>& v) {
    const size_t n = s.c.rowElems;
    if (v.size() != n && s.at.recordNoun) // "entry 1 has 7 data entries, expected 10"
        s.wrong(fmt::format("has {} {} entries, expected {}{}", v.size(), rsc::fieldName(s.spec), n,
                            dimsNote(s.spec.row)));
    if (v.size() != n)
        s.wrong(fmt::format("{} has {} entries, expected {}{}", rsc::fieldName(s.spec), v.size(), n,
                            dimsNote(s.spec.row)));
    if (s.spec.row != Row::T && !v.empty())
        std::memcpy(s.row(), v.data(), s.c.rowBytes);
}

// A [rank][element] member of the record (Row::RP).
template <class T> void stageRankVectors(const Slot& s, const std::vector<std::vector<T>>& v) {
    if (v.size() != s.R)
        s.wrong(fmt::format("{} has {} entries, expected {} (world_size)", rsc::fieldName(s.spec), v.size(),
                            s.R));
    const size_t len = s.rankLength();
    std::byte* const row = s.row();
    for (size_t r = 0; r < s.R; ++r)
        if (!putVector(row + r * len * sizeof(T), len, v[r], s.spec.padded))
            s.wrong(fmt::format("rank {} {} has {} entries, expected {} or 0", r, rsc::fieldName(s.spec),
                                v[r].size(), len));
}

// A member of the record itself.
template <class V> void stageOwn(const Slot& s, const V& v) {
    constexpr int depth = fields::kDepth<V>;
    if constexpr (fields::kIsString<V>)
        putFixedString(s.row(), s.c.rowBytes, v);
    else if constexpr (depth == 0)
        putElement(s.row(), v);
    else if constexpr (depth == 1)
        stageWholeRow(s, v);
    else
        stageRankVectors(s, v);
}

[[noreturn]] void badRankVector(const Slot& s, size_t r, size_t size, size_t len) {
    if (s.spec.padded) // "rank 1 has 5 sample ids, expected at most 4"
        s.wrong(fmt::format("rank {} has {} {}, expected at most {}", r, size, words(s.spec), len));
    s.wrong(fmt::format("rank {} {} has {} entries, expected {} or 0", r, rsc::fieldName(s.spec), size, len));
}

// A member of the record's per-rank records (RankStep in StepRecord): one element or vector per rank.
template <class Rank, class V>
void stageRanks(const Slot& s, const std::vector<Rank>& ranks, V Rank::*field) {
    if (ranks.size() != s.R)
        s.wrong(fmt::format("{} ranks, expected {} (world_size)", ranks.size(), s.R));
    const size_t len = s.rankLength();
    std::byte* const row = s.row();
    for (size_t r = 0; r < s.R; ++r) {
        const V& v = ranks[r].*field;
        if constexpr (fields::kDepth<V> == 0)
            putElement(row + r * sizeof(fields::Stored<V>), v);
        else if (!putVector(row + r * len * sizeof(fields::Element<V>), len, v, s.spec.padded))
            badRankVector(s, r, v.size(), len);
    }
}

} // namespace

// ---------------------------------------------------------------------------------------------------------
// records -> rows, driven by the tables of RunSchema.h

template <class Record, class Field>
void RunWriter::Impl::stage(const rsc::TableColumn<Field>& col, WColumn& c, const Record& rec, size_t i,
                            const Origin& at, int64_t parentRow) const {
    const Slot s{*this, col.layout, c, i, at, size_t(dims.R)};
    if constexpr (std::is_same_v<Field, rsc::ParentRow>)
        putElement(s.row(), parentRow);
    else if constexpr (rsc::ownField<Record, Field>())
        stageOwn(s, rec.*col.field);
    else
        stageRanks(s, rsc::perRank<Field>(rec), col.field);
}

// Extends the column by the records' rows and writes them (the staged ones, or big rows straight from the
// records).
template <class Record, class Field>
void RunWriter::Impl::writeColumn(const rsc::TableColumn<Field>& col, WColumn& c,
                                  std::span<const Record> records, hsize_t row) {
    const hsize_t n = records.size();
    if constexpr (rsc::wholeRowVector<Record, Field>()) {
        if (col.layout.row == Row::T) { // big rows (flight tensors): from the records, one at a time
            extend(c, row + n);
            for (size_t i = 0; i < n; ++i)
                writeRows(c, row + i, 1, (records[i].*col.field).data());
            return;
        }
    }
    extendAndWrite(c, row, n, c.buf.data());
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
    try {
        rsc::forEachColumn(columns, [&](const auto& col) {
            WColumn& c = table.cols[size_t(col.id)];
            if (&c != &table.cols.back()) // the key, last
                writeColumn(col, c, records, row);
        });
        for (size_t k = 0; k + 1 < table.cols.size(); ++k)
            flushColumn(table.cols[k]);
        WColumn& key = table.cols.back();
        extendAndWrite(key, row, n, key.buf.data());
        flushColumn(key);
    } catch (const RunFileError&) {
        shrinkTo(table, row);
        throw;
    }
    table.rows += n;
}

// A write that failed part way (a full disk, most often while flushing) may leave a column, even the key,
// extended past the rows whose data reached the disk; the extent would reach the file at close and a reader
// would count rows of fill values. Every column goes back to the rows written whole. Best effort: this runs
// on a failing file, and the error being reported is the first one.
void RunWriter::Impl::shrinkTo(WTable& table, hsize_t rows) {
    for (WColumn& c : table.cols) {
        if (c.dims.empty() || c.dims[0] <= rows)
            continue;
        c.dims[0] = rows;
        H5E_BEGIN_TRY {
            H5Dset_extent(c.ds.getId(), c.dims.data());
        }
        H5E_END_TRY;
    }
}

// ---------------------------------------------------------------------------------------------------------
// HDF5 writes

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

void RunWriter::Impl::extend(WColumn& c, hsize_t rows) {
    try {
        c.dims[0] = rows;
        c.ds.extend(c.dims.data());
    } catch (const H5::Exception& e) {
        fail(fmt::format("extending {} to {} rows", c.path, rows), e);
    }
}

void RunWriter::Impl::extendAndWrite(WColumn& c, hsize_t row, hsize_t n, const void* data) {
    extend(c, row + n);
    writeRows(c, row, n, data);
}

void RunWriter::Impl::flushColumn(WColumn& c) {
    if (H5Dflush(c.ds.getId()) < 0)
        invalid(fmt::format("flushing {}: {}", c.path, hdf5LastError()));
}

// ---------------------------------------------------------------------------------------------------------
// public API (create is in RunWriterLayout.cpp)

RunWriter::RunWriter(std::unique_ptr<Impl> impl)
    : m_d(std::move(impl)) {}

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
