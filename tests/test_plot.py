#!/usr/bin/env python3
"""spsim plot (python3 -m spsim.plot): each picture rendered as PNG and SVG, its size, and the
axes' labels as SVG text; the Pareto front on rows whose front is known; the errors.
Usage: test_plot.py SPSIM_EXECUTABLE (PYTHONPATH holds BUILD/python)."""
import os
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

SPSIM = sys.argv.pop(1) if len(sys.argv) > 1 else "spsim"

try:
    import matplotlib  # noqa: F401
except ImportError:
    print("matplotlib is not installed: skipped")
    sys.exit(77)

from spsim import plot  # noqa: E402


def svg_texts(path):
    return {"".join(e.itertext()).strip() for e in ET.parse(path).iter()
            if e.tag.endswith("text")}


class Pictures(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp()
        cls.csv = os.path.join(cls.dir, "sweep.csv")
        subprocess.run([SPSIM, "sweep", "--model", "llama3-8b", "--hw", "dgx-h100", "--gpus",
                        "16", "--tp", "1,2,4,8", "--pp", "1,2,4", "--vpp", "1", "--mbs", "1,2",
                        "--sp", "on,off", "--recompute", "none,selective,full", "--gbs", "64",
                        "--quiet", "-o", cls.csv], check=True)

    def draw(self, name, *args, via_cli=False):
        """Both formats; returns the SVG's texts."""
        for suffix in ("png", "svg"):
            out = os.path.join(self.dir, f"{name}.{suffix}")
            cmd = [SPSIM, "plot"] if via_cli else [sys.executable, "-m", "spsim.plot"]
            p = subprocess.run(cmd + list(args) + ["-o", out], capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(out, "rb") as f:
                data = f.read()
            self.assertGreater(len(data), 10000, out)
            if suffix == "png":
                self.assertEqual(data[:8], b"\x89PNG\r\n\x1a\n")
        return svg_texts(out)

    def test_memory(self):
        texts = self.draw("memory", "memory", "--model", "paper-175b", "--tp", "1,2,4,8",
                          via_cli=True)
        for label in ("tensor parallel size (tp)", "activation memory per layer (GiB)",
                      "first stage, every tensor (GiB)",
                      "no parallelism",
                      "tensor parallel", "TP + sequence parallel", "TP + selective recompute",
                      "TP + SP + selective recompute", "full recompute",
                      "memory for tensors (74.5 GiB)", "1", "2", "4", "8"):
            self.assertIn(label, texts)

    def test_time_from_csv_and_from_queries(self):
        texts = self.draw("time", "time", self.csv, "--top", "5")
        for label in ("time per iteration (s)", "configuration", "forward", "backward",
                      "pipeline bubble", "exposed TP comm.", "optimizer step"):
            self.assertIn(label, texts)
        texts = self.draw("time2", "time", "--config", "tp=8,pp=8", "--config",
                          "tp=4,pp=16,vpp=1")
        self.assertIn("Iteration time by term: gpt3-175b on dgx-a100-80g", texts)

    def test_timeline(self):
        trace = os.path.join(self.dir, "trace.json")
        subprocess.run([SPSIM, "trace", "--model", "llama3-8b", "--hw", "dgx-h100", "--tp", "2",
                        "--pp", "4", "--vpp", "2", "--gbs", "8", "-o", trace], check=True)
        texts = self.draw("timeline", "timeline", trace, via_cli=True)
        for label in ("time in the iteration (s)", "rank 0: compute", "rank 3: pipeline sends",
                      "forward", "backward (with recomputation)", "DP reduction, optimizer"):
            self.assertIn(label, texts)
        boxes, _ = plot.read_trace(trace)
        # 4 ranks x 8 micro-batches x 2 chunks x (forward, backward) on the compute streams
        self.assertEqual(sum(1 for b in boxes if b[4] in ("forward", "backward")), 128)
        bad = os.path.join(self.dir, "bad.json")
        with open(bad, "w") as f:
            f.write('{"events": []}')
        out = os.path.join(self.dir, "bad.png")
        p = subprocess.run([SPSIM, "plot", "timeline", bad, "-o", out], capture_output=True,
                           text=True)
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertIn("no 'traceEvents' list", p.stderr)
        self.assertFalse(os.path.exists(out))

    def test_pareto(self):
        texts = self.draw("pareto", "pareto", self.csv, via_cli=True)
        for label in ("memory per GPU (GiB)", "MFU (%)", "Pareto front (fits)", "fits in HBM",
                      "does not fit"):
            self.assertIn(label, texts)
        rows = plot.read_rows(self.csv)
        front = plot.pareto_front(rows)
        # Every row that fits is dominated by (or on) the front: no row has less memory and
        # more MFU than a front point.
        fits = [r for r in rows if r["memory_fits"]]
        for p in front:
            self.assertFalse(any(r["memory_total_bytes"] < p["memory_total_bytes"] and
                                 r["time_mfu"] >= p["time_mfu"] for r in fits))
        self.assertEqual(max(r["time_mfu"] for r in fits), front[-1]["time_mfu"])

    def test_shard_csv_link_and_mode(self):
        shard = os.path.join(self.dir, "shard.csv")
        subprocess.run([SPSIM, "sweep", "--model", "llama3-8b", "--hw", "dgx-h100", "--tp",
                        "1,2,4", "--pp", "1", "--vpp", "1", "--gbs", "64", "--sp", "off",
                        "--recompute", "none", "--shard", "0/1", "--quiet", "-o", shard],
                       check=True)
        target = os.path.join(self.dir, "target.svg")
        with open(target, "w") as f:
            f.write("old")
        os.chmod(target, 0o640)
        link = os.path.join(self.dir, "link.svg")
        os.symlink(target, link)
        p = subprocess.run([SPSIM, "plot", "pareto", shard, "-o", link], capture_output=True,
                           text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(os.path.islink(link))
        self.assertEqual(os.stat(target).st_mode & 0o777, 0o640)
        self.assertIn("MFU (%)", svg_texts(target))

    def test_front_of_known_rows(self):
        rows = [dict(memory_fits=f, memory_total_bytes=m, time_mfu=u) for f, m, u in
                [(True, 10, 0.2), (True, 20, 0.1), (True, 20, 0.4), (True, 30, 0.3),
                 (False, 5, 0.9), (True, 40, 0.5)]]
        self.assertEqual([(r["memory_total_bytes"], r["time_mfu"]) for r in
                          plot.pareto_front(rows)], [(10, 0.2), (20, 0.4), (40, 0.5)])

    def test_errors_leave_the_output(self):
        out = os.path.join(self.dir, "kept.svg")
        with open(out, "w") as f:
            f.write("old")
        for args, code, text in (
                (["time", "/nonexistent.csv"], 3, "/nonexistent.csv: cannot open: No such file"),
                (["pareto", os.devnull], 3, "not a regular file (a character device)"),
                (["memory", "--hw", "no-such-hw"], 3, "no hardware profile named 'no-such-hw'"),
                (["memory", "--tp", "5"], 4, "field 'tp'"),
                (["pareto"], 2, "a sweep's CSV is needed")):
            p = subprocess.run([SPSIM, "plot"] + args + ["-o", out], capture_output=True,
                               text=True)
            self.assertEqual(p.returncode, code, p.stderr)
            self.assertIn(text, p.stderr)
            self.assertTrue(p.stderr.startswith("spsim: error: "), p.stderr)
            with open(out) as f:
                self.assertEqual(f.read(), "old")
        p = subprocess.run([SPSIM, "plot", "memory", "-o", os.path.join(self.dir, "x.txt")],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 2)

    def test_bad_csv_one_line_exit_3(self):
        # Issue 23, defects 1 and 8: a FIFO hung; a non-UTF-8 or cut file was a 25-line
        # traceback (exit 1); NaN, infinity and negative values were drawn silently.
        with open(self.csv, "rb") as f:
            good = f.read()
        header, first = good.split(b"\n")[:2]
        col = header.split(b",").index(b"time_iteration_s")

        def with_value(v):
            fields = first.split(b",")
            fields[col] = v
            return header + b"\n" + first + b"\n" + b",".join(fields) + b"\n"
        cases = [(good[:len(header) + 40], "line 2: ", "fields where the header has"),
                 (good + b"\xff\xfe\n", "not UTF-8", "line "),
                 (with_value(b"nan"), "line 3: field 'time_iteration_s': 'nan'", "finite"),
                 (with_value(b"inf"), "line 3: field 'time_iteration_s': 'inf'", "finite"),
                 (with_value(b"-0.5"), "line 3: field 'time_iteration_s': '-0.5'", ">= 0")]
        out = os.path.join(self.dir, "bad.svg")
        for data, text, more in cases:
            path = os.path.join(self.dir, "bad.csv")
            with open(path, "wb") as f:
                f.write(data)
            for kind in ("time", "pareto"):
                p = subprocess.run([SPSIM, "plot", kind, path, "-o", out], capture_output=True,
                                   text=True, timeout=60)
                self.assertEqual(p.returncode, 3, p.stderr)
                self.assertEqual(p.stderr.count("\n"), 1, p.stderr)
                self.assertIn(text, p.stderr)
                self.assertIn(more, p.stderr)
        fifo = os.path.join(self.dir, "fifo.csv")
        os.mkfifo(fifo)
        p = subprocess.run([SPSIM, "plot", "time", fifo, "-o", out], capture_output=True,
                           text=True, timeout=60)
        self.assertEqual((p.returncode, p.stderr.strip()),
                         (3, f"spsim: error: {fifo}: not a regular file (a FIFO)"))
        p = subprocess.run([SPSIM, "plot", "time", os.path.join(self.dir, "a\nb\x1b[2J.csv"),
                            "-o", out], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 3)
        self.assertIn("a\\nb\\x1B[2J.csv: cannot open", p.stderr)
        self.assertEqual(p.stderr.count("\n"), 1, p.stderr)
        self.assertFalse(os.path.exists(out))


if __name__ == "__main__":
    unittest.main()
