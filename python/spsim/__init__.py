"""spsim from Python: the library's query, sweep and optimize (no second implementation).

    import spsim
    doc = spsim.query(model="llama3-8b", hw="dgx-h100", tp=2, pp=1, vpp=1, sp=True, gbs=8)
    doc["time"]["mfu"]                      # the document of `spsim query --format json`
    rows = list(spsim.sweep(model="llama3-8b", hw="dgx-h100", tp=[1, 2, 4], pp=1, vpp=1))
    best = spsim.optimize(model="llama3-8b", hw="dgx-h100", gpus=16, top=3)
    frame = spsim.sweep_frame(...)          # a pandas DataFrame where pandas is installed

Keywords are the library's sweep axes (spsim_sweep_axis_name: model, hw, tp, pp, dp, gpus, vpp,
sp, recompute, recompute_modules, recompute_method, recompute_layers, offload_layers, mbs, gbs,
seq, flash_attn, distributed_optimizer, overlap_grad_reduce, dtype, and whatever axes the library
adds); a value is an int, a bool (on/off), a string in the sweep's syntax ("1..8:*2", "on,off",
a module set as "core_attn+mlp") or a list of those. Errors raise spsim.Error subclasses by the CLI's
exit code, carrying spsim's one-line message and the field it names.
"""
import json
import numbers
import os
import re
import warnings

from . import _spsim

__all__ = ["query", "sweep", "sweep_frame", "optimize", "Error", "UsageError", "InputError",
           "ConfigError", "NoGPUError", "GPUError", "version"]

version = _spsim.version

# `spsim query`'s and `spsim sweep`'s defaults (src/cli: cli_config_defaults, the paper's GPT-3
# 175B setting, Korthikanti et al. 2022, Table 3 and section 6); the test suite checks that
# query() without arguments equals `spsim query --format json`.
QUERY_DEFAULTS = {"model": "gpt3-175b", "hw": "dgx-a100-80g", "tp": 8, "pp": 8, "vpp": 3,
                  "sp": True, "recompute": "selective", "mbs": 1, "gbs": 64}
# `spsim sweep`'s (src/cli/sweep.c build_sweep): the same, with pp and vpp derived per
# configuration ("auto": pp 8 or the largest below that divides the layers, vpp 3 where pp*3
# divides them), so that a Llama-class model is not swept at GPT-3's vpp 3 alone.
SWEEP_DEFAULTS = dict(QUERY_DEFAULTS, pp="auto", vpp="auto")
_BY = ("iteration_s", "total_bytes", "mfu", "tokens_per_s")  # spsim_sweep_by_name


class Error(Exception):
    """An error of spsim: `message` is the library's line, `field` the field it names (or None),
    `status` the library's enum spsim_status, `exit_code` what the spsim command would exit
    with."""

    exit_code = 1

    def __init__(self, message, field=None, status=None):
        super().__init__(message)
        self.message, self.field, self.status = message, field, status


class UsageError(Error):
    """An option or value spsim does not accept (the command's exit code 2)."""
    exit_code = 2


class InputError(Error):
    """A profile or spec file that cannot be read or is invalid (exit code 3)."""
    exit_code = 3


class ConfigError(Error):
    """A parallel configuration Megatron-LM's rules refuse, or a result beyond 64 bits (4)."""
    exit_code = 4


class NoGPUError(Error):
    """GPU support missing from this build, or no GPU (5)."""
    exit_code = 5


class GPUError(Error):
    """A CUDA, cuBLAS or NCCL call failed (6)."""
    exit_code = 6


_BY_EXIT = {2: UsageError, 3: InputError, 4: ConfigError, 5: NoGPUError, 6: GPUError}


def _call(fn, *args):
    try:
        return fn(*args)
    except _spsim.LibraryError as e:
        status, message, code = e.args
        m = re.search(r"field '([^']+)'", message)
        raise _BY_EXIT.get(code, Error)(message, m.group(1) if m else None, status) from None


def _scalar(key, value):
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if isinstance(value, str):
        if "\0" in value:  # the library's text ends at a NUL: "llama3-8b\0x" is not llama3-8b
            raise UsageError(f"field '{key}': the value holds a NUL character "
                             f"({_spsim.quote(value)})", key)
        return value
    raise TypeError(f"spsim: keyword '{key}' takes an int, a bool, a string or a list of those, "
                    f"not {type(value).__name__}")


def _text(value, key="value"):
    """A keyword's value in the sweep's syntax: an int, a bool (on/off), a string, or a list,
    tuple or range of those (joined by ','); any other type is a TypeError, not its str()."""
    if isinstance(value, (list, tuple, range)):
        return ",".join(_scalar(key, v) for v in value)
    return _scalar(key, value)


def _axes(given, defaults):
    axes = {k.replace("-", "_"): v for k, v in defaults.items()}
    axes.update({k.replace("-", "_"): v for k, v in given.items() if v is not None})
    return {k: _text(v, k) for k, v in axes.items()}


def _count(name, value, lowest, highest):
    """An option that is an integer in [lowest, highest] (as the command's --threads, --top)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"spsim: {name} takes an int, not {type(value).__name__}")
    if not lowest <= value <= highest:
        raise UsageError(f"{name}: {value} is not an integer in [{lowest}, {highest}]", name)
    return int(value)


def _options(feasible_only, top, by, threads, max_total_bytes, on_invalid, columns=None):
    """sweep's and optimize's run options, checked: threads=-1 would be 2^32 - 1 threads."""
    if not isinstance(feasible_only, bool):
        raise TypeError(f"spsim: feasible_only takes a bool, not {type(feasible_only).__name__}")
    if by not in _BY:
        raise UsageError(f"by: {_spsim.quote(str(by))} is not one of {', '.join(_BY)}", "by")
    if on_invalid is not None and not callable(on_invalid):
        raise TypeError("spsim: on_invalid takes a function of one line, or None")
    return {"feasible_only": feasible_only, "top": _count("top", top, 0, 1 << 32),
            "by": by, "threads": _count("threads", threads, 0, 256),
            "max_total_bytes": _count("max_total_bytes", max_total_bytes, 0, (1 << 64) - 1),
            "on_invalid": on_invalid,
            "columns": None if columns is None else _text(columns, "columns")}


_UNEVEN = ("first_stage_layers", "last_stage_layers", "account_embedding", "account_loss",
           "pipeline_layout")


def _derive_pipeline(config):
    """The command's derived defaults (src/cli/options.c cli_config_finish): the paper's vpp 3
    and pp 8 only where they divide the model's layers; otherwise no interleaving unless asked
    and the largest pp of 8, 7, ..., 1 that divides them; SP off at tp 1, with Megatron's
    warning. The layer count comes from the model itself, read by a one-stage query."""
    config = dict(config)

    def number(key):  # keywords may come as text ("8"), as from `spsim plot --config`
        try:
            return int(config.get(key, QUERY_DEFAULTS.get(key)))
        except (TypeError, ValueError):
            return None

    sp = config.get("sp", QUERY_DEFAULTS["sp"])
    if isinstance(sp, str):
        sp = sp in ("on", "true", "yes", "1")
    if sp and number("tp") == 1:
        warnings.warn("Disabling sequence parallelism because tensor model parallelism is "
                      "disabled", stacklevel=3)
        config["sp"] = False
    pp, vpp = number("pp"), number("vpp")
    if (config.get("pp") is not None and config.get("vpp") is not None) or not (pp and vpp):
        return config
    probe = dict(config, pp=1, vpp=1, dp=1, gbs=config.get("mbs", QUERY_DEFAULTS["mbs"]))
    for key in _UNEVEN + ("gpus",):
        probe.pop(key, None)
    sw = _call(_spsim.sweep_create, _axes(probe, QUERY_DEFAULTS), None, 0, 0, 0)
    layers = json.loads(_call(_spsim.query, sw, 0))["memory"]["layers_per_stage"]
    uneven = any(config.get(k) for k in _UNEVEN)
    if config.get("vpp") is None and (config.get("pipeline_layout") or layers % (pp * vpp)):
        config["vpp"] = 1
    if config.get("pp") is None and not uneven:
        config["pp"] = next(p for p in range(8, 0, -1) if layers % p == 0)
    return config


def query(**config):
    """The document of `spsim query --format json` for one configuration, as dicts. Unset
    keywords take the command's defaults (QUERY_DEFAULTS; seq: the model's). The result's
    warnings are also issued with warnings.warn."""
    config = _derive_pipeline(config)
    sw = _call(_spsim.sweep_create, _axes(config, QUERY_DEFAULTS), None, 0, 0, 0)
    if _spsim.sweep_size(sw) != 1:
        raise UsageError("query takes one value per option; spsim.sweep takes lists")
    doc = json.loads(_call(_spsim.query, sw, 0))
    for text in doc["warnings"]:
        warnings.warn(text, stacklevel=2)
    return doc


def _run(sw, begin, end, opts):
    rows, invalid, stats = _call(_spsim.sweep_run, sw, begin, end, opts["feasible_only"],
                                 opts["top"], opts["by"], opts["threads"],
                                 opts["max_total_bytes"], opts["on_invalid"] is not None,
                                 opts.get("columns"))
    if opts["on_invalid"] is not None:
        for line in invalid.splitlines():
            opts["on_invalid"](line)
    return [json.loads(line) for line in rows.splitlines()]


def _rows(sw, opts, block=1 << 16):
    if opts["top"]:
        yield from _run(sw, 0, 0, opts)
        return
    size = _spsim.sweep_size(sw)
    for begin in range(0, size, block):
        yield from _run(sw, begin, min(size, begin + block), opts)


def sweep(spec=None, *, feasible_only=False, top=0, by="tokens_per_s", threads=0,
          max_total_bytes=0, on_invalid=None, columns=None, **axes):
    """The rows of `spsim sweep --format jsonl` (dicts keyed by the CSV columns), in the sweep's
    order or, with top=K, the best K by `by` (tokens_per_s, iteration_s, total_bytes, mfu).
    `spec` is a JSON sweep spec file (doc/sweep.md) whose axes the keywords replace; the other
    axes take
    `spsim sweep`'s defaults. on_invalid(line) receives each invalid configuration with the rule
    it breaks. columns (a list, or "a,b,...") keeps only those keys, in that order, as
    `spsim sweep --columns`. Rows are produced lazily, 65,536 points at a time."""
    opts = _options(feasible_only, top, by, threads, max_total_bytes, on_invalid, columns)
    if spec is not None:
        spec = os.fspath(spec)
    defaults = SWEEP_DEFAULTS if spec is None else _unset(spec, axes)
    sw = _call(_spsim.sweep_create, _axes(axes, defaults), spec, 0, 0, 0)
    return _rows(sw, opts)


def _unset(spec, axes):
    """The defaults for the axes neither the spec file nor the keywords set (as `spsim sweep
    --spec` applies them); a file that cannot be read is left to the library to report."""
    try:
        with open(spec, encoding="utf-8") as f:
            in_file = {k.replace("-", "_") for k in json.load(f)}
    except (OSError, ValueError, TypeError):
        in_file = set()
    return {k: v for k, v in SWEEP_DEFAULTS.items() if k not in in_file and k not in axes}


def sweep_frame(spec=None, **kwargs):
    """sweep(...) as a pandas DataFrame (pandas is needed only here)."""
    import pandas  # noqa: imported on use: the module works without pandas
    return pandas.DataFrame.from_records(list(sweep(spec, **kwargs)))


def optimize(*, model, hw, gpus, gbs=None, top=5, by="tokens_per_s", max_memory_gib=None,
             threads=0, exhaustive=False, **constraints):
    """The best `top` configurations of `model` on `gpus` GPUs that fit in memory, best first,
    as the rows of `spsim optimize --format jsonl`: the same search (spsim_optimize_run over
    spsim_sweep_spec_optimize_space's space; keywords restrict it as optimize's options do).
    `threads`: threads of the search (0: every core); the answer is the same for any."""
    gpus = _count("gpus", gpus, 1, 1 << 24)
    if max_memory_gib is not None and (isinstance(max_memory_gib, bool) or
                                       not isinstance(max_memory_gib, numbers.Real)):
        raise TypeError(f"spsim: max_memory_gib takes a number, not {type(max_memory_gib).__name__}")
    if max_memory_gib is not None and not 0 < max_memory_gib < float(1 << 34):
        raise UsageError(f"max_memory_gib: {max_memory_gib} is not a size in GiB above 0",
                         "max_memory_gib")
    _options(True, _count("top", top, 1, 1000), by, threads, 0, None)  # checks top, by, threads
    axes = dict(constraints, model=model, hw=hw, gpus=gpus, gbs=gbs)
    limit = int(max_memory_gib * 1073741824.0) if max_memory_gib else 0
    text, smallest = _call(_spsim.optimize, _axes(axes, {}), int(gpus), int(top), by, limit,
                           bool(exhaustive), int(threads))
    rows = [json.loads(line) for line in text.splitlines()]
    if not rows:
        need = f": the smallest needs {smallest / 2**30:.2f} GiB per GPU" if smallest >= 0 else ""
        raise ConfigError(f"none of the configurations of {model} on {gpus} GPUs fits{need}")
    return rows
