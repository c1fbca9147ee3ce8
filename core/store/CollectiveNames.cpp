// collectiveGroupLabel: see CollectiveNames.h.
#include "store/CollectiveNames.h"

#include "store/ColumnText.h"

#include <fmt/format.h>

namespace rs {

std::string collectiveGroupLabel(const std::string& name, const std::string& desc) {
    constexpr size_t kGroupColumn = 255; // Collective::group's bytes, NUL excluded
    return columnText(desc.empty() || desc == "undefined" ? name : fmt::format("{} ({})", name, desc),
                      kGroupColumn);
}

} // namespace rs
