// columnWords: see ColumnWords.h. One row per column that may be absent; tst_runfile checks that every such
// column of the schema has a row, so a new column cannot reach a user's screen as a path.
#include "store/ColumnWords.h"

#include <algorithm>
#include <array>
#include <utility>

namespace rs {
namespace {

constexpr std::array<std::pair<std::string_view, std::string_view>, 38> kWords{{
    {"/steps/epoch", "epochs"},
    {"/steps/lr", "learning rate"},
    {"/steps/loss", "loss"},
    {"/steps/accuracy", "batch accuracy"},
    {"/steps/loss_scale", "loss scale"},
    {"/steps/step_ms", "step time"},
    {"/steps/compute_ms", "compute time"},
    {"/steps/comm_ms", "communication time"},
    {"/steps/overflow", "overflow flags"},
    {"/steps/skipped", "skipped-update flags"},
    {"/steps/state", "card states"},
    {"/steps/sample_fp", "sample fingerprints"},
    {"/steps/sample_ids", "sample ids"},
    {"/steps/buffer_fp", "BatchNorm buffer fingerprints per step"},
    {"/steps/cpu_wait_ms", "time waiting for a CPU core"},
    {"/steps/optimizer_lr", "each rank's applied learning rate"},
    {"/steps/end_ns", "step end times"},
    {"/grads/local_norm", "local-gradient norms"},
    {"/grads/local_max", "local-gradient largest values"},
    {"/grads/local_sum", "local-gradient sums"},
    {"/grads/nonfinite", "non-finite gradient counts"},
    {"/grads/overflow_count", "fp16 overflow counts"},
    {"/grads/underflow_count", "fp16 underflow counts"},
    {"/grads/sketch", "gradient sketches (rank-against-rank cosine)"},
    {"/grads/local_fp", "local-gradient fingerprints"},
    {"/grads/synced_norm", "synced-gradient norms"},
    {"/grads/synced_sum", "synced-gradient sums"},
    {"/grads/synced_fp", "synced-gradient fingerprints"},
    {"/weights/fp", "weight fingerprints"},
    {"/weights/norm", "weight norms"},
    {"/weights/buffer_fp", "BatchNorm buffer fingerprints"},
    {"/weights/buffer_drift", "BatchNorm buffer drift"},
    {"model", "model name"},
    {"batch_per_rank", "batch size"},
    {"precision", "precision (amp level)"},
    {"loss_scale", "loss-scale setting"},
    {"data", "data set"},
    {"seed", "random seed"},
}};

} // namespace

std::string columnWords(std::string_view path) {
    for (const auto& [p, words] : kWords)
        if (p == path)
            return std::string(words);
    return std::string(path);
}

std::string columnWordsList(const std::vector<std::string>& paths) {
    std::vector<std::string> words;
    for (const std::string& p : paths) {
        std::string w = columnWords(p);
        if (std::find(words.begin(), words.end(), w) == words.end())
            words.push_back(std::move(w));
    }
    std::string out;
    for (size_t i = 0; i < words.size(); ++i)
        out += (i == 0 ? "" : i + 1 == words.size() ? " and " : ", ") + words[i];
    return out;
}

} // namespace rs
