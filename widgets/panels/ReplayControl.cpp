// Replay controls: see ReplayControl.h.
#include "panels/ReplayControl.h"

#include "model/RunModel.h"
#include "model/StepCursor.h"

#include <QComboBox>
#include <QFontDatabase>
#include <QFontMetrics>
#include <QHBoxLayout>
#include <QKeyEvent>
#include <QLabel>
#include <QSignalBlocker>
#include <QSlider>
#include <QStyle>
#include <QToolButton>
#include <algorithm>
#include <cmath>

namespace rs {

namespace {

constexpr int kSpeeds[] = {1, 5, 20, 100, 500}; // steps per second
constexpr int kMinTickMs = 20;                  // faster speeds take several steps per tick

} // namespace

ReplayControl::ReplayControl(RunModel* model, StepCursor* cursor, QWidget* parent)
    : QWidget(parent)
    , m_model(model)
    , m_cursor(cursor) {
    setFocusPolicy(Qt::StrongFocus);
    buildUi();
    connect(&m_timer, &QTimer::timeout, this, &ReplayControl::onTick);
    connect(m_model, &RunModel::runReset, this, [this] {
        pause();
        syncToModel();
    });
    connect(m_model, &RunModel::stepsAppended, this, &ReplayControl::syncToModel);
    connect(m_model, &RunModel::statusChanged, this, &ReplayControl::syncToModel);
    connect(m_cursor, &StepCursor::stepChanged, this, &ReplayControl::syncToCursor);
    connect(m_cursor, &StepCursor::followingChanged, this, [this](bool on) {
        const QSignalBlocker block(m_follow);
        m_follow->setChecked(on);
    });
    syncToModel();
}

void ReplayControl::buildUi() {
    m_play = new QToolButton(this);
    m_play->setToolTip(tr("Play or pause the replay (Space)"));
    m_speed = new QComboBox(this);
    for (int s : kSpeeds)
        m_speed->addItem(s == 1 ? tr("1 step/s") : tr("%1 steps/s").arg(s), s);
    m_speed->setCurrentIndex(2);
    m_speed->setToolTip(tr("Replay speed in steps per second"));
    m_slider = new QSlider(Qt::Horizontal, this);
    m_slider->setToolTip(tr("The step every chart and panel shows; drag to move through the run"));
    m_position = new QLabel(this);
    m_position->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    // Wide enough for "step 1000000 / 1000000" so the slider does not jump as the numbers grow.
    m_position->setMinimumWidth(
        QFontMetrics(m_position->font()).horizontalAdvance(QStringLiteral("step 0000000 / 0000000")));
    m_follow = new QToolButton(this);
    m_follow->setText(tr("Follow live"));
    m_follow->setCheckable(true);
    m_follow->setChecked(m_cursor->following());
    m_follow->setToolTip(tr("Keep the cursor on the newest step while a run is being written; a click on a "
                            "chart or the slider stops following"));

    auto* row = new QHBoxLayout(this);
    row->setContentsMargins(0, 0, 0, 0);
    row->addWidget(m_play);
    row->addWidget(m_speed);
    row->addWidget(m_slider, 1);
    row->addWidget(m_position);
    row->addWidget(m_follow);

    connect(m_play, &QToolButton::clicked, this, &ReplayControl::togglePlay);
    connect(m_speed, &QComboBox::currentIndexChanged, this,
            [this] { m_timer.setInterval(tickIntervalMs()); });
    connect(m_slider, &QSlider::valueChanged, this, &ReplayControl::onSliderValue);
    connect(m_follow, &QToolButton::clicked, this, &ReplayControl::onFollowClicked);
    updatePlayButton();
}

int ReplayControl::speed() const {
    return m_speed->currentData().toInt();
}

void ReplayControl::setSpeed(int stepsPerSecond) {
    int best = 0;
    for (int i = 1; i < m_speed->count(); ++i)
        if (std::abs(kSpeeds[i] - stepsPerSecond) < std::abs(kSpeeds[best] - stepsPerSecond))
            best = i;
    m_speed->setCurrentIndex(best);
}

int ReplayControl::tickIntervalMs() const {
    return std::max(kMinTickMs, 1000 / std::max(1, speed()));
}

void ReplayControl::play() {
    const int64_t count = m_model->stepCount();
    if (count == 0 || isPlaying())
        return;
    if (m_model->rowOf(m_cursor->step()) >= count - 1)
        m_cursor->setStep(m_model->stepAt(0)); // at the end: play the run again from the start
    m_pending = 0;
    m_clock.start();
    m_timer.start(tickIntervalMs());
    updatePlayButton();
    emit playingChanged(true);
}

void ReplayControl::pause() {
    if (!isPlaying())
        return;
    m_timer.stop();
    updatePlayButton();
    emit playingChanged(false);
}

void ReplayControl::togglePlay() {
    if (isPlaying())
        pause();
    else
        play();
}

void ReplayControl::onTick() {
    const int64_t count = m_model->stepCount();
    if (count == 0) {
        pause();
        return;
    }
    m_pending += double(m_clock.restart()) * speed() / 1000.0;
    const auto advance = int64_t(m_pending);
    if (advance == 0)
        return;
    m_pending -= double(advance);
    const int64_t row = std::min(m_model->rowOf(m_cursor->step()) + advance, count - 1);
    m_cursor->setStep(m_model->stepAt(row));
    if (row == count - 1)
        pause();
}

void ReplayControl::onSliderValue(int row) {
    if (row >= 0 && row < m_model->stepCount() && m_model->stepAt(row) != m_cursor->step())
        m_cursor->setStep(m_model->stepAt(row));
}

void ReplayControl::onFollowClicked(bool checked) {
    if (checked) {
        pause(); // following and replaying would fight over the cursor
        m_cursor->followLatest();
        // Jump to the newest step now, not at the next appended step (a complete run has none to come);
        // the range is the whole run, as the window gives it while following.
        if (m_model->stepCount() > 0)
            m_cursor->advanceTo(m_model->lastStep(), double(m_model->firstStep()),
                                double(m_model->lastStep()));
    } else {
        m_cursor->setStep(m_cursor->step()); // a user's choice of step: stops following
    }
}

void ReplayControl::syncToModel() {
    const int64_t count = m_model->stepCount();
    {
        const QSignalBlocker block(m_slider);
        m_slider->setRange(0, int(std::max<int64_t>(0, count - 1)));
        m_slider->setPageStep(int(std::clamp<int64_t>(count / 20, 1, 1000)));
    }
    m_slider->setEnabled(count > 0);
    m_play->setEnabled(count > 0);
    syncToCursor();
}

void ReplayControl::syncToCursor() {
    const int64_t row = m_model->rowOf(m_cursor->step());
    {
        const QSignalBlocker block(m_slider);
        m_slider->setValue(int(std::max<int64_t>(0, row)));
    }
    m_position->setText(positionText());
}

QString ReplayControl::positionText() const {
    if (m_model->stepCount() == 0)
        return tr("step - / -");
    return tr("step %1 / %2").arg(m_cursor->step()).arg(m_model->lastStep());
}

void ReplayControl::updatePlayButton() {
    const bool playing = isPlaying();
    m_play->setIcon(style()->standardIcon(playing ? QStyle::SP_MediaPause : QStyle::SP_MediaPlay));
    m_play->setText(playing ? tr("Pause") : tr("Play"));
}

void ReplayControl::keyPressEvent(QKeyEvent* event) {
    if (event->key() == Qt::Key_Space && event->modifiers() == Qt::NoModifier) {
        togglePlay();
        event->accept();
        return;
    }
    QWidget::keyPressEvent(event);
}

} // namespace rs
