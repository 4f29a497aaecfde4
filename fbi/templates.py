"""Folders of jinja2 templates with YAML front matter: judge prompts and perturbation
prompts alike.

Templates render with StrictUndefined, so a missing variable is an error rather than an
empty string; with a user folder they render in jinja2's immutable sandbox, so a template
cannot run code, and under limits (`_LimitedSandbox`), so it cannot hang fbi or
fill its memory: at most `MAX_OUTPUT_CHARS` of output (a string or list multiplied,
padded or formatted past it is refused before it is made), `MAX_ITERATIONS` steps
of ``range`` per render, no ``lipsum``, and `MAX_RENDER_S` seconds. A user folder
is searched before the built-in one, so users add or override templates by file name.
Every way a template can build a long text is bounded before (or, for ``~``, as soon as)
it is built: repetition, ``+``, ``~``, padding, ``replace``, ``join``, format widths
(a ``*`` width included), as operators, methods of a string or filters (issue 38).
Files starting with ``_`` are shared pieces (bases, macros), not entries of their own.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import re
import signal
import threading
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from fbi.errors import InputError
from fbi.files import read_bytes, read_text
from fbi.resources import package_folder

_BLANK_RUNS = re.compile(r"\n{3,}")

#: Limits on a user's template, per render.
MAX_OUTPUT_CHARS = 1_000_000
MAX_ITERATIONS = 100_000
#: Characters (or items) a render may build in all through the operations above: each
#: is bounded by MAX_OUTPUT_CHARS, and this bounds how many a loop can make.
MAX_BUILT_CHARS = 20 * MAX_OUTPUT_CHARS
MAX_RENDER_S = 10.0
_WIDTH = re.compile(r"%[-#0 +]*(\d+)|\{[^{}]*:[^{}]*?(\d+)[^{}]*\}")
# A width or precision taken from the arguments: "%*d", "{:{}}" (its size is not in the text).
_ARGUMENT_WIDTH = re.compile(r"%[-#0 +]*\*|%[-#0 +]*\d*\.\*|\{[^{}]*:[^{}]*\{")
#: The methods of a text that can make it longer than their arguments, and are checked.
_GROWING_METHODS = frozenset({"ljust", "rjust", "center", "zfill", "expandtabs", "replace",
                              "join"})
_steps_left: ContextVar[list[int]] = ContextVar("_steps_left")
_built_left: ContextVar[list[int]] = ContextVar("_built_left")


@functools.cache
def _trusted_environment():
    """jinja2's Environment for fbi's own templates, with each template's globals a plain
    dict rather than jinja's ChainMap over the environment's. Every ``{% import %}``
    takes the set difference of the context's globals and the imported template's; over
    a ChainMap that runs in Python (about 11 µs an import: 0.7 s of a cached re-run of
    50,400 prompts), over a dict in C. fbi never changes the globals after loading."""
    import jinja2

    class TrustedEnvironment(jinja2.Environment):
        def make_globals(self, d):
            return {**self.globals, **(d or {})}

    return TrustedEnvironment


def _limited_sandbox():
    """jinja2's immutable sandbox with the limits above (see the module docstring)."""
    from jinja2.sandbox import ImmutableSandboxedEnvironment, SecurityError

    def refuse(what: str):
        raise SecurityError(f"{what} (a user template renders at most {MAX_OUTPUT_CHARS:,} "
                            "characters)")

    def built(size: int, what: str) -> None:
        """Count ``size`` characters (or items) about to be built; refuse past one text's
        limit, or past the render's total (`MAX_BUILT_CHARS`)."""
        if size > MAX_OUTPUT_CHARS:
            refuse(f"{what} of {size:,} characters")
        left = _built_left.get([MAX_BUILT_CHARS])
        left[0] -= max(0, size)
        if left[0] < 0:
            raise SecurityError(f"{what}: the template built more than {MAX_BUILT_CHARS:,} "
                                "characters in all (a loop of long texts)")

    def sized(value: Any) -> int | None:
        return len(value) if isinstance(value, (str, bytes, list, tuple)) else None

    def check_widths(text: Any) -> None:
        if isinstance(text, (str, bytes)):
            text = text.decode("latin-1") if isinstance(text, bytes) else text
            if _ARGUMENT_WIDTH.search(text):
                refuse("a format width taken from the arguments")
            for match in _WIDTH.finditer(text):
                width = int(match.group(1) or match.group(2))
                if width > MAX_OUTPUT_CHARS:
                    refuse(f"a format width of {width:,}")

    def checked_growth(text: Any, name: str, args: tuple, kwargs: dict) -> tuple:
        """The arguments of ``text.name(...)`` once its result is known to fit (a join's
        items are taken into a list first, to measure them); refused otherwise."""
        size = len(text)
        if name in ("ljust", "rjust", "center", "zfill"):
            width = args[0] if args else kwargs.get("width", 0)
            grown = width if isinstance(width, int) else 0
        elif name == "expandtabs":
            tabs = args[0] if args else kwargs.get("tabsize", 8)
            grown = size + text.count("\t" if isinstance(text, str) else b"\t") * \
                (tabs if isinstance(tabs, int) else 0)
        elif name == "replace":
            old, new = [*args, None, None][:2]
            if not isinstance(old, (str, bytes)) or not isinstance(new, (str, bytes)):
                return args
            times = text.count(old) if old else size + 1
            limit = args[2] if len(args) > 2 else kwargs.get("count", -1)
            if isinstance(limit, int) and limit >= 0:
                times = min(times, limit)
            grown = size + times * (len(new) - len(old))
        else:  # join
            items = list(args[0]) if args else []
            grown = sum(len(i) for i in items if isinstance(i, (str, bytes))) + \
                size * max(0, len(items) - 1)
            args = (items, *args[1:])
        built(grown, f"a text {name}")
        return args

    def budgeted_range(*args: int) -> Iterator[int]:
        steps = range(*args)
        left = _steps_left.get([MAX_ITERATIONS])
        if len(steps) > left[0]:
            raise SecurityError(f"range() of {len(steps):,} steps: a user template loops at "
                                f"most {MAX_ITERATIONS:,} steps per render")
        left[0] -= len(steps)
        return iter(steps)

    from jinja2.compiler import CodeGenerator

    class LimitedCodeGenerator(CodeGenerator):
        """``a ~ b`` checked as soon as it is built: jinja joins it in one C call, which
        no sandbox hook sees, and a loop of doublings would reach gigabytes."""

        def visit_Concat(self, node, frame) -> None:
            self.write("environment.sized_concat(")
            super().visit_Concat(node, frame)
            self.write(")")

    class LimitedSandbox(ImmutableSandboxedEnvironment):
        intercepted_binops = frozenset({"*", "**", "%", "+"})
        code_generator_class = LimitedCodeGenerator

        def __init__(self, **options: Any):
            super().__init__(**options)
            self.globals.pop("lipsum", None)
            self.globals["range"] = budgeted_range
            for name, position in (("center", 1), ("indent", 1), ("wordwrap", 1),
                                   ("truncate", 1)):
                self.filters[name] = self._capped(self.filters[name], position)
            format_filter = self.filters["format"]
            self.filters["format"] = lambda value, *a, **k: (check_widths(value),
                                                              format_filter(value, *a, **k))[1]
            for name in ("replace", "join"):  # the filters of the same names
                self.filters[name] = self._grown(self.filters[name], name)

        @staticmethod
        def _grown(function, name: str):
            def checked(context, value, *args: Any, **kwargs: Any):
                if name == "join":  # (its items as a list, measured; the separator first)
                    value = list(value) if not isinstance(value, (str, bytes)) else value
                    separator = args[0] if args else kwargs.get("d", "")
                    if isinstance(separator, str) and not kwargs.get("attribute") and \
                            len(args) < 2:
                        checked_growth(separator, "join", (value,), {})
                elif isinstance(value, str):
                    checked_growth(value, "replace", args, kwargs)
                return function(context, value, *args, **kwargs)
            for attribute in ("jinja_pass_arg",):  # the filter takes what it took
                if hasattr(function, attribute):
                    setattr(checked, attribute, getattr(function, attribute))
            return checked

        @staticmethod
        def sized_concat(text: Any) -> Any:
            if isinstance(text, str):
                built(len(text), "a text joined with ~")
            return text

        def call(__self, __context, __obj, *args: Any, **kwargs: Any):
            owner = getattr(__obj, "__self__", None)
            if isinstance(owner, (str, bytes)) and \
                    getattr(__obj, "__name__", "") in _GROWING_METHODS:
                args = checked_growth(owner, __obj.__name__, args, kwargs)
            return super().call(__context, __obj, *args, **kwargs)

        @staticmethod
        def _capped(function, position: int):
            def capped(*args: Any, **kwargs: Any):
                numbers = [v for v in (*args[position:], *kwargs.values())
                           if isinstance(v, int) and not isinstance(v, bool)]
                if any(abs(n) > MAX_OUTPUT_CHARS for n in numbers):
                    refuse(f"a width of {max(numbers, key=abs):,}")
                return function(*args, **kwargs)
            return capped

        def call_binop(self, context, operator: str, left: Any, right: Any) -> Any:
            if operator == "*":
                for sequence, times in ((left, right), (right, left)):
                    size = sized(sequence)
                    if size is not None and isinstance(times, int):
                        built(size * times, f"a text or list repeated {times:,} times")
            elif operator == "+":
                if sized(left) is not None and sized(right) is not None:
                    built(sized(left) + sized(right), "a text or list joined with +")
            elif operator == "**":
                if isinstance(right, (int, float)) and abs(right) > 64:
                    raise SecurityError(f"a power of {right}: at most 64 in a user template")
            elif operator == "%":
                check_widths(left)
            return super().call_binop(context, operator, left, right)

        def wrap_str_format(self, value: Any):
            wrapped = super().wrap_str_format(value)  # a str.format the template calls
            if wrapped is not None:
                check_widths(value.__self__)
            return wrapped

    return LimitedSandbox


@contextlib.contextmanager
def _time_limit(seconds: float, where: str) -> Iterator[None]:
    """At most ``seconds`` (SIGALRM: in the main thread only; elsewhere the size and loop
    limits still hold)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum, frame):
        raise InputError(f"{where}: rendering took more than {seconds:g} s and was stopped. "
                         "Fix: simplify the template (fewer or shorter loops)")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def split_front_matter(text: str, where: str) -> tuple[dict[str, Any], str]:
    from fbi.user_yaml import load_user_yaml

    if not text.startswith("---"):
        return {}, text
    try:
        _, header, body = text.split("---", 2)
    except ValueError:
        raise InputError(f"{where}: the front matter is not closed. Fix: start the file "
                         "with a '---' YAML block closed by '---'") from None
    meta = load_user_yaml(header, f"{where} (front matter)") or {}
    if not isinstance(meta, dict):
        raise InputError(f"{where}: the front matter must be a YAML mapping")
    return meta, body.lstrip("\n")


def _read_template(path: Path) -> str:
    try:
        return read_text(path)
    except UnicodeDecodeError as error:
        line = read_bytes(path)[: error.start].count(b"\n") + 1
        raise InputError(f"{path}, line {line}: bytes that are not UTF-8. Fix: save the "
                         "template as UTF-8") from None
    except OSError as error:
        raise InputError(f"{path}: cannot be read ({error.strerror})") from None


class TemplateFolder:
    """The ``*.jinja`` files of a built-in folder (``prompts``, ``perturbations``), of the
    installed packages that add to it (``packages``: module names, their folders' files
    read as fbi's own are, the origin the package's name), and an optional user folder
    that overrides or adds to them."""

    def __init__(self, builtin: str, user_dir: str | Path | None = None,
                 packages: tuple[str, ...] = ()):
        from importlib import resources

        import jinja2

        self.user_dir = Path(user_dir) if user_dir else None
        if self.user_dir is not None and not self.user_dir.is_dir():
            raise InputError(f"{self.user_dir}: no such folder of templates. "
                             "Fix: pass a folder holding NAME.jinja files")
        self.sources: dict[str, tuple[str, str]] = {}  # file name → (text, origin)
        self._compiled: dict[str, Any] = {}  # file name → jinja2 Template
        for origin, folder in (("built-in", package_folder(builtin)),
                               *((package, resources.files(package))
                                 for package in packages)):
            for entry in folder.iterdir():
                if entry.name.endswith(".jinja"):
                    self.sources[entry.name] = (entry.read_text(encoding="utf-8"), origin)
        if self.user_dir is not None:
            for path in sorted(self.user_dir.glob("*.jinja")):
                self.sources[path.name] = (_read_template(path), str(self.user_dir))

        def load(name: str):
            if name not in self.sources:
                return None
            return self.body(name), None, lambda: True

        # The sandbox guards against a user's templates; fbi's own need none, and render
        # in a third less time without it (a cached re-run renders 50,400 prompts).
        environment = _trusted_environment() if self.user_dir is None else _limited_sandbox()
        self._env = environment(
            loader=jinja2.FunctionLoader(load), undefined=jinja2.StrictUndefined,
            autoescape=False, trim_blocks=True, lstrip_blocks=True,
            auto_reload=False,  # the sources never change: no up-to-date check per import
        )

    def entries(self) -> list[str]:
        """Names of the templates that are entries of their own (not ``_`` pieces)."""
        return sorted(name.removesuffix(".jinja") for name in self.sources
                      if not name.startswith("_"))

    def origin(self, file_name: str) -> str:
        return self.sources.get(file_name, ("", "built-in"))[1]

    def front_matter(self, file_name: str) -> dict[str, Any]:
        text, origin = self.sources[file_name]
        return split_front_matter(text, f"{origin}/{file_name}")[0]

    def body(self, file_name: str) -> str:
        text, origin = self.sources[file_name]
        return split_front_matter(text, f"{origin}/{file_name}")[1]

    def sha(self, file_name: str) -> str:
        return hashlib.sha256(self.sources[file_name][0].encode()).hexdigest()[:16]

    def front_matter_lines(self, file_name: str) -> int:
        """How many lines the front matter takes: template line numbers count from the
        body, file line numbers from the top."""
        text = self.sources[file_name][0]
        return text[: len(text) - len(self.body(file_name))].count("\n")

    def _render_limited(self, template, variables: dict[str, Any], where: str) -> str:
        """A user folder's template, under the limits in the module docstring."""
        from jinja2.sandbox import SecurityError

        token = _steps_left.set([MAX_ITERATIONS])
        built_token = _built_left.set([MAX_BUILT_CHARS])
        pieces, size = [], 0
        try:
            with _time_limit(MAX_RENDER_S, where):
                for piece in template.generate(**variables):
                    size += len(piece)
                    if size > MAX_OUTPUT_CHARS:
                        raise SecurityError(f"the output passed {MAX_OUTPUT_CHARS:,} "
                                            "characters, the most a user template renders")
                    pieces.append(piece)
        finally:
            _steps_left.reset(token)
            _built_left.reset(built_token)
        return "".join(pieces)

    def render(self, file_name: str, **variables: Any) -> str:
        """Render one template. A missing variable, a syntax error (with its file and
        line), a template that extends itself, a sandbox breach or a range too large for
        the sandbox is an InputError."""
        import jinja2
        from jinja2.sandbox import SecurityError

        where = f"{self.origin(file_name)}/{file_name}"
        try:
            template = self._compiled.get(file_name)
            if template is None:  # compiled once: a run renders each template thousands of times
                template = self._compiled[file_name] = self._env.get_template(file_name)
            text = template.render(**variables) if self.user_dir is None else \
                self._render_limited(template, variables, where)
        except jinja2.UndefinedError as error:
            raise InputError(f"{where}: {error}. Fix: use only the variables documented "
                             "for this kind of template") from None
        except jinja2.TemplateSyntaxError as error:
            name = error.name or file_name
            line = (error.lineno or 0) + (self.front_matter_lines(name)
                                         if name in self.sources else 0)
            raise InputError(f"{self.origin(name)}/{name}, line {line}: {error.message}. "
                             "Fix: correct the template's jinja syntax") from None
        except SecurityError as error:
            raise InputError(f"{where}: {str(error).rstrip('.')}. Fix: keep the template's "
                             "loops and texts small") from None
        except jinja2.TemplateError as error:
            raise InputError(f"{where}: {error}") from None
        except RecursionError:
            raise InputError(f"{where}: the template includes or extends itself, directly "
                             "or through another. Fix: break the cycle") from None
        except OverflowError as error:
            raise InputError(f"{where}: {str(error).rstrip('.')}. Fix: loop over less") \
                from None
        except ValueError as error:  # a number too long to print (past 4,300 digits), …
            raise InputError(f"{where}: the template failed ({error}). Fix: print "
                             "smaller values") from None
        if "\n\n\n" in text:  # (the search costs a tenth of the substitution)
            text = _BLANK_RUNS.sub("\n\n", text)
        return text.strip() + "\n"
