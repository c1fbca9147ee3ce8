// RunModel: see RunModel.h.
#include "model/RunModel.h"

#include "model/RunDelta.h"
#include "model/RunLoader.h"

#include <QFileInfo>
#include <algorithm>

namespace rs {

namespace {
constexpr size_t kDetailCache = 8;
constexpr int kDefaultPollMs = 200;
} // namespace

RunModel::RunModel(QObject* parent)
    : QObject(parent) {
    RunLoader::Callbacks cb;
    cb.delta = [this](const std::shared_ptr<RunDelta>& d) { applyDelta(std::move(*d)); };
    cb.detail = [this](uint64_t g, std::shared_ptr<const StepDetail> d) { onDetail(g, std::move(d)); };
    cb.detailDropped = [this](uint64_t g, int64_t step) { onDetailDropped(g, step); };
    cb.failed = [this](uint64_t g, const QString& message) { onFailed(g, message); };
    cb.progress = [this](uint64_t g, int percent) { onProgress(g, percent); };
    m_loader = new RunLoader(this, std::move(cb));
    m_loader->setPollInterval(kDefaultPollMs);
}

RunModel::~RunModel() {
    delete m_loader;
}

bool RunModel::recorded(StepColumn c) const {
    return m_meta.recorded(runschema::kStepColumns[schemaColumn(c)].path);
}

void RunModel::clearData() {
    m_hasRun = false;
    m_complete = false;
    m_stopReason.clear();
    m_meta = RunMeta{};
    m_formatVersion = 0;
    m_stepNumbers.clear();
    for (auto& c : m_columns)
        c.clear();
    m_events.clear();
    m_collectives.clear();
    m_tensorStats.clear();
    m_evals.clear();
    m_weightSteps.clear();
    m_details.clear();
    m_pendingDetails.clear();
}

void RunModel::open(const QString& path) {
    ++m_generation;
    clearData();
    m_path = path;
    m_loading = true;
    emit runReset();
    emit statusChanged();
    m_loader->open(m_generation, path, kDefaultPollMs);
}

void RunModel::close() {
    ++m_generation;
    m_loader->close(m_generation);
    clearData();
    m_path.clear();
    m_loading = false;
    emit runReset();
    emit statusChanged();
}

void RunModel::setPollInterval(int ms) {
    m_loader->setPollInterval(ms);
}

QString RunModel::runName() const {
    return m_path.isEmpty() ? QString() : QFileInfo(m_path).completeBaseName();
}

int64_t RunModel::rowOf(int64_t step) const {
    if (m_stepNumbers.empty())
        return -1;
    const auto it = std::upper_bound(m_stepNumbers.begin(), m_stepNumbers.end(), step);
    return it == m_stepNumbers.begin() ? 0 : int64_t(it - m_stepNumbers.begin()) - 1;
}

void RunModel::applyDelta(RunDelta d) {
    const bool direct = d.generation == 0;
    if (!direct && d.generation != m_generation)
        return; // a file that was replaced since
    const bool wasLoading = m_loading;
    if (d.first) {
        if (direct) {
            ++m_generation; // a direct fill replaces an open file: drop its pending results
            m_loader->close(m_generation);
            m_generation = 0;
            clearData();
            emit runReset();
        }
        m_path = d.path;
        m_meta = std::move(d.meta);
        m_formatVersion = d.formatVersion;
        m_hasRun = true;
    }
    if (!m_hasRun)
        return;

    const size_t R = size_t(m_meta.worldSize);
    const size_t n = d.stepNumbers.size();
    const bool fits =
        d.firstRow == stepCount() &&
        std::all_of(d.columns.begin(), d.columns.end(), [&](const auto& c) { return c.size() == n * R; });
    if (n > 0 && fits) {
        // Room for every row the file has, once: growing 28 MB of columns by doubling copied them and faulted
        // in fresh pages in one go, which stalled the event loop for ~100 ms while a 100k-step file loaded.
        if (d.fileRows > int64_t(m_stepNumbers.capacity())) {
            m_stepNumbers.reserve(size_t(d.fileRows));
            for (auto& c : m_columns)
                c.reserve(size_t(d.fileRows) * R);
        }
        m_stepNumbers.insert(m_stepNumbers.end(), d.stepNumbers.begin(), d.stepNumbers.end());
        for (size_t c = 0; c < m_columns.size(); ++c)
            m_columns[c].insert(m_columns[c].end(), d.columns[c].begin(), d.columns[c].end());
        emit stepsAppended(d.firstRow, int64_t(n));
    }
    if (!d.events.empty()) {
        const int first = int(m_events.size());
        m_events.insert(m_events.end(), std::make_move_iterator(d.events.begin()),
                        std::make_move_iterator(d.events.end()));
        emit eventsAppended(first, int(m_events.size()) - first);
    }
    if (!d.evals.empty()) {
        m_evals.insert(m_evals.end(), d.evals.begin(), d.evals.end());
        emit evalsChanged();
    }
    if (!d.weightSteps.empty()) {
        m_weightSteps.insert(m_weightSteps.end(), d.weightSteps.begin(), d.weightSteps.end());
        emit weightsChanged();
    }
    if (!d.collectives.empty() || !d.tensorStats.empty()) {
        m_collectives.insert(m_collectives.end(), std::make_move_iterator(d.collectives.begin()),
                             std::make_move_iterator(d.collectives.end()));
        m_tensorStats.insert(m_tensorStats.end(), std::make_move_iterator(d.tensorStats.begin()),
                             std::make_move_iterator(d.tensorStats.end()));
        emit importsChanged();
    }
    const QString reason = QString::fromStdString(d.stopReason);
    const bool statusMoved = d.complete != m_complete || reason != m_stopReason || d.loadDone == m_loading;
    m_complete = d.complete;
    m_stopReason = reason;
    m_loading = !d.loadDone;
    if (statusMoved)
        emit statusChanged();
    if (d.first)
        emit opened(m_path);
    if (wasLoading && !m_loading)
        emit loadProgress(100);
}

std::shared_ptr<const StepDetail> RunModel::cachedDetail(int64_t step) const {
    const auto it = std::find_if(m_details.rbegin(), m_details.rend(),
                                 [step](const auto& d) { return d->step == step; }); // the newest first
    return it == m_details.rend() ? nullptr : *it;
}

std::shared_ptr<const StepDetail> RunModel::detail(int64_t step) {
    const int64_t row = rowOf(step);
    if (row < 0)
        return nullptr;
    step = stepAt(row);
    if (auto d = cachedDetail(step))
        return d;
    if (m_generation != 0 &&
        std::find(m_pendingDetails.begin(), m_pendingDetails.end(), step) == m_pendingDetails.end()) {
        m_pendingDetails.push_back(step);
        m_loader->requestDetail(m_generation, step, row);
    }
    return nullptr;
}

void RunModel::setDetail(std::shared_ptr<const StepDetail> detail) {
    if (!detail)
        return;
    const int64_t step = detail->step;
    std::erase_if(m_details, [&](const auto& d) { return d->step == step; });
    m_details.push_back(std::move(detail));
    while (m_details.size() > kDetailCache)
        m_details.pop_front();
    emit detailReady(step);
}

void RunModel::onDetail(uint64_t generation, std::shared_ptr<const StepDetail> detail) {
    if (generation != m_generation)
        return;
    std::erase(m_pendingDetails, detail->step);
    setDetail(std::move(detail));
}

void RunModel::onDetailDropped(uint64_t generation, int64_t step) {
    if (generation == m_generation)
        std::erase(m_pendingDetails, step);
}

void RunModel::onFailed(uint64_t generation, const QString& message) {
    if (generation != m_generation)
        return;
    const QString path = m_path;
    m_loading = false;
    if (!m_hasRun) {
        m_path.clear();
        emit runReset();
    } else {
        m_stopReason = QStringLiteral("error: ") + message;
    }
    emit statusChanged();
    emit openFailed(path, message);
}

void RunModel::onProgress(uint64_t generation, int percent) {
    if (generation == m_generation)
        emit loadProgress(percent);
}

} // namespace rs
