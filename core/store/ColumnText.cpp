// columnText: see ColumnText.h.
#include "store/ColumnText.h"

#include <cstdint>
#include <fmt/format.h>
#include <functional>

namespace rs {

std::string columnText(const std::string& s, size_t limit) {
    if (s.size() <= limit)
        return s;
    const std::string tag = fmt::format("~{:08x}", uint32_t(std::hash<std::string>{}(s)));
    std::string head = s.substr(0, limit - tag.size());
    while (!head.empty() && (static_cast<unsigned char>(head.back()) & 0xC0) == 0x80)
        head.pop_back();
    if (!head.empty() && static_cast<unsigned char>(head.back()) >= 0xC0)
        head.pop_back();
    return head + tag;
}

} // namespace rs
