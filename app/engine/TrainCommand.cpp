// `ranksight-cli train`: configure, run with a progress line on stderr, stop cleanly on Ctrl-C.
#include "CliArgs.h"
#include "Commands.h"
#include "InstalledData.h"
#include "cluster/NodeGroup.h"
#include "store/RankMean.h"
#include "train/ConfigKeys.h"
#include "train/Trainer.h"

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fmt/format.h>
#include <optional>
#include <set>
#include <thread>
#include <unistd.h>

namespace rs::cli {
namespace {

std::atomic<bool> g_interrupted{false};

extern "C" void onSigint(int) {
    g_interrupted = true;
    std::signal(SIGINT, SIG_DFL); // a second Ctrl-C ends the process at once
    std::signal(SIGTERM, SIG_DFL);
}

std::string clock(double seconds) {
    if (!(seconds >= 0) || seconds > 1e7)
        return "--:--";
    const auto s = static_cast<int64_t>(seconds);
    return s >= 3600 ? fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
                     : fmt::format("{}:{:02}", s / 60, s % 60);
}

// Progress on stderr: one rewritten line on a terminal, a line every ~10% otherwise.
class Progress : public TrainObserver {
public:
    explicit Progress(bool quiet)
        : m_quiet(quiet)
        , m_tty(isatty(STDERR_FILENO)) {}
    void runStarted(const RunMeta& meta) override {
        m_meta = meta;
        m_start = std::chrono::steady_clock::now();
        if (!m_quiet)
            std::fprintf(
                stderr,
                "training %s on %d emulated Ascend 910 cards x batch %d (%s, loss scale %s), %lld steps\n",
                meta.model.c_str(), meta.worldSize, meta.batchPerRank, meta.precision.c_str(),
                meta.lossScale.c_str(), static_cast<long long>(meta.plannedSteps));
    }
    void stepRecorded(const StepRecord& s) override {
        if (m_quiet)
            return;
        const double elapsed =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - m_start).count();
        const int64_t done = s.step + 1, total = m_meta.plannedSteps;
        const double imgs = elapsed > 0 ? done * double(m_meta.worldSize) * m_meta.batchPerRank / elapsed : 0;
        const float loss = finiteMean(s.ranks.size(), [&](size_t r) { return s.ranks[r].loss; });
        const double eta = done > 0 ? elapsed / done * (total - done) : -1;
        const int width = 24;
        const int filled = total > 0 ? static_cast<int>(width * done / total) : 0;
        const std::string bar = std::string(filled, '#') + std::string(width - filled, '.');
        const std::string line = fmt::format("[{}] step {}/{}  {:.1f} img/s  loss {:.4f}  scale {:g}  ETA {}",
                                             bar, done, total, imgs, loss, s.ranks[0].lossScale, clock(eta));
        if (m_tty) {
            std::fprintf(stderr, "\r%s\x1b[K", line.c_str());
        } else if (done == total || done * 10 / std::max<int64_t>(1, total) != m_lastDecile) {
            m_lastDecile = done * 10 / std::max<int64_t>(1, total);
            std::fprintf(stderr, "%s\n", line.c_str());
        }
    }
    void eventRecorded(const Event& e) override {
        if (m_quiet || e.severity == Severity::Info)
            return;
        std::fprintf(stderr, "%s[%s] %s\n", m_tty ? "\r\x1b[K" : "",
                     e.severity == Severity::Error ? "ERROR" : "WARNING", e.message.c_str());
    }
    void runFinished(const RunSummary&) override {
        if (!m_quiet && m_tty)
            std::fprintf(stderr, "\n");
    }

private:
    bool m_quiet, m_tty;
    RunMeta m_meta;
    std::chrono::steady_clock::time_point m_start;
    int64_t m_lastDecile = -1;
};

// The options that are not rows of the config-key table: where the config starts from, --set, the output.
std::set<std::string> valuedOptions() {
    std::set<std::string> valued = {"config", "set"};
    for (const ConfigKey& k : configKeys())
        if (!k.flag.empty() && k.takesValue())
            valued.insert(k.flag);
    return valued;
}

std::set<std::string> flagOptions() {
    std::set<std::string> flags = {"quiet", "help-config"};
    for (const ConfigKey& k : configKeys())
        if (!k.flag.empty() && !k.takesValue())
            flags.insert(k.flag);
    return flags;
}

void applySet(TrainConfig& cfg, const std::string& value) {
    const auto eq = value.find('=');
    if (eq == std::string::npos)
        throw ConfigError(fmt::format("--set '{}': expected KEY=VALUE", value));
    cfg.set(value.substr(0, eq), value.substr(eq + 1));
}

// A config key's flag: a repeatable one (--fault) adds to the list, a bundled name becomes its file.
void applyFlag(TrainConfig& cfg, const ConfigKey& key, const std::string& value) {
    const std::string v = key.bundled.empty() ? value : findBundled(value, key.bundled.c_str());
    if (key.type == KeyType::List)
        key.add(cfg, v);
    else
        key.set(cfg, v);
}

// A flag's value as the row takes it: a flag without one (--force) is "true" when given.
std::optional<std::string> flagValue(const CliArgs& args, const ConfigKey& key) {
    if (key.takesValue())
        return args.value(key.flag);
    return args.flag(key.flag) ? std::optional<std::string>("true") : std::nullopt;
}

// How this process joins the run and --force: the flags, else (nodes) torchrun-style variables (NNODES,
// NODE_RANK, MASTER_ADDR, MASTER_PORT), so a scheduler's launcher starts the nodes unchanged.
void applyProcessFlags(TrainConfig& cfg, const CliArgs& args) {
    NodeOptions node = nodeOptionsFromEnvironment();
    cfg.nodes = node.nodes;
    cfg.nodeRank = node.nodeRank;
    cfg.master = fmt::format("{}:{}", node.masterHost, node.masterPort);
    const std::string fromEnvironment = cfg.master;
    for (const ConfigKey& k : configKeys())
        if (!k.isFileKey() && !k.flag.empty())
            if (const std::optional<std::string> v = flagValue(args, k))
                k.set(cfg, *v);
    if (cfg.master != fromEnvironment) { // --master: checked here, and written host:port as the variables are
        parseMaster(cfg.master, node);   // throws std::invalid_argument naming it
        cfg.master = fmt::format("{}:{}", node.masterHost, node.masterPort);
    }
}

// The config file or preset, then the flags and --set in the order given (later wins), then the process.
TrainConfig configFromArgs(const CliArgs& args) {
    TrainConfig cfg;
    if (auto path = args.value("config"))
        cfg = TrainConfig::fromFile(findBundled(*path, "presets"));
    for (const auto& [name, value] : args.ordered()) {
        if (name == "set")
            applySet(cfg, value);
        else if (const ConfigKey* k = findFlag(name); k && k->isFileKey())
            applyFlag(cfg, *k, value);
    }
    applyProcessFlags(cfg, args);
    cfg.validate();
    return cfg;
}

// Trains with a progress line, stopping cleanly on Ctrl-C; false (and the error printed) if the run could
// not go on.
bool runTrainer(const TrainConfig& cfg, bool quiet, RunSummary& summary) {
    Trainer trainer(cfg);
    Progress progress(quiet);
    trainer.setObserver(&progress);

    g_interrupted = false;
    std::signal(SIGINT, onSigint);
    std::signal(SIGTERM, onSigint);
    std::atomic<bool> finished{false};
    std::thread watcher([&] {
        while (!finished) {
            if (g_interrupted) {
                trainer.stop();
                break;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
    });
    try {
        summary = trainer.run();
    } catch (const std::exception& e) {
        finished = true;
        watcher.join();
        printError(fmt::format("train: {}", e.what()));
        return false;
    }
    finished = true;
    watcher.join();
    std::signal(SIGINT, SIG_DFL);
    std::signal(SIGTERM, SIG_DFL);
    return true;
}

// The end of a run on stderr; exit 1 when it stopped on an error.
int reportRun(const TrainConfig& cfg, const RunSummary& summary, bool quiet) {
    int code = 0;
    const std::string where = cfg.nodeRank == 0
                                  ? fmt::format("run file {}", cfg.out)
                                  : fmt::format("node {} of {}; node 0's run file", cfg.nodeRank, cfg.nodes);
    if (summary.stopReason.rfind("error", 0) == 0) {
        printError(fmt::format("train: {} ({} holds the {} steps before it)", summary.stopReason, where,
                               summary.stepsCompleted));
        code = 1;
    }
    if (quiet)
        return code;
    const std::string accuracy = summary.evalAccuracy >= 0
                                     ? fmt::format(", held-out accuracy {:.1f}%", summary.evalAccuracy * 100)
                                     : std::string();
    std::fprintf(stderr, "%s after %lld steps: loss %.4f -> %.4f, %.1f img/s%s; %s\n",
                 summary.completed ? "completed" : summary.stopReason.c_str(),
                 static_cast<long long>(summary.stepsCompleted), summary.lossFirst, summary.lossLast,
                 summary.imagesPerSecond, accuracy.c_str(),
                 cfg.nodeRank == 0 ? ("wrote " + cfg.out).c_str() : ("node 0 wrote the run file"));
    if (cfg.nodes > 1)
        std::fprintf(stderr, "node %d sent %.1f MB to the other nodes in %lld collectives, %.2f s in them\n",
                     cfg.nodeRank, double(summary.nodeBytesSent) / 1e6,
                     static_cast<long long>(summary.nodeCollectives), summary.nodeCollectiveMs / 1000.0);
    return code;
}

} // namespace

int trainCommand(const Args& argv) {
    const CliArgs args(argv, valuedOptions(), flagOptions());
    if (!args.positionals().empty())
        throw UsageError(fmt::format("unexpected argument '{}'", args.positionals().front()));
    if (args.flag("help-config")) {
        std::fputs(configKeysMarkdown().c_str(), stdout);
        return 0;
    }
    TrainConfig cfg;
    try {
        cfg = configFromArgs(args);
    } catch (const ConfigError& e) {
        printError(fmt::format("train: {}", e.what()));
        return 2;
    } catch (const std::invalid_argument& e) { // --master, NNODES...
        printError(fmt::format("train: {}", e.what()));
        return 2;
    }
    if (!cfg.overwrite && !cfg.out.empty() && access(cfg.out.c_str(), F_OK) == 0) {
        printError(fmt::format("train: {} already exists (use --force to replace it)", cfg.out));
        return 2;
    }
    RunSummary summary;
    if (!runTrainer(cfg, args.flag("quiet"), summary))
        return 2;
    return reportRun(cfg, summary, args.flag("quiet"));
}

} // namespace rs::cli
