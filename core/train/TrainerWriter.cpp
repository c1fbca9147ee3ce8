// Trainer: the writer thread. Records arrive in step order from the cards (or, on node 0 of a multi-node
// run, from the exchange); this one thread appends them to the run file, runs the event detector, keeps the
// summary and tells the observer.
#include "store/RankMean.h"
#include "telemetry/EventDetector.h"
#include "train/TrainerImpl.h"

#include <cmath>
#include <fmt/format.h>

namespace rs {

void Trainer::Impl::writerLoop() {
    EventDetector detector(meta);
    auto emit = [&](const Event& e) {
        if (writer)
            writer->appendEvent(e);
        if (observer)
            observer->eventRecorded(e);
    };
    for (;;) {
        WriterItem item;
        {
            std::unique_lock lock(queueMutex);
            queueCv.wait(lock, [&] { return !queue.empty() || queueClosed; });
            if (queue.empty())
                return;
            item = std::move(queue.front());
            queue.pop_front();
        }
        if (!writerError.empty())
            continue; // keep draining so producers never block; the error ends the run
        const auto t0 = Clock::now();
        try {
            if (auto* step = std::get_if<StepRecord>(&item)) {
                if (writer)
                    writer->appendStep(*step);
                {
                    std::lock_guard lock(summaryMutex);
                    const float mean =
                        finiteMean(step->ranks.size(), [&](size_t r) { return step->ranks[r].loss; });
                    if (summary.stepsCompleted == 0)
                        summary.lossFirst = mean;
                    summary.lossLast = mean;
                    summary.stepsCompleted = step->step + 1;
                }
                if (observer)
                    observer->stepRecorded(*step);
                for (const auto& e : detector.onStep(*step))
                    emit(e);
            } else if (auto* w = std::get_if<WeightRecord>(&item)) {
                const auto& norm = w->bufferNorm; // the cards' buffer norms -> drift relative to rank 0
                w->bufferDrift.assign(norm.size(), 0.f);
                for (size_t r = 0; r < norm.size(); ++r)
                    w->bufferDrift[r] = norm[0] > 0 ? std::fabs(norm[r] - norm[0]) / norm[0] : 0.f;
                if (writer)
                    writer->appendWeights(*w);
                if (observer)
                    observer->weightsRecorded(*w);
                for (const auto& e : detector.onWeights(*w))
                    emit(e);
            } else if (auto* ev = std::get_if<EvalRecord>(&item)) {
                if (writer)
                    writer->appendEval(*ev);
                {
                    std::lock_guard lock(summaryMutex);
                    float mean = 0;
                    for (float a : ev->accuracy)
                        mean += a / static_cast<float>(ev->accuracy.size());
                    summary.evalAccuracy = mean;
                }
                if (observer)
                    observer->evalRecorded(*ev);
            } else if (auto* e = std::get_if<Event>(&item)) {
                emit(*e);
            } else if (auto* dump = std::get_if<FlightDump>(&item)) {
                if (writer)
                    writer->appendFlightDump(*dump);
                emit(Event{
                    dump->triggerStep, -1, Severity::Info, eventcode::kFlightRecorder,
                    fmt::format("Flight recorder wrote the last {} step(s) of full tensors at step {}: {}",
                                flightDepth, dump->triggerStep, dump->reason)});
            }
            writerMs += msSince(t0);
        } catch (const std::exception& e) {
            writerError = e.what();
            stopRequested = true; // a run that cannot be recorded stops: nothing is lost silently
            comm->cancel();
        }
    }
}

} // namespace rs
