"""A new provider, whole: a gateway that speaks the OpenAI protocol but wants its key in
an ``api-key`` header (as Azure-style gateways do) rather than ``Authorization: Bearer``.
Registered, ``fbi evaluate --judge gateway/NAME --api-base URL`` sends its calls here.

This file is the provider example of docs/contributing.md, and it runs:
tests/test_stage_protocol.py registers it and judges through it against the loopback
server.
"""

from __future__ import annotations

from typing import Any

from fbi.providers import HTTPTransport, Provider, register_provider


class KeyedGateway(HTTPTransport):
    """The OpenAI protocol (body, reply, errors, cost: :class:`HTTPTransport`'s), the key
    in another header."""

    def _request(self, arguments: dict[str, Any], server: str | None,
                 api_key: str | None) -> tuple[str, dict[str, Any], dict[str, str], str]:
        url, body, headers, model = super()._request(arguments, server, None)
        if api_key:
            headers["api-key"] = api_key
        return url, body, headers, model


register_provider(Provider("gateway", KeyedGateway, needs_server=True))
