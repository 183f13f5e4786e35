#!/usr/bin/env python3
"""The Python module against the spsim command: the same documents, rows and errors for the
same configurations. Usage: test_python.py SPSIM_EXECUTABLE (PYTHONPATH holds BUILD/python)."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

import spsim

SPSIM = sys.argv.pop(1) if len(sys.argv) > 1 else "spsim"


def cli(*args, check=True):
    p = subprocess.run([SPSIM, *args], capture_output=True, text=True)
    if check and p.returncode != 0:
        raise AssertionError(f"spsim {' '.join(args)}: {p.stderr}")
    return p


def cli_json(*args):
    return json.loads(cli("query", "--format", "json", *args).stdout)


def cli_rows(*args):
    return [json.loads(line) for line in cli(*args, "--format", "jsonl").stdout.splitlines()]


class Query(unittest.TestCase):
    CASES = [
        ({}, []),
        # The command's derived pipeline defaults (vpp 1, pp 8 for 32 layers) and SP off at tp 1.
        ({"model": "llama3-8b", "hw": "dgx-h100"}, ["--model", "llama3-8b", "--hw", "dgx-h100"]),
        ({"model": "llama3-405b", "hw": "dgx-h100", "tp": 8, "dp": 2, "gbs": 64},
         ["--model", "llama3-405b", "--hw", "dgx-h100", "--tp", "8", "--dp", "2", "--gbs", "64"]),
        ({"model": "llama3-8b", "hw": "dgx-h100", "tp": 2, "pp": 1, "vpp": 1, "gbs": 8},
         ["--model", "llama3-8b", "--hw", "dgx-h100", "--tp", "2", "--pp", "1", "--vpp", "1",
          "--gbs", "8"]),
        ({"model": "llama3-70b", "hw": "dgx-h100", "tp": 8, "pp": 4, "vpp": 1, "dp": 8,
          "gbs": 512, "sp": False, "recompute": "full", "distributed_optimizer": True,
          "overlap_grad_reduce": True, "dtype": "fp8", "mbs": 2},
         ["--model", "llama3-70b", "--hw", "dgx-h100", "--tp", "8", "--pp", "4", "--vpp", "1",
          "--dp", "8", "--gbs", "512", "--no-sp", "--recompute", "full",
          "--distributed-optimizer", "--overlap-grad-reduce", "--dtype", "fp8", "--mbs", "2"]),
        ({"model": "paper-22b", "tp": 8, "pp": 1, "vpp": 1, "seq": 1024, "flash_attn": True},
         ["--model", "paper-22b", "--tp", "8", "--pp", "1", "--vpp", "1", "--seq", "1024",
          "--flash-attn"]),
        # Options that came with the axis table after the module was written (issue 10): they
        # are keywords by the same table; a module set is joined by '+' as on a sweep axis.
        ({"recompute_modules": "core_attn+mlp"}, ["--recompute-modules", "core_attn,mlp"]),
        ({"recompute": "full", "sp": False, "recompute_method": "uniform",
          "recompute_layers": 2},
         ["--recompute", "full", "--no-sp", "--recompute-method", "uniform",
          "--recompute-layers", "2"]),
        ({"model": "llama3-8b", "hw": "dgx-h100", "tp": 2, "pp": 1, "vpp": 1, "gbs": 8,
          "recompute": "none", "offload_layers": 4},
         ["--model", "llama3-8b", "--hw", "dgx-h100", "--tp", "2", "--pp", "1", "--vpp", "1",
          "--gbs", "8", "--recompute", "none", "--offload-layers", "4"]),
    ]

    def test_same_document_as_the_cli(self):
        for kwargs, args in self.CASES:
            with self.subTest(kwargs=kwargs):
                self.assertEqual(spsim.query(**kwargs), cli_json(*args))

    def test_a_field_that_changes(self):
        # Independent of the writer: a larger tp halves the per-rank layer activations' tp terms,
        # so the documents must differ where the configuration does.
        a, b = spsim.query(tp=4), spsim.query(tp=8)
        self.assertEqual((a["config"]["tp"], b["config"]["tp"]), (4, 8))
        self.assertGreater(a["memory"]["activation_per_layer_bytes"],
                           b["memory"]["activation_per_layer_bytes"])


class Errors(unittest.TestCase):
    def check(self, kwargs, args, kind, code, field):
        with self.assertRaises(kind) as c:
            spsim.query(**kwargs)
        e = c.exception
        self.assertEqual((e.exit_code, e.field), (code, field))
        p = cli("query", *args, check=False)
        self.assertEqual(p.returncode, code, p.stderr)
        return e, p.stderr

    def test_usage(self):
        e, _ = self.check({"tp": 0}, ["--tp", "0"], spsim.UsageError, 2, "tp")
        self.assertIn("'0' is not an integer", e.message)
        self.check({"recompute": "some"}, ["--recompute", "some"], spsim.UsageError, 2,
                   "recompute")
        with self.assertRaises(spsim.UsageError) as c:
            spsim.query(nonsense=1)
        self.assertEqual(c.exception.field, "nonsense")
        with self.assertRaises(spsim.UsageError):
            spsim.query(tp=[2, 4])  # one value per option

    def test_input_and_config_carry_the_cli_message(self):
        e, err = self.check({"model": "no-such-model"}, ["--model", "no-such-model"],
                            spsim.InputError, 3, None)
        self.assertEqual(err.strip(), "spsim: error: " + e.message)
        e, err = self.check({"tp": 5, "sp": False}, ["--tp", "5", "--no-sp"], spsim.ConfigError,
                            4, "tp")
        self.assertEqual(err.strip(), "spsim: error: " + e.message)
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            f.write('{"name": "x", "layers": "many"}')
        try:
            e, err = self.check({"model": f.name}, ["--model", f.name], spsim.InputError, 3,
                                spsim_field(f.name))
            self.assertEqual(err.strip(), "spsim: error: " + e.message)
        finally:
            os.unlink(f.name)
        self.assertTrue(issubclass(spsim.ConfigError, spsim.Error))


class Arguments(unittest.TestCase):
    """Issue 23, defect 9: a value is the text it is, of a type the module takes."""

    def test_nul_refused(self):
        # "llama3-8b\0evil" was cut at the NUL and ran llama3-8b.
        for kwargs in ({"model": "llama3-8b\0evil"}, {"hw": "dgx-h100\0"},
                       {"recompute": ["full", "none\0x"]}):
            with self.subTest(kwargs=kwargs), self.assertRaises(spsim.UsageError) as c:
                spsim.query(**kwargs)
            self.assertIn("holds a NUL character", c.exception.message)
        with self.assertRaises(spsim.UsageError):
            list(spsim.sweep(model="llama3-8b\0evil"))
        # Below the module: the extension refuses it too.
        with self.assertRaises(spsim._spsim.LibraryError):
            spsim._spsim.sweep_create({"model": "llama3-8b\0x"}, None, 0, 0, 0)

    def test_types(self):
        for kwargs in ({"tp": 8.0}, {"tp": object()}, {"gbs": {"a": 1}}, {"tp": [2, None]},
                       {"model": b"llama3-8b"}):
            with self.subTest(kwargs=kwargs), self.assertRaises(TypeError):
                spsim.query(**kwargs)
        for kwargs in ({"threads": 1.5}, {"top": "3"}, {"feasible_only": 1},
                       {"max_total_bytes": 2.0}, {"on_invalid": 3}):
            with self.subTest(kwargs=kwargs), self.assertRaises(TypeError):
                spsim.sweep(**kwargs)
        with self.assertRaises(TypeError):
            spsim.optimize(model="llama3-8b", hw="dgx-h100", gpus=16.0)
        # What stays: ints of any integral type, bools, strings, lists, ranges.
        self.assertEqual(spsim._text(range(1, 4)), "1,2,3")
        self.assertEqual(spsim._text([True, False]), "on,off")

    def test_counts_in_range(self):
        # threads=-1 became 2^32 - 1 threads; top=-1 the whole space.
        for kwargs in ({"threads": -1}, {"threads": 257}, {"top": -1},
                       {"max_total_bytes": -1}, {"by": "speed"}):
            with self.subTest(kwargs=kwargs), self.assertRaises(spsim.UsageError):
                spsim.sweep(**kwargs)
        for kwargs in ({"gpus": 0}, {"gpus": -8}, {"top": 0}, {"max_memory_gib": -1}):
            with self.subTest(kwargs=kwargs), self.assertRaises(spsim.UsageError):
                spsim.optimize(**dict({"model": "llama3-8b", "hw": "dgx-h100", "gpus": 16},
                                      **kwargs))

    def test_undecodable_text(self):
        # A key and a value with lone surrogates (os.fsdecode of a non-UTF-8 name): ValueError,
        # not the SystemError the extension raised when the key's failure was left set while it
        # encoded the value (found by fuzz_python).
        for kwargs in ({"model": "a\udcff"}, {"t\udcff": "x\udcff"}):
            with self.subTest(kwargs=kwargs), self.assertRaises(ValueError):
                spsim.query(**kwargs)

    def test_quote(self):
        self.assertEqual(spsim._spsim.quote("a\nb\x1b"), "'a\\nb\\x1B'")
        self.assertEqual(spsim._spsim.escape("it's"), "it's")


def spsim_field(path):
    """The field the CLI's message names for `path` (read from the CLI, not from the module)."""
    err = cli("query", "--model", path, check=False).stderr
    return err.split("field '")[1].split("'")[0] if "field '" in err else None


class Sweep(unittest.TestCase):
    AXES = {"model": "llama3-8b", "hw": ["dgx-h100", "dgx-a100-80g"], "tp": [1, 2, 4, 8],
            "pp": "1..4:*2", "vpp": 1, "sp": [True, False],
            "recompute": ["none", "selective", "full"], "gbs": 32, "mbs": [1, 2]}
    ARGS = ["--model", "llama3-8b", "--hw", "dgx-h100,dgx-a100-80g", "--tp", "1,2,4,8", "--pp",
            "1..4:*2", "--vpp", "1", "--sp", "on,off", "--recompute", "none,selective,full",
            "--gbs", "32", "--mbs", "1,2", "--quiet"]

    def test_rows_equal_the_cli_rows(self):
        rows = list(spsim.sweep(**self.AXES))
        self.assertEqual(rows, cli_rows("sweep", *self.ARGS))
        self.assertGreater(len(rows), 20)

    def test_rows_in_blocks_equal_one_run(self):
        whole = list(spsim.sweep(**self.AXES))
        sw = spsim._call(spsim._spsim.sweep_create, spsim._axes(self.AXES, spsim.QUERY_DEFAULTS),
                         None, 0, 0, 0)
        opts = {"feasible_only": False, "top": 0, "by": "iteration_s", "threads": 1,
                "max_total_bytes": 0, "on_invalid": None}
        self.assertEqual(list(spsim._rows(sw, opts, block=7)), whole)

    def test_top_feasible_and_invalid(self):
        rows = list(spsim.sweep(**self.AXES, top=5, by="mfu", feasible_only=True))
        self.assertEqual(rows, cli_rows("sweep", *self.ARGS, "--top", "5", "--by", "mfu",
                                        "--feasible-only"))
        self.assertEqual([r["time_mfu"] for r in rows],
                         sorted((r["time_mfu"] for r in rows), reverse=True))
        lines = []
        list(spsim.sweep(**self.AXES, on_invalid=lines.append))
        p = cli("sweep", *self.ARGS, "--show-invalid", "--format", "jsonl")
        self.assertEqual(lines, p.stderr.splitlines()[:len(lines)])
        self.assertTrue(lines)

    def test_columns(self):
        cols = ["tp", "model", "time_mfu", "memory_total_bytes"]
        rows = list(spsim.sweep(**self.AXES, columns=cols))
        self.assertEqual(rows, cli_rows("sweep", *self.ARGS, "--columns", ",".join(cols)))
        self.assertEqual([list(r) for r in rows], [cols] * len(rows))
        full = list(spsim.sweep(**self.AXES))
        self.assertEqual(rows, [{k: r[k] for k in cols} for r in full])
        with self.assertRaises(spsim.UsageError) as c:
            list(spsim.sweep(**self.AXES, columns="tp,nope"))
        self.assertIn("'nope' is not a column", c.exception.message)

    def test_optimizer_columns(self):
        # the "optimizer" object's fields are columns by name (Adam: zeros), never by default;
        # Adam's query documents hold no "optimizer" object (README "The optimizer object")
        cols = ["tp", "optimizer_name", "optimizer_muon_ns_s", "optimizer_host_bytes"]
        rows = list(spsim.sweep(**self.AXES, columns=cols))
        self.assertEqual(rows, cli_rows("sweep", *self.ARGS, "--columns", ",".join(cols)))
        self.assertEqual({(r["optimizer_name"], r["optimizer_muon_ns_s"],
                           r["optimizer_host_bytes"]) for r in rows}, {("adam", 0, 0)})
        self.assertFalse(any(k.startswith("optimizer_") for k in next(spsim.sweep(**self.AXES))))
        self.assertNotIn("optimizer", spsim.query())

    def test_spec_file(self):
        spec = os.path.join(os.environ["SPSIM_DATA_DIR"], "examples", "sweeps",
                            "llama3-70b-h100.json")
        rows = list(spsim.sweep(spec, top=10, by="mfu"))
        self.assertEqual(rows, cli_rows("sweep", "--spec", spec, "--top", "10", "--by", "mfu",
                                        "--quiet"))
        with self.assertRaises(spsim.InputError):
            list(spsim.sweep("/nonexistent/spec.json"))

    def test_derived_pipeline_defaults(self):
        # Issue 24, item 5: GPT-3's vpp 3 was applied literally, so a 32-layer model swept
        # without pp and vpp gave no row at all; now pp and vpp are `spsim sweep`'s "auto".
        axes = {"model": "llama3-8b", "hw": "dgx-h100", "tp": [2, 4, 8]}
        rows = list(spsim.sweep(**axes))
        self.assertEqual(rows, cli_rows("sweep", "--model", "llama3-8b", "--hw", "dgx-h100",
                                        "--tp", "2,4,8", "--quiet"))
        # 32 layers: pp 8 (divides them), vpp 1 (8*3 = 24 does not), by hand.
        self.assertEqual([(r["tp"], r["pp"], r["vpp"]) for r in rows], [(2, 8, 1), (4, 8, 1),
                                                                         (8, 8, 1)])

    def test_frame(self):
        try:
            import pandas  # noqa: F401
        except ImportError:
            self.skipTest("pandas is not installed")
        frame = spsim.sweep_frame(**self.AXES)
        self.assertEqual(list(frame["time_mfu"]), [r["time_mfu"] for r in spsim.sweep(**self.AXES)])


class PlotData(unittest.TestCase):
    """What spsim plot draws, without matplotlib: --top ranks only the rows that fit, and the
    memory lines are the whole first stage's against the memory for tensors."""

    def test_top_ranks_only_rows_that_fit(self):
        import spsim.plot
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "s.csv")
            # Llama 3 8B on 8 H100: tp 2 without recomputation is the fastest and needs
            # 87.3 GiB or more, over the 79.6 GiB an H100 has; tp 4 fits.
            cli("sweep", "--model", "llama3-8b", "--hw", "dgx-h100", "--gpus", "8", "--tp",
                "1,2,4,8", "--pp", "1", "--mbs", "1,2,4", "--recompute", "none,full", "--gbs",
                "64", "-o", path)
            rows = spsim.plot.read_rows(path)
        fastest = min(rows, key=lambda r: r["time_iteration_s"])
        self.assertFalse(fastest["memory_fits"])
        best = spsim.plot.best_rows(rows, 3)
        fit = sorted((r for r in rows if r["memory_fits"]), key=lambda r: r["time_iteration_s"])
        self.assertEqual(best, fit[:3])
        self.assertTrue(all(r["memory_fits"] for r in best))
        with self.assertRaisesRegex(spsim.InputError, "none of its 1 rows fits in HBM"):
            spsim.plot.best_rows([fastest], 1, "x.csv")

    def test_memory_lines_whole_stage_against_tensor_memory(self):
        import spsim.plot
        docs = [spsim.query(model="llama3-8b", hw="dgx-h100", tp=t, sp=t > 1, pp=1, gbs=8)
                for t in (1, 2)]
        left, right, cap = spsim.plot.memory_series(docs)
        g = 1024.0 ** 3
        for m in spsim.plot.MODES:
            self.assertEqual(left[m], [d["memory"]["activation_modes_bytes"][m] / g for d in docs])
            self.assertEqual(right[m], [d["memory"]["total_modes_bytes"][m] / g for d in docs])
            # The whole stage holds its weights beside the activations.
            first = docs[0]["memory"]["activation_modes_first_stage_bytes"][m] / g
            self.assertGreater(right[m][0], first)
        self.assertEqual(cap, docs[0]["memory"]["capacity_bytes"] / g)
        # Every line its own marker and dash: none hides another of the same values.
        styles = [spsim.plot.MODE_STYLES[m][:2] for m in spsim.plot.MODES]
        self.assertEqual(len({s[0] for s in styles}), 6)
        self.assertEqual(len({str(s[1]) for s in styles}), 6)


class Optimize(unittest.TestCase):
    def test_rows_equal_the_cli_rows(self):
        rows = spsim.optimize(model="llama3-8b", hw="dgx-h100", gpus=16, top=4)
        self.assertEqual(rows, cli_rows("optimize", "--model", "llama3-8b", "--hw", "dgx-h100",
                                        "--gpus", "16", "--top", "4"))
        rows = spsim.optimize(model="llama3-70b", hw="dgx-h100", gpus=64, gbs=256, top=3,
                              by="total_bytes", tp=[4, 8], max_memory_gib=60)
        self.assertEqual(rows, cli_rows("optimize", "--model", "llama3-70b", "--hw", "dgx-h100",
                                        "--gpus", "64", "--gbs", "256", "--top", "3", "--by",
                                        "total_bytes", "--tp", "4,8", "--max-memory-gib", "60"))
        self.assertTrue(all(r["memory_total_bytes"] <= 60 * 2**30 for r in rows))

    def test_moe_search_space_as_the_cli(self):
        # The command adds the expert axes (spsim_sweep_spec_optimize_moe) for a model with
        # experts; the module searched ep 1 only.
        args = ["--model", "mixtral-8x7b", "--hw", "dgx-h100", "--gpus", "16", "--top", "3"]
        rows = spsim.optimize(model="mixtral-8x7b", hw="dgx-h100", gpus=16, top=3)
        self.assertEqual(rows, cli_rows("optimize", *args))
        self.assertTrue(any(r["ep"] > 1 for r in rows))

    def test_nothing_fits(self):
        with self.assertRaises(spsim.ConfigError):
            spsim.optimize(model="llama3-405b", hw="dgx-a100-40g", gpus=8)
        self.assertEqual(cli("optimize", "--model", "llama3-405b", "--hw", "dgx-a100-40g",
                             "--gpus", "8", check=False).returncode, 4)


if __name__ == "__main__":
    unittest.main()
