"""python/ranksight/runfile.py's copy of the run-file layout against the C++ schema table it mirrors
(core/store/RunSchema.h, printed by `ranksight-cli schema`): every table's columns in order with their path,
dtype, row dims and compression, the padded columns, the root attributes (name, type, required), the groups,
the format name and version and the fixed string lengths. A column or attribute added to (or changed in) either
side without the other fails here. Run from ctest (py_schema) with RANKSIGHT_CLI set."""

import json
import os
import subprocess
import sys
import unittest

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
from ranksight import runfile  # noqa: E402

CLI = os.environ.get("RANKSIGHT_CLI", "")

# The C++ dtype names (runschema::dtypeName) as runfile.py spells them, and what numpy must make of them.
DTYPES = {
    "int32": ("i32", "i", 4), "int64": ("i64", "i", 8), "uint8": ("u8", "u", 1), "uint32": ("u32", "u", 4),
    "uint64": ("u64", "u", 8), "float32": ("f32", "f", 4), "float64": ("f64", "f", 8),
    "string[32]": ("s32", "S", 32), "string[256]": ("s256", "S", 256),
}

# runfile.py's tables under the names `ranksight-cli schema` gives them.
PYTHON_TABLES = {
    "steps": runfile.STEP_COLUMNS, "weights": runfile.WEIGHT_COLUMNS, "eval": runfile.EVAL_COLUMNS,
    "events": runfile.EVENT_COLUMNS, "dumps": runfile.DUMP_COLUMNS, "entries": runfile.ENTRY_COLUMNS,
    "collectives": runfile.COLLECTIVE_COLUMNS, "tensors": runfile.TENSOR_COLUMNS,
}


def schema():
    p = subprocess.run([CLI, "schema"], capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise AssertionError("ranksight-cli schema failed: " + p.stderr)
    return json.loads(p.stdout)


def cpp_columns(table):
    """A C++ table as runfile.py's (path, dtype, row, deflate) tuples."""
    return [(c["path"], DTYPES[c["dtype"]][0], c["row"], c["deflate"]) for c in table]


@unittest.skipUnless(CLI, "RANKSIGHT_CLI is not set")
class SchemaTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.schema = schema()

    def test_every_table_has_the_same_columns_in_the_same_order(self):
        self.assertEqual(sorted(self.schema["tables"]), sorted(PYTHON_TABLES))
        for name, python in PYTHON_TABLES.items():
            with self.subTest(table=name):
                self.assertEqual(list(python), cpp_columns(self.schema["tables"][name]))

    def test_padded_columns_agree(self):
        padded = {c["path"] for t in self.schema["tables"].values() for c in t if c["padded"]}
        self.assertTrue(padded, "the C++ table pads some column (sample ids)")
        self.assertEqual(runfile.PADDED, padded)

    def test_each_dtype_is_the_numpy_type_of_the_cpp_one(self):
        used = {c["dtype"] for t in self.schema["tables"].values() for c in t}
        self.assertTrue(used <= set(DTYPES), used - set(DTYPES))
        for name in used:
            code, kind, size = DTYPES[name]
            dt = np.dtype(runfile._DTYPES[code])
            self.assertEqual((dt.kind, dt.itemsize), (kind, size), name)
            self.assertIn(dt.byteorder, ("<", "|", "="), name)

    def test_groups_format_and_string_lengths_agree(self):
        s = self.schema
        self.assertEqual(runfile.GROUPS, s["groups"])
        self.assertEqual(runfile.FORMAT_NAME, s["format"])
        self.assertEqual(runfile.FORMAT_VERSION, s["format_version"])
        self.assertEqual((runfile.EVENT_CODE_LEN, runfile.EVENT_MESSAGE_LEN, runfile.REASON_LEN),
                         (s["string_lengths"]["event_code"], s["string_lengths"]["event_message"],
                          s["string_lengths"]["reason"]))

    def test_root_attributes_agree(self):
        # Names, types, required or optional, in the order both writers write them.
        cpp = [(a["name"], a["dtype"], a["required"]) for a in self.schema["attributes"]]
        self.assertIn(("world_size", "int32", True), cpp)
        self.assertIn(("absent", "string", False), cpp)
        self.assertEqual(list(runfile.ROOT_ATTRIBUTES), cpp)
        self.assertTrue({d for _, d, _ in cpp if d != "string"} <= set(runfile._ATTRIBUTE_DTYPES))

    def test_a_drifted_copy_is_caught(self):
        # The comparison itself: a column whose dtype differs, or one missing, is not equal.
        steps = cpp_columns(self.schema["tables"]["steps"])
        changed = [(p, "f64" if p == "/steps/loss" else d, r, z) for p, d, r, z in steps]
        self.assertNotEqual(changed, list(runfile.STEP_COLUMNS))
        self.assertNotEqual(steps[:-2] + steps[-1:], list(runfile.STEP_COLUMNS))


if __name__ == "__main__":
    unittest.main()
