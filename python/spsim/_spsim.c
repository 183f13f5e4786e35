/*
 * The Python module's C side: CPython's C API over the public library only (no second
 * implementation). Every configuration goes through the sweep API's axes, so each option of
 * the library's axis table is a keyword of spsim.query/sweep/optimize; the documents come from
 * spsim_result_to_json and the rows from spsim_sweep_run, as the CLI's do.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <gsl/gsl_errno.h>
#include <stdlib.h>
#include <string.h>

#include "spsim/spsim.h"

static PyObject *library_error; /* _spsim.LibraryError(status, message, exit_code) */

/* The command's exit code for a status (README, "Exit status"). */
static int
exit_code(int status)
{
    static const int codes[] = {0, 1, 1, 3, 3, 3, 4, 4, 5, 6, 1};
    return status <= 0 && -status < (int)(sizeof(codes) / sizeof(codes[0])) ? codes[-status] : 1;
}

static PyObject *
raise_error(const struct spsim_error *err, int exit)
{
    const char *msg = err->message[0] ? err->message : spsim_strerror(err->code);
    PyObject *args = Py_BuildValue("(isi)", err->code, msg, exit ? exit : exit_code(err->code));
    if (args) {
        PyErr_SetObject(library_error, args);
        Py_DECREF(args);
    }
    return NULL;
}

static void
sweep_free(PyObject *capsule)
{
    spsim_sweep_destroy(PyCapsule_GetPointer(capsule, "spsim_sweep"));
}

/* Fill a spec from {axis name: text}; a bad name or value is a usage error (exit 2). */
static int
spec_from_axes(struct spsim_sweep_spec *spec, PyObject *axes)
{
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    struct spsim_error err = {0};
    while (PyDict_Next(axes, &pos, &key, &value)) {
        Py_ssize_t nlen = 0, tlen = 0;
        /* One call at a time: a second C API call with the first one's exception still set
         * (a key with a lone surrogate) raised SystemError (found by fuzz_python). */
        const char *name = PyUnicode_AsUTF8AndSize(key, &nlen);
        if (!name)
            return -1;
        const char *text = PyUnicode_AsUTF8AndSize(value, &tlen);
        if (!text)
            return -1;
        char where[160], shown[SPSIM_ERROR_MESSAGE_MAX / 2];
        snprintf(where, sizeof(where), "field %s",
                 spsim_quote(name, (size_t)nlen, shown, sizeof(shown)));
        int axis = strlen(name) == (size_t)nlen ? spsim_sweep_axis_from_name(name) : -1;
        /* A NUL would end the text early: "llama3-8b\0x" must not run llama3-8b. */
        if (axis < 0 || strlen(text) != (size_t)tlen) {
            snprintf(err.message, sizeof(err.message), "%s: %s", where,
                     axis < 0 ? "not an option of spsim" : "the value holds a NUL character");
            if (axis >= 0)
                snprintf(err.message + strlen(err.message),
                         sizeof(err.message) - strlen(err.message), " (%s)",
                         spsim_quote(text, (size_t)tlen, shown, sizeof(shown)));
            err.code = SPSIM_EINVAL;
            raise_error(&err, 2);
            return -1;
        }
        if (spsim_sweep_spec_parse(spec, (enum spsim_sweep_axis)axis, text, where, &err)) {
            raise_error(&err, 2);
            return -1;
        }
    }
    return 0;
}

/* sweep_create(axes, spec_path or None, optimize_gpus, optimize_layers, optimize_experts) ->
 * capsule; gpus 0: no optimize search space (else the one `spsim optimize` searches). */
static PyObject *
py_sweep_create(PyObject *self, PyObject *args)
{
    PyObject *axes;
    const char *path = NULL;
    unsigned int gpus = 0, layers = 0, experts = 0;
    (void)self;
    if (!PyArg_ParseTuple(args, "O!zIII", &PyDict_Type, &axes, &path, &gpus, &layers, &experts))
        return NULL;
    struct spsim_sweep_spec *spec = NULL;
    struct spsim_sweep *sw = NULL;
    struct spsim_error err = {0};
    int rc = spsim_sweep_spec_create(&spec, &err);
    if (rc == SPSIM_OK && path)
        rc = spsim_sweep_spec_load(spec, path, &err);
    if (rc != SPSIM_OK) {
        spsim_sweep_spec_destroy(spec);
        return raise_error(&err, 0);
    }
    if (spec_from_axes(spec, axes)) {
        spsim_sweep_spec_destroy(spec);
        return NULL;
    }
    if (gpus && (rc = spsim_sweep_spec_optimize_defaults(spec, gpus, layers, &err)) == SPSIM_OK)
        rc = spsim_sweep_spec_optimize_moe(spec, gpus, experts, &err);
    if (rc == SPSIM_OK)
        rc = spsim_sweep_create(spec, &sw, &err);
    spsim_sweep_spec_destroy(spec);
    if (rc != SPSIM_OK)
        return raise_error(&err, rc == SPSIM_EINVAL || rc == SPSIM_ERANGE ? 2 : 0);
    PyObject *capsule = PyCapsule_New(sw, "spsim_sweep", sweep_free);
    if (!capsule)
        spsim_sweep_destroy(sw);
    return capsule;
}

static struct spsim_sweep *
sweep_of(PyObject *capsule)
{
    return PyCapsule_GetPointer(capsule, "spsim_sweep");
}

static PyObject *
py_sweep_size(PyObject *self, PyObject *capsule)
{
    (void)self;
    struct spsim_sweep *sw = sweep_of(capsule);
    return sw ? PyLong_FromUnsignedLongLong(spsim_sweep_size(sw)) : NULL;
}

/* The document of point `index`: spsim_result_to_json, as `spsim query --format json`. */
static PyObject *
py_query(PyObject *self, PyObject *args)
{
    PyObject *capsule;
    unsigned long long index;
    (void)self;
    if (!PyArg_ParseTuple(args, "OK", &capsule, &index))
        return NULL;
    struct spsim_sweep *sw = sweep_of(capsule);
    if (!sw)
        return NULL;
    struct spsim_sweep_point pt;
    struct spsim_result r;
    struct spsim_error err = {0};
    char *doc = NULL;
    if (spsim_sweep_point_at(sw, index, &pt, &err) || spsim_sweep_evaluate(sw, index, &r, &err) ||
        spsim_result_to_json(&r, pt.model_name, pt.hw_name, &doc, &err))
        return raise_error(&err, 0);
    PyObject *text = PyUnicode_FromString(doc);
    free(doc);
    return text;
}

/* Text a run writes, kept in memory for Python (rows, and the invalid points' lines). */
struct text {
    char *data;
    size_t len, cap;
};

static int
text_append(void *cookie, const char *data, size_t len)
{
    struct text *t = cookie;
    if (t->len + len + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 65536;
        while (cap < t->len + len + 1)
            cap *= 2;
        char *grown = realloc(t->data, cap);
        if (!grown)
            return 1;
        t->data = grown;
        t->cap = cap;
    }
    memcpy(t->data + t->len, data, len);
    t->len += len;
    t->data[t->len] = '\0';
    return 0;
}

struct run {
    struct text rows, invalid;
};

static int
write_rows(void *cookie, const char *data, size_t len)
{
    return text_append(&((struct run *)cookie)->rows, data, len);
}

static int
write_invalid(void *cookie, const char *data, size_t len)
{
    return text_append(&((struct run *)cookie)->invalid, data, len);
}

/* sweep_run(capsule, begin, end, feasible_only, top, by, threads, max_total_bytes, invalid,
 * columns or None) -> (JSON Lines rows, invalid lines, stats); end 0 means the whole sweep, by
 * is "iteration_s", "total_bytes" or "mfu". The GIL is released while the library runs. */
static PyObject *
py_sweep_run(PyObject *self, PyObject *args)
{
    PyObject *capsule;
    unsigned long long begin, end, top, maxbytes;
    int feasible, want_invalid;
    unsigned int threads;
    const char *by, *columns;
    (void)self;
    if (!PyArg_ParseTuple(args, "OKKpKsIKpz", &capsule, &begin, &end, &feasible, &top, &by,
                          &threads, &maxbytes, &want_invalid, &columns))
        return NULL;
    struct spsim_sweep *sw = sweep_of(capsule);
    if (!sw)
        return NULL;
    struct spsim_sweep_options opt;
    spsim_sweep_options_defaults(&opt);
    struct run run = {{0}, {0}};
    opt.begin = begin;
    opt.end = end;
    opt.format = SPSIM_ROW_JSONL;
    opt.feasible_only = feasible;
    opt.top_k = top;
    opt.threads = threads;
    opt.max_total_bytes = maxbytes;
    opt.write = write_rows;
    opt.invalid = want_invalid ? write_invalid : NULL;
    opt.cookie = &run;
    opt.columns = columns;
    for (int b = SPSIM_BY_ITERATION_S; b < SPSIM_BY_COUNT; b++)
        if (strcmp(by, spsim_sweep_by_name(b)) == 0)
            opt.by = b;
    struct spsim_sweep_stats st = {0};
    struct spsim_error err = {0};
    int rc;
    Py_BEGIN_ALLOW_THREADS rc = spsim_sweep_run(sw, &opt, &st, &err);
    Py_END_ALLOW_THREADS PyObject *out = NULL;
    if (rc != SPSIM_OK)
        raise_error(&err, rc == SPSIM_EINVAL ? 2 : 0);
    else
        out = Py_BuildValue("(s#s#{sKsKsKsKsKsd})", run.rows.data ? run.rows.data : "",
                            (Py_ssize_t)run.rows.len, run.invalid.data ? run.invalid.data : "",
                            (Py_ssize_t)run.invalid.len, "points", st.points, "evaluated",
                            st.evaluated, "valid", st.valid, "feasible", st.feasible, "written",
                            st.written, "elapsed_s", st.elapsed_s);
    free(run.rows.data);
    free(run.invalid.data);
    return out;
}

/* The model and hardware profiles an axes dict names (optimize's space is built from them). */
static int
load_profiles(PyObject *axes, struct spsim_model **model, struct spsim_hardware **hw,
              struct spsim_error *err)
{
    PyObject *m = PyDict_GetItemString(axes, "model"), *h = PyDict_GetItemString(axes, "hw");
    const char *mn = m && PyUnicode_Check(m) ? PyUnicode_AsUTF8(m) : NULL;
    const char *hn = h && PyUnicode_Check(h) ? PyUnicode_AsUTF8(h) : NULL;
    char path[4096];
    if (!mn || !hn) {
        err->code = SPSIM_EINVAL;
        snprintf(err->message, sizeof(err->message), "optimize: model and hw are required");
        return SPSIM_EINVAL;
    }
    int rc = spsim_profile_resolve(SPSIM_PROFILE_MODEL, mn, path, sizeof(path), err);
    if (rc == SPSIM_OK)
        rc = spsim_model_load(path, model, err);
    if (rc == SPSIM_OK)
        rc = spsim_profile_resolve(SPSIM_PROFILE_HARDWARE, hn, path, sizeof(path), err);
    if (rc == SPSIM_OK)
        rc = spsim_hardware_load(path, hw, err);
    return rc;
}

/* The answer's rows as JSON Lines (spsim_row_format), and the smallest's bytes or -1. */
static PyObject *
optimize_rows(const struct spsim_optimize_result *res)
{
    struct text t = {0};
    char *buf = malloc(SPSIM_ROW_SIZE(4096, 4096));
    int bad = !buf;
    for (uint64_t i = 0; !bad && i < res->count; i++) {
        const struct spsim_optimize_entry *e = &res->top[i];
        size_t n = strlen(e->model_name) > 4096 || strlen(e->hw_name) > 4096
                       ? 0
                       : spsim_row_format(SPSIM_ROW_JSONL, e->model_name, e->hw_name, &e->result,
                                          buf, SPSIM_ROW_SIZE(4096, 4096));
        bad = n == 0 || text_append(&t, buf, n);
    }
    free(buf);
    PyObject *out =
        bad ? PyErr_NoMemory()
            : Py_BuildValue("(s#L)", t.data ? t.data : "", (Py_ssize_t)t.len,
                            res->has_smallest ? (long long)res->smallest.result.memory.total_bytes
                                              : -1LL);
    free(t.data);
    return out;
}

/* optimize(axes, gpus, top, by, max_total_bytes, exhaustive, threads) -> (JSON Lines rows of the
 * best that fit, the smallest's bytes when nothing fits or -1): spsim_sweep_spec_optimize_space's
 * space restricted by the axes, searched by spsim_optimize_run. The GIL is released while the
 * library searches. */
static PyObject *
py_optimize(PyObject *self, PyObject *args)
{
    PyObject *axes;
    unsigned int gpus;
    unsigned long long top, maxbytes;
    const char *by;
    int exhaustive;
    unsigned int threads;
    (void)self;
    if (!PyArg_ParseTuple(args, "O!IKsKpI", &PyDict_Type, &axes, &gpus, &top, &by, &maxbytes,
                          &exhaustive, &threads))
        return NULL;
    struct spsim_optimize_options opt;
    spsim_optimize_options_defaults(&opt);
    opt.top_k = top;
    opt.max_total_bytes = maxbytes;
    opt.exhaustive = exhaustive;
    opt.threads = threads;
    for (int b = SPSIM_BY_ITERATION_S; b < SPSIM_BY_COUNT; b++)
        if (strcmp(by, spsim_sweep_by_name(b)) == 0)
            opt.by = b;
    struct spsim_sweep_spec *spec = NULL;
    struct spsim_sweep *sw = NULL;
    struct spsim_model *model = NULL;
    struct spsim_hardware *hw = NULL;
    struct spsim_optimize_result res = {0};
    struct spsim_error err = {0};
    PyObject *out = NULL;
    int rc = spsim_sweep_spec_create(&spec, &err);
    if (rc == SPSIM_OK && spec_from_axes(spec, axes))
        goto done; /* the Python error is set */
    if (rc == SPSIM_OK && (rc = load_profiles(axes, &model, &hw, &err)) == SPSIM_OK &&
        (rc = spsim_sweep_spec_optimize_space(spec, model, hw, gpus, &err)) == SPSIM_OK)
        rc = spsim_sweep_create(spec, &sw, &err);
    if (rc == SPSIM_OK && !(res.top = calloc(top ? top : 1, sizeof(*res.top)))) {
        err.code = rc = SPSIM_ENOMEM;
        snprintf(err.message, sizeof(err.message), "out of memory");
    }
    if (rc == SPSIM_OK) {
        Py_BEGIN_ALLOW_THREADS rc = spsim_optimize_run(sw, &opt, &res, &err);
        Py_END_ALLOW_THREADS
    }
    out = rc == SPSIM_OK ? optimize_rows(&res)
                         : raise_error(&err, rc == SPSIM_EINVAL || rc == SPSIM_ERANGE ? 2 : 0);
done:
    free(res.top);
    spsim_sweep_destroy(sw);
    spsim_sweep_spec_destroy(spec);
    spsim_model_destroy(model);
    spsim_hardware_destroy(hw);
    return out;
}

/* model_shape(NAME or path) -> (layers, experts): what optimize's search space depends on (its
 * pp and vpp ranges, its ep and etp axes). */
static PyObject *
py_model_shape(PyObject *self, PyObject *args)
{
    const char *name;
    (void)self;
    if (!PyArg_ParseTuple(args, "s", &name))
        return NULL;
    char path[4096];
    struct spsim_model *m = NULL;
    struct spsim_error err = {0};
    if (spsim_profile_resolve(SPSIM_PROFILE_MODEL, name, path, sizeof(path), &err) ||
        spsim_model_load(path, &m, &err))
        return raise_error(&err, 0);
    const struct spsim_model_shape *shape = spsim_model_get_shape(m);
    PyObject *out = Py_BuildValue("(II)", shape->layers, shape->experts);
    spsim_model_destroy(m);
    return out;
}

/* open_input(path) -> a descriptor: spsim_file_open_input, the rule of every input spsim reads
 * (a FIFO, a device or a directory is refused at once instead of blocking). */
static PyObject *
py_open_input(PyObject *self, PyObject *args)
{
    PyObject *path = NULL;
    (void)self;
    if (!PyArg_ParseTuple(args, "O&", PyUnicode_FSConverter, &path))
        return NULL;
    int fd = -1;
    struct spsim_error err = {0};
    int rc = spsim_file_open_input(PyBytes_AS_STRING(path), &fd, &err);
    Py_DECREF(path);
    return rc == SPSIM_OK ? PyLong_FromLong(fd) : raise_error(&err, 0);
}

/* quote(text) / escape(text): spsim_quote / spsim_escape of the text's UTF-8 (an undecodable
 * byte a str carries as a surrogate escape is that byte again). */
static PyObject *
shown(PyObject *args, bool quote)
{
    PyObject *text;
    if (!PyArg_ParseTuple(args, "U", &text))
        return NULL;
    PyObject *bytes = PyUnicode_AsEncodedString(text, "utf-8", "surrogateescape");
    if (!bytes)
        return NULL;
    size_t len = (size_t)PyBytes_GET_SIZE(bytes), cap = 4 * len + 8;
    char *buf = malloc(cap);
    PyObject *out = NULL;
    if (buf) {
        const char *s = PyBytes_AS_STRING(bytes);
        out = PyUnicode_FromString(quote ? spsim_quote(s, len, buf, cap)
                                         : spsim_escape(s, len, buf, cap));
        free(buf);
    } else {
        PyErr_NoMemory();
    }
    Py_DECREF(bytes);
    return out;
}

static PyObject *
py_quote(PyObject *self, PyObject *args)
{
    (void)self;
    return shown(args, true);
}

static PyObject *
py_escape(PyObject *self, PyObject *args)
{
    (void)self;
    return shown(args, false);
}

static PyMethodDef methods[] = {
    {"sweep_create", py_sweep_create, METH_VARARGS, "A loaded sweep of {axis: text}."},
    {"sweep_size", py_sweep_size, METH_O, "The number of points of a sweep."},
    {"sweep_run", py_sweep_run, METH_VARARGS, "Run a range of a sweep: rows as JSON Lines."},
    {"query", py_query, METH_VARARGS, "The JSON document of one point of a sweep."},
    {"optimize", py_optimize, METH_VARARGS, "The best configurations: rows as JSON Lines."},
    {"model_shape", py_model_shape, METH_VARARGS, "A model profile's layers and experts."},
    {"open_input", py_open_input, METH_VARARGS, "A descriptor of an input file (regular only)."},
    {"quote", py_quote, METH_VARARGS, "Text quoted and escaped for a one-line message."},
    {"escape", py_escape, METH_VARARGS, "Text escaped for a one-line message."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT,
                                    "_spsim",
                                    "spsim's library, for the spsim package",
                                    -1,
                                    methods,
                                    NULL,
                                    NULL,
                                    NULL,
                                    NULL};

PyMODINIT_FUNC PyInit__spsim(void);

PyMODINIT_FUNC
PyInit__spsim(void)
{
    /* GSL's default handler aborts the process; the library reports a failure instead. */
    gsl_set_error_handler_off();
    PyObject *m = PyModule_Create(&module);
    if (!m)
        return NULL;
    library_error = PyErr_NewException("_spsim.LibraryError", NULL, NULL);
    if (!library_error || PyModule_AddObject(m, "LibraryError", library_error) < 0 ||
        PyModule_AddStringConstant(m, "version", spsim_version()) < 0) {
        Py_XDECREF(library_error);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(library_error);
    return m;
}
