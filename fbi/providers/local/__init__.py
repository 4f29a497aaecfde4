"""The embedded offline judge (``local/smollm2-135m``): SmolLM2 run in-process (NumPy,
or llama.cpp when asked), a provider registered like any other, so it takes the same
path as any API judge."""

from fbi.providers.local._provider import (
    CONTEXT_TOKENS,
    LOCAL_JUDGE,
    PROVIDER,
    LocalCallAborted,
    LocalTransport,
    abort_all,
    allow_all,
    check_available,
    generate,
    gguf_path,
    load_engine,
    runtime,
    runtime_endpoint,
)

