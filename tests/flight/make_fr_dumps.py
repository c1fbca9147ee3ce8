"""Writes PyTorch flight-recorder dumps the way PyTorch's C++ writer does, for the tests of the flight-recorder
import (no GPU here, and Debian's torch 1.13 has no flight recorder). The format is described in
/work/notes/formats.md, section 3, which draws on these pytorch/pytorch sources:
torch/csrc/distributed/c10d/FlightRecorderDetail.hpp (getCollectiveTrace, getPgConfig, getPgStatus, dump_dict,
dump_json), the "2.7" and "2.4" copies of FlightRecorder.hpp, TraceUtils.h (pickle_str, new_dict, new_list,
ranks_str) and torch/csrc/jit/serialization/pickler.cpp. The torch_npu details come from Ascend/pytorch
torch_npu/csrc/distributed/TraceUtils.h and its test_flight_recorder.py.

What is written:

- one file per rank, OUT_DIR/<prefix><rank> with no extension (`c10::str(namePrefix, rank)`); the rank appears
  only in the file name;
- a pickle, protocol 2, byte for byte what torch::jit::Pickler writes (tag_aggregates=false). This is not what
  Python's pickle.dumps writes. The C++ Pickler memoizes strings by value, so each string is written once
  and repeats are BINGETs. It gives a container a BINPUT only if the container is shared (IValue
  use_count > 1), and writes that BINPUT after the closing SETITEMS/APPENDS, never after EMPTY_DICT. The
  `frames` dicts are shared between entries, so they are written once and BINGET after that. Unlike the
  "2.10" copy, the "2.4"/"2.7" writers pass a named top-level dict to pickle_str, which makes that dict
  shared too, so it gets a BINPUT just before STOP (and so does torch_npu's hccl_comm_state dict).
  With --encoder python, Python's pickle.dumps(obj, protocol=2) writes the same data in its own layout;
- top level: version, pg_config {"0": {name, desc "default_pg", ranks "[0, 1, ...]"}}, comm_lib_version
  "2.21.5" ("2.10") or nccl_version ("2.7") or neither ("2.4"), pg_status {"0": last_enqueued/started/
  completed_collective}, consistent with the entries, then entries (oldest first);
- a data-parallel job: --steps training steps, each issuing --per-step all_reduce collectives (DDP buckets)
  in one default process group; collective_seq_id == op_id counts collectives per rank from 1, record_id counts
  ring-buffer records from 0; entry keys as getCollectiveTrace inserts them (thread_name/thread_id only in
  "2.10"), duration_ms only with --timing and only on completed entries, state "completed" (retired) or
  "started" (not retired, time_discovered_completed_ns None);
- --buffer M keeps only each rank's newest M entries (the ring buffer), so record_id may start above 0;
- --stack-depth K: K frames per entry instead of 2, enough distinct ones past memo id 255 to bring in
  LONG_BINPUT/LONG_BINGET (try 100);
- --format json: the string _dump_nccl_trace_json returns (nlohmann: keys sorted, no spaces). process_group
  is a list, there are no frames, time_discovered_* is 0 instead of null, pg_status values are strings,
  "entries" is left out if empty, and the comm-state map is present (empty for NCCL);
- --npu: torch_npu's HCCL port: version "2.4" unless --version says otherwise, profiling names "hccl:...",
  pg_config key "group_name_0" with desc "", timeout_ms 3636000, hccl_comm_state {"comm0": {"status": "ok"}},
  and the default prefix hccl_trace_rank_.

Variants the writers and PyTorch's analyser tests produce:

- --prefix P: the file names (nccl_trace_rank_, comm_lib_trace_rank_, trace_ as torch_npu's tests set it,
  rank_, hccl_trace_rank_, or "" for bare numbers 0, 1, ...); --hosts puts a host name in front of each
  name (node<rank // 2>., two ranks per host, as jobs writing to one shared folder do);
- --py-traceback: torch_npu's <prefix><rank>_py_traceback beside each dump, the text
  ProcessGroupHCCL::dumpPythonTraceback writes ('pid: N', then per thread 'thread <...>:' and
  traceback.format_list of its stack, outermost first); the rank that never arrived (hang) sleeps in
  /job/data.py line 40, the others wait in /job/train.py line 91;
- --unnamed: profiling_name "" (torch_npu records none for most collectives; the op is frames[0].name);
- --version 2.4 to 2.10: the copies of the writer in the sources are 2.4 (no library version), 2.7
  (nccl_version) and 2.10 (comm_lib_version, thread_name, thread_id); 2.5/2.6 are written as 2.4, 2.8/2.9 as
  2.10 without the thread keys. torch_npu writes hccl_comm_state, PyTorch's JSON nccl_comm_state;
- --dtype: the c10::toString name of the tensors' dtype (Float, BFloat16, Half);
- --pg-list: process_group written as a list, not a tuple;
- --p2p: each step starts with a batch_isend_irecv between ranks 0 and 1, as in torch_npu's
  test_batched_send_recv: 'nccl:send 1->0' on rank 1 and 'nccl:recv 0<-1' on rank 0 (is_p2p, collective_seq_id
  0, p2p_seq_id counting from 1, state scheduled, no duration), then 'nccl:coalesced' with empty sizes and
  dtypes, completed; the other ranks skip it;
- --analyser-style: entries as PyTorch's own analyser tests build them (test_fr_analysis.py
  create_one_event): collective_seq_id and p2p_seq_id as strings, input/output_dtypes one string
  ("float32"), time_created_ns 0, the entry's process_group desc "default" where pg_config says "default_pg";
- --base-ns T: the clock of rank 0's first collective (default 2025-12-03), for dumps of another time.

Scenarios: the fault strikes rank R (--rank, default 1) at step STEP (--at, default steps-3). "Waiting" means
that the rank enqueued STEP's first collective, which shows as 'started' and was never completed. The dumps
were written when the job timed out.

- clean: every collective of every step completed on every rank;
- hang: the others wait at STEP; R never enqueued it (its entries stop after step STEP-1), a rank that never
  arrived;
- missing-rank: as hang, but R's file is not written at all;
- size-mismatch / op-mismatch / dtype-mismatch: at STEP's first collective everyone waits, but R's differs:
  its sizes are 1024 elements short, or it issued all_gather (output N x input), or its dtypes are Half;
- behind: R stopped after step STEP-5, its last collective completed long ago; the others wait at STEP;
- silent-size-mismatch: at STEP's first collective R's sizes are 1024 elements short, but every rank completed
  it and went on to the end (the library did not hang: the result was wrong, silently).

Broken files for the importer's error tests, applied to rank 0's file unless said otherwise (never load them):
hostile-global (a hand-made GLOBAL os.system + REDUCE that would run `touch OUT_DIR/pwned`), hostile-reduce
(pickle.dumps of an object whose __reduce__ is (os.system, ('touch OUT_DIR/pwned',)), placed in entries),
truncated (cut at half), not-a-dict (the top level is the entries list), bad-version ("two"),
missing-entries-key, ragged-versions (rank 1 written by the other writer, "2.4" vs "2.10"), bad-ranks
(pg_config ranks "[0, 1, x]"), no-rank-in-name (rank 0's file renamed <prefix>abc). The hostile files are
always pickles, even with --format json.

    /usr/bin/python3 tests/flight/make_fr_dumps.py OUT_DIR [--ranks 4] [--steps 10] [--per-step 3]
        [--prefix nccl_trace_rank_] [--hosts] [--version 2.4..2.10] [--format pickle|json] [--npu] [--timing]
        [--buffer 2000] [--encoder torch|python] [--stack-depth 2] [--py-traceback] [--unnamed]
        [--dtype Float] [--pg-list] [--p2p] [--analyser-style] [--base-ns NS]
        [--scenario clean|hang|missing-rank|size-mismatch|op-mismatch|dtype-mismatch|behind|
                    silent-size-mismatch] [--at STEP] [--rank R]
        [--broken hostile-global|hostile-reduce|truncated|not-a-dict|bad-version|missing-entries-key|
                  ragged-versions|bad-ranks|no-rank-in-name]
"""

import argparse
import json
import os
import pickle
import shlex
import struct

SCENARIOS = ["clean", "hang", "missing-rank", "size-mismatch", "op-mismatch", "dtype-mismatch", "behind",
             "silent-size-mismatch"]
VERSIONS = ["2.4", "2.5", "2.6", "2.7", "2.8", "2.9", "2.10"]
BROKEN = ["hostile-global", "hostile-reduce", "truncated", "not-a-dict", "bad-version", "missing-entries-key",
          "ragged-versions", "bad-ranks", "no-rank-in-name"]

# Timeline (epoch ns). A step takes about 1.25 s, and DDP's buckets go out about 41 ms apart in the backward.
# Ranks enqueue a few microseconds apart. The watchdog notices a start about 1.2 ms after the enqueue.
BASE_NS = 1764750000000000000
STEP_NS = 1_250_000_000
BUCKET_NS = 41_000_000
RANK_JITTER_NS = 1_700
START_LAG_NS = 1_200_000
# One flat gradient bucket per all_reduce; DDP's last bucket is the small leftover.
BUCKET_SHAPES = [[2359296], [1180160], [4106], [590080], [262656], [1024]]
BUCKET_MS = [3.412, 1.733, 0.061, 0.874, 0.402, 0.029]  # kernel time per bucket, with --timing
THREAD_ID_BASE = 139872081643328  # std::thread::id prints as the pthread_t value on libstdc++

C10D_PY = "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py"
# Shared between entries on purpose: symbolize() gives one dict per distinct frame, and each entry's frames
# list refers to it. So the C++ Pickler memoizes it, and the Python encoder does too.
ALL_REDUCE_FRAME = {"name": "all_reduce", "filename": C10D_PY, "line": 2050}
ALL_GATHER_FRAME = {"name": "all_gather", "filename": C10D_PY, "line": 3203}
TRAIN_FRAME = {"name": "train_step", "filename": "/job/train.py", "line": 88}
P2P_FRAME = {"name": "batch_isend_irecv", "filename": C10D_PY, "line": 2750}
DEEP_FRAMES = {}  # (bucket, depth) -> the one dict for that frame, made on first use


def parse_args():
    ap = argparse.ArgumentParser(description="Write PyTorch flight-recorder dumps (see the module docstring).")
    ap.add_argument("out")
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--per-step", type=int, default=3, help="all_reduce collectives (DDP buckets) per step")
    ap.add_argument("--prefix", default=None, help="default nccl_trace_rank_ (hccl_trace_rank_ with --npu)")
    ap.add_argument("--version", default=None, choices=VERSIONS, help="default 2.10 (2.4 with --npu)")
    ap.add_argument("--format", default="pickle", choices=["pickle", "json"])
    ap.add_argument("--npu", action="store_true", help="torch_npu (HCCL) style dumps")
    ap.add_argument("--timing", action="store_true", help="TORCH_NCCL_ENABLE_TIMING: duration_ms on completed ones")
    ap.add_argument("--buffer", type=int, default=2000, help="ring-buffer size: newest entries kept per rank")
    ap.add_argument("--encoder", default="torch", choices=["torch", "python"],
                    help="torch: torch::jit::Pickler's byte layout; python: pickle.dumps(protocol=2)")
    ap.add_argument("--stack-depth", type=int, default=2, help="frames per entry (2: all_reduce, train_step)")
    ap.add_argument("--scenario", default="clean", choices=SCENARIOS)
    ap.add_argument("--at", type=int, default=None, help="step the fault strikes (default steps-3)")
    ap.add_argument("--rank", type=int, default=1, help="the rank the fault strikes")
    ap.add_argument("--broken", default="", choices=[""] + BROKEN)
    ap.add_argument("--hosts", action="store_true", help="a host name in front of each file name")
    ap.add_argument("--py-traceback", action="store_true", help="torch_npu's <prefix><rank>_py_traceback files")
    ap.add_argument("--unnamed", action="store_true", help='profiling_name "" (torch_npu)')
    ap.add_argument("--dtype", default="Float", help="c10::toString dtype name of the tensors")
    ap.add_argument("--pg-list", action="store_true", help="process_group a list, not a tuple")
    ap.add_argument("--p2p", action="store_true", help="a send/recv pair and a coalesced entry per step")
    ap.add_argument("--analyser-style", action="store_true", help="entries as test_fr_analysis.py builds them")
    ap.add_argument("--base-ns", type=int, default=None, help="rank 0's first enqueue time, ns since the epoch")
    a = ap.parse_args()
    a.version = a.version or ("2.4" if a.npu else "2.10")
    a.prefix = a.prefix if a.prefix is not None else ("hccl_trace_rank_" if a.npu else "nccl_trace_rank_")
    a.at = a.steps - 3 if a.at is None else a.at
    if a.base_ns is not None:
        global BASE_NS
        BASE_NS = a.base_ns
    if a.ranks < 2 or a.steps < 1 or a.per_step < 1 or a.buffer < 1 or a.stack_depth < 2:
        ap.error("need --ranks, --stack-depth >= 2 and --steps, --per-step, --buffer >= 1")
    if a.scenario != "clean" and not (0 <= a.at < a.steps and 0 <= a.rank < a.ranks):
        ap.error("--at must be a step (0..steps-1) and --rank a rank (0..ranks-1)")
    return a


# ---- what each rank did ---------------------------------------------------------------------------------


def seq_of(a, step, bucket):
    """collective_seq_id of a bucket's all_reduce: one per collective, counted from 1 on every rank."""
    return step * a.per_step + bucket + 1


def collective(a, step, bucket, state, fault=""):
    """One collective as a rank saw it; fault changes what rank R issued (size, op or dtype)."""
    shape = list(BUCKET_SHAPES[bucket % len(BUCKET_SHAPES)])
    op, out_shape, dtype = "all_reduce", list(shape), a.dtype
    if fault == "size":
        shape = out_shape = [shape[0] - 1024]
    elif fault == "op":
        op, out_shape = "all_gather", [shape[0] * a.ranks]  # all_gather_into_tensor: N x input
    elif fault == "dtype":
        dtype = "Half"
    return {"step": step, "bucket": bucket, "seq": seq_of(a, step, bucket), "op": op,
            "in": shape, "out": out_shape, "dtype": dtype, "state": state}


def rank_history(a, rank):
    """Every collective this rank enqueued, oldest first, before the ring buffer drops any."""
    faulty = a.scenario != "clean" and rank == a.rank
    if a.scenario == "silent-size-mismatch":  # everyone completes every step; R's one collective differs
        return [collective(a, s, b, "completed", "size" if faulty and (s, b) == (a.at, 0) else "")
                for s in range(a.steps) for b in range(a.per_step)]
    done_steps, waits = a.steps, False
    if a.scenario != "clean":
        done_steps, waits = a.at, True
    fault = ""
    if faulty:
        if a.scenario in ("hang", "missing-rank"):
            waits = False  # it never arrived at STEP's collective
        elif a.scenario == "behind":
            done_steps, waits = max(a.at - 4, 0), False  # last completed step: STEP-5
        else:
            fault = a.scenario.split("-")[0]
    ops = []
    for s in range(done_steps):
        ops += p2p_ops(a, rank, s)
        ops += [collective(a, s, b, "completed") for b in range(a.per_step)]
    if waits:
        ops.append(collective(a, a.at, 0, "started", fault))
    return ops


def p2p_ops(a, rank, step):
    """--p2p: batch_isend_irecv between ranks 0 and 1 at the start of a step: the op itself (scheduled: its
    state is not tracked), then the coalesced entry that carries the group's state and timing."""
    if not a.p2p or rank > 1:
        return []
    name = "recv 0<-1" if rank == 0 else "send 1->0"
    base = {"step": step, "bucket": 0, "seq": 0, "p2p_seq": step + 1, "in": [64], "out": [64],
            "dtype": a.dtype, "p2p": True, "offset_ns": -5_000_000}
    return [dict(base, op=name, state="scheduled"),
            dict(base, op="coalesced", state="completed", in_sizes=[], out_sizes=[], offset_ns=-4_000_000)]


def pg_status(ops):
    """ProcessGroupStatus as the watchdog leaves it: -1 until something is enqueued/started/completed."""
    def last(states):
        seqs = [o["seq"] for o in ops if o["state"] in states and not o.get("p2p")]
        return seqs[-1] if seqs else -1
    return {"last_enqueued_collective": last(("started", "completed")),
            "last_started_collective": last(("started", "completed")),
            "last_completed_collective": last(("completed",))}


# ---- the dump as getCollectiveTrace / dump_dict build it ------------------------------------------------


def float32(x):
    """duration_ms is a C++ float, widened to double when pickled or put in JSON."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


def frames(a, op):
    """The stack at enqueue, innermost first: a fresh list of shared frame dicts. --stack-depth K > 2 puts
    K-2 frames in between, different for each bucket, so that a dump holds more than 256 memoized strings and
    dicts and the Pickler has to switch to LONG_BINPUT / LONG_BINGET."""
    inner = ALL_GATHER_FRAME if op["op"] == "all_gather" else ALL_REDUCE_FRAME
    if op.get("p2p"):
        inner = P2P_FRAME
    middle = []
    for i in range(a.stack_depth - 2):
        key = (op["bucket"], i)
        if key not in DEEP_FRAMES:
            DEEP_FRAMES[key] = {"name": "hook_%d" % i, "filename": "/job/model/block_%d.py" % op["bucket"],
                                "line": 100 + i}
        middle.append(DEEP_FRAMES[key])
    return [inner] + middle + [TRAIN_FRAME]


def entry(a, version, rank, record_id, op):
    """One entry; keys in the order getCollectiveTrace inserts them, fresh lists (never shared) for sizes."""
    pg_name, pg_desc = ("group_name_0", "") if a.npu else ("0", "default_pg")
    if a.analyser_style:
        pg_desc = "default"  # create_one_event's pg_info, while pg_config says default_pg
    created = (BASE_NS + op["step"] * STEP_NS + op["bucket"] * BUCKET_NS + rank * RANK_JITTER_NS
               + op.get("offset_ns", 0))
    started = created + START_LAG_NS + rank * 310
    ms = BUCKET_MS[op["bucket"] % len(BUCKET_MS)] + 0.013 * rank + 0.002 * (op["step"] % 5)
    done = op["state"] == "completed"
    pg = [pg_name, pg_desc] if a.pg_list else (pg_name, pg_desc)
    e = {"frames": frames(a, op), "record_id": record_id, "pg_id": 0, "process_group": pg}
    if version == "2.10":
        e["thread_name"] = "pt_main_thread"
        e["thread_id"] = str(THREAD_ID_BASE + rank * 0x1000000)
    seq, p2p_seq = (0, op["p2p_seq"]) if op.get("p2p") else (op["seq"], 0)
    if a.analyser_style:
        seq, p2p_seq = str(seq), str(p2p_seq)
    backend = "hccl:" if a.npu else "nccl:"
    e.update({"collective_seq_id": seq, "p2p_seq_id": p2p_seq, "op_id": op["seq"],
              "profiling_name": "" if a.unnamed else backend + op["op"],
              "time_created_ns": 0 if a.analyser_style else created})
    if a.timing and done:
        e["duration_ms"] = float32(ms)
    in_sizes = op.get("in_sizes", [list(op["in"])])
    out_sizes = op.get("out_sizes", [list(op["out"])])
    dtypes = [op["dtype"]] * len(in_sizes)
    if a.analyser_style:
        dtypes = "float32"
    e.update({"input_sizes": in_sizes, "input_dtypes": dtypes,
              "output_sizes": out_sizes, "output_dtypes": dtypes if a.analyser_style else [op["dtype"]] * len(out_sizes),
              "state": op["state"],
              "time_discovered_started_ns": started if op["state"] != "scheduled" else None,
              "time_discovered_completed_ns": started + int(ms * 1e6) + 90_000 if done else None,
              "retired": done, "timeout_ms": 3636000 if a.npu else 600000, "is_p2p": bool(op.get("p2p"))})
    return e


def make_dump(a, rank, version):
    """The top-level dict in dump_dict's insertion order (c10::Dict keeps insertion order)."""
    pg_name, pg_desc = ("group_name_0", "") if a.npu else ("0", "default_pg")
    history = rank_history(a, rank)
    first_kept = max(len(history) - a.buffer, 0)  # the ring buffer keeps the newest entries
    ranks = "[" + ", ".join(str(r) for r in range(a.ranks)) + "]"  # ranks_str
    d = {"version": version, "pg_config": {pg_name: {"name": pg_name, "desc": pg_desc, "ranks": ranks}}}
    if version in ("2.8", "2.9", "2.10"):
        d["comm_lib_version"] = "2.21.5"
    elif version == "2.7":
        d["nccl_version"] = "2.21.5"
    d["pg_status"] = {"0": pg_status(history)}
    d["entries"] = [entry(a, version, rank, i, op) for i, op in enumerate(history) if i >= first_kept]
    if a.npu:
        d["hccl_comm_state"] = {"comm0": {"status": "ok"}}
    elif a.format == "pickle" and version in ("2.8", "2.9", "2.10"):
        d["nccl_comm_state"] = {}  # dump_dict inserts the map when the caller passes one
    return d


def py_traceback(a, rank):
    """What ProcessGroupHCCL::dumpPythonTraceback writes: the pid, then each thread's stack as
    traceback.format_list gives it (outermost frame first)."""
    def frame(path, line, func, code):
        return '  File "%s", line %d, in %s\n    %s\n' % (path, line, func, code)
    never_arrived = a.scenario in ("hang", "missing-rank") and rank == a.rank
    main = frame("/job/train.py", 120, "<module>", "main()") + frame("/job/train.py", 104, "main", "train_step(batch)")
    if never_arrived:
        main += frame("/job/train.py", 80, "train_step", "batch = loader.next_batch()")
        main += frame("/job/data.py", 40, "next_batch", "time.sleep(30)")
    else:
        main += frame("/job/train.py", 91, "train_step", "loss_value = loss.item()")
    watchdog = frame("/usr/lib/python3.10/threading.py", 973, "_bootstrap", "self._bootstrap_inner()")
    watchdog += frame("/usr/lib/python3.10/threading.py", 1016, "_bootstrap_inner", "self.run()")
    return ("pid: %d\n" % (4100 + rank) + "thread <_MainThread(MainThread, started %d)>:\n" % (THREAD_ID_BASE + rank)
            + main + "thread <Thread(Thread-1 (_pin_memory_loop), started daemon %d)>:\n" % (THREAD_ID_BASE + 7 + rank)
            + watchdog)


def json_form(d, npu):
    """What dump_json returns: nlohmann's std::map sorts the keys, dump() puts no spaces in."""
    j = {k: v for k, v in d.items() if k != "entries"}
    j["pg_status"] = {g: {k: str(v) for k, v in s.items()} for g, s in d["pg_status"].items()}
    entries = []
    for e in d.get("entries", []):
        e = {k: v for k, v in e.items() if k != "frames"}
        e["process_group"] = list(e["process_group"])
        for k in ("time_discovered_started_ns", "time_discovered_completed_ns"):
            e[k] = 0 if e[k] is None else e[k]
        entries.append(e)
    if entries:
        j["entries"] = entries
    if not npu:
        j["nccl_comm_state"] = {}  # the map is passed (has_value) even when NCCL has nothing to say
    return json.dumps(j, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


# ---- torch::jit::Pickler, protocol 2 --------------------------------------------------------------------


class TorchPickler:
    """pickler.cpp's opcodes and memo rules for the IValues a flight-recorder dump holds."""

    def __init__(self, shared):
        self.out = bytearray()
        self.shared = shared  # ids of containers with IValue use_count > 1
        self.memo_id = 0  # one counter for strings and containers, as in pushNextBinPut
        self.strings = {}
        self.containers = {}

    def dumps(self, obj):
        self.out += b"\x80\x02"
        self.push(obj)
        self.out += b"."
        return bytes(self.out)

    def binput(self):
        self.out += b"q" + bytes([self.memo_id]) if self.memo_id < 256 else b"r" + struct.pack("<I", self.memo_id)
        self.memo_id += 1
        return self.memo_id - 1

    def binget(self, i):
        self.out += b"h" + bytes([i]) if i < 256 else b"j" + struct.pack("<I", i)

    def push(self, v):
        """pushIValue: shared containers by pointer, written once then BINGET; BINPUT after they close."""
        if isinstance(v, (dict, list, tuple)) and id(v) in self.shared:
            if id(v) in self.containers:
                return self.binget(self.containers[id(v)])
            self.push_impl(v)
            self.containers[id(v)] = self.binput()
        else:
            self.push_impl(v)

    def push_impl(self, v):
        if v is None:
            self.out += b"N"
        elif isinstance(v, bool):  # before int: bool is an int in Python
            self.out += b"\x88" if v else b"\x89"
        elif isinstance(v, int):
            self.push_int(v)
        elif isinstance(v, float):
            self.out += b"G" + struct.pack(">d", v)
        elif isinstance(v, str):
            self.push_string(v)
        elif isinstance(v, dict):  # EMPTY_DICT MARK k v ... SETITEMS, even when empty
            self.out += b"}("
            for k, x in v.items():
                self.push(k)
                self.push(x)
            self.out += b"u"
        elif isinstance(v, list):
            self.out += b"]("
            for x in v:
                self.push(x)
            self.out += b"e"
        elif isinstance(v, tuple):
            self.push_tuple(v)
        else:
            raise TypeError("no IValue for %r" % type(v))

    def push_int(self, n):
        if 0 <= n <= 0xFF:
            self.out += b"K" + struct.pack("<B", n)
        elif 0 <= n <= 0xFFFF:
            self.out += b"M" + struct.pack("<H", n)
        elif -2**31 <= n < 2**31:
            self.out += b"J" + struct.pack("<i", n)
        else:  # always 8 bytes, unlike Python's minimal LONG1
            self.out += b"\x8a\x08" + struct.pack("<q", n)

    def push_string(self, s):
        """Strings are memoized by value: written once, BINGET after that."""
        if s in self.strings:
            return self.binget(self.strings[s])
        b = s.encode("utf-8")
        self.out += b"X" + struct.pack("<I", len(b)) + b
        self.strings[s] = self.binput()

    def push_tuple(self, t):
        if len(t) == 0:
            self.out += b")"
            return
        mark = len(t) > 3
        self.out += b"(" if mark else b""
        for x in t:
            self.push(x)
        self.out += b"t" if mark else {1: b"\x85", 2: b"\x86", 3: b"\x87"}[len(t)]


def shared_containers(obj, held=()):
    """Containers referred to more than once, as IValue use_count > 1 would find them, plus those a live C++
    local still holds while pickle_str runs (held)."""
    seen, shared = set(), {id(h) for h in held}
    def walk(v):
        if not isinstance(v, (dict, list, tuple)):
            return
        if id(v) in seen:
            shared.add(id(v))
            return
        seen.add(id(v))
        for x in (list(v.keys()) + list(v.values()) if isinstance(v, dict) else v):
            walk(x)
    walk(obj)
    return shared


def encode_pickle(d, encoder):
    if encoder == "python":
        return pickle.dumps(d, protocol=2)
    # "2.4"/"2.7" writers hand pickle_str a named dict (and torch_npu keeps per_comm_dict alive), so both
    # are shared; the "2.10" writer passes dump_dict()'s temporary.
    held = []
    if isinstance(d, dict) and d.get("version") != "2.10":
        held = [d] + [d[k] for k in ("hccl_comm_state", "nccl_comm_state") if k in d]
    return TorchPickler(shared_containers(d, held)).dumps(d)


def encode(a, d):
    return json_form(d, a.npu).encode("utf-8") if a.format == "json" else encode_pickle(d, a.encoder)


# ---- broken files ---------------------------------------------------------------------------------------


class Hostile:
    """Pickles as a call to os.system; only ever passed to pickle.dumps, which does not call it."""

    def __init__(self, cmd):
        self.cmd = cmd

    def __reduce__(self):
        return (os.system, (self.cmd,))


def hostile_global(cmd):
    """A dump-shaped pickle whose version is GLOBAL os.system + REDUCE, built by hand."""
    def s(text):
        b = text.encode()
        return b"X" + struct.pack("<I", len(b)) + b
    return (b"\x80\x02}(" + s("version") + b"q\x00" + b"cos\nsystem\nq\x01" + s(cmd) + b"q\x02\x85R"
            + s("entries") + b"q\x03](eu.")


def broken_bytes(a, d):
    """Rank 0's file for --broken, or None where the break is not in rank 0's content."""
    cmd = "touch " + shlex.quote(os.path.join(os.path.abspath(a.out), "pwned"))
    if a.broken == "hostile-global":
        return hostile_global(cmd)
    if a.broken == "hostile-reduce":
        d["entries"].append(Hostile(cmd))
        return pickle.dumps(d, protocol=2)
    if a.broken == "truncated":
        data = encode(a, d)
        return data[:len(data) // 2]
    if a.broken == "not-a-dict":
        if a.format == "json":  # the JSON entries, without the object around them
            return json.dumps(json.loads(json_form(d, a.npu))["entries"], separators=(",", ":")).encode()
        return encode_pickle(d["entries"], a.encoder)
    if a.broken == "bad-version":
        d["version"] = "two"
    elif a.broken == "missing-entries-key":
        del d["entries"]
    elif a.broken == "bad-ranks":
        for cfg in d["pg_config"].values():
            cfg["ranks"] = "[0, 1, x]"
    return encode(a, d)


def rank_version(a, rank):
    if a.broken == "ragged-versions" and rank == 1:
        return "2.4" if a.version != "2.4" else "2.10"  # rank 1 ran another torch build
    return a.version


def main():
    a = parse_args()
    os.makedirs(a.out, exist_ok=True)
    for rank in range(a.ranks):
        if a.scenario == "missing-rank" and rank == a.rank:
            continue
        d = make_dump(a, rank, rank_version(a, rank))
        host = "node%d." % (rank // 2) if a.hosts else ""
        path = os.path.join(a.out, host + a.prefix + str(rank))  # c10::str(namePrefix, rank)
        if a.py_traceback:  # '{path}{rank}_py_traceback', written before the dump
            with open(path + "_py_traceback", "w") as f:
                f.write(py_traceback(a, rank))
        data = broken_bytes(a, d) if a.broken and rank == 0 else encode(a, d)
        with open(path, "wb") as f:
            f.write(data)
        if a.broken == "no-rank-in-name" and rank == 0:
            os.replace(path, os.path.join(a.out, a.prefix + "abc"))
    fault = "" if a.scenario == "clean" else " at step %d on rank %d" % (a.at, a.rank)
    print("%s: %d ranks, %s%s, version %s, %s%s" % (a.out, a.ranks, a.scenario, fault, a.version, a.format,
                                                   ", broken " + a.broken if a.broken else ""))


if __name__ == "__main__":
    main()
