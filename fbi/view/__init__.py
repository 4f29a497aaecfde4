"""`fbi view`: a local, read-only web app over run folders — the runs, each judge's
category × strategy grid with intervals and comparisons, the instances behind each
figure with filters, and one instance with every judge's replies.

* `fbi.view._catalog` — which run folders are served and their status (specs only);
* `fbi.view._index` — a judge run indexed in memory, its records read back by offset;
* `fbi.view._viewer` — the served runs and what each page shows;
* `fbi.view._server` — the HTTP side (the standard library's server; GET only).
"""

from fbi.view._catalog import RunEntry, discover
from fbi.view._index import Filters, RunIndex, build_index
from fbi.view._server import ViewServer
from fbi.view._viewer import Viewer

