// Hdf5RunReader: validates a run file against RunSchema.h before reading anything a file claims
// (Hdf5RunReaderValidation.cpp), then reads tables by hyperslab. Row counts are the minimum extent over a
// table's columns, so rows a killed writer left half-written (beyond the key column) are never returned.
#include "store/Hdf5RunReader.h"

#include "store/Hdf5Lock.h"
#include "store/ReaderTrace.h"

#include <H5Cpp.h>
#include <algorithm>
#include <filesystem>
#include <fmt/format.h>

namespace rs {

namespace rsc = runschema;
using h5detail::fixedString;
using h5detail::getFixedString;
using h5detail::memType;

// ---------------------------------------------------------------------------------------------------------
// reading rows

void Hdf5RunReader::Impl::checkRange(const char* what, int64_t begin, int64_t end, hsize_t rows) const {
    if (begin < 0 || end < begin || hsize_t(end) > rows)
        fail(fmt::format("{}({}, {}): outside the {} rows in the file", what, begin, end, rows));
}

void Hdf5RunReader::Impl::readRows(const RColumn& c, hsize_t begin, hsize_t n, void* out,
                                   const H5::DataType& mem) const {
    if (n == 0 || c.rowElems == 0 || c.missing) // a missing column (addedLater) reads as zeros
        return;
    readertrace::atDataset(c.spec->path);
    try {
        std::vector<hsize_t> start(c.row.size() + 1, 0), count(c.row.size() + 1);
        start[0] = begin;
        count[0] = n;
        std::copy(c.row.begin(), c.row.end(), count.begin() + 1);
        H5::DataSpace fileSpace = c.ds.getSpace();
        fileSpace.selectHyperslab(H5S_SELECT_SET, count.data(), start.data());
        H5::DataSpace memSpace(int(count.size()), count.data());
        c.ds.read(out, mem, memSpace, fileSpace);
    } catch (const H5::Exception& e) {
        fail(fmt::format("reading rows {}..{} of {}", begin, begin + n, c.spec->path), e);
    }
}

template <class T>
std::vector<T> Hdf5RunReader::Impl::readColumn(const RColumn& c, hsize_t begin, hsize_t n) const {
    std::vector<T> v(n * c.rowElems);
    readRows(c, begin, n, v.data(), memType(c.spec->dtype));
    return v;
}

std::vector<char> Hdf5RunReader::Impl::readStringColumn(const RColumn& c, hsize_t begin, hsize_t n) const {
    const size_t width = size_t(rsc::dtypeBytes(c.spec->dtype));
    std::vector<char> v(n * width);
    readRows(c, begin, n, v.data(), fixedString(width));
    return v;
}

// ---------------------------------------------------------------------------------------------------------
// public API

Hdf5RunReader::Hdf5RunReader(std::unique_ptr<Impl> impl)
    : m_d(std::move(impl)) {}

Hdf5RunReader::~Hdf5RunReader() {
    if (!m_d)
        return;
    try {
        Hdf5Guard guard;
        m_d.reset(); // closes every dataset and the file under the lock
    } catch (...) {
    }
}

std::unique_ptr<Hdf5RunReader> Hdf5RunReader::open(const std::string& path) {
    namespace fs = std::filesystem;
    auto d = std::make_unique<Impl>();
    d->path = path;
    std::error_code ec;
    const fs::file_status st = fs::status(path, ec);
    if (!fs::exists(st))
        d->fail("no such file");
    if (fs::is_directory(st))
        d->fail("is a directory, not a run file");
    d->fileBytes = fs::file_size(path, ec);
    if (ec)
        d->fail(fmt::format("cannot read the file size: {}", ec.message()));
    if (d->fileBytes == 0)
        throw RunFileError(fmt::format("{} is not an HDF5 file (the file is empty)", path));

    Hdf5Guard guard;
    readertrace::atFile("the file's HDF5 signature");
    const htri_t isHdf5 = H5Fis_hdf5(path.c_str());
    if (isHdf5 == 0)
        throw RunFileError(
            fmt::format("{} is not an HDF5 file (no HDF5 signature in its {} bytes)", path, d->fileBytes));
    if (isHdf5 < 0)
        d->fail(fmt::format("cannot read the file: {}", hdf5LastError()));
    try {
        d->openFile();
        d->readRoot();
        d->readFixed();
        d->openTables();
        d->updateExtents(false);
        d->checkLastChunks();
        d->readStatus();
    } catch (const H5::Exception& e) {
        d->fail("reading the run file", e);
    }
    return std::unique_ptr<Hdf5RunReader>(new Hdf5RunReader(std::move(d)));
}

const std::string& Hdf5RunReader::path() const {
    return m_d->path;
}
const RunMeta& Hdf5RunReader::meta() const {
    return m_d->meta;
}
int Hdf5RunReader::formatVersion() const {
    return m_d->formatVersion;
}

bool Hdf5RunReader::complete() const {
    Hdf5Guard guard;
    return m_d->complete;
}

std::string Hdf5RunReader::stopReason() const {
    Hdf5Guard guard;
    return m_d->stopReason;
}

int64_t Hdf5RunReader::totalElements() const {
    return int64_t(m_d->dims.T);
}

bool Hdf5RunReader::refresh() {
    Hdf5Guard guard;
    Impl& d = *m_d;
    if (!d.swmr)
        return false;
    const hsize_t before[] = {d.steps.rows,  d.weights.rows, d.evals.rows,
                              d.events.rows, d.dumps.rows,   d.entries.rows};
    const bool wasComplete = d.complete;
    const std::string wasReason = d.stopReason;
    // In-process writers share HDF5's caches with us, so there is nothing to refresh (and evicting their
    // metadata would be wrong); other processes' writes need H5Drefresh.
    const bool refreshFirst = !d.sharedWrite;
    if (refreshFirst) {
        readertrace::atDataset("/status");
        if (H5Drefresh(d.statusComplete.getId()) < 0 || H5Drefresh(d.statusReason.getId()) < 0)
            d.fail(fmt::format("refreshing /status: {}", hdf5LastError()));
    }
    d.updateExtents(refreshFirst);
    d.readStatus();
    const hsize_t after[] = {d.steps.rows,  d.weights.rows, d.evals.rows,
                             d.events.rows, d.dumps.rows,   d.entries.rows};
    return !std::equal(std::begin(before), std::end(before), std::begin(after)) ||
           wasComplete != d.complete || wasReason != d.stopReason;
}

int64_t Hdf5RunReader::stepCount() const {
    Hdf5Guard guard;
    return int64_t(m_d->steps.rows);
}
int64_t Hdf5RunReader::weightCount() const {
    Hdf5Guard guard;
    return int64_t(m_d->weights.rows);
}
int64_t Hdf5RunReader::evalCount() const {
    Hdf5Guard guard;
    return int64_t(m_d->evals.rows);
}
int64_t Hdf5RunReader::eventCount() const {
    Hdf5Guard guard;
    return int64_t(m_d->events.rows);
}
int64_t Hdf5RunReader::flightDumpCount() const {
    Hdf5Guard guard;
    return int64_t(m_d->dumps.rows);
}

std::vector<StepRecord> Hdf5RunReader::readSteps(int64_t begin, int64_t end, bool perParam) const {
    Hdf5Guard guard;
    const Impl& d = *m_d;
    d.checkRange("readSteps", begin, end, d.steps.rows);
    const hsize_t b = hsize_t(begin), n = hsize_t(end - begin);
    const size_t R = d.dims.R, B = d.dims.B, P = d.dims.P, K = d.dims.K;
    const auto& c = d.steps.cols;
    std::vector<StepRecord> out(n);

    const auto step = d.readColumn<int64_t>(c[rsc::kStep], b, n);
    const auto epoch = d.readColumn<int64_t>(c[rsc::kEpoch], b, n);
    const auto lr = d.readColumn<float>(c[rsc::kLr], b, n);
    const auto loss = d.readColumn<float>(c[rsc::kLoss], b, n);
    const auto accuracy = d.readColumn<float>(c[rsc::kAccuracy], b, n);
    const auto lossScale = d.readColumn<float>(c[rsc::kLossScale], b, n);
    const auto stepMs = d.readColumn<float>(c[rsc::kStepMs], b, n);
    const auto computeMs = d.readColumn<float>(c[rsc::kComputeMs], b, n);
    const auto commMs = d.readColumn<float>(c[rsc::kCommMs], b, n);
    const auto overflow = d.readColumn<uint8_t>(c[rsc::kOverflow], b, n);
    const auto skipped = d.readColumn<uint8_t>(c[rsc::kSkipped], b, n);
    const auto state = d.readColumn<uint8_t>(c[rsc::kState], b, n);
    const auto sampleFp = d.readColumn<uint64_t>(c[rsc::kSampleFp], b, n);
    const auto bufferFp = d.readColumn<uint64_t>(c[rsc::kBufferFpStep], b, n);
    for (size_t i = 0; i < n; ++i) {
        StepRecord& s = out[i];
        s.step = step[i];
        s.epoch = epoch[i];
        s.lr = lr[i];
        s.ranks.resize(R);
        for (size_t r = 0; r < R; ++r) {
            RankStep& rs = s.ranks[r];
            const size_t k = i * R + r;
            rs.loss = loss[k];
            rs.accuracy = accuracy[k];
            rs.lossScale = lossScale[k];
            rs.stepMs = stepMs[k];
            rs.computeMs = computeMs[k];
            rs.commMs = commMs[k];
            rs.overflow = overflow[k];
            rs.skipped = skipped[k];
            rs.state = state[k];
            rs.sampleFp = sampleFp[k];
            rs.bufferFp = bufferFp[k];
        }
    }
    if (!perParam)
        return out;

    // Per-parameter columns, one at a time so only one column's buffer is alive besides the records.
    auto scatter = [&](auto tag, int col, size_t len, auto member) {
        using T = decltype(tag);
        const std::vector<T> v = d.readColumn<T>(c[col], b, n);
        for (size_t i = 0; i < n; ++i)
            for (size_t r = 0; r < R; ++r) {
                const T* src = v.data() + (i * R + r) * len;
                (out[i].ranks[r].*member).assign(src, src + len);
            }
    };
    scatter(int32_t{}, rsc::kSampleIds, B, &RankStep::sampleIds);
    scatter(float{}, rsc::kLocalNorm, P, &RankStep::localNorm);
    scatter(float{}, rsc::kLocalMax, P, &RankStep::localMax);
    scatter(double{}, rsc::kLocalSum, P, &RankStep::localSum);
    scatter(uint32_t{}, rsc::kNonfinite, P, &RankStep::nonfinite);
    scatter(uint32_t{}, rsc::kOverflowCount, P, &RankStep::overflowCount);
    scatter(uint32_t{}, rsc::kUnderflowCount, P, &RankStep::underflowCount);
    scatter(float{}, rsc::kSketch, P * K, &RankStep::sketch);
    scatter(float{}, rsc::kSyncedNorm, P, &RankStep::syncedNorm);
    scatter(double{}, rsc::kSyncedSum, P, &RankStep::syncedSum);
    scatter(uint64_t{}, rsc::kSyncedFp, P, &RankStep::syncedFp);
    return out;
}

std::vector<float> Hdf5RunReader::readStepScalar(rsc::StepCol column, int64_t begin, int64_t end) const {
    Hdf5Guard guard;
    const Impl& d = *m_d;
    if (!rsc::isRankScalar(column))
        d.fail(fmt::format("readStepScalar: column {} is not a per-rank scalar step column ({}..{})",
                           int(column), rsc::kStepColumns[rsc::kFirstRankScalar].path,
                           rsc::kStepColumns[rsc::kLastRankScalar].path));
    d.checkRange("readStepScalar", begin, end, d.steps.rows);
    const Impl::RColumn& c = d.steps.cols[column];
    std::vector<float> v(size_t(end - begin) * c.rowElems);
    d.readRows(c, hsize_t(begin), hsize_t(end - begin), v.data(), H5::PredType::NATIVE_FLOAT);
    return v;
}

std::vector<int64_t> Hdf5RunReader::readStepNumbers(int64_t begin, int64_t end) const {
    Hdf5Guard guard;
    const Impl& d = *m_d;
    d.checkRange("readStepNumbers", begin, end, d.steps.rows);
    return d.readColumn<int64_t>(d.steps.cols[rsc::kStep], hsize_t(begin), hsize_t(end - begin));
}

std::vector<int64_t> Hdf5RunReader::readWeightSteps(int64_t begin, int64_t end) const {
    Hdf5Guard guard;
    const Impl& d = *m_d;
    d.checkRange("readWeightSteps", begin, end, d.weights.rows);
    return d.readColumn<int64_t>(d.weights.cols[rsc::kWStep], hsize_t(begin), hsize_t(end - begin));
}

std::vector<WeightRecord> Hdf5RunReader::readWeights(int64_t begin, int64_t end) const {
    Hdf5Guard guard;
    const Impl& d = *m_d;
    d.checkRange("readWeights", begin, end, d.weights.rows);
    const hsize_t b = hsize_t(begin), n = hsize_t(end - begin);
    const size_t R = d.dims.R, P = d.dims.P;
    const auto& c = d.weights.cols;
    const auto step = d.readColumn<int64_t>(c[rsc::kWStep], b, n);
    const auto fp = d.readColumn<uint64_t>(c[rsc::kWFp], b, n);
    const auto norm = d.readColumn<float>(c[rsc::kWNorm], b, n);
    const auto bufferFp = d.readColumn<uint64_t>(c[rsc::kWBufferFp], b, n);
    const auto drift = d.readColumn<float>(c[rsc::kWBufferDrift], b, n);
    std::vector<WeightRecord> out(n);
    for (size_t i = 0; i < n; ++i) {
        WeightRecord& w = out[i];
        w.step = step[i];
        w.fp.resize(R);
        w.norm.resize(R);
        for (size_t r = 0; r < R; ++r) {
            const size_t at = (i * R + r) * P;
            w.fp[r].assign(fp.begin() + at, fp.begin() + at + P);
            w.norm[r].assign(norm.begin() + at, norm.begin() + at + P);
        }
        w.bufferFp.assign(bufferFp.begin() + i * R, bufferFp.begin() + (i + 1) * R);
        w.bufferDrift.assign(drift.begin() + i * R, drift.begin() + (i + 1) * R);
    }
    return out;
}

std::vector<EvalRecord> Hdf5RunReader::readEvals(int64_t begin, int64_t end) const {
    Hdf5Guard guard;
    const Impl& d = *m_d;
    d.checkRange("readEvals", begin, end, d.evals.rows);
    const hsize_t b = hsize_t(begin), n = hsize_t(end - begin);
    const size_t R = d.dims.R;
    const auto& c = d.evals.cols;
    const auto step = d.readColumn<int64_t>(c[rsc::kEStep], b, n);
    const auto accuracy = d.readColumn<float>(c[rsc::kEAccuracy], b, n);
    const auto loss = d.readColumn<float>(c[rsc::kELoss], b, n);
    std::vector<EvalRecord> out(n);
    for (size_t i = 0; i < n; ++i) {
        out[i].step = step[i];
        out[i].accuracy.assign(accuracy.begin() + i * R, accuracy.begin() + (i + 1) * R);
        out[i].loss.assign(loss.begin() + i * R, loss.begin() + (i + 1) * R);
    }
    return out;
}

std::vector<Event> Hdf5RunReader::readEvents(int64_t begin, int64_t end) const {
    Hdf5Guard guard;
    const Impl& d = *m_d;
    d.checkRange("readEvents", begin, end, d.events.rows);
    const hsize_t b = hsize_t(begin), n = hsize_t(end - begin);
    const auto& c = d.events.cols;
    const auto step = d.readColumn<int64_t>(c[rsc::kVStep], b, n);
    const auto rank = d.readColumn<int32_t>(c[rsc::kVRank], b, n);
    const auto severity = d.readColumn<uint8_t>(c[rsc::kVSeverity], b, n);
    const auto code = d.readStringColumn(c[rsc::kVCode], b, n);
    const auto message = d.readStringColumn(c[rsc::kVMessage], b, n);
    std::vector<Event> out(n);
    for (size_t i = 0; i < n; ++i) {
        out[i].step = step[i];
        out[i].rank = rank[i];
        out[i].severity = Severity(std::min<uint8_t>(severity[i], uint8_t(Severity::Error)));
        out[i].code = getFixedString(code.data() + i * rsc::kEventCodeLen, rsc::kEventCodeLen);
        out[i].message = getFixedString(message.data() + i * rsc::kEventMessageLen, rsc::kEventMessageLen);
    }
    return out;
}

std::vector<FlightDump> Hdf5RunReader::readFlightDumps() const {
    Hdf5Guard guard;
    const Impl& d = *m_d;
    const hsize_t nd = d.dumps.rows, ne = d.entries.rows;
    const auto& dc = d.dumps.cols;
    const auto& ec = d.entries.cols;
    const auto trigger = d.readColumn<int64_t>(dc[rsc::kDTriggerStep], 0, nd);
    const auto reason = d.readStringColumn(dc[rsc::kDReason], 0, nd);
    std::vector<FlightDump> out(nd);
    for (size_t i = 0; i < nd; ++i) {
        out[i].triggerStep = trigger[i];
        out[i].reason = getFixedString(reason.data() + i * rsc::kReasonLen, rsc::kReasonLen);
    }
    const auto dump = d.readColumn<int64_t>(ec[rsc::kFDump], 0, ne);
    const auto step = d.readColumn<int64_t>(ec[rsc::kFStep], 0, ne);
    const auto rank = d.readColumn<int32_t>(ec[rsc::kFRank], 0, ne);
    const auto kind = d.readColumn<uint8_t>(ec[rsc::kFKind], 0, ne);
    for (size_t i = 0; i < ne; ++i) {
        // Entries of a dump whose own row is not complete yet (a killed or ongoing write) are skipped.
        if (dump[i] < 0 || hsize_t(dump[i]) >= nd)
            continue;
        FlightEntry e;
        e.step = step[i];
        e.rank = rank[i];
        e.kind = kind[i];
        e.data.resize(d.dims.T);
        d.readRows(ec[rsc::kFData], i, 1, e.data.data(), H5::PredType::NATIVE_FLOAT);
        out[size_t(dump[i])].entries.push_back(std::move(e));
    }
    return out;
}

} // namespace rs
