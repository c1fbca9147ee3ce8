// `compare`: a run against a reference run, step by step, parameter by parameter, rank by rank
// (compare/RunComparison.h): the first step, parameter and statistic where they part beyond what the
// arithmetic allows, as text or JSON. --spread RUN2 (repeatable): the reference's job run again with other
// arithmetic, whose drift from the reference widens the tolerances (SpreadReference). Exit 0 when they
// agree, 3 when they part, 2 when a file cannot be read or nothing can be compared.
#include "CliArgs.h"
#include "Commands.h"
#include "compare/CompareRuns.h"
#include "compare/ComparisonText.h"
#include "reader/OpenRunFile.h"
#include "reader/ReferenceRuns.h"
#include "store/RunReader.h"
#include "store/RunSource.h"

#include <cstdio>
#include <fmt/format.h>

namespace rs::cli {

int compareCommand(const Args& argv) {
    const CliArgs args(argv, {"spread"}, {"json"});
    if (args.positionals().size() != 2)
        throw UsageError(
            fmt::format("expected two run files (RUN.h5 REFERENCE.h5), got {}", args.positionals().size()));
    const std::string& pathA = args.positionals()[0];
    const std::string& pathB = args.positionals()[1];
    RunComparison c;
    std::string nameA, nameB;
    try {
        const auto a = openRunFile(pathA);
        const ReferenceRuns refs = openReferences(pathB, args.values("spread"));
        const auto& b = refs.reference;
        c = compareRuns(*a, *b, {}, refs.spreads);
        nameA = fmt::format("{}: {}, {} steps", pathA, describeRun(a->meta()), a->stepCount());
        nameB = fmt::format("{}: {}, {} steps", pathB, describeRun(b->meta()), b->stepCount());
    } catch (const std::exception& e) {
        printError(fmt::format("compare: {}", e.what()));
        return 2;
    }
    std::fputs((args.flag("json") ? comparisonJson(c) + "\n" : comparisonText(c, nameA, nameB)).c_str(),
               stdout);
    return c.first ? 3 : 0;
}

} // namespace rs::cli
