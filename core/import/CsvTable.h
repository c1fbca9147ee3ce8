// A small RFC 4180 reader for the csv files other tools write (msprobe's monitor): quoted fields with commas
// ("[4096, 4096]"), doubled quotes, CRLF or LF line ends, a header row. Line numbers are the file's (1 = the
// header), so an error can name the line a user opens in an editor.
#pragma once

#include <cstdint>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace rs {

// "FILE:LINE: what was wrong"; the importers throw it and the CLI prints it as its one line.
class ImportError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

class CsvTable {
public:
    // Opens the file and reads the header; throws ImportError naming the file if it cannot be read or is
    // empty.
    explicit CsvTable(const std::string& path);
    // A file without a header row of its own, whose columns are `header`: msprobe's part files
    // (<name>_part_<k>.csv), which continue the rows of <name>.csv and are written without one. A first row
    // equal to the header is skipped all the same, in case a writer repeats it.
    CsvTable(const std::string& path, std::vector<std::string> header);

    const std::string& path() const { return m_path; }
    const std::vector<std::string>& header() const { return m_header; }
    // Index of a header column, or -1.
    int column(const std::string& name) const;
    // The next record (its fields), or false at the end. A record with a different number of fields than
    // the header, or an unterminated quote, throws ImportError at its line.
    bool next(std::vector<std::string>& fields);
    int64_t line() const { return m_recordLine; } // the line the last record started on

    // "FILE:LINE: message" for the current record.
    [[noreturn]] void fail(const std::string& message) const;

private:
    bool readRecord(std::vector<std::string>& fields);

    std::string m_path;
    std::ifstream m_in;
    std::vector<std::string> m_header;
    int64_t m_line = 0;           // lines consumed
    int64_t m_recordLine = 0;     // first line of the last record
    bool m_skipHeaderRow = false; // the next record is the header repeated (a headerless file's first row)
};

// A number as msprobe prints it: decimal or exponent notation, nan, inf, -inf (any case). Empty: nullopt.
std::optional<double> parseCsvNumber(const std::string& field);

} // namespace rs
