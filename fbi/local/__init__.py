"""The embedded offline judge (``local/smollm2-135m``): llama.cpp behind a litellm
custom provider, so it takes the same path as any API judge."""

from fbi.local._provider import (
    CONTEXT_TOKENS,
    MODELS,
    PROVIDER,
    LocalCallAborted,
    abort_all,
    allow_all,
    check_available,
    generate,
    gguf_path,
    load_engine,
    register,
)

__all__ = ["CONTEXT_TOKENS", "MODELS", "PROVIDER", "LocalCallAborted", "abort_all",
           "allow_all", "check_available", "generate", "gguf_path", "load_engine",
           "register"]
