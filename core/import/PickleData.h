// Reads a Python pickle that holds only data (dicts, lists, tuples, strings, numbers, booleans, None) into
// JSON values, and refuses everything else. A flight-recorder dump of someone else's job is a pickle, and a
// pickle may name any Python callable (GLOBAL / STACK_GLOBAL, then REDUCE, BUILD, INST, OBJ, NEWOBJ) that a
// Python unpickler would import and call: this reader implements only the opcodes that build plain data, so
// a hostile file is refused at its first such opcode, with nothing run. It never calls Python.
//
// What PyTorch's C++ Pickler writes for a dump (protocol 2: EMPTY_DICT, MARK ... SETITEMS, BINUNICODE,
// BINPUT/BINGET memo references for repeated strings and shared containers, BININT*, LONG1, BINFLOAT,
// NEWTRUE/NEWFALSE, NONE, TUPLE2) and what Python's pickle writes for the same data at protocols 2-5 are
// read. Tuples become arrays; dict keys must be strings or integers (an integer key becomes its decimal
// string). Nesting, memo references and sizes are bounded, so a small file cannot expand into gigabytes.
#pragma once

#include "import/CsvTable.h" // ImportError

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace rs {

// Throws ImportError "FILE: byte N: what was wrong" (FILE is `name`).
nlohmann::json readPickleData(std::string_view bytes, const std::string& name);

} // namespace rs
