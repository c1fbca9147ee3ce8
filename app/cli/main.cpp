// ranksight-cli: train, inspect, export and lint from the command line; the headless half of RankSight.
// train, bench, bench-nodes and --version run in ranksight-engine (Engine.h), the only part that loads
// LibTorch.
#include "CliArgs.h"
#include "Commands.h"
#include "Engine.h"

#include <cstdio>
#include <cstring>
#include <fmt/format.h>

namespace {

const char* kUsage =
    R"(usage: ranksight-cli COMMAND [OPTIONS]   (ranksight-cli --version: versions and BLAS kernels)

commands:
  train           train data-parallel across emulated Ascend 910 cards and record a run file
                  [--config FILE.json|PRESET] [--model mlp|smallcnn|resnet18|resnet50] [--ranks N]
                  [--batch PER_RANK] [--steps N | --epochs N] [--precision O0|O2|O3]
                  [--loss-scale none|fixed:V|dynamic] [--data synthetic|cifar10:DIR|fashion-mnist[:DIR]] [--seed S]
                  [--lr X] [--rank-table FILE|NAME] [--set KEY=VALUE]... [--fault NAME[@STEP][:RANK]]...
                  [--force] [--quiet] --out RUN.h5
                  [--nodes N --node-rank K --master HOST:PORT]: this process is node K of N (ranks/N
                  cards each, whole servers of up to 8; node 0 listens on HOST:PORT and writes --out); also from NNODES,
                  NODE_RANK, MASTER_ADDR, MASTER_PORT. PRESET: quick, seed, seed-story (share/ranksight/
                  presets); NAME: hccl_4p (share/ranksight/ranktables)
  inspect         summary of a run file: RUN.h5 [--json]
  export-csv      steps.csv, gradients.csv, events.csv: RUN.h5 --out DIR [--force]
  schema          the run-file layout this build writes and reads, as JSON (for writers in other languages)
  lint-ranktable  validate a MindSpore hccl.json: FILE [--ranks N] [--nodes N] [--json]
  bench           throughput: single replica vs the cluster with telemetry off and on (and the PyTorch DDP
                  peer with --peer), in alternating rounds; where a card's step goes, phase by phase
                  [--model M] [--ranks N] [--batch PER_RANK] [--steps N] [--repeat R] [--precision P]
                  [--peer] [--json]
  bench-nodes     one node against the same run over node processes on this host (gloo): img/s, bytes
                  between nodes per step, time in cross-node collectives; and a cluster on paper
                  [--model M] [--ranks N] [--nodes N] [--batch PER_RANK] [--steps N] [--repeat R]
                  [--precision P] [--paper-servers S] [--paper-cards C] [--paper-model M] [--json]
  import-msprobe  a run recorded by msprobe's monitor (one folder per rank of csv files) into a run file:
                  MONITOR_OUTPUT_DIR --out RUN.h5 [--force] [--quiet]
  import-flight-recorder
                  the flight-recorder dumps of a PyTorch job that hung (one file per rank, <prefix><rank>):
                  which collective each rank reached, and the first where ranks disagree, into a run file:
                  DIR|FILE --out RUN.h5 [--prefix P] [--run RECORDED.h5] [--force] [--quiet]
  diagnose        likely causes of cross-rank disagreement: RUN.h5 [--json] [--verbose] (exit 3: findings);
                  --reference REF.h5 [--spread REF2.h5]... also names the causes every rank shares, against a
                  reference run
  compare         a run against a reference run: the first step, parameter and rank where they part beyond
                  what the arithmetic allows (equal bits where the arithmetic is the same): RUN.h5 REF.h5
                  [--spread REF2.h5]... [--json] (exit 3: they part); REF2: the reference's job run with other
                  arithmetic (another layout or card count), whose measured drift widens the tolerances
  report          bug-report folder (report.md, charts as PNG and SVG, steps.csv, slice.h5; GUI build):
                  RUN.h5 --out DIR [--reference REF.h5 [--spread REF2.h5]...]
  bench-open      open a large run and follow a live one in the GUI layer (GUI build)
                  [--steps N] [--ranks N] [--file PATH] [--live-steps N] [--live-seconds S] [--cold] [--json]

exit codes: 0 success, 1 a check failed, 2 bad usage or unreadable input
)";

} // namespace

int main(int argc, char** argv) {
    if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") ||
        !std::strcmp(argv[1], "help")) {
        std::fputs(kUsage, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (rs::cli::isEngineCommand(argv[1]))
        return rs::cli::execEngine(argv);
    const std::string cmd = argv[1];
    const rs::cli::Args args(argv + 2, argv + argc);
    try {
        if (cmd == "inspect")
            return rs::cli::inspectCommand(args);
        if (cmd == "export-csv")
            return rs::cli::exportCsvCommand(args);
        if (cmd == "schema")
            return rs::cli::schemaCommand(args);
        if (cmd == "lint-ranktable")
            return rs::cli::lintRankTableCommand(args);
        if (cmd == "import-msprobe")
            return rs::cli::importMsprobeCommand(args);
        if (cmd == "import-flight-recorder")
            return rs::cli::importFlightRecorderCommand(args);
        if (cmd == "diagnose")
            return rs::cli::diagnoseCommand(args);
        if (cmd == "compare")
            return rs::cli::compareCommand(args);
        if (cmd == "report")
            return rs::cli::reportCommand(args);
        if (cmd == "bench-open")
            return rs::cli::benchOpenCommand(args);
        rs::cli::printError(fmt::format("unknown command '{}' (try --help)", cmd));
        return 2;
    } catch (const rs::cli::UsageError& e) {
        rs::cli::printError(fmt::format("{}: {} (try --help)", cmd, e.what()));
        return 2;
    } catch (const std::exception& e) {
        rs::cli::printError(fmt::format("{}: {}", cmd, e.what()));
        return 2;
    }
}
