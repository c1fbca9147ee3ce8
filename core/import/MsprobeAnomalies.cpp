// readMonitorAnomalies: see MsprobeAnomalies.h.
#include "import/MsprobeAnomalies.h"

#include "import/CsvTable.h"
#include "import/MsprobeTree.h"

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

// The message, cut at the run file's limit on a UTF-8 character boundary.
std::string shortened(std::string text) {
    if (text.size() <= kMaxMessage)
        return text;
    size_t cut = kMaxMessage - 3;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80)
        --cut;
    text.resize(cut);
    return text + "...";
}

void readFile(const fs::path& file, int ranks, std::vector<Event>& out) {
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
    }
    if (!doc.is_object())
        throw ImportError(fmt::format("{}: not a JSON object of anomalies", file.string()));
    for (const auto& [name, entry] : doc.items()) {
        if (!entry.is_object())
            throw ImportError(fmt::format("{}: entry '{}' is not an object", file.string(), name));
        Event ev;
        ev.step = wholeNumber(entry, "step", file, name);
        const int64_t rank = wholeNumber(entry, "rank", file, name);
        if (rank >= ranks)
            throw ImportError(fmt::format("{}: entry '{}': rank {} is not one of the tree's {} ranks",
                                          file.string(), name, rank, ranks));
        ev.rank = int(rank);
        ev.severity = Severity::Warning;
        ev.code = eventcode::kMonitorAnomaly;
        const auto message = entry.find("message");
        ev.message = shortened(message != entry.end() && message->is_string()
                                   ? message->get<std::string>()
                                   : fmt::format("msprobe monitor anomaly: {}", name));
        out.push_back(std::move(ev));
    }
}

} // namespace

std::vector<Event> readMonitorAnomalies(const fs::path& monitorDir, int ranks) {
    std::vector<Event> events;
    const fs::path root = monitorDir / "anomaly_detected";
    std::error_code ec;
    if (!fs::is_directory(root, ec))
        return events;
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(root)) {
        const std::string name = entry.path().filename().string();
        if (entry.is_directory() && name.rfind("rank", 0) == 0 && decimal(std::string_view(name).substr(4)) &&
            fs::is_regular_file(entry.path() / "anomaly.json", ec))
            files.push_back(entry.path() / "anomaly.json");
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files)
        readFile(f, ranks, events);
    std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
        return a.step != b.step ? a.step < b.step : a.rank < b.rank;
    });
    return events;
}

} // namespace rs::msprobe
