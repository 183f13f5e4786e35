#!/usr/bin/env python3
"""The library's dependency rule (doc/architecture.md), checked on the sources and the objects.

profiles <- engine <- interop <- {sweep, calibrate}; gpu uses engine and calibrate; util.c and
internal.h serve all. Checked two ways: the #include lines of every file under src/ (a part may include
only its own headers and those of the parts below it), and the symbols the core library's
objects define and use (no object calls a part above its own, and no files call each other in a
circle, of two or of more); and no function is longer than 80 lines. Usage: architecture.py SOURCE_DIR CORE_STATIC_LIBRARY
"""
import re
import subprocess
import sys
from pathlib import Path

# What each part may include, besides its own folder, internal.h, config.h and public headers.
BELOW = {
    "profiles": set(),
    "engine": {"profiles"},
    "interop": {"profiles", "engine"},
    "sweep": {"profiles", "engine", "interop"},
    "calibrate": {"profiles", "engine", "interop"},
    "gpu": {"profiles", "engine", "interop", "calibrate"},
    "cli": set(),  # the command uses the public API only
}
RANK = {"util": 0, "profiles": 1, "engine": 2, "interop": 3, "sweep": 4, "calibrate": 4, "gpu": 5}


def include_errors(src):
    errors = []
    for path in sorted(src.rglob("*.[ch]")):
        part = path.parent.name if path.parent != src else "util"
        for lineno, line in enumerate(path.read_text().splitlines(), 1):
            m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
            if not m:
                continue
            inc = m.group(1)
            if inc.startswith("spsim/") or inc in ("config.h", "dtoa_tables.h"):
                continue
            if "/" in inc:
                target = inc.split("/")[0]
            elif (path.parent / inc).exists():
                target = part
            else:
                target = "util" if inc == "internal.h" else "?"
            if part == "cli" and target != "cli":
                errors.append(f"{path}:{lineno}: the CLI includes the private header {inc}")
            elif part == "util" and target not in ("util",):
                errors.append(f"{path}:{lineno}: {inc} is above the shared helpers")
            elif target not in (part, "util") and target not in BELOW.get(part, set()):
                errors.append(f"{path}:{lineno}: {part}/ includes {inc} ({target}/ is not below it)")
    return errors


MAX_FUNCTION_LINES = 80


def long_functions(src):
    """Functions longer than MAX_FUNCTION_LINES: the project's style (.clang-format) puts a
    function's opening and closing braces alone in column 0."""
    errors = []
    for path in sorted(src.rglob("*.c")):
        lines = path.read_text().splitlines()
        start = None
        for i, line in enumerate(lines):
            if line == "{":
                start = i
            elif line == "}" and start is not None:
                if i - start + 1 > MAX_FUNCTION_LINES:
                    name = next((l.split("(")[0] for l in reversed(lines[:start])
                                 if re.match(r"^[A-Za-z_]\w*\(", l)), "?")
                    errors.append(f"{path}:{start + 1}: {name} has {i - start + 1} lines "
                                  f"(at most {MAX_FUNCTION_LINES})")
                start = None
    return errors


def symbol_errors(archive):
    out = subprocess.run(["nm", "-A", archive], check=True, capture_output=True, text=True).stdout
    defined, used = {}, []
    for line in out.splitlines():
        m = re.match(r"[^:]*:([^:]+):\s*(?:[0-9a-f]+)?\s+([A-Za-z])\s+(\S+)$", line)
        if not m:
            continue
        obj, kind, sym = m.groups()
        obj = obj.rsplit("/", 1)[-1]  # thin archives name members by path
        if kind == "U":
            used.append((obj, sym))
        elif kind in "TDBR":
            defined[sym] = obj

    def part(obj):
        head = obj.split("_")[0]
        return head if head in RANK else "util"

    edges = {(obj, defined[sym]) for obj, sym in used if sym in defined and defined[sym] != obj}
    errors = []
    for a, b in sorted(edges):
        if RANK[part(a)] < RANK[part(b)] or (part(a) != part(b) and RANK[part(a)] == RANK[part(b)]):
            errors.append(f"{a} uses {b}: {part(a)}/ must not call {part(b)}/")
    return errors + circle_errors(edges)


def circle_errors(edges):
    """Files that call each other round a circle (Tarjan's strongly connected components)."""
    succ = {}
    for a, b in edges:
        succ.setdefault(a, []).append(b)
    index, low, stack, on, circles = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(succ.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            ring = []
            while True:
                w = stack.pop()
                on.discard(w)
                ring.append(w)
                if w == v:
                    break
            if len(ring) > 1:
                circles.append(sorted(ring))

    for v in sorted(succ):
        if v not in index:
            visit(v)
    return [" and ".join(ring) + " call each other" for ring in sorted(circles)]


def main():
    src, archive = Path(sys.argv[1]) / "src", sys.argv[2]
    top = [p.name for p in src.glob("*.c") if p.name != "util.c"]
    errors = [f"src/{name}: only util.c stays at the top of src/" for name in top]
    errors += include_errors(src) + long_functions(src) + symbol_errors(archive)
    for e in errors:
        print("FAIL:", e)
    if not errors:
        print("architecture: includes and symbols follow profiles <- engine <- interop <- "
              "{sweep, calibrate}; no circle of calls; "
              f"no function above {MAX_FUNCTION_LINES} lines")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
