"""Pictures of spsim's answers with matplotlib (python3 -m spsim.plot, or spsim plot).

    python3 -m spsim.plot memory --model paper-175b --tp 1,2,4,8 -o fig1.svg
    python3 -m spsim.plot time sweep.csv --top 8 -o breakdown.png
    python3 -m spsim.plot pareto sweep.csv -o pareto.svg
    python3 -m spsim.plot timeline trace.json -o timeline.png

memory: activation memory of the six modes of Korthikanti et al. 2022 (Table 2) against tp, per
layer, and the first pipeline stage's whole memory in each mode (weights, gradients, optimizer
state and activations) against the memory the GPU holds for tensors (the paper's Figure 1 style);
every other option is a query option (--hw, --pp, --seq, ...). time: the iteration time of
configurations as stacked bars of its terms, from a sweep's CSV (`spsim sweep -o FILE`; --top K:
the K fastest of those that fit) or from queries (--config 'tp=8,pp=8' repeated). pareto: a
sweep's MFU against memory per GPU, the configurations that fit and those that do not, and the
Pareto front of those that fit.
timeline: one iteration's schedule from `spsim trace -o FILE` (Chrome trace-event JSON): a row
per pipeline rank and stream, a box per forward, backward, send and tail step.
The format follows the output's suffix (.png, .svg, .pdf); SVG text stays text.

Exit status: 0 ok, 2 bad option, 3 unreadable CSV or profile, 4 invalid configuration, 1 other
failure (matplotlib missing, output not writable).
"""
import argparse
import csv
import json
import math
import os
import stat
import sys
import tempfile

import spsim
from spsim import _spsim

GIB = 1024.0 ** 3
MODES = ["none", "tp", "tp_sp", "tp_selective", "tp_sp_selective", "full"]
MODE_LABELS = {"none": "no parallelism", "tp": "tensor parallel", "tp_sp": "TP + sequence parallel",
               "tp_selective": "TP + selective recompute",
               "tp_sp_selective": "TP + SP + selective recompute", "full": "full recompute"}
# The terms of time.iteration_s (spsim_result_fields, time.*); what they leave (the pipeline's
# point-to-point sends) is drawn as "other".
TIME_TERMS = [("time_forward_s", "forward"), ("time_backward_s", "backward"),
              ("time_recompute_s", "recomputation"), ("time_tp_exposed_s", "exposed TP comm."),
              ("time_pp_bubble_s", "pipeline bubble"), ("time_dp_exposed_s", "exposed DP reduce"),
              ("time_tied_embedding_allreduce_s", "tied-embedding AllReduce"),
              ("time_optimizer_s", "optimizer step")]
CONFIG_KEYS = ["tp", "pp", "dp", "vpp", "sp", "recompute", "mbs"]


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    matplotlib.rcParams["svg.fonttype"] = "none"  # labels stay <text>, searchable and editable
    import matplotlib.pyplot as plt
    return plt


# Each mode its own marker and dash, so that two modes of equal memory (tp and none at tp 1,
# or the selective modes when attention is flash's) stay visible one over the other.
MODE_STYLES = {"none": ("o", "-", 9), "tp": ("s", "--", 7.5), "tp_sp": ("^", "-.", 6.5),
               "tp_selective": ("D", ":", 5.5), "tp_sp_selective": ("v", (0, (5, 2, 1, 2)), 4.5),
               "full": ("x", (0, (1, 1)), 6)}


def memory_series(docs):
    """The memory figure's lines from one query document per tp: each mode's activations per
    layer (left) and the first stage's whole memory in that mode (right: weights, gradients,
    optimizer state and activations, memory.total_modes_bytes), in GiB, and the memory the GPU
    holds for tensors (memory.capacity_bytes: HBM less what the CUDA context and NCCL keep)."""
    left = {m: [d["memory"]["activation_modes_bytes"][m] / GIB for d in docs] for m in MODES}
    right = {m: [d["memory"]["total_modes_bytes"][m] / GIB for d in docs] for m in MODES}
    return left, right, docs[0]["memory"]["capacity_bytes"] / GIB


def memory_figure(tps, **config):
    """Figure: the six modes' activation memory per layer and the first stage's whole memory
    against tp (spsim.query for each tp), beside the memory the GPU has for tensors."""
    plt = _pyplot()
    # Every document holds all six modes at its tp; sp only has to be valid (it needs tp > 1).
    docs = [spsim.query(**dict(config, tp=tp, sp=tp > 1)) for tp in tps]
    left_y, right_y, cap = memory_series(docs)
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5))
    for mode in MODES:
        marker, dash, size = MODE_STYLES[mode]
        style = dict(marker=marker, linestyle=dash, markersize=size, fillstyle="none",
                     label=MODE_LABELS[mode])
        left.plot(tps, left_y[mode], **style)
        right.plot(tps, right_y[mode], **style)
    right.axhline(cap, color="black", linestyle="--", label=f"memory for tensors ({cap:.1f} GiB)")
    for ax, what in ((left, "activation memory per layer"),
                     (right, "first stage, every tensor")):
        ax.set_xscale("log", base=2)
        ax.set_xticks(tps, [str(t) for t in tps])
        ax.set_xlabel("tensor parallel size (tp)")
        ax.set_ylabel(f"{what} (GiB)")
        ax.grid(True, alpha=0.3)
    right.legend(fontsize=8)
    fig.suptitle(f"Memory by mode: {docs[0]['model']} on {docs[0]['hardware']}, "
                 f"seq {docs[0]['config']['seq']}, mbs {docs[0]['config']['mbs']}")
    fig.tight_layout()
    return fig


# The columns the pictures draw: a NaN, an infinity or a negative value in one of them would be
# drawn as nothing or as a bar below the axis; such a file is refused, naming the row.
DRAWN = {"time_mfu", "memory_total_bytes", "time_iteration_s", "memory_capacity_bytes"} | \
    {key for key, _ in TIME_TERMS}


def _read_csv(path):
    """The CSV's bytes ('-': standard input): a regular file as every spsim input (a FIFO or a
    device is refused at once instead of blocking: _spsim.open_input, the library's rule)."""
    if path == "-":
        return sys.stdin.buffer.read()
    try:
        fd = _spsim.open_input(path)
    except _spsim.LibraryError as e:
        raise spsim.InputError(e.args[1]) from None
    with open(fd, "rb") as f:
        return f.read()


def read_rows(path):
    """Rows of a sweep's CSV ('-': standard input), numbers as floats; the command's errors
    (spsim.InputError naming the file, and the line where a row is at fault) for a file that is
    not one: not UTF-8, a row cut short, a drawn value that is NaN, infinite or negative."""
    name = _spsim.escape(path)
    try:
        data = _read_csv(path)
    except OSError as e:
        raise spsim.InputError(f"{name}: {e.strerror}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise spsim.InputError(f"{name}: line {line}: not UTF-8 (byte offset {e.start}); spsim "
                               "sweep writes UTF-8") from None
    # A shard's first and last lines ("#spsim shard ...") are not rows; `numbers` maps the
    # reader's line count back to the file's lines.
    numbers = [n for n, line in enumerate(text.splitlines(True), 1) if not line.startswith("#")]
    reader = csv.reader(line for line in text.splitlines(True) if not line.startswith("#"))
    try:
        table = [(numbers[reader.line_num - 1] if reader.line_num else 0, r) for r in reader]
    except csv.Error as e:
        raise spsim.InputError(f"{name}: line {numbers[reader.line_num - 1]}: {e}") from None
    header = table[0][1] if table else []
    need = {"time_mfu", "memory_total_bytes", "memory_fits", "time_iteration_s"}
    missing = need - set(header)
    if missing:
        raise spsim.InputError(f"{name}: field '{sorted(missing)[0]}': not a spsim sweep CSV "
                               "(spsim sweep -o FILE writes one)", sorted(missing)[0])
    return [_row(name, line, header, fields) for line, fields in table[1:]]


def _row(name, line, header, fields):
    if len(fields) != len(header):
        raise spsim.InputError(f"{name}: line {line}: {len(fields)} fields where the header has "
                               f"{len(header)} (a file cut short?)")
    row = {k: _number(v) for k, v in zip(header, fields)}
    for key in sorted(DRAWN & row.keys()):
        v = row[key]
        if not isinstance(v, float) or not math.isfinite(v) or v < 0:
            raise spsim.InputError(f"{name}: line {line}: field '{key}': "
                                   f"{_spsim.quote(fields[header.index(key)])} is not a finite "
                                   "number >= 0", key)
    return row


def _number(text):
    if text in ("true", "false"):
        return text == "true"
    try:
        return float(text)
    except ValueError:
        return text


def _label(row):
    def value(k):
        v = row[k]
        return ("on" if v else "off") if isinstance(v, bool) else \
            str(int(v)) if isinstance(v, float) else str(v)
    keys = [k for k in CONFIG_KEYS if k in row]
    return " ".join(f"{k} {value(k)}" for k in keys[:4]) + "\n" + \
        " ".join(f"{k} {value(k)}" for k in keys[4:])


def time_figure(rows):
    """Figure: each row's iteration time as stacked bars of its terms."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(max(6, 1.1 * len(rows) + 3), 5))
    x = range(len(rows))
    bottom = [0.0] * len(rows)
    for key, label in TIME_TERMS + [(None, "other (pipeline sends)")]:
        if key is None:
            heights = [max(0.0, r["time_iteration_s"] - b) for r, b in zip(rows, bottom)]
        else:
            heights = [r[key] for r in rows]
        ax.bar(x, heights, bottom=bottom, label=label)
        bottom = [b + h for b, h in zip(bottom, heights)]
    ax.set_xticks(list(x), [_label(r) for r in rows], fontsize=7, rotation=30, ha="right")
    ax.set_ylabel("time per iteration (s)")
    ax.set_xlabel("configuration")
    ax.set_title(f"Iteration time by term: {rows[0]['model']} on {rows[0]['hw']}")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.tight_layout()
    return fig


def pareto_front(rows):
    """The rows that fit for which no other row that fits has both less memory and more MFU
    (ties in memory keep the best MFU), by memory."""
    front, best = [], -1.0
    for r in sorted((r for r in rows if r["memory_fits"]),
                    key=lambda r: (r["memory_total_bytes"], -r["time_mfu"])):
        if r["time_mfu"] > best:
            front.append(r)
            best = r["time_mfu"]
    return front


def pareto_figure(rows):
    """Figure: MFU against memory per GPU; the Pareto front of the configurations that fit."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 5))
    for fits, style in ((False, dict(color="lightgray", label="does not fit")),
                        (True, dict(color="tab:blue", label="fits in HBM"))):
        sel = [r for r in rows if bool(r["memory_fits"]) == fits]
        ax.scatter([r["memory_total_bytes"] / GIB for r in sel],
                   [100 * r["time_mfu"] for r in sel], s=10, **style)
    front = pareto_front(rows)
    ax.plot([r["memory_total_bytes"] / GIB for r in front], [100 * r["time_mfu"] for r in front],
            color="tab:red", marker="o", drawstyle="steps-post", label="Pareto front (fits)")
    cap = rows[0]["memory_capacity_bytes"] / GIB if "memory_capacity_bytes" in rows[0] else None
    if cap:
        ax.axvline(cap, color="black", linestyle="--", label=f"HBM capacity ({cap:.0f} GiB)")
    ax.set_xlabel("memory per GPU (GiB)")
    ax.set_ylabel("MFU (%)")
    ax.set_title(f"MFU against memory: {len(rows)} configurations, {len(front)} on the front")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def _axes(tokens):
    """`--name value` pairs the parser does not know: query options (the library's axes)."""
    axes, i = {}, 0
    while i < len(tokens):
        if not tokens[i].startswith("--") or i + 1 >= len(tokens):
            raise spsim.UsageError(f"{_spsim.quote(tokens[i])}: expected --OPTION VALUE")
        axes[tokens[i][2:].replace("-", "_")] = tokens[i + 1]
        i += 2
    return axes


def _config(text):
    items = [item for item in text.split(",") if item]
    bad = [item for item in items if "=" not in item]
    if bad:
        raise spsim.UsageError(f"--config: {_spsim.quote(bad[0])} is not KEY=VALUE")
    return dict(item.split("=", 1) for item in items)


def _tps(text):
    try:
        return [int(t) for t in text.split(",")]
    except ValueError:
        raise spsim.UsageError(f"--tp: {_spsim.quote(text)} is not a list of integers",
                               "tp") from None


def _parser():
    p = argparse.ArgumentParser(prog="spsim plot", description=__doc__.split("\n\n")[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 2)[2])
    p.add_argument("kind", choices=["memory", "time", "pareto", "timeline"])
    p.add_argument("csv", nargs="?", help="a sweep's CSV (time, pareto), a trace's JSON "
                   "(timeline); '-' for standard input")
    p.add_argument("-o", "--output", required=True, help="FILE.png, FILE.svg or FILE.pdf")
    p.add_argument("--tp", default="1,2,4,8", help="memory: the tp values (default 1,2,4,8)")
    p.add_argument("--top", type=int, default=0,
                   help="time: the best K rows that fit in HBM by time_iteration_s (default: "
                   "every row, at most 24)")
    p.add_argument("--config", action="append", default=[],
                   help="time: a configuration as 'tp=8,pp=8,...' (repeatable) instead of a CSV")
    return p


TIMELINE_COLOURS = {"forward": "#4c72b0", "backward": "#dd8452", "p2p": "#55a868",
                    "comm": "#c44e52", "tail": "#8172b3"}
TIMELINE_LABELS = {"forward": "forward", "backward": "backward (with recomputation)",
                   "p2p": "pipeline send", "comm": "exposed TP/CP/EP comm.",
                   "tail": "DP reduction, optimizer"}


def read_trace(path):
    """The complete events of a trace-event JSON file (spsim trace), and its stream names."""
    try:
        if path == "-":
            doc = json.load(sys.stdin)
        else:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
    except OSError as e:
        raise spsim.InputError(f"{_spsim.escape(path)}: {e.strerror}") from None
    except ValueError as e:
        raise spsim.InputError(f"{_spsim.escape(path)}: not JSON ({e})") from None
    events = doc.get("traceEvents") if isinstance(doc, dict) else None
    if not isinstance(events, list):
        raise spsim.InputError(f"{_spsim.escape(path)}: no 'traceEvents' list (spsim trace -o "
                               "FILE writes one)")
    names, boxes = {}, []
    for i, e in enumerate(events):
        if not isinstance(e, dict) or e.get("ph") not in ("X", "M"):
            raise spsim.InputError(f"{_spsim.escape(path)}: event {i}: not a complete ('X') or "
                                   "metadata ('M') event")
        if e["ph"] == "M":
            if e.get("name") == "thread_name":
                names[(e.get("pid"), e.get("tid"))] = str(e.get("args", {}).get("name", ""))
            continue
        try:
            boxes.append((int(e["pid"]), int(e["tid"]), float(e["ts"]) * 1e-6,
                          float(e["dur"]) * 1e-6, str(e.get("cat", ""))))
        except (KeyError, TypeError, ValueError):
            raise spsim.InputError(f"{_spsim.escape(path)}: event {i}: pid, tid, ts and dur "
                                   "are needed") from None
    if not boxes:
        raise spsim.InputError(f"{_spsim.escape(path)}: no events")
    return boxes, names


def timeline_figure(boxes, names):
    plt = _pyplot()
    rows = sorted({(pid, tid) for pid, tid, _, _, _ in boxes})
    at = {key: i for i, key in enumerate(rows)}
    fig, ax = plt.subplots(figsize=(12, 1.0 + 0.35 * len(rows)))
    seen = set()
    for pid, tid, ts, dur, cat in boxes:
        colour = TIMELINE_COLOURS.get(cat, "#937860")
        label = TIMELINE_LABELS.get(cat, cat) if cat not in seen else None
        seen.add(cat)
        ax.broken_barh([(ts, dur)], (at[(pid, tid)] - 0.4, 0.8), facecolors=colour,
                       edgecolor="white", linewidth=0.3, label=label)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([f"rank {pid}: {names.get((pid, tid), tid)}" for pid, tid in rows])
    ax.invert_yaxis()
    ax.set_xlabel("time in the iteration (s)")
    ax.set_title("One iteration, pipeline rank by rank (spsim trace)")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12 - 0.2 / max(len(rows), 1)),
              ncol=5, frameon=False)
    fig.tight_layout()
    return fig


def _figure(args, axes):
    if args.kind == "timeline":
        if not args.csv:
            raise spsim.UsageError("timeline: a trace is needed (spsim trace -o FILE)")
        return timeline_figure(*read_trace(args.csv))
    if args.kind == "memory":
        return memory_figure(_tps(args.tp), **axes)
    if args.kind == "time" and args.config:
        rows = [_flat(spsim.query(**dict(axes, **_config(c)))) for c in args.config]
        return time_figure(rows)
    if not args.csv:
        raise spsim.UsageError(f"{args.kind}: a sweep's CSV is needed (spsim sweep -o FILE)")
    rows = read_rows(args.csv)
    if not rows:
        raise spsim.InputError(f"{_spsim.escape(args.csv)}: no rows")
    if args.kind == "pareto":
        return pareto_figure(rows)
    if args.top:
        rows = best_rows(rows, args.top, args.csv)
    return time_figure(rows[:24])


def best_rows(rows, top, path="-"):
    """The `top` fastest rows by time_iteration_s among those that fit in HBM (memory_fits): a
    configuration that does not fit is no plan, however fast. spsim.InputError when none fits."""
    fit = [r for r in rows if r.get("memory_fits") is True]
    if not fit:
        raise spsim.InputError(f"{_spsim.escape(path)}: none of its {len(rows)} rows fits in HBM "
                               "(memory_fits); --top ranks only those that fit", "memory_fits")
    return sorted(fit, key=lambda r: r["time_iteration_s"])[:top]


def _flat(doc):
    """A query's document as a sweep row (the CSV's column names)."""
    row = {"model": doc["model"], "hw": doc["hardware"], **doc["config"]}
    for section in ("memory", "time"):
        for k, v in doc[section].items():
            if not isinstance(v, dict):
                row[f"{section}_{k}"] = v
    return row


def save(fig, path):
    """Write the figure atomically: a temporary file beside `path`, then a rename."""
    fmt = os.path.splitext(path)[1][1:].lower()
    if fmt not in ("png", "svg", "pdf"):
        raise spsim.UsageError(f"-o {_spsim.escape(path)}: the name must end in .png, .svg or "
                               ".pdf")
    # As the command's -o: a link is followed (its target replaced, the link kept), an existing
    # file keeps its permission bits, a new one gets 0666 less the umask (not mkstemp's 0600).
    target = os.path.realpath(path)
    if os.path.exists(target):
        mode = stat.S_IMODE(os.stat(target).st_mode)
    else:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(target), suffix="." + fmt)
    try:
        with os.fdopen(fd, "wb") as f:
            fig.savefig(f, format=fmt, dpi=120)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        os.unlink(tmp)
        raise


def main(argv=None):
    args, rest = _parser().parse_known_args(argv)
    try:
        _pyplot()
    except ImportError:
        print("spsim: error: plots need matplotlib (apt-get install python3-matplotlib)",
              file=sys.stderr)
        return 1
    try:
        save(_figure(args, _axes(rest)), args.output)
    except spsim.Error as e:
        print(f"spsim: error: {_spsim.escape(e.message)}", file=sys.stderr)
        return e.exit_code
    except OSError as e:
        print(f"spsim: error: {_spsim.escape(args.output)}: {e.strerror}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
