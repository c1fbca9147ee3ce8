// analyseCollectives: see CollectiveProgress.h.
#include "view/CollectiveProgress.h"

#include "store/CollectiveNames.h"

#include <algorithm>
#include <cctype>
#include <fmt/format.h>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

namespace rs::view {
namespace {

std::string joinRanks(const std::vector<int>& ranks) {
    std::string s;
    for (size_t i = 0; i < ranks.size(); ++i)
        s += fmt::format("{}{}", i ? ", " : "", ranks[i]);
    return s;
}

std::string rankWord(const std::vector<int>& ranks) {
    return fmt::format("rank{} {}", ranks.size() > 1 ? "s" : "", joinRanks(ranks));
}

// One group's non-p2p collectives per member rank, by sequence number.
using BySeq = std::map<int64_t, const Collective*>;

// The value most ranks share and the ranks that differ from it (ties: the lowest rank's value wins).
template <class F>
std::pair<std::string, std::vector<int>> oddOnes(const std::map<int, const Collective*>& at, F value) {
    std::map<std::string, int> count;
    for (const auto& [r, c] : at)
        ++count[value(*c)];
    std::string major = value(*at.begin()->second);
    for (const auto& [v, n] : count)
        if (n > count[major])
            major = v;
    std::vector<int> odd;
    for (const auto& [r, c] : at)
        if (value(*c) != major)
            odd.push_back(r);
    return {major, odd};
}

std::optional<FirstDisagreement> compareAt(const ProcessGroup& g, int64_t seq,
                                           const std::map<int, const Collective*>& at) {
    struct Rule {
        Disagreement kind;
        std::string (*value)(const Collective&);
    };
    static const Rule kRules[] = {
        {Disagreement::OpMismatch, [](const Collective& c) { return c.op; }},
        {Disagreement::SizeMismatch, [](const Collective& c) { return c.sizes; }},
        {Disagreement::DtypeMismatch, [](const Collective& c) { return c.dtypes; }},
    };
    for (const Rule& rule : kRules) {
        auto [major, odd] = oddOnes(at, rule.value);
        if (odd.empty())
            continue;
        FirstDisagreement d;
        d.kind = rule.kind;
        d.group = g.label();
        d.seq = seq;
        d.odd = odd;
        for (const auto& [r, c] : at)
            if (std::find(odd.begin(), odd.end(), r) == odd.end()) {
                d.others.push_back(r);
                if (d.expected.empty()) {
                    d.expected = describeCollective(*c);
                    d.step = c->step;
                    d.createdNs = c->createdNs;
                    d.frame = c->frame;
                }
            }
        d.found = describeCollective(*at.at(odd.front()));
        if (d.others.empty()) { // every rank differs from every other: take the lowest rank's as expected
            d.expected = describeCollective(*at.begin()->second);
            d.createdNs = at.begin()->second->createdNs;
        }
        return d;
    }
    return std::nullopt;
}

// The first disagreement of one group, walking its sequence numbers from the aligned start.
std::optional<FirstDisagreement> firstInGroup(const ProcessGroup& g, const std::map<int, BySeq>& byRank,
                                              const std::set<int>& dumped) {
    int64_t start = 0, end = -1;
    bool any = false;
    for (int r : g.ranks) {
        const auto it = byRank.find(r);
        if (!dumped.count(r) || it == byRank.end() || it->second.empty())
            continue;
        start = any ? std::max(start, it->second.begin()->first) : it->second.begin()->first;
        end = std::max(end, it->second.rbegin()->first);
        any = true;
    }
    auto lastSeqOf = [&](int r) {
        const auto it = byRank.find(r);
        return it == byRank.end() || it->second.empty() ? int64_t(-1) : it->second.rbegin()->first;
    };
    // The sequence numbers any rank has, from the aligned start: a walk over every integer in between could
    // take forever on a dump whose numbers jump.
    std::set<int64_t> seqs;
    for (int r : g.ranks)
        if (const auto it = byRank.find(r); dumped.count(r) && it != byRank.end())
            for (auto s = it->second.lower_bound(start); s != it->second.end(); ++s)
                seqs.insert(s->first);
    for (const int64_t s : seqs) {
        std::map<int, const Collective*> at;
        std::vector<int> missing;
        for (int r : g.ranks) {
            if (!dumped.count(r))
                continue;
            const auto it = byRank.find(r);
            const auto c = it == byRank.end() ? BySeq::const_iterator() : it->second.find(s);
            if (it != byRank.end() && c != it->second.end())
                at[r] = c->second;
            else
                missing.push_back(r);
        }
        if (at.empty())
            continue;
        if (!missing.empty()) {
            FirstDisagreement d;
            d.group = g.label();
            d.seq = s;
            d.odd = missing;
            for (const auto& [r, c] : at)
                d.others.push_back(r);
            const Collective& c = *at.begin()->second;
            d.expected = describeCollective(c);
            d.step = c.step;
            d.createdNs = c.createdNs;
            d.frame = c.frame;
            d.oddLastSeq = lastSeqOf(missing.front());
            const bool wentThrough = c.state == uint8_t(CollectiveState::Completed);
            d.kind = wentThrough ? Disagreement::Behind : Disagreement::NeverArrived;
            for (int r : d.others)
                d.othersLastSeq = std::max(d.othersLastSeq, lastSeqOf(r));
            return d;
        }
        if (auto d = compareAt(g, s, at))
            return d;
    }
    // Ranks agree on everything they dumped; members without a dump may be why the others wait.
    std::vector<int> noDump;
    for (int r : g.ranks)
        if (!dumped.count(r))
            noDump.push_back(r);
    if (!noDump.empty() && any) {
        FirstDisagreement d;
        d.kind = Disagreement::NoDump;
        d.group = g.label();
        d.seq = end;
        d.odd = noDump;
        for (int r : g.ranks)
            if (dumped.count(r)) {
                d.others.push_back(r);
                const auto it = byRank.find(r);
                if (d.expected.empty() && it != byRank.end() && it->second.count(end)) {
                    const Collective& c = *it->second.at(end);
                    d.expected = describeCollective(c);
                    d.step = c.step;
                    d.createdNs = c.createdNs;
                    d.frame = c.frame;
                }
            }
        return d;
    }
    return std::nullopt;
}

} // namespace

std::string ProcessGroup::label() const {
    return labelText.empty() ? collectiveGroupLabel(name, desc) : labelText;
}

std::string stepText(int64_t step) {
    if (step == kCollectiveBeforeRun)
        return "before the run";
    return step >= 0 ? fmt::format("step {}", step) : std::string();
}

std::string innermostPythonFrame(const std::string& traceback) {
    // traceback.format_list: '  File "/job/train.py", line 33, in step' then the source line; threads start
    // with 'thread <_MainThread(MainThread, started 1234)>:' (ProcessGroupHCCL::dumpPythonTraceback).
    size_t from = traceback.find("(MainThread");
    if (from == std::string::npos)
        from = 0;
    const size_t next = traceback.find("\nthread ", from);
    const std::string_view part(traceback.data() + from,
                                (next == std::string::npos ? traceback.size() : next) - from);
    const size_t at = part.rfind("File \"");
    if (at == std::string_view::npos)
        return {};
    const size_t endFile = part.find('"', at + 6), eol = part.find('\n', at);
    const std::string_view line =
        part.substr(at, eol == std::string_view::npos ? part.size() - at : eol - at);
    if (endFile == std::string_view::npos || endFile > at + line.size())
        return std::string(line);
    const std::string_view file = part.substr(at + 6, endFile - at - 6);
    std::string_view rest = line.substr(endFile - at + 1); // ', line 33, in step'
    std::string lineNo, func;
    if (const size_t l = rest.find("line "); l != std::string_view::npos) {
        for (size_t i = l + 5; i < rest.size() && std::isdigit(static_cast<unsigned char>(rest[i])); ++i)
            lineNo += rest[i];
    }
    if (const size_t in = rest.find(", in "); in != std::string_view::npos)
        func = std::string(rest.substr(in + 5));
    return fmt::format("{}:{} in {}", file, lineNo.empty() ? "?" : lineNo, func.empty() ? "?" : func);
}

const char* disagreementName(Disagreement d) {
    switch (d) {
    case Disagreement::NeverArrived:
        return "never arrived";
    case Disagreement::Behind:
        return "far behind";
    case Disagreement::OpMismatch:
        return "operation mismatch";
    case Disagreement::SizeMismatch:
        return "size mismatch";
    case Disagreement::DtypeMismatch:
        return "dtype mismatch";
    case Disagreement::NoDump:
        return "no dump";
    }
    return "?";
}

const char* collectiveStateName(uint8_t state) {
    switch (CollectiveState(state)) {
    case CollectiveState::Scheduled:
        return "scheduled";
    case CollectiveState::Started:
        return "started";
    case CollectiveState::Completed:
        return "completed";
    }
    return "?";
}

std::string describeCollective(const Collective& c) {
    std::string s = c.op;
    if (!c.sizes.empty())
        s += " " + c.sizes;
    if (!c.dtypes.empty())
        s += " " + c.dtypes;
    return s;
}

std::string FirstDisagreement::text() const {
    const std::string when = stepText(step);
    const std::string where =
        fmt::format("collective #{} of group {}{}", seq, group, when.empty() ? when : " (" + when + ")");
    switch (kind) {
    case Disagreement::NeverArrived:
        return fmt::format("{} never reached {}: {} enqueued it ({}) and wait; {}'s last collective is #{}",
                           rankWord(odd), where, rankWord(others), expected, rankWord({odd.front()}),
                           oddLastSeq);
    case Disagreement::Behind:
        return fmt::format(
            "{} {} {} collectives behind: {}'s dump ends at #{}, while {} completed {} and went on "
            "to #{} (its dump is older than theirs, or its recorder stopped)",
            rankWord(odd), odd.size() > 1 ? "are" : "is", othersLastSeq - oddLastSeq, rankWord({odd.front()}),
            oddLastSeq, rankWord(others), where, othersLastSeq);
    case Disagreement::NoDump:
        return fmt::format("{} left no dump, so where {} stopped is not recorded; {} agree up to {} ({})",
                           rankWord(odd), odd.size() > 1 ? "they" : "it", rankWord(others), where, expected);
    default:
        return fmt::format("{} at {}: {} enqueued {}, {} enqueued {}", disagreementName(kind), where,
                           rankWord(odd), found, others.empty() ? "the lowest rank" : rankWord(others),
                           expected);
    }
}

CollectiveSetup collectiveSetup(const RunMeta& meta) {
    CollectiveSetup s;
    s.worldSize = meta.worldSize;
    const auto cfg = nlohmann::json::parse(meta.configJson, nullptr, false);
    if (!cfg.is_object() || !cfg.contains("flight_recorder") || !cfg["flight_recorder"].is_object())
        return s;
    const auto& fr = cfg["flight_recorder"];
    if (fr.contains("process_groups") && fr["process_groups"].is_array())
        for (const auto& g : fr["process_groups"]) {
            if (!g.is_object())
                continue;
            ProcessGroup pg;
            for (auto [field, key] : {std::pair{&pg.name, "name"}, std::pair{&pg.desc, "desc"},
                                      std::pair{&pg.labelText, "label"}})
                if (g.contains(key) && g[key].is_string())
                    *field = g[key].get<std::string>();
            if (g.contains("ranks") && g["ranks"].is_array())
                for (const auto& r : g["ranks"])
                    if (r.is_number_integer())
                        pg.ranks.push_back(r.get<int>());
            s.groups.push_back(std::move(pg));
        }
    if (fr.contains("dumped_ranks") && fr["dumped_ranks"].is_array())
        for (const auto& r : fr["dumped_ranks"])
            if (r.is_number_integer())
                s.dumped.push_back(r.get<int>());
    if (fr.contains("py_tracebacks") && fr["py_tracebacks"].is_object())
        for (const auto& [rank, text] : fr["py_tracebacks"].items())
            if (text.is_string() && !rank.empty() && rank.size() < 7 &&
                std::all_of(rank.begin(), rank.end(), [](char c) { return c >= '0' && c <= '9'; }))
                s.tracebacks[std::stoi(rank)] = text.get<std::string>();
    return s;
}

CollectiveReport analyseCollectives(const std::vector<Collective>& collectives,
                                    const CollectiveSetup& setup) {
    CollectiveReport report;
    const std::set<int> dumped(setup.dumped.begin(), setup.dumped.end());
    for (const ProcessGroup& g : setup.groups) {
        const std::string label = g.label();
        std::map<int, BySeq> byRank;
        GroupProgress gp;
        gp.group = g;
        for (const Collective& c : collectives) {
            if (c.group != label)
                continue;
            ++gp.collectives;
            if (!c.p2p)
                byRank[c.rank][c.seq] = &c;
        }
        for (int r : g.ranks) {
            RankPosition p;
            p.rank = r;
            p.dumped = dumped.count(r) > 0;
            if (const auto it = byRank.find(r); it != byRank.end() && !it->second.empty()) {
                const Collective& last = *it->second.rbegin()->second;
                p.lastSeq = last.seq;
                p.lastOp = last.op;
                p.lastState = last.state;
                p.lastCreatedNs = last.createdNs;
                p.lastStep = last.step;
                p.lastFrame = last.frame;
                for (const auto& [seq, c] : it->second)
                    if (c->state == uint8_t(CollectiveState::Completed))
                        p.completedSeq = seq;
            }
            gp.ranks.push_back(std::move(p));
        }
        if (auto d = firstInGroup(g, byRank, dumped))
            if (!report.first || d->createdNs < report.first->createdNs)
                report.first = std::move(d);
        // Everyone arrived at the last collective, and nobody finished it.
        bool allThere = !gp.ranks.empty(), noneDone = true;
        const int64_t last = gp.ranks.empty() ? -1 : gp.ranks.front().lastSeq;
        for (const RankPosition& p : gp.ranks) {
            allThere = allThere && p.dumped && p.lastSeq == last && last >= 0;
            noneDone = noneDone && p.lastState != uint8_t(CollectiveState::Completed);
        }
        if (allThere && noneDone && report.allWaiting.empty())
            report.allWaiting =
                fmt::format("every rank of group {} enqueued collective #{} ({}) and none completed it: the "
                            "collective itself "
                            "is stuck (network, device or the communication library), not one rank elsewhere",
                            label, last, gp.ranks.front().lastOp);
        report.groups.push_back(std::move(gp));
    }
    return report;
}

} // namespace rs::view
