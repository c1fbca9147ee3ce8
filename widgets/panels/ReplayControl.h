// Replay controls: play/pause, speed, a step slider with "step N / M", and "Follow live". Replay is a timer
// that moves the window's one step cursor over the steps the run model holds, so every chart and panel
// replays together, live run or saved file alike. Space toggles play while the control has focus.
#pragma once

#include <QElapsedTimer>
#include <QTimer>
#include <QWidget>
#include <cstdint>

class QComboBox;
class QLabel;
class QSlider;
class QToolButton;

namespace rs {

class RunModel;
class StepCursor;

class ReplayControl : public QWidget {
    Q_OBJECT
public:
    ReplayControl(RunModel* model, StepCursor* cursor, QWidget* parent = nullptr);

    bool isPlaying() const { return m_timer.isActive(); }
    int speed() const;                 // steps per second
    void setSpeed(int stepsPerSecond); // the offered speed nearest to it: 1, 5, 20, 100 or 500
    QString positionText() const;      // "step N / M"

    QToolButton* playButton() const { return m_play; }
    QToolButton* followButton() const { return m_follow; }
    QSlider* slider() const { return m_slider; }
    QComboBox* speedCombo() const { return m_speed; }

public slots:
    void play(); // from the first step when the cursor is at the last
    void pause();
    void togglePlay();

signals:
    void playingChanged(bool playing);

protected:
    void keyPressEvent(QKeyEvent* event) override;

private:
    void buildUi();
    void onTick();
    void onSliderValue(int row);
    void onFollowClicked(bool checked);
    void syncToModel(); // slider range, enabled state, label
    void syncToCursor();
    void updatePlayButton();
    int tickIntervalMs() const;

    RunModel* m_model;
    StepCursor* m_cursor;
    QTimer m_timer;
    QElapsedTimer m_clock; // time since the last tick: the speed holds whatever the timer's jitter
    double m_pending = 0;  // steps owed to the speed but not yet taken (fractions of a step)
    QToolButton* m_play = nullptr;
    QComboBox* m_speed = nullptr;
    QSlider* m_slider = nullptr;
    QLabel* m_position = nullptr;
    QToolButton* m_follow = nullptr;
};

} // namespace rs
