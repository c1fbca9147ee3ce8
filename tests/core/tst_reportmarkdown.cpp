// report.md's text: the summary figures against hand-computed values, the first mismatch, the events cap,
// every section present, and readReportInput on a run file with known scalars.
#include "core/RunFileFixtures.h"
#include "reader/OpenRunFile.h"
#include "report/ReportMarkdown.h"
#include "store/RunReader.h"
#include "store/RunWriter.h"

#include <QTemporaryDir>
#include <QtTest>
#include <cmath>
#include <fmt/format.h>

using namespace rs;

namespace {

Event ev(int64_t step, int rank, Severity s, const std::string& code, const std::string& message) {
    return Event{step, rank, s, code, message};
}

int countOf(const std::string& text, const std::string& what) {
    int n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size()))
        ++n;
    return n;
}

// The lines of the section that starts with `heading` (up to the next "## ").
std::string section(const std::string& md, const std::string& heading) {
    const size_t begin = md.find(heading + "\n");
    if (begin == std::string::npos)
        return {};
    const size_t end = md.find("\n## ", begin + heading.size());
    return md.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

ReportInput smallInput() {
    ReportInput in;
    in.runName = "demo";
    in.sourcePath = "/runs/demo.h5";
    in.generatedUtc = "2024-05-01T12:00:00Z";
    in.meta = runfile_fixtures::makeMeta(2, 3, 4, 8);
    in.meta.environment = R"({"host":"box","cores":2})";
    in.formatVersion = 1;
    in.complete = true;
    in.stopReason = "completed";
    in.stepCount = 4;
    in.firstStep = 0;
    in.lastStep = 3;
    const std::vector<float> loss = {2.0f, 2.2f, 1.5f, 1.7f, 1.0f, 1.2f, 0.5f, 0.7f};
    const std::vector<float> stepMs = {10, 20, 30, 40, 50, 60, 70, 80};
    const std::vector<float> commMs = {1, 2, 3, 4, 5, 6, 7, 8};
    const std::vector<float> overflow = {0, 0, 1, 0, 1, 1, 0, 0};
    const std::vector<float> skipped = {0, 0, 1, 1, 0, 0, 0, 0};
    const std::vector<float> scale(8, 65536.0f);
    in.figures = summarizeSteps(2, loss, stepMs, commMs, overflow, skipped, scale);
    in.evals = {EvalRecord{3, {0.75f, 0.25f}, {0.5f, 0.6f}}};
    in.events = {ev(1, -1, Severity::Info, "OVERFLOW", "Gradient overflow at step 1"),
                 ev(2, 1, Severity::Error, "GRADIENT_SYNC",
                    "GRADIENT_SYNC: Rank 0 and Rank 1 parameter gradient mismatch at step 2 | piped")};
    in.chartStep = 2;
    in.chartStepReason = "the first anomaly";
    in.charts = {{"Loss and accuracy", "loss.png", "loss.svg"}};
    in.files = {{"steps.csv", "per-step, per-rank scalars"}, {"slice.h5", "steps 0 to 3"}};
    return in;
}

} // namespace

class TestReportMarkdown : public QObject {
    Q_OBJECT
private slots:
    void figures();
    void figuresSkipNonFiniteTimes();
    void firstMismatchPicksGradientFirst();
    void sectionsPresent();
    void findingsListed();
    void manyRanksListTheOnesThatMatter();
    void manyCardsGroupByServer();
    void eventsCapped();
    void noMismatchNoEvents();
    void readsRunFile();
};

void TestReportMarkdown::figures() {
    const auto f = smallInput().figures;
    QCOMPARE(f.ranks.size(), size_t(2));
    QCOMPARE(f.ranks[0].lossFirst, 2.0f);
    QCOMPARE(f.ranks[1].lossFirst, 2.2f);
    QCOMPARE(f.ranks[0].lossLast, 0.5f);
    QCOMPARE(f.ranks[1].lossLast, 0.7f);
    QCOMPARE(f.lossFirstMean, 2.1f);
    QCOMPARE(f.lossLastMean, 0.6f);
    QCOMPARE(f.ranks[0].stepMsMedian, 40.0f); // (30 + 50) / 2
    QCOMPARE(f.ranks[1].stepMsMedian, 50.0f); // (40 + 60) / 2
    QCOMPARE(f.ranks[0].commMsMedian, 4.0f);
    QCOMPARE(f.stepMsMedian, 45.0f);
    QCOMPARE(f.ranks[0].overflowSteps, int64_t(2));
    QCOMPARE(f.ranks[1].overflowSteps, int64_t(1));
    QCOMPARE(f.ranks[0].skippedSteps, int64_t(1));
    QCOMPARE(f.overflowSteps, int64_t(2)); // rows 1 and 2
    QCOMPARE(f.skippedSteps, int64_t(1));  // row 1 only
}

void TestReportMarkdown::figuresSkipNonFiniteTimes() {
    const float nan = std::nanf("");
    const std::vector<float> loss = {1, nan, 2, nan, 3, nan};
    const std::vector<float> ms = {5, nan, nan, nan, 7, nan};
    const std::vector<float> zero(6, 0.f);
    const auto f = summarizeSteps(2, loss, ms, ms, zero, zero);
    QCOMPARE(f.ranks[0].stepMsMedian, 6.0f); // the NaN of row 1 is left out
    QVERIFY(std::isnan(f.ranks[1].stepMsMedian));
    QVERIFY(std::isnan(f.ranks[1].lossLast)); // a dead rank
    QCOMPARE(f.lossLastMean,
             3.0f); // one rule (store/RankMean.h): the finite ranks' mean; the dead rank shows in its row
    QCOMPARE(f.stepMsMedian, 6.0f);
}

void TestReportMarkdown::firstMismatchPicksGradientFirst() {
    const std::vector<Event> events = {
        ev(5, 2, Severity::Error, "WEIGHT_SYNC", "w2"),
        ev(9, 1, Severity::Error, "GRADIENT_SYNC", "g9"),
        ev(5, 3, Severity::Error, "GRADIENT_SYNC", "g3"),
        ev(5, 1, Severity::Error, "GRADIENT_SYNC", "g1"),
        ev(3, -1, Severity::Warning, "LOSS_FLUCTUATION", "l"),
    };
    const auto first = firstMismatch(events);
    QCOMPARE(first.size(), size_t(2));
    QCOMPARE(first[0].message, std::string("g3"));
    QCOMPARE(first[1].message, std::string("g1"));
    QVERIFY(firstMismatch({ev(3, -1, Severity::Warning, "LOSS_FLUCTUATION", "l")}).empty());
}

void TestReportMarkdown::sectionsPresent() {
    const std::string md = buildReportMarkdown(smallInput());
    for (const char* h :
         {"# RankSight report: demo", "## Run", "## Summary", "## First mismatch", "## Findings", "## Charts",
          "## Events", "## Environment", "## Configuration", "## Rank table", "## Cards", "## Files"})
        QVERIFY2(md.find(std::string(h) + "\n") != std::string::npos, h);
    // Order: what a bug-ticket reader wants first.
    QVERIFY(md.find("## Summary") < md.find("## First mismatch"));
    QVERIFY(md.find("## First mismatch") < md.find("## Events"));

    const std::string run = section(md, "## Run");
    QVERIFY(run.find("| steps | 4 recorded (steps 0 to 3) of 1000 planned |") != std::string::npos);
    QVERIFY(run.find("complete: completed") != std::string::npos);
    QVERIFY(run.find("O2, loss scale dynamic") != std::string::npos);

    const std::string summary = section(md, "## Summary");
    QVERIFY2(summary.find("| 0 | 2.0000 | 0.5000 | 2 | 1 | 2^16 | 40.0 | 4.0 | 75.0% |") != std::string::npos,
             summary.c_str());
    QVERIFY(summary.find("| 1 | 2.2000 | 0.7000 | 1 | 1 | 2^16 | 50.0 | 5.0 | 25.0% |") != std::string::npos);
    QVERIFY(summary.find("**2.1000**") != std::string::npos);
    QVERIFY(summary.find("Final held-out accuracy (step 3, mean over ranks): 50.0%") != std::string::npos);
    QVERIFY(summary.find("Overflow on at least one rank in 2 of 4 steps.") != std::string::npos);
    QVERIFY(summary.find("Updates skipped on at least one rank in 1 steps.") != std::string::npos);
    QVERIFY(summary.find("Loss scale: the same on every rank at every step (2^16 at the last step).") !=
            std::string::npos);
    QVERIFY(section(md, "## Run").find("| source | 2 emulated Ascend 910 cards on 1 server |") !=
            std::string::npos);

    const std::string mismatch = section(md, "## First mismatch");
    QVERIFY2(mismatch.find("**GRADIENT_SYNC** at step **2**") != std::string::npos, mismatch.c_str());
    QVERIFY(mismatch.find("rank(s) **1**") != std::string::npos);
    QVERIFY(mismatch.find("Rank 0 and Rank 1 parameter gradient mismatch at step 2") != std::string::npos);
    QVERIFY(mismatch.find("The charts below show this step.") != std::string::npos);

    QVERIFY(section(md, "## Findings").find("not available") != std::string::npos);
    const std::string charts = section(md, "## Charts");
    QVERIFY(charts.find("![Loss and accuracy](loss.png)") != std::string::npos);
    QVERIFY(charts.find("(loss.svg)") != std::string::npos);
    QVERIFY(charts.find("step 2 (the first anomaly)") != std::string::npos);
    // A pipe inside a message must not split the table row.
    QVERIFY(section(md, "## Events").find("step 2 \\| piped |") != std::string::npos);
    QVERIFY(section(md, "## Environment").find("\"host\": \"box\"") != std::string::npos); // pretty-printed
    QVERIFY(section(md, "## Cards").find("| 1 | 1 | 192.168.100.102 | 10.0.0.1 |") != std::string::npos);
    QVERIFY(section(md, "## Files").find("- [slice.h5](slice.h5): steps 0 to 3") != std::string::npos);
}

void TestReportMarkdown::findingsListed() {
    auto in = smallInput();
    in.findings = {"**Gradients summed, not averaged** (confidence 0.9): set `gradients_mean=True`",
                   "Rank 1 died at step 3"};
    const std::string findings = section(buildReportMarkdown(in), "## Findings");
    QVERIFY(findings.find("not available") == std::string::npos);
    QVERIFY(findings.find("- **Gradients summed, not averaged**") != std::string::npos);
    QVERIFY(findings.find("- Rank 1 died at step 3") != std::string::npos);
}

// 64 ranks: a row for each rank a finding or an error names or whose figures stand out, one row of ranges
// for the rest, and the "all" row as always.
void TestReportMarkdown::manyRanksListTheOnesThatMatter() {
    constexpr int R = 64;
    auto in = smallInput();
    in.meta.worldSize = R;
    std::vector<float> loss(2 * R), stepMs(2 * R), commMs(2 * R), overflow(2 * R, 0), skipped(2 * R, 0);
    for (int r = 0; r < R; ++r) {
        loss[size_t(r)] = 2.0f + 0.001f * float(r);         // first step: 2.000 .. 2.063
        loss[size_t(R + r)] = 0.5f + 0.001f * float(r % 7); // last step: 0.500 .. 0.506
        stepMs[size_t(r)] = stepMs[size_t(R + r)] = 100.0f + float(r % 5);
        commMs[size_t(r)] = commMs[size_t(R + r)] = 20.0f + float(r % 3);
    }
    loss[size_t(R + 41)] = std::nanf("");                 // rank 41's loss went non-finite
    loss[size_t(R + 3)] = 0.9f;                           // one noisy batch: no row for that alone
    stepMs[size_t(50)] = stepMs[size_t(R + 50)] = 400.0f; // rank 50 is slow
    const std::vector<float> scale(2 * R, 1024.0f);
    in.figures = summarizeSteps(R, loss, stepMs, commMs, overflow, skipped, scale);
    in.evals.clear();
    in.events = {ev(1, 12, Severity::Error, "GRADIENT_SYNC", "Rank 0 and Rank 12 ..."),
                 ev(1, 30, Severity::Info, "OVERFLOW", "info events name no rank worth a row")};
    in.findingRanks = {9};
    const std::string summary = section(buildReportMarkdown(in), "## Summary");
    for (int r : {9, 12, 41, 50})
        QVERIFY2(summary.find(fmt::format("\n| {} | ", r)) != std::string::npos,
                 qPrintable(QString::number(r)));
    QCOMPARE(countOf(summary, "\n| "), 1 + 4 + 1 + 1); // header, 4 ranks, others, all
    QVERIFY(summary.find("\n| 30 | ") == std::string::npos);
    QVERIFY(summary.find("\n| 3 | ") == std::string::npos);
    QVERIFY2(
        summary.find("| *the other 60 ranks* | 2.0000 to 2.0630 | 0.5000 to 0.9000 | 0 | 0 | 2^10 | 100.0 "
                     "to 104.0 | 20.0 to 22.0 |") != std::string::npos,
        summary.c_str());
    QVERIFY(summary.find("- 64 ranks: the table lists the 4 that") != std::string::npos);
    QVERIFY(summary.find("| **all** |") != std::string::npos);

    // Up to kReportAllRanksUpTo ranks, every rank has its row and there is no ranges row.
    auto few = smallInput();
    const std::string all = section(buildReportMarkdown(few), "## Summary");
    QVERIFY(all.find("the other") == std::string::npos);
    QVERIFY(all.find("\n| 0 | ") != std::string::npos && all.find("\n| 1 | ") != std::string::npos);
}

// Past 16 cards the cards table has a row per server group, each column the range its cards span, and the
// rank table is a link to the file beside the report instead of thousands of inlined lines.
void TestReportMarkdown::manyCardsGroupByServer() {
    constexpr int R = 1024;
    auto in = smallInput();
    in.meta = runfile_fixtures::makeMeta(R, 3, 4, 8); // 128 servers of 8 cards
    in.meta.environment = R"({"nodes":16})";          // 16 node processes of 8 servers
    for (CardInfo& c : in.meta.cards)
        c.hbmUsedBytes = int64_t(1) << 30;
    in.meta.cards[37].hbmTotalBytes = 0; // one card that did not report its memory
    in.files.push_back({kReportRankTableFile, "the rank table"});
    const std::string md = buildReportMarkdown(in);
    const std::string cards = section(md, "## Cards");
    QCOMPARE(countOf(cards, "\n| "), 1 + 64); // header, 64 rows of 2 servers
    QVERIFY2(cards.find("1024 cards in 64 rows, a row per 2 servers") != std::string::npos, cards.c_str());
    QVERIFY2(cards.find("\n| 0–15 | 0 | 0–7 | 192.168.100.101 … 192.168.100.116 (16) | 10.0.0.1 … 10.0.0.2 "
                        "(2) | 1.00 / 32 |") != std::string::npos,
             cards.c_str());
    QVERIFY2(cards.find("\n| 32–47 | 0 | 0–7 |") != std::string::npos, cards.c_str());
    QVERIFY2(cards.find("| 1.00 / 32 (1 not recorded) |") != std::string::npos, cards.c_str());
    QVERIFY2(cards.find("\n| 1008–1023 | 15 | ") != std::string::npos, cards.c_str());
    const std::string table = section(md, "## Rank table");
    QVERIFY2(
        table.find("1024 devices on 128 servers: the whole table is [rank_table.json](rank_table.json).") !=
            std::string::npos,
        table.c_str());
    QVERIFY(table.find("server_list") == std::string::npos);

    // Without the file beside it, the table stays inline: nothing the run recorded is dropped.
    in.files.pop_back();
    QVERIFY(section(buildReportMarkdown(in), "## Rank table").find("server_list") != std::string::npos);
}

void TestReportMarkdown::eventsCapped() {
    auto in = smallInput();
    in.events.clear();
    for (int i = 0; i < 300; ++i)
        in.events.push_back(ev(i, -1, Severity::Info, "OVERFLOW", "overflow " + std::to_string(i)));
    // Errors late in the log must still be shown.
    in.events.push_back(ev(400, 1, Severity::Error, "GRADIENT_SYNC", "late error"));
    in.events.push_back(ev(401, -1, Severity::Warning, "LOSS_FLUCTUATION", "late warning"));
    const std::string events = section(buildReportMarkdown(in), "## Events");
    QCOMPARE(countOf(events, "| OVERFLOW |"), int(kReportMaxEvents) - 2);
    QVERIFY(events.find("late error") != std::string::npos);
    QVERIFY(events.find("late warning") != std::string::npos);
    QVERIFY(events.find("302 events: 1 errors, 1 warnings, 300 info.") != std::string::npos);
    QVERIFY2(events.find("102 more events not shown (0 errors, 0 warnings, 102 info)") != std::string::npos,
             events.c_str());
    // Shown rows stay in log order.
    QVERIFY(events.find("overflow 0 |") < events.find("overflow 197 |"));
    QVERIFY(events.find("overflow 198 |") == std::string::npos);
}

void TestReportMarkdown::noMismatchNoEvents() {
    auto in = smallInput();
    in.events.clear();
    in.chartStep = 3;
    in.chartStepReason = "the last step: no finding and no anomaly";
    const std::string md = buildReportMarkdown(in);
    QVERIFY(section(md, "## First mismatch").find("None:") != std::string::npos);
    QVERIFY(section(md, "## Events").find("The event log is empty.") != std::string::npos);
    QVERIFY(section(md, "## Charts")
                .find("Cursor and heatmaps at step 3 (the last step: no finding and no "
                      "anomaly).") != std::string::npos);
}

void TestReportMarkdown::readsRunFile() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("known.h5").toStdString();
    const RunMeta meta = runfile_fixtures::makeMeta(3, 4, 2, 4);
    {
        auto w = RunWriter::create(path, meta);
        for (int s = 0; s < 50; ++s) {
            StepRecord rec;
            rec.step = 100 + s;
            for (int r = 0; r < 3; ++r) {
                RankStep x; // scalars only: the per-parameter vectors are "not recorded"
                x.loss = 3.0f - 0.05f * float(s) + 0.1f * float(r);
                x.stepMs = float(10 * (r + 1) + s);
                x.commMs = float(s % 7);
                x.overflow = s % 10 == 0 && r == 0;
                x.skipped = s % 10 == 0;
                rec.ranks.push_back(x);
            }
            w->appendStep(rec);
        }
        w->appendEval(EvalRecord{120, {0.5f, 0.5f, 0.5f}, {1, 1, 1}});
        w->appendEval(EvalRecord{149, {0.9f, 0.8f, 0.7f}, {1, 1, 1}});
        w->appendEvent(ev(130, 2, Severity::Error, "GRADIENT_SYNC", "GRADIENT_SYNC: Rank 0 and Rank 2 ..."));
        w->close("completed");
    }
    const auto reader = openRunFile(path);
    const ReportInput in = readReportInput(*reader);
    QCOMPARE(in.runName, std::string("known"));
    QCOMPARE(in.stepCount, int64_t(50));
    QCOMPARE(in.firstStep, int64_t(100));
    QCOMPARE(in.lastStep, int64_t(149));
    QVERIFY(in.complete);
    QCOMPARE(in.meta.worldSize, 3);
    QCOMPARE(in.figures.ranks.size(), size_t(3));
    QCOMPARE(in.figures.ranks[2].lossFirst, 3.2f);
    QCOMPARE(in.figures.ranks[0].lossLast, 3.0f - 0.05f * 49);
    QCOMPARE(in.figures.ranks[1].stepMsMedian, 20.0f + 24.5f); // s = 0..49: median 24.5
    QCOMPARE(in.figures.ranks[0].commMsMedian, 3.0f);
    QCOMPARE(in.figures.ranks[0].overflowSteps, int64_t(5));
    QCOMPARE(in.figures.ranks[1].overflowSteps, int64_t(0));
    QCOMPARE(in.figures.overflowSteps, int64_t(5));
    QCOMPARE(in.figures.skippedSteps, int64_t(5));
    QCOMPARE(in.evals.size(), size_t(2));
    QCOMPARE(in.events.size(), size_t(1));

    const std::string md = buildReportMarkdown(in);
    QVERIFY(md.find("| steps | 50 recorded (steps 100 to 149) of 1000 planned |") != std::string::npos);
    QVERIFY(md.find("Final held-out accuracy (step 149, mean over ranks): 80.0%") != std::string::npos);
    QVERIFY(md.find("**GRADIENT_SYNC** at step **130**") != std::string::npos);
}

QTEST_GUILESS_MAIN(TestReportMarkdown)
#include "tst_reportmarkdown.moc"
