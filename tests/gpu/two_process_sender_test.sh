#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The PyTorch sender on 2 GPUs (issue 27): a trainer process (PyTorch, GPU 0) pushes a state
# dict with tools/sender/wharf_sender.py into a Wharf server process (CUDA backend, GPU 1),
# before and after one SGD step; the server's outputs must equal PyTorch's each time
# (tests/gpu/two_process_sender_trainer.py says how).
#
#   cmake --build build --target wharf_sender_server
#   bash tests/gpu/two_process_sender_test.sh [BUILD_DIR]
#
# Both processes use one NCCL: WHARF_NCCL_LIBRARY is set to the libnccl.so.2 PyTorch ships
# (the nvidia-nccl wheel) unless the environment sets it. Exits 77 (skipped) without PyTorch
# or without 2 GPUs.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$ROOT/build}
SERVER=$BUILD/tests/wharf_sender_server
if [ ! -x "$SERVER" ]; then
  echo "two_process_sender_test: $SERVER missing: cmake --build $BUILD --target wharf_sender_server" >&2
  exit 1
fi
if ! python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() and torch.cuda.device_count() >= 2 else 1)'; then
  echo "two_process_sender_test: SKIP (needs PyTorch with CUDA and 2 GPUs)"
  exit 77
fi
if [ -z "${WHARF_NCCL_LIBRARY:-}" ]; then
  lib=$(python3 -c "import sys; sys.path.insert(0, '$ROOT/tools/sender'); import wharf_sender; print(wharf_sender.find_nccl())")
  if [ -f "$lib" ]; then export WHARF_NCCL_LIBRARY=$lib; fi
fi
exec python3 "$ROOT/tests/gpu/two_process_sender_trainer.py" --server "$SERVER"
