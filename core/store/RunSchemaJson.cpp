// runSchemaJson: see RunSchemaJson.h.
#include "store/RunSchemaJson.h"

#include "store/RunSchema.h"

#include <nlohmann/json.hpp>
#include <span>

namespace rs {

namespace {

namespace rsc = runschema;

// A row's dims after the row index, as docs/run-file.md's symbols ("" for one value per row).
const char* rowSymbols(rsc::Row row) {
    switch (row) {
    case rsc::Row::Scalar:
        return "";
    case rsc::Row::R:
        return "R";
    case rsc::Row::RB:
        return "RB";
    case rsc::Row::RP:
        return "RP";
    case rsc::Row::RPK:
        return "RPK";
    case rsc::Row::T:
        return "T";
    }
    return "?";
}

nlohmann::ordered_json table(std::span<const rsc::Column> columns) {
    auto out = nlohmann::ordered_json::array();
    for (const rsc::Column& c : columns)
        out.push_back({{"path", c.path},
                       {"dtype", rsc::dtypeName(c.dtype)},
                       {"row", rowSymbols(c.row)},
                       {"deflate", c.deflate},
                       {"added_later", c.addedLater},
                       {"padded", c.padded}});
    return out;
}

// The root attributes in the order they are written; an optional one may be missing from a file.
nlohmann::ordered_json attributes() {
    auto out = nlohmann::ordered_json::array();
    for (const rsc::Attribute& a : rsc::kRootAttributeLayouts)
        out.push_back({{"name", a.name}, {"dtype", rsc::attrTypeName(a.type)}, {"required", !a.optional}});
    return out;
}

} // namespace

std::string runSchemaJson() {
    nlohmann::ordered_json j;
    j["format"] = rsc::kFormatName;
    j["format_version"] = rsc::kFormatVersion;
    j["string_lengths"] = {{"event_code", rsc::kEventCodeLen},
                           {"event_message", rsc::kEventMessageLen},
                           {"reason", rsc::kReasonLen}};
    j["groups"] = rsc::kGroups;
    j["attributes"] = attributes();
    j["tables"] = {{"steps", table(rsc::kStepColumns)},
                   {"weights", table(rsc::kWeightColumns)},
                   {"eval", table(rsc::kEvalColumns)},
                   {"events", table(rsc::kEventColumns)},
                   {"dumps", table(rsc::kDumpColumns)},
                   {"entries", table(rsc::kEntryColumns)},
                   {"collectives", table(rsc::kCollectiveColumns)},
                   {"tensors", table(rsc::kTensorColumns)}};
    return j.dump(2);
}

} // namespace rs
