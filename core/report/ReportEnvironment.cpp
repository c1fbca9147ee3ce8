// environmentSection: see ReportEnvironment.h.
#include "report/ReportEnvironment.h"

#include "report/MarkdownText.h"
#include "store/RunSource.h"
#include "view/RankGroups.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <fmt/format.h>

namespace rs {
namespace {

using namespace markdown;

// "3" or "0–7": the smallest and largest of values.
std::string span(int lo, int hi) {
    return lo == hi ? std::to_string(lo) : fmt::format("{}–{}", lo, hi);
}

// "10.0.0.1" when every one is the same, "10.0.0.1 … 10.0.0.2 (2)" for the first and last of several.
std::string spanOf(const std::vector<std::string>& values) {
    std::vector<std::string> distinct;
    for (const std::string& v : values)
        if (!v.empty() && std::find(distinct.begin(), distinct.end(), v) == distinct.end())
            distinct.push_back(v);
    if (distinct.empty())
        return std::string(kNotRecorded);
    const std::string missing =
        distinct.size() < values.size() && std::count(values.begin(), values.end(), std::string()) > 0
            ? fmt::format("; {} not recorded", std::count(values.begin(), values.end(), std::string()))
            : std::string();
    if (distinct.size() == 1)
        return cell(distinct.front()) + (missing.empty() ? "" : " (" + missing.substr(2) + ")");
    return fmt::format("{} … {} ({}{})", cell(distinct.front()), cell(distinct.back()), distinct.size(),
                       missing);
}

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// Past kReportAllRanksUpTo cards, a row per group of servers (view::rankGroups, as the heatmaps pool them):
// each column the range its cards span, so a thousand cards are tens of rows, not a thousand.
void groupedCards(std::string& md, const RunMeta& m, const std::vector<int>& nodes) {
    const view::RankGroups groups = view::rankGroups(m, int(kReportMaxCardRows));
    md += fmt::format(
        "{} cards in {} rows, {} (the run file's card table holds each):\n\n", m.cards.size(), groups.size(),
        groups.serversPerGroup > 0
            ? fmt::format("a row per {}", groups.serversPerGroup == 1
                                              ? std::string("server")
                                              : fmt::format("{} servers", groups.serversPerGroup))
            : std::string("a row per block of consecutive ranks"));
    md += nodes.empty() ? "| ranks | device ids | device IPs | servers | HBM used / total (GiB) |\n"
                          "|---:|---:|---|---|---|\n"
                        : "| ranks | node | device ids | device IPs | servers | HBM used / total (GiB) |\n"
                          "|---:|---:|---:|---|---|---|\n";
    for (int g = 0; g < groups.size(); ++g) {
        std::vector<const CardInfo*> in;
        for (const CardInfo& c : m.cards)
            if (c.rank >= groups.start[size_t(g)] && c.rank < groups.end(g))
                in.push_back(&c);
        if (in.empty())
            continue;
        std::vector<std::string> ips, servers;
        int rankLo = INT_MAX, rankHi = INT_MIN, devLo = INT_MAX, devHi = INT_MIN, nodeLo = INT_MAX,
            nodeHi = INT_MIN, noDevice = 0, noHbm = 0;
        double usedLo = INFINITY, usedHi = -INFINITY, total = 0;
        for (const CardInfo* c : in) {
            rankLo = std::min(rankLo, c->rank);
            rankHi = std::max(rankHi, c->rank);
            ips.push_back(c->deviceIp);
            servers.push_back(c->serverId);
            if (c->deviceId < 0) {
                ++noDevice;
            } else {
                devLo = std::min(devLo, c->deviceId);
                devHi = std::max(devHi, c->deviceId);
            }
            if (c->rank >= 0 && size_t(c->rank) < nodes.size()) {
                nodeLo = std::min(nodeLo, nodes[size_t(c->rank)]);
                nodeHi = std::max(nodeHi, nodes[size_t(c->rank)]);
            }
            if (c->hbmTotalBytes > 0) {
                usedLo = std::min(usedLo, double(c->hbmUsedBytes) / kGiB);
                usedHi = std::max(usedHi, double(c->hbmUsedBytes) / kGiB);
                total = std::max(total, double(c->hbmTotalBytes) / kGiB);
            } else {
                ++noHbm;
            }
        }
        const std::string devices =
            noDevice == int(in.size()) ? std::string(kNotRecorded) : span(devLo, devHi);
        std::string hbm = std::string(kNotRecorded);
        if (noHbm < int(in.size()))
            hbm = (usedLo == usedHi ? fmt::format("{:.2f}", usedLo)
                                    : fmt::format("{:.2f}–{:.2f}", usedLo, usedHi)) +
                  fmt::format(" / {:.0f}", total) + (noHbm ? fmt::format(" ({} not recorded)", noHbm) : "");
        md += fmt::format("| {}{} | {} | {} | {} | {} |\n", span(rankLo, rankHi),
                          nodes.empty()
                              ? std::string()
                              : " | " + (nodeLo > nodeHi ? std::string(kNotRecorded) : span(nodeLo, nodeHi)),
                          devices, spanOf(ips), spanOf(servers), hbm);
    }
    md += "\n";
}

} // namespace

void environmentSection(std::string& md, const ReportInput& in) {
    const RunMeta& m = in.meta;
    md += "## Environment\n\n" + jsonBlock(m.environment) + "\n";
    md += "## Configuration\n\n" + jsonBlock(m.configJson) + "\n";
    const bool many = m.cards.size() > kReportAllRanksUpTo;
    const bool tableFile = std::any_of(in.files.begin(), in.files.end(),
                                       [](const ReportFile& f) { return f.name == kReportRankTableFile; });
    if (many && tableFile)
        md += fmt::format("## Rank table\n\n{} devices on {} servers: the whole table is [{}]({}).\n\n",
                          m.cards.size(), serverCount(m), kReportRankTableFile, kReportRankTableFile);
    else
        md += "## Rank table\n\n" + jsonBlock(m.rankTableJson) + "\n";
    md += "## Cards\n\n";
    if (m.cards.empty()) {
        md += "The run has no card table.\n\n";
        return;
    }
    const std::vector<int> nodes = nodeOfRank(m);
    if (many) {
        groupedCards(md, m, nodes);
        return;
    }
    md +=
        nodes.empty()
            ? "| rank | device id | device IP | server | HBM used / total (GiB) |\n|---:|---:|---|---|---|\n"
            : "| rank | node | device id | device IP | server | HBM used / total (GiB) |\n"
              "|---:|---:|---:|---|---|---|\n";
    auto text = [](const std::string& v) { return v.empty() ? std::string(kNotRecorded) : cell(v); };
    for (const CardInfo& c : m.cards)
        md += fmt::format("| {}{} | {} | {} | {} | {} |\n", c.rank,
                          nodes.empty() || size_t(c.rank) >= nodes.size() || c.rank < 0
                              ? std::string()
                              : fmt::format(" | {}", nodes[size_t(c.rank)]),
                          c.deviceId < 0 ? std::string(kNotRecorded) : std::to_string(c.deviceId),
                          text(c.deviceIp), text(c.serverId),
                          c.hbmTotalBytes > 0 ? fmt::format("{:.2f} / {:.0f}", double(c.hbmUsedBytes) / kGiB,
                                                            double(c.hbmTotalBytes) / kGiB)
                                              : std::string(kNotRecorded));
    md += "\n";
}

} // namespace rs
