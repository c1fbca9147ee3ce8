// See CommandHelp.h. The option names here must match each command's CliArgs sets (tst_cli checks both ways).
#include "CommandHelp.h"

#include "train/ConfigKeys.h"

#include <algorithm>
#include <fmt/format.h>
#include <sstream>

namespace rs::cli {
namespace {

// train's options: the flags of the config-key table (core/train/ConfigKeys.h) between the three of its own.
std::vector<OptionHelp> trainOptions() {
    std::vector<OptionHelp> o = {
        {"--config FILE.json|PRESET", "start from a config file or a preset: quick, seed, seed-story"}};
    for (const ConfigKey& k : configKeys())
        if (!k.flag.empty())
            o.push_back({"--" + k.flag + (k.takesValue() ? " " + k.metavar : ""), k.help});
    o.push_back({"--set KEY=VALUE", "any config key (repeatable; later wins), e.g. --set sketch_dim=32"});
    o.push_back({"--quiet", "no progress line"});
    o.push_back({"--help-config", "the config keys as a markdown table (the user guide's)"});
    return o;
}

const std::vector<OptionHelp> kBenchModelOptions = {
    {"--model M", "mlp, smallcnn, resnet18 (default) or resnet50"},
    {"--ranks N", "emulated cards"},
    {"--batch PER_RANK", "samples per card and step"},
    {"--steps N", "timed steps per configuration and round"},
    {"--warmup N", "untimed steps before them"},
    {"--repeat R", "rounds; each figure is the median over rounds"},
    {"--precision P", "O0, O2 or O3"},
};

std::vector<OptionHelp> benchOptions() {
    auto o = kBenchModelOptions;
    o.push_back({"--threads N", "cards computing at once (0: one per core)"});
    o.push_back({"--peer", "also time PyTorch DDP over gloo (needs python3-torch)"});
    o.push_back({"--json", "the figures as JSON"});
    return o;
}

std::vector<OptionHelp> benchNodesOptions() {
    auto o = kBenchModelOptions;
    o.push_back({"--nodes N", "node processes on this host"});
    o.push_back({"--paper-servers S", "servers of the cluster on paper"});
    o.push_back({"--paper-cards C", "cards per server on paper"});
    o.push_back({"--paper-model M", "the model on paper (default resnet50)"});
    o.push_back({"--json", "the figures as JSON"});
    return o;
}

std::vector<CommandHelp> makeCommandHelps() {
    const OptionHelp json{"--json", "the result as JSON"};
    const OptionHelp spread{"--spread REF2.h5",
                            "the reference's job run with other arithmetic; its drift widens the tolerances "
                            "(repeatable)"};
    return {
        {"train", "",
         "Train data-parallel across emulated Ascend 910 cards and record a run file. Runs in "
         "ranksight-engine.",
         trainOptions(),
         "Ctrl-C stops after the step in flight and leaves a complete run file. exit 1: training stopped on "
         "an error (the run file holds the steps before it)"},
        {"inspect", "RUN.h5", "Summary of a run file (also one still being written).", {json}, ""},
        {"export-csv",
         "RUN.h5",
         "steps.csv, gradients.csv and events.csv of a run file.",
         {{"--out DIR", "the folder to write them in"}, {"--force", "replace files that exist"}},
         ""},
        {"schema",
         "",
         "The run-file layout this build writes and reads, as JSON (for writers in other languages).",
         {},
         ""},
        {"lint-ranktable",
         "FILE",
         "Validate a MindSpore rank table (hccl.json).",
         {{"--ranks N", "the ranks the table must hold"}, {"--nodes N", "the servers it must span"}, json},
         "exit 1: the table has errors"},
        {"bench", "",
         "Throughput: single replica against the cluster with telemetry off and on, in alternating rounds; "
         "where a card's step goes, phase by phase. Runs in ranksight-engine.",
         benchOptions(), ""},
        {"bench-nodes", "",
         "One node against the same run over node processes on this host (gloo): img/s, bytes between nodes "
         "per step, time in cross-node collectives; and a cluster on paper. Runs in ranksight-engine.",
         benchNodesOptions(), ""},
        {"import-msprobe",
         "MONITOR_OUTPUT_DIR",
         "A run recorded by msprobe's monitor (one folder per rank of csv files) into a run file.",
         {{"--out RUN.h5", "the run file to write"},
          {"--force", "replace RUN.h5 if it exists"},
          {"--quiet", "no summary"}},
         ""},
        {"import-flight-recorder",
         "DIR|FILE",
         "The flight-recorder dumps of a PyTorch job that hung (one file per rank, <prefix><rank>): which "
         "collective each rank reached, and the first where ranks disagree, into a run file.",
         {{"--out RUN.h5", "the run file to write"},
          {"--prefix P", "the dumps' file-name prefix (default: found from the names)"},
          {"--run RECORDED.h5", "join the collectives with the steps of this recorded run"},
          {"--force", "replace RUN.h5 if it exists"},
          {"--quiet", "no summary"}},
         ""},
        {"diagnose",
         "RUN.h5",
         "Likely causes of disagreement between ranks.",
         {{"--reference REF.h5", "also name the causes every rank shares, against this reference run"},
          spread,
          json,
          {"--verbose", "also the figures each check measured"}},
         "exit 3: findings"},
        {"watch",
         "RUN.h5",
         "Follow a run file another process is writing (it may not exist yet) and raise an alert on the "
         "first "
         "finding that matches: for a shell loop, a scheduler or a job that should stop.",
         {{"--fail-on WHAT",
           "any (default), CAUSE[,CAUSE...] or a dimension: numerics, parallel, data, environment"},
          {"--stall S", "alert (exit 4) when no step is written for S seconds: the job hung or died"},
          {"--flight-dumps DIR", "on a stall, name the flight-recorder dumps in DIR"},
          {"--exec CMD", "run CMD once at the alert, with RANKSIGHT_CAUSE, _STEP, _RANKS, _PARAMETER, _RUN"},
          {"--json", "the alert as one JSON line"},
          {"--stdin-sync", "for a parent process: answer each line on stdin with 'checked N'"},
          {"--poll-ms MS", "how often the file is read (default 250)"}},
         "exit 3: a matching finding; exit 4: a stall; exit 0: the run completed without one"},
        {"compare",
         "RUN.h5 REF.h5",
         "A run against a reference run: the first step, parameter and rank where they part beyond what the "
         "arithmetic allows.",
         {spread, json},
         "exit 3: the runs part"},
        {"report",
         "RUN.h5",
         "A bug-report folder: report.md, charts as PNG and SVG, steps.csv, slice.h5 (GUI build).",
         {{"--out DIR", "the new folder to write (never overwritten)"},
          {"--reference REF.h5", "compare against this reference run"},
          spread},
         ""},
        {"bench-open",
         "",
         "Open a large run and follow a live one in the GUI layer (GUI build).",
         {{"--steps N", "steps of the generated run"},
          {"--ranks N", "ranks of the generated run"},
          {"--sketch D", "gradient-sketch width of the generated run"},
          {"--file PATH", "the run to open (generated there if missing)"},
          {"--live-steps N", "steps of the live run to follow (0: none)"},
          {"--live-seconds S", "give up following after this long"},
          {"--cold", "drop the file from the page cache first"},
          json},
         ""},
        {"bench-latency",
         "RUN.h5...",
         "How long after a run writes a cause's evidence the window names it and `watch` alerts on it: each "
         "run is written again at its recorded pace while both follow (GUI build).",
         {{"--step-ms MS", "write a step every MS milliseconds instead of the recorded pace"},
          {"--window-only", "time the window alone, not `watch --fail-on CAUSE` as well"},
          json},
         ""},
    };
}

// Words of `text` on lines of at most `width` characters, each starting with `indent`.
std::string wrap(const std::string& text, size_t indent, size_t width = 100) {
    std::istringstream words(text);
    std::string out, line, word;
    while (words >> word) {
        if (!line.empty() && indent + line.size() + 1 + word.size() > width) {
            out += std::string(indent, ' ') + line + "\n";
            line.clear();
        }
        line += (line.empty() ? "" : " ") + word;
    }
    if (!line.empty())
        out += std::string(indent, ' ') + line + "\n";
    return out;
}

} // namespace

const std::vector<CommandHelp>& commandHelps() {
    static const std::vector<CommandHelp> helps = makeCommandHelps();
    return helps;
}

const CommandHelp* findCommandHelp(std::string_view name) {
    for (const CommandHelp& c : commandHelps())
        if (c.name == name)
            return &c;
    return nullptr;
}

bool asksForHelp(const std::vector<std::string>& args) {
    return std::any_of(args.begin(), args.end(),
                       [](const std::string& a) { return a == "--help" || a == "-h"; });
}

std::string commandUsage(const CommandHelp& c) {
    std::string out =
        fmt::format("usage: ranksight-cli {}{}{}\n\n{}\n", c.name, c.operands.empty() ? "" : " " + c.operands,
                    c.options.empty() ? "" : " [OPTIONS]", wrap(c.summary, 0));
    size_t column = std::string_view("-h, --help").size();
    for (const OptionHelp& o : c.options)
        column = std::max(column, o.spelling.size());
    out += "options:\n";
    for (const OptionHelp& o : c.options)
        out += fmt::format("  {:<{}}  {}\n", o.spelling, column, o.text);
    out += fmt::format("  {:<{}}  this text\n", "-h, --help", column);
    if (!c.notes.empty())
        out += fmt::format("\n{}", wrap(c.notes, 0));
    return out;
}

std::string overviewUsage() {
    std::string out = "usage: ranksight-cli COMMAND [OPTIONS]   (ranksight-cli --version: versions and BLAS "
                      "kernels)\n\ncommands:\n";
    const size_t column = 24;
    for (const CommandHelp& c : commandHelps()) {
        std::string text = wrap(c.summary, column);
        if (c.name.size() + 2 < column)
            text.replace(0, c.name.size() + 2, "  " + c.name);
        else
            text = fmt::format("  {}\n{}", c.name, text);
        out += text;
    }
    out += "\nranksight-cli COMMAND --help: the command's operands and options, one line each\n"
           "exit codes: 0 success, 1 a check failed, 2 bad usage or unreadable input\n";
    return out;
}

} // namespace rs::cli
