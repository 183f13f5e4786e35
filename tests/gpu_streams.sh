#!/bin/sh
# The GPU module's streams are all cudaStreamNonBlocking, which the legacy default stream does
# not order (CUDA Runtime API, "Stream synchronization behavior"): a set-up copy or fill
# queued there can still be running when the next kernel on a module stream reads the buffer.
# So no GPU source or GPU test may call the legacy-stream forms cudaMemcpy, cudaMemcpy2D,
# cudaMemcpyToSymbol, cudaMemset or cudaMemset2D; the *Async forms on the stream that uses the
# data are the rule (issue 14, fault 1). A source check, because only a GPU could show the race.
# Usage: gpu_streams.sh SOURCE_ROOT
set -u
root=${1:?usage: gpu_streams.sh SOURCE_ROOT}
found=$(grep -nE '\bcudaMem(cpy|set)(2D|3D|ToSymbol|FromSymbol)?[[:space:]]*\(' \
    "$root"/src/gpu/*.c "$root"/src/gpu/*.h "$root"/tests/test_gpu*.c)
if [ -n "$found" ]; then
    echo "legacy-default-stream copies or fills (use the Async form on the data's stream):"
    echo "$found"
    exit 1
fi
echo "no legacy-stream copies or fills in src/gpu or tests/test_gpu*.c"
