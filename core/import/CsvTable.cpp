// CsvTable: see CsvTable.h.
#include "import/CsvTable.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>
#include <system_error>
#include <utility>

namespace rs {

CsvTable::CsvTable(const std::string& path)
    : m_path(path)
    , m_in(path, std::ios::binary) {
    if (!m_in)
        throw ImportError(
            fmt::format("{}: cannot be read ({})", path, std::generic_category().message(errno)));
    if (!readRecord(m_header) || (m_header.size() == 1 && m_header[0].empty()))
        throw ImportError(fmt::format("{}:1: the file is empty (expected a header row)", path));
    if (!m_header.empty() && m_header[0].rfind("\xEF\xBB\xBF", 0) == 0) // a UTF-8 byte order mark
        m_header[0].erase(0, 3);
}

CsvTable::CsvTable(const std::string& path, std::vector<std::string> header)
    : m_path(path)
    , m_in(path, std::ios::binary)
    , m_header(std::move(header))
    , m_skipHeaderRow(true) {
    if (!m_in)
        throw ImportError(
            fmt::format("{}: cannot be read ({})", path, std::generic_category().message(errno)));
}

int CsvTable::column(const std::string& name) const {
    for (size_t i = 0; i < m_header.size(); ++i)
        if (m_header[i] == name)
            return int(i);
    return -1;
}

void CsvTable::fail(const std::string& message) const {
    throw ImportError(fmt::format("{}:{}: {}", m_path, m_recordLine, message));
}

bool CsvTable::readRecord(std::vector<std::string>& fields) {
    fields.clear();
    std::string line;
    if (!std::getline(m_in, line))
        return false;
    m_recordLine = ++m_line;
    std::string field;
    bool quoted = false, wasQuoted = false;
    for (;;) {
        for (size_t i = 0; i < line.size(); ++i) {
            const char c = line[i];
            if (quoted) {
                if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
                    field += '"';
                    ++i;
                } else if (c == '"') {
                    quoted = false;
                } else {
                    field += c;
                }
            } else if (c == '"' && field.empty() && !wasQuoted) {
                quoted = wasQuoted = true;
            } else if (c == ',') {
                fields.push_back(std::move(field));
                field.clear();
                wasQuoted = false;
            } else if (c == '\r' && i + 1 == line.size()) {
                // CRLF line end
            } else {
                field += c;
            }
        }
        if (!quoted)
            break;
        // A quoted field spans lines.
        if (!std::getline(m_in, line))
            fail("a quoted field is not closed before the end of the file");
        ++m_line;
        field += '\n';
    }
    fields.push_back(std::move(field));
    return true;
}

bool CsvTable::next(std::vector<std::string>& fields) {
    for (;;) {
        if (!readRecord(fields))
            return false;
        if (fields.size() == 1 && fields[0].empty())
            continue; // blank line
        if (std::exchange(m_skipHeaderRow, false) && fields == m_header)
            continue;
        if (fields.size() != m_header.size())
            fail(fmt::format("{} fields, the header has {}", fields.size(), m_header.size()));
        return true;
    }
}

std::optional<double> parseCsvNumber(const std::string& field) {
    size_t b = 0, e = field.size();
    while (b < e && (field[b] == ' ' || field[b] == '\t'))
        ++b;
    while (e > b && (field[e - 1] == ' ' || field[e - 1] == '\t'))
        --e;
    if (b == e)
        return std::nullopt;
    const std::string s = field.substr(b, e - b);
    std::string lower;
    for (char c : s)
        lower += char(std::tolower(static_cast<unsigned char>(c)));
    if (lower == "nan" || lower == "-nan" || lower == "+nan")
        return std::nan("");
    if (lower == "inf" || lower == "+inf" || lower == "infinity")
        return HUGE_VAL;
    if (lower == "-inf" || lower == "-infinity")
        return -HUGE_VAL;
    // strtod alone accepts hex floats and "nan(...)"; a plain decimal is what a csv writer prints.
    for (char c : lower)
        if (!(std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == 'e' || c == '+' || c == '-'))
            throw std::invalid_argument(s);
    char* end = nullptr;
    errno = 0;
    const double v = std::strtod(s.c_str(), &end);
    if (end != s.c_str() + s.size())
        throw std::invalid_argument(s);
    return v; // overflow gives +-HUGE_VAL, which is what the value was
}

} // namespace rs
