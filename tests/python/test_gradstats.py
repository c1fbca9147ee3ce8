"""ranksight.gradstats: the native kernel (python/ranksight/_gradstats.c, built by CMake; ctest points
RANKSIGHT_GRADSTATS_LIB at it) against the torch passes it replaces and against float64 references: the same
fingerprints bit for bit, the same counts, sums and sketches to float rounding, on tensors of every awkward
length and with the values that must be counted (inf, NaN, fp16 overflow and underflow, -0). Run from ctest
(py_gradstats); needs python3-torch."""

import os
import sys
import unittest

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

try:
    import torch
    from ranksight import gradstats
    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False

# Lengths around every boundary the kernel has: its 8-wide loop, its 256-element runs, 64-word fingerprint
# blocks (128 floats), the sketch's split between small tensors (< K * 4093) and large ones (rows of 4093).
LENGTHS = [0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 127, 128, 129, 255, 256, 257, 1000, 4093, 4094, 16 * 4093 - 1,
           16 * 4093, 16 * 4093 + 1, 3 * 16 * 4093 + 4100, 300_001]


def reference(g, signs, K):
    """Local statistics in float64 from the definition: sum of squares, sum, largest |x|, the fp16 underflow
    count and the sketch."""
    d = g.double()
    n = g.numel()
    parts = np.zeros(K)
    if K and n:
        if n < K * gradstats.PERIOD:
            part = n // K
        else:
            part = n // gradstats.PERIOD // K * gradstats.PERIOD
        s = signs.double().repeat(n // signs.numel() + 1)[:n]
        for c in range(K):
            lo, hi = min(c * part, n), (n if c == K - 1 else min((c + 1) * part, n))
            parts[c] = float((d[lo:hi] * s[lo:hi]).sum())
    under = float(((d.abs() > 0) & (d.abs() <= 2.0 ** -25)).sum())
    return float((d * d).sum()), float(d.sum()), float(d.abs().max()) if n else 0.0, under, parts


@unittest.skipUnless(HAVE_TORCH, "needs python3-torch")
class GradStatsTest(unittest.TestCase):
    K = 16

    @classmethod
    def setUpClass(cls):
        torch.manual_seed(7)
        cls.grads = [torch.randn(n) * 1e-3 for n in LENGTHS]
        cls.native = gradstats.GradStats(LENGTHS, cls.K)
        cls.torch = gradstats.GradStats(LENGTHS, cls.K, native=False)

    def test_the_native_kernel_is_the_one_loaded(self):
        # ctest builds it and names it; without it every other test here would compare torch with itself.
        kind, where, _ = gradstats.kernel_info()
        if os.environ.get("RANKSIGHT_GRADSTATS_LIB"):
            self.assertEqual(kind, "native", where)
        self.assertEqual(self.native.kernel, kind)
        self.assertEqual(self.torch.kernel, "torch")

    def local(self, stats, grads, counts=True):
        P = len(grads)
        out, sketch = np.full((P, 6), -1.0), np.full((P, self.K), -1.0)
        stats.local(list(range(P)), grads, out, sketch, counts=counts)
        return out, sketch

    def test_local_statistics_match_float64(self):
        for stats in (self.native, self.torch):
            out, sketch = self.local(stats, self.grads)
            for i, g in enumerate(self.grads):
                s2, s, amax, under, parts = reference(g, stats.period_signs if stats.signs[i] is None else stats.signs[i],
                                               self.K)
                where = "%s kernel, %d elements" % (stats.kernel, g.numel())
                self.assertAlmostEqual(out[i, 0], s2, delta=1e-5 * s2 + 1e-30, msg=where)
                self.assertAlmostEqual(out[i, 1], s, delta=1e-6 * (g.numel() ** 0.5) * 1e-3 + 1e-30, msg=where)
                self.assertEqual(out[i, 2], amax, where)  # exact: a float32 value
                self.assertEqual(list(out[i, 3:]), [0.0, 0.0, under], where)
                # Each component is a signed sum: its error scales with the norm of its part, not its value.
                scale = 1e-6 * max(s2 ** 0.5, 1e-30)
                np.testing.assert_allclose(sketch[i], parts, rtol=0, atol=scale, err_msg=where)

    def test_the_counts_see_every_special_value(self):
        g = torch.randn(3000) * 1e-3
        g[5], g[600], g[601] = float("inf"), float("-inf"), float("nan")  # three non-finite
        g[700], g[2999] = 70000.0, -65505.0                              # overflow (> 65504), with the infs
        g[10], g[11], g[12] = 65504.0, 2.0 ** -25, -(2.0 ** -26)        # 65504 is not an overflow; two underflow
        g[13], g[14] = 0.0, -0.0                                         # zeros are not underflows
        g[15] = 2.0 ** -24                                               # the smallest fp16 subnormal: kept
        fine = torch.randn(1000) * 1e-3
        for stats in (self.native, self.torch):
            gs = gradstats.GradStats([3000, 1000], self.K, native=stats is self.native)
            out = np.zeros((2, 6))
            sketch = np.zeros((2, self.K))
            gs.local([0, 1], [g, fine], out, sketch, counts=True)
            self.assertEqual(list(out[0, 3:]), [3.0, 4.0, 2.0], gs.kernel)
            self.assertTrue(np.isnan(out[0, 2]), "largest |x| with a NaN is NaN (%s)" % gs.kernel)
            self.assertTrue(np.isnan(out[0, 0]) and np.isnan(out[0, 1]), gs.kernel)
            self.assertEqual(list(out[1, 3:]), [0.0, 0.0, 0.0], gs.kernel)
            # Without NaN the largest |x| is inf.
            h = g.clone()
            h[601] = 1.0
            gs.local([0], [h], out, sketch, counts=True)
            self.assertEqual((out[0, 2], out[0, 3]), (float("inf"), 2.0), gs.kernel)

    def test_dividing_in_the_same_read_keeps_the_statistics_and_divides_as_torch(self):
        # DDP's averaging in the local statistics' read: the statistics are the undivided gradient's, bit for bit
        # as without dividing, and every tensor ends divided exactly as torch's div_ divides it (both kernels).
        for stats in (self.native, self.torch):
            for world in (3, 4):
                grads = [g.clone() for g in self.grads]
                grads[4][1] = float("inf")  # a special value is divided too
                plain, plain_sketch = self.local(stats, [g.clone() for g in grads])
                P = len(grads)
                out, sketch = np.full((P, 6), -1.0), np.full((P, self.K), -1.0)
                stats.local(list(range(P)), grads, out, sketch, counts=True, divide_by=world)
                where = "%s kernel, world %d" % (stats.kernel, world)
                self.assertEqual(out.tobytes(), plain.tobytes(), where)
                self.assertEqual(sketch.tobytes(), plain_sketch.tobytes(), where)
                for i, (g, orig) in enumerate(zip(grads, self.grads)):
                    want = orig.clone()
                    if i == 4:
                        want[1] = float("inf")
                    self.assertTrue(torch.equal(g.view(torch.int32), want.div_(world).view(torch.int32)), where)

    def test_native_and_torch_agree(self):
        a, sa = self.local(self.native, self.grads)
        b, sb = self.local(self.torch, self.grads)
        np.testing.assert_allclose(a[:, :3], b[:, :3], rtol=1e-5, atol=1e-20)
        np.testing.assert_array_equal(a[:, 3:], b[:, 3:])
        np.testing.assert_allclose(sa, sb, rtol=0, atol=1e-6 * np.sqrt(a[:, :1].max()))

    def test_the_avx2_and_baseline_bodies_give_the_same_bits(self):
        """Ranks on CPUs with and without AVX2 compare like with like: the library built with its baseline
        bodies alone (ctest names it) against the one loaded, on every length and on the special values, with
        the averaging division too."""
        where = os.environ.get("RANKSIGHT_GRADSTATS_BASELINE_LIB")
        if not where or self.native.kernel != "native":
            self.skipTest("needs the native library and its baseline-only build (ctest names both)")
        if gradstats.kernel_info()[2] != "AVX2":
            self.skipTest("this CPU has no AVX2: both builds run the baseline bodies")
        base = gradstats.GradStats(LENGTHS, self.K, library=gradstats.load_library(where))
        grads = [g.clone() for g in self.grads]
        special = [float("nan"), float("inf"), -float("inf"), 70000.0, 1e-9, -0.0, 1e-41, 3e38]
        for j, g in enumerate(grads):
            at = torch.arange(j % 7, g.numel(), 13)[:len(special)]
            g[at] = torch.tensor(special[:len(at)])
        for counts in (True, False):
            a, sa = self.local(self.native, grads, counts)
            b, sb = self.local(base, grads, counts)
            self.assertEqual(a.tobytes(), b.tobytes(), "local statistics, counts=%s" % counts)
            self.assertEqual(sa.tobytes(), sb.tobytes(), "sketch, counts=%s" % counts)
        P = len(grads)
        outs = []
        for stats in (self.native, base):
            ts = [g.clone() for g in grads]
            out, sk = np.zeros((P, 6)), np.zeros((P, self.K))
            stats.local(list(range(P)), ts, out, sk, divide_by=3)
            synced, fp = np.zeros((P, 2)), np.zeros(P, dtype=np.uint64)
            stats.synced(list(range(P)), ts, synced, fp)
            outs.append((out.tobytes(), sk.tobytes(), synced.tobytes(), fp.tobytes(),
                         b"".join(t.numpy().tobytes() for t in ts),
                         [stats.lib.rs_fingerprint(t.data_ptr(), t.numel() * 4 - cut) for t in ts[-3:] for cut in (0, 3)]))
        for what, x, y in zip(("local", "sketch", "synced", "fingerprints", "divided tensors", "fingerprint"), *outs):
            self.assertEqual(x, y, what)

    def test_synced_fingerprints_are_the_definition_bit_for_bit(self):
        P = len(self.grads)
        rows = list(range(P))
        outs = []
        for stats in (self.native, self.torch):
            out, fp = np.zeros((P, 2)), np.zeros(P, dtype=np.uint64)
            stats.synced(rows, self.grads, out, fp)
            outs.append((out, fp))
        (a, fa), (b, fb) = outs
        self.assertEqual(fa.tolist(), [gradstats.fingerprint_torch(g) for g in self.grads])
        self.assertEqual(fa.tolist(), fb.tolist())
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-20)
        # Views into one flat buffer at odd float offsets (a DDP bucket's gradients), not 8-byte aligned.
        flat = torch.cat(self.grads[:12])
        views = list(torch.split(flat, LENGTHS[:12]))
        for stats in (self.native, self.torch):
            out, fp = np.zeros((12, 2)), np.zeros(12, dtype=np.uint64)
            stats.synced(list(range(12)), views, out, fp)
            self.assertEqual(fp.tolist(), fa[:12].tolist(), stats.kernel)

    def test_a_flipped_bit_changes_the_fingerprint(self):
        g = torch.randn(5000)
        h = g.clone()
        h.view(torch.int32)[1234] ^= 1 << 3
        self.assertNotEqual(gradstats.fingerprint(g), gradstats.fingerprint(h))
        # Two blocks swapped: the same sum, a different position-weighted sum.
        s = g.clone()
        s[:128], s[128:256] = g[128:256].clone(), g[:128].clone()
        self.assertNotEqual(gradstats.fingerprint(g), gradstats.fingerprint(s))

    def test_fingerprint_of_any_dtype_and_length(self):
        for dt in (torch.int64, torch.float64, torch.int32, torch.uint8, torch.float16):
            for n in (0, 1, 3, 5, 63, 64, 65, 127, 128, 129, 1001, 70_001):
                t = (torch.randn(n) * 100).to(dt)
                self.assertEqual(gradstats.fingerprint(t), gradstats.fingerprint_torch(t), (dt, n))
        # Not contiguous: the bits in order, as a contiguous copy has them.
        m = torch.randn(64, 33)
        self.assertEqual(gradstats.fingerprint(m.t()), gradstats.fingerprint_torch(m.t().contiguous()))

    def test_tensors_the_library_cannot_read_take_the_torch_path(self):
        gs = gradstats.GradStats([100, 100], self.K)
        g = torch.randn(100)
        out, sketch = np.zeros((2, 6)), np.zeros((2, self.K))
        gs.local([0], [g], out, sketch)
        gs.local([0], [g.double()], out[1:], sketch[1:])  # float64: not the library's
        np.testing.assert_allclose(out[0, :3], out[1, :3], rtol=1e-5)
        np.testing.assert_allclose(sketch[0], sketch[1], atol=1e-6)
        strided = torch.randn(200)[::2]  # not contiguous
        out2, fp = np.zeros((2, 2)), np.zeros(2, dtype=np.uint64)
        gs.synced([0, 1], [g, strided], out2, fp)
        self.assertEqual(int(fp[1]), gradstats.fingerprint_torch(strided.contiguous()))
        self.assertAlmostEqual(out2[1, 0], float((strided.double() ** 2).sum()), delta=1e-4 * out2[1, 0])

    def test_outputs_of_the_wrong_shape_are_refused_not_written(self):
        if self.native.kernel != "native":
            self.skipTest("the native kernel is not built")
        g = [torch.randn(10)]
        with self.assertRaises(ValueError):
            self.native.local([len(LENGTHS)], g, np.zeros((len(LENGTHS), 6)), np.zeros((len(LENGTHS), self.K)))
        with self.assertRaises(ValueError):
            self.native.local([0], g, np.zeros((len(LENGTHS), 5)), np.zeros((len(LENGTHS), self.K)))
        with self.assertRaises(ValueError):
            self.native.synced([0], g, np.zeros((len(LENGTHS), 2), dtype=np.float32),
                               np.zeros(len(LENGTHS), dtype=np.uint64))


if __name__ == "__main__":
    unittest.main()
