"""A PyTorch DDP job records itself into a RankSight run file.

    from ranksight.ddp import Recorder
    ddp = DistributedDataParallel(model)
    rec = Recorder(ddp, "runs/job.h5")
    for batch in loader:
        ...; loss.backward(); opt.step()
        rec.step(loss=loss.item(), accuracy=acc)   # every rank, after the optimizer step
    rec.close()

Built on every rank after wrapping and before the first backward, the recorder installs a DDP communication
hook that wraps the user's own (hook=, default DDP's mean all-reduce): before the inner hook it takes each
parameter's local gradient statistics from the bucket, in the future's .then() the synced ones. Parameters
that never reach a bucket (left out of DDP, unused) are recorded from p.grad at step(): their "synced"
gradient is whatever p.grad holds, which is exactly the bug to see. Rank 0 gathers each step's statistics
(one dist.gather of one packed tensor) and appends one row to a SWMR run file that RankSight follows live.

The job can also act on RankSight's verdict while it runs:

    rec = Recorder(ddp, "runs/job.h5", on_finding="raise", check_every=10)
    try:
        for batch in loader: ...; rec.step(loss=loss.item())
    except RankSightAlert as alert:        # every rank, at the same step
        print(alert.cause, alert.step, alert.ranks, alert.finding["evidence"])

Rank 0 runs `ranksight-cli watch RUN --stdin-sync --json` as a child (found from watch_cli=, $RANKSIGHT_CLI or
PATH). Every check_every steps, in step(), rank 0 finishes the step's gather (the file then holds every step up to
this one), asks the child for its verdict, and all ranks meet in a one-element all-reduce of the answer: every
rank learns it at the same step, so none is left waiting in a collective. A finding the diagnosis can name from
the rows written reaches the job at the first check after its row: at most check_every - 1 steps later.
on_finding="raise": every rank closes the recorder (the file is complete, its stop reason "alert: CAUSE at step
N") and raises RankSightAlert; "warn": a RankSightWarning, once; a callable: called on every rank with the
finding (a dict, as `watch --json` prints it, plus at_step). After "warn" or a callable the job goes on and the
checks stop. A watch that fails (an unreadable file, no answer within check_timeout seconds) ends the checks with
a warning; it never stops or hangs the job.
"""

import atexit
import ctypes
import os
import platform
import socket
import time
import warnings

import numpy as np
import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

from .gradstats import GradStats, fingerprint
from .runfile import RunFileWriter
from .watch import RankSightAlert, RankSightWarning, WatchChild, find_cli, finding_line

_MASK = (1 << 64) - 1

# The one-element verdict every rank all-reduces (MAX) at a check: rank 0's answer reaches them all at once.
_GO_ON, _CHECKS_END, _FOUND = 0, 1, 2

def _signed64(u):
    return u - (1 << 64) if u >= (1 << 63) else u


# DDP's own hooks whose synced gradient is not the mean of the local ones (a low-rank approximation, or the
# gradients rounded to 16 bits before the sum): diagnosis then does not compare synced sums with local ones.
_LOSSY_HOOKS = {"powerSGD_hook", "batched_powerSGD_hook", "fp16_compress_hook", "bf16_compress_hook",
                "fp16_compress_wrapper", "bf16_compress_wrapper"}


def _hook_info(hook):
    """(name, lossy) of a communication hook: DDP's own by name (wrappers keep their inner hook's), a user's
    own hook as its name and not known to be lossy."""
    name = getattr(hook, "__name__", None) or getattr(getattr(hook, "func", None), "__name__", None) or repr(hook)
    qual = getattr(hook, "__qualname__", "") or ""
    lossy = name in _LOSSY_HOOKS or any(w in qual for w in ("fp16_compress_wrapper", "bf16_compress_wrapper"))
    return name, lossy


class Recorder:
    """Records a DDP job (see the module's doc). Every rank builds one, with the same arguments; rank 0 writes
    `path`.

    on_finding: None (record only), "raise", "warn" or a callable taking the finding dict; with it every
    check_every steps the job learns RankSight's verdict over the steps written (see the module's doc).
    fail_on: which findings count, as `ranksight-cli watch --fail-on`: "any", causes ("grad-sum,eval-mode" or a
    list) or a dimension (numerics, parallel, data, environment). watch_cli: the ranksight-cli to run (default
    $RANKSIGHT_CLI, then PATH). check_timeout: seconds rank 0 waits for one verdict before the checks end."""

    def __init__(self, ddp, path, weight_every=10, sketch_dim=16, hook=None, scaler=None, state=None,
                 batch_size=0, model_name=None, config=None, planned_steps=0, on_finding=None, check_every=10,
                 fail_on="any", watch_cli=None, check_timeout=60.0):
        if not dist.is_initialized():
            raise RuntimeError("ranksight.ddp.Recorder: torch.distributed is not initialised")
        if on_finding not in (None, "raise", "warn") and not callable(on_finding):
            raise ValueError("ranksight.ddp.Recorder: on_finding must be None, \"raise\", \"warn\" or a callable, "
                             "not %r" % (on_finding,))
        self.on_finding = on_finding
        self.check_every = max(int(check_every), 1)
        self._watch = None  # rank 0's WatchChild while checks go on
        self.ddp = ddp
        self.module = ddp.module
        self.rank = dist.get_rank()
        self.world = dist.get_world_size()
        self.weight_every = max(int(weight_every), 1)
        self.K = int(sketch_dim)
        self.B = int(batch_size)
        self.scaler = scaler
        self.planned_steps = int(planned_steps)
        self.params = [(n, p) for n, p in self.module.named_parameters() if p.requires_grad]
        self.index = {id(p): i for i, (_, p) in enumerate(self.params)}
        self.P = len(self.params)
        self.buffers = [(n, b) for n, b in self.module.named_buffers() if "running" in n]
        # Every statistic of a tensor in one read per side when the native kernel is built (gradstats.py); the
        # sketch's signs are the same on every rank, so sketches compare across ranks.
        self.stats = GradStats([p.numel() for _, p in self.params], self.K)
        self._inner = hook  # None: DDP's own mean all-reduce, done by _mean_allreduce
        # With DDP's own hook, the division by the world size rides the local statistics' read (native kernel);
        # RANKSIGHT_FUSE_AVERAGING=0: a pass of its own, as DDP does it (the same bits: tests compare the two).
        self._fuse_averaging = os.environ.get("RANKSIGHT_FUSE_AVERAGING", "1") != "0"
        self.hook_name, self.hook_lossy = _hook_info(hook or default_hooks.allreduce_hook)
        self._works = []  # this step's all-reduces started by _mean_allreduce, until _drain_works
        self._state = state
        self._reset()
        ddp.register_comm_hook(state, self._comm_hook)
        # BatchNorm statistics: DDP broadcasts rank 0's buffers before every forward, so a rank's buffers say
        # little about its own forward. Instead each rank chains the fingerprints its own forwards produce,
        # and only when a forward moved them: a rank in eval mode keeps its chain still while the others' move.
        self._buffer_chain = 0
        self._buffer_before = None
        # DDP's forward starts with a collective (the buffer broadcast, and the unused-parameter bookkeeping):
        # a rank there waits for its slowest peer. Timed between DDP's forward and the module's.
        self._ddp_forward_at = None
        self._forward_sync_s = 0.0
        ddp.register_forward_pre_hook(self._ddp_before_forward)
        self.module.register_forward_pre_hook(self._before_forward)
        if self.buffers:
            self.module.register_forward_hook(self._after_forward)
        self.steps = 0
        # What the recorder itself costs this rank, in seconds summed over the steps (cost_ms() per step).
        self.cost_s = {"local": 0.0, "synced": 0.0, "buffers": 0.0, "step": 0.0, "gather": 0.0, "write": 0.0}
        self._prev_scale = None
        self._last = time.perf_counter()
        self.writer = None
        self._closed = False
        self._last_mismatch = ()
        self._pending = None  # the last step's gather, in flight: (work, packed, gathered, what _write needs)
        self._retired = None  # the gather finished before it, kept until the next one finishes (_finish_gather)
        # A job that ends without close() still gets its last step's row (its gather completed long ago), and
        # no rank leaves a gloo thread that still needs the GIL as the interpreter finalizes (_drain_works).
        atexit.register(self._finish_pending_at_exit)
        self._start(path, model_name, config, fail_on, watch_cli, check_timeout)
        # The weights before any update, as DDP's broadcast at construction left them (or a checkpoint loaded
        # since on one rank): weight row 0. A row labelled s holds the weights step s starts from, as the
        # engine's do, so ranks that part after an update (optimizer-mismatch) are told from ranks that
        # started apart (init-mismatch).
        self._write_weights(0, self._gather(self._weights_packed()))

    def _start(self, path, model_name, config, fail_on, watch_cli, check_timeout):
        """Rank 0 creates the file and starts its watch child; every rank learns whether that worked (and
        rank 0's check schedule) from one broadcast, so a failure on rank 0 is an error on every rank, not a
        hang in the next collective."""
        failure, error = None, None
        if self.rank == 0:
            try:
                self.writer = RunFileWriter(path, self._meta(model_name, config), overwrite=True)
                if self.on_finding is not None:
                    fail_on = fail_on if isinstance(fail_on, str) else ",".join(fail_on)
                    self._watch = WatchChild(find_cli(watch_cli), path, fail_on, check_timeout)
            except Exception as e:  # noqa: BLE001 (re-raised below, after the other ranks are told)
                failure, error = "%s" % e, e
        told = [failure, self.on_finding is not None, self.check_every]
        dist.broadcast_object_list(told, src=0)
        failure, checking, self.check_every = told
        # Whether a rank takes part in the checks' collective is rank 0's choice: a rank whose own on_finding
        # differs still meets the others (and warns at a finding) rather than leaving them waiting.
        self._checking = bool(checking)
        if self._checking and self.on_finding is None:
            self.on_finding = "warn"
        if self._checking:
            self.cost_s["check"] = 0.0
        if failure is not None:
            self._end_watch()
            if self.writer is not None:
                self.writer.close("error: %s" % failure)
                self.writer = None
            if error is not None:
                raise error
            raise RuntimeError("ranksight.ddp.Recorder: rank 0 could not start recording: %s" % failure)

    # --- per forward -----------------------------------------------------------------------------------------

    def _buffer_fp(self):
        with torch.no_grad():
            return fingerprint(torch.cat([b.detach().reshape(-1).double() for _, b in self.buffers]))

    def _ddp_before_forward(self, module, inputs):
        self._finish_gather()
        self._ddp_forward_at = time.perf_counter() if torch.is_grad_enabled() else None

    def _before_forward(self, module, inputs):
        t = time.perf_counter()
        if self._ddp_forward_at is not None:
            self._forward_sync_s += t - self._ddp_forward_at
            self._ddp_forward_at = None
        self._buffer_before = self._buffer_fp() if torch.is_grad_enabled() and self.buffers else None
        self.cost_s["buffers"] += time.perf_counter() - t

    def _after_forward(self, module, inputs, output):
        if self._buffer_before is None:
            return  # a no_grad forward (validation) is not a training step
        t = time.perf_counter()
        after = self._buffer_fp()
        if after != self._buffer_before:
            self._buffer_chain = fingerprint(torch.tensor([_signed64(self._buffer_chain), _signed64(after)]))
        self._buffer_before = None
        self.cost_s["buffers"] += time.perf_counter() - t

    # --- per bucket, in DDP's backward ---------------------------------------------------------------------

    def _reset(self):
        P, K = self.P, self.K
        # numpy, not torch: an element store into a tensor costs ~5 us of dispatch. Raw sums, before the loss
        # scale in force when each tensor was read (_scale_at) is divided out at step().
        self._local_raw = np.zeros((P, 6))  # sum of squares, sum, max |x|, nonfinite, overflow, underflow
        self._sketch = np.zeros((P, K))
        self._synced_raw = np.zeros((P, 2))  # sum of squares, sum
        self._synced_fp = np.zeros(P, dtype=np.uint64)
        self._scale_at = np.ones(P)
        self._seen = np.zeros(P, dtype=bool)
        # Time in collectives = waiting for peers: from handing the last bucket to the all-reduce (this rank's
        # backward is done) until the last bucket's result arrives. Earlier buckets overlap with backward, so
        # summing their flights would count compute as communication.
        self._last_launch = None
        self._comm_end = None
        self._forward_sync_s = 0.0

    def _scale(self):
        if self.scaler is not None and self.scaler.is_enabled():
            return float(self.scaler.get_scale())
        return 1.0

    def _comm_hook(self, state, bucket):
        t = time.perf_counter()
        params = bucket.parameters()
        idx = [self.index.get(id(p)) for p in params]
        mine = [j for j, i in enumerate(idx) if i is not None]
        rows = [idx[j] for j in mine]
        grads = bucket.gradients()
        # DDP's averaging (its default hook divides the bucket by the world size, then sums) done in the local
        # statistics' read: every gradient of the bucket must be a view of its buffer, so that dividing them
        # divides what the all-reduce sends.
        divide = 0
        if self._inner is None and self._fuse_averaging and self.stats.kernel == "native":
            buf = bucket.buffer()
            lo, hi = buf.data_ptr(), buf.data_ptr() + buf.numel() * buf.element_size()
            if all(lo <= g.data_ptr() and g.data_ptr() + g.numel() * g.element_size() <= hi for g in grads):
                divide = (state if state is not None else dist.group.WORLD).size()
        # fp16 overflow and underflow of the gradient as backward computed it (scaled) mean something for
        # mixed-precision jobs, so they are counted when a GradScaler is given.
        self.stats.local(rows, [grads[j] for j in mine], self._local_raw, self._sketch, counts=self.scaler is not None,
                         divide_by=divide)
        if divide:
            with torch.no_grad():
                for j in range(len(grads)):
                    if idx[j] is None:  # a tensor the recorder does not record: divided on its own
                        grads[j].div_(divide)
        self._scale_at[rows] = self._scale()
        self.cost_s["local"] += time.perf_counter() - t
        numels = [p.numel() for p in params]
        if bucket.is_last():
            self._last_launch = time.perf_counter()
        fut = (self._mean_allreduce(state, bucket, divided=bool(divide)) if self._inner is None
               else self._inner(state, bucket))

        def synced(f):
            arrived = time.perf_counter()
            self._comm_end = arrived if self._comm_end is None else max(self._comm_end, arrived)
            value = f.value()
            result = value[0] if isinstance(value, (list, tuple)) else value
            parts = torch.split(result.reshape(-1), numels)
            self.stats.synced(rows, [parts[j] for j in mine], self._synced_raw, self._synced_fp)
            self._seen[rows] = True
            self.cost_s["synced"] += time.perf_counter() - arrived
            return result

        return fut.then(synced)

    def _mean_allreduce(self, group, bucket, divided=False):
        """DDP's default hook (default_hooks.allreduce_hook) bit for bit, the division before the sum, but with
        one callback (the recorder's) instead of two, and with its Work kept for _drain_works. divided: the
        local statistics' pass already divided the bucket."""
        group = group if group is not None else dist.group.WORLD
        tensor = bucket.buffer()
        if not divided:
            tensor.div_(group.size())
        work = dist.all_reduce(tensor, group=group, async_op=True)
        self._works.append(work)
        return work.get_future()

    def _drain_works(self):
        """gloo's thread runs a future's Python callbacks and then frees them, which takes the GIL once more
        after DDP's wait for the future has returned. A process whose interpreter is finalizing ends a thread
        that takes the GIL in the middle of C++, and it aborts ("terminate called without an active
        exception"). Work.wait() releases the GIL and returns only when gloo's thread is done with the work."""
        works, self._works = self._works, []
        for work in works:
            work.wait()

    def _unscaled(self):
        """This step's local statistics (rows of 6: norm, max |x|, sum, nonfinite, overflow, underflow), sketch
        and synced statistics (rows of 2: norm, sum) with each tensor's loss scale divided out."""
        s = self._scale_at
        raw = self._local_raw
        local = np.empty((self.P, 6))
        local[:, 0] = np.sqrt(raw[:, 0]) / s
        local[:, 1] = raw[:, 2] / s
        local[:, 2] = raw[:, 1] / s
        local[:, 3] = raw[:, 3]
        local[:, 4:6] = raw[:, 4:6] if self.scaler is not None else 0.0
        synced = np.stack([np.sqrt(self._synced_raw[:, 0]) / s, self._synced_raw[:, 1] / s], axis=1)
        return local, self._sketch / s[:, None], synced

    # --- per step, after the optimizer step ----------------------------------------------------------------

    def cost_ms(self):
        """The recorder's own time on this rank per recorded step, in ms, by part: local and synced gradient
        statistics (in DDP's backward), BatchNorm buffer fingerprints (around the forward), step() without
        the gather, the gather of the statistics to rank 0 (waiting for it included), rank 0's file write, and
        with on_finding the checks (rank 0's wait for its watch child's verdict, every rank's for the flag)."""
        n = max(self.steps, 1)
        return {k: v * 1000.0 / n for k, v in self.cost_s.items()}

    def _finish_gather(self):
        """Waits for the last step's gather; rank 0 writes its row. Its time is the recorder's own, so the
        clock of the step it falls in skips it."""
        if self._pending is None:
            return
        work, _, gathered, meta = self._pending
        # gloo's worker thread drops its own reference to the tensors just after wait() returns. A tensor whose
        # last reference goes on that thread takes the GIL there to free its Python side, so they stay
        # referenced here until the next gather is finished, and are freed on this thread.
        self._retired = self._pending
        self._pending = None
        t = time.perf_counter()
        work.wait()
        t_write = time.perf_counter()
        if self.rank == 0:
            self._write(gathered, *meta)
        done = time.perf_counter()
        self.cost_s["gather"] += t_write - t
        self.cost_s["write"] += done - t_write
        self._last += done - t

    def _finish_pending_at_exit(self):
        # Every rank, not only the writer: the other ranks' sends are what rank 0 waits for, and each must
        # complete before its process group goes. Bounded: rank 0 posted its receives when it called gather.
        if dist.is_initialized():
            try:
                self._drain_works()  # a job that ended between its backward and step()
                self._finish_gather()
            except Exception:  # noqa: BLE001 (the process group may be gone; nothing left to save then)
                pass
        self._end_watch()  # it would exit at its stdin's EOF anyway; ended here, it is no orphan for a moment
        # gloo's thread drops its reference to the last gather's tensors just after wait() returns; were the
        # interpreter's finalization to free them first, that thread would take the GIL to free them and abort
        # the process (see _drain_works). They stay for the process's last moments.
        if self._retired is not None:
            ctypes.pythonapi.Py_IncRef(ctypes.py_object(self._retired))

    def step(self, loss, accuracy=None, sample_ids=None, lr=None, epoch=0):
        self._drain_works()  # the backward's all-reduces are complete; this only lets gloo's thread finish
        self._finish_gather()  # when no forward came between two steps
        now = time.perf_counter()
        step_ms = (now - self._last) * 1000.0
        self._last = now
        # Parameters that no bucket carried: their gradient is whatever backward left in p.grad.
        unseen = [i for i in np.flatnonzero(~self._seen).tolist() if self.params[i][1].grad is not None]
        if unseen:
            grads = [self.params[i][1].grad for i in unseen]
            self.stats.local(unseen, grads, self._local_raw, self._sketch, counts=self.scaler is not None)
            self.stats.synced(unseen, grads, self._synced_raw, self._synced_fp)
            self._scale_at[unseen] = self._scale()
        # A GradScaler lowers its scale in update() after a step it skipped for an overflow.
        scale = self._scale()
        skipped = int(self._prev_scale is not None and scale < self._prev_scale)
        self._prev_scale = scale
        comm_ms = self._forward_sync_s * 1000.0
        if self._last_launch is not None and self._comm_end is not None:
            comm_ms += max(self._comm_end - self._last_launch, 0.0) * 1000.0
        compute_ms = max(step_ms - comm_ms, 0.0)
        # This step's update is done: the weights step `steps + 1` starts from.
        weights_due = (self.steps + 1) % self.weight_every == 0

        ids = np.full(self.B, -1, dtype=np.int64)
        if sample_ids is not None and self.B:
            s = np.asarray(sample_ids, dtype=np.int64).reshape(-1)[: self.B]
            ids[: s.size] = s
        sample_fp = fingerprint(torch.from_numpy(ids)) if sample_ids is not None else 0

        # What the job did not pass is NaN in the file (not recorded), never an invented 0.
        floats = [float(loss), float("nan") if accuracy is None else float(accuracy), scale, step_ms, compute_ms,
                  comm_ms, float(self.steps)]
        # The buffer chain after this step's forward: /steps/buffer_fp (it stays put on a rank in eval mode).
        ints = np.array([_signed64(sample_fp), skipped, _signed64(self._buffer_chain)], dtype=np.int64)
        wnorm, wfp = np.zeros(0), np.zeros(0, dtype=np.uint64)
        bnorm, bfp = 0.0, 0
        if weights_due:
            wnorm, wfp, bnorm, bfp = self._weights()
        local, sketch, synced = self._unscaled()
        packed_f = np.concatenate([floats, local.reshape(-1), sketch.reshape(-1), synced.reshape(-1), wnorm, [bnorm]])
        packed = torch.from_numpy(np.concatenate([packed_f.view(np.int64), ints, self._synced_fp.view(np.int64),
                                                  wfp.view(np.int64), np.array([bfp], dtype=np.int64), ids]))
        gathered = [torch.empty_like(packed) for _ in range(self.world)] if self.rank == 0 else None
        # Asynchronous: no rank waits here for the slowest one to reach its step(). The gather is finished (and
        # rank 0 writes the row) at the next forward, step() or close(), by when every rank has sent it.
        work = dist.gather(packed, gathered, dst=0, async_op=True)
        self._pending = (work, packed, gathered, (weights_due, lr, epoch, self.steps, time.time_ns()))
        self.cost_s["step"] += time.perf_counter() - now
        self.steps += 1
        self._reset()
        if self._checking and self.steps % self.check_every == 0:
            self._finish_gather()  # this step's row too: the verdict covers every step up to this one
            self._check(self.steps - 1)
        self._last = time.perf_counter()  # the recorder's own time is not the next step's

    # --- the verdict, every check_every steps (on_finding) ---------------------------------------------------

    def _check(self, step):
        """Every rank: rank 0 asks its watch child about the rows written (0..step), and one all-reduce tells
        every rank the answer at this same step. A finding then reaches all of them by broadcast."""
        t = time.perf_counter()
        code, finding = _GO_ON, None
        if self.rank == 0:
            kind, answer = self._watch.check(self.writer.steps_written)
            if kind == "finding":
                code, finding = _FOUND, answer
            elif kind == "gone":
                code = _CHECKS_END
                warnings.warn("RankSight: the run is no longer checked from step %d: %s" % (step, answer),
                              RankSightWarning, stacklevel=3)
        flag = torch.tensor([code], dtype=torch.int32)
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        code = int(flag.item())
        if code != _GO_ON:
            self._checking = False  # on every rank at once: no rank waits in a check the others skip
            self._end_watch()
        if code == _FOUND:
            shared = [finding]
            dist.broadcast_object_list(shared, src=0)
            finding = dict(shared[0], at_step=step)
        self.cost_s["check"] += time.perf_counter() - t
        if finding is not None:
            self._act(finding, step)

    def _act(self, finding, step):
        if self.on_finding == "raise":
            self.close("alert: %s at step %d" % (finding.get("cause", "finding"), step))
            raise RankSightAlert(finding, step)
        if self.on_finding == "warn":
            warnings.warn(finding_line(finding, step), RankSightWarning, stacklevel=4)
        else:
            self.on_finding(finding)

    def _end_watch(self):
        if self._watch is not None:
            self._watch.close()
            self._watch = None

    def _weights(self):
        """This rank's weight norms and fingerprints (numpy arrays), the BatchNorm buffers' norm and the buffer
        chain."""
        sums = np.zeros((self.P, 2))
        wfp = np.zeros(self.P, dtype=np.uint64)
        with torch.no_grad():
            self.stats.synced(range(self.P), [p.detach() for _, p in self.params], sums, wfp)
            bufs = [b.detach().reshape(-1).double() for _, b in self.buffers]
            flat = torch.cat(bufs) if bufs else torch.zeros(0, dtype=torch.float64)
        return np.sqrt(sums[:, 0]), wfp, float(flat.norm()), _signed64(self._buffer_chain)

    def _weights_packed(self):
        wnorm, wfp, bnorm, bfp = self._weights()
        return torch.from_numpy(np.concatenate([np.append(wnorm, bnorm).view(np.int64), wfp.view(np.int64),
                                                np.array([bfp], dtype=np.int64)]))

    def _gather(self, packed):
        gathered = [torch.empty_like(packed) for _ in range(self.world)] if self.rank == 0 else None
        dist.gather(packed, gathered, dst=0)
        return gathered

    def _write_weights(self, step, gathered):
        """Rank 0: one weight row from every rank's _weights_packed()."""
        if self.rank != 0:
            return
        P = self.P
        wnorm = np.stack([g[:P].view(torch.float64).numpy() for g in gathered])
        bnorm = np.array([float(g[P:P + 1].view(torch.float64)) for g in gathered])
        u64 = lambda a: np.asarray(a, dtype=np.int64).view(np.uint64)  # noqa: E731
        wfp = np.stack([u64(g[P + 1:2 * P + 1].numpy()) for g in gathered])
        bfp = np.array([u64(g[2 * P + 1:2 * P + 2].numpy())[0] for g in gathered])
        drift = np.abs(bnorm - bnorm[0]) / bnorm[0] if bnorm[0] > 0 else np.zeros(self.world)
        self.writer.append_weights(step, wfp, wnorm, bfp, drift)

    def _write(self, gathered, weights_due, lr, epoch, step, end_ns):
        R, P, K = self.world, self.P, self.K
        nf = 7 + 6 * P + P * K + 2 * P + (P + 1 if weights_due else 1)
        rows = [g[:nf].view(torch.float64).numpy() for g in gathered]
        ints = [g[nf:].numpy() for g in gathered]
        at = 7
        local = np.stack([r[at:at + 6 * P].reshape(P, 6) for r in rows])
        at += 6 * P
        sketch = np.stack([r[at:at + P * K].reshape(P, K) for r in rows])
        at += P * K
        synced = np.stack([r[at:at + 2 * P].reshape(P, 2) for r in rows])
        at += 2 * P
        u64 = lambda a: np.asarray(a, dtype=np.int64).view(np.uint64)  # noqa: E731
        synced_fp = np.stack([u64(i[3:3 + P]) for i in ints])
        self.writer.append_step(dict(
            step=step, epoch=epoch, lr=lr if lr is not None else float("nan"), end_ns=end_ns,
            loss=[r[0] for r in rows], accuracy=[r[1] for r in rows], loss_scale=[r[2] for r in rows],
            step_ms=[r[3] for r in rows], compute_ms=[r[4] for r in rows], comm_ms=[r[5] for r in rows],
            skipped=[i[1] for i in ints], sample_fp=[u64(i[0]) for i in ints], buffer_fp=[u64(i[2]) for i in ints],
            overflow=[i[1] for i in ints] if self.scaler is not None else [0] * R,
            sample_ids=np.stack([i[-self.B:] if self.B else i[:0] for i in ints]).astype(np.int32),
            local_norm=local[:, :, 0], local_max=local[:, :, 1], local_sum=local[:, :, 2],
            nonfinite=local[:, :, 3], overflow_count=local[:, :, 4], underflow_count=local[:, :, 5],
            sketch=sketch, synced_norm=synced[:, :, 0], synced_sum=synced[:, :, 1], synced_fp=synced_fp))
        if weights_due:
            wnorm = np.stack([r[at:at + P] for r in rows])
            bnorm = np.array([r[at + P] for r in rows])
            wfp = np.stack([u64(i[3 + P:3 + 2 * P]) for i in ints])
            bfp = np.array([u64(i[3 + 2 * P]) for i in ints])
            drift = np.abs(bnorm - bnorm[0]) / bnorm[0] if bnorm[0] > 0 else np.zeros(R)
            self.writer.append_weights(step + 1, wfp, wnorm, bfp, drift)
        # The event log says when ranks start to disagree (or which parameters changes), not every step.
        mismatch = [r for r in range(1, R) if (synced_fp[r] != synced_fp[0]).any()]
        params = tuple(np.nonzero((synced_fp != synced_fp[:1]).any(axis=0))[0].tolist())
        if mismatch and params != self._last_mismatch:
            self.writer.append_event(step, mismatch[0], 2, "GRADIENT_SYNC",
                                     "Rank 0 and Rank %d parameter gradient mismatch at step %d" % (mismatch[0], step))
        self._last_mismatch = params

    def close(self, reason="completed"):
        """Every rank calls it (like step): rank 0 closes the file, then all ranks meet in a barrier, so no
        rank tears its process group down while another still communicates or writes."""
        if not self._closed and dist.is_initialized():
            self._drain_works()
            self._finish_gather()
        self._checking = False
        self._end_watch()  # closing its stdin ends it; a file closed under a reader is no verdict
        if self.writer is not None:
            self.writer.close(reason)
            self.writer = None
        if not self._closed and dist.is_initialized():
            self._closed = True
            dist.barrier()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.close("completed" if exc_type is None else "error: %s" % exc)
        return False

    # --- the file's meta --------------------------------------------------------------------------------------

    def _absent(self):
        """What this job cannot record (docs/run-file.md, "absent"): fp16 counts and overflow flags need a
        GradScaler (a float32 job has none), and so do the loss scale and skipped updates; sample ids need
        batch_size; DDP broadcasts BatchNorm buffers, so
        /weights/buffer_fp holds each rank's own forwards' chain (see __init__), not a plain fingerprint."""
        absent = ["data"]  # the job's data set is the user's; the recorder is not told which
        # A fingerprint of each local gradient would be one more pass per step on rank 0's critical path.
        absent += ["/grads/local_fp"]
        # How long a rank waited for a CPU core is not measured (a GPU job's compute has no such wait).
        absent += ["/steps/cpu_wait_ms"]
        # The recorder is handed one learning rate per step (step(lr=...)), not what each rank's optimizer applied.
        absent += ["/steps/optimizer_lr"]
        if self.scaler is None:
            # Without a GradScaler nothing scales the loss or skips an update: the recorder sees neither.
            absent += ["/steps/overflow", "/steps/loss_scale", "/steps/skipped", "/grads/overflow_count",
                       "/grads/underflow_count"]
        if not self.B:
            absent += ["/steps/sample_fp", "/steps/sample_ids"]
        return absent

    def _meta(self, model_name, config):
        host = socket.gethostname()
        return dict(
            model=model_name or type(self.module).__name__, world_size=self.world, batch_per_rank=self.B,
            precision="O0", loss_scale="dynamic" if self.scaler is not None else "none", data="",
            seed=int(torch.initial_seed()) & _MASK, sketch_dim=self.K, weight_every=self.weight_every,
            planned_steps=self.planned_steps, config=config or {}, rank_table={}, source="pytorch-ddp",
            absent=self._absent(),
            environment={"source": "pytorch-ddp", "torch": torch.__version__, "python": platform.python_version(),
                         "host": host, "backend": dist.get_backend(), "pid": os.getpid(),
                         "comm_hook": self.hook_name, "comm_hook_lossy": self.hook_lossy,
                         "gradient_statistics": self.stats.kernel},
            params=[(n, tuple(p.shape)) for n, p in self.params], buffer_names=[n for n, _ in self.buffers],
            cards=[dict(rank=r, device_id=-1, device_ip="", server_id=host) for r in range(self.world)])


__all__ = ["Recorder", "RankSightAlert", "RankSightWarning", "fingerprint"]
