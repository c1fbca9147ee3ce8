// WeightParting: see WeightParting.h.
#include "diagnose/tally/WeightParting.h"

#include <fmt/format.h>
#include <map>

namespace rs {

namespace {
constexpr size_t kParamsKept = 8;
} // namespace

WeightParting::WeightParting(const RunFacts& f)
    : since(size_t(std::max(f.R, 0)), kNoStep)
    , differ(size_t(std::max(f.R, 0)), 0)
    , params(size_t(std::max(f.R, 0)))
    , m_facts(f) {}

void WeightParting::addWeights(const WeightRecord& w) {
    if (m_facts.R < 2 || m_facts.P == 0)
        return;
    std::vector<int> odd(size_t(m_facts.R), 0);
    std::vector<std::vector<int>> which(size_t(m_facts.R));
    oddParams(w, odd, which);
    if (!firstSeen) {
        firstSeen = true;
        firstStep = w.step;
        for (int n : odd)
            firstAgree = firstAgree && n == 0;
        return;
    }
    for (int r = 0; r < m_facts.R; ++r)
        if (odd[size_t(r)] > 0 && since[size_t(r)] == kNoStep) {
            since[size_t(r)] = w.step;
            differ[size_t(r)] = odd[size_t(r)];
            params[size_t(r)] = std::move(which[size_t(r)]);
        }
}

void WeightParting::oddParams(const WeightRecord& w, std::vector<int>& odd,
                              std::vector<std::vector<int>>& which) const {
    std::map<uint64_t, int> count;
    for (int p = 0; p < m_facts.P; ++p) {
        count.clear();
        int recorded = 0;
        for (int r = 0; r < m_facts.R; ++r)
            if (const uint64_t k = m_facts.keys.weight(w, size_t(r), size_t(p)); k != 0) {
                ++count[k];
                ++recorded;
            }
        uint64_t major = 0;
        for (const auto& [k, n] : count)
            if (n * 2 > recorded)
                major = k;
        if (major == 0)
            continue;
        for (int r = 0; r < m_facts.R; ++r) {
            const uint64_t k = m_facts.keys.weight(w, size_t(r), size_t(p));
            if (k != 0 && k != major) {
                ++odd[size_t(r)];
                if (which[size_t(r)].size() < kParamsKept)
                    which[size_t(r)].push_back(p);
            }
        }
    }
}

int WeightParting::firstRank() const {
    if (!firstSeen || !firstAgree)
        return -1;
    int r = -1;
    for (int i = 0; i < m_facts.R; ++i)
        if (since[size_t(i)] != kNoStep && (r < 0 || since[size_t(i)] < since[size_t(r)]))
            r = i;
    return r;
}

std::string WeightParting::describe(int rank) const {
    std::string names;
    const auto& ps = params[size_t(rank)];
    for (size_t i = 0; i < ps.size() && i < 3; ++i)
        names += (i ? ", " : "") + m_facts.paramName(ps[i]);
    return fmt::format(
        "rank {}'s weights part from the other ranks' at step {} in {} of {} parameter tensors "
        "({}{}), after starting alike (step {}'s weight row agrees on every rank)",
        rank, since[size_t(rank)], differ[size_t(rank)], m_facts.P, names,
        differ[size_t(rank)] > 3 ? ", ..." : "", firstStep);
}

std::string WeightParting::figures() const {
    std::vector<int64_t> s; // -1: never
    for (int64_t x : since)
        s.push_back(x == kNoStep ? -1 : x);
    return fmt::format("first weight row agrees {}; weights part from the majority at steps [{}]",
                       firstSeen ? (firstAgree ? "yes" : "no") : "not seen", figureList(s));
}

} // namespace rs
