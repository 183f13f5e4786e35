# The flags of examples/mixtral/train_mixtral_8x7b_distributed.sh, NVIDIA/Megatron-LM at
# d98e8a64ddf34856e74b24714e3bedb2f5a39553 (2026-08-22): DISTRIBUTED_ARGS with the script's
# defaults (GPUS_PER_NODE=8, NNODES=1), MODEL_ARGS, MOE_ARGS, the tokenizer of DATA_ARGS,
# TRAINING_ARGS and MODEL_PARALLEL_ARGS as written; paths and logging left out.
torchrun --nproc_per_node 8 --nnodes 1 pretrain_gpt.py \
    --use-mcore-models \
    --disable-bias-linear \
    --seq-length 4096 \
    --max-position-embeddings 32768 \
    --num-layers 32 \
    --hidden-size 4096 \
    --ffn-hidden-size 14336 \
    --num-attention-heads 32 \
    --init-method-std 0.01 \
    --attention-dropout 0.0 \
    --hidden-dropout 0.0 \
    --normalization RMSNorm \
    --position-embedding-type rope \
    --swiglu \
    --untie-embeddings-and-output-weights \
    --group-query-attention \
    --num-query-groups 8 \
    --no-masked-softmax-fusion \
    --no-position-embedding \
    --rotary-base 1000000 \
    --num-experts 8 \
    --moe-router-topk 2 \
    --moe-router-load-balancing-type aux_loss \
    --moe-aux-loss-coeff 1e-2 \
    --moe-grouped-gemm \
    --moe-token-dispatcher-type alltoall \
    --overlap-param-gather \
    --overlap-grad-reduce \
    --tokenizer-type Llama2Tokenizer \
    --micro-batch-size 1 \
    --global-batch-size 256 \
    --lr 1e-4 \
    --train-iters 500000 \
    --lr-decay-iters 320000 \
    --lr-decay-style cosine \
    --min-lr 1.0e-5 \
    --weight-decay 0.1 \
    --lr-warmup-iters 500 \
    --clip-grad 1.0 \
    --bf16 \
    --tensor-model-parallel-size 1 \
    --pipeline-model-parallel-size 4 \
    --expert-model-parallel-size 8 \
    --use-distributed-optimizer \
    --sequence-parallel
