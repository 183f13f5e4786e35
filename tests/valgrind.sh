#!/bin/sh
# The wrapper of `meson test --setup=valgrind` (tests/meson.build): memcheck on a test program,
# and on every spsim the tests start, through SPSIM_WRAPPER (test_cli.c, test_sweep_query.c and
# the CLI scripts put it before spsim). A shell script runs as it is: memcheck on /bin/sh would
# check the shell (whose own leaks failed the CLI suites) and never see spsim.
# spsim exits 3 on invalid input, so its memcheck errors exit 99; --trace-children follows
# `spsim sweep` into the spsim-mpi it may exec.
supp="$(dirname "$0")/valgrind.supp"
memcheck="valgrind --leak-check=full --errors-for-leak-kinds=definite --quiet --suppressions=$supp"
export SPSIM_WRAPPER="$memcheck --error-exitcode=99 --trace-children=yes"
case "$1" in
*/sh | */dash | */bash | *.sh) exec "$@" ;;
esac
exec $memcheck --error-exitcode=3 "$@"
