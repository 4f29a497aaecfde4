"""Images from outside, made safe to keep and to show a judge (issue 67, item 1).

Everything an image brings is input: its bytes may be no image at all, a header that
promises billions of pixels (a *decompression bomb*: a few kilobytes that decode to
gigabytes), an animation whose frames a judge would never see, a truncated file, or an
image whose EXIF says where and when it was taken and by which camera. `clean_image`
reads only the header before it decides (Pillow's `Image.open` is lazy), refuses what is
out of bounds with the file and row it came from, applies the EXIF orientation (the
picture a person sees), and re-encodes the pixels alone as PNG: no metadata of any kind
(EXIF, XMP, ICC profiles, text chunks, comments) reaches a judge or a run folder. The
re-encoded bytes are what is hashed, kept and sent.

Pillow is the optional extra ``images`` (``pip install 'fbi[images]'``).
"""

from __future__ import annotations

import hashlib
import io
import warnings
from dataclasses import dataclass

from fbi.errors import InputError, MissingExtra

#: Formats read (Pillow's names). Others (PSD, EPS, ICO, ...) are refused: EPS runs
#: Ghostscript, and the rest are not what a dataset of answers about images holds.
FORMATS = frozenset({"PNG", "JPEG", "WEBP", "GIF", "BMP", "TIFF"})


@dataclass(frozen=True)
class ImageLimits:
    """Bounds on an image from outside (every one refused with where it came from)."""

    max_bytes: int = 20 * 1024 * 1024
    """The encoded file (the largest request image the providers take is 20 MB)."""
    max_pixels: int = 40_000_000
    """Width × height, read from the header before anything is decoded."""
    max_side: int = 10_000
    """Either side, in pixels."""


#: The bounds used unless a caller gives its own.
LIMITS = ImageLimits()


@dataclass(frozen=True)
class CleanImage:
    """An image's pixels, re-encoded as PNG without metadata."""

    png: bytes
    width: int
    height: int
    source_format: str
    """The format it came in (``JPEG``, ``PNG``, ...)."""

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.png).hexdigest()


class BadImage(InputError):
    """An image from outside that fbi refuses; the message says where it came from."""


def pillow():
    """Pillow's ``Image`` module, or a message saying which extra brings it."""
    try:
        from PIL import Image
    except ImportError:
        raise MissingExtra("pillow", "images", "Reading images") from None
    return Image


def clean_image(data: bytes, where: str, limits: ImageLimits = LIMITS
                ) -> CleanImage:
    """``data`` checked against ``limits`` and re-encoded (the module docstring);
    ``where`` names its origin for the message ("gold.jsonl, line 4, field image")."""
    Image = pillow()
    from PIL import ImageOps, UnidentifiedImageError

    if not data:
        raise BadImage(f"{where}: the image is empty. Fix: give the image's bytes or path.")
    if len(data) > limits.max_bytes:
        raise BadImage(f"{where}: the image is {len(data):,} bytes, over the limit of "
                       f"{limits.max_bytes:,}. Fix: resize or recompress it.")
    try:
        with warnings.catch_warnings():
            # (Pillow warns of a possible bomb past its own limit: fbi decides below)
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(data), formats=sorted(FORMATS))
    except Image.DecompressionBombError as error:  # (past twice Pillow's own limit)
        raise BadImage(f"{where}: the image's header promises too many pixels ({error}): "
                       "a decompression bomb, or an image too large to send a judge. Fix: "
                       "resize it.") from None
    except UnidentifiedImageError:
        raise BadImage(f"{where}: these bytes are not an image fbi reads (it reads "
                       f"{', '.join(sorted(FORMATS))}). Fix: give a PNG or JPEG "
                       "file.") from None
    except (OSError, ValueError, SyntaxError) as error:
        raise BadImage(f"{where}: the image cannot be read ({error}). Fix: give a PNG "
                       "or JPEG file.") from None
    with image:
        width, height = image.size
        if width < 1 or height < 1 or width > limits.max_side or \
                height > limits.max_side or width * height > limits.max_pixels:
            raise BadImage(
                f"{where}: the image is {width}×{height} pixels, over the limits "
                f"({limits.max_side:,} a side, {limits.max_pixels:,} in all): a "
                "decompression bomb, or an image too large to send a judge. Fix: resize "
                "it.")
        if getattr(image, "n_frames", 1) > 1:
            raise BadImage(f"{where}: the image is animated ({image.n_frames} frames); a "
                           "judge would see one frame. Fix: give a still image.")
        source_format = image.format or "unknown"
        try:
            image.load()
            upright = ImageOps.exif_transpose(image)
        except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as error:
            raise BadImage(f"{where}: the image is damaged or cut short ({error}). Fix: "
                           "give the whole file.") from None
        mode = "RGBA" if _has_alpha(upright) else "RGB"
        pixels = upright.convert(mode)
    # a new image of the pixels alone: no info, EXIF, ICC profile or text chunk
    bare = Image.new(mode, pixels.size)
    bare.paste(pixels)
    out = io.BytesIO()
    bare.save(out, format="PNG", optimize=False, compress_level=6)
    return CleanImage(out.getvalue(), bare.width, bare.height, source_format)


def _has_alpha(image) -> bool:
    return image.mode in ("RGBA", "LA", "PA") or \
        (image.mode == "P" and "transparency" in image.info)
