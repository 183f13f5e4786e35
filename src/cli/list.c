/* `spsim list models|hardware`: the shipped profiles. */
#include "config.h"

#include <string.h>

#include "cli.h"

static const char list_help[] =
    "Usage: spsim list models|hardware\n"
    "\n"
    "List the shipped profiles with their headline numbers (hardware: hbmGB the memory a GPU is\n"
    "sold with, 10^9 bytes; GiB what it reports, nvidia-smi's MiB / 1024). A NAME shown here\n"
    "can be given to --model or --hw; the data directory is $SPSIM_DATA_DIR, else the source\n"
    "tree, else PREFIX/share/spsim.\n";

static int
show_model(void *cookie, const char *name, const char *path)
{
    int *rc = cookie;
    struct spsim_model *m = NULL;
    struct spsim_error err = {0};
    if (spsim_model_load(path, &m, &err) != SPSIM_OK) {
        *rc = cli_fail(&err);
        return 0;
    }
    const struct spsim_model_shape *s = spsim_model_get_shape(m);
    printf("%-15s %5u %7u %6u %5u %7u %7u %6u  %-7s %-10s %-8s %10.4g %10.4g\n", name, s->layers,
           s->hidden, s->heads, s->kv_heads, s->ffn_hidden, s->vocab, s->seq_len,
           s->mlp == SPSIM_MLP_SWIGLU  ? "swiglu"
           : s->mlp == SPSIM_MLP_RELU2 ? "relu2"
                                       : "gelu",
           s->norm == SPSIM_NORM_RMSNORM ? "rmsnorm" : "layernorm",
           s->attention == SPSIM_ATTENTION_FLASH ? "flash" : "standard",
           (double)spsim_model_parameters(m, 1), (double)spsim_model_active_parameters(m, 1));
    spsim_model_destroy(m);
    return 0;
}

/* A figure the profile marks unsourced shows as "n/s" (spsim_hardware_info.unsourced_fields). */
static const char *
figure(char *buf, size_t size, const char *fmt, double value, const struct spsim_hardware_info *i,
       const char *field)
{
    if (value == 0 && i->unsourced_fields && strstr(i->unsourced_fields, field))
        snprintf(buf, size, "%s", "n/s");
    else
        snprintf(buf, size, fmt, value);
    return buf;
}

static int
show_hardware(void *cookie, const char *name, const char *path)
{
    int *rc = cookie;
    struct spsim_hardware *hw = NULL;
    struct spsim_error err = {0};
    if (spsim_hardware_load_listing(path, &hw, &err) != SPSIM_OK) {
        *rc = cli_fail(&err);
        return 0;
    }
    struct spsim_hardware_info i;
    spsim_hardware_get_info(hw, &i);
    /* Board power: "-" where the profile gives none, "n/s" where it marks it unsourced. */
    char watts[16];
    if (i.board_power_W > 0)
        snprintf(watts, sizeof(watts), "%.0f", i.board_power_W);
    else
        snprintf(watts, sizeof(watts), "%s", i.board_power_unsourced ? "n/s" : "-");
    /* Marketed GB (10^9 B) beside what the GPU reports, in GiB as nvidia-smi's MiB / 1024: an
     * "80 GB" H100 reports 81559 MiB, 79.6 GiB. */
    char gemm[16], hbm[16];
    printf("%-14s %-24s %6.0f %7s %5.0f %6.1f %7s %6.0f %7.1f %4u %3ux%-4.0f %6s%s\n", name,
           i.gpu_model, i.peak_tflops[SPSIM_DTYPE_BF16],
           figure(gemm, sizeof(gemm), "%.1f", i.gemm_achievable_tflops_bf16, &i,
                  "gpu.gemm_achievable_tflops.bf16"),
           (double)i.hbm_marketed_bytes / 1e9, (double)i.hbm_capacity_bytes / 1073741824.0,
           figure(hbm, sizeof(hbm), "%.0f", i.hbm_bandwidth_GBps, &i, "gpu.hbm_bandwidth_GBps"),
           i.nvlink_bandwidth_per_direction_GBps, i.nvlink_ring_busbw_GBps, i.nvlink_domain_gpus,
           i.nics_per_node, i.nic_line_rate_Gbit_s, watts,
           i.fitted ? "  fitted" : (i.calibrated ? "  calibrated" : ""));
    spsim_hardware_destroy(hw);
    return 0;
}

int
cmd_list(int argc, char **argv)
{
    if (argc >= 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
        fputs(list_help, stdout);
        return EXIT_OK;
    }
    if (argc != 2)
        return cli_usage_error("list", "expected one argument: models or hardware");
    int rc = EXIT_OK;
    struct spsim_error err = {0};
    int status;
    if (strcmp(argv[1], "models") == 0) {
        printf("%-15s %5s %7s %6s %5s %7s %7s %6s  %-7s %-10s %-8s %10s %10s\n", "name", "L",
               "hidden", "heads", "kv", "ffn", "vocab", "seq", "mlp", "norm", "attn", "params",
               "active");
        status = spsim_profile_list(SPSIM_PROFILE_MODEL, show_model, &rc, &err);
    } else if (strcmp(argv[1], "hardware") == 0) {
        printf("%-14s %-24s %6s %7s %5s %6s %7s %6s %7s %4s %-8s %6s\n", "name", "gpu", "bf16TF",
               "gemmTF", "hbmGB", "GiB", "hbmGBps", "nvlGBps", "ringGBps", "dom", "NICsxGb/s",
               "boardW");
        status = spsim_profile_list(SPSIM_PROFILE_HARDWARE, show_hardware, &rc, &err);
    } else {
        return cli_usage_error("list", "%s is not one of models, hardware", CLI_Q(argv[1]));
    }
    if (status != SPSIM_OK)
        return cli_fail(&err);
    return rc;
}
