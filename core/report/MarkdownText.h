// Markdown text for the bug report (report.md): table cells, code spans, fenced JSON, numbers. CommonMark's
// rules are spelled here once, for every section of the report.
#pragma once

#include <string>
#include <string_view>

namespace rs::markdown {

// Text for a table cell: pipes and newlines would break the row, '<' would start inline HTML.
std::string cell(std::string_view text);
// A number with that many decimals, 0.123 as "12.3%"; "nan" and "inf" as themselves.
std::string fixed(float v, int decimals);
std::string percent(float v);
// Link targets with spaces need angle brackets in CommonMark.
std::string target(const std::string& name);
// A JSON attribute, pretty-printed when it parses (else as stored), in a fenced block.
std::string jsonBlock(const std::string& raw);
// Now, ISO 8601 UTC ("2026-12-05T12:00:00Z"): when a report was generated.
std::string nowUtc();
// An inline code span that survives backticks inside the text (CommonMark: a longer fence).
std::string codeSpan(std::string_view text);

} // namespace rs::markdown
