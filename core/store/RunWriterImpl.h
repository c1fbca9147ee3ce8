// Internal to core/store: the state of RunWriter (RunWriter.h), shared by RunWriterLayout.cpp (creating the
// file's layout: root attributes, fixed datasets, every table's columns) and RunWriter.cpp (appending records
// as rows, the public API). Not a public header.
#pragma once

#include "store/Hdf5Types.h"
#include "store/RunWriter.h"
#include "store/SpaceReserve.h"

#include <H5Cpp.h>
#include <array>
#include <cstddef>
#include <fmt/format.h>
#include <span>
#include <string>
#include <vector>

namespace rs {

namespace runwriter {

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

} // namespace runwriter

struct RunWriter::Impl {
    using WColumn = runwriter::WColumn;
    using WTable = runwriter::WTable;
    using Origin = runwriter::Origin;

    std::string path;
    RunMeta meta;
    h5detail::Dims dims;
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
        throw RunFileError(fmt::format("{}: {}: {}", path, where, h5detail::hdf5Detail(e)));
    }
    [[noreturn]] void invalid(const std::string& what) const {
        throw RunFileError(fmt::format("{}: {}", path, what));
    }
    void requireOpen(const char* op) const {
        if (!open)
            invalid(fmt::format("{} after the writer was closed", op));
    }

    // --- creation (RunWriterLayout.cpp) -------------------------------------------------------------------
    void createLayout(); // everything up to SWMR: attributes, groups, datasets, status "running"
    void discardFile(bool created, bool existed);
    void validateMeta() const;
    void checkAttributeRanges() const;
    void checkParams() const;
    void writeRootAttributes();
    template <class Field> void writeAttribute(const runschema::RootAttribute<Field>& a);
    void writeString(const char* name, const std::string& value);
    template <class T> void writeNumber(const runschema::Attribute& a, T value);
    void writeFixedDatasets();
    void writeParams();
    void writeCards();
    void createStatus();
    void createTables();
    void createTable(WTable& table, std::span<const runschema::Column> columns);
    WColumn createColumn(const runschema::Column& c);
    template <class T> void fixedNumeric(const char* name, runschema::Dtype t, const std::vector<T>& values);
    void fixedStrings(const char* name, const std::vector<std::string>& values);
    static H5::DSetAccPropList chunkCache(const WColumn& c);
    void reopenColumns(); // after SWMR starts
    void writeStatus(bool complete, const std::string& reason);
    void closeAll();

    // --- appending (RunWriter.cpp) ------------------------------------------------------------------------
    void extendAndWrite(WColumn& c, hsize_t row, hsize_t n, const void* data);
    void extend(WColumn& c, hsize_t rows);
    void writeRows(WColumn& c, hsize_t row, hsize_t n, const void* data);
    void shrinkTo(WTable& table, hsize_t rows);
    void flushColumn(WColumn& c);
    // Appends records as rows of a table (RunSchema.h): stages (and so checks) every column's values first,
    // then writes the columns, the key last. parentRow: what ParentRow columns hold (a flight entry's dump).
    template <class Record, class Table>
    void append(WTable& table, const Table& columns, std::span<const Record> records, const Origin& at,
                int64_t parentRow = -1);
    template <class Record, class Field>
    void writeColumn(const runschema::TableColumn<Field>& col, WColumn& c, std::span<const Record> records,
                     hsize_t row);
    template <class Record, class Field>
    void stage(const runschema::TableColumn<Field>& col, WColumn& c, const Record& rec, size_t i,
               const Origin& at, int64_t parentRow) const;
};

} // namespace rs
