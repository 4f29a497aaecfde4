"""Images as data (issue 67): images from outside made safe to keep and show a judge
(`clean_image`, bounded by `ImageLimits`), kept once by hash in a run folder
(`ImageStore`, named by `ImageRef`), and scenes drawn from a description so a gold image
and a perturbed one differ in one planted attribute (`Scene`, `render_scene`,
`plant_change`), with the built-in sample of 48 scenes (`sample_scenes`).

Pillow is the optional extra ``images``.
"""

from fbi.images._intake import BadImage, CleanImage, ImageLimits, clean_image, pillow
from fbi.images._sample import QUESTION_KINDS, SceneItem, sample_scenes
from fbi.images._scenes import (
    CATEGORIES,
    CELL,
    CannotPlant,
    PlantedChange,
    Scene,
    Shape,
    cell_box,
    plant_change,
    render_scene,
    text_box,
)
from fbi.images._store import ImageRef, ImageStore, read_image_file

