// checkImportTarget, writeImport: see ImportTarget.h.
#include "import/ImportTarget.h"

#include "import/CsvTable.h"
#include "store/RunWriter.h"

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <functional>
#include <limits>
#include <unistd.h>

namespace rs {

std::vector<CardInfo> unknownCards(int ranks) {
    std::vector<CardInfo> cards(size_t(std::max(ranks, 0)));
    for (int r = 0; r < ranks; ++r) {
        cards[size_t(r)].rank = r;
        cards[size_t(r)].deviceId = -1;
    }
    return cards;
}

RankStep unrecordedRankStep(size_t params) {
    constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
    RankStep x;
    x.loss = x.accuracy = x.lossScale = x.stepMs = x.computeMs = x.commMs = x.cpuWaitMs = x.optimizerLr =
        kNaN;
    x.localNorm.assign(params, kNaN);
    x.localMax.assign(params, kNaN);
    x.localSum.assign(params, std::numeric_limits<double>::quiet_NaN());
    x.nonfinite.assign(params, 0);
    x.syncedNorm.assign(params, kNaN);
    x.syncedSum.assign(params, std::numeric_limits<double>::quiet_NaN());
    return x;
}

void checkImportTarget(const std::string& out, bool overwrite) {
    std::error_code ec;
    if (!overwrite && std::filesystem::exists(out, ec))
        throw ImportError(fmt::format("{}: the file already exists (--force replaces it)", out));
}

void writeImport(const std::string& out, const RunMeta& meta, const std::string& stopReason,
                 const std::function<void(RunWriter&)>& fill) {
    const std::string tmp = fmt::format("{}.importing-{}", out, ::getpid());
    try {
        auto w = RunWriter::create(tmp, meta, true);
        fill(*w);
        w->close(stopReason);
        w.reset();
        std::filesystem::rename(tmp, out);
    } catch (...) {
        std::error_code ec;
        std::filesystem::remove(tmp, ec);
        throw;
    }
}

} // namespace rs
