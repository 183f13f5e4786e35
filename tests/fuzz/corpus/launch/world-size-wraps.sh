torchrun --nproc_per_node 65536 --nnodes 65536 pretrain_gpt.py --num-layers 4 --hidden-size 256 --num-attention-heads 8 --seq-length 128 --vocab-size 1000 --bf16
