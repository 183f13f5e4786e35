/* Megatron-LM launch command lines: read into a model and a parallel configuration, and written
 * back from them. */
#ifndef SPSIM_MEGATRON_H
#define SPSIM_MEGATRON_H

#include "spsim/parallel.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Longest list of flags spsim does not model that spsim_megatron_parse() keeps. */
#define SPSIM_MEGATRON_UNMODELLED_MAX 2048
/** Longest --pipeline-model-parallel-layout spsim_megatron_parse() keeps. */
#define SPSIM_MEGATRON_LAYOUT_MAX 1024
/** Longest note of spsim_megatron_config.assumed. */
#define SPSIM_MEGATRON_ASSUMED_MAX 512

/** What a launch command line says. */
struct spsim_megatron_config {
    struct spsim_model *model; /**< the shape its flags give; the caller frees it */
    struct spsim_parallel par; /**< Megatron-LM's default where a flag is absent */
    bool world_size_given;     /**< torchrun's --nproc_per_node × --nnodes gave dp (else 1) */
    /** The flags spsim does not model, "--lr, --save, ..." ("" when none; cut with "..."). */
    char unmodelled[SPSIM_MEGATRON_UNMODELLED_MAX];
    /** --pipeline-model-parallel-layout's text; par.pipeline_layout points here (copy both
     * together, or point the copy's pipeline_layout at the copy's text). */
    char pipeline_layout[SPSIM_MEGATRON_LAYOUT_MAX];
    /** What the reader assumed, one line: variables a launch script tests that are neither
     * set in it nor given in the environment (taken as unset), "" when none. */
    char assumed[SPSIM_MEGATRON_ASSUMED_MAX];
};

/** One file of spsim_megatron_parse_inputs(). */
struct spsim_megatron_input {
    const char *text;
    size_t len;
    const char *origin; /**< its name in messages; ".yaml" or ".yml" says a recipe */
};

/** What the files are read against. */
struct spsim_megatron_context {
    /** "NAME=VALUE" words a launch script sees set in its environment (spsim --env), or NULL */
    const char *const *env;
    size_t nenv;
    /** A base model for recipes (spsim --model before --megatron-args): its shape and spsim's
     * defaults (bf16), which the recipes' keys override; or NULL */
    const struct spsim_model *model;
};

/**
 * Read a Megatron-LM launch script or command line: `torchrun ... pretrain_gpt.py --num-layers
 * ...`, with bash's quotes, line continuations, comments, variables assigned in the text and
 * arrays of flags (`GPT_ARGS=( ... )` spliced as `${GPT_ARGS[@]}`, as Megatron-LM's examples/
 * write them), its control flow where the script's variables decide it (if, case, for, && and
 * ||, test and [[ ]]; see spsim_megatron_parse_inputs() for an environment), or the flags alone;
 * or a NeMo / Megatron-Bridge YAML recipe (`origin` ending in .yaml or .yml). A variable the
 * text does not assign, a positional parameter or a command substitution in the value of a
 * flag spsim maps is an error naming the flag; a condition that cannot be decided without
 * running a program is refused at its line unless every branch it leaves but one exits or none
 * changes anything. Flags spsim models are mapped (model shape with its experts, multi-latent
 * attention and MTP layers, the vocabulary's padding, tp, pp, vpp, uneven stages, cp, ep, etp,
 * the MoE dispatcher, sp, recompute, micro and global batch, dtype, distributed optimizer,
 * gradient overlap, dp from the world size); a flag it does not model, or that Megatron-LM
 * reads but does not use in that configuration, is listed in `unmodelled`; one whose value
 * would change what spsim computes in a way it does not model (fp32, attention sinks, an
 * optimizer other than Adam, a router score or capacity factor spsim does not model) is an
 * error.
 * @param origin  the name used in messages (a path, or "-")
 * @return SPSIM_OK, SPSIM_EPARSE (shell syntax, a cap, an undecidable branch), SPSIM_EFIELD (a
 *         flag: "ORIGIN:LINE: --flag: reason"), SPSIM_ECONFIG (Megatron-LM's own rules),
 *         SPSIM_ENOMEM
 */
SPSIM_API int spsim_megatron_parse(const char *text, size_t len, const char *origin,
                                   struct spsim_megatron_config *out, struct spsim_error *err);

/** One measured line of a training log (or one step of a functional test's golden values). */
struct spsim_measured_iteration {
    uint64_t iteration;    /**< the line's iteration: the last of the interval it averages */
    uint64_t interval;     /**< iterations the line averages over (since the previous line) */
    double seconds;        /**< elapsed time per iteration */
    double tflops_per_gpu; /**< training.py's "throughput per GPU (TFLOP/s/GPU)"; NaN if absent */
};

/**
 * A measured run: the configuration it trained and what it measured, read from a Megatron-LM
 * training log (spsim_megatron_log_parse) or a functional-test case and its golden values
 * (spsim_megatron_case_parse), for `spsim query` and `spsim calibrate --runs`.
 */
struct spsim_megatron_run {
    struct spsim_megatron_config config; /**< model (freed by spsim_megatron_run_free) and par:
                                              dp from the run's world size */
    uint32_t gpus;                       /**< the world size */
    /** The kept lines, in order; warm-up lines are not among them. */
    struct spsim_measured_iteration *iterations;
    size_t n_iterations;
    /** Lines left out: those covering the first iteration a process ran (warm-up: CUDA, NCCL
     * and allocator set-up, the optimizer state's creation; training.py does not reset its
     * interval timer after the first iteration, so the first two lines of a log include it,
     * and the first golden value), and those with skipped or NaN iterations (an fp16
     * loss-scale overflow skips the optimizer step: another iteration than spsim's). */
    size_t n_skipped;
    uint64_t first_iteration, last_iteration; /**< of the kept lines (0, 0 without any) */
    double median_s;      /**< the median of the kept lines' seconds; NaN without any */
    double median_tflops; /**< the median of their TFLOP/s per GPU; NaN where not logged */
    /** The largest peak of PyTorch's allocator the run reports, in bytes: a log's
     * "max allocated" (MB = 2^20 B) over every rank's memory report, a golden file's
     * mem-max-allocated-bytes (the last rank's); NaN where absent. */
    double peak_allocated_bytes;
};

/**
 * Read a Megatron-LM training log: its printed arguments block ("------------------------
 * arguments ------------------------" to "end of arguments", megatron/training/arguments.py
 * _print_args: `  name ..... value` after validate_args, so every default is written) is the
 * configuration, mapped by the rules of spsim_megatron_parse() (booleans True as the switch,
 * None left out, lists as their words, add_bias_linear False as --disable-bias-linear, world_size
 * as the world, the old checkpoint_activations as full recomputation); its "elapsed time per
 * iteration (ms)" and "throughput per GPU" lines (training.py training_log) are the measured
 * iterations, its "memory (MB) | ... max allocated" reports (report_memory) the peak, its
 * "padded vocab (size: N)" line the vocabulary where the arguments leave it to the tokenizer.
 * A later arguments block (a restart appended to the log) starts a new warm-up.
 * @return SPSIM_OK, SPSIM_EFIELD ("ORIGIN:LINE: name: reason", or no arguments block, or no
 *         iteration line), SPSIM_ECONFIG, SPSIM_ENOMEM
 */
SPSIM_API int spsim_megatron_log_parse(const char *text, size_t len, const char *origin,
                                       struct spsim_megatron_run *out, struct spsim_error *err);

/**
 * A Megatron-LM functional-test case as a measured run: its model_config.yaml (as
 * spsim_megatron_parse() reads it) on `gpus` GPUs (its CI recipe's count: dp = gpus /
 * (tp·cp·pp)), and its golden values (golden_values_dev_dgx_h100.json): the `iteration-time`
 * steps after the first, which averages in the first iteration, and the largest
 * `mem-max-allocated-bytes`.
 * @return SPSIM_OK, SPSIM_EPARSE (malformed JSON), SPSIM_EFIELD, SPSIM_ECONFIG (gpus not a
 *         multiple of tp·cp·pp), SPSIM_ENOMEM
 */
SPSIM_API int spsim_megatron_case_parse(const char *config, size_t config_len,
                                        const char *config_origin, const char *golden,
                                        size_t golden_len, const char *golden_origin, uint32_t gpus,
                                        struct spsim_megatron_run *out, struct spsim_error *err);

/** Free a run's model and iterations; NULL is accepted. */
SPSIM_API void spsim_megatron_run_free(struct spsim_megatron_run *run);

/**
 * spsim_megatron_parse() of several files: one launch script (with `ctx->env` set in its
 * environment), or one or more recipes merged in order as Megatron-Bridge merges override
 * files onto a recipe (OmegaConf.merge: a mapping key by key, anything else replaced), on
 * `ctx->model`'s shape when given. A launch script and recipes together are refused.
 * @param ctx  may be NULL
 * @return as spsim_megatron_parse(); SPSIM_EINVAL for no file, more than 16, or a script with
 *         other files
 */
SPSIM_API int spsim_megatron_parse_inputs(const struct spsim_megatron_input *in, size_t n,
                                          const struct spsim_megatron_context *ctx,
                                          struct spsim_megatron_config *out,
                                          struct spsim_error *err);

/**
 * The Megatron-LM launch line of a configuration: `torchrun --nproc_per_node N --nnodes M
 * pretrain_gpt.py` with the model's shape flags, the parallel flags and the batch, one flag per
 * line with continuations, so that spsim_megatron_parse() of it gives back the same model and
 * configuration.
 * @param gpus_per_node  torchrun's --nproc_per_node when it divides the GPUs (else all GPUs on
 *                       one node)
 * @return the length of the text (as snprintf: the text is cut when it does not fit in cap)
 */
SPSIM_API size_t spsim_megatron_format(const struct spsim_model *model,
                                       const struct spsim_parallel *par, uint32_t gpus_per_node,
                                       char *buf, size_t cap);

/**
 * What of the model no Megatron-LM flag states, so that spsim_megatron_format() would write a
 * line of another model: Gemma 2's and 3's post-attention and post-MLP norms (Megatron-Bridge's
 * TERowParallelLinearLayerNorm, which Megatron-LM's pretrain_gpt.py cannot build).
 * @return a phrase naming the feature, or NULL when the line is the model's
 */
SPSIM_API const char *spsim_megatron_unsupported(const struct spsim_model *model);

#ifdef __cplusplus
}
#endif

#endif
