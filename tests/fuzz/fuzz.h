/* What the fuzz targets share: the libFuzzer entry point, the checks of what a target computed,
 * and the shipped profiles they evaluate inputs against. */
#ifndef SPSIM_FUZZ_H
#define SPSIM_FUZZ_H

#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spsim/spsim.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A finding: libFuzzer (and the replay driver) report the abort with the input. */
static inline void
fuzz_fail(const char *what, const char *name, double v)
{
    fprintf(stderr, "fuzz: %s %s = %g\n", what, name, v);
    abort();
}

/* A number a result may hold: finite and not negative. */
static inline void
fuzz_check_number(const char *what, double v)
{
    if (!isfinite(v) || v < 0)
        fuzz_fail("result", what, v);
}

/* Every floating-point field of a result (the integer fields are exact and headroom_bytes may
 * be negative by design: a configuration that does not fit). */
static inline void
fuzz_check_result(const struct spsim_result *r)
{
    const struct spsim_field *fields = NULL;
    size_t n = spsim_result_fields(&fields);
    for (size_t i = 0; i < n; i++)
        if (fields[i].type == SPSIM_FIELD_F64)
            fuzz_check_number(fields[i].path,
                              *(const double *)(const void *)((const char *)r + fields[i].offset));
}

/* The input as a NUL-terminated string (the caller frees it). */
static inline char *
fuzz_text(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        abort();
    memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

/* A shipped profile, loaded once; the source tree's data directory (config.h). */
static inline const char *
fuzz_data_path(const char *rel)
{
    static char path[4096];
    snprintf(path, sizeof(path), "%s/%s", SPSIM_SOURCE_DATADIR, rel);
    return path;
}

static inline const struct spsim_model *
fuzz_shipped_model(void)
{
    static struct spsim_model *m;
    if (!m && spsim_model_load(fuzz_data_path("models/llama3-8b.json"), &m, NULL) != SPSIM_OK)
        abort();
    return m;
}

static inline const struct spsim_hardware *
fuzz_shipped_hardware(void)
{
    static struct spsim_hardware *hw;
    if (!hw && spsim_hardware_load(fuzz_data_path("hardware/dgx-h100.json"), &hw, NULL) != SPSIM_OK)
        abort();
    return hw;
}

/* Evaluate model on hw at tp t (SP on, selective recomputation, pp 1, dp 1) and check what
 * comes out; an invalid configuration is no finding. */
static inline void
fuzz_evaluate(const struct spsim_model *m, const struct spsim_hardware *hw, uint32_t tp)
{
    struct spsim_parallel par;
    spsim_parallel_defaults(&par);
    par.tp = tp;
    par.sp = tp > 1;
    struct spsim_result r;
    if (spsim_evaluate(m, hw, &par, &r, NULL) == SPSIM_OK)
        fuzz_check_result(&r);
}

/* A launch line or recipe read by spsim_megatron_parse (origin "x.sh" or "x.yaml"), then what
 * it accepted: the unmodelled list one NUL-terminated line, the model and configuration
 * evaluated on DGX H100 (a configuration the engine refuses is no finding), and the launch
 * line written back for it. */
static inline void
fuzz_megatron(const uint8_t *data, size_t size, const char *origin)
{
    struct spsim_megatron_config mc;
    struct spsim_error err = {0};
    int rc = spsim_megatron_parse((const char *)data, size, origin, &mc, &err);
    if (rc != SPSIM_OK) {
        if (mc.model)
            fuzz_fail("megatron", "model left after a failure", rc);
        if (!err.message[0] || strchr(err.message, '\n'))
            fuzz_fail("megatron", "error message empty or not one line", rc);
        return;
    }
    if (!mc.model || memchr(mc.unmodelled, '\0', sizeof(mc.unmodelled)) == NULL ||
        strchr(mc.unmodelled, '\n'))
        fuzz_fail("megatron", "accepted without a model or with a bad unmodelled list", 0);
    struct spsim_result r;
    if (spsim_evaluate(mc.model, fuzz_shipped_hardware(), &mc.par, &r, NULL) == SPSIM_OK) {
        fuzz_check_result(&r);
        char buf[8192];
        spsim_megatron_format(mc.model, &mc.par, 8, buf, sizeof(buf));
    }
    spsim_model_destroy(mc.model);
}

#endif
