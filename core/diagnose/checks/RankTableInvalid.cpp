// rank-table-invalid: the pre-flight check refused the rank table and the run stopped before step 0.
#include "diagnose/CheckNeeds.h"
#include "diagnose/checks/Checks.h"

#include <fmt/format.h>
#include <optional>

namespace rs::checks {
namespace {

class RankTableInvalid : public Check {
public:
    explicit RankTableInvalid(CheckContext&) {}
    const Needs& needs() const override { return needs::kNone; }

    void addEvent(const Event& e) override {
        if (e.code == eventcode::kRankTable && !m_first)
            m_first = e;
    }

    void conclude(const RunExtent& run, std::vector<Finding>& out) const override {
        if (!m_first || run.steps != 0)
            return;
        const Event& e = *m_first;
        out.push_back(makeFinding(
            Cause::RankTableInvalid, 0.95, -1, e.rank >= 0 ? std::vector<int>{e.rank} : std::vector<int>{},
            fmt::format("the run stopped before step 0 with no step recorded; pre-flight check: {}",
                        e.message),
            causeFix(Cause::RankTableInvalid, e.rank, -1, {})));
    }

private:
    std::optional<Event> m_first;
};

} // namespace

std::unique_ptr<Check> rankTableInvalid(CheckContext& c) {
    return std::make_unique<RankTableInvalid>(c);
}

} // namespace rs::checks
