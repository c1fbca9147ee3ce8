// What comparing a run with a reference run found (compareRuns, compare/CompareRuns.h), step by step,
// parameter by parameter, rank by rank: what cross-rank checks cannot see (a fault every rank shares, a flip
// the all-reduce averages into every rank, a sum instead of a mean everywhere, a changed learning rate).
// Steps align by step number, parameters by name, ranks one to one when both runs have as many, or every rank
// of one against the single rank of a one-card reference of the same global batch. Each statistic both files
// recorded is compared with the tolerance its arithmetic allows (compare/CompareTolerance.h): none where the
// two runs do the same arithmetic (then fingerprints must match too). docs/comparing.md describes what is
// compared and how the tolerances are derived.
#pragma once

#include "compare/CompareTolerance.h"
#include "store/RunRecords.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rs {

// What the two runs are expected to agree on, from their configurations and layouts.
enum class Expectation {
    Bitwise,  // the same configuration and the same reduction layout: equal bit for bit
    Rounding, // the same computation reduced differently (layout, card count at the same global batch)
    Unknown,  // a source that records no configuration: compared with the rounding tolerances of a ring
    Different // the configurations differ (listed): compared anyway, the differences explain what parts
};
const char* expectationName(Expectation e); // "bitwise", "rounding", "unknown", "different"

// One statistic where the runs part beyond its tolerance.
struct Divergence {
    int64_t step = 0;
    std::string parameter;  // "" for a per-step statistic (loss, lr, loss scale, skipped updates, batch)
    std::vector<int> ranks; // ranks of run A where it parted at this step (empty: not per rank)
    std::string statistic;  // "synced_norm", "synced_fp", "loss", "weight_norm", ... (docs/comparing.md)
    double a = 0, b = 0;    // the values (not for fingerprints)
    bool bits = false;      // a fingerprint: aBits and bBits hold it
    uint64_t aBits = 0, bBits = 0;
    double tolerance = 0; // 0: equality expected
    // How far past its tolerance: |a - b| / tolerance, or +inf where equality was expected.
    double excess() const;
};

// How much wider than the drift a spread reference measured A and the reference may part (SpreadReference).
inline constexpr double kSpreadFactor = 4.0;

struct ParameterComparison {
    std::string name;
    std::optional<Divergence> first; // its first step beyond tolerance, if any
    double worstExcess = 0;          // largest |a - b| / tolerance over the aligned steps (inf: bits differ)
    int64_t worstStep = -1;
};

struct NotCompared {
    std::string statistic;
    std::string reason;
    std::string words; // what the statistic is, for people ("local-gradient fingerprints")
};

// A second reference that differs from the reference only by arithmetic (another layout, another card count
// at the same global batch): how far the reference and it move apart, step by step and parameter by
// parameter, is the drift that arithmetic alone causes, measured rather than bounded (docs/comparing.md,
// "Drift").
struct SpreadReference {
    std::string name;                 // as the caller named it (the path)
    Expectation expectation;          // of the reference against it: rounding or unknown
    std::optional<Divergence> parted; // where the reference and it first parted beyond the bound, if they did
    double worstExcess = 0;           // their largest excess over the bound
    int64_t discreteFrom = -1;        // the first step they disagreed on skipped updates or the loss scale
};

struct RunComparison {
    Expectation expectation = Expectation::Unknown;
    std::vector<std::string> differences; // configuration keys that differ: "seed: 1 vs 2"
    ReductionShape shapeA, shapeB;
    ToleranceModel tolerance;
    std::string rankMapping; // "rank r against rank r", "every rank of A against B's one card"
    int64_t alignedSteps = 0, firstStep = -1, lastStep = -1;
    // The last aligned step up to which every fingerprint both files recorded matched (-1: none), and whether
    // both recorded any fingerprint of the computation at all.
    int64_t bitwiseThrough = -1;
    bool fingerprints = false;
    std::optional<Divergence> first;
    std::vector<Divergence> firstByStatistic; // each statistic's first divergence, in the order they came
    std::vector<ParameterComparison> perParameter; // A's parameters that B has too, in A's order
    std::vector<std::string> compared;             // statistics compared
    std::vector<NotCompared> notCompared;          // statistics one of the files has and why they are not
    std::vector<std::string> parametersOnlyInA, parametersOnlyInB;
    // The drift measured by spread references (empty: the tolerance is the one-step rounding bound). A
    // (step, parameter) where the reference and a spread reference parted by F times their bound allows A
    // and the reference kSpreadFactor x F times theirs.
    std::vector<SpreadReference> spreads;
    bool spreadUsed = false; // false when the runs do the same arithmetic: spreads do not apply
    // The step at which the runs skipped other updates where the spread shows arithmetic alone does so; the
    // steps after it are compared only on samples and learning rate (their map rows are NaN). -1: none.
    int64_t updatesDifferFrom = -1;

    // For the window: per aligned step, the worst excess of each compared parameter (perParameter order);
    // 0 equal, <= 1 within tolerance, +inf where bits differ that should not, NaN where no statistic of the
    // parameter was judged at that step. mapSteps[i] is the step of row i.
    std::vector<int64_t> mapSteps;
    std::vector<float> mapExcess; // mapSteps.size() x perParameter.size()
    // Per aligned step: the loss each run recorded, mean over its ranks, and A's deviation from B. Where the
    // ranks align one to one, rank r against rank r of B (0 on runs equal bit for bit); otherwise (B is one
    // card of the same global batch, or another card count) a rank's loss over its own shard has no
    // counterpart in B, so the one line is A's mean against B's mean.
    std::vector<float> lossA, lossB;
    bool lossDeviationPerRank = false;
    std::vector<float> lossDeviation; // mapSteps.size() x (perRank ? A's world size : 1)

    // The first divergence of one statistic ("lr", "local_fp"), or null.
    const Divergence* firstOf(std::string_view statistic) const;
    // Whether that statistic parted at exactly this step.
    bool partedAt(std::string_view statistic, int64_t step) const;
};

// A statistic of the local gradient (before the all-reduce), or of the synced one (after it): the phase of
// its row in compare/ComparedStatistics.h.
bool isLocalStatistic(std::string_view statistic);
bool isSyncedStatistic(std::string_view statistic);

// How far a value is past its tolerance: 0 equal, <= 1 within, +inf where equality was expected or one side
// is not finite and the other is (or NaN against a number).
double excessOf(double a, double b, double tolerance);

} // namespace rs
