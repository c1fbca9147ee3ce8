// The numbers behind the heatmaps, computed from one step's records (Qt-free, so tests reach them without a
// widget): rank x rank matrices that compare what each pair of ranks did, and a parameter x rank matrix that
// shows which rank and layer is odd. Cells that the run did not record (telemetry off, no weight row yet)
// are NaN.
#pragma once

#include "store/RunRecords.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace rs::view {

// rows x cols, row-major.
struct Matrix {
    int rows = 0, cols = 0;
    std::vector<double> v;
    double at(int r, int c) const { return v[size_t(r) * size_t(cols) + size_t(c)]; }
    double& at(int r, int c) { return v[size_t(r) * size_t(cols) + size_t(c)]; }
};

enum class RankMetric {
    // (a) synced gradient after the all-reduce, which every rank must hold bitwise alike.
    // A fingerprint of 0 is the run file's fill value for "not recorded": such parameters are skipped, and a
    // cell with no parameter recorded on both ranks is NaN.
    SyncedMismatch, // number of parameters (0 or 1 for one parameter) whose synced fingerprints differ
    // In [0, 1]; 0 when both are 0 (or equal infinities), 1 when exactly one is non-finite (a NaN synced
    // gradient on one rank is a divergence), parameters NaN on both ranks skipped.
    SyncedNormDiff, // max over the parameters of |synced norm_i - synced norm_j| / max(norm_i, norm_j)
    // (b) local gradient before the all-reduce: cosine similarity of the random-projection sketches; for all
    // parameters the sketches are concatenated (an estimate of the whole gradient's cosine). 1 on the
    // diagonal; NaN for a rank whose selected sketch has a non-finite value or zero norm (diagonal included).
    SketchCosine,
    // (c) weights (trainable parameters; BatchNorm buffers excluded): number of parameters whose fingerprints
    // differ, from the weight row given.
    WeightMismatch,
    // (d) data shards: the fraction of rank i's (valid, != -1) sample ids of this step that rank j also saw.
    // Distinct ids; NaN when either rank has none; independent of the parameter.
    ShardOverlap,
};

const char* rankMetricName(RankMetric m); // short human name, e.g. "synced gradient mismatch"

// R x R with R = meta.worldSize. param = -1: all parameters; otherwise one parameter index (out of range: all
// NaN). step must hold per-parameter vectors (RunReader::readSteps(..., perParam = true)); weights may be
// null (WeightMismatch is then all NaN). A rank missing from step, or whose vector has the wrong size, gets
// NaN in its row and column (diagonal included).
Matrix rankMatrix(RankMetric metric, const RunMeta& meta, const StepRecord& step, const WeightRecord* weights,
                  int param = -1);

// P x R: each rank's local gradient norm of each parameter divided by the median over the ranks of that
// parameter (1.0 = typical; NaN where the median is 0 or not recorded). The median is over the ranks with a
// finite norm (mean of the two middle values for an even count); a non-finite norm stays NaN or inf.
Matrix paramRankNormRatio(const RunMeta& meta, const StepRecord& step);

// The smallest and largest finite value (NaN, NaN when there is none).
std::pair<double, double> finiteRange(const Matrix& m);

} // namespace rs::view
