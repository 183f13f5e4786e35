#!/bin/sh
# Quick start: install what is missing, build, and answer the default what-if query
# (GPT-3 175B on DGX A100 80GB at the paper's setting). Extra arguments go to 'spsim query'.
set -eu
cd "$(dirname "$0")/.."
scripts/setup.sh
exec "${BUILDDIR:-build}/src/cli/spsim" query "$@"
