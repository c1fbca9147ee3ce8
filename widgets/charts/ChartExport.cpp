// Chart export to PNG, SVG and PDF (see ChartExport.h). All three paint the same way, through a QCPPainter:
// a caption band with "<title> — <run>", then the plot rendered by QCustomPlot::toPainter at the export size.
// Files are written through QSaveFile, so a failed export never leaves half a file behind.
#include "charts/ChartExport.h"

#include "charts/ChartWidget.h"

#include <QFileInfo>
#include <QImage>
#include <QPageSize>
#include <QPdfWriter>
#include <QSaveFile>
#include <QSvgGenerator>
#include <qcustomplot.h>

namespace rs {
namespace {

constexpr int kDpi = 96; // export pixels are screen pixels: fonts come out as on screen

int captionHeight() {
    return 34;
}

QString captionText(ChartWidget* chart, const QString& runName) {
    return runName.isEmpty() ? chart->chartTitle()
                             : QStringLiteral("%1 — %2").arg(chart->chartTitle(), runName);
}

// Paints caption and plot onto an active painter covering width x (caption + height) pixels.
void paintChart(QCPPainter* painter, ChartWidget* chart, const QString& runName, int width, int height) {
    const int cap = captionHeight();
    painter->fillRect(QRect(0, 0, width, cap + height), Qt::white);
    QFont f = chart->font();
    f.setPixelSize(16);
    f.setBold(true);
    painter->setFont(f);
    painter->setPen(Qt::black);
    painter->drawText(QRect(10, 0, width - 20, cap), Qt::AlignLeft | Qt::AlignVCenter,
                      captionText(chart, runName));
    painter->translate(0, cap);
    chart->plot()->toPainter(painter, width, height);
}

bool writePng(QSaveFile* file, ChartWidget* chart, const QString& runName, int w, int h) {
    // Opaque RGB32: QPainter blends into non-premultiplied ARGB32 on a slow path (10x for a dense chart).
    QImage image(w, h + captionHeight(), QImage::Format_RGB32);
    image.setDotsPerMeterX(qRound(kDpi / 0.0254));
    image.setDotsPerMeterY(qRound(kDpi / 0.0254));
    image.fill(Qt::white);
    {
        QCPPainter painter(&image);
        painter.setRenderHint(QPainter::Antialiasing);
        paintChart(&painter, chart, runName, w, h);
    }
    return image.save(file, "PNG");
}

bool writeSvg(QSaveFile* file, ChartWidget* chart, const QString& runName, int w, int h) {
    QSvgGenerator svg;
    svg.setOutputDevice(file);
    svg.setResolution(kDpi); // without it the size comes out in mm at 72 dpi
    svg.setSize(QSize(w, h + captionHeight()));
    svg.setViewBox(QRect(0, 0, w, h + captionHeight()));
    svg.setTitle(captionText(chart, runName));
    svg.setDescription(QStringLiteral("RankSight chart %1").arg(chart->chartId()));
    QCPPainter painter;
    if (!painter.begin(&svg))
        return false;
    painter.setMode(QCPPainter::pmVectorized);
    paintChart(&painter, chart, runName, w, h);
    return painter.end();
}

bool writePdf(QSaveFile* file, ChartWidget* chart, const QString& runName, int w, int h) {
    QPdfWriter pdf(file);
    pdf.setResolution(kDpi);
    pdf.setCreator(QStringLiteral("RankSight"));
    pdf.setTitle(captionText(chart, runName));
    const QSizeF points(w * 72.0 / kDpi, (h + captionHeight()) * 72.0 / kDpi);
    pdf.setPageSize(QPageSize(points, QPageSize::Point, QString(), QPageSize::ExactMatch));
    pdf.setPageMargins(QMarginsF(0, 0, 0, 0));
    QCPPainter painter;
    if (!painter.begin(&pdf))
        return false;
    painter.setMode(QCPPainter::pmVectorized);
    paintChart(&painter, chart, runName, w, h);
    return painter.end();
}

bool writeFile(ChartWidget* chart, const QString& runName, const QString& path, ImageFormat format, int w,
               int h, QString* why) {
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly)) {
        *why = file.errorString();
        return false;
    }
    bool ok = false;
    switch (format) {
    case ImageFormat::Png:
        ok = writePng(&file, chart, runName, w, h);
        break;
    case ImageFormat::Svg:
        ok = writeSvg(&file, chart, runName, w, h);
        break;
    case ImageFormat::Pdf:
        ok = writePdf(&file, chart, runName, w, h);
        break;
    }
    if (!ok) {
        file.cancelWriting();
        *why = QObject::tr("rendering the %1 failed").arg(imageFormatSuffix(format).toUpper());
        return false;
    }
    if (!file.commit()) {
        *why = file.errorString();
        return false;
    }
    return true;
}

} // namespace

QString imageFormatSuffix(ImageFormat f) {
    switch (f) {
    case ImageFormat::Png:
        return QStringLiteral("png");
    case ImageFormat::Svg:
        return QStringLiteral("svg");
    case ImageFormat::Pdf:
        return QStringLiteral("pdf");
    }
    return {};
}

bool imageFormatFromPath(const QString& path, ImageFormat* out) {
    const QString suffix = QFileInfo(path).suffix().toLower();
    for (ImageFormat f : {ImageFormat::Png, ImageFormat::Svg, ImageFormat::Pdf})
        if (suffix == imageFormatSuffix(f)) {
            *out = f;
            return true;
        }
    return false;
}

bool exportChart(ChartWidget* chart, const QString& runName, const QString& path, ImageFormat format,
                 QString* error, int width, int height, bool overwrite) {
    auto fail = [&](const QString& why) {
        if (error)
            *error = QObject::tr("Cannot export %1 to %2: %3")
                         .arg(chart ? chart->chartTitle() : QString(), path, why);
        return false;
    };
    if (!chart || !chart->plot())
        return fail(QObject::tr("no chart"));
    if (!overwrite && QFileInfo::exists(path))
        return fail(QObject::tr("the file exists (choose another name or allow overwriting)"));
    QCustomPlot* plot = chart->plot();
    // A chart that was never shown has no useful size of its own.
    const int w = width > 0 ? width : (plot->width() >= 200 ? plot->width() : 1000);
    const int h = height > 0 ? height : (plot->height() >= 150 ? plot->height() : 600);

    // Lay the plot out at the export size before refreshing, so decimation and tick thinning fit the
    // picture; the screen layout comes back after.
    const QRect screenViewport = plot->viewport();
    plot->setViewport(QRect(0, 0, w, h));
    chart->refreshNow();
    QString why;
    const bool ok = writeFile(chart, runName, path, format, w, h, &why);
    plot->setViewport(screenViewport);
    plot->replot(QCustomPlot::rpQueuedReplot); // the new layout makes the chart rebuild for the screen
    return ok || fail(why);
}

} // namespace rs
