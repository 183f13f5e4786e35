/*
 * Sweeps: every configuration of a space of axes (models, hardware, tp, pp, dp or a GPU count,
 * vpp, sp, recompute, mbs, gbs, seq, ...), evaluated in a fixed order and streamed as CSV or
 * JSON Lines rows, or reduced to the best K. A row holds exactly what spsim_evaluate() gives
 * for its configuration.
 */
#ifndef SPSIM_SWEEP_H
#define SPSIM_SWEEP_H

#include "spsim/common.h"
#include "spsim/result.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * The axes, in nesting order: the first varies slowest. The points of a sweep are numbered
 * 0 .. size−1 in this order (a mixed-radix number whose digits are the axes' value indices),
 * whatever the number of threads or shards.
 */
enum spsim_sweep_axis {
    SPSIM_AXIS_MODEL = 0,  /**< profile NAME or path; required */
    SPSIM_AXIS_HW,         /**< profile NAME or path; required */
    SPSIM_AXIS_TP,         /**< default 1 */
    SPSIM_AXIS_PP,         /**< default 1 */
    SPSIM_AXIS_CP,         /**< context parallel size; default 1 */
    SPSIM_AXIS_DP,         /**< default 1; excludes SPSIM_AXIS_GPUS */
    SPSIM_AXIS_GPUS,       /**< total GPUs: dp = gpus / (tp·cp·pp); unset by default */
    SPSIM_AXIS_VPP,        /**< default 1 */
    SPSIM_AXIS_SP,         /**< on/off; default off */
    SPSIM_AXIS_RECOMPUTE,  /**< none/selective/full; default none */
    SPSIM_AXIS_MBS,        /**< default 1 */
    SPSIM_AXIS_GBS,        /**< default 1 */
    SPSIM_AXIS_SEQ,        /**< default: the model's seq_len */
    SPSIM_AXIS_FLASH_ATTN, /**< on/off/model; default model (the profile's attention kernel) */
    SPSIM_AXIS_DISTRIBUTED_OPTIMIZER, /**< on/off; default off */
    SPSIM_AXIS_OVERLAP_GRAD_REDUCE,   /**< on/off; default off */
    SPSIM_AXIS_DTYPE,                 /**< bf16/fp16/fp8; default bf16 */
    SPSIM_AXIS_FP8_RECIPE,            /**< delayed/current/mxfp8/blockwise (dtype fp8 only;
                                           another recipe with another dtype is invalid);
                                           default delayed */
    SPSIM_AXIS_CP_COMM_TYPE,          /**< p2p/all_gather/a2a/a2a+p2p; default p2p */
    SPSIM_AXIS_ZERO,                  /**< sharding level 0-3; default 0 */
    SPSIM_AXIS_OVERLAP_PARAM_GATHER,  /**< on/off; default off */
    SPSIM_AXIS_GRAD_REDUCE_IN_FP32,   /**< on/off; default on */
    SPSIM_AXIS_RECOMPUTE_MODULES,     /**< module sets, each joined by '+' (core_attn+mlp), or
                                         default (Megatron's core_attn); default default */
    SPSIM_AXIS_RECOMPUTE_METHOD,      /**< default/uniform/block; default default */
    SPSIM_AXIS_RECOMPUTE_LAYERS,      /**< full with a method: layers per checkpoint; default 0 */
    SPSIM_AXIS_OFFLOAD_LAYERS,        /**< layers whose activations go to host memory; default 0 */
    /** How the layers split over the pipeline: even (default: L/(pp·vpp) each), account (the
     * embedding and the loss each count as a layer), balanced (first and last stages build
     * the same number f of layers, fewer than the middle ones, f the largest that Megatron's
     * rules admit). A point whose split is not possible, or is the even one, is invalid. */
    SPSIM_AXIS_PP_SPLIT,
    /** Largest global batch: gbs becomes the largest multiple of dp·mbs (dp·mbs·pp with
     * interleaving) not above it; excludes the gbs axis; unset by default */
    SPSIM_AXIS_MAX_GBS,
    SPSIM_AXIS_EP,              /**< expert parallel size (MoE); default 1 */
    SPSIM_AXIS_ETP,             /**< expert tensor parallel size; 0 = tp (default) */
    SPSIM_AXIS_MOE_DISPATCHER,  /**< allgather/alltoall/flex; default allgather */
    SPSIM_AXIS_A2A_OVERLAP,     /**< EP all-to-all overlap on/off; default off */
    SPSIM_AXIS_DELAY_WGRAD,     /**< delayed wgrad with it on/off; default off */
    SPSIM_AXIS_TP_COMM_OVERLAP, /**< TE userbuffers TP overlap on/off (needs sp); default off */
    /** Interleaved schedule's async P2P on/off (off: --no-overlap-p2p-communication); default
     * on, Megatron's (without interleaving the sends block whatever it says) */
    SPSIM_AXIS_OVERLAP_P2P,
    /** HSDP: distributed-optimizer instances R (Megatron's --num-distributed-optimizer-instances;
     * needs zero >= 1, R dividing dp·cp and the expert data-parallel size); default 1 */
    SPSIM_AXIS_DIST_OPT_INSTANCES,
    SPSIM_AXIS_COUNT
};

/** @return the axis' name as spec files and options spell it ("tp", "flash_attn", ...);
 * "?" for an unknown axis. Static storage. */
SPSIM_API const char *spsim_sweep_axis_name(enum spsim_sweep_axis axis);

/** @return the axis named `name` (as spsim_sweep_axis_name spells it, '-' accepted for '_'),
 * or -1. */
SPSIM_API int spsim_sweep_axis_from_name(const char *name);

/** The values of the axes before profiles are loaded. Opaque; free with
 * spsim_sweep_spec_destroy(). */
struct spsim_sweep_spec;

/** @param out  receives an empty spec (every axis unset); the caller owns it
 * @return SPSIM_OK or SPSIM_ENOMEM */
SPSIM_API int spsim_sweep_spec_create(struct spsim_sweep_spec **out, struct spsim_error *err);

/** Free; NULL is accepted. */
SPSIM_API void spsim_sweep_spec_destroy(struct spsim_sweep_spec *spec);

/**
 * Set an axis from text, replacing its values. The text is a comma-separated list of items;
 * for the integer axes an item is N, A..B (every integer from A to B), A..B:S (step S) or
 * A..B:*F (A, A·F, A·F², ... up to B). sp, distributed_optimizer and overlap_grad_reduce take
 * on/off (or true/false); flash_attn also takes model; recompute takes none/selective/full;
 * dtype takes bf16/fp16/fp8; model and hw take profile names or paths. A value may appear
 * once. Ranges: tp, pp, dp, vpp and mbs in [1, 65536], gbs in [1, 2^32], seq in [1, 2^24],
 * gpus in [1, 2^24] (spsim_parallel_check's bounds); at most 2^20 values per axis.
 * @param where  names the source in error messages, e.g. "--tp" or "spec.json: field 'tp'"
 * @return SPSIM_OK, SPSIM_EFIELD (err: "WHERE: REASON", naming the bad item), SPSIM_EINVAL
 *         (NULL argument or unknown axis) or SPSIM_ENOMEM
 */
SPSIM_API int spsim_sweep_spec_parse(struct spsim_sweep_spec *spec, enum spsim_sweep_axis axis,
                                     const char *text, const char *where, struct spsim_error *err);

/** @return whether the axis has been given values. */
SPSIM_API bool spsim_sweep_spec_is_set(const struct spsim_sweep_spec *spec,
                                       enum spsim_sweep_axis axis);

/**
 * Read a JSON sweep spec (doc/sweep.md): an object whose keys are axis names, each a value, an
 * array of values or a string in spsim_sweep_spec_parse()'s syntax ("1..64"). Axes present in
 * the file replace those of `spec`; keys starting with '_' are comments; any other key is an
 * error.
 * @return SPSIM_OK, SPSIM_EIO, SPSIM_EPARSE, SPSIM_EFIELD (err: "PATH: field 'tp': REASON")
 *         or SPSIM_ENOMEM
 */
SPSIM_API int spsim_sweep_spec_load(struct spsim_sweep_spec *spec, const char *path,
                                    struct spsim_error *err);

/**
 * Set the axes `spsim optimize` searches where `spec` leaves them unset: tp every divisor of
 * gpus, pp every divisor up to the layer count, vpp 1..layers, mbs 1..64:*2, gbs = gpus (one
 * sequence per GPU, so that every dp is admissible), sp on,off, recompute none,selective,full,
 * distributed_optimizer and overlap_grad_reduce on,off, pp_split even,account,balanced (gbs
 * is left unset when max_gbs is set). The space then skips (does not count as valid) the
 * points that repeat another: the distributed optimizer or overlap_grad_reduce on at dp = 1.
 * The caller sets model, hw and gpus.
 * @param layers  the model's layer count (spsim_model_get_shape)
 * @return SPSIM_OK, SPSIM_EINVAL (gpus or layers 0) or SPSIM_ENOMEM
 */
SPSIM_API int spsim_sweep_spec_optimize_defaults(struct spsim_sweep_spec *spec, uint32_t gpus,
                                                 uint32_t layers, struct spsim_error *err);

/**
 * The MoE axes optimize searches where the caller's say nothing: ep over the divisors of
 * gcd(gpus, experts), the alltoall and allgather dispatchers (etp stays tp). Nothing for a
 * dense model (experts 0).
 * @return SPSIM_OK, SPSIM_EINVAL (gpus 0) or SPSIM_ENOMEM
 */
SPSIM_API int spsim_sweep_spec_optimize_moe(struct spsim_sweep_spec *spec, uint32_t gpus,
                                            uint32_t experts, struct spsim_error *err);

/**
 * Every axis `spsim optimize` searches where `spec` leaves it unset: those of
 * spsim_sweep_spec_optimize_defaults and spsim_sweep_spec_optimize_moe, and cp over the
 * divisors of gpus with every cp_comm_type but a2a+p2p, zero 0, 2 and 3 (level 1 is the
 * distributed optimizer), overlap_param_gather on,off, the dtypes the GPU has (bf16; fp8 with
 * the delayed, current and blockwise recipes where the profile has an FP8 peak; nvfp4 and
 * mxfp8 where it has an NVFP4 one), every set of the model's recompute modules, every
 * recompute method with 0..layers layers, CPU offload of 0..layers−1 layers (dense models on
 * hardware with a host link), tp_comm_overlap and overlap_p2p_communication on,off, and for an
 * MoE model etp 0 (tp) and the divisors of gcd(gpus, NVLink domain).
 * @return SPSIM_OK, SPSIM_EINVAL (a NULL profile, gpus 0) or SPSIM_ENOMEM
 */
SPSIM_API int spsim_sweep_spec_optimize_space(struct spsim_sweep_spec *spec,
                                              const struct spsim_model *model,
                                              const struct spsim_hardware *hw, uint32_t gpus,
                                              struct spsim_error *err);

/** A spec with its profiles loaded, ready to run. Opaque; free with spsim_sweep_destroy(). */
struct spsim_sweep;

/**
 * Load the spec's profiles (spsim_profile_resolve) and fix the space. Unset axes take their
 * default (the enum's comments); the spec may be freed afterwards.
 * @param out  the caller owns it
 * @return SPSIM_OK; SPSIM_EIO, SPSIM_EPARSE, SPSIM_EFIELD for a profile; SPSIM_EINVAL if
 *         model or hw is unset or both dp and gpus are set; SPSIM_ERANGE if the space has
 *         2^62 points or more; SPSIM_ENOMEM
 */
SPSIM_API int spsim_sweep_create(const struct spsim_sweep_spec *spec, struct spsim_sweep **out,
                                 struct spsim_error *err);

/** Free; NULL is accepted. */
SPSIM_API void spsim_sweep_destroy(struct spsim_sweep *sweep);

/** @return the number of points of the space (valid or not). */
SPSIM_API uint64_t spsim_sweep_size(const struct spsim_sweep *sweep);

/** @return the number of values of an axis (1 for an unset one; 0 for an unknown axis). */
SPSIM_API uint32_t spsim_sweep_axis_size(const struct spsim_sweep *sweep,
                                         enum spsim_sweep_axis axis);

/** One point of the space. Pointers are owned by the sweep. */
struct spsim_sweep_point {
    uint64_t index;
    const struct spsim_model *model;
    const struct spsim_hardware *hw;
    const char *model_name; /**< the profile's name */
    const char *hw_name;
    struct spsim_parallel par; /**< with dp derived from gpus when the gpus axis is set */
    uint32_t gpus;             /**< the gpus axis' value; 0 when dp is an axis */
    int pp_split;              /**< the pp_split axis' value (0 even, 1 account, 2 balanced) */
    uint64_t max_gbs;          /**< the max_gbs axis' value; 0 when unset */
    const char *invalid;       /**< why pp_split or max_gbs cannot apply here; NULL if they can */
};

/**
 * Decode a point. With the gpus axis, a GPU count that tp·pp does not divide leaves
 * par.dp = 0 and returns SPSIM_ECONFIG (err names field 'gpus'); the point is then invalid.
 * @return SPSIM_OK, SPSIM_ECONFIG or SPSIM_EINVAL (index out of range)
 */
SPSIM_API int spsim_sweep_point_at(const struct spsim_sweep *sweep, uint64_t index,
                                   struct spsim_sweep_point *out, struct spsim_error *err);

/**
 * Points [*begin, *end) of shard `shard` of `nshards`: consecutive ranges in index order, so
 * the shards partition the space exactly and their outputs concatenate to the whole sweep's.
 * @return SPSIM_OK, or SPSIM_EINVAL unless 0 <= shard < nshards
 */
SPSIM_API int spsim_sweep_shard_range(uint64_t size, uint64_t shard, uint64_t nshards,
                                      uint64_t *begin, uint64_t *end, struct spsim_error *err);

struct spsim_sweep_options;

/**
 * A 64-bit checksum (FNV-1a) of what a run's rows depend on besides its range: every axis'
 * values, the profiles' names, and the options that select or lay out rows (format, header,
 * feasible_only, max_total_bytes, top_k, by). Shards of one sweep share it; `spsim merge`
 * refuses shards whose checksums differ. Not a hash of the profiles' contents.
 * @return the checksum; 0 for a NULL argument
 */
SPSIM_API uint64_t spsim_sweep_fingerprint(const struct spsim_sweep *sweep,
                                           const struct spsim_sweep_options *opt);

/** Row layouts. */
enum spsim_row_format {
    SPSIM_ROW_NONE = 0, /**< evaluate only */
    SPSIM_ROW_CSV = 1,  /**< RFC 4180, a header line first */
    SPSIM_ROW_JSONL = 2 /**< one JSON object per line, keys named as the CSV columns */
};

/** What --top ranks by; the best first. */
enum spsim_sweep_by {
    SPSIM_BY_ITERATION_S = 0, /**< time.iteration_s, smallest first */
    SPSIM_BY_TOTAL_BYTES = 1, /**< memory.total_bytes, smallest first */
    SPSIM_BY_MFU = 2,         /**< time.mfu (against the dense BF16 peak), largest first */
    /** time.tokens_per_s, largest first: throughput, the same order as the time to train a
     * token budget, whatever the batch size, sequence length or dtype (the default) */
    SPSIM_BY_TOKENS_PER_S = 3,
    SPSIM_BY_COUNT
};

/** @return "iteration_s", "total_bytes", "mfu", "tokens_per_s"; "?" otherwise. */
SPSIM_API const char *spsim_sweep_by_name(enum spsim_sweep_by by);

/** @return the column holding the metric: "time_iteration_s", "memory_total_bytes",
 * "time_mfu", "time_tokens_per_s"; "?" otherwise. */
SPSIM_API const char *spsim_sweep_by_column(enum spsim_sweep_by by);

/**
 * The key --top ranks a result by: smaller is better, equal keys go to the lower index.
 * Positive doubles order as their bit patterns, so iteration_s ranks by its bits, mfu and
 * tokens_per_s by their complement (largest first); total_bytes ranks as itself.
 */
SPSIM_API uint64_t spsim_sweep_rank_key(enum spsim_sweep_by by, const struct spsim_result *r);

/** Counts of a run. Deterministic (the same for any thread count). */
struct spsim_sweep_stats {
    uint64_t points;    /**< points in the run's range */
    uint64_t evaluated; /**< points done so far (valid or not) */
    uint64_t valid;     /**< passed spsim_parallel_check and evaluated */
    uint64_t feasible;  /**< valid and fit in HBM (memory.fits) */
    uint64_t written;   /**< rows passed to `write` */
    double elapsed_s;   /**< wall time since the run started */
};

/** Receives output text in order; return non-zero to stop the run (it then fails with
 * SPSIM_EIO). Called from the thread that called spsim_sweep_run(). */
typedef int (*spsim_sweep_write_fn)(void *cookie, const char *text, size_t len);

struct spsim_sweep_options {
    uint64_t begin, end;          /**< index range [begin, end); default the whole sweep (end 0
                                   *   means the size) */
    unsigned threads;             /**< 0 (default): every online CPU */
    enum spsim_row_format format; /**< default SPSIM_ROW_CSV */
    bool header;                  /**< CSV: write the header line first (default true) */
    bool feasible_only;           /**< keep only rows that fit in HBM (default false) */
    uint64_t max_total_bytes;     /**< keep only rows with memory.total_bytes <= this; 0 = no
                                   *   limit (default) */
    uint64_t top_k;               /**< 0 (default): every row in index order; else the best K by
                                   *   `by`, ties to the lower index, written at the end; at most
                                   *   SPSIM_SWEEP_MAX_TOP */
    enum spsim_sweep_by by;       /**< default SPSIM_BY_TOKENS_PER_S */
    spsim_sweep_write_fn write;   /**< rows; required unless format is SPSIM_ROW_NONE */
    /** Invalid points, one line each ("model=... tp=... ...: REASON\n"), in index order;
     * NULL (default): counted only. */
    spsim_sweep_write_fn invalid;
    /** Called about every 0.1 s and once at the end; return non-zero to stop the run (it
     * then fails with SPSIM_EIO). NULL (default): none. */
    int (*progress)(void *cookie, const struct spsim_sweep_stats *stats);
    void *cookie;        /**< passed to the callbacks */
    uint64_t *top_index; /**< optional, top_k entries: receives the best points' indices,
                          *   best first */
    uint64_t *top_count; /**< optional: receives how many of them there are */
    /** The row's columns, "a,b,..." in that order, named as the header names them ("model",
     * "hw", "tp", "memory_total_bytes", ...); NULL (default): every column. An unknown or
     * repeated name fails the run with SPSIM_EINVAL naming it. */
    const char *columns;
};

/** Largest top_k accepted (16 bytes of memory each, per thread). */
#define SPSIM_SWEEP_MAX_TOP (1u << 24)

/** Set every option to its documented default. */
SPSIM_API void spsim_sweep_options_defaults(struct spsim_sweep_options *opt);

/**
 * Evaluate the points of the range in parallel and write the rows in index order (or the
 * best top_k at the end). Memory stays bounded whatever the range: a few blocks of rows per
 * thread, a cache of layer evaluations, and top_k entries per thread. Each point is checked
 * with spsim_parallel_check(); invalid points are counted (and listed through `invalid`).
 * @param stats  optional; receives the final counts
 * @return SPSIM_OK; SPSIM_EINVAL (bad options: err names the option); SPSIM_EIO (a callback
 *         asked to stop: err says which); SPSIM_ENOMEM (allocation or thread creation failed)
 */
SPSIM_API int spsim_sweep_run(const struct spsim_sweep *sweep,
                              const struct spsim_sweep_options *opt,
                              struct spsim_sweep_stats *stats, struct spsim_error *err);

/**
 * Evaluate one point as a row of the sweep is evaluated (the same as spsim_evaluate() of the
 * point's configuration).
 * @return SPSIM_OK, or the status spsim_evaluate() would give (ECONFIG for an invalid point)
 */
SPSIM_API int spsim_sweep_evaluate(const struct spsim_sweep *sweep, uint64_t index,
                                   struct spsim_result *out, struct spsim_error *err);

/**
 * Optimize: the best configurations of a space (spsim_sweep_spec_optimize_defaults' or any
 * other) by branch and bound, in one pass (doc/sweep.md "How optimize searches"). A subtree is
 * skipped only when a lower bound of its time (or memory) proves that none of its points can
 * enter the answer, so the answer is the exhaustive one: the same points, the same order (ties
 * to the lower point index), aliases of one configuration counted once.
 */
struct spsim_optimize_options {
    uint64_t top_k;         /**< how many that fit (default 5; 1 .. SPSIM_OPTIMIZE_MAX_TOP) */
    enum spsim_sweep_by by; /**< default SPSIM_BY_TOKENS_PER_S */
    /** keep only configurations with memory.total_bytes <= this; 0 (default): memory.fits */
    uint64_t max_total_bytes;
    /** evaluate every point of the space, no bound (default false): the bounds' check; slow;
     * on one thread */
    bool exhaustive;
    /** threads of the branch and bound (they share its queue); 0 (default): every online CPU.
     * The answers do not depend on it; the stats do. */
    unsigned threads;
};

#define SPSIM_OPTIMIZE_MAX_TOP 1000

/** One configuration of the answer, evaluated as spsim_evaluate() evaluates it. */
struct spsim_optimize_entry {
    struct spsim_result result;
    const struct spsim_model *model; /**< owned by the sweep */
    const struct spsim_hardware *hw;
    const char *model_name, *hw_name;
};

struct spsim_optimize_stats {
    double points;              /**< of the space (every axis' values multiplied) */
    uint64_t layer_evaluations; /**< layers built and costed (spsim_layer_evaluate) */
    uint64_t summaries;         /**< layer summaries whose compositions were searched */
    uint64_t shapes;            /**< pipeline shapes (pp, split, vpp, batch) searched */
    uint64_t pipelines;         /**< shapes with the axes that time them (recompute method,
                                     offload, sends' overlap) searched */
    uint64_t composed;          /**< configurations evaluated in full */
    uint64_t memory_only;       /**< configurations whose memory alone was needed */
    uint64_t checked;           /**< configurations checked by spsim_parallel_check */
    uint64_t valid;             /**< of those, valid and not an alias of another point */
    uint64_t pruned;            /**< subtrees (summaries, pipeline shapes, points) the bounds
                                     skipped */
    double elapsed_s;
};

struct spsim_optimize_result {
    uint64_t count;                   /**< entries in `top` (0: nothing fits) */
    struct spsim_optimize_entry *top; /**< the caller's array of top_k entries, best first */
    /** the best of every valid configuration whatever its memory (when there is one) */
    bool has_unconstrained;
    struct spsim_optimize_entry unconstrained;
    /** the valid configuration needing the least memory (when nothing fits; else unset) */
    bool has_smallest;
    struct spsim_optimize_entry smallest;
    struct spsim_optimize_stats stats;
};

/** Set every option to its documented default. */
SPSIM_API void spsim_optimize_options_defaults(struct spsim_optimize_options *opt);

/**
 * Search the sweep's space. The space needs one GPU count (the gpus axis) or a dp axis; it may
 * have 2^62 points or more when made from spsim_sweep_spec_optimize_defaults.
 * @param out  out->top must hold opt->top_k entries; the rest is filled
 * @return SPSIM_OK (also when nothing fits or nothing is valid: see out), SPSIM_EINVAL (bad
 *         options), SPSIM_ENOMEM
 */
SPSIM_API int spsim_optimize_run(const struct spsim_sweep *sweep,
                                 const struct spsim_optimize_options *opt,
                                 struct spsim_optimize_result *out, struct spsim_error *err);

/** Room a row may need beside its two names: every field at its longest. */
#define SPSIM_ROW_MAX 16384
/** Room a row with names of these lengths may need: quoting makes a name at most six times
 * longer (a control character becomes \u00XX in JSON) plus its two quotes. */
#define SPSIM_ROW_SIZE(model_len, hw_len)                                                          \
    (SPSIM_ROW_MAX + 6 * ((size_t)(model_len) + (size_t)(hw_len)) + 8)

/**
 * The header line of a layout, '\n' included ("" for JSONL, which has none): "model,hw", the
 * configuration columns named as the query options (tp, pp, dp, vpp, sp, recompute, mbs, gbs,
 * seq, flash_attn, ...), then every other field of spsim_result_fields() named by its path
 * with '.' as '_' (memory_total_bytes, time_iteration_s, ...).
 * @return the length (buf is NUL-terminated); 0 if cap is too small (SPSIM_ROW_MAX suffices)
 */
SPSIM_API size_t spsim_row_header(enum spsim_row_format format, char *buf, size_t cap);

/**
 * Check a column list for spsim_sweep_options.columns: "a,b,...", each name "model", "hw" or a
 * column of spsim_row_header(), none twice.
 * @return SPSIM_OK, or SPSIM_EINVAL (err: "columns: 'x' is not a column (...)")
 */
SPSIM_API int spsim_row_columns_check(const char *columns, struct spsim_error *err);

/**
 * One row of a result, '\n' included, numbers as spsim_field_format() writes them (JSONL:
 * NaN and infinities as null). Strings are quoted as the layout needs.
 * @return the length (buf is NUL-terminated); 0 if cap is too small (or out of memory);
 *         cap >= SPSIM_ROW_SIZE(strlen(model_name), strlen(hw_name)) always suffices
 */
SPSIM_API size_t spsim_row_format(enum spsim_row_format format, const char *model_name,
                                  const char *hw_name, const struct spsim_result *result, char *buf,
                                  size_t cap);

#ifdef __cplusplus
}
#endif

#endif
