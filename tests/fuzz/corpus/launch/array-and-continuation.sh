GPT_ARGS=(
  --num-layers 4 --hidden-size 256
  --num-attention-heads 8 --seq-length 128
)
torchrun --nproc_per_node 8 pretrain_gpt.py "${GPT_ARGS[@]}" \
  --vocab-size 1000 --bf16 --micro-batch-size 1 # comment
