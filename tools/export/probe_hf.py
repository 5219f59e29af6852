# SPDX-License-Identifier: Apache-2.0
"""Prints the versions and the transformers internals the exporter relies on (cache layers,
mask creation, SDPA call), to check a new transformers release: python3 probe_hf.py > probe.txt"""
import inspect

import torch
import transformers
from transformers import cache_utils, masking_utils
from transformers.models.llama import modeling_llama

print("torch", torch.__version__, "transformers", transformers.__version__, "cuda", torch.version.cuda)
try:
    import triton
    print("triton", triton.__version__)
except Exception as e:  # noqa: BLE001
    print("triton", e)
for obj in (cache_utils.StaticLayer, cache_utils.Cache.update, cache_utils.StaticCache.__init__,
            masking_utils.create_causal_mask, masking_utils.sdpa_mask, masking_utils._preprocess_mask_arguments
            if hasattr(masking_utils, "_preprocess_mask_arguments") else None,
            modeling_llama.LlamaModel.forward, modeling_llama.LlamaForCausalLM.forward,
            modeling_llama.LlamaAttention.forward):
    if obj is None:
        continue
    print("=" * 30, getattr(obj, "__qualname__", obj))
    try:
        print(inspect.getsource(obj))
    except Exception as e:  # noqa: BLE001
        print(e)
