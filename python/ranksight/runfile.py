"""Writes a RankSight run file (docs/run-file.md, format_version 3) with h5py.

The layout mirrors core/store/RunSchema.h, which is the reference: every column's path, dtype (exact size
and sign: the reader converts nothing) and row shape. RankSight's reader validates a file against that
header, so a difference here is refused with a message naming the dataset (tests/python checks it), and
tests/python/test_schema.py compares the tables below with `ranksight-cli schema`, so they cannot drift.

Write protocol, as RunWriter's: everything is created up front, then SWMR writing starts; a new row of a table
is extended, written and flushed into every column, the table's key column (its last) last. A reader takes
the minimum extent over a table's columns, so a killed job leaves every flushed row readable.
"""

import json
import time

import numpy as np

try:
    import h5py
except ImportError as e:  # not a pip dependency: Debian's python3-h5py is not named h5py to pip
    raise ImportError("ranksight writes run files with h5py: install it (Debian: apt install python3-h5py; "
                      "elsewhere: pip install h5py)") from e

FORMAT_NAME = "ranksight-run"
FORMAT_VERSION = 3

EVENT_CODE_LEN = 32
EVENT_MESSAGE_LEN = 256
REASON_LEN = 256

# Row shapes after the extendible first dimension. R world size, B batch per rank, P parameter tensors,
# K sketch dim, T total parameter elements.
SCALAR, R, RB, RP, RPK, T = "", "R", "RB", "RP", "RPK", "T"

_DTYPES = {
    "i32": np.dtype("<i4"),
    "i64": np.dtype("<i8"),
    "u8": np.dtype("u1"),
    "u32": np.dtype("<u4"),
    "u64": np.dtype("<u8"),
    "f32": np.dtype("<f4"),
    "f64": np.dtype("<f8"),
    "s32": np.dtype("S%d" % EVENT_CODE_LEN),
    "s256": np.dtype("S%d" % EVENT_MESSAGE_LEN),
}

# (path, dtype, row, deflate); the key column of each table is its last entry.
STEP_COLUMNS = [
    ("/steps/epoch", "i64", SCALAR, True),
    ("/steps/lr", "f32", SCALAR, True),
    ("/steps/loss", "f32", R, True),
    ("/steps/accuracy", "f32", R, True),
    ("/steps/loss_scale", "f32", R, True),
    ("/steps/step_ms", "f32", R, True),
    ("/steps/compute_ms", "f32", R, True),
    ("/steps/comm_ms", "f32", R, True),
    ("/steps/overflow", "u8", R, True),
    ("/steps/skipped", "u8", R, True),
    ("/steps/state", "u8", R, True),
    ("/steps/sample_fp", "u64", R, True),
    ("/steps/sample_ids", "i32", RB, True),
    ("/steps/buffer_fp", "u64", R, True),
    ("/steps/cpu_wait_ms", "f32", R, True),
    ("/steps/optimizer_lr", "f32", R, True),
    ("/grads/local_norm", "f32", RP, False),
    ("/grads/local_max", "f32", RP, False),
    ("/grads/local_sum", "f64", RP, False),
    ("/grads/nonfinite", "u32", RP, True),
    ("/grads/overflow_count", "u32", RP, True),
    ("/grads/underflow_count", "u32", RP, True),
    ("/grads/sketch", "f32", RPK, False),
    ("/grads/local_fp", "u64", RP, False),
    ("/grads/synced_norm", "f32", RP, True),
    ("/grads/synced_sum", "f64", RP, True),
    ("/grads/synced_fp", "u64", RP, True),
    ("/steps/end_ns", "i64", SCALAR, True),
    ("/steps/step", "i64", SCALAR, True),
]
WEIGHT_COLUMNS = [
    ("/weights/fp", "u64", RP, True),
    ("/weights/norm", "f32", RP, True),
    ("/weights/buffer_fp", "u64", R, True),
    ("/weights/buffer_drift", "f32", R, True),
    ("/weights/step", "i64", SCALAR, True),
]
EVAL_COLUMNS = [
    ("/eval/accuracy", "f32", R, True),
    ("/eval/loss", "f32", R, True),
    ("/eval/step", "i64", SCALAR, True),
]
EVENT_COLUMNS = [
    ("/events/rank", "i32", SCALAR, True),
    ("/events/severity", "u8", SCALAR, True),
    ("/events/code", "s32", SCALAR, True),
    ("/events/message", "s256", SCALAR, True),
    ("/events/peer", "i32", SCALAR, True),
    ("/events/peer_gone", "u8", SCALAR, True),
    ("/events/step", "i64", SCALAR, True),
]
DUMP_COLUMNS = [
    ("/flight/dumps/reason", "s256", SCALAR, True),
    ("/flight/dumps/trigger_step", "i64", SCALAR, True),
]
ENTRY_COLUMNS = [
    ("/flight/entries/data", "f32", T, False),
    ("/flight/entries/step", "i64", SCALAR, True),
    ("/flight/entries/rank", "i32", SCALAR, True),
    ("/flight/entries/kind", "u8", SCALAR, True),
    ("/flight/entries/dump", "i64", SCALAR, True),
]
# Imported flight-recorder dumps and msprobe dumps: one row per collective / tensor statistic.
COLLECTIVE_COLUMNS = [
    ("/collectives/rank", "i32", SCALAR, True),
    ("/collectives/record_id", "i64", SCALAR, True),
    ("/collectives/seq", "i64", SCALAR, True),
    ("/collectives/group", "s256", SCALAR, True),
    ("/collectives/op", "s32", SCALAR, True),
    ("/collectives/sizes", "s256", SCALAR, True),
    ("/collectives/dtypes", "s32", SCALAR, True),
    ("/collectives/state", "u8", SCALAR, True),
    ("/collectives/p2p", "u8", SCALAR, True),
    ("/collectives/retired", "u8", SCALAR, True),
    ("/collectives/created_ns", "i64", SCALAR, True),
    ("/collectives/duration_ms", "f32", SCALAR, True),
    ("/collectives/timeout_ms", "i64", SCALAR, True),
    ("/collectives/frame", "s256", SCALAR, True),
    ("/collectives/step", "i64", SCALAR, True),
]
TENSOR_COLUMNS = [
    ("/tensors/rank", "i32", SCALAR, True),
    ("/tensors/order", "i64", SCALAR, True),
    ("/tensors/name", "s256", SCALAR, True),
    ("/tensors/dtype", "s32", SCALAR, True),
    ("/tensors/shape", "s256", SCALAR, True),
    ("/tensors/max", "f32", SCALAR, True),
    ("/tensors/min", "f32", SCALAR, True),
    ("/tensors/mean", "f32", SCALAR, True),
    ("/tensors/norm", "f32", SCALAR, True),
    ("/tensors/recorded", "u8", SCALAR, True),
    ("/tensors/step", "i64", SCALAR, True),
]
# Root attributes (name, dtype, required) in the order RunWriter writes them (C++: RootAttributes.h). A reader
# takes a file without an optional one as written before it existed (source: ranksight-engine; absent: none).
ROOT_ATTRIBUTES = [
    ("format", "string", True),
    ("format_version", "int32", True),
    ("created", "string", True),
    ("model", "string", True),
    ("world_size", "int32", True),
    ("batch_per_rank", "int32", True),
    ("precision", "string", True),
    ("loss_scale", "string", True),
    ("data", "string", True),
    ("seed", "uint64", True),
    ("sketch_dim", "int32", True),
    ("weight_every", "int32", True),
    ("planned_steps", "int64", True),
    ("config", "string", True),
    ("rank_table", "string", True),
    ("environment", "string", True),
    ("source", "string", False),
    ("absent", "string", False),
    ("local_fp_version", "int32", False),
]
_ATTRIBUTE_DTYPES = {"int32": np.dtype("<i4"), "int64": np.dtype("<i8"), "uint64": np.dtype("<u8")}

# Columns whose unused entries hold -1 (C++: Column::padded); any other column's missing values are 0 here.
PADDED = {"/steps/sample_ids"}
GROUPS = ["/params", "/cards", "/status", "/steps", "/grads", "/weights", "/eval", "/events", "/flight",
          "/flight/dumps", "/flight/entries", "/collectives", "/tensors"]

_CHUNK_TARGET_BYTES = 64 << 10
_MAX_CHUNK_ROWS = 1024
_MAX_CHUNK_BYTES = 1 << 20


def _utf8(raw, width):
    """A scalar of a fixed-length UTF-8 string type (h5py will not convert ASCII bytes to it)."""
    return np.array(raw, dtype=h5py.string_dtype("utf-8", width))


def shape_string(shape):
    """/params/shape: "64x3x3x3", "" for a 0-d tensor."""
    return "x".join(str(int(d)) for d in shape)


def _fixed(value, width=None):
    """A NUL-terminated fixed-length UTF-8 string (numpy bytes), cut at a UTF-8 boundary to fit width."""
    raw = value.encode("utf-8") if isinstance(value, str) else bytes(value)
    if width is not None and len(raw) > width - 1:
        raw = raw[: width - 1]
        while raw and (raw[-1] & 0xC0) == 0x80:
            raw = raw[:-1]
        if raw and raw[-1] >= 0xC0:
            raw = raw[:-1]
    return raw


class RunFileWriter:
    """One run file, written by one process (rank 0 of a job).

    meta: dict with model, world_size, batch_per_rank, precision, loss_scale, data, seed, sketch_dim,
    weight_every, planned_steps, config (dict), rank_table (dict or str), environment (dict), source,
    absent [dataset paths the source cannot record, e.g. "/grads/overflow_count"],
    params [(name, shape)], buffer_names [str], cards [dict(rank, device_id, device_ip, server_id,
    hbm_total_bytes, hbm_used_bytes)] (or empty).
    """

    def __init__(self, path, meta, overwrite=False):
        self.path = path
        self.meta = meta
        self.R = int(meta["world_size"])
        self.B = int(meta["batch_per_rank"])
        self.P = len(meta["params"])
        self.K = int(meta["sketch_dim"])
        numel = [int(np.prod(shape, dtype=np.int64)) if len(shape) else 1 for _, shape in meta["params"]]
        self.offsets = np.concatenate([[0], np.cumsum(numel)[:-1]]).astype(np.int64) if numel else np.zeros(0, np.int64)
        self.numel = np.asarray(numel, dtype=np.int64)
        self.T = int(self.numel.sum()) if numel else 0
        self.f = h5py.File(path, "w" if overwrite else "w-", libver="latest")
        self._write_root()
        self._write_fixed()
        self.tables = {}
        for name, cols in (("steps", STEP_COLUMNS), ("weights", WEIGHT_COLUMNS), ("eval", EVAL_COLUMNS),
                           ("events", EVENT_COLUMNS), ("dumps", DUMP_COLUMNS), ("entries", ENTRY_COLUMNS),
                           ("collectives", COLLECTIVE_COLUMNS), ("tensors", TENSOR_COLUMNS)):
            self.tables[name] = [self._create_column(c) for c in cols]
        self.f.swmr_mode = True
        # Starting SWMR reopens every dataset with HDF5's default 1 MiB chunk cache, which then keeps each
        # chunk written until it fills (memory growing with the run); reopen each with room for one chunk.
        self.tables = {name: [self._with_small_cache(ds) for ds in cols] for name, cols in self.tables.items()}
        self.rows = {name: 0 for name in self.tables}
        self.closed = False

    # --- creation ---------------------------------------------------------------------------------------

    def _root_values(self):
        """Each root attribute's value (None: an optional one this file leaves out)."""
        m = self.meta
        rank_table = m.get("rank_table", {})
        return {
            "format": FORMAT_NAME,
            "format_version": FORMAT_VERSION,
            "created": m.get("created", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())),
            "model": m["model"],
            "world_size": self.R,
            "batch_per_rank": self.B,
            "precision": m.get("precision", "O0"),
            "loss_scale": m.get("loss_scale", "none"),
            "data": m.get("data", ""),
            "seed": m.get("seed", 0),
            "sketch_dim": self.K,
            "weight_every": int(m.get("weight_every", 10)),
            "planned_steps": m.get("planned_steps", 0),
            "config": json.dumps(m.get("config", {})),
            "rank_table": rank_table if isinstance(rank_table, str) else json.dumps(rank_table),
            "environment": json.dumps(m.get("environment", {}), ensure_ascii=False),
            "source": m.get("source", "pytorch-ddp"),
            "absent": ",".join(m["absent"]) if m.get("absent") else None,
            # This writer records no /grads/local_fp (the recorder lists it absent): nothing to define.
            "local_fp_version": m.get("local_fp_version"),
        }

    def _write_root(self):
        attrs = self.f.attrs
        values = self._root_values()
        for name, dtype, required in ROOT_ATTRIBUTES:
            value = values[name]
            if value is None and not required:
                continue
            if dtype == "string":  # fixed-length, as long as the value and its NUL
                raw = _fixed(value)
                attrs.create(name, np.array(raw, dtype=h5py.string_dtype("utf-8", len(raw) + 1)))
            else:
                attrs.create(name, np.array(value, dtype=_ATTRIBUTE_DTYPES[dtype]))

    def _strings(self, path, values):
        raws = [_fixed(v) for v in values]
        width = max([len(r) + 1 for r in raws] + [1])
        dt = h5py.string_dtype("utf-8", width)
        self.f.create_dataset(path, data=np.array(raws, dtype=dt) if raws else np.zeros(0, dtype=dt), dtype=dt)

    def _write_fixed(self):
        for g in GROUPS:
            self.f.require_group(g)
        m = self.meta
        self._strings("/params/name", [n for n, _ in m["params"]])
        self._strings("/params/shape", [shape_string(s) for _, s in m["params"]])
        self.f.create_dataset("/params/numel", data=self.numel, dtype="<i8")
        self.f.create_dataset("/params/offset", data=self.offsets, dtype="<i8")
        self._strings("/params/buffer_names", m.get("buffer_names", []))
        cards = m.get("cards", [])
        self.f.create_dataset("/cards/rank", data=np.array([c["rank"] for c in cards], dtype="<i4"), dtype="<i4")
        self.f.create_dataset("/cards/device_id", data=np.array([c.get("device_id", c["rank"]) for c in cards],
                                                                 dtype="<i4"), dtype="<i4")
        self._strings("/cards/device_ip", [c.get("device_ip", "") for c in cards])
        self._strings("/cards/server_id", [c.get("server_id", "") for c in cards])
        self.f.create_dataset("/cards/hbm_total_bytes",
                              data=np.array([c.get("hbm_total_bytes", 0) for c in cards], dtype="<i8"), dtype="<i8")
        self.f.create_dataset("/cards/hbm_used_bytes",
                              data=np.array([c.get("hbm_used_bytes", 0) for c in cards], dtype="<i8"), dtype="<i8")
        compact = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        compact.set_layout(h5py.h5d.COMPACT)
        self.status_complete = self._compact_scalar("/status/complete", np.dtype("u1"), compact)
        self.status_reason = self._compact_scalar("/status/stop_reason", h5py.string_dtype("utf-8", REASON_LEN),
                                                  compact)
        self.status_complete[()] = 0
        self.status_reason[()] = _utf8(_fixed("running", REASON_LEN), REASON_LEN)

    def _compact_scalar(self, path, dtype, dcpl):
        space = h5py.h5s.create(h5py.h5s.SCALAR)
        tid = h5py.h5t.py_create(dtype, logical=True)
        dsid = h5py.h5d.create(self.f.id, path.encode(), tid, space, dcpl=dcpl)
        return h5py.Dataset(dsid)

    def _row_dims(self, row):
        return {SCALAR: (), R: (self.R,), RB: (self.R, self.B), RP: (self.R, self.P),
                RPK: (self.R, self.P, self.K), T: (self.T,)}[row]

    def _create_column(self, spec):
        path, dt, row, deflate = spec
        dtype = _DTYPES[dt]
        dims = self._row_dims(row)
        chunk_dims = [max(int(d), 1) for d in dims]
        row_bytes = dtype.itemsize * int(np.prod(chunk_dims, dtype=np.int64)) if chunk_dims else dtype.itemsize
        rows = int(min(max(_CHUNK_TARGET_BYTES // max(row_bytes, 1), 1), _MAX_CHUNK_ROWS))
        for i in range(len(chunk_dims)):
            if row_bytes <= _MAX_CHUNK_BYTES:
                break
            others = row_bytes // chunk_dims[i]
            chunk_dims[i] = max(1, _MAX_CHUNK_BYTES // others)
            row_bytes = others * chunk_dims[i]
        is_string = dt.startswith("s")
        kw = {}
        if deflate:
            kw["compression"] = "gzip"
            kw["compression_opts"] = 1
            if not is_string:
                kw["shuffle"] = True
        ds = self.f.create_dataset(
            path, shape=(0,) + tuple(int(d) for d in dims), maxshape=(None,) + tuple(max(int(d), 1) for d in dims),
            chunks=(rows,) + tuple(chunk_dims), dtype=h5py.string_dtype("utf-8", dtype.itemsize) if is_string
            else dtype, **kw)
        return ds

    def _with_small_cache(self, ds):
        nbytes = int(np.prod(ds.chunks, dtype=np.int64)) * ds.dtype.itemsize + 4096
        dapl = h5py.h5p.create(h5py.h5p.DATASET_ACCESS)
        dapl.set_chunk_cache(13, nbytes, 1.0)
        name = ds.name.encode()
        ds.id.close()
        return h5py.Dataset(h5py.h5d.open(self.f.id, name, dapl=dapl))

    # --- appending ----------------------------------------------------------------------------------------

    def _append(self, table, values):
        """values: one array per column, in column order (key last), each of the column's row shape."""
        cols = self.tables[table]
        row = self.rows[table]
        for ds, v in zip(cols, values):
            ds.resize(row + 1, axis=0)
            ds[row] = v
            ds.flush()
        self.rows[table] = row + 1

    def append_step(self, rec):
        """rec: dict with step, epoch, lr and per-rank arrays (see STEP_COLUMNS): loss, accuracy,
        loss_scale, step_ms, compute_ms, comm_ms, overflow, skipped, state, sample_fp (R), sample_ids (R, B),
        buffer_fp (R),
        local_norm, local_max, local_sum, nonfinite, overflow_count, underflow_count, synced_norm,
        synced_sum, synced_fp (R, P), sketch (R, P, K)."""
        values = []
        for path, dt, row, _ in STEP_COLUMNS:
            name = path.rsplit("/", 1)[1]
            dims = self._row_dims(row)
            v = rec.get(name)
            if v is None:
                v = np.full(dims, -1 if path in PADDED else 0, dtype=_DTYPES[dt])
            values.append(np.asarray(v, dtype=_DTYPES[dt]).reshape(dims))
        self._append("steps", values)

    def append_weights(self, step, fp, norm, buffer_fp, buffer_drift):
        self._append("weights", [np.asarray(fp, "<u8").reshape(self.R, self.P),
                                 np.asarray(norm, "<f4").reshape(self.R, self.P),
                                 np.asarray(buffer_fp, "<u8").reshape(self.R),
                                 np.asarray(buffer_drift, "<f4").reshape(self.R), np.int64(step)])

    def append_eval(self, step, accuracy, loss):
        self._append("eval", [np.asarray(accuracy, "<f4").reshape(self.R), np.asarray(loss, "<f4").reshape(self.R),
                              np.int64(step)])

    def append_event(self, step, rank, severity, code, message, peer=-1, peer_gone=False):
        """peer, peer_gone: for a TIMEOUT, the rank `rank` waited for (one event per missing rank) and
        whether its node process is gone; -1 and False otherwise."""
        self._append("events", [np.int32(rank), np.uint8(severity),
                                _utf8(_fixed(code, EVENT_CODE_LEN), EVENT_CODE_LEN),
                                _utf8(_fixed(message, EVENT_MESSAGE_LEN), EVENT_MESSAGE_LEN), np.int32(peer),
                                np.uint8(1 if peer_gone else 0), np.int64(step)])

    @property
    def steps_written(self):
        return self.rows["steps"]

    def close(self, reason="completed"):
        if self.closed:
            return
        self.status_reason[()] = _utf8(_fixed(reason, REASON_LEN), REASON_LEN)
        self.status_reason.flush()
        self.status_complete[()] = 1
        self.status_complete.flush()
        self.f.close()
        self.closed = True
