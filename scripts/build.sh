#!/usr/bin/env bash
# Configures and builds fabricbench into build/ (CUDA/NCCL/verbs parts whenever they are found).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --preset default >/dev/null
cmake --build --preset default -j"$(nproc)"
