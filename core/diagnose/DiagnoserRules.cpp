// The diagnosis rules: each reads the bounded summaries of a Diagnoser (DiagnoserState.h) and, when several
// signals agree, concludes one cause with its evidence and the fix. Thresholds sit in diag:: and are chosen
// so a healthy run (dynamic loss scaling's warm-up overflows, different batches per rank, BatchNorm drift
// every rank shares, a noisy 2-core machine) stays clear of every rule.
#include "diagnose/DiagnoserState.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

namespace rs {
namespace {

using Findings = std::vector<Finding>;

std::string joinRanks(const std::vector<int>& ranks) {
    std::string out;
    for (size_t i = 0; i < ranks.size(); ++i)
        out += (i ? ", " : "") + std::to_string(ranks[i]);
    return out;
}

int64_t stepOr(int64_t step) {
    return step == kNoStep ? -1 : step;
}

Finding make(const char* cause, const char* dimension, double confidence, int64_t firstStep,
             std::vector<int> ranks, std::string evidence, std::string fix) {
    Finding f;
    f.cause = cause;
    f.dimension = dimension;
    f.confidence = std::clamp(confidence, 0.0, 1.0);
    f.firstStep = stepOr(firstStep);
    f.ranks = std::move(ranks);
    f.evidence = std::move(evidence);
    f.fix = std::move(fix);
    return f;
}

// Duplicate rank_id or device_id entries in the stored hccl.json.
std::vector<int> duplicateRankIds(const std::string& rankTableJson) {
    std::vector<int> dup;
    try {
        const auto j = nlohmann::json::parse(rankTableJson);
        std::set<std::string> seen;
        for (const auto& server : j.value("server_list", nlohmann::json::array()))
            for (const auto& dev : server.value("device", nlohmann::json::array())) {
                const std::string id = dev.value("rank_id", std::string());
                if (!id.empty() && !seen.insert(id).second)
                    dup.push_back(std::atoi(id.c_str()));
            }
    } catch (const std::exception&) {
        // A table diagnosis cannot parse is the pre-flight check's business, not this rule's.
    }
    return dup;
}

// --- environment -------------------------------------------------------------------------------------------

void rankTableInvalid(const Diagnoser::State& s, Findings& out) {
    for (const auto& e : s.events)
        if (e.code == eventcode::kRankTable && s.steps == 0) {
            out.push_back(make("rank-table-invalid", "environment", 0.95, -1,
                               e.rank >= 0 ? std::vector<int>{e.rank} : std::vector<int>{},
                               fmt::format("the run stopped before step 0 with no step recorded; pre-flight "
                                           "check: {}",
                                           e.message),
                               "Fix the rank table (hccl.json) as the message says: one entry per device, "
                               "rank_id 0..N-1 and device_id unique per server, server_count and the device "
                               "list matching the job; `ranksight-cli lint-ranktable hccl.json` lists every "
                               "problem. MindSpore: RANK_TABLE_FILE, RANK_ID, DEVICE_ID, RANK_SIZE."));
            return;
        }
}

// Timeouts that name a rank, a dead card, steps missing at the end: one card left the job. An epoch boundary
// with no dead card instead says the rank ran out of data (shard-uneven).
void rankGone(const Diagnoser::State& s, Findings& out) {
    const int R = s.R;
    std::vector<int64_t> gone(size_t(std::max(R, 0)), kNoStep), timeoutAt(size_t(std::max(R, 0)), kNoStep);
    std::vector<int> failedEvents(size_t(std::max(R, 0)), 0), named(size_t(std::max(R, 0)), 0);
    // A multi-node run's timeout names the ranks of a node process that is gone (killed, its host lost):
    // they left the job like a failed card, whatever their node could no longer record.
    std::vector<int> nodeGone(size_t(std::max(R, 0)), 0);
    std::vector<std::string> firstMessage(size_t(std::max(R, 0)));
    // A rank whose own node reported it waiting (its TIMEOUT reached node 0's file) was alive: its node
    // ended because its cards did, and node 0's "is gone" says nothing more about it.
    std::vector<int> waited(size_t(std::max(R, 0)), 0);
    for (const auto& e : s.events)
        if (e.code == eventcode::kTimeout && e.rank >= 0 && e.rank < R)
            waited[size_t(e.rank)] = 1;
    for (const auto& e : s.events) {
        if (e.code == eventcode::kCardFailed && e.rank >= 0 && e.rank < R) {
            ++failedEvents[size_t(e.rank)];
            gone[size_t(e.rank)] = std::min(gone[size_t(e.rank)], e.step);
            if (firstMessage[size_t(e.rank)].empty())
                firstMessage[size_t(e.rank)] = e.message;
        }
        if (e.code == eventcode::kTimeout)
            for (int r : e.named)
                if (r >= 0 && r < R && r != e.rank) {
                    if (waited[size_t(r)] && e.message.find(" is gone (") != std::string::npos)
                        continue;
                    ++named[size_t(r)];
                    nodeGone[size_t(r)] += e.message.find(" is gone (") != std::string::npos;
                    timeoutAt[size_t(r)] = std::min(timeoutAt[size_t(r)], e.step);
                    if (firstMessage[size_t(r)].empty())
                        firstMessage[size_t(r)] = e.message;
                }
    }
    for (int r = 0; r < R; ++r) {
        const bool dead =
            s.deadStep[size_t(r)] != kNoStep || failedEvents[size_t(r)] > 0 || nodeGone[size_t(r)] > 0;
        if (!dead && named[size_t(r)] == 0)
            continue;
        const int64_t at = std::min({gone[size_t(r)], timeoutAt[size_t(r)], s.deadStep[size_t(r)]});
        const bool missing = s.lastStep + 1 < s.meta.plannedSteps;
        const bool epochEdge =
            std::find(s.epochStarts.begin(), s.epochStarts.end(), at) != s.epochStarts.end() ||
            (!s.epochStarts.empty() && s.epochStarts.front() > 0 && at % s.epochStarts.front() == 0) ||
            (s.lastStep >= 0 && at == s.lastStep + 1 && s.paddedSteps[size_t(r)] > 0);
        std::string evidence = fmt::format(
            "{}{} peer timeout(s) name rank {} from step {}; steps recorded {}..{} of {} planned{}",
            s.deadStep[size_t(r)] != kNoStep || failedEvents[size_t(r)] > 0
                ? fmt::format("rank {} is dead (card failure recorded); ", r)
            : nodeGone[size_t(r)] > 0 ? fmt::format("rank {}'s node process is gone; ", r)
                                      : "",
            named[size_t(r)], r, stepOr(at), stepOr(s.firstStep), s.lastStep, s.meta.plannedSteps,
            firstMessage[size_t(r)].empty() ? "" : fmt::format("; \"{}\"", firstMessage[size_t(r)]));
        // A rank that stopped answering without failing finished its own loop: its loader ran out first.
        if (!dead) {
            out.push_back(
                make("shard-uneven", "data-model", epochEdge ? 0.85 : 0.75, at, {r},
                     evidence + fmt::format("; rank {} recorded no failure{}: it ended its epoch "
                                            "early, its shard ran out of batches first",
                                            r,
                                            epochEdge ? " and the timeout falls on an epoch boundary "
                                                        "or after a short batch"
                                                      : ""),
                     "Give every rank the same number of batches per epoch: shard with "
                     "DistributedSampler(drop_last=True) / MindSpore num_shards + shard_id with "
                     "batch(drop_remainder=True), and check the per-rank data files have equal "
                     "sizes."));
            continue;
        }
        const double conf = 0.85 + (missing ? 0.05 : 0);
        out.push_back(make("rank-exit", "environment", conf, at, {r}, evidence,
                           fmt::format("Card {} left the job at step {}: read rank {}'s own log (the first "
                                       "error, not the peers' HCCL timeouts), its HBM usage (out of memory?) "
                                       "and the device health (npu-smi info); the other ranks' timeouts are "
                                       "the consequence.",
                                       r, stepOr(at), r)));
    }
}

// --- data-model -------------------------------------------------------------------------------------------

void initMismatch(const Diagnoser::State& s, Findings& out) {
    if (!s.initChecked || s.P == 0)
        return;
    std::vector<int> ranks;
    int worst = 0;
    for (int r = 1; r < s.R; ++r)
        if (s.initDiffer[size_t(r)] > 0) {
            ranks.push_back(r);
            worst = std::max(worst, s.initDiffer[size_t(r)]);
        }
    // A seed or broadcast problem changes (nearly) every tensor, not one.
    if (ranks.empty() || worst < std::max(1, s.P / 2))
        return;
    ranks.insert(ranks.begin(), 0);
    out.push_back(
        make("init-mismatch", "data-model", 0.9, std::max<int64_t>(0, s.initStep), ranks,
             fmt::format("weights differ across ranks at step {} already, before any update: up to {} "
                         "of {} parameter tensors differ from rank 0's (ranks {})",
                         std::max<int64_t>(0, s.initStep), worst, s.P, joinRanks(ranks)) +
                 (s.keys.weightFp
                      ? std::string()
                      : fmt::format("; the source ({}) records no fingerprints, so ranks were compared "
                                    "on their weight norms as recorded (equal to the file's rounding)",
                                    s.meta.source)),
             "Start every replica from the same weights: set the same seed on every rank "
             "(mindspore.set_seed / torch.manual_seed) and broadcast rank 0's parameters "
             "(set_auto_parallel_context(parameter_broadcast=True); PyTorch DDP broadcasts at "
             "construction, so build the model before wrapping it)."));
}

// Identical batches: every pair (a non-distributed sampler) or one neighbour pair (a duplicate rank id).
void sharedSamples(const Diagnoser::State& s, Findings& out) {
    if (s.sampleSteps < 3 || s.R < 2)
        return;
    const int64_t n = s.sampleSteps;
    std::vector<std::pair<int, int>> identPairs, overlapPairs;
    for (int i = 0; i < s.R; ++i)
        for (int j = i + 1; j < s.R; ++j) {
            const int k = s.pair(i, j);
            if (s.identical[size_t(k)] * 10 >= n * 8)
                identPairs.emplace_back(i, j);
            else if (s.overlapping[size_t(k)] * 2 >= n)
                overlapPairs.emplace_back(i, j);
        }
    if (identPairs.empty() && overlapPairs.empty())
        return;
    const auto dupIds = duplicateRankIds(s.meta.rankTableJson);
    const int totalPairs = s.R * (s.R - 1) / 2;
    // One rank copying another: a single identical pair while the rest read disjoint shards.
    const bool onePair = identPairs.size() == 1 && overlapPairs.empty() && (s.R > 2 || !dupIds.empty());
    if (onePair) {
        const auto [a, b] = identPairs.front();
        const int k = s.pair(a, b);
        const double cos = s.identCosMin[size_t(k)];
        const bool sameGrad = cos <= 1.0 && cos > 0.999999;
        out.push_back(make(
            "duplicate-rank-id", "environment", 0.8 + (sameGrad ? 0.1 : 0) + (dupIds.empty() ? 0 : 0.05),
            s.firstIdentical[size_t(k)], {a, b},
            fmt::format(
                "ranks {} and {} read identical batches (sample fingerprints and ids equal) on {} of {} "
                "steps while the other ranks read disjoint shards{}{}: rank {} behaves as a second "
                "rank {}",
                a, b, s.identical[size_t(k)], n,
                cos <= 1.0 ? fmt::format("; local-gradient sketch cosine {:.7f}", cos) : "",
                dupIds.empty() ? "" : fmt::format("; the rank table lists rank_id {} twice", dupIds[0]), b,
                a),
            "Fix the rank table / launch environment: every process needs a unique RANK_ID (rank_id) and "
            "DEVICE_ID (MindSpore RANK_TABLE_FILE + RANK_ID per process; PyTorch unique RANK / LOCAL_RANK), "
            "so the sampler hands each rank its own shard."));
        return;
    }
    std::set<int> ranks;
    int64_t first = kNoStep, ident = 0;
    double overlap = 0;
    for (const auto& [i, j] : identPairs) {
        ranks.insert({i, j});
        first = std::min(first, s.firstIdentical[size_t(s.pair(i, j))]);
        ident += s.identical[size_t(s.pair(i, j))];
    }
    for (const auto& [i, j] : overlapPairs) {
        ranks.insert({i, j});
        overlap = std::max(overlap, s.overlapSum[size_t(s.pair(i, j))] / double(n));
    }
    if (first == kNoStep)
        first = s.firstStep;
    const double conf = identPairs.size() == size_t(totalPairs) ? 0.9 : (identPairs.empty() ? 0.7 : 0.8);
    // Without sample ids the batches are compared through the local gradients they produced: identical on
    // every parameter means the same samples went through the same weights.
    const bool byGradients = s.gradientKeySteps > 0;
    out.push_back(
        make("shard-overlap", "data-model", conf, first, {ranks.begin(), ranks.end()},
             fmt::format(
                 "{} of {} rank pairs read identical batches ({}){}; with a distributed sampler {}",
                 identPairs.size(), totalPairs,
                 byGradients ? fmt::format("the source ({}) records no sample ids: their local gradients are "
                                           "identical on every parameter",
                                           s.meta.source)
                             : "equal sample fingerprints",
                 overlapPairs.empty()
                     ? fmt::format(" on {:.0f}% of steps",
                                   100.0 * double(ident) / double(std::max<size_t>(1, identPairs.size()) * n))
                     : fmt::format(", {} more pairs share up to {:.0f}% of their sample ids",
                                   overlapPairs.size(), 100 * overlap),
                 byGradients ? "every rank's batch, and so its local gradient, differs"
                             : "every rank's ids are disjoint"),
             "Shard the data set across ranks: PyTorch DistributedSampler(dataset, num_replicas=world_size, "
             "rank=rank) with sampler.set_epoch(epoch); MindSpore dataset(..., num_shards=rank_size, "
             "shard_id=rank_id)."));
    if (identPairs.size() == 1 && s.R == 2 && overlapPairs.empty())
        out.back().evidence += "; with 2 ranks this is also what a duplicate rank id looks like";
}

// One rank's BatchNorm statistics stop moving (eval mode); its local gradients being systematically off
// corroborates. Per step where the file records them (/steps/buffer_fp), else over the weight rows.
void evalMode(const Diagnoser::State& s, Findings& out) {
    if (s.R < 2)
        return;
    const int64_t n = s.biasSteps;
    auto bias = [&](int r) {
        const double meanLog = n ? s.biasLogSum[size_t(r)] / double(n) : 0;
        const int64_t consistent = std::max(s.biasHigh[size_t(r)], s.biasLow[size_t(r)]);
        const bool biased = n >= 20 && std::fabs(meanLog) > diag::kBiasLog && consistent * 10 >= n * 7;
        return std::tuple{biased, n ? fmt::format("; its local gradient norm is {:.2f}x the ranks' median on "
                                                  "average, off by more than 1.3x on {} of {} steps",
                                                  std::exp(meanLog), consistent, n)
                                    : std::string()};
    };
    const std::string fix =
        "Put every replica in training mode before the training loop: network.set_train(True) "
        "(PyTorch model.train()) on rank {} too; an eval() left from a validation pass turns "
        "Dropout off and freezes BatchNorm on that rank only.";
    if (s.haveStepBuffers) { // statistics recorded every step: dated to the step
        for (int r = 0; r < s.R; ++r) {
            if (s.frozenSince[size_t(r)] == kNoStep)
                continue;
            const auto [biased, corroboration] = bias(r);
            out.push_back(
                make("eval-mode", "data-model", biased ? 0.9 : 0.85, s.frozenSince[size_t(r)], {r},
                     fmt::format("rank {}'s BatchNorm running statistics stopped changing at step {} "
                                 "({} steps in a row unchanged) while every other rank's changed on "
                                 "each of those steps{}",
                                 r, s.frozenSince[size_t(r)], s.frozenLongest[size_t(r)], corroboration),
                     fmt::format(fmt::runtime(fix), r)));
        }
        return;
    }
    const int64_t later = *std::max_element(s.bufferChanged.begin(), s.bufferChanged.end());
    const bool haveBuffers = !s.meta.bufferNames.empty() && later >= 1;
    for (int r = 0; r < s.R; ++r) {
        const bool frozen = haveBuffers && s.bufferChanged[size_t(r)] == 0;
        bool othersMove = haveBuffers;
        for (int q = 0; q < s.R && haveBuffers; ++q)
            if (q != r)
                othersMove = othersMove && s.bufferChanged[size_t(q)] >= 1;
        // Frozen statistics are the signal that only eval mode gives; the gradient bias corroborates (on its
        // own it is too close to what different batches do). Eval mode set mid-run shows as statistics that
        // stopped moving for the last two or more weight rows while every other rank's kept moving.
        bool frozenLater = false;
        if (!frozen && haveBuffers && s.bufferStill[size_t(r)] >= 2) {
            frozenLater = true;
            for (int q = 0; q < s.R; ++q)
                if (q != r)
                    frozenLater = frozenLater && s.bufferStill[size_t(q)] == 0;
        }
        if (!((frozen && othersMove) || frozenLater))
            continue;
        const auto [biased, corroboration] = bias(r);
        const int64_t since = frozen ? s.firstStep : s.bufferStillSince[size_t(r)];
        out.push_back(make(
            "eval-mode", "data-model", biased ? 0.85 : 0.75, since, {r},
            fmt::format("rank {}'s BatchNorm running statistics {} while every other rank's kept changing{}",
                        r,
                        frozen ? fmt::format("never changed over {} weight rows", later)
                               : fmt::format("stopped changing at step {} ({} weight rows unchanged since)",
                                             since, s.bufferStill[size_t(r)]),
                        corroboration),
            fmt::format(fmt::runtime(fix), r)));
    }
}

} // namespace

void numericsRules(const Diagnoser::State& s, Findings& out);
void parallelRules(const Diagnoser::State& s, Findings& out);

std::vector<Finding> runRules(const Diagnoser::State& s) {
    Findings out;
    rankTableInvalid(s, out);
    rankGone(s, out);
    initMismatch(s, out);
    sharedSamples(s, out);
    evalMode(s, out);
    numericsRules(s, out);
    parallelRules(s, out);
    // A corrupted gradient (SDC) blows the loss up on its rank the step after, which is also the weak sign of
    // overflow-not-synced (an update applied without an overflow flag, then a non-finite loss): the weak sign
    // is explained by the located corruption and is not a second cause.
    int64_t sdcStep = -1;
    for (const Finding& f : out)
        if ((f.cause == "sdc-after" || f.cause == "sdc-before") && f.firstStep >= 0)
            sdcStep = sdcStep < 0 ? f.firstStep : std::min(sdcStep, f.firstStep);
    if (sdcStep >= 0)
        std::erase_if(out, [&](const Finding& f) {
            return f.cause == "overflow-not-synced" && f.confidence < 0.7 && f.firstStep >= sdcStep;
        });
    // Ranks whose loss scales differ apply different gradients from the same all-reduced bytes: their synced
    // fingerprints differ from the split on, which is the scale's doing, not a corrupted copy.
    const auto split = std::find_if(out.begin(), out.end(),
                                    [](const Finding& f) { return f.cause == "loss-scale-not-restored"; });
    if (split != out.end())
        std::erase_if(out, [step = split->firstStep](const Finding& f) {
            return f.cause == "sdc-after" && f.firstStep >= step;
        });
    std::stable_sort(out.begin(), out.end(),
                     [](const Finding& a, const Finding& b) { return a.confidence > b.confidence; });
    return out;
}

} // namespace rs
