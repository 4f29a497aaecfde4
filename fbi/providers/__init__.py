"""Model access, in one place: the provider registry, fbi's own HTTP client for the
OpenAI protocol, litellm for every other provider, pools of servers, reward endpoints,
the embedded model (`fbi.providers.local`) and the providers' batch services, under one
model interface ([`ModelClient`][fbi.providers.ModelClient]) and one reply record
([`ModelResponse`][fbi.providers.ModelResponse]).

A new provider is one file that registers itself
([`register_provider`][fbi.providers.register_provider]; ``docs/examples/keyed_gateway.py``).
"""

from fbi.providers._batch_protocols import (
    BATCH_PROTOCOLS,
    BatchProtocol,
    batch_cost,
    batch_providers,
    batch_reply,
    provider_of,
    register_batch_protocol,
)
from fbi.providers._batch_services import BatchService, BatchState
from fbi.providers._client import (
    ModelClient,
    abort_calls,
    allow_calls,
)
from fbi.providers._errors import BadReply, ErrorKind, ProviderError, ProviderHTTPError, WrongModel
from fbi.providers._http import HTTPTransport
from fbi.providers._images import IMAGE_MARK, RequestImage
from fbi.providers._litellm import (
    check_model,
    import_litellm,
    litellm_version,
    supports_logprobs,
)
from fbi.providers._prices import cost_of, reasoning_cost, runs_here
from fbi.providers._registry import (
    PROVIDERS,
    Provider,
    Transport,
    direct,
    environment_endpoint,
    provider_for,
    register_provider,
    registered_provider,
)
from fbi.providers._request import ModelRequest
from fbi.providers._response import ModelResponse, json_object_in
from fbi.providers._retries import RequestRateLimiter, RetryPolicy
from fbi.providers._reward import POSITIVE_LABEL, REWARD_PAIR, REWARD_STEPS, is_reward_model
from fbi.providers.local import LOCAL_JUDGE

