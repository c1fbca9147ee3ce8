"""Writes a tree the way msprobe's dump tool (PrecisionDebugger, task "statistics") does, for the tests of the
msprobe dump importer (no Ascend card or msprobe install here). Format as in /work/notes/formats.md section 2,
read from Ascend/msprobe python/msprobe: core/dump/hook_manager.py, core/dump/data_dump/data_collector.py,
core/dump/data_dump/data_processor/pytorch_processor.py (get_stat_info, _analyze_tensor),
pytorch/dump/module_dump/module_processor.py and pytorch/dump/api_dump/pt_hook_manager.py.

    OUT_DIR/step<N>/rank<R>/dump.json, stack.json, construct.json

- dump.json: {"task": "statistics", "level", "framework": "pytorch", "dump_data_dir": null, "data": {...}},
  json.dump with indent=1 and the defaults (allow_nan: bare NaN / Infinity / -Infinity tokens);
- API entries (levels L1, mix) `Functional.conv2d.0.forward` / `.backward`, for the calls hooked here:
  Functional.conv2d, linear, relu, cross_entropy and Torch.flatten, isnan, nonzero; the backward is the
  output's autograd node hook, so "input" is the grad of the output and "output" the node's grad_inputs
  (for F.linear that is AddmmBackward0's (bias, input, weight.t()) order, as msprobe sees it);
- Module entries (levels L0, mix) `Module.conv1.Conv2d.forward.0` with input_args, input_kwargs ({} as on
  torch < 2), output, parameters (the weights at forward time), `Module.conv1.Conv2d.backward.0`
  (torch.utils.hooks.BackwardHook per call, as msprobe does), and `Module.conv1.Conv2d.parameters_grad.0`
  {param: [tensor dict]} from the grad-accumulator hook, i.e. this rank's local gradient before the all-reduce
  (--legacy-names: the older mstt `Module.conv1.Conv2d.parameters_grad` with no index);
- tensor dicts {type, dtype, shape, Max, Min, Mean, Norm, requires_grad}, statistics as get_stat_info
  (@321efd94) computes them: float32 torch.max/min/mean/norm(...).item(); ints cast to float32; 0-dim: all four
  the value; bool: Max any(), Min all() (true/false), Mean and Norm null; empty: all null (the NaN guard's
  torch.nonzero output is empty unless something overflowed);
- stack.json in the newest grouped form {"0": [[entry names], [stack lines]], ...}, forward entries only, lines
  "File <path>, line N, in f, \\n code" innermost first; the frames are this script's own (model forward and
  training loop) but the path is shown as /home/user/train_ddp.py so that the output does not depend on where
  this file lives;
- construct.json {entry: parent module entry or null} for L0/mix (APIs only at mix), {} for L1.

The statistics are real: a small CNN (conv1 Conv2d(3,4,3), relu ReLU used twice, fc1 Linear(144,16), fc2
Linear(16,10)), trained data-parallel with R replicas in one process: each rank its own seeded batch of 4
8x8 images, forward, cross entropy, backward, then the gradients are averaged over ranks (DDP) and every
replica takes the same SGD step (lr 0.1). Counters restart at every step, as msprobe's step() resets them.

    /usr/bin/python3 tests/msprobe/make_msprobe_dump.py OUT_DIR [--ranks 4] [--steps 3] [--level mix|L0|L1]
        [--mistake none|nan@S:R|inf@S:R|param-not-synced@S:R|grad-sum] [--legacy-names]
        [--rank-folder numbered|rank|proc|late] [--only-ranks 2,3] [--drop S:R ...] [--seed 7]
        [--litter step-folder|stray-folder|no-dump ...] [--text-stat] [--summary-mode statistics|md5|xor]
        [--framework pytorch|mindspore]
        [--odd-shape text|list|param ...] [--broken bad-json|not-an-object|no-data|mixed-task]

Every rank's script logs its loss with dist.all_reduce(loss, op=ReduceOp.SUM, group=group) after the backward
(levels mix, L1): a Distributed.all_reduce entry whose arguments hold a torch.ProcessGroup {type, group_ranks,
group_id}, a ReduceOp and a bool beside the tensor, and whose output is the sum over ranks.

Folders (msprobe's core/dump/service.py): rank<R> once the process knows its rank; proc<pid> while it does not
(torch.distributed not initialised; msprobe renames it rank<R> when the rank turns up during the step, so a
proc<pid> that stays is a process without a distributed rank, or a step that ended before it had one); the
bare `rank` of older msprobe. --only-ranks is msprobe's config "rank" list; --drop S:R leaves out one rank's
dump at one step (a rank killed before its step was written), so steps' rank sets differ.

Mistakes:
- nan@S:R (inf@S:R): one pixel of rank R's input at step S is NaN (+inf); that rank's activations, loss and
  local gradients carry it, the averaged gradient too, so every rank's weights are NaN from step S+1.
- param-not-synced@S:R: from step S on, rank R skips the all-reduce for fc2.bias and steps with its local
  gradient, so its fc2.bias (only that) differs from the other ranks' from step S+1 on.
- grad-sum: every rank sums the gradients instead of averaging (all ranks alike; the dump's local gradients
  are unchanged, the weights move R times as far).
Broken trees (step0's first dump unless said): bad-json (file cut in the middle), not-an-object (top level a
list), no-data, mixed-task (step1/rank0 says "task": "tensor"). Details that must not stop an import:
--odd-shape ("shape": "[4, x]" or [4, "x"]), --text-stat. Litter that must not stop an import: step-folder (an extra stepX/rank0 holding a copy of a
dump.json), stray-folder (step1/step1/dump.json), no-dump (step1/rank1 without its dump.json).
"""

import argparse
import copy
import json
import os
import shutil
import traceback
import zlib
from collections import defaultdict

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.hooks import BackwardHook

SCRIPT = "/home/user/train_ddp.py"  # shown in stack.json in place of this file's path
STACK_FUNCS = {"forward", "train_step", "train", "main", "<module>"}  # this file's frames a user would see
LR = 0.1
BATCH = 4
UNSYNCED = "fc2.bias"
PROC_PID = 41230  # proc<pid> folders: pid PROC_PID + rank
HOOKED_APIS = [(F, "Functional", "conv2d"), (F, "Functional", "linear"), (F, "Functional", "relu"),
               (F, "Functional", "cross_entropy"), (torch, "Torch", "flatten"), (torch, "Torch", "isnan"),
               (torch, "Torch", "nonzero")]

SUMMARY_MODE = "statistics"  # msprobe's summary_mode: statistics | md5 | xor
REC = None  # the Recorder of the rank and step being run; every hook does nothing while it is None


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 4, 3)
        self.relu = nn.ReLU()
        self.fc1 = nn.Linear(4 * 6 * 6, 16)
        self.fc2 = nn.Linear(16, 10)

    def forward(self, x):
        x = self.relu(self.conv1(x))
        x = torch.flatten(x, 1)
        # The same ReLU module again (Module.relu.ReLU.forward.1); stack.json shows code lines as they are.
        x = self.relu(self.fc1(x))
        return self.fc2(x)


def stat_info(t):
    """Max, Min, Mean, Norm as msprobe's get_stat_info, as Python values (json writes them)."""
    t = t.detach()
    if t.numel() == 0:
        return [None] * 4
    if t.dtype == torch.bool:
        return [torch.any(t).item(), torch.all(t).item(), None, None]
    if t.dim() == 0:
        return [t.item()] * 4  # not cast: an int scalar stays an int
    if t.dtype == torch.float64 or not t.is_floating_point():
        t = t.float()
    return [torch.max(t).item(), torch.min(t).item(), torch.mean(t).item(), torch.norm(t).item()]


def checksum(t, mode):
    """The tensor's checksum as the summary mode writes it: md5 a crc32 of its bytes ("%08x"), xor the xor of
    its 64-bit words ("0x%016x", json_writer.py flush_stat_stack)."""
    raw = t.detach().contiguous().numpy().tobytes()
    if mode == "md5":
        return "%08x" % zlib.crc32(raw)
    raw += b"\0" * (-len(raw) % 8)
    x = 0
    for i in range(0, len(raw), 8):
        x ^= int.from_bytes(raw[i:i + 8], "little")
    return "0x%016x" % x


def tensor_json(t):
    """As PytorchDataProcessor._analyze_tensor and DataWriter._replace_stat_placeholders leave it: statistics
    (summary_mode statistics), statistics and an md5 (md5), or only a checksum in place of them (xor)."""
    d = {"type": "torch.Tensor", "dtype": str(t.dtype), "shape": list(t.shape)}
    if SUMMARY_MODE == "xor":
        d["md5"] = checksum(t, "xor")
    else:
        d.update(zip(["Max", "Min", "Mean", "Norm"], stat_info(t)))
    d["requires_grad"] = t.requires_grad
    if SUMMARY_MODE == "md5":
        d["md5"] = checksum(t, "md5")
    return d


def analyze(x):
    """One argument as msprobe's analyze_element writes it (tensors, builtins, containers)."""
    if isinstance(x, torch.Tensor):
        return tensor_json(x)
    if x is None:
        return None
    for kind in (bool, int, float, str):  # bool first: it is an int
        if isinstance(x, kind):
            return {"type": kind.__name__, "value": x}
    if isinstance(x, torch.Size):
        return {"type": "torch.Size", "value": [int(v) for v in x]}
    if isinstance(x, torch.dtype):
        return {"type": "torch.dtype", "value": str(x)}
    if isinstance(x, slice):
        return {"type": "slice", "value": [x.start, x.stop, x.step]}
    if isinstance(x, (list, tuple)):
        return [analyze(v) for v in x]
    if isinstance(x, dict):
        return {k: analyze(v) for k, v in x.items()}
    return {}


def as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def call_stack():
    """This file's user-level frames, innermost first, in msprobe's stack line format."""
    here = os.path.abspath(__file__)
    return ["File %s, line %d, in %s, \n %s" % (SCRIPT, f.lineno, f.name, f.line.strip())
            for f in reversed(traceback.extract_stack())
            if os.path.abspath(f.filename) == here and f.name in STACK_FUNCS]


def to_backward(name):
    return name and name.replace(".forward.", ".backward.")


class Recorder:
    """The dump of one rank at one step: data, stacks and construct as msprobe collects them."""

    def __init__(self, level, legacy):
        self.level, self.legacy = level, legacy
        self.apis, self.modules = level in ("mix", "L1"), level in ("mix", "L0")
        self.data, self.stacks, self.construct = {}, {}, {}
        self.api_count, self.module_count = defaultdict(int), defaultdict(int)
        self.grad_calls = {}  # "Module.x.C" -> [k, first param seen], msprobe's grad_hook_call
        self.module_stack = []  # forward entries of the modules running now (the parent of an API call)
        self.pending = defaultdict(list)  # module id -> [(forward entry, BackwardHook)] between the two hooks
        self.in_api = False  # an API called inside a hooked API is not dumped

    def api_backward(self, name, parent, grad_inputs, grad_outputs):
        self.data[name] = {"input": analyze(list(grad_outputs)), "output": analyze(list(grad_inputs))}
        if self.level == "mix":
            self.construct[name] = parent

    def module_backward(self, name, grad_input, grad_output):
        self.data[name] = {"input": analyze(list(grad_output)), "output": analyze(list(grad_input))}
        self.construct[name] = None  # every hooked module is a direct child of the (unhooked) model

    def param_grad(self, ori, pname, param):
        calls = self.grad_calls.setdefault(ori, [-1, pname])
        if calls[1] == pname:  # k only moves on when the first-seen parameter fires again
            calls[0] += 1
        key = ori + ".parameters_grad" + ("" if self.legacy else ".%d" % calls[0])
        self.data.setdefault(key, {})[pname] = [tensor_json(param.grad)]

    def files(self):
        dump = {"task": "statistics", "level": self.level, "framework": "pytorch", "dump_data_dir": None,
                "data": self.data}
        groups = {}  # identical stacks share one numbered key, in order of first appearance
        for name, lines in self.stacks.items():
            groups.setdefault(tuple(lines), []).append(name)
        stack = {str(i): [names, list(lines)] for i, (lines, names) in enumerate(groups.items())}
        return {"dump.json": dump, "stack.json": stack,
                "construct.json": {} if self.level == "L1" else self.construct}


def wrap_api(prefix, name, fn):
    def api_wrapper(*args, **kwargs):
        rec = REC
        if rec is None or not rec.apis or rec.in_api:
            return fn(*args, **kwargs)
        base = "%s.%s.%d" % (prefix, name, rec.api_count[prefix + name])
        fwd = base + ".forward"
        parent = rec.module_stack[-1] if rec.module_stack else None
        rec.data[fwd] = {"input_args": analyze(list(args)), "input_kwargs": analyze(kwargs)}  # at the pre-hook
        rec.stacks[fwd] = call_stack()
        rec.in_api = True
        try:
            out = fn(*args, **kwargs)
        finally:
            rec.in_api = False
        rec.data[fwd]["output"] = analyze(as_list(out))
        rec.api_count[prefix + name] += 1
        if rec.level == "mix":
            rec.construct[fwd] = parent
        if isinstance(out, torch.Tensor) and out.grad_fn is not None:
            # Under the module's backward (msprobe sets the parent from torch 2's backward pre-hook).
            out.grad_fn.register_hook(lambda gi, go: rec.api_backward(base + ".backward", to_backward(parent), gi, go))
        return out
    return api_wrapper


def patch_apis():
    originals = [(mod, name, getattr(mod, name)) for mod, _, name in HOOKED_APIS]
    for mod, prefix, name in HOOKED_APIS:
        setattr(mod, name, wrap_api(prefix, name, getattr(mod, name)))
    return originals


def make_backward_hook(module, user_hook):
    try:
        return BackwardHook(module, [user_hook], [])  # torch >= 2: (module, hooks, pre_hooks)
    except TypeError:
        return BackwardHook(module, [user_hook])


def hook_module(name, module):
    """msprobe's module hooks: entries at the forward hook, a BackwardHook per call, grad-accumulator hooks."""
    ori = "Module.%s.%s" % (name, type(module).__name__)

    def pre_hook(mod, args):
        rec = REC
        if rec is None or not rec.modules:
            return None
        fwd = "%s.forward.%d" % (ori, rec.module_count[ori])
        rec.module_count[ori] += 1
        rec.construct[fwd] = rec.module_stack[-1] if rec.module_stack else None
        rec.module_stack.append(fwd)
        bw = make_backward_hook(mod, lambda m, gin, gout: rec.module_backward(to_backward(fwd), gin, gout))
        rec.pending[id(mod)].append((fwd, bw))
        return bw.setup_input_hook(args)

    def forward_hook(mod, args, output):
        rec = REC
        if rec is None or not rec.modules:
            return None
        fwd, bw = rec.pending[id(mod)].pop()
        rec.module_stack.pop()
        params = dict(mod.named_parameters(recurse=False))
        rec.data[fwd] = {"input_args": analyze(list(args)), "input_kwargs": {}, "output": analyze(as_list(output)),
                         "parameters": {k: tensor_json(p) for k, p in params.items()}}
        rec.stacks[fwd] = call_stack()
        for pname, p in params.items():
            # The AccumulateGrad node's post hook: param.grad then holds this rank's whole local gradient.
            grad_acc = p.expand_as(p).grad_fn.next_functions[0][0]
            grad_acc.register_hook(lambda *_, pn=pname, pp=p: rec.param_grad(ori, pn, pp))
        return bw.setup_output_hook(output)

    module.register_forward_pre_hook(pre_hook)
    module.register_forward_hook(forward_hook)


def train_step(model, images, labels):
    logits = model(images)
    # weight=None is written as a null argument, reduction as {"type": "str", "value": "mean"}.
    loss = F.cross_entropy(logits, labels, weight=None, reduction="mean")
    # The script's NaN guard: a bool tensor, then an empty one unless something overflowed.
    torch.nonzero(torch.isnan(logits))
    loss.backward()
    return loss.detach()


def process_group(ranks):
    """A torch.distributed ProcessGroup as PytorchDataProcessor._analyze_process_group writes it."""
    group_ranks = list(range(ranks))
    return {"type": "torch.ProcessGroup", "group_ranks": group_ranks,
            "group_id": "%08x" % zlib.crc32(str(group_ranks).encode("utf-8"))}


def log_loss(rec, own, total, ranks):
    """The script's `dist.all_reduce(loss, op=ReduceOp.SUM, group=group)` for its log line, as msprobe dumps a
    distributed API (Distributed.<api>): input_args/input_kwargs at the pre-hook, before the reduction; output =
    args + kwargs values after it (base.py update_output_with_args_and_kwargs), the tensor then holding the sum
    over ranks. The process group and the reduce op are {type, ...} arguments, not tensors."""
    if not rec.apis:
        return
    op = {"type": "torch.distributed.ReduceOp", "value": "RedOpType.SUM"}
    kwargs = {"op": op, "group": process_group(ranks), "async_op": {"type": "bool", "value": False}}
    name = "Distributed.all_reduce.0.forward"
    rec.data[name] = {"input_args": [tensor_json(own)], "input_kwargs": kwargs,
                      "output": [tensor_json(total)] + list(copy.deepcopy(kwargs).values())}
    rec.stacks[name] = call_stack()
    if rec.level == "mix":
        rec.construct[name] = None


def batch(seed, step, rank):
    g = torch.Generator().manual_seed(seed * 100003 + step * 1009 + rank)
    return torch.randn(BATCH, 3, 8, 8, generator=g), torch.randint(0, 10, (BATCH,), generator=g)


def parse_mistake(text, ranks, steps):
    kind, _, where = text.partition("@")
    if kind in ("none", "grad-sum"):
        return kind, None, None
    if kind not in ("nan", "inf", "param-not-synced"):
        raise argparse.ArgumentTypeError("unknown mistake " + text)
    try:
        s, r = map(int, where.split(":")) if where else (1, min(1, ranks - 1))
    except ValueError:
        raise argparse.ArgumentTypeError("%s: expected %s@STEP:RANK" % (text, kind))
    if s >= steps or r >= ranks:
        raise argparse.ArgumentTypeError("step %d / rank %d is outside the run" % (s, r))
    return kind, s, r


def rank_folder(style, r, step):
    """msprobe's folder for rank r (service.py _create_default_dirs): `late` is a job whose debugger.start()
    ran before torch.distributed was up and whose step 0 ended before any hook saw the rank, so step 0 stays
    proc<pid> and later steps are rank<R>."""
    if style == "late":
        style = "proc" if step == 0 else "numbered"
    return {"numbered": "rank%d" % r, "rank": "rank", "proc": "proc%d" % (PROC_PID + r)}[style]


def dumped(a, step, r):
    """Whether rank r has a dump at this step: in msprobe's rank list (--only-ranks), not dropped (--drop)."""
    return (not a.only_ranks or r in a.only_ranks) and (step, r) not in a.drop


MS_DTYPES = {"torch.float32": "Float32", "torch.int64": "Int64", "torch.bool": "Bool"}


def as_mindspore(x, ranks):
    """The same dump as MindSpore's processor writes it (mindspore_processor.py _analyze_tensor): tensors
    {type: mindspore.Tensor, dtype: Float32, shape, Max..Norm} without requires_grad, parameters with a
    `layout` dict of their sharding; a communication op's group is its name, a string."""
    if isinstance(x, list):
        return [as_mindspore(v, ranks) for v in x]
    if not isinstance(x, dict):
        return x
    if x.get("type") == "torch.ProcessGroup":
        return {"type": "str", "value": "hccl_world_group"}
    y = {k: as_mindspore(v, ranks) for k, v in x.items() if not (k == "requires_grad" and "dtype" in x)}
    if x.get("type") == "torch.Tensor":
        y["type"], y["dtype"] = "mindspore.Tensor", MS_DTYPES.get(x["dtype"], x["dtype"])
        if x.get("requires_grad"):
            y["layout"] = {"Device Matrix": [ranks], "Tensor Map": [-1] * len(x["shape"]),
                           "Rank List": list(range(ranks))}
    return y


def mindspore_files(files, ranks):
    """Cell.<name>.<Class> in place of Module.<...> in every file (entries, stack groups, construct)."""
    text = json.dumps(as_mindspore(files, ranks)).replace('"Module.', '"Cell.')
    files = json.loads(text)
    files["dump.json"]["framework"] = "mindspore"
    return files


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=1)  # msprobe's save_json: allow_nan and ensure_ascii defaults


def train(a, mistake):
    global REC
    kind, m_step, m_rank = mistake
    torch.manual_seed(a.seed)
    init = Net()
    models = [copy.deepcopy(init) for _ in range(a.ranks)]  # DDP broadcasts rank 0's weights at start
    for model in models:
        for name, module in model.named_modules():
            if module is not model:  # msprobe skips the root module
                hook_module(name, module)
    originals = patch_apis()
    try:
        for step in range(a.steps):
            local, recs, losses = [], [], []
            for r, model in enumerate(models):
                images, labels = batch(a.seed, step, r)
                if kind in ("nan", "inf") and (step, r) == (m_step, m_rank):
                    images[0, 0, 0, 0] = float(kind)
                model.zero_grad(set_to_none=True)
                REC = Recorder(a.level, a.legacy_names)
                losses.append(train_step(model, images, labels))
                recs.append(REC)
                REC = None
                local.append({n: p.grad.clone() for n, p in model.named_parameters()})
            total = torch.stack(losses).sum()
            for r, rec in enumerate(recs):
                log_loss(rec, losses[r], total, a.ranks)
                if not dumped(a, step, r):
                    continue
                folder = os.path.join(a.out, "step%d" % step, rank_folder(a.rank_folder, r, step))
                os.makedirs(folder)
                files = rec.files()
                if a.framework == "mindspore":
                    files = mindspore_files(files, a.ranks)
                for fname, obj in files.items():
                    write_json(os.path.join(folder, fname), obj)
            sgd_step(models, local, a.ranks, kind, m_step, m_rank, step)
    finally:
        REC = None
        for mod, name, fn in originals:
            setattr(mod, name, fn)


def sgd_step(models, local, ranks, kind, m_step, m_rank, step):
    """The all-reduce (one result for every rank, as DDP's) and the same SGD step on every replica."""
    total = {n: torch.stack([g[n] for g in local]).sum(0) for n in local[0]}
    with torch.no_grad():
        for r, model in enumerate(models):
            for n, p in model.named_parameters():
                g = total[n] if kind == "grad-sum" else total[n] / ranks
                if kind == "param-not-synced" and r == m_rank and step >= m_step and n == UNSYNCED:
                    g = local[r][n]
                p -= LR * g


def first_tensor(data):
    """The first tensor dict in file order (a Module's or API's first input)."""
    for entry in data.values():
        stack = [entry]
        while stack:
            x = stack.pop(0)
            if isinstance(x, dict) and "dtype" in x:
                return x
            stack.extend(x.values() if isinstance(x, dict) else x if isinstance(x, list) else [])
    raise SystemExit("no tensor to break")


def first_dump(a):
    """step0's first dump.json (rank 0's unless msprobe's rank list left it out) and its folder's name."""
    r = min(a.only_ranks) if a.only_ranks else 0
    folder = rank_folder(a.rank_folder, r, 0)
    return os.path.join(a.out, "step0", folder, "dump.json"), folder


def break_tree(a):
    path, rank0 = first_dump(a)
    with open(path) as f:
        text = f.read()
    dump = json.loads(text)
    if a.broken == "bad-json":
        with open(path, "w") as f:
            f.write(text[:len(text) // 2])
    elif a.broken == "not-an-object":
        write_json(path, [dump])
    elif a.broken == "no-data":
        del dump["data"]
        write_json(path, dump)
    elif a.broken == "mixed-task":
        path1 = os.path.join(a.out, "step1", rank0, "dump.json")
        with open(path1) as f:
            dump1 = json.load(f)
        dump1["task"] = "tensor"
        write_json(path1, dump1)


def odd_shape(a, kind):
    """A shape that is no list of dimensions, in step0's first dump: text ("[4, x]") on its first tensor, a
    list holding text ([4, "x"]) on the first entry's output, or (param) text on the first parameter
    gradient's tensor."""
    path, _ = first_dump(a)
    with open(path) as f:
        dump = json.load(f)
    if kind == "param":
        grads = next(v for k, v in dump["data"].items() if ".parameters_grad" in k)
        t = next(iter(grads.values()))[0]
    elif kind == "list":
        t = next(iter(dump["data"].values()))["output"][0]  # the first entry's output
    else:
        t = first_tensor(dump["data"])
    t["shape"] = [t["shape"][0], "x"] if kind == "list" else "[%d, x]" % t["shape"][0]
    write_json(path, dump)


def text_stat(a):
    """A statistic written as text that is no number, as MindSpore's graph-mode cell dump can leave one
    (cell_dump_process.py convert_special_values keeps a csv cell it cannot turn into a float): the first
    tensor's Norm in step0's first dump."""
    path, _ = first_dump(a)
    with open(path) as f:
        dump = json.load(f)
    first_tensor(dump["data"])["Norm"] = "N/A"
    write_json(path, dump)


def litter(a, kind):
    """Folders beside the dump's that msprobe did not write as rank folders: a copied step (stepX), a folder
    in a step that is no rank folder (as msprobe's own visualization tests have step1/step1), and a rank
    folder whose dump.json is gone (stack.json and construct.json stay)."""
    path, rank0 = first_dump(a)
    if kind == "step-folder":
        os.makedirs(os.path.join(a.out, "stepX", rank0))
        shutil.copy(path, os.path.join(a.out, "stepX", rank0, "dump.json"))
    elif kind == "stray-folder":
        os.makedirs(os.path.join(a.out, "step1", "step1"))
        shutil.copy(path, os.path.join(a.out, "step1", "step1", "dump.json"))
    elif kind == "no-dump":
        os.remove(os.path.join(a.out, "step1", rank_folder(a.rank_folder, 1, 1), "dump.json"))


def step_rank(text):
    s, _, r = text.partition(":")
    return int(s), int(r)


def main(argv=None):
    """argv: the arguments (sys.argv[1:] when None); the tests call this in their own process, so that torch is
    imported once for every tree they write."""
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--level", default="mix", choices=["mix", "L0", "L1"])
    ap.add_argument("--mistake", default="none",
                    help="none | nan@S:R | inf@S:R | param-not-synced@S:R | grad-sum (S:R defaults to 1:1)")
    ap.add_argument("--legacy-names", action="store_true", help="parameters_grad without the trailing index")
    ap.add_argument("--rank-folder", default="numbered", choices=["numbered", "rank", "proc", "late"],
                    help="rank<R> (default), the old mstt `rank` (only with --ranks 1), proc<pid> (no "
                         "distributed rank), or late (proc<pid> at step 0, rank<R> after)")
    ap.add_argument("--only-ranks", type=lambda t: {int(x) for x in t.split(",")}, default=set(),
                    help="msprobe's rank list: only these ranks dump (e.g. 2,3)")
    ap.add_argument("--drop", type=step_rank, action="append", default=[],
                    help="S:R: rank R has no dump at step S (repeatable)")
    ap.add_argument("--litter", action="append", default=[], choices=["step-folder", "stray-folder", "no-dump"])
    ap.add_argument("--text-stat", action="store_true", help="one statistic written as text (N/A)")
    ap.add_argument("--odd-shape", action="append", default=[], choices=["text", "list", "param"],
                    help="a shape that is no list of dimensions (see odd_shape)")
    ap.add_argument("--summary-mode", default="statistics", choices=["statistics", "md5", "xor"])
    ap.add_argument("--framework", default="pytorch", choices=["pytorch", "mindspore"],
                    help="mindspore: Cell. names, mindspore.Tensor dicts with layouts, string groups")
    ap.add_argument("--broken", default="", choices=["", "bad-json", "not-an-object", "no-data", "mixed-task"])
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args(argv)
    try:
        mistake = parse_mistake(a.mistake, a.ranks, a.steps)
    except (argparse.ArgumentTypeError, ValueError) as e:
        ap.error("--mistake: %s" % e)
    if a.rank_folder == "rank" and a.ranks != 1:
        ap.error("--rank-folder rank is the unnumbered mstt folder: only with --ranks 1")
    if (a.broken == "mixed-task" or a.litter) and a.steps < 2 or "no-dump" in a.litter and a.ranks < 2:
        ap.error("--broken mixed-task and --litter need two steps (and no-dump two ranks)")
    if os.path.exists(a.out) and os.listdir(a.out):
        ap.error("%s is not empty" % a.out)
    torch.set_num_threads(1)  # tiny model; leave the other core alone
    global SUMMARY_MODE
    SUMMARY_MODE = a.summary_mode
    try:
        train(a, mistake)
    finally:
        SUMMARY_MODE = "statistics"
    if a.broken:
        break_tree(a)
    if a.text_stat:
        text_stat(a)
    for kind in a.odd_shape:
        odd_shape(a, kind)
    for kind in a.litter:
        litter(a, kind)
    print(a.out)


if __name__ == "__main__":
    main()
