/*
 * The scalar fields of a struct spsim_result, by name. `spsim query --format json` nests them by
 * their dotted path ("memory.total_bytes" → {"memory": {"total_bytes": ...}}); CSV and JSONL
 * writers name columns by the path with '.' replaced by '_' ("memory_total_bytes"). Both read
 * the same table, so a row and a query always agree.
 */
#ifndef SPSIM_FIELDS_H
#define SPSIM_FIELDS_H

#include "spsim/result.h"

#ifdef __cplusplus
extern "C" {
#endif

enum spsim_field_type {
    SPSIM_FIELD_U64 = 0,  /**< uint64_t */
    SPSIM_FIELD_U32 = 1,  /**< uint32_t */
    SPSIM_FIELD_I64 = 2,  /**< int64_t */
    SPSIM_FIELD_F64 = 3,  /**< double */
    SPSIM_FIELD_BOOL = 4, /**< bool */
    SPSIM_FIELD_ENUM = 5  /**< an enum, written as its name */
};

struct spsim_field {
    const char *path; /**< "memory.total_bytes" */
    enum spsim_field_type type;
    size_t offset;                       /**< into struct spsim_result */
    const char *(*enum_name)(int value); /**< SPSIM_FIELD_ENUM only */
};

/**
 * @param fields  receives the table (static storage)
 * @return the number of fields
 */
SPSIM_API size_t spsim_result_fields(const struct spsim_field **fields);

/**
 * The fields of the "optimizer" object (Muon's and the optimizer CPU offload's terms:
 * optimizer.name, cpu_offload, offload_fraction, muon_parameters_per_gpu, muon_ns_flops_per_gpu,
 * muon_tp_gather_bytes_per_gpu, muon_tp_gathers_per_gpu, host_bytes, muon_ns_s, muon_gather_s,
 * d2h_s, cpu_s, h2d_s), apart from spsim_result_fields(): the JSON document holds the object only
 * where spsim_result_optimizer_shown(); default CSV rows never hold them, `spsim sweep --columns`
 * names them (optimizer_muon_ns_s, ...).
 * @param fields  receives the table (static storage)
 * @return the number of fields
 */
SPSIM_API size_t spsim_result_optimizer_fields(const struct spsim_field **fields);

/** Whether the result's JSON holds the "optimizer" object: --optimizer muon, or
 * --optimizer-cpu-offload. */
SPSIM_API bool spsim_result_optimizer_shown(const struct spsim_result *r);

/**
 * The fields of the "hsdp" object (HSDP across distributed-optimizer instances:
 * num_distributed_optimizer_instances, outer_dp_shard, inner_ranks, outer_ranks, outer_tier,
 * outer_reduce_wire_bytes_per_rank, outer_ag_wire_bytes_per_rank, the experts'
 * expert_outer_reduce_wire_bytes_per_rank, expert_outer_ag_wire_bytes_per_rank and
 * expert_outer_tier, outer_s), written in the JSON document only where
 * spsim_result_hsdp_shown().
 * @param fields  receives the table (static storage)
 * @return the number of fields
 */
SPSIM_API size_t spsim_result_hsdp_fields(const struct spsim_field **fields);

/** Whether the result's JSON holds the "hsdp" object: num_distributed_optimizer_instances > 1. */
SPSIM_API bool spsim_result_hsdp_shown(const struct spsim_result *r);

/**
 * Format a field's value of `r` into buf: integers in decimal, booleans as true/false, enums by
 * name, doubles by spsim_format_double().
 * @return the length written (buf is NUL-terminated); 0 if cap is too small (cap >= 32 always
 *         suffices)
 */
SPSIM_API size_t spsim_field_format(const struct spsim_field *f, const struct spsim_result *r,
                                    char *buf, size_t cap);

/**
 * Format a double in the shortest decimal form that reads back as the same double ("%.17g"
 * precision or better); NaN and infinities as "nan", "inf", "-inf".
 * @return the length written; buf must hold at least 32 bytes
 */
SPSIM_API size_t spsim_format_double(double value, char *buf);

/**
 * The JSON document of a result, exactly as `spsim query --format json` writes it (and the
 * Python module's spsim.query returns it): spsim_version, model, hardware, then "config",
 * "warnings", "memory", "comm" (the layer's collectives in "per_layer") and "time", every field
 * of spsim_result_fields() nested by its path, then with Muon or the optimizer CPU offload an
 * "optimizer" object (spsim_result_optimizer_fields()); two-space indentation, a final line break,
 * non-finite doubles as null.
 * @param out  receives a NUL-terminated string; the caller frees it with free()
 * @return SPSIM_OK, SPSIM_EINVAL (NULL argument) or SPSIM_ENOMEM
 */
SPSIM_API int spsim_result_to_json(const struct spsim_result *r, const char *model_name,
                                   const char *hw_name, char **out, struct spsim_error *err);

/** Format an unsigned integer in decimal; buf must hold at least 21 bytes. @return length */
SPSIM_API size_t spsim_format_u64(uint64_t value, char *buf);

#ifdef __cplusplus
}
#endif

#endif
