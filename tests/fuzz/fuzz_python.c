/*
 * The Python module from any bytes: the package (python/spsim/__init__.py, plot.py read from the
 * source tree) over the extension (python/spsim/_spsim.c, compiled into this target and
 * registered as a built-in module, then as spsim._spsim), in an embedded interpreter. The input's
 * first line names the call, the others are its keyword arguments:
 *   query | sweep | optimize      then KEY=VALUE lines: VALUE an int ("8", "-1"), a bool
 *                                 ("True"), None ("None"), a float ("f:1.5"), bytes ("b:x"), a
 *                                 list ("1,2,4": items as above), or the text itself
 *   csv                           the rest is a sweep CSV for spsim.plot.read_rows
 * A call may raise spsim.Error, TypeError or ValueError (what the module documents for bad
 * arguments); any other exception, a crash or a hang is a finding. Sweeps of more than 64
 * points and optimize on more than 16 GPUs are skipped (fuzzing speed, as fuzz_spec); threads
 * is kept to 1 where it is valid.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "fuzz.h"

PyMODINIT_FUNC PyInit__spsim(void);

static const char harness[] =
    "import os, sys, tempfile, warnings\n"
    "warnings.simplefilter('ignore')\n"
    "import _spsim_builtin\n"
    "sys.modules['spsim._spsim'] = _spsim_builtin\n"
    "import spsim, spsim.plot\n"
    "from spsim import _spsim\n"
    "OPTIONS = {'feasible_only', 'top', 'by', 'threads', 'max_total_bytes', 'on_invalid',\n"
    "           'columns'}\n"
    "def value(text):\n"
    "    if text.startswith('f:'):\n"
    "        try:\n"
    "            return float(text[2:])\n"
    "        except ValueError:\n"
    "            return text\n"
    "    if text.startswith('b:'):\n"
    "        return text[2:].encode('utf-8', 'surrogateescape')\n"
    "    if ',' in text:\n"
    "        return [value(t) for t in text.split(',')]\n"
    "    if text in ('True', 'False', 'None'):\n"
    "        return {'True': True, 'False': False, 'None': None}[text]\n"
    "    body = text[1:] if text.startswith('-') else text\n"
    "    if body.isdigit() and body.isascii() and len(body) < 40:\n"
    "        return int(text)\n"
    "    return text\n"
    "def small_sweep(kw):\n"
    "    axes = {k: v for k, v in kw.items() if k not in OPTIONS}\n"
    "    sw = spsim._call(_spsim.sweep_create, spsim._axes(axes, spsim.SWEEP_DEFAULTS), None,\n"
    "                     0, 0, 0)\n"
    "    return _spsim.sweep_size(sw) <= 64\n"
    "def one(data):\n"
    "    text = data.decode('utf-8', 'surrogateescape')\n"
    "    head, _, rest = text.partition('\\n')\n"
    "    if head == 'csv':\n"
    "        fd, path = tempfile.mkstemp(suffix='.csv')\n"
    "        try:\n"
    "            os.write(fd, rest.encode('utf-8', 'surrogateescape'))\n"
    "            os.close(fd)\n"
    "            spsim.plot.read_rows(path)\n"
    "        except spsim.InputError:\n"
    "            pass\n"
    "        finally:\n"
    "            os.unlink(path)\n"
    "        return\n"
    "    kw = {}\n"
    "    for line in rest.split('\\n'):\n"
    "        k, eq, v = line.partition('=')\n"
    "        if eq:\n"
    "            kw[k] = value(v)\n"
    "    kw.pop('spec', None)\n"
    "    t = kw.get('threads')\n"
    "    if isinstance(t, int) and not isinstance(t, bool) and 0 <= t <= 256:\n"
    "        kw['threads'] = 1\n"
    "    try:\n"
    "        if head == 'query':\n"
    "            spsim.query(**kw)\n"
    "        elif head == 'sweep' and small_sweep(kw):\n"
    "            list(spsim.sweep(**kw))\n"
    "        elif head == 'optimize':\n"
    "            g = kw.get('gpus')\n"
    "            if not isinstance(g, int) or isinstance(g, bool) or g <= 16:\n"
    "                spsim.optimize(**kw)\n"
    "    except (spsim.Error, TypeError, ValueError):\n"
    "        pass\n";

static PyObject *one;

static void
setup_once(void)
{
    if (one)
        return;
    setenv("SPSIM_DATA_DIR", SPSIM_SOURCE_DATADIR, 0);
    /* A built-in module is found by its top-level name only: the harness puts it in
     * sys.modules as spsim._spsim before the package imports it. */
    if (PyImport_AppendInittab("_spsim_builtin", PyInit__spsim) != 0)
        abort();
    Py_InitializeEx(0);
    /* The package from the source tree: its _spsim is the built-in one above. */
    PyObject *sys_path = PySys_GetObject("path");
    PyObject *dir = PyUnicode_FromString(fuzz_data_path("python"));
    if (!sys_path || !dir || PyList_Insert(sys_path, 0, dir) != 0)
        abort();
    Py_DECREF(dir);
    PyObject *globals = PyDict_New();
    if (!globals || PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins()) != 0)
        abort();
    PyObject *ran = PyRun_String(harness, Py_file_input, globals, globals);
    if (!ran) {
        PyErr_Print();
        abort();
    }
    Py_DECREF(ran);
    one = PyDict_GetItemString(globals, "one");
    if (!one)
        abort();
    Py_INCREF(one);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    setup_once();
    PyObject *arg = PyBytes_FromStringAndSize((const char *)data, (Py_ssize_t)size);
    PyObject *out = arg ? PyObject_CallOneArg(one, arg) : NULL;
    Py_XDECREF(arg);
    if (!out) {
        PyErr_Print();
        fuzz_fail("python", "uncaught exception", 0);
    }
    Py_DECREF(out);
    return 0;
}
