/* A Megatron-LM launch script or command line from any bytes: the shell-word lexer
 * (interop/shell_words.c: quotes, continuations, variables, arrays, control flow) and the
 * flags' reader (interop/megatron_args.c), then the configuration it gives (fuzz_megatron). */
#include "fuzz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_megatron(data, size, "fuzz.sh");
    return 0;
}
