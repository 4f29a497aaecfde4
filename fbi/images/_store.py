"""Images kept once, by the hash of their cleaned bytes, inside a run folder (issue 67).

A dataset of 5,000 questions about 300 charts holds each chart once: ``images/`` in the
run folder has one ``<sha256>.png`` per distinct image, and every record names its
images by an [`ImageRef`][fbi.images.ImageRef] (the hash, its size and pixels). A file
is written atomically and only when absent; one already there is read back and its hash
checked before it is trusted, so a damaged or swapped file is found, not sent.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from fbi.errors import InputError
from fbi.files import kind_of, open_regular
from fbi.images._intake import LIMITS, BadImage, CleanImage, ImageLimits, clean_image
from fbi.outputs import write_atomically

IMAGE_REF_VERSION = 1
#: The folder inside a run folder.
FOLDER = "images"


class ImageRef(BaseModel):
    """One image as records name it: by the SHA-256 of its cleaned PNG bytes."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: int = IMAGE_REF_VERSION
    sha256: str
    media_type: str = "image/png"
    width: int
    height: int
    size: int
    """Bytes of the PNG kept."""

    @property
    def file_name(self) -> str:
        return f"{self.sha256}.png"


def read_image_file(path: str | Path, where: str, limits: ImageLimits = LIMITS
                    ) -> CleanImage:
    """An image file (a regular file only, its size checked before it is read) cleaned
    (`clean_image`)."""
    try:
        with open_regular(path, "rb") as file:
            size = os.fstat(file.fileno()).st_size
            if size > limits.max_bytes:
                raise BadImage(f"{where}: {path} is {size:,} bytes, over the limit of "
                               f"{limits.max_bytes:,}. Fix: resize or recompress it.")
            data = file.read()
    except FileNotFoundError:
        raise BadImage(f"{where}: no image file {path}. Fix: give a path that exists "
                       "(relative paths are read from the dataset's folder).") from None
    except OSError as error:
        raise BadImage(f"{where}: {path} cannot be read ({error.strerror}).") from None
    return clean_image(data, where, limits)


class ImageStore:
    """The ``images/`` folder of a run folder."""

    def __init__(self, run_folder: str | Path):
        self.folder = Path(run_folder) / FOLDER

    def put(self, image: CleanImage) -> ImageRef:
        """Keep ``image`` (once: a file of its hash already there is checked, not
        written again) and name it."""
        ref = ImageRef(sha256=image.sha256, width=image.width, height=image.height,
                       size=len(image.png))
        path = self.folder / ref.file_name
        if path.exists() or path.is_symlink():
            self.read(ref)  # what is there must be this image
            return ref
        self.folder.mkdir(parents=True, exist_ok=True)
        write_atomically(path, image.png)
        return ref

    def read(self, ref: ImageRef) -> bytes:
        """The PNG bytes of ``ref``, checked against its hash."""
        path = self.folder / ref.file_name
        try:
            mode = os.lstat(path).st_mode
            kind = "a symbolic link" if stat.S_ISLNK(mode) else kind_of(mode)
        except FileNotFoundError:
            raise InputError(f"{path}: the image {ref.sha256[:12]}… is missing from the "
                             "run folder. Fix: run the command again on the dataset, which "
                             "keeps its images there.") from None
        if kind is not None:
            raise InputError(f"{path}: {kind}, not a regular file; fbi keeps images as "
                             "regular files. Fix: remove it and run again.")
        with open_regular(path, "rb", follow_links=False) as file:
            data = file.read()
        if hashlib.sha256(data).hexdigest() != ref.sha256:
            raise InputError(f"{path}: the file does not hold the image its name says "
                             "(its hash differs: damaged or replaced). Fix: remove it and "
                             "run again.")
        return data

    def add(self, data: bytes, where: str, limits: ImageLimits = LIMITS
            ) -> ImageRef:
        """Image bytes from outside, cleaned and kept."""
        return self.put(clean_image(data, where, limits))
