"""Issue 67, items 1 and 3: images from outside refused or cleaned (each bad family made
by hand with Pillow or as raw bytes), kept once by hash, and the scene renderer's
planted difference checked pixel by pixel — the shapes read back from the pixels by
this file's own reader, never through fbi's scene model."""

from __future__ import annotations

import io
import os
import random
import struct
import sys
import zlib

import numpy as np
import pytest

PIL = pytest.importorskip("PIL", reason="Pillow is the images extra")
from PIL import Image, PngImagePlugin  # noqa: E402

from fbi.errors import InputError, MissingExtra  # noqa: E402
from fbi.files import NotRegularFile  # noqa: E402
from fbi.images import (  # noqa: E402
    CATEGORIES,
    CELL,
    BadImage,
    CannotPlant,
    ImageLimits,
    ImageStore,
    cell_box,
    clean_image,
    plant_change,
    read_image_file,
    render_scene,
    sample_scenes,
    text_box,
)


def encoded(image: Image.Image, format: str = "PNG", **options) -> bytes:
    out = io.BytesIO()
    image.save(out, format=format, **options)
    return out.getvalue()


def opened(png: bytes) -> Image.Image:
    return Image.open(io.BytesIO(png))


# ------------------------------------------------------------------ refused


def png_claiming(width: int, height: int) -> bytes:
    """A valid 1×1 PNG whose header says ``width`` × ``height`` (CRC recomputed): what a
    decompression bomb's header looks like, without its gigabytes."""
    data = bytearray(encoded(Image.new("RGB", (1, 1))))
    start = 8 + 8  # signature, then the IHDR chunk's length and type
    data[start:start + 8] = struct.pack(">II", width, height)
    crc = zlib.crc32(bytes(data[12:start + 13]))
    data[start + 13:start + 17] = struct.pack(">I", crc)
    return bytes(data)


@pytest.mark.parametrize("data, said", [
    (b"", "empty"),
    (b"question,answer\n2+2,4\n", "not an image"),
    (b"%PDF-1.7\n1 0 obj\n<<>>\nendobj\n", "not an image"),
    (png_claiming(100_000, 100_000), "decompression bomb"),
    (png_claiming(12_000, 10), "decompression bomb"),  # one side too long
])
def test_bytes_that_are_no_image_or_a_bomb_are_refused_with_where(data, said):
    with pytest.raises(BadImage, match=said) as refused:
        clean_image(data, "gold.jsonl, line 4, field image")
    assert str(refused.value).startswith("gold.jsonl, line 4, field image: ")


def test_a_truncated_image_is_refused():
    whole = encoded(Image.effect_noise((64, 64), 40).convert("RGB"))
    with pytest.raises(BadImage, match="damaged or cut short"):
        clean_image(whole[: len(whole) // 2], "row 3")


def test_an_animated_image_is_refused():
    frames = [Image.new("RGB", (8, 8), c) for c in ("red", "blue")]
    gif = encoded(frames[0], "GIF", save_all=True, append_images=frames[1:])
    with pytest.raises(BadImage, match="animated \\(2 frames\\)"):
        clean_image(gif, "charts/3.gif")


def test_an_image_over_the_byte_or_pixel_limits_is_refused():
    png = encoded(Image.effect_noise((40, 30), 60).convert("RGB"))
    assert len(png) > 100
    with pytest.raises(BadImage, match="over the limit of 100"):
        clean_image(png, "a", ImageLimits(max_bytes=100))
    with pytest.raises(BadImage, match="40×30 pixels"):
        clean_image(png, "a", ImageLimits(max_pixels=1_000))


def test_a_format_fbi_does_not_read_is_refused():
    ico = encoded(Image.new("RGB", (16, 16), "red"), "ICO")
    with pytest.raises(BadImage, match="not an image fbi reads"):
        clean_image(ico, "icon.ico")


# ------------------------------------------------------------------ cleaned


def test_exif_and_every_other_metadata_never_reach_the_kept_bytes():
    image = Image.new("RGB", (20, 10), (10, 200, 30))
    exif = Image.Exif()
    exif[0x010F] = "SecretCameraMaker"  # Make
    exif[0x0131] = "SecretSoftware"  # Software
    jpeg = encoded(image, "JPEG", exif=exif.tobytes(), quality=95)
    assert b"SecretCameraMaker" in jpeg
    clean = clean_image(jpeg, "photo.jpg")
    assert b"Secret" not in clean.png and b"eXIf" not in clean.png
    assert opened(clean.png).getexif() == {} and clean.source_format == "JPEG"
    info = PngImagePlugin.PngInfo()
    info.add_text("Comment", "SecretNote")
    png = encoded(image, "PNG", pnginfo=info, icc_profile=b"SecretProfile" * 10)
    clean = clean_image(png, "chart.png")
    assert b"Secret" not in clean.png
    assert not set(opened(clean.png).info) & {"Comment", "icc_profile", "exif"}


def test_the_exif_orientation_is_applied_before_it_is_dropped():
    """Orientation 6 (rotate 90° clockwise to view): a 20×10 stored image is seen 10×20,
    its top-left pixel now the top-right one."""
    image = Image.new("RGB", (20, 10), (255, 255, 255))
    image.putpixel((0, 0), (255, 0, 0))
    exif = Image.Exif()
    exif[0x0112] = 6
    clean = clean_image(encoded(image, "PNG", exif=exif.tobytes()), "p.png")
    seen = opened(clean.png).convert("RGB")
    assert (clean.width, clean.height) == (10, 20) == seen.size
    assert seen.getpixel((9, 0)) == (255, 0, 0)


def test_pixels_are_kept_exactly_and_transparency_survives():
    rng = np.random.default_rng(0)
    pixels = rng.integers(0, 256, (12, 16, 4), dtype=np.uint8)
    clean = clean_image(encoded(Image.fromarray(pixels, "RGBA")), "x.png")
    assert np.array_equal(np.asarray(opened(clean.png)), pixels)
    rgb = rng.integers(0, 256, (5, 7, 3), dtype=np.uint8)
    clean = clean_image(encoded(Image.fromarray(rgb, "RGB"), "BMP"), "x.bmp")
    assert opened(clean.png).mode == "RGB"
    assert np.array_equal(np.asarray(opened(clean.png)), rgb)


def test_without_pillow_the_message_says_which_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "PIL", None)
    with pytest.raises(MissingExtra, match=r"pip install 'fbi\[images\]'"):
        clean_image(b"\x89PNG", "x")


# ------------------------------------------------------------------ kept once


def test_an_image_is_kept_once_by_the_hash_of_its_clean_bytes(tmp_path):
    import hashlib

    store = ImageStore(tmp_path)
    image = Image.new("RGB", (9, 9), "blue")
    first = store.add(encoded(image, "PNG"), "a")
    again = store.add(encoded(image, "BMP"), "b")  # the same pixels in another format
    assert first == again and first.width == 9
    files = list((tmp_path / "images").iterdir())
    assert [f.name for f in files] == [first.file_name]
    assert hashlib.sha256(files[0].read_bytes()).hexdigest() == first.sha256
    assert store.read(first) == files[0].read_bytes()


def test_a_kept_image_that_was_replaced_or_is_not_a_file_is_refused(tmp_path):
    store = ImageStore(tmp_path)
    ref = store.add(encoded(Image.new("RGB", (4, 4), "red")), "a")
    path = tmp_path / "images" / ref.file_name
    path.write_bytes(encoded(Image.new("RGB", (4, 4), "green")))
    with pytest.raises(InputError, match="hash differs"):
        store.read(ref)
    with pytest.raises(InputError, match="hash differs"):  # put checks what is there
        store.add(encoded(Image.new("RGB", (4, 4), "red")), "a")
    path.unlink()
    path.symlink_to(tmp_path / "elsewhere.png")
    with pytest.raises(InputError, match="a symbolic link"):
        store.read(ref)
    path.unlink()
    with pytest.raises(InputError, match="missing from the run folder"):
        store.read(ref)


def test_an_image_file_is_read_only_when_regular_and_within_the_limit(tmp_path):
    big = tmp_path / "big.png"
    big.write_bytes(encoded(Image.new("RGB", (64, 64), "white")))
    with pytest.raises(BadImage, match="over the limit of 50"):
        read_image_file(big, "row 1", ImageLimits(max_bytes=50))
    assert read_image_file(big, "row 1").width == 64
    fifo = tmp_path / "pipe.png"
    os.mkfifo(fifo)
    with pytest.raises(NotRegularFile, match="FIFO"):
        read_image_file(fifo, "row 2")
    with pytest.raises(BadImage, match="no image file"):
        read_image_file(tmp_path / "none.png", "row 3")


# ------------------------------------------------------------------ scenes

WHITE = np.array([255, 255, 255])


def shapes_seen(png: bytes, columns: int, rows: int) -> dict[tuple[int, int], tuple]:
    """Each non-empty cell's colour (its most common non-white pixel) and form, read
    from the pixels: the share of the cell it fills — a square (48 px of 64, less one)
    fills about 0.55, a circle π/4 of that (0.43), a triangle half (0.28)."""
    pixels = np.asarray(opened(png).convert("RGB")).astype(int)
    seen = {}
    for column in range(columns):
        for row in range(rows):
            left, top, right, bottom = cell_box(column, row)
            cell = pixels[top:bottom, left:right].reshape(-1, 3)
            ink = cell[(cell != WHITE).any(axis=1)]
            if not len(ink):
                continue
            colours, counts = np.unique(ink, axis=0, return_counts=True)
            fill = len(ink) / (CELL * CELL)
            form = "square" if fill > 0.49 else "circle" if fill > 0.35 else "triangle"
            seen[(column, row)] = (tuple(colours[counts.argmax()]), form)
    return seen


def test_the_renderer_draws_what_the_scene_says():
    from fbi.images._scenes import COLOURS

    for item in sample_scenes():
        scene = item.scene
        seen = shapes_seen(render_scene(scene), scene.columns, scene.rows)
        assert seen == {(s.column, s.row): (COLOURS[s.colour], s.shape)
                        for s in scene.shapes}, scene.id


def changed_pixels(a: bytes, b: bytes) -> np.ndarray:
    x, y = (np.asarray(opened(p).convert("RGB")).astype(int) for p in (a, b))
    return (x != y).any(axis=2)


@pytest.mark.parametrize("category", CATEGORIES)
def test_a_planted_change_differs_in_its_cells_alone(category):
    """Every sample scene the category can change: the two renderings differ inside the
    cells the change names (each of them) or the text band, and nowhere else."""
    planted = 0
    for item in sample_scenes():
        try:
            changed, change = plant_change(item.scene, category, random.Random(item.id))
        except CannotPlant:
            continue
        planted += 1
        diff = changed_pixels(render_scene(item.scene), render_scene(changed))
        inside = np.zeros_like(diff)
        boxes = [cell_box(*cell) for cell in change.cells]
        if change.text_changed:
            boxes.append(text_box(item.scene))
        for left, top, right, bottom in boxes:
            assert diff[top:bottom, left:right].any(), (item.id, change)
            inside[top:bottom, left:right] = True
        assert not (diff & ~inside).any(), (item.id, change)
    assert planted >= 20


def test_each_category_changes_the_attribute_it_names():
    """Read off the pixels: a count change adds or removes one shape; an attribute
    change keeps the form and changes the colour; an object change keeps the colour and
    changes the form; a spatial change swaps two cells."""
    rng = random.Random(0)
    item = next(i for i in sample_scenes() if len(i.scene.shapes) >= 3)
    scene = item.scene
    before = shapes_seen(render_scene(scene), scene.columns, scene.rows)
    for category in ("count", "attribute", "object", "spatial"):
        changed, change = plant_change(scene, category, rng)
        after = shapes_seen(render_scene(changed), scene.columns, scene.rows)
        if category == "count":
            assert abs(len(after) - len(before)) == 1
            continue
        if category == "spatial":
            a, b = change.cells
            assert (after[a], after[b]) == (before[b], before[a]) != (before[a], before[b])
            continue
        (cell,) = change.cells
        colour_kept = after[cell][0] == before[cell][0]
        form_kept = after[cell][1] == before[cell][1]
        assert (colour_kept, form_kept) == ((False, True) if category == "attribute"
                                            else (True, False))


def test_the_sample_has_every_question_kind_and_answers_the_pixels_decide():
    from fbi.images._scenes import COLOURS

    items = sample_scenes()
    assert len(items) >= 40 and len({i.id for i in items}) == len(items)
    names = {rgb: name for name, rgb in COLOURS.items()}
    kinds = {}
    for item in items:
        kinds[item.kind] = kinds.get(item.kind, 0) + 1
        scene = item.scene
        seen = [f"{names[c]} {f}" for c, f in shapes_seen(
            render_scene(scene), scene.columns, scene.rows).values()]
        if item.kind == "count":
            kind = item.question.removeprefix("How many ").removesuffix(
                "s are in the image?")
            n = seen.count(kind)
            assert item.gold_answer in (f"There are {n} {kind}s.", f"There is one {kind}.")
            assert (n == 1) == item.gold_answer.startswith("There is one")
        elif item.kind == "presence":
            kind = item.question.removeprefix("Is there a ").removesuffix(" in the image?")
            assert item.gold_answer.startswith("Yes" if kind in seen else "No")
    assert set(kinds) == {"count", "colour", "spatial", "text", "presence"}
    assert min(kinds.values()) >= 8
