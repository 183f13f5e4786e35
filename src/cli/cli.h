/* The spsim command: shared helpers. The CLI uses only the library's public API. */
#ifndef SPSIM_CLI_H
#define SPSIM_CLI_H

#include <stdio.h>

#include "spsim/spsim.h"

/* Exit codes (documented in the README and in `spsim --help`). */
enum cli_exit {
    EXIT_OK = 0,
    EXIT_RUNTIME = 1, /* internal or numerical failure, I/O error writing output */
    EXIT_USAGE = 2,   /* bad command line */
    EXIT_INPUT = 3,   /* bad input file: profile, sweep spec, log */
    EXIT_CONFIG = 4,  /* invalid parallel configuration */
    EXIT_NO_GPU = 5,  /* GPU feature absent from this build, or no GPU present */
    EXIT_GPU = 6      /* a CUDA, cuBLAS or NCCL call failed */
};

#define CLI_ARRAY_LENGTH(a) (sizeof(a) / sizeof((a)[0]))

#if defined(__GNUC__)
#define CLI_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define CLI_PRINTF(f, a)
#endif

/* Text from the command line or an input quoted for a message (spsim_quote into a buffer of the
 * enclosing expression's lifetime): cli_error(EXIT_USAGE, "--hw: %s ...", CLI_Q(arg)). */
#define CLI_QUOTE_MAX 160
#define CLI_Q(s)      spsim_quote((s), SIZE_MAX, (char[CLI_QUOTE_MAX]){0}, CLI_QUOTE_MAX)

/** Print "spsim: error: MSG" to stderr (escaped into one line: spsim_escape); return `code`. */
int cli_error(int code, const char *fmt, ...) CLI_PRINTF(2, 3);
/** Put `context` ("FILE: line N") before every error and warning until it is set to NULL; the
 * "Try --help" line of usage errors is left out meanwhile. `context` must stay valid. */
void cli_error_context(const char *context);
/** Print "spsim: warning: MSG" to stderr. */
void cli_warning(const char *fmt, ...) CLI_PRINTF(1, 2);
/** Print a usage error and the hint to see --help; return EXIT_USAGE. */
int cli_usage_error(const char *command, const char *fmt, ...) CLI_PRINTF(2, 3);
struct option;
/** The usage error for getopt_long's ':' (missing value) or '?' (unknown option) result, an
 * unknown option with the nearest of `longopts` (may be NULL); returns EXIT_USAGE. */
int cli_getopt_error(const char *command, int opt, char **argv, const struct option *longopts);
/** EXIT_USAGE with a message if operands remain after the options, else EXIT_OK. */
int cli_no_operands(const char *command, int argc, char **argv);
/** Map a library status to the CLI exit code. */
int cli_exit_for(int status);
/** Report a library error (its message) and return the exit code. */
int cli_fail(const struct spsim_error *err);

/* Strict number parsing: the whole string, no sign, within [min, max]. */
int cli_parse_u64(const char *option, const char *text, uint64_t min, uint64_t max, uint64_t *out);
int cli_parse_u32(const char *option, const char *text, uint32_t min, uint32_t max, uint32_t *out);
int cli_parse_double(const char *option, const char *text, double min, double max, double *out);
/** A byte size in [1, 2^50]: digits with an optional K, M, G or T suffix (powers of 1024, as
 * nccl-tests -b/-e) and an optional B. @return 0, or -1 when `text` is not one */
int cli_parse_size(const char *text, uint64_t *out);

/** A profile path's name: its last component without ".json" (*len bytes from the result). */
const char *cli_profile_stem(const char *path, size_t *len);
/** Load a model or hardware profile given a NAME or a path. */
int cli_load_model(const char *arg, struct spsim_model **out);
int cli_load_hardware(const char *arg, struct spsim_hardware **out);

/*
 * Output: results go to stdout, or to a file given with -o, written atomically (the whole
 * output is built in memory, then renamed into place).
 */
struct cli_output {
    FILE *stream; /* where to write */
    char *buffer; /* open_memstream buffer when path != NULL */
    size_t size;
    const char *path; /* NULL: stdout */
};
/** EXIT_USAGE (with the message) for an empty -o path, so that a command refuses it before
 * any work; EXIT_OK otherwise (NULL: standard output). */
int cli_output_check(const char *path);
int cli_output_open(struct cli_output *out, const char *path);
/** Flush and, for a file, write it atomically. @return an exit code */
int cli_output_close(struct cli_output *out);
/** Give up after a failure: a file is not written (the old one stays). */
void cli_output_abort(struct cli_output *out);

/*
 * Streamed output (sweep, merge): standard output, or a temporary file beside `path` renamed
 * into place by cli_stream_commit. A terminating signal (SIGINT, SIGTERM, SIGHUP, SIGALRM,
 * SIGUSR1, ...: stream.c lists them) makes the next write fail; commit then removes the
 * temporary file and reports the interruption.
 */
struct cli_stream {
    int fd;
    struct spsim_output_file *file; /* NULL for standard output */
    const char *path;               /* NULL: standard output */
    int error;                      /* errno of the first failed write */
};
int cli_stream_open(struct cli_stream *s, const char *path);
/** @return 0, or -1 after a write error or an interruption (the stream stays failed) */
int cli_stream_write(struct cli_stream *s, const char *data, size_t len);
/** Finish: fsync and rename for a file. @return an exit code (reports any failure) */
int cli_stream_commit(struct cli_stream *s);
/** Give up: remove the temporary file. */
void cli_stream_abort(struct cli_stream *s);
/** @return whether a terminating signal arrived since a stream was opened */
bool cli_interrupted(void);

/* Sweep axes as options (sweep, optimize): --model LIST ... --dtype LIST. */
struct cli_axes {
    const char *text[SPSIM_AXIS_COUNT]; /* the option's argument, or NULL */
};
struct option;
/** Parse the given axes into the spec (a bad value is a usage error naming the option). */
int cli_axes_apply(const struct cli_axes *axes, struct spsim_sweep_spec *spec, const char *command);
/** Set an axis the spec does not set yet. @return an exit code */
int cli_axes_default(struct spsim_sweep_spec *spec, enum spsim_sweep_axis axis, const char *text);
int cli_parse_by(const char *command, const char *arg, enum spsim_sweep_by *by);
int cli_parse_row_format(const char *command, const char *arg, enum spsim_row_format *format);
/** The short column set for a terminal: model, hw, tp, pp, dp, the other axes the sweep varies,
 * then memory, fit, iteration time, tokens/s per GPU and MFU. @return a new string or NULL */
char *cli_short_columns(const struct spsim_sweep *sw);

/* MPI: `mpirun -np N spsim sweep` splits the sweep over the ranks (src/cli/sweep_mpi.c; a
 * build without MPI never starts it). */
struct cli_mpi {
    int rank, size;
    bool active; /* MPI_Init was called */
};
/** @return whether an MPI launcher started this process */
bool cli_mpi_launched(void);
/** MPI_Init when launched by mpirun (`spsim` execs `spsim-mpi` with the same arguments then);
 * rank 0 of 1 otherwise. argv[0] is the command ("sweep"). @return an exit code */
int cli_mpi_begin(struct cli_mpi *m, int argc, char **argv);
/** MPI_Finalize; a failure (rc != 0) aborts every rank first. @return rc */
int cli_mpi_end(const struct cli_mpi *m, int rc);
/** Run the sweep over all ranks; rank 0 writes through opt's callbacks and gets the totals. */
int cli_mpi_sweep(const struct cli_mpi *m, const struct spsim_sweep *sw,
                  const struct spsim_sweep_options *opt, struct spsim_sweep_stats *total);

/* The parallel-configuration options shared by query and explain. */
/* What --megatron-log's training log measured (spsim_megatron_run, without its model). */
struct cli_measured {
    const char *path; /* NULL: no log */
    double median_s, median_tflops, peak_bytes;
    size_t lines, skipped;
    uint64_t first, last, interval;
};

struct cli_config {
    const char *model;
    const char *hardware;
    struct spsim_parallel par;
    bool pp_set, vpp_set;         /* given on the command line */
    const char *pp_schedule;      /* --pp-schedule's name, or NULL */
    struct spsim_model *imported; /* --megatron-args's model, until cli_config_model takes it */
    uint32_t gpus;                /* --gpus N: dp = N / (tp·cp·pp); 0 = not given */
    uint32_t file_world;          /* the world size --megatron-args's file gave, or 0 */
    char layout[1024];            /* --megatron-args's pipeline layout, par.pipeline_layout's */
    struct cli_measured measured; /* --megatron-log's measured run */
    /* Megatron's model flags given on the command line, applied to the loaded model
     * (cli_config_model): -1 / < 0 = not given. */
    int mtp_layers;         /* --mtp-num-layers */
    double capacity_factor; /* --moe-expert-capacity-factor (0: dropless) */
    int pad_to_capacity;    /* --moe-pad-expert-input-to-capacity */
    /* The options given since the last --megatron-args (whose file replaces those before it),
     * by OPT_* − OPT_MODEL, and the levels --zero and --fsdp asked for: cli_config_finish
     * refuses two that contradict each other. */
    bool given[104];
    uint32_t zero_level, fsdp_level;
    /* --megatron-args since the last --model (recipes merge in order), --env NAME=VALUE for a
     * launch script, whether --model was given. */
    const char *megatron[16];
    size_t nmegatron;
    const char *env[64];
    size_t nenv;
    bool model_given;
};
/** The paper's setting: GPT-3 175B on DGX A100 80GB, tp 8, pp 8, vpp 3, SP, selective, mbs 1,
 * gbs 64. */
void cli_config_defaults(struct cli_config *cfg);
/** Parse one configuration option; returns 1 if consumed, 0 if not ours, <0 on error
 * (-exit code). */
int cli_config_option(struct cli_config *cfg, int opt, const char *arg);
/**
 * Complete a configuration for its model (query, explain, validate): where the default pp·vpp
 * (8·3) does not divide the model's layers, vpp 1 and, unless given, the largest pp <= 8 that
 * divides them; --gpus N sets dp = N / (tp·cp·pp); SP at tp = 1 is disabled with Megatron's
 * warning (arguments.py). Options that contradict each other (--sp with --no-sp,
 * --distributed-optimizer with --zero 0, --dp with --gpus, ...) are refused, one line naming
 * both. @return EXIT_OK or EXIT_USAGE
 */
int cli_config_finish(struct cli_config *cfg, const struct spsim_model *model);

/** --megatron-args FILE|-: the file's model and configuration replace what the options before
 * it gave (src/cli/megatron.c); recipes given one after the other merge in order, on --model's
 * shape when it came first; the flags it does not model are one warning. */
int cli_megatron_apply(struct cli_config *cfg, const char *path);
/** --megatron-log FILE: a Megatron-LM training log's configuration (its arguments block) replaces
 * what the options before it gave, as --megatron-args's does; what it measured is kept for
 * query to print beside the prediction (src/cli/megatron.c). */
int cli_megatron_log_apply(struct cli_config *cfg, const char *path);
struct jw;
/** The measured run beside the prediction: table lines, or the "measured" JSON object. */
void cli_measured_table(FILE *f, const struct cli_measured *m, const struct spsim_result *r);
void cli_measured_json(struct jw *w, const struct cli_measured *m, const struct spsim_result *r);
/** The configuration's model: --megatron-args's (the caller now owns it), else --model's. */
int cli_config_model(struct cli_config *cfg, struct spsim_model **out);
/** `spsim calibrate --runs FILE...` (src/cli/calibrate_runs.c): fit `base` (NULL: the runs'
 * hardware) to the runs and write the fitted profile to `output`. @return an exit code */
int cli_calibrate_runs(const char *const *files, size_t nfiles, const char *base, const char *name,
                       const char *output, bool cross_validate, const char *command_line);
/** --format megatron: the launch line of a configuration. @return an exit code */
int cli_megatron_write(FILE *f, const struct spsim_model *model, const struct spsim_hardware *hw,
                       const struct spsim_parallel *par);

/*
 * One command's options (src/cli/options.c): the configuration options (query, explain,
 * validate) and the sweep axes (sweep, optimize) come from the shared tables; the command's
 * own options go to handle(ctx, opt, arg, the option's text as given).
 */
struct cli_command {
    const char *name; /* "query" */
    const char *help;
    struct cli_config *config; /* non-NULL: the configuration options */
    struct cli_axes *axes;     /* non-NULL: the sweep axes */
    const struct option *own;  /* no terminator; --help is added */
    size_t nown;
    int (*handle)(void *ctx, int opt, const char *arg, const char *current);
    void *ctx;
    bool operands; /* the command takes operands (left at argv[optind ..]) */
};
/** The one getopt loop. @return EXIT_OK, an exit code, or -1 after printing the help */
int cli_parse_options(const struct cli_command *c, int argc, char **argv);

/* Enum values by the library's names; a bad one is a usage error listing the names. */
int cli_parse_recompute(const char *option, const char *text, enum spsim_recompute *out);
/** Only the training dtypes (SPSIM_DTYPE_TRAINING_COUNT). */
int cli_parse_dtype(const char *option, const char *text, enum spsim_dtype *out);
int cli_parse_coll_op(const char *option, const char *text, enum spsim_coll_op *out);
int cli_parse_recompute_method(const char *option, const char *text,
                               enum spsim_recompute_method *out);
/** A module list ("core_attn,mlp" or "core_attn+mlp") into spsim_recompute_module bits. */
int cli_parse_recompute_modules(const char *option, const char *text, uint32_t *out);

enum cli_config_opt {
    OPT_MODEL = 1000,
    OPT_HW,
    OPT_TP,
    OPT_PP,
    OPT_DP,
    OPT_VPP,
    OPT_SP,
    OPT_NO_SP,
    OPT_RECOMPUTE,
    OPT_MBS,
    OPT_GBS,
    OPT_SEQ,
    OPT_FLASH,
    OPT_NO_FLASH,
    OPT_ATTN_BACKEND,
    OPT_DISTOPT,
    OPT_NO_DISTOPT,
    OPT_OVERLAP_GRAD,
    OPT_NO_OVERLAP_GRAD,
    OPT_DTYPE,
    OPT_FP8_RECIPE,
    OPT_FP8_PARAM,
    OPT_NO_FP8_PARAM,
    OPT_FIRST_STAGE,
    OPT_LAST_STAGE,
    OPT_ACCOUNT_EMB,
    OPT_ACCOUNT_LOSS,
    OPT_LAYOUT,
    OPT_RECOMPUTE_MODULES,
    OPT_RECOMPUTE_METHOD,
    OPT_RECOMPUTE_LAYERS,
    OPT_OFFLOAD_LAYERS,
    OPT_CP,
    OPT_CP_COMM,
    OPT_HCP_SIZES,
    OPT_ZERO,
    OPT_FSDP,
    OPT_GRAD_FP32,
    OPT_GRAD_BF16,
    OPT_OVERLAP_PARAM,
    OPT_NO_OVERLAP_PARAM,
    OPT_OVERLAP_P2P,
    OPT_NO_OVERLAP_P2P,
    OPT_DDP_BUCKET,
    OPT_TP_COMM_OVERLAP,
    OPT_NO_TP_COMM_OVERLAP,
    OPT_MEGATRON_ARGS,
    OPT_EP,
    OPT_ETP,
    OPT_MOE_DISPATCHER,
    OPT_MOE_FLEX_BACKEND,
    OPT_MOE_FLEX_SMS,
    OPT_MOE_ROUTING,
    OPT_CUDA_GRAPH_IMPL,
    OPT_CUDA_GRAPH_SCOPE,
    OPT_MOE_A2A_OVERLAP,
    OPT_NO_MOE_A2A_OVERLAP,
    OPT_DELAY_WGRAD,
    OPT_NO_DELAY_WGRAD,
    OPT_BF16_ENDS,
    OPT_NO_BF16_ENDS,
    OPT_BF16_START,
    OPT_BF16_END,
    OPT_PAO,
    OPT_MAIN_GRADS_DTYPE,
    OPT_MAIN_PARAMS_DTYPE,
    OPT_EXP_AVG_DTYPE,
    OPT_EXP_AVG_SQ_DTYPE,
    OPT_GPUS,
    OPT_ENV,
    OPT_MB_GROUP,
    OPT_MEGATRON_LOG,
    OPT_MTP_LAYERS,
    OPT_MOE_CAPACITY,
    OPT_MOE_PAD,
    OPT_MOE_DROP_POLICY,
    OPT_LORA_RANK,
    OPT_LORA_TARGETS,
    OPT_LORA_ALPHA,
    OPT_LORA_DROPOUT,
    OPT_PACKED_LEN,
    OPT_OPTIMIZER,
    OPT_MUON_NS_STEPS,
    OPT_MUON_TP_MODE,
    OPT_MUON_NESTEROV,
    OPT_MUON_NO_SPLIT_QKV,
    OPT_OPT_CPU_OFFLOAD,
    OPT_OPT_OFFLOAD_FRACTION,
    OPT_OPT_OFFLOAD_OVERLAP,
    OPT_LOG_PARAMS_NORM,
    OPT_LOG_ZEROS,
    OPT_LOG_INTERVAL,
    OPT_TENSORBOARD,
    OPT_LOG_TIMERS_TB,
    OPT_LOG_MEMORY_TB,
    OPT_NO_WGRAD_FUSION,
    OPT_DEFER_EMB_WGRAD,
    OPT_WGRAD_DEFERRAL_LIMIT,
    OPT_CE_FUSION,
    OPT_CE_IMPL,
    OPT_PP_SCHEDULE,
    OPT_DIST_OPT_INSTANCES,
    OPT_OUTER_DP_SHARDING,
    OPT_CONFIG_END
};

#define CLI_CONFIG_HELP                                                                            \
    "  --model NAME|FILE      model profile (default gpt3-175b; 'spsim list models'), or a\n"      \
    "                         Hugging Face config.json or a folder holding one\n"                  \
    "  --hw NAME|FILE         hardware profile (default dgx-a100-80g; 'spsim list hardware')\n"    \
    "  --tp N                 tensor parallel size (default 8)\n"                                  \
    "  --pp N                 pipeline parallel size (default 8, or the largest of 8, 7, ..., 1\n" \
    "                         that divides the model's layers)\n"                                  \
    "  --dp N                 data parallel size (default 1)\n"                                    \
    "  --gpus N               GPUs in all: dp = N / (tp·cp·pp) (instead of --dp)\n"              \
    "  --vpp N                interleaved model chunks per pipeline stage (default 3 where\n"      \
    "                         pp*3 divides the model's layers, else 1 = none)\n"                   \
    "  --pp-schedule S        1f1b, interleaved (Megatron's, by vpp: default), zb-h1, zb-v\n"      \
    "                         (vpp 2), dualpipe (pp even), dualpipev (vpp 2)\n"                    \
    "  --sp, --no-sp          sequence parallelism (default on)\n"                                 \
    "  --recompute MODE       none, selective or full (default selective)\n"                       \
    "  --recompute-modules LIST\n"                                                                 \
    "                         selective: modules recomputed, of core_attn, layernorm, mlp\n"       \
    "                         (default core_attn, Korthikanti et al.'s selective recompute)\n"     \
    "  --recompute-method M   full: uniform (groups of N layers) or block (first N layers of\n"    \
    "                         each chunk); default: every layer its own checkpoint\n"              \
    "  --recompute-layers N   full with a method: N (Megatron --recompute-num-layers)\n"           \
    "  --offload-layers N     offload the first N layers' activations to host memory (TE CPU\n"    \
    "                         offload; pp 1, no recompute; default 0 = none)\n"                    \
    "  --mbs N                micro-batch size in sequences (default 1)\n"                         \
    "  --gbs N                global batch size in sequences (default 64)\n"                       \
    "  --seq N                sequence length (default: the model's seq_len)\n"                    \
    "  --flash-attn, --no-flash-attn\n"                                                            \
    "                         attention kernel (default: the model's 'attention' field)\n"         \
    "  --attention-backend B  flash attention's kernels: auto (default: TE's FusedAttention\n"     \
    "                         where the profile measures it, gpu.attention_table), flash\n"        \
    "                         (FlashAttention, gpu.flash_attention_tflops) or fused (cuDNN)\n"     \
    "  --distributed-optimizer, --no-distributed-optimizer\n"                                      \
    "                         shard optimizer state over dp (default off)\n"                       \
    "  --overlap-grad-reduce, --no-overlap-grad-reduce\n"                                          \
    "                         overlap the DP gradient reduction with backward (default off)\n"     \
    "  --dtype T              GEMM data type: bf16 (default), fp16, fp8 or nvfp4 (Blackwell)\n"    \
    "  --fp8-recipe R         --dtype fp8: delayed (default), current (tensorwise), mxfp8 or\n"    \
    "                         blockwise, as Transformer Engine scales FP8 tensors\n"               \
    "  --fp8-param-gather, --no-fp8-param-gather\n"                                                \
    "                         --dtype fp8: weights kept and gathered in FP8 (needs --zero >= 1)\n" \
    "  --fp4-param-gather     --dtype nvfp4: the same in NVFP4 (Megatron --fp4-param-gather)\n"    \
    "  --first-last-layers-bf16, --no-first-last-layers-bf16\n"                                    \
    "                         --dtype fp8 (not delayed) or nvfp4: the first and last decoder\n"    \
    "                         layers run in BF16 (default off; ignored for bf16, fp16)\n"          \
    "  --num-layers-at-start-in-bf16 N, --num-layers-at-end-in-bf16 M\n"                           \
    "                         how many at each end (default 1, 1; fp8: at most layers / pp)\n"     \
    "  --cp N                 context parallel size (default 1): GPUs = tp·cp·pp·dp\n"          \
    "  --cp-comm-type T       p2p (default), all_gather, a2a or a2a+p2p\n"                         \
    "  --hierarchical-cp-sizes A,B\n"                                                              \
    "                         a2a+p2p: inner A2A size A, outer p2p size B (A·B = cp)\n"           \
    "  --zero N               shard over dp·cp: 0 none (default), 1 optimizer state (=\n"         \
    "                         --distributed-optimizer), 2 + gradients, 3 + parameters\n"           \
    "  --fsdp S               Megatron-FSDP strategy: optim (= --zero 1), optim_grads (2),\n"      \
    "                         optim_grads_params (3)\n"                                            \
    "  --num-distributed-optimizer-instances R\n"                                                  \
    "                         HSDP: R replicas of dp·cp/R ranks, sharded inside each, the\n"      \
    "                         gradient shards all-reduced across them (needs --zero >= 1;\n"       \
    "                         an MoE model's expert data-parallel group split the same way)\n"     \
    "  --outer-dp-sharding-strategy S\n"                                                           \
    "                         HSDP across replicas: no_shard (default) or optim (optimizer\n"      \
    "                         state over all dp·cp; needs --zero 3)\n"                            \
    "  --grad-reduce-in-fp32, --grad-reduce-in-bf16\n"                                             \
    "                         gradient buffer and reduction in fp32 or 16-bit (default: fp32,\n"   \
    "                         fp16 with --dtype fp16, as Megatron)\n"                              \
    "  --use-precision-aware-optimizer\n"                                                          \
    "                         TE FusedAdam keeps the optimizer's tensors in the dtypes below\n"    \
    "                         (needs --distributed-optimizer or --zero >= 1)\n"                    \
    "  --main-grads-dtype D   fp32 (default) or bf16 gradient buffer (precision-aware)\n"          \
    "  --main-params-dtype D  master weights fp32 (default) or fp16 (precision-aware)\n"           \
    "  --exp-avg-dtype D, --exp-avg-sq-dtype D\n"                                                  \
    "                         Adam's moments: fp32 (default), fp16, bf16 or fp8\n"                 \
    "  --optimizer adam|muon|dist_muon\n"                                                          \
    "                         Muon for the 2-D weights, Adam for the rest (README \"Muon\");\n"    \
    "                         --muon-num-ns-steps N, --muon-tp-mode duplicated|blockwise,\n"       \
    "                         --muon-nesterov, --muon-no-split-qkv\n"                              \
    "  --optimizer-cpu-offload, --optimizer-offload-fraction F, --overlap-cpu-optimizer-d2h-h2d\n" \
    "                         step F of the optimizer shard on the CPU (needs the precision-\n"    \
    "                         aware optimizer and host_link.cpu_memory_GBps in the profile)\n"     \
    "  --overlap-param-gather, --no-overlap-param-gather\n"                                        \
    "                         gather updated parameters during the next forward (default off)\n"   \
    "  --overlap-p2p-communication, --no-overlap-p2p-communication\n"                              \
    "                         interleaved schedule: pipeline sends beside the next chunk\n"        \
    "                         (default on with vpp > 1, as Megatron; 1F1B always blocks)\n"        \
    "  --microbatch-group-size-per-virtual-pipeline-stage N\n"                                     \
    "                         interleaved schedule: micro-batches each model chunk runs in a\n"    \
    "                         row (default pp; pp <= N <= micro-batches, as Megatron)\n"           \
    "  --ddp-bucket-size N    parameters per overlapped gradient bucket (default Megatron's\n"     \
    "                         max(40000000, 1000000·dp))\n"                                       \
    "  --tp-comm-overlap, --no-tp-comm-overlap\n"                                                  \
    "                         TE userbuffers: TP collectives pipelined with their GEMMs (needs\n"  \
    "                         --sp; default off)\n"                                                \
    "  --cuda-graph-impl I    CUDA graphs: none (default), local, transformer_engine or\n"         \
    "                         full_iteration (all but the optimizer); they change the host's\n"    \
    "                         kernel launches, the time only with host.kernel_launch_us\n"         \
    "  --cuda-graph-scope L   local/transformer_engine: modules captured, of attn, mlp, moe,\n"    \
    "                         moe_router, moe_preprocess, mamba (default: the whole layer)\n"      \
    "Optimizer and host work (Megatron-LM's flags of the same names):\n"                           \
    "  --optimizer O          adam (default), muon or dist_muon (Muon on the 2-D weights, Adam\n"  \
    "                         on the others; dist_muon shards whole weights over dp·cp)\n"        \
    "  --muon-num-ns-steps N, --muon-tp-mode M (duplicated, blockwise), --muon-nesterov,\n"        \
    "  --muon-no-split-qkv    Muon's Newton-Schulz steps, TP mode and options\n"                   \
    "  --optimizer-cpu-offload, --optimizer-offload-fraction F, --overlap-cpu-optimizer-d2h-h2d\n" \
    "                         the step of a fraction F of the shard on the CPU\n"                  \
    "  --log-params-norm, --log-num-zeros-in-grad\n"                                               \
    "                         the step's parameter norm and gradient zero count (host calls)\n"    \
    "  --log-interval N, --tensorboard-dir DIR, --log-timers-to-tensorboard,\n"                    \
    "  --log-memory-to-tensorboard\n"                                                              \
    "                         training_log's host work on the last rank each iteration\n"          \
    "  --no-gradient-accumulation-fusion\n"                                                        \
    "                         every weight's gradient added into main_grad by the DDP hook\n"      \
    "  --defer-embedding-wgrad-compute, --wgrad-deferral-limit N\n"                                \
    "                         the last stage keeps the output layer's input and logits\n"          \
    "                         gradient of N micro-batches (0: all) for the flush (memory)\n"       \
    "  --cross-entropy-loss-fusion, --cross-entropy-fusion-impl native|te|te-inplace\n"            \
    "                         the loss fused (impl implies the fusion; default native):\n"         \
    "                         torch.compile'd, TE >= 2.18, or TE <= 2.17 in place\n"               \
    "Mixture of experts (models with experts):\n"                                                  \
    "  --ep N                 expert parallel size (default 1): experts split over N ranks\n"      \
    "  --etp N                expert tensor parallel size (default: tp); expert data parallel\n"   \
    "                         = tp·cp·dp / (ep·etp)\n"                                          \
    "  --moe-dispatcher D     allgather (default, Megatron's), alltoall, flex (fused DeepEP or\n"  \
    "                         HybridEP kernels over the expert-TP×EP group)\n"                    \
    "  --moe-flex-dispatcher-backend B\n"                                                          \
    "                         flex's kernels: deepep (default, Megatron's), hybridep\n"            \
    "  --moe-flex-dispatcher-num-sms N\n"                                                          \
    "                         SMs of the flex kernels (default: the backend's, DeepEP 20,\n"       \
    "                         HybridEP 24 in one NVLink domain, 8 across): what the exchanges\n"   \
    "                         take from the computation beside them with the EP overlap\n"         \
    "  --moe-routing R        random (default): the most-loaded EP rank of uniform random\n"       \
    "                         routing sets the time and memory; balanced: every rank at the "      \
    "mean\n"                                                                                       \
    "  --overlap-moe-expert-parallel-comm, --no-overlap-moe-expert-parallel-comm\n"                \
    "                         EP all-to-all overlap: one micro-batch's forward beside another's\n" \
    "                         backward (ep > 1, alltoall or flex, vpp with pp > 1; default off)\n" \
    "  --delay-wgrad-compute, --no-delay-wgrad-compute\n"                                          \
    "                         with the overlap: weight gradients apart, the dispatch backward\n"   \
    "                         under the experts' wgrad (default off)\n"                            \
    "  --moe-expert-capacity-factor F\n"                                                           \
    "                         token dropping: each expert takes at most F times its balanced\n"    \
    "                         share (replaces the profile's capacity_factor; 0 = dropless)\n"      \
    "  --moe-pad-expert-input-to-capacity\n"                                                       \
    "                         drop and pad: every expert computes exactly its capacity (needs\n"   \
    "                         a capacity factor and --moe-dispatcher alltoall)\n"                  \
    "  --moe-token-drop-policy P\n"                                                                \
    "                         probs or position: which tokens are dropped (no cost difference)\n"  \
    "  --mtp-num-layers N     multi-token-prediction layers (replaces the profile's mtp_layers)\n" \
    "Fine-tuning (Megatron-Bridge):\n"                                                             \
    "  --lora-rank R          LoRA of rank R: the base frozen (no gradients, optimizer state\n"    \
    "                         or weight-gradient GEMMs), adapters trained (default 0: off)\n"      \
    "  --lora-target-modules LIST\n"                                                               \
    "                         of linear_qkv, linear_proj, linear_fc1, linear_fc2 (default all)\n"  \
    "  --lora-alpha A         the adapters' scale alpha/R (recorded; no cost)\n"                   \
    "  --lora-dropout P       dropout on each adapter's input (default 0)\n"                       \
    "  --packed-subseq-len N  packed (THD) sequences: each row of --seq tokens holds\n"            \
    "                         sub-sequences attending within themselves, N = "                     \
    "sum(s_i^2)/sum(s_i)\n"                                                                        \
    "                         (equal sub-sequences: their length; default 0: one per row)\n"       \
    "Uneven pipeline stages (Megatron-Core; at most one of the three ways):\n"                     \
    "  --first-stage-layers N, --last-stage-layers N\n"                                            \
    "                         layers of pipeline rank 0 / rank pp-1; the rest split evenly\n"      \
    "                         (Megatron's --decoder-first/last-pipeline-num-layers)\n"             \
    "  --account-for-embedding-in-pipeline-split, --account-for-loss-in-pipeline-split\n"          \
    "                         count the embedding / the loss as one layer of the split\n"          \
    "  --pipeline-layout S    Megatron's --pipeline-model-parallel-layout: stages split by '|'\n"  \
    "                         (pp*vpp of them, vpp derived), E embedding, t layer, L loss,\n"      \
    "                         m an MTP layer (last stage, beside L), 't*3' and '(tt|)*2'\n"        \
    "                         repeat; e.g. 'Et*7|(t*8|)*14,t*7L' or 'Et|(tt|)*30mL'\n"             \
    "  --megatron-args FILE   a Megatron-LM launch script or command line ('-': stdin), or a\n"    \
    "                         NeMo / Megatron-Bridge YAML recipe or dump: its model and\n"         \
    "                         configuration replace the options before it; the flags spsim\n"      \
    "                         does not model are listed on standard error. Recipes given again\n"  \
    "                         merge in order (override files), on --model's shape when --model\n"  \
    "                         comes before them. Hybrid models (pretrain_hybrid.py,\n"             \
    "                         --hybrid-layer-pattern, --mamba-*, --linear-*, Bridge's\n"           \
    "                         HybridModelProvider) are read with their Mamba-2 and Gated\n"        \
    "                         DeltaNet layers\n"                                                   \
    "  --megatron-log FILE    a Megatron-LM training log: its printed arguments are the model\n"   \
    "                         and configuration (as --megatron-args); query prints what its\n"     \
    "                         iteration lines measured beside the prediction\n"                    \
    "  --env NAME=VALUE       set in the launch script's environment (before --megatron-args;\n"   \
    "                         repeatable); other variables the script tests are taken as unset\n"

/* A small streaming JSON writer: exact integers, shortest round-trip doubles. */
struct jw {
    FILE *f;
    int depth;
    bool first[32];
    bool pretty;
};
void jw_init(struct jw *w, FILE *f, bool pretty);
void jw_begin_object(struct jw *w, const char *key);
void jw_end_object(struct jw *w);
void jw_begin_array(struct jw *w, const char *key);
void jw_end_array(struct jw *w);
void jw_string(struct jw *w, const char *key, const char *value);
void jw_u64(struct jw *w, const char *key, uint64_t value);
void jw_i64(struct jw *w, const char *key, int64_t value);
void jw_double(struct jw *w, const char *key, double value);
void jw_bool(struct jw *w, const char *key, bool value);
void jw_raw(struct jw *w, const char *key, const char *text);
void jw_finish(struct jw *w);

/* Human formatting. */
/** Write `text` left-aligned in `width` display columns (UTF-8 aware: continuation bytes and
 * combining marks such as the macron of ḡ take no column). */
void fput_padded(FILE *f, const char *text, int width);
const char *fmt_bytes(char *buf, size_t cap, double bytes);  /* "12.34 GiB" */
const char *fmt_time(char *buf, size_t cap, double seconds); /* "1.234 ms" */

/* Subcommands. */
int cmd_query(int argc, char **argv);
int cmd_explain(int argc, char **argv);
int cmd_trace(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_collective(int argc, char **argv);
int cmd_validate(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);
int cmd_sweep(int argc, char **argv);
int cmd_optimize(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_plot(int argc, char **argv);

#endif
