// Saves a chart as PNG, SVG or PDF, with its title, axis labels, legend and the run's name in the picture.
#pragma once

#include <QString>

namespace rs {

class ChartWidget;

enum class ImageFormat { Png, Svg, Pdf };

QString imageFormatSuffix(ImageFormat f); // "png", "svg", "pdf"
// Guesses the format from the file suffix (case-insensitive); false when it is none of the three.
bool imageFormatFromPath(const QString& path, ImageFormat* out);

// Renders chart->plot() at width x height pixels (0: the widget's current size) with "<title> - <runName>"
// as a caption. Never overwrites an existing file unless overwrite is set. Returns false with *error set
// (naming the path and what went wrong) on failure.
bool exportChart(ChartWidget* chart, const QString& runName, const QString& path, ImageFormat format,
                 QString* error, int width = 0, int height = 0, bool overwrite = false);

} // namespace rs
