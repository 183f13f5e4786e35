/* Model profiles: the shape of a decoder-only transformer. */
#ifndef SPSIM_MODEL_H
#define SPSIM_MODEL_H

#include "spsim/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The MLP's activation: GeLU, SwiGLU (gated), or squared ReLU (Megatron --squared-relu,
 * activations.py squared_relu: relu(x)², not gated; Nemotron-H). */
enum spsim_mlp { SPSIM_MLP_GELU = 0, SPSIM_MLP_SWIGLU = 1, SPSIM_MLP_RELU2 = 2 };
enum spsim_norm { SPSIM_NORM_LAYERNORM = 0, SPSIM_NORM_RMSNORM = 1 };
enum spsim_attention { SPSIM_ATTENTION_STANDARD = 0, SPSIM_ATTENTION_FLASH = 1 };
/** The attention softmax (Megatron-Core transformer_config.py softmax_type, --softmax-type;
 * Transformer Engine's DotProductAttention softmax_type): vanilla; off-by-one, a zero logit
 * beside each row's scores; learnable, one trained logit per head (attention sinks, gpt-oss). */
enum spsim_softmax {
    SPSIM_SOFTMAX_VANILLA = 0,
    SPSIM_SOFTMAX_OFF_BY_ONE = 1,
    SPSIM_SOFTMAX_LEARNABLE = 2
};
/** Position embedding; none: neither a table nor RoPE (Megatron --position-embedding-type none,
 * the hybrid models'). */
enum spsim_position {
    SPSIM_POSITION_LEARNED = 0,
    SPSIM_POSITION_ROPE = 1,
    SPSIM_POSITION_NONE = 2
};
/** The router's score function (Megatron-Core --moe-router-score-function). */
enum spsim_router_score { SPSIM_ROUTER_SOFTMAX = 0, SPSIM_ROUTER_SIGMOID = 1 };
/** The router's load-balancing loss (Megatron-Core --moe-router-load-balancing-type with a
 * non-zero --moe-aux-loss-coeff); none when the coefficient is 0 (Megatron's default). */
enum spsim_moe_balancing {
    SPSIM_BALANCE_NONE = 0,
    SPSIM_BALANCE_AUX_LOSS = 1,
    SPSIM_BALANCE_SEQ_AUX_LOSS = 2,
    SPSIM_BALANCE_GLOBAL_AUX_LOSS = 3,
    SPSIM_BALANCE_SINKHORN = 4 /**< S-BASE's Sinkhorn assignment, no loss (router.py) */
};

/** The numbers of a model profile (see doc/profiles.md for the rules). */
struct spsim_model_shape {
    uint32_t layers;     /**< L */
    uint32_t hidden;     /**< h */
    uint32_t heads;      /**< a, query heads */
    uint32_t kv_heads;   /**< key/value heads (GQA), == heads for MHA */
    uint32_t head_dim;   /**< d; hidden / heads unless the profile sets it */
    uint32_t ffn_hidden; /**< MLP inner size (each of gate and up for SwiGLU) */
    uint32_t vocab;      /**< v before padding */
    /** Megatron's --make-vocab-size-divisible-by: v is padded to a multiple of it × tp
     * (build_tokenizer.py vocab_size_with_padding); 0 = its default, 128 */
    uint32_t vocab_divisible_by;
    uint32_t seq_len; /**< default s */
    enum spsim_mlp mlp;
    enum spsim_norm norm;
    bool dropout;
    enum spsim_attention attention; /**< default attention kernel */
    enum spsim_position position;
    bool linear_bias;
    bool tied_embeddings;
    bool qkv_bias; /**< a bias on the QKV projection only (Qwen2, Megatron --add-qkv-bias); implied
                      by linear_bias */
    /** Gated attention (--attention-output-gate, transformer_config.py attention_output_gate;
     * Qwen3-Next, Qwen3.5): linear_qkv also projects a gate of heads·head_dim (attention.py
     * linear_qkv_out_dim), the core attention output times sigmoid(gate) before linear_proj. */
    bool attention_output_gate;
    /** The share of each head's Q/K channels rotary embedding turns (--rotary-percent; HF
     * partial_rotary_factor); 0 = 1, every channel. */
    double rotary_percent;
    /** The shared experts' output scaled by sigmoid(x·w) of a replicated 1 × h weight
     * (--moe-shared-expert-gate, moe/shared_experts.py gate_weight; Qwen3-Next). */
    bool moe_shared_expert_gate;
    bool qk_norm; /**< the layer's norm over each head's channels of Q and K after the QKV
                     projection (Qwen3, Megatron --qk-layernorm) */
    /** Post-norms (Gemma 2 and 3): a norm of h channels on the attention projection's output
     * and one on FC2's, each before its residual add, beside the two input norms (four per
     * layer; Megatron-Bridge common/te_layers.py TERowParallelLinearLayerNorm, a TENorm after
     * the row-parallel linear, in gemma3_provider.py's layer spec). Dense layers with standard
     * attention only; Megatron-LM has no flag for it. */
    bool post_norms;
    /** The embedding's output multiplied by sqrt(h) before the first layer (Gemma 1, 2 and 3:
     * Megatron-Bridge 067f987 gemma3_provider.py:281 Gemma3LanguageModelEmbedding and
     * modules.py:40 EmbeddingScalingMixin): one elementwise pass forward and one backward on
     * the embedding's output, nothing saved. Megatron-LM has no flag for it. */
    bool embedding_scale;
    /* Mixture of experts (doc/profiles.md). experts == 0 is a dense model, and every MoE field is
       then 0. Megatron-Core's option in brackets. */
    uint32_t experts;           /**< routed experts per MoE layer [--num-experts] */
    uint32_t experts_per_token; /**< top-k [--moe-router-topk] */
    uint32_t expert_ffn_hidden; /**< each routed expert's FFN inner size [--moe-ffn-hidden-size] */
    uint32_t shared_expert_ffn_hidden; /**< the shared experts' inner size together, 0 = none
                                          [--moe-shared-expert-intermediate-size] */
    uint32_t moe_first_dense_layers;   /**< the first k layers are dense (DeepSeek's
                                          first_k_dense_replace) */
    uint32_t moe_layer_freq;           /**< layer i is MoE when i % n == 0 (1: all)
                                          [--moe-layer-freq] */
    enum spsim_router_score router_score;
    double capacity_factor; /**< tokens an expert takes over its balanced share; 0 = dropless
                               [--moe-expert-capacity-factor] */
    /* Multi-latent attention (DeepSeek-V2/V3, [--multi-latent-attention]); kv_lora_rank == 0: not
       MLA, and every MLA field is then 0. */
    uint32_t q_lora_rank;         /**< 0: Q projected from the hidden state directly */
    uint32_t kv_lora_rank;        /**< the compressed KV width [--kv-lora-rank] */
    uint32_t qk_head_dim;         /**< each head's non-rotary Q/K channels [--qk-head-dim] */
    uint32_t qk_pos_emb_head_dim; /**< each head's rotary Q/K channels [--qk-pos-emb-head-dim] */
    uint32_t v_head_dim;          /**< [--v-head-dim] */
    uint32_t mtp_layers;          /**< multi-token prediction layers [--mtp-num-layers] */
    /* Sliding-window attention (GPT-OSS); 0: every layer attends to the whole causal context. */
    uint32_t window;           /**< positions a query attends to, itself included
                                  (Megatron window_size[0] + window_size[1] + 1) */
    uint32_t window_skip_freq; /**< every n-th layer (1-based) attends fully; 0: none
                                  [--window-attn-skip-freq] */
    /** Attention sinks [--softmax-type]: learnable adds TE's softmax_offset, heads/tp values
     * per attention layer and rank (dot_product_attention.py:772-784 at TE d0067d0). */
    enum spsim_softmax softmax_type;
    /* Group-limited routing (DeepSeek-V3's node-limited routing): the experts in
     * router_num_groups equal groups, each token's experts among router_group_topk of them;
     * 0, 0 = none [--moe-router-num-groups, --moe-router-group-topk]. */
    uint32_t router_num_groups;
    uint32_t router_group_topk;
    /* The router's auxiliary terms (router.py TopKRouter); only whether each is on matters. */
    enum spsim_moe_balancing load_balancing; /**< [--moe-router-load-balancing-type with
                                                --moe-aux-loss-coeff > 0] */
    bool z_loss;                             /**< [--moe-z-loss-coeff > 0] */
    bool expert_bias; /**< aux-loss-free balancing [--moe-router-enable-expert-bias] */
    /** Drop and pad (needs capacity_factor > 0): every expert's input padded to its capacity,
     * ceil(T·k/E · capacity_factor) tokens from each source rank (moe_utils.py get_capacity,
     * token_dispatcher.py drop_and_pad) [--moe-pad-expert-input-to-capacity] */
    bool pad_to_capacity;
    /* Latent MoE (Nemotron 3 Super, moe_layer.py fc1_latent_proj/fc2_latent_proj): the routed
     * experts run on this width, the tokens projected h → latent before the dispatch and back
     * after the combine by duplicated (not TP-split) linears; 0 = none [--moe-latent-size]. */
    uint32_t moe_latent;
    /* Hybrid state-space models (Megatron-Core HybridModel, models/hybrid/): hybrid_pattern
     * NULL is a transformer (every layer attention and an MLP or MoE block); else one symbol per
     * decoder layer, as Megatron writes --hybrid-layer-pattern (hybrid_layer_allocation.py
     * Symbols): 'M' a Mamba-2 layer, '*' an attention layer, '-' an MLP layer, 'E' an MoE layer,
     * each its own norm, mixer and residual. Owned by the model it belongs to (borrowed in a
     * shape passed to spsim_model_create, which copies it). */
    const char *hybrid_pattern;
    /** Each multi-token-prediction depth's layers in the same symbols (the pattern after '/',
     * "*E" for Nemotron 3); NULL: an MTP depth is one transformer layer. */
    const char *mtp_pattern;
    bool mtp_shared; /**< one MTP depth's weights used by every depth [--mtp-use-repeated-layer] */
    /* Mamba-2 mixer (ssm/mamba_mixer.py; 0 = Megatron's default, resolved at load). */
    uint32_t mamba_heads;     /**< [--mamba-num-heads]; default 2h / mamba_head_dim */
    uint32_t mamba_head_dim;  /**< P [--mamba-head-dim]; default 64 */
    uint32_t mamba_state_dim; /**< N, d_state [--mamba-state-dim]; default 128 */
    uint32_t mamba_groups;    /**< G, B and C groups [--mamba-num-groups]; default 8 */
    uint32_t mamba_conv;      /**< d_conv, the causal convolution's width; MambaMixer's 4 */
    uint32_t mamba_chunk;     /**< Q, the SSD scan's chunk; MambaMixer's 128 (Bridge
                                 mamba_chunk_size) */
    /* Gated DeltaNet mixer ('G', ssm/gated_delta_net/; 0 = Megatron's default, resolved at
     * load: transformer_config.py linear_* defaults). */
    uint32_t gdn_key_heads;      /**< [--linear-num-key-heads]; default 16 */
    uint32_t gdn_value_heads;    /**< [--linear-num-value-heads]; default 32 */
    uint32_t gdn_key_head_dim;   /**< d_k [--linear-key-head-dim]; default 128 */
    uint32_t gdn_value_head_dim; /**< d_v [--linear-value-head-dim]; default 128 */
    uint32_t gdn_conv;           /**< the causal convolution's width [--linear-conv-kernel-dim];
                                    default 4 */
};

/** The kind of a hybrid model's decoder layer (its pattern symbol). */
enum spsim_layer_kind {
    SPSIM_LAYER_TRANSFORMER = 0, /**< not a hybrid model: attention and an MLP or MoE block */
    SPSIM_LAYER_MAMBA = 1,       /**< 'M' */
    SPSIM_LAYER_ATTENTION = 2,   /**< '*' */
    SPSIM_LAYER_MLP = 3,         /**< '-' */
    SPSIM_LAYER_MOE = 4,         /**< 'E' */
    SPSIM_LAYER_GDN = 5,         /**< 'G' (a Gated DeltaNet layer) */
    SPSIM_LAYER_KIND_COUNT = 6
};

struct spsim_model;

/**
 * Load and validate a model profile.
 * @param path   file to read
 * @param out    receives the model; the caller owns it and frees it with spsim_model_destroy()
 * @param err    optional; filled on failure
 * @return SPSIM_OK, SPSIM_EIO, SPSIM_EPARSE, SPSIM_EFIELD or SPSIM_ENOMEM
 */
SPSIM_API int spsim_model_load(const char *path, struct spsim_model **out, struct spsim_error *err);

/**
 * Parse and validate a model profile held in memory.
 * @param json    the text (need not be NUL-terminated)
 * @param origin  the name used in error messages (a path)
 */
SPSIM_API int spsim_model_parse(const char *json, size_t len, const char *origin,
                                struct spsim_model **out, struct spsim_error *err);

/**
 * Build a model from a shape, validated with the same rules as a file.
 * @param name  copied; may be NULL ("custom")
 */
SPSIM_API int spsim_model_create(const struct spsim_model_shape *shape, const char *name,
                                 struct spsim_model **out, struct spsim_error *err);

/**
 * A model like @p base (its name, source, description and MoE layer pattern) with another shape
 * of the same layer count, validated as a profile is: the command line's Megatron model flags
 * (--mtp-num-layers, --moe-expert-capacity-factor, ...) on a loaded profile.
 * @return SPSIM_OK, SPSIM_EFIELD (err names the field), SPSIM_EINVAL or SPSIM_ENOMEM
 */
SPSIM_API int spsim_model_derive(const struct spsim_model *base,
                                 const struct spsim_model_shape *shape, struct spsim_model **out,
                                 struct spsim_error *err);

/** Free a model; NULL is accepted. */
SPSIM_API void spsim_model_destroy(struct spsim_model *model);

/** @return the profile's name; owned by the model. */
SPSIM_API const char *spsim_model_name(const struct spsim_model *model);
/** @return the profile's source line ("" if none); owned by the model. */
SPSIM_API const char *spsim_model_source(const struct spsim_model *model);
/** @return the profile's description ("" if none); owned by the model. */
SPSIM_API const char *spsim_model_description(const struct spsim_model *model);
/** @return the shape; owned by the model. */
SPSIM_API const struct spsim_model_shape *spsim_model_get_shape(const struct spsim_model *model);

/**
 * Vocabulary padded as Megatron pads it: to a multiple of vocab_divisible_by (default 128) · tp
 * (--make-vocab-size-divisible-by, megatron/core/tokenizers/utils/build_tokenizer.py
 * vocab_size_with_padding).
 */
SPSIM_API uint64_t spsim_model_padded_vocab(const struct spsim_model *model, uint32_t tp);

/**
 * Whether decoder layer @p layer (0-based) is a mixture-of-experts layer: never for a dense model;
 * otherwise not among the first moe_first_dense_layers, and with Megatron-Core's --moe-layer-freq N
 * (models/gpt/gpt_layer_specs.py) layer i is MoE when i % N == 0.
 */
SPSIM_API bool spsim_model_layer_is_moe(const struct spsim_model *model, uint32_t layer);

/** The kind of decoder layer @p layer (0-based): SPSIM_LAYER_TRANSFORMER for every layer of a
 * model without a hybrid pattern (and past its layers). */
SPSIM_API enum spsim_layer_kind spsim_model_layer_kind(const struct spsim_model *model,
                                                       uint32_t layer);

/**
 * Exact parameter count of the whole model with the vocabulary padded for tp: every routed
 * expert of every MoE layer, and the multi-token-prediction layers (which share the model's
 * embedding and output head, as Megatron-Core builds them).
 */
SPSIM_API uint64_t spsim_model_parameters(const struct spsim_model *model, uint32_t tp);

/**
 * The parameters one token passes through: spsim_model_parameters() with only experts_per_token
 * of the routed experts of each MoE layer (the shared experts, router, attention, embedding and
 * output head all counted). Equal to spsim_model_parameters() for a dense model.
 */
SPSIM_API uint64_t spsim_model_active_parameters(const struct spsim_model *model, uint32_t tp);

#ifdef __cplusplus
}
#endif

#endif
