// readMonitorAnomalies: see MsprobeAnomalies.h.
#include "import/MsprobeAnomalies.h"

#include "import/CsvTable.h"
#include "import/MsprobeTree.h"
#include "store/RunSchema.h"

#include <algorithm>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace rs::msprobe {
namespace {

constexpr size_t kMaxMessage = 255; // the run file's event message limit (RunRecords.h)

// A whole number from an entry; throws naming the file, the entry and the key.
int64_t wholeNumber(const nlohmann::json& entry, const char* key, const fs::path& file,
                    const std::string& name) {
    const auto it = entry.find(key);
    if (it == entry.end() || !it->is_number_integer() || it->get<int64_t>() < 0)
        throw ImportError(fmt::format("{}: entry '{}': '{}' is {}", file.string(), name, key,
                                      it == entry.end() ? "missing" : "not a whole number"));
    return it->get<int64_t>();
}

// The message, cut at the run file's limit on a UTF-8 character boundary. msprobe's messages end with what
// was seen (", current value X, history mean Y."), the part a user compares, so a long tag name is cut
// before that ending rather than the ending itself.
std::string cutAt(std::string text, size_t limit) {
    if (text.size() <= limit)
        return text;
    size_t cut = limit >= 3 ? limit - 3 : 0;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80)
        --cut;
    text.resize(cut);
    return text + "...";
}
std::string shortened(const std::string& text) {
    if (text.size() <= kMaxMessage)
        return text;
    const size_t tail = text.rfind(", current value ");
    if (tail == std::string::npos || text.size() - tail > kMaxMessage / 2)
        return cutAt(text, kMaxMessage);
    const std::string ending = text.substr(tail);
    return cutAt(text.substr(0, tail), kMaxMessage - ending.size()) + ending;
}

void readFile(const fs::path& file, MonitorAlerts& out) {
    std::ifstream in(file, std::ios::binary);
    if (!in)
        throw ImportError(fmt::format("{}: cannot be read", file.string()));
    std::stringstream text;
    text << in.rdbuf();
    nlohmann::json doc;
    try {
        doc = nlohmann::json::parse(text.str());
    } catch (const nlohmann::json::parse_error& e) {
        throw ImportError(fmt::format("{}: not JSON (byte {}: {})", file.string(), e.byte, e.what()));
    } catch (const nlohmann::json::exception& e) { // a number too large for a double (out_of_range)
        throw ImportError(fmt::format("{}: not a JSON object of anomalies ({})", file.string(), e.what()));
    }
    if (!doc.is_object())
        throw ImportError(fmt::format("{}: not a JSON object of anomalies", file.string()));
    for (const auto& [name, entry] : doc.items()) {
        if (!entry.is_object())
            throw ImportError(fmt::format("{}: entry '{}' is not an object", file.string(), name));
        Event ev;
        ev.step = wholeNumber(entry, "step", file, name);
        const int64_t rank = wholeNumber(entry, "rank", file, name);
        if (rank >= runschema::kMaxWorldSize)
            throw ImportError(
                fmt::format("{}: entry '{}': rank {} is out of range", file.string(), name, rank));
        ev.rank = int(rank);
        out.ranks = std::max(out.ranks, int(rank) + 1);
        ev.severity = Severity::Warning;
        ev.code = eventcode::kMonitorAnomaly;
        const auto message = entry.find("message");
        ev.message = shortened(message != entry.end() && message->is_string()
                                   ? message->get<std::string>()
                                   : fmt::format("msprobe monitor anomaly: {}", name));
        out.events.push_back(std::move(ev));
    }
}

} // namespace

MonitorAlerts readMonitorAlerts(const fs::path& monitorDir) {
    MonitorAlerts alerts;
    const fs::path root = monitorDir / "anomaly_detected";
    std::error_code ec;
    if (!fs::is_directory(root, ec))
        return alerts;
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(root)) {
        const std::string name = entry.path().filename().string();
        if (!entry.is_directory() || name.rfind("rank", 0) != 0)
            continue;
        const int64_t rank = decimal(std::string_view(name).substr(4)).value_or(runschema::kMaxWorldSize);
        if (rank >= runschema::kMaxWorldSize)
            continue;
        alerts.ranks = std::max(alerts.ranks, int(rank) + 1);
        if (fs::is_regular_file(entry.path() / "anomaly.json", ec))
            files.push_back(entry.path() / "anomaly.json");
    }
    if (files.empty() && fs::is_regular_file(root / "anomaly_analyse.json", ec)) {
        files.push_back(root / "anomaly_analyse.json");
        alerts.fromAnalysis = true;
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files)
        readFile(f, alerts);
    std::stable_sort(alerts.events.begin(), alerts.events.end(), [](const Event& a, const Event& b) {
        return a.step != b.step ? a.step < b.step : a.rank < b.rank;
    });
    return alerts;
}

} // namespace rs::msprobe
