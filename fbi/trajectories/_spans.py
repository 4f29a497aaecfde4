"""The spans of a trace file, whatever wrote it (issue 66): OTLP JSON
(``resourceSpans`` → ``scopeSpans`` → ``spans``, attributes as AnyValues) and span
records (Phoenix's span JSON, a spans dataframe's rows, spans nested in their parents),
each as a `Span` with its attributes flattened to dotted keys; and what kind of span it
is (a model call, a tool call, an agent). `fbi.trajectories._traces` says the shapes and
turns the spans into steps.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from fbi.trajectories._model import TrajectoryError

_MODEL_CALLS = {"chat", "text_completion", "generate_content", "completion"}
_AGENTS = {"invoke_agent", "create_agent"}


@dataclass
class Span:
    """One span, its attributes flattened to dotted keys (``llm.input_messages.0.
    message.role``)."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start: float | None
    """Seconds since the epoch."""
    end: float | None
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    error: bool = False
    status_message: str = ""

    @property
    def kind(self) -> str:
        """``model``, ``tool``, ``agent`` or ``other``."""
        operation = str(self.attributes.get("gen_ai.operation.name", "")).lower()
        openinference = str(self.attributes.get("openinference.span.kind", "")).upper()
        if operation in _MODEL_CALLS or openinference == "LLM":
            return "model"
        if operation == "execute_tool" or openinference == "TOOL":
            return "tool"
        if operation in _AGENTS or openinference == "AGENT":
            return "agent"
        return "other"

    def label(self) -> str:
        return f"span {self.span_id!r} ({self.name})" if self.name else f"span {self.span_id!r}"


def is_trace_record(record: Any) -> bool:
    """Whether a record is OTLP JSON, a span or a trace of spans, not a trajectory."""
    if not isinstance(record, dict):
        return False
    if "resourceSpans" in record:
        return True
    if isinstance(record.get("spans"), list) and "steps" not in record:
        return True
    flat = _flatten(record, depth=2)
    return any(k in flat for k in ("context.span_id", "span_id", "spanId"))


def spans_of(record: dict, where: str) -> list[Span]:
    """Every span of one record (see the module docstring)."""
    if "resourceSpans" in record:
        found = []
        for resource in _list(record, "resourceSpans", where):
            described = _flatten(_key_values((resource.get("resource") or {}).get(
                "attributes")))  # (the service that emitted them: service.name, …)
            for scope in _list(resource, "scopeSpans", where):
                for span in _list(scope, "spans", where):
                    made = _otlp_span(span, where)
                    made.attributes = {**described, **made.attributes}
                    found.append(made)
        return found
    if isinstance(record.get("spans"), list) and "steps" not in record:
        return [s for span in record["spans"] for s in _span_records(span, None, where)]
    return _span_records(record, None, where)


def _list(holder: Any, name: str, where: str) -> list:
    value = holder.get(name, []) if isinstance(holder, dict) else None
    if not isinstance(value, list):
        raise TrajectoryError(where, None, f"its {name} is not a list", "give OTLP JSON as "
                              "an OpenTelemetry exporter writes it")
    return value


def _any_value(value: Any) -> Any:
    """OTLP JSON's AnyValue as a Python value."""
    if not isinstance(value, dict):
        return value
    for kind in ("stringValue", "boolValue", "doubleValue", "bytesValue"):
        if kind in value:
            return value[kind]
    if "intValue" in value:
        try:
            return int(value["intValue"])
        except (TypeError, ValueError):
            return value["intValue"]
    if "arrayValue" in value:
        return [_any_value(v) for v in (value["arrayValue"] or {}).get("values", [])]
    if "kvlistValue" in value:
        return {kv.get("key"): _any_value(kv.get("value"))
                for kv in (value["kvlistValue"] or {}).get("values", [])
                if isinstance(kv, dict)}
    return None


def _key_values(items: Any) -> dict[str, Any]:
    if isinstance(items, dict):
        return items
    return {kv["key"]: _any_value(kv.get("value")) for kv in items or ()
            if isinstance(kv, dict) and isinstance(kv.get("key"), str)}


def _flatten(value: Any, prefix: str = "", depth: int = 64) -> dict[str, Any]:
    """Nested objects and lists as dotted keys (``a.0.b``); a scalar stays as it is."""
    out: dict[str, Any] = {}
    if depth and isinstance(value, dict):
        for key, inner in value.items():
            out.update(_flatten(inner, f"{prefix}{key}.", depth - 1))
    elif depth and isinstance(value, list) and value and \
            all(isinstance(v, dict) for v in value):
        for index, inner in enumerate(value):
            out.update(_flatten(inner, f"{prefix}{index}.", depth - 1))
    elif prefix:
        out[prefix[:-1]] = value
    return out


def _seconds(value: Any) -> float | None:
    """A time: nanoseconds since the epoch (a number or its digits), or ISO 8601."""
    if value is None or value == "":
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value / 1e9 if value > 1e12 else float(value)
    if isinstance(value, str):
        if value.isdigit():
            return int(value) / 1e9
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return None


def _otlp_span(span: Any, where: str) -> Span:
    if not isinstance(span, dict):
        raise TrajectoryError(where, None, "a span is not an object", "give OTLP JSON")
    status = span.get("status") or {}
    code = status.get("code") if isinstance(status, dict) else None
    return Span(
        trace_id=str(span.get("traceId") or ""), span_id=str(span.get("spanId") or ""),
        parent_id=str(span["parentSpanId"]) if span.get("parentSpanId") else None,
        name=str(span.get("name") or ""), start=_seconds(span.get("startTimeUnixNano")),
        end=_seconds(span.get("endTimeUnixNano")),
        attributes=_flatten(_key_values(span.get("attributes"))),
        events=[(str(e.get("name", "")), _flatten(_key_values(e.get("attributes"))))
                for e in span.get("events") or () if isinstance(e, dict)],
        error=code in (2, "2", "STATUS_CODE_ERROR", "ERROR"),
        status_message=str(status.get("message") or "") if isinstance(status, dict) else "")


def _first(flat: dict[str, Any], *names: str) -> Any:
    return next((flat[n] for n in names if flat.get(n) not in (None, "")), None)


def _span_records(record: Any, parent: str | None, where: str) -> list[Span]:
    """A span record (Phoenix's, a dataframe row, a TRAIL-like nesting) and the child
    spans nested in it."""
    if not isinstance(record, dict):
        raise TrajectoryError(where, None, "a span is not an object", "one object a span")
    children = [c for name in ("child_spans", "children") for c in record.get(name) or ()]
    rest = {k: v for k, v in record.items() if k not in ("child_spans", "children")}
    flat = _flatten(rest, depth=2)  # (the attributes are flattened whole below)
    attributes: dict[str, Any] = {}
    for name in ("attributes", "span_attributes"):
        if isinstance(rest.get(name), dict):
            attributes.update(_flatten(rest[name]))
        elif isinstance(rest.get(name), str):  # a JSON string of them
            try:
                attributes.update(_flatten(json.loads(rest[name])))
            except ValueError:
                raise TrajectoryError(where, None, f"the {name} of span "
                                      f"{record.get('span_id', '?')!r} are a string that "
                                      "is not JSON", f"give the {name} as an object") \
                    from None
    for key, value in _flatten(rest).items():  # a dataframe's ``attributes.…`` columns
        for prefix in ("attributes.", "span_attributes."):
            if key.startswith(prefix) and key[len(prefix):] not in attributes:
                attributes[key[len(prefix):]] = value
    status = str(_first(flat, "status_code", "status.status_code", "status.code") or "")
    span_id = str(_first(flat, "context.span_id", "span_id", "spanId") or "")
    parent_id = _first(flat, "parent_id", "parent_span_id", "parentSpanId") or parent
    start = _seconds(_first(flat, "start_time", "startTimeUnixNano", "timestamp"))
    end = _seconds(_first(flat, "end_time", "endTimeUnixNano"))
    duration = _first(flat, "duration")
    if end is None and start is not None and isinstance(duration, int | float):
        end = start + (duration / 1e9 if duration > 1e6 else duration)
    span = Span(
        trace_id=str(_first(flat, "context.trace_id", "trace_id", "traceId") or ""),
        span_id=span_id, parent_id=str(parent_id) if parent_id else None,
        name=str(_first(flat, "name", "span_name") or ""), start=start, end=end,
        attributes=attributes,
        events=[(str(e.get("name", "")), _flatten(_key_values(e.get("attributes"))))
                for e in rest.get("events") or () if isinstance(e, dict)],
        error=status.upper() in ("ERROR", "STATUS_CODE_ERROR", "2"),
        status_message=str(_first(flat, "status_message", "status.message") or ""))
    return [span] + [s for child in children for s in _span_records(child, span_id, where)]


