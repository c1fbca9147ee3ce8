// ReadTrace: see ReadTrace.h.
#include "store/ReadTrace.h"

namespace rs::readtrace {

namespace {

Sink g_sink = nullptr;

void emit(std::string_view a, std::string_view b, std::string_view c = {}) {
    if (Sink sink = g_sink)
        sink(a, b, c);
}

} // namespace

void setSink(Sink sink) {
    g_sink = sink;
}

void atFile(std::string_view what) {
    emit(what, {});
}

void atAttribute(std::string_view name) {
    emit("root attribute '", name, "'");
}

void atDataset(std::string_view path) {
    emit("dataset ", path);
}

void atChunkIndex(std::string_view datasetPath) {
    emit("the chunk index of dataset ", datasetPath);
}

} // namespace rs::readtrace
