// Diagnoser: feeds every record to the tallies and then to the checks the cause table makes, keeps the run's
// extent, and gathers findings, figures and the checks that could not run; diagnoseMore() and diagnoseRun()
// read a file in chunks.
#include "diagnose/Diagnoser.h"

#include "diagnose/Check.h"
#include "diagnose/CheckNeeds.h"
#include "diagnose/checks/Checks.h"
#include "store/RunReader.h"

#include <algorithm>
#include <fmt/format.h>

namespace rs {
namespace {

bool hasParamVectors(const RankStep& x, int P) {
    const auto p = size_t(P);
    return P > 0 && x.localNorm.size() == p && x.localMax.size() == p && x.localSum.size() == p &&
           x.syncedSum.size() == p && x.syncedFp.size() == p && x.underflowCount.size() == p;
}

// A finding whose weak sign another cause's finding, starting at or before it, explains
// (CauseInfo::explainedBy).
bool explained(const Finding& f, const std::vector<Finding>& all) {
    const CauseInfo& info = f.info();
    if (f.confidence >= info.explainedBelow)
        return false;
    for (const Finding& g : all)
        for (const auto& by : info.explainedBy)
            if (by && g.cause == *by && g.firstStep >= 0 && f.firstStep >= g.firstStep)
                return true;
    return false;
}

} // namespace

struct Diagnoser::Impl {
    explicit Impl(const RunMeta& meta)
        : facts(meta)
        , tallies(facts) {
        CheckContext context{facts, tallies};
        for (const CauseInfo& c : causes())
            checks.emplace_back(c.id, checks::makeCheck(c.id, context));
    }

    // Tallies first: the checks read them when they conclude.
    template <class F> void each(F&& f) {
        for (const auto& t : tallies.all())
            f(*t);
        for (const auto& [cause, check] : checks)
            f(*check);
    }

    RunFacts facts;
    Tallies tallies;
    std::vector<std::pair<Cause, std::unique_ptr<Check>>> checks; // in cause-table order
    RunExtent run;
    bool reference = false; // addReference was called
};

Diagnoser::Diagnoser(const RunMeta& meta)
    : m_d(std::make_unique<Impl>(meta)) {}

Diagnoser::~Diagnoser() = default;

int64_t Diagnoser::stepsSeen() const {
    return m_d->run.steps;
}

void Diagnoser::addSteps(const std::vector<StepRecord>& steps) {
    Impl& d = *m_d;
    const int R = d.facts.R;
    for (const auto& st : steps) {
        if (R <= 0 || int(st.ranks.size()) != R)
            continue; // a step that does not match the meta says nothing reliable
        const RunExtent before = d.run;
        d.each([&](Accumulator& a) { a.addStep(st, before); });
        ++d.run.steps;
        d.run.firstStep = std::min(d.run.firstStep, st.step);
        d.run.lastStep = std::max(d.run.lastStep, st.step);
        if (!std::all_of(st.ranks.begin(), st.ranks.end(),
                         [&](const RankStep& x) { return hasParamVectors(x, d.facts.P); }))
            continue;
        ++d.run.paramSteps;
        d.each([&](Accumulator& a) { a.addParamStep(st); });
    }
}

void Diagnoser::addWeights(const std::vector<WeightRecord>& weights) {
    Impl& d = *m_d;
    for (const auto& w : weights) {
        if (int(w.fp.size()) != d.facts.R || d.facts.R <= 0)
            continue;
        ++d.run.weightRows;
        d.each([&](Accumulator& a) { a.addWeights(w); });
    }
}

void Diagnoser::addEvents(const std::vector<Event>& events) {
    for (const auto& e : events)
        m_d->each([&](Accumulator& a) { a.addEvent(e); });
}

void Diagnoser::addCollectives(const std::vector<Collective>& collectives) {
    for (const auto& c : collectives)
        m_d->each([&](Accumulator& a) { a.addCollective(c); });
}

std::vector<Finding> Diagnoser::findings() const {
    std::vector<Finding> out;
    for (const auto& [cause, check] : m_d->checks)
        check->conclude(m_d->run, out);
    // In table order, so a finding another explains is judged against the findings still standing.
    for (const CauseInfo& c : causes())
        std::erase_if(out, [&](const Finding& f) { return f.cause == c.id && explained(f, out); });
    std::stable_sort(out.begin(), out.end(),
                     [](const Finding& a, const Finding& b) { return a.confidence > b.confidence; });
    return out;
}

std::string Diagnoser::figures() const {
    const RunExtent& run = m_d->run;
    std::string out = fmt::format("steps {} (per-parameter {}), weight rows {}\n", run.steps, run.paramSteps,
                                  run.weightRows);
    m_d->each([&](Accumulator& a) {
        if (const std::string f = a.figures(); !f.empty())
            out += f + "\n";
    });
    return out;
}

void Diagnoser::addReference(const RunComparison& comparison) {
    m_d->reference = true;
    m_d->each([&](Accumulator& a) { a.addReference(comparison); });
}

std::vector<CheckNotRun> Diagnoser::checksNotRun() const {
    std::vector<std::pair<Cause, const Check*>> checks;
    for (const auto& [cause, check] : m_d->checks)
        if (m_d->reference || !check->needsReference())
            checks.emplace_back(cause, check.get());
    return needs::notRun(m_d->facts, m_d->run, checks);
}

void diagnoseMore(const RunReader& reader, Diagnoser& d, DiagnosisCursor& at,
                  const std::function<void(int)>& progress) {
    constexpr int64_t kChunk = 256;
    // Weight rows hold R x P fingerprints each: chunked like the steps, so a long run never sits in memory.
    for (const int64_t rows = reader.weightCount(); at.weights < rows;) {
        const int64_t end = std::min(rows, at.weights + kChunk);
        d.addWeights(reader.readWeights(at.weights, end));
        at.weights = end;
    }
    for (const int64_t rows = reader.eventCount(); at.events < rows;) {
        const int64_t end = std::min(rows, at.events + 4 * kChunk);
        d.addEvents(reader.readEvents(at.events, end));
        at.events = end;
    }
    for (const int64_t rows = reader.collectiveCount(); at.collectives < rows;) {
        const int64_t end = std::min(rows, at.collectives + 16 * kChunk);
        d.addCollectives(reader.readCollectives(at.collectives, end));
        at.collectives = end;
    }
    const int64_t first = at.steps, steps = reader.stepCount();
    const int64_t stepChunk = stepsPerRead(reader.meta(), kChunk);
    while (at.steps < steps) {
        const int64_t end = std::min(steps, at.steps + stepChunk);
        d.addSteps(reader.readSteps(at.steps, end, true));
        at.steps = end;
        if (progress)
            progress(int(std::min<int64_t>(99, (end - first) * 100 / std::max<int64_t>(1, steps - first))));
    }
    if (progress)
        progress(100);
}

std::vector<Finding> diagnoseRun(const RunReader& reader, const std::function<void(int)>& progress,
                                 std::string* figures, std::vector<CheckNotRun>* notRun,
                                 const RunComparison* reference) {
    Diagnoser d(reader.meta());
    DiagnosisCursor at;
    diagnoseMore(reader, d, at, progress);
    if (reference)
        d.addReference(*reference);
    if (figures)
        *figures = d.figures();
    if (notRun)
        *notRun = d.checksNotRun();
    return d.findings();
}

std::string findingLine(const Finding& f) {
    return fmt::format("{} ({}, confidence {:.2f}): {}", f.key(), f.dimension(), f.confidence, f.evidence);
}

std::string findingText(const Finding& f) {
    std::string ranks, params;
    for (size_t i = 0; i < f.ranks.size(); ++i)
        ranks += (i ? ", " : "") + std::to_string(f.ranks[i]);
    for (size_t i = 0; i < f.parameters.size(); ++i)
        params += (i ? ", " : "") + f.parameters[i];
    std::string out = fmt::format("{}  [{}]  confidence {:.2f}\n", f.key(), f.dimension(), f.confidence);
    if (f.firstStep >= 0)
        out += fmt::format("  first step: {}\n", f.firstStep);
    if (!ranks.empty())
        out += fmt::format("  ranks: {}\n", ranks);
    if (!params.empty())
        out += fmt::format("  parameters: {}\n", params);
    out += fmt::format("  evidence: {}\n  fix: {}\n", f.evidence, f.fix);
    return out;
}

} // namespace rs
