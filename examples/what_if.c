/*
 * Using libspsim directly: how much activation memory sequence parallelism and selective
 * recomputation save for a model, and whether each variant fits.
 *
 *   cc what_if.c $(pkg-config --cflags --libs spsim) -o what_if
 *   ./what_if llama3-70b dgx-h100
 */
#include <gsl/gsl_errno.h>
#include <stdio.h>
#include <stdlib.h>

#include <spsim/spsim.h>

static int
load(const char *model_name, const char *hw_name, struct spsim_model **m,
     struct spsim_hardware **hw)
{
    char path[4096];
    struct spsim_error err = {0};
    if (spsim_profile_resolve(SPSIM_PROFILE_MODEL, model_name, path, sizeof(path), &err) ||
        spsim_model_load(path, m, &err) ||
        spsim_profile_resolve(SPSIM_PROFILE_HARDWARE, hw_name, path, sizeof(path), &err) ||
        spsim_hardware_load(path, hw, &err)) {
        fprintf(stderr, "what_if: %s\n", err.message);
        return -1;
    }
    return 0;
}

int
main(int argc, char **argv)
{
    gsl_set_error_handler_off(); /* the library reports GSL failures as SPSIM_ENUMERIC */
    const char *model_name = argc > 1 ? argv[1] : "gpt3-175b";
    const char *hw_name = argc > 2 ? argv[2] : "dgx-a100-80g";
    struct spsim_model *model = NULL;
    struct spsim_hardware *hw = NULL;
    if (load(model_name, hw_name, &model, &hw) != 0) {
        spsim_model_destroy(model);
        return EXIT_FAILURE;
    }
    const struct {
        const char *label;
        bool sp;
        enum spsim_recompute recompute;
    } variants[] = {{"TP only", false, SPSIM_RECOMPUTE_NONE},
                    {"TP + SP", true, SPSIM_RECOMPUTE_NONE},
                    {"TP + SP + selective", true, SPSIM_RECOMPUTE_SELECTIVE},
                    {"TP + full recompute", false, SPSIM_RECOMPUTE_FULL}};
    printf("%s on %s, tp 8, pp 8, micro-batch 1, 64 micro-batches\n", model_name, hw_name);
    printf("%-22s %14s %14s %10s %8s\n", "variant", "act/layer MiB", "total GiB", "step s", "MFU");
    for (size_t i = 0; i < sizeof(variants) / sizeof(variants[0]); i++) {
        struct spsim_parallel p;
        spsim_parallel_defaults(&p);
        p.tp = 8;
        p.pp = 8;
        p.gbs = 64;
        p.sp = variants[i].sp;
        p.recompute = variants[i].recompute;
        struct spsim_result r;
        struct spsim_error err = {0};
        if (spsim_evaluate(model, hw, &p, &r, &err) != SPSIM_OK) {
            printf("%-22s %s\n", variants[i].label, err.message);
            continue;
        }
        printf("%-22s %14.1f %14.2f %10.3f %7.1f%%%s\n", variants[i].label,
               r.memory.activation_per_layer_bytes / 1048576.0, r.memory.total_bytes / 1073741824.0,
               r.time.iteration_s, 100 * r.time.mfu, r.memory.fits ? "" : "  (does not fit)");
    }
    spsim_model_destroy(model);
    spsim_hardware_destroy(hw);
    return EXIT_SUCCESS;
}
