"""Images in a model request (issue 67, item 4): where they sit, how each protocol
carries them, and each provider's limits.

A request's messages stay text. An image's place in a message is the character
``IMAGE_MARK`` (U+E000, of Unicode's private use area: no text fbi is given holds it —
the templates replace it in outside text, `fbi.templates`), and the request's
``images`` are those marks' images in order. `content_parts` makes a message with marks
into OpenAI's content parts (text and ``image_url`` with a ``data:`` URL), which fbi's own
transport sends as they are and litellm turns into each provider's own (Anthropic's
``image`` blocks, Gemini's ``inline_data``); `anthropic_blocks` and `gemini_parts` are the
same for the batch services' native bodies.

**Limits**, by provider (`limits_for`), from each provider's documentation of its vision
input as of 2026: OpenAI 20 MB an image and 500 a request (images larger than 2,048 px
are scaled by the service, so fbi sends them as they are); Anthropic 5 MB and 8,000 px a
side (2,000 px when a request holds more than 20), 100 a request; Gemini 20 MB for a
whole inline request, 3,600 images. An image over a side limit is scaled down (Lanczos,
aspect kept) and the run warns how many were; one still over a byte limit, or a request
with too many images, is refused before any call with what to do.
"""

from __future__ import annotations

import base64
import io
import warnings
from dataclasses import dataclass, field, replace
from typing import Any

from fbi.errors import FbiWarning, InputError

IMAGE_MARK = "\ue000"


@dataclass(frozen=True)
class RequestImage:
    """One image a request carries: its PNG (or JPEG) bytes and what names them."""

    sha256: str
    """SHA-256 of ``data``: what the cache key and prompt hash hold."""
    width: int
    """Pixels across."""
    height: int
    """Pixels down."""
    data: bytes = field(repr=False, compare=False)
    """The encoded image as sent."""
    media_type: str = "image/png"
    """Its type (``image/png``, ``image/jpeg``)."""

    def data_url(self) -> str:
        return f"data:{self.media_type};base64,{base64.b64encode(self.data).decode()}"

    def base64(self) -> str:
        return base64.b64encode(self.data).decode()


@dataclass(frozen=True)
class ImageLimits:
    """What one provider takes."""

    max_bytes: int
    """An image's bytes (or, ``per_request``, all of them together)."""
    max_count: int
    max_side: int | None = None
    """Either side, in pixels; None: the provider scales large images itself."""
    crowded: tuple[int, int] | None = None
    """(images, side): past that many images in a request, a smaller side limit."""
    per_request: bool = False


#: By provider (`fbi.providers.provider_family`); any other is taken as OpenAI's.
LIMITS: dict[str, ImageLimits] = {
    "openai": ImageLimits(max_bytes=20 * 1024 * 1024, max_count=500),
    "anthropic": ImageLimits(max_bytes=5 * 1024 * 1024, max_count=100, max_side=8000,
                             crowded=(20, 2000)),
    "gemini": ImageLimits(max_bytes=20 * 1024 * 1024, max_count=3600, per_request=True),
}
LIMITS["vertex_ai"] = LIMITS["gemini"]
LIMITS["bedrock"] = LIMITS["anthropic"]


def limits_for(model: str) -> ImageLimits:
    from fbi.providers._registry import provider_family

    return LIMITS.get(provider_family(model), LIMITS["openai"])


def fitted(model: str, images: tuple[RequestImage, ...]) -> tuple[RequestImage, ...]:
    """``images`` within ``model``'s provider's limits: scaled down where a side is over
    (a warning says how many), or InputError when they cannot fit."""
    if not images:
        return images
    limits = limits_for(model)
    if len(images) > limits.max_count:
        raise InputError(f"a request to {model} would carry {len(images)} images; its "
                         f"provider takes {limits.max_count}. Fix: give fewer images per "
                         "item.")
    side = limits.max_side
    if limits.crowded and len(images) > limits.crowded[0]:
        side = limits.crowded[1]
    out = tuple(_scaled(image, side) if side and max(image.width, image.height) > side
                else image for image in images)
    scaled = sum(a is not b for a, b in zip(images, out, strict=True))
    if scaled:
        warnings.warn(FbiWarning(
            f"{scaled} image(s) scaled down to {side} px a side for {model}, its "
            "provider's limit"), stacklevel=2)
    sizes = [len(image.data) for image in out]
    size = sum(sizes) if limits.per_request else max(sizes)
    if size > limits.max_bytes:
        whole = "for all of a request's images" if limits.per_request else "an image"
        raise InputError(f"the images of a request to {model} come to {size:,} bytes "
                         f"{'together' if limits.per_request else 'for the largest'}; "
                         f"its provider takes {limits.max_bytes:,} {whole}. Fix: give "
                         "smaller images.")
    return out


def _scaled(image: RequestImage, side: int) -> RequestImage:
    import hashlib

    from fbi.images import pillow

    Image = pillow()
    with Image.open(io.BytesIO(image.data)) as opened:
        opened.thumbnail((side, side), Image.Resampling.LANCZOS)
        out = io.BytesIO()
        opened.save(out, format="PNG")
        width, height = opened.size
    data = out.getvalue()
    return replace(image, sha256=hashlib.sha256(data).hexdigest(), width=width,
                   height=height, data=data, media_type="image/png")


def _pieces(text: str, images: list[RequestImage]) -> list[str | RequestImage]:
    """``text`` split at its marks, each mark the next of ``images`` (consumed)."""
    pieces: list[str | RequestImage] = []
    for k, chunk in enumerate(text.split(IMAGE_MARK)):
        if k:
            pieces.append(images.pop(0))
        if chunk:
            pieces.append(chunk)
    return pieces


def content_parts(messages: tuple[tuple[str, str], ...],
                  images: tuple[RequestImage, ...]) -> list[dict[str, Any]]:
    """The messages as OpenAI's chat format gives them, a message with images as
    content parts (text, then ``image_url`` parts where its marks are)."""
    queue = list(images)
    out: list[dict[str, Any]] = []
    for role, text in messages:
        if IMAGE_MARK not in text:
            out.append({"role": role, "content": text})
            continue
        out.append({"role": role, "content": [
            {"type": "text", "text": piece} if isinstance(piece, str) else
            {"type": "image_url", "image_url": {"url": piece.data_url()}}
            for piece in _pieces(text, queue)]})
    return out


def _decoded(url: str) -> tuple[str, str]:
    """(media type, base64 data) of a ``data:`` URL."""
    head, _, data = url.partition(",")
    return head.removeprefix("data:").split(";", 1)[0], data


def anthropic_blocks(content: Any) -> Any:
    """An OpenAI-format message content as Anthropic's Messages API takes it."""
    if isinstance(content, str):
        return content
    blocks = []
    for part in content:
        if part.get("type") == "image_url":
            media_type, data = _decoded(part["image_url"]["url"])
            blocks.append({"type": "image", "source": {
                "type": "base64", "media_type": media_type, "data": data}})
        else:
            blocks.append({"type": "text", "text": part["text"]})
    return blocks


def gemini_parts(content: Any) -> list[dict[str, Any]]:
    """An OpenAI-format message content as the Gemini API's parts."""
    if isinstance(content, str):
        return [{"text": content}]
    parts = []
    for part in content:
        if part.get("type") == "image_url":
            media_type, data = _decoded(part["image_url"]["url"])
            parts.append({"inline_data": {"mime_type": media_type, "data": data}})
        else:
            parts.append({"text": part["text"]})
    return parts


def text_of(content: Any) -> str:
    """A message content's text (an image part counts for nothing)."""
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content)
