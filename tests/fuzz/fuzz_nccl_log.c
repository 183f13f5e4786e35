/* An nccl-tests log from any bytes: the importer, then a calibration of the shipped DGX H100
 * profile on what it imported, and the calibrated profile's predictions. */
#include "fuzz.h"

static void
check_calibration(const struct spsim_calibration *c)
{
    for (size_t i = 0; i < c->nrows; i++) {
        const struct spsim_calibration_row *r = &c->rows[i];
        fuzz_check_number("calibration measured_s", r->measured_s);
        fuzz_check_number("calibration fit_s", r->fit_s);
        fuzz_check_number("calibration predicted_s", r->predicted_s);
        fuzz_check_number("calibration busbw_GBps", r->busbw_GBps);
    }
    struct spsim_hardware *hw = NULL;
    if (spsim_hardware_parse(c->profile_json, c->profile_len, "calibrated", &hw, NULL) != SPSIM_OK)
        fuzz_fail("calibration", "profile does not load", 0);
    for (size_t i = 0; i < c->nrows; i++) {
        struct spsim_collective_prediction p;
        if (spsim_collective_predict(hw, c->rows[i].op, c->rows[i].ranks, c->rows[i].nodes,
                                     c->rows[i].size_bytes, &p, NULL) == SPSIM_OK)
            fuzz_check_number("calibrated collective time_s", p.time_s);
    }
    spsim_hardware_destroy(hw);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct spsim_bw_table *t = NULL;
    if (spsim_bw_table_create(&t) != SPSIM_OK)
        abort();
    struct spsim_nccl_log_summary s;
    if (spsim_nccl_log_parse((const char *)data, size, "fuzz_all_reduce.txt", NULL, t, &s, NULL) ==
        SPSIM_OK) {
        for (size_t i = 0; i < spsim_bw_table_size(t); i++)
            fuzz_check_number("sample time_s", spsim_bw_table_get(t, i)->time_s);
        struct spsim_calibrate_options o;
        spsim_calibrate_defaults(&o);
        o.base_path = fuzz_data_path("hardware/dgx-h100.json");
        o.name = "fuzz";
        o.date = "2026-01-01T00:00:00Z";
        const struct spsim_bw_table *tables[] = {t};
        struct spsim_calibration c = {0};
        if (spsim_calibrate_profile(&o, tables, 1, NULL, 0, NULL, 0, &c, NULL) == SPSIM_OK)
            check_calibration(&c);
        spsim_calibration_free(&c);
    }
    spsim_bw_table_destroy(t);
    return 0;
}
