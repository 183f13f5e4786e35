/*
 * gpu_calibrate: measure the local GPUs through the public API (spsim_gpu_calibrate) and write
 * the raw samples as JSON: the nccl-tests-style collective table with its provenance, the GEMM
 * throughputs and the copy bandwidths. `spsim calibrate` fits these into a hardware profile;
 * this example only measures, and is what scripts/gpu-check.sh falls back to.
 *
 *   gpu_calibrate [--gpus N] [--model NAME|FILE] [--max-bytes B] [--iters N] [--warmup N]
 *                 [--fp8] [-o FILE]
 *
 * Exit status: 0 ok, 1 failure, 2 bad option, 3 bad model file, 5 no GPU (support), 6 a CUDA,
 * cuBLAS or NCCL call failed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_errno.h>

#include "spsim/spsim.h"

static int
fail(int code, const char *fmt, const char *arg)
{
    fputs("gpu_calibrate: error: ", stderr);
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    return code;
}

static int
exit_for(const struct spsim_error *err)
{
    fprintf(stderr, "gpu_calibrate: error: %s\n", err->message);
    switch (err->code) {
    case SPSIM_ENOTSUP:
        return 5;
    case SPSIM_EGPU:
        return 6;
    case SPSIM_EIO:
    case SPSIM_EPARSE:
    case SPSIM_EFIELD:
        return 3;
    default:
        return 1;
    }
}

static int
number(const char *opt, const char *text, uint64_t max, uint64_t *out)
{
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(text ? text : "", &end, 10);
    if (!text || !*text || *text == '-' || *end || errno || v > max)
        return fail(2, "bad value for %s", opt);
    *out = v;
    return 0;
}

struct args {
    struct spsim_gpu_calibrate_options o;
    const char *model, *output;
};

static int
parse(int argc, char **argv, struct args *a)
{
    for (int i = 1; i < argc; i++) {
        const char *opt = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        uint64_t v = 0;
        int rc = 0;
        if (strcmp(opt, "--fp8") == 0) {
            a->o.fp8 = true;
            continue;
        }
        if (strcmp(opt, "--gpus") == 0 && !(rc = number(opt, val, 64, &v)))
            a->o.gpus = (int)v;
        else if (strcmp(opt, "--max-bytes") == 0 && !(rc = number(opt, val, 1ull << 36, &v)))
            a->o.max_bytes = v;
        else if (strcmp(opt, "--iters") == 0 && !(rc = number(opt, val, 1000000, &v)))
            a->o.iters = (uint32_t)v;
        else if (strcmp(opt, "--warmup") == 0 && !(rc = number(opt, val, 1000000, &v)))
            a->o.warmup_iters = (uint32_t)v;
        else if (strcmp(opt, "--model") == 0 && val)
            a->model = val;
        else if (strcmp(opt, "-o") == 0 && val)
            a->output = val;
        else
            return rc ? rc : fail(2, "unknown option or missing value: '%s'", opt);
        i++;
    }
    return 0;
}

/* JSON strings here are GPU and host names and version numbers: escape quotes, backslashes
 * and control characters anyway. */
static void
json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

static void
write_json(FILE *f, const struct spsim_bw_table *t, const struct spsim_gemm_sample *g, size_t ng,
           const struct spsim_hbm_sample *h, size_t nh)
{
    fputs("{\n  \"provenance\": {", f);
    for (size_t i = 0; spsim_bw_table_info_key(t, i); i++) {
        const char *key = spsim_bw_table_info_key(t, i);
        fputs(i ? ",\n    " : "\n    ", f);
        json_string(f, key);
        fputs(": ", f);
        json_string(f, spsim_bw_table_info(t, key));
    }
    fputs("\n  },\n  \"collectives\": [", f);
    for (size_t i = 0; i < spsim_bw_table_size(t); i++) {
        const struct spsim_bw_sample *s = spsim_bw_table_get(t, i);
        fprintf(f,
                "%s\n    {\"op\": \"%s\", \"ranks\": %u, \"nodes\": %u, \"size_bytes\": %llu, "
                "\"time_us\": %.17g, \"algbw_GBps\": %.17g, \"busbw_GBps\": %.17g}",
                i ? "," : "", spsim_coll_op_name(s->op), s->ranks, s->nodes,
                (unsigned long long)s->size_bytes, s->time_s * 1e6, s->algbw_GBps, s->busbw_GBps);
    }
    fputs("\n  ],\n  \"gemms\": [", f);
    for (size_t i = 0; i < ng; i++)
        fprintf(f,
                "%s\n    {\"m\": %llu, \"n\": %llu, \"k\": %llu, \"dtype\": \"%s\", "
                "\"time_s\": %.17g, \"tflops\": %.17g, \"fp8_fast_accum\": %s}",
                i ? "," : "", (unsigned long long)g[i].m, (unsigned long long)g[i].n,
                (unsigned long long)g[i].k, spsim_dtype_name(g[i].dtype), g[i].time_s, g[i].tflops,
                g[i].fp8_fast_accum ? "true" : "false");
    fputs("\n  ],\n  \"hbm_copies\": [", f);
    for (size_t i = 0; i < nh; i++)
        fprintf(f, "%s\n    {\"bytes\": %llu, \"time_s\": %.17g, \"GBps\": %.17g}", i ? "," : "",
                (unsigned long long)h[i].bytes, h[i].time_s, h[i].GBps);
    fputs("\n  ]\n}\n", f);
}

static void
progress(void *cookie, const char *what, size_t done, size_t total)
{
    (void)cookie;
    fprintf(stderr, "\r[%zu/%zu] %-60.60s", done, total, what);
    if (done == total)
        fputc('\n', stderr);
}

/* Build the whole output in memory and write it atomically: no half-written file. */
static int
emit(const struct args *a, const struct spsim_bw_table *t, const struct spsim_gemm_sample *g,
     size_t ng, const struct spsim_hbm_sample *h, size_t nh)
{
    if (!a->output) {
        write_json(stdout, t, g, ng, h, nh);
        return fflush(stdout) == 0 ? 0 : fail(1, "cannot write to %s", "standard output");
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    if (!mem)
        return fail(1, "cannot buffer the output for %s", a->output);
    write_json(mem, t, g, ng, h, nh);
    if (fclose(mem) != 0) {
        free(buf);
        return fail(1, "cannot buffer the output for %s", a->output);
    }
    struct spsim_error err = {0};
    int rc = spsim_file_write_atomic(a->output, buf, len, &err);
    free(buf);
    return rc == SPSIM_OK ? 0 : exit_for(&err);
}

int
main(int argc, char **argv)
{
    gsl_set_error_handler_off();
    struct args a = {.model = NULL, .output = NULL};
    spsim_gpu_calibrate_defaults(&a.o);
    a.o.progress = progress;
    int rc = parse(argc, argv, &a);
    struct spsim_error err = {0};
    struct spsim_model *model = NULL;
    char path[4096];
    if (rc == 0 && a.model &&
        (spsim_profile_resolve(SPSIM_PROFILE_MODEL, a.model, path, sizeof(path), &err) ||
         spsim_model_load(path, &model, &err)))
        rc = exit_for(&err);
    a.o.model = model;
    struct spsim_bw_table *t = NULL;
    struct spsim_gemm_sample *g = NULL;
    struct spsim_hbm_sample *h = NULL;
    size_t ng = 0, nh = 0;
    if (rc == 0 && spsim_bw_table_create(&t) != SPSIM_OK)
        rc = fail(1, "out of memory%s", "");
    if (rc == 0 && spsim_gpu_calibrate(&a.o, t, &g, &ng, &h, &nh, &err) != SPSIM_OK)
        rc = exit_for(&err);
    if (rc == 0 && spsim_gpu_mpi_rank() == 0)
        rc = emit(&a, t, g, ng, h, nh);
    free(g);
    free(h);
    spsim_bw_table_destroy(t);
    spsim_model_destroy(model);
    spsim_gpu_finalize();
    return rc;
}
