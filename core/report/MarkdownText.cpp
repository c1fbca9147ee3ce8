// The report's markdown helpers: see MarkdownText.h.
#include "report/MarkdownText.h"

#include <cmath>
#include <ctime>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace rs::markdown {

std::string cell(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (char c : text) {
        if (c == '|')
            out += "\\|";
        else if (c == '\n' || c == '\r')
            out += ' ';
        else if (c == '<')
            out += "&lt;";
        else
            out += c;
    }
    return out;
}

std::string fixed(float v, int decimals) {
    return std::isfinite(v) ? fmt::format("{:.{}f}", v, decimals) : fmt::format("{}", v);
}

std::string percent(float v) {
    return std::isfinite(v) ? fmt::format("{:.1f}%", double(v) * 100) : fmt::format("{}", v);
}

std::string target(const std::string& name) {
    return name.find(' ') == std::string::npos ? name : "<" + name + ">";
}

std::string jsonBlock(const std::string& raw) {
    std::string text = raw;
    if (!raw.empty()) {
        try {
            text = nlohmann::json::parse(raw).dump(2);
        } catch (const std::exception&) {
        }
    }
    if (text.empty())
        return "(not recorded)\n";
    const std::string fence = text.find("```") == std::string::npos ? "```" : "~~~~";
    return fmt::format("{}json\n{}\n{}\n", fence, text, fence);
}

std::string nowUtc() {
    const std::time_t t = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

std::string codeSpan(std::string_view text) {
    std::string t;
    for (char c : text)
        t += (c == '\n' || c == '\r') ? ' ' : c;
    return t.find('`') == std::string::npos ? "`" + t + "`" : "`` " + t + " ``";
}

} // namespace rs::markdown
