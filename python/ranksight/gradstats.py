"""What ranksight.ddp.Recorder computes from each gradient and weight tensor, for many tensors at once.

Two implementations with one definition: the native one (_gradstats.c, loaded with ctypes) reads each tensor
once for all its local statistics and once for its synced ones; the torch one takes several passes. The native
library is built by `pip install` (when a C compiler is there) and by CMake; RANKSIGHT_GRADSTATS_LIB names
another build of it. Fingerprints agree bit for bit between the two, the sums to float rounding; every rank
of a job loads the same package, so its ranks compare like with like. The library's AVX2 and baseline bodies
give the same bits, so ranks on CPUs of either kind do too. Tensors the library cannot read (not float32, not
contiguous, not in host memory) take the torch path.

Raw statistics, before the loss scale is divided out: local rows of 6 (sum of squares, sum, largest |x|,
non-finite count, fp16 overflow count |x| > 65504, fp16 underflow count 0 < |x| <= 2^-25) and K sketch
components; synced rows of 2 (sum of squares, sum) and a 64-bit fingerprint.
"""

import ctypes
import glob
import os
import warnings

import numpy as np
import torch

_MASK = (1 << 64) - 1
_FP16_MAX = 65504.0
_FP16_ZERO = 2.0 ** -25  # |x| <= this rounds to 0 in fp16
# The sketch's sign period for large tensors (a prime, so it does not line up with power-of-two channel
# counts): component k projects the k-th of K row groups of the tensor, seen as rows of PERIOD elements,
# onto one shared random +-1 vector. One matrix-vector product per tensor, no per-element signs in memory.
PERIOD = 4093


def _mix64(x):
    """splitmix64's finaliser: a well-spread 64-bit value from any integer."""
    x = (x + 0x9E3779B97F4A7C15) & _MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK
    return x ^ (x >> 31)


def fingerprint_torch(t):
    """fingerprint() with torch ops: the definition the native library reproduces."""
    t = t.detach().contiguous().view(-1)
    if t.storage_offset() * t.element_size() % 8:
        t = t.clone()  # a view at an odd float in a DDP bucket: torch reads 64-bit words only at 8-byte offsets
    raw = t.view(torch.uint8)
    head = raw.numel() // 8 * 8
    words = raw[:head].view(torch.int64)
    h = _mix64(raw.numel())
    n = words.numel() // 64 * 64
    if n:
        blocks = words[:n].view(-1, 64).sum(1)
        h = _mix64(h ^ (int(blocks.sum()) & _MASK))
        h = _mix64(h ^ (int(torch.dot(blocks, torch.arange(1, blocks.numel() + 1, dtype=torch.int64))) & _MASK))
    if n < words.numel():
        tail = words[n:]
        h = _mix64(h ^ (int(torch.dot(tail, torch.arange(1, tail.numel() + 1, dtype=torch.int64))) & _MASK))
    for k, b in enumerate(raw[head:].tolist()):
        h = _mix64(h ^ (b << (8 * k)))
    return h


def _load():
    """(library, path) or (None, why not)."""
    named = os.environ.get("RANKSIGHT_GRADSTATS_LIB")
    here = os.path.dirname(os.path.abspath(__file__))
    paths = [named] if named else sorted(glob.glob(os.path.join(here, "_gradstats*.so")))
    if not paths:
        return None, "not built"
    try:
        lib = load_library(paths[0])
    except OSError as e:
        if named:
            warnings.warn("ranksight: RANKSIGHT_GRADSTATS_LIB=%s cannot be loaded (%s); the statistics take "
                          "torch passes instead" % (named, e))
        return None, str(e)
    return lib, paths[0]


def load_library(path):
    """The native library at path, its entry points typed (tests load a second build to compare with)."""
    lib = ctypes.CDLL(path)  # CDLL, not PyDLL: the GIL is released while it reads
    p, i64 = ctypes.c_void_p, ctypes.c_int64
    lib.rs_local_stats.argtypes = [i64, p, p, p, p, p, p, i64, p, p, i64]
    lib.rs_local_stats.restype = None
    if hasattr(lib, "rs_local_stats_div"):  # a library built before it divides in a pass of its own
        lib.rs_local_stats_div.argtypes = [i64, p, p, p, p, p, p, i64, p, p, i64, ctypes.c_float]
        lib.rs_local_stats_div.restype = None
    lib.rs_synced_stats.argtypes = [i64, p, p, p, p, p]
    lib.rs_synced_stats.restype = None
    lib.rs_fingerprint.argtypes = [p, i64]
    lib.rs_fingerprint.restype = ctypes.c_uint64
    if hasattr(lib, "rs_wide_bodies"):  # a library built before it chose its bodies by hand says nothing
        lib.rs_wide_bodies.argtypes = []
        lib.rs_wide_bodies.restype = ctypes.c_int
    return lib


_LIB, _LIB_WHERE = _load()


def _native_ok(t):
    return t.dtype == torch.float32 and t.device.type == "cpu" and t.is_contiguous()


def fingerprint(t):
    """A 64-bit fingerprint of a tensor's bits: equal bits give equal fingerprints on every rank; a flipped bit
    or a moved block changes it. The bytes are read as 64-bit words, once (no widened copy): the sums of
    blocks of 64 words, then their total and their sum weighted by position, both mod 2^64."""
    t = t.detach()
    if _LIB is not None and t.device.type == "cpu":
        t = t.contiguous()
        return int(_LIB.rs_fingerprint(t.data_ptr(), t.numel() * t.element_size()))
    return fingerprint_torch(t)


def _ptrs(tensors):
    return np.fromiter((t.data_ptr() for t in tensors), dtype=np.uint64, count=len(tensors))


def _numels(tensors):
    return np.fromiter((t.numel() for t in tensors), dtype=np.int64, count=len(tensors))


def _check_out(a, cols, rows, tensors=None):
    """The library writes (and reads signs) where it is told: an output of the wrong shape or layout, or a row
    past the tensors it was built for, would be memory corruption, not an exception, so it is refused here."""
    want = np.uint64 if cols is None else np.float64
    ok = a.dtype == want and a.flags.c_contiguous and a.flags.writeable and (
        a.ndim == 1 if cols is None else (a.ndim == 2 and a.shape[1] == cols))
    limit = a.shape[0] if tensors is None else min(a.shape[0], tensors)
    if not ok or (len(rows) and (rows.min() < 0 or rows.max() >= limit)):
        raise ValueError("ranksight.gradstats: output %s %s cannot take rows %s..%s"
                         % (a.dtype, a.shape, rows.min() if len(rows) else "-", rows.max() if len(rows) else "-"))


class GradStats:
    """The statistics of a model's P tensors (given by their element counts) with a K-component sketch."""

    def __init__(self, numels, K, native=True, library=None):
        self.K = int(K)
        self.lib = (library or _LIB) if native else None
        self.kernel = "native" if self.lib is not None else "torch"
        # Sketch: a random +-1 projection, component k over the k-th of K contiguous parts of the flattened
        # gradient. Large tensors: rows of PERIOD elements times one shared sign vector, rows grouped into K
        # parts; small tensors: their own signs, K equal blocks, the last taking the remainder. The same seed on
        # every rank, so sketches compare across ranks; identical gradients give identical sketches.
        gen = torch.Generator().manual_seed(0x5EED)
        self.period_signs = torch.randint(0, 2, (PERIOD,), generator=gen).float().mul_(2).sub_(1)
        self.signs = [torch.randint(0, 2, (n,), generator=gen).float().mul_(2).sub_(1)
                      if self.K and n < self.K * PERIOD else None for n in numels]
        # Per tensor, for the library: its size, its signs, their period, the elements of one sketch component.
        self._numel = [int(n) for n in numels]
        K1 = max(self.K, 1)
        self._sign_ptr = np.array([(s if s is not None else self.period_signs).data_ptr() for s in self.signs],
                                  dtype=np.uint64)
        self._period = np.array([max(n, 1) if s is not None else PERIOD for n, s in zip(numels, self.signs)],
                                dtype=np.int64)
        self._part = np.array([n // K1 if s is not None else n // PERIOD // K1 * PERIOD
                               for n, s in zip(numels, self.signs)], dtype=np.int64)

    # --- local: what backward computed on this rank ------------------------------------------------------------

    def local(self, rows, grads, out, sketch, counts=True, divide_by=0):
        """Tensor grads[j]'s raw local statistics into out[rows[j]] (rows of 6) and sketch[rows[j]] (rows of
        K). counts: the fp16 overflow and underflow counts are wanted (the torch path skips them otherwise).
        divide_by (not 0): then each tensor is divided by it in place (DDP's averaging, as div_ rounds it), in
        the native kernel in the same read as the statistics."""
        fused = divide_by and self.lib is not None and hasattr(self.lib, "rs_local_stats_div")
        native = [j for j, g in enumerate(grads) if self.lib is not None and _native_ok(g)
                  and (fused or not divide_by)]
        if native:
            g = [grads[j] for j in native]
            r = np.asarray([rows[j] for j in native], dtype=np.int64)
            _check_out(out, 6, r, len(self._period))
            _check_out(sketch, self.K, r, len(self._period))
            for j in native:
                if grads[j].numel() != self._numel[rows[j]]:
                    raise ValueError("ranksight.gradstats: tensor %d has %d elements, not the %d it was built for"
                                     % (rows[j], grads[j].numel(), self._numel[rows[j]]))
            # Named, not temporaries: .ctypes.data is a bare address, which does not keep its array alive.
            ptr, n, sign, period, part = _ptrs(g), _numels(g), self._sign_ptr[r], self._period[r], self._part[r]
            if divide_by:
                self.lib.rs_local_stats_div(len(g), ptr.ctypes.data, n.ctypes.data, r.ctypes.data,
                                            sign.ctypes.data, period.ctypes.data, part.ctypes.data, self.K,
                                            out.ctypes.data, sketch.ctypes.data, 1 if counts else 0,
                                            float(divide_by))
            else:
                self.lib.rs_local_stats(len(g), ptr.ctypes.data, n.ctypes.data, r.ctypes.data, sign.ctypes.data,
                                        period.ctypes.data, part.ctypes.data, self.K, out.ctypes.data,
                                        sketch.ctypes.data, 1 if counts else 0)
        done = set(native)
        for j, g in enumerate(grads):
            if j not in done:
                self._local_torch(rows[j], g.detach().reshape(-1), out, sketch, counts)
                if divide_by:
                    with torch.no_grad():
                        g.div_(divide_by)

    def _local_torch(self, i, g, out, sketch, counts):
        # One pass per statistic over the float32 gradient, float64 only in the accumulators; the counts that
        # are 0 in a healthy step (non-finite, fp16 overflow) cost nothing unless the extremes say otherwise.
        if g.numel() == 0:
            out[i] = 0.0
            if self.K:
                sketch[i] = 0.0
            return
        lo, hi = torch.aminmax(g)
        amax = max(-float(lo), float(hi))
        g32 = g if g.dtype == torch.float32 else g.float()
        out[i, 0] = float(torch.dot(g32, g32)) if g.dtype == torch.float32 else float(g.double().square().sum())
        out[i, 2] = amax
        if self.K:  # the sketch's pass yields the sum too
            parts, total = self._project(i, g32)
            sketch[i] = parts.numpy()
        else:
            total = float(g.sum())
        out[i, 1] = total
        finite = amax == amax and amax != float("inf")
        out[i, 3] = 0.0 if finite else float(torch.count_nonzero(~torch.isfinite(g)))
        out[i, 4] = out[i, 5] = 0.0
        if counts:
            a = g.abs()
            out[i, 4] = 0.0 if amax <= _FP16_MAX else float(torch.count_nonzero(a > _FP16_MAX))
            out[i, 5] = float(torch.count_nonzero(a <= _FP16_ZERO) - torch.count_nonzero(g == 0))

    def _project(self, i, g):
        """The K sketch components of tensor i's flat float32 gradient g (float64), and its sum."""
        K, n = self.K, g.numel()
        if self.signs[i] is not None:  # small: K equal blocks (the last takes the remainder), own signs
            m = n // K
            parts = torch.zeros(K, dtype=torch.float64)
            if m:
                parts += (g[:K * m] * self.signs[i][:K * m]).view(K, m).sum(1, dtype=torch.float64)
            if K * m < n:
                parts[K - 1] += float(torch.dot(g[K * m:], self.signs[i][K * m:]))
            return parts, float(g.sum())
        # Large: component k is the sum over its q rows of (row . signs) = (sum of its rows) . signs, so one
        # pass adds the rows of each group (K x PERIOD sums, which also give the tensor's sum) and K small
        # products finish the sketch.
        q = n // PERIOD // K
        head = g[:K * q * PERIOD].view(K, q, PERIOD).sum(1)
        parts = torch.mv(head, self.period_signs).double()
        total = float(head.sum(dtype=torch.float64))
        rest = g[K * q * PERIOD:]  # the rows past the last full group and the tail: component K - 1
        if rest.numel():
            rows = rest.numel() // PERIOD
            if rows:
                parts[K - 1] += float(torch.mv(rest[:rows * PERIOD].view(rows, PERIOD), self.period_signs).sum())
            if rest.numel() > rows * PERIOD:
                parts[K - 1] += float(torch.dot(rest[rows * PERIOD:], self.period_signs[:rest.numel() - rows * PERIOD]))
            total += float(rest.sum(dtype=torch.float64))
        return parts, total

    # --- synced: what the all-reduce gave back, and weights ----------------------------------------------------

    def synced(self, rows, tensors, out, fp):
        """Tensor tensors[j]'s sum of squares and sum into out[rows[j]] (rows of 2), its fingerprint into
        fp[rows[j]] (uint64)."""
        native = [j for j, t in enumerate(tensors) if self.lib is not None and _native_ok(t)]
        if native:
            t = [tensors[j] for j in native]
            r = np.asarray([rows[j] for j in native], dtype=np.int64)
            _check_out(out, 2, r)
            _check_out(fp, None, r)
            ptr, n = _ptrs(t), _numels(t)
            self.lib.rs_synced_stats(len(t), ptr.ctypes.data, n.ctypes.data, r.ctypes.data, out.ctypes.data,
                                     fp.ctypes.data)
        done = set(native)
        for j, t in enumerate(tensors):
            if j not in done:
                g = t.detach().reshape(-1)
                i = rows[j]
                out[i, 0] = float(torch.dot(g, g)) if g.dtype == torch.float32 else float(g.double().square().sum())
                out[i, 1] = float(g.sum())
                fp[i] = fingerprint_torch(g)


def kernel_info():
    """Which implementation a default GradStats uses, where its library is or why there is none, and which
    instructions the library's bodies use ("AVX2" or "baseline"; the same bits either way)."""
    if _LIB is None:
        return ("torch", _LIB_WHERE, "-")
    bodies = "AVX2" if hasattr(_LIB, "rs_wide_bodies") and _LIB.rs_wide_bodies() else "baseline"
    return ("native", _LIB_WHERE, bodies)


__all__ = ["GradStats", "fingerprint", "fingerprint_torch", "kernel_info", "PERIOD"]
