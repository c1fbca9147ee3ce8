// See VersionText.h.
#include "VersionText.h"

#include "store/RunSchema.h"
#include "util/Versions.h"

#include <QtGlobal>

namespace rs {

QString versionText() {
    return QStringLiteral("RankSight %1 (run file format %2)\nQt %3, LibTorch %4, HDF5 %5\nBLAS: %6\n")
        .arg(QString::fromStdString(ranksightVersion()))
        .arg(runschema::kFormatVersion)
        .arg(QString::fromLatin1(qVersion()), QString::fromStdString(torchVersion()),
             QString::fromStdString(hdf5Version()), QString::fromStdString(blasDescription()));
}

} // namespace rs
