// What the checks of causes every rank shares read from a run compared with a reference run
// (diagnose --reference; compare/RunComparison.h). Cross-rank checks cannot see such a cause by
// construction; a reference of the same configuration can, at the step it struck.
#pragma once

#include "compare/RunComparison.h"
#include "diagnose/Check.h"

#include <optional>

namespace rs {

// The first divergence from the reference when the two runs were expected equal bit for bit (the same
// configuration on the same layout): only there does any difference locate a fault rather than other
// arithmetic. Null when they were not, or agree.
const Divergence* bitwiseFirst(const RunComparison& c);

// The divergence is in what every one of the run's `ranks` ranks computed from its weights (the loss or the
// local gradient): the state going into the step differs on every rank alike.
bool everyRankParted(const Divergence& d, int ranks);

// "(lr: 0.06 vs 0.05 in the configurations)" for the configuration keys that name this statistic; "".
std::string configurationNote(const RunComparison& c, std::string_view key);

namespace checks {

// The check of a cause named only against a reference run: it reads no dataset of the run itself, is not
// listed as "could not run" without a reference, and concludes the finding addReference made (if any).
class ReferenceCheck : public Check {
public:
    const Needs& needs() const override;
    bool needsReference() const override { return true; }
    void conclude(const RunExtent&, std::vector<Finding>& out) const override {
        if (m_finding)
            out.push_back(*m_finding);
    }

protected:
    std::optional<Finding> m_finding;
};

} // namespace checks
} // namespace rs
