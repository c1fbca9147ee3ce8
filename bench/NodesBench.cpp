#include "NodesBench.h"

#include "StepClock.h"
#include "cluster/NodeGroup.h"
#include "train/Replica.h"
#include "train/Trainer.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <spawn.h>
#include <stdexcept>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char** environ;

namespace rs {
namespace {

struct Spawned {
    pid_t pid = -1;
    std::string errFile;
};

Spawned spawnNode(const std::string& cli, const TrainConfig& cfg, int nodeRank, const std::string& errFile) {
    std::vector<std::string> args = {cli,
                                     "train",
                                     "--model",
                                     modelKindName(cfg.model),
                                     "--ranks",
                                     std::to_string(cfg.ranks),
                                     "--batch",
                                     std::to_string(cfg.batchPerRank),
                                     "--steps",
                                     std::to_string(cfg.steps),
                                     "--precision",
                                     precisionName(cfg.precision),
                                     "--loss-scale",
                                     lossScaleName(cfg.lossScale),
                                     "--set",
                                     "eval_samples=0",
                                     "--set",
                                     fmt::format("compute_threads={}", cfg.computeThreads),
                                     "--nodes",
                                     std::to_string(cfg.nodes),
                                     "--node-rank",
                                     std::to_string(nodeRank),
                                     "--master",
                                     cfg.master,
                                     "--quiet"};
    std::vector<char*> argv;
    for (auto& a : args)
        argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, errFile.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    Spawned s;
    s.errFile = errFile;
    const int rc = posix_spawn(&s.pid, cli.c_str(), &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0)
        throw std::runtime_error(fmt::format("cannot start {}: {}", cli, std::strerror(rc)));
    return s;
}

std::string finish(const Spawned& s) {
    int status = 0;
    waitpid(s.pid, &status, 0);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return "";
    std::ifstream in(s.errFile);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return text.empty() ? "exited abnormally" : text.substr(0, 400);
}

} // namespace

int64_t modelParams(const std::string& model) {
    ReplicaOptions opt;
    opt.model = *parseModelKind(model);
    return Replica(opt).numParams();
}

NodesBenchResult runNodesBench(const BenchOptions& o, int nodes, const std::string& cli, bool progress) {
    if (!parseModelKind(o.model))
        throw std::invalid_argument(fmt::format("unknown model '{}'", o.model));
    if (!parsePrecision(o.precision))
        throw std::invalid_argument(fmt::format("unknown precision '{}'", o.precision));
    if (nodes < 2 || o.ranks % nodes != 0)
        throw std::invalid_argument(
            fmt::format("--nodes {}: {} ranks must split evenly over 2 or more nodes", nodes, o.ranks));
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const auto dir = std::filesystem::temp_directory_path();
    const std::string out = (dir / fmt::format("ranksight-bench-nodes-{}.h5", getpid())).string();
    NodesBenchResult r;
    r.params = modelParams(o.model);
    r.payloadBytes = o.precision == "O0" ? 4 : 2;
    std::vector<double> one, spread;
    for (int round = 0; round < std::max(1, o.repeat); ++round) {
        if (progress)
            std::fprintf(stderr, "bench-nodes: round %d/%d: 1 node x %d cards (%s, batch %d, %d steps)...\n",
                         round + 1, o.repeat, o.ranks, o.model.c_str(), o.batchPerRank, o.steps);
        {
            TrainConfig cfg = benchConfig(o, out);
            cfg.computeThreads = cores;
            StepClock clock(o.warmup);
            Trainer t(cfg);
            t.setObserver(&clock);
            t.run();
            one.push_back(clock.imagesPerSecond(o.ranks * o.batchPerRank));
        }
        if (progress)
            std::fprintf(stderr, "bench-nodes: round %d/%d: %d nodes x %d cards...\n", round + 1, o.repeat,
                         nodes, o.ranks / nodes);
        TrainConfig cfg = benchConfig(o, out);
        cfg.nodes = nodes;
        cfg.computeThreads = std::max(1, cores / nodes);
        cfg.master = fmt::format("127.0.0.1:{}", freeLoopbackPort());
        std::vector<Spawned> children;
        for (int k = 1; k < nodes; ++k)
            children.push_back(spawnNode(
                cli, cfg, k, (dir / fmt::format("ranksight-bench-node{}-{}.err", k, getpid())).string()));
        StepClock clock(o.warmup);
        RunSummary s;
        {
            Trainer t(cfg);
            t.setObserver(&clock);
            s = t.run();
        }
        std::string failure;
        for (const Spawned& c : children) {
            const std::string why = finish(c);
            std::filesystem::remove(c.errFile);
            if (!why.empty() && failure.empty())
                failure = why;
        }
        if (!s.completed || !failure.empty())
            throw std::runtime_error(fmt::format("the {}-node run failed: {}{}", nodes, s.stopReason,
                                                 failure.empty() ? "" : "; " + failure));
        spread.push_back(clock.imagesPerSecond(o.ranks * o.batchPerRank));
        const double steps = double(std::max<int64_t>(1, s.stepsCompleted));
        r.bytesPerStep = double(s.nodeBytesSent) / steps;
        r.recordBytesPerStep = double(s.nodeRecordBytesSent) / steps;
        r.nodeMsPerStep = s.nodeCollectiveMs / steps;
    }
    std::filesystem::remove(out);
    r.oneNodeImgS = median(one);
    r.nodesImgS = median(spread);
    return r;
}

} // namespace rs
