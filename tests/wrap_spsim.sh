#!/bin/sh
# Usage: spsim=$(sh wrap_spsim.sh SPSIM DIR). Prints SPSIM, or, under SPSIM_WRAPPER (the
# valgrind test setup, tests/valgrind.sh), DIR/spsim: a script that runs SPSIM under it.
if [ -z "${SPSIM_WRAPPER:-}" ]; then
    printf '%s\n' "$1"
    exit 0
fi
printf '#!/bin/sh\nexec %s "%s" "$@"\n' "$SPSIM_WRAPPER" "$1" >"$2/spsim" && chmod +x "$2/spsim" &&
    printf '%s\n' "$2/spsim"
