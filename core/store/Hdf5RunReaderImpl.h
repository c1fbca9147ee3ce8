// Internal to core/store: the state of Hdf5RunReader (Hdf5RunReader.h), shared by Hdf5RunReaderRoot.cpp
// (opening the file, its root attributes), Hdf5RunReaderValidation.cpp (checking its datasets) and
// Hdf5RunReader.cpp (reading rows). Not a public header.
#pragma once

#include "store/Hdf5RunReader.h"
#include "store/Hdf5Types.h"

#include <H5Cpp.h>
#include <array>
#include <fmt/format.h>
#include <span>
#include <string>
#include <vector>

namespace rs {

struct Hdf5RunReader::Impl {
    // One table column, checked against its schema entry when the file was opened.
    struct RColumn {
        const runschema::Column* spec = nullptr;
        H5::DataSet ds;
        std::vector<hsize_t> row; // expected row dims
        size_t rowElems = 0;
        size_t fileElemBytes = 0;
        std::vector<hsize_t> chunk; // chunk dims; empty when the dataset is not chunked
        hsize_t claimed = 0;        // rows its dataspace claims
        hsize_t extent = 0;         // rows backed by written data (see writtenRows)
        bool missing = false;       // a column added later (Column::addedLater) that this file predates
    };
    struct RTable {
        explicit RTable(char s)
            : symbol(s) {}
        char symbol; // leading dim in messages
        std::vector<RColumn> cols;
        hsize_t rows = 0; // complete rows: the minimum extent over cols
    };

    std::string path;
    H5::H5File file;
    bool swmr = false;        // opened with H5F_ACC_SWMR_READ
    bool sharedWrite = false; // the file is open for writing in this very process (shares its cache)
    uint64_t fileBytes = 0;
    RunMeta meta;
    int formatVersion = 0;
    bool complete = false;
    std::string stopReason;
    h5detail::Dims dims;
    RTable steps{'S'}, weights{'W'}, evals{'E'}, events{'N'}, dumps{'D'}, entries{'M'}, collectives{'L'},
        tensors{'X'};
    std::array<RTable*, 8> tables() {
        return {&steps, &weights, &evals, &events, &dumps, &entries, &collectives, &tensors};
    }
    H5::DataSet statusComplete, statusReason;

    [[noreturn]] void fail(const std::string& what) const {
        throw RunFileError(fmt::format("{}: {}", path, what));
    }
    [[noreturn]] void fail(const std::string& where, const H5::Exception& e) const {
        fail(fmt::format("{}: {}", where, h5detail::hdf5Detail(e)));
    }

    // --- opening and root attributes (Hdf5RunReaderRoot.cpp) ---------------------------------------------
    void checkIsHdf5();
    void openFile();
    [[noreturn]] void failToOpen(const std::string& swmrError) const;
    void readRoot();
    void readFormat();
    template <class Field> void readAttribute(const runschema::RootAttribute<Field>& a);
    void readValue(const runschema::Attribute& a, std::string& v) const;
    void readValue(const runschema::Attribute& a, std::vector<std::string>& v) const;
    void readValue(const runschema::Attribute& a, int32_t& v) const;
    void readValue(const runschema::Attribute& a, int64_t& v) const;
    void readValue(const runschema::Attribute& a, uint64_t& v) const;
    int64_t versionAttr() const;
    std::string stringAttr(const char* name) const;
    int64_t intAttr(const char* name, int64_t lo, int64_t hi) const;
    uint64_t u64Attr(const char* name) const;
    H5::Attribute attr(const char* name, H5T_class_t expected) const;
    void checkIntegerSize(const H5::Attribute& a, const char* name) const;

    // --- validation (Hdf5RunReaderValidation.cpp) ---------------------------------------------------------
    void readFixed();
    void readParams();
    void readCards();
    void openTables();
    void openStatus();
    void readStatus();
    void updateExtents(bool refreshFirst);
    hsize_t claimedRows(const RTable& t, const RColumn& c, bool refreshFirst) const;
    void checkKeyLead(const RTable& t) const;
    void checkLastChunks() const;
    void checkLastChunk(const RColumn& c) const;
    hsize_t writtenRows(const RColumn& c, hsize_t claimed) const;
    bool chunkWritten(const RColumn& c, hsize_t row) const;
    bool superblockSaysClosed() const;

    bool linkExists(const std::string& objPath) const;
    H5::DataSet openDataset(const char* objPath) const;
    H5::DataSet openVector(const char* objPath, H5T_class_t expected, hsize_t n) const;
    void checkClass(const H5::DataSet& ds, const char* objPath, H5T_class_t expected) const;
    // Class, element size and (integers) sign exactly as the schema's dtype: nothing to convert on read.
    void checkNumeric(const H5::DataSet& ds, const char* objPath, runschema::Dtype t) const;
    std::vector<hsize_t> datasetDims(const H5::DataSet& ds) const;
    void checkBytes(const char* objPath, uint64_t logicalBytes, const std::string& claim) const;

    template <class T>
    std::vector<T> readFixedNumeric(const char* objPath, runschema::Dtype t, hsize_t n) const;
    std::vector<std::string> readFixedStrings(const char* objPath, hsize_t n) const;
    hsize_t fixedExtent(const char* objPath) const;
    void openTable(RTable& table, std::span<const runschema::Column> columns);
    void openColumns(RTable& table, std::span<const runschema::Column> columns);
    void loseTable(RTable& table, std::span<const runschema::Column> columns, const std::string& why);
    RColumn openColumn(const runschema::Column& spec) const;
    std::vector<hsize_t> chunkDims(const H5::DataSet& ds, size_t rank) const;

    // --- reading rows (Hdf5RunReader.cpp) -----------------------------------------------------------------
    void readRows(const RColumn& c, hsize_t begin, hsize_t n, void* out, const H5::DataType& mem) const;
    template <class T> std::vector<T> readColumn(const RColumn& c, hsize_t begin, hsize_t n) const;
    std::vector<char> readStringColumn(const RColumn& c, hsize_t begin, hsize_t n) const;
    void checkRange(const char* what, int64_t begin, int64_t end, hsize_t rows) const;
    // Rows [begin, begin + n) of a table as its records (RunSchema.h); vectors=false leaves every vector
    // member empty (readSteps' perParam). parentRows: where the ParentRow column goes (flight entries).
    template <class Record, class Table>
    std::vector<Record> readRecords(const RTable& table, const Table& columns, hsize_t begin, hsize_t n,
                                    bool vectors = true, std::vector<int64_t>* parentRows = nullptr) const;
    // Rows [begin, begin + out.size()) of one column into its member of the records.
    template <class Record, class Field>
    void readField(const runschema::TableColumn<Field>& col, const RColumn& c, hsize_t begin,
                   std::vector<Record>& out) const;
};

} // namespace rs
