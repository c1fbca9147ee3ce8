// Findings as JSON, for `ranksight-cli diagnose --json` and for tools that read the diagnosis.
#include "diagnose/Finding.h"

#include "diagnose/Advice.h"

#include <cmath>
#include <nlohmann/json.hpp>

namespace rs {

std::string checkNotRunLine(const CheckNotRun& c) {
    std::string causes;
    for (const std::string& cause : c.causes)
        causes += (causes.empty() ? "" : ", ") + cause;
    return c.check + " (" + causes + "): " + c.reason;
}

std::string findingsToJson(const std::vector<Finding>& findings, const std::vector<CheckNotRun>& notRun,
                           const std::vector<Advice>& advice) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& f : findings) {
        nlohmann::json j;
        j["cause"] = f.key();
        j["dimension"] = f.dimension();
        // Two decimals: the confidence is a judgement, not a measurement.
        j["confidence"] = std::isfinite(f.confidence) ? std::round(f.confidence * 100) / 100 : 0.0;
        j["first_step"] = f.firstStep;
        j["ranks"] = f.ranks;
        j["parameters"] = f.parameters;
        j["evidence"] = f.evidence;
        j["fix"] = f.fix;
        list.push_back(std::move(j));
    }
    nlohmann::json root;
    root["findings"] = std::move(list);
    nlohmann::json skipped = nlohmann::json::array();
    for (const auto& c : notRun)
        skipped.push_back({{"check", c.check}, {"causes", c.causes}, {"reason", c.reason}});
    root["not_run"] = std::move(skipped);
    nlohmann::json adv = nlohmann::json::array();
    for (const auto& a : advice)
        adv.push_back({{"key", a.key}, {"value", a.value}, {"advice", a.text}});
    root["advice"] = std::move(adv);
    // Invalid UTF-8 in a parameter name must not make the whole diagnosis unprintable.
    return root.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

} // namespace rs
