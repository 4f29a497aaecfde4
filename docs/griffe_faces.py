"""A griffe extension for the API reference: a package face's public names are the names
its ``__init__`` imports from its own modules (``fbi/faces.py``), which griffe would
otherwise count as private (it counts an imported name as private unless ``__all__``
lists it, and fbi's faces keep no second list)."""

from __future__ import annotations

from typing import Any

import griffe


def _packages(module: griffe.Module):
    yield module
    for child in module.modules.values():
        if child.is_init_module:
            yield from _packages(child)


class FacesArePublic(griffe.Extension):
    """Mark every name a face imports from its own package (for ``fbi``, from any of fbi's
    modules) as public."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        for face in _packages(pkg):
            own = "fbi." if face.path == "fbi" else f"{face.path}."
            for name, member in face.members.items():
                if member.is_alias and member.target_path.startswith(own) and \
                        not name.startswith("_"):
                    member.public = True
