"""Prompt templates: one Jinja file per act, rendered in a sandbox into chat messages.

Where the templates live: the canonical files are the top-level ``prompts/`` folder of the
repository (found next to the package in a source checkout or an editable install). An
installed wheel carries the same files as ``llmdebate/_prompts/`` (pyproject maps the
folder). A user points at their own folder (``prompts_dir`` in a run config,
``--prompts-dir`` on the command line); a file there overrides the default of the same
name, and acts it does not define keep the defaults. A protocol ships its own templates in its
package (``adds.prompts`` on the protocol class, added at registration by
:func:`add_prompts_package`): they come after the shipped ones, so they add acts and never
override one.

A template defines ``{% block system %}`` and ``{% block user %}`` (either may be absent);
each block becomes one chat message. Dataset text is only ever passed as a *variable*: it is
never compiled as template source, so a question containing ``{{`` stays literal text.
Undefined variables are errors (``StrictUndefined``), and the sandbox forbids attribute
tricks in user-supplied templates (the shipped templates alone, trusted code, render without
its per-access checks, a third faster). Each template is compiled once.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.resources import files
from pathlib import Path
from typing import Any

from jinja2 import (
    BaseLoader,
    ChoiceLoader,
    Environment,
    FileSystemLoader,
    StrictUndefined,
    TemplateError,
    TemplateNotFound,
    meta,
    nodes,
)
from jinja2.sandbox import SandboxedEnvironment

from llmdebate.core.schemas import CombinationRule
from llmdebate.errors import UserError

ACTS = ("claim", "answer", "decompose", "direction", "choose", "evidence", "estimate", "judge")
"""Every template the orchestrator renders (``<act>.j2``)."""

BLOCKS = ("system", "user")


class PromptError(UserError):
    """A prompt folder or template that cannot be used (missing file, syntax, undefined name)."""


PACKAGE_FOLDERS: list[Path] = []
"""The prompt folders of registered protocols' packages, in registration order."""


def add_prompts_package(package: str) -> None:
    """Add the templates in the folder of ``package`` (a protocol's own) to every
    :class:`Prompts`, after the shipped ones."""
    folder = Path(str(files(package)))
    if not folder.is_dir():
        raise PromptError(f"prompts package {package}: {folder} is not a folder")
    if folder not in PACKAGE_FOLDERS:
        PACKAGE_FOLDERS.append(folder)


class _PackageLoader(BaseLoader):
    """Templates of :data:`PACKAGE_FOLDERS`, read at lookup (a protocol registered after a
    :class:`Prompts` was made still finds its templates)."""

    def get_source(
        self, environment: Environment, template: str
    ) -> tuple[str, str | None, Callable[[], bool] | None]:
        for folder in PACKAGE_FOLDERS:
            path = folder / template
            if path.is_file():
                return path.read_text(encoding="utf-8"), str(path), lambda: True
        raise TemplateNotFound(template)


def default_prompts_dir() -> Path:
    """The folder of the shipped templates: ``<repo>/prompts``, else ``llmdebate/_prompts``."""
    here = Path(__file__).resolve().parent
    for candidate in (here.parent / "prompts", here / "_prompts"):
        if (candidate / "decompose.j2").is_file():
            return candidate
    raise PromptError(
        f"the default prompt templates are missing (looked in {here.parent / 'prompts'} "
        f"and {here / '_prompts'}); pass a prompt folder explicitly"
    )


class Prompts:
    """Renders acts into chat messages from a folder of templates (plus the defaults)."""

    def __init__(self, folder: str | Path | None = None) -> None:
        loaders: list[BaseLoader] = []
        if folder is not None:
            path = Path(folder).expanduser()
            if not path.is_dir():
                raise PromptError(f"prompt folder {path} does not exist")
            loaders.append(FileSystemLoader(str(path)))
            self.folder: Path | None = path
        else:
            self.folder = None
        self.default_folder = default_prompts_dir()
        loaders.append(FileSystemLoader(str(self.default_folder)))
        loaders.append(_PackageLoader())
        env_class = SandboxedEnvironment if self.folder is not None else Environment
        self.env = env_class(
            loader=ChoiceLoader(loaders),
            undefined=StrictUndefined,
            autoescape=False,
            trim_blocks=True,
            lstrip_blocks=False,
            keep_trailing_newline=False,
            auto_reload=False,  # templates are read once: no stat of the file per render
        )

        self._compiled: dict[str, _Compiled] = {}

    def folders(self) -> list[Path]:
        """Where templates are looked for, in order: the run's folder, the shipped one, the
        protocol packages' folders."""
        own = [self.folder] if self.folder is not None else []
        return [*own, self.default_folder, *PACKAGE_FOLDERS]

    def _error(self, act: str, exc: TemplateError) -> PromptError:
        """A template that cannot be used, in one line; one not found names every folder
        looked in."""
        if isinstance(exc, TemplateNotFound):
            looked = ", ".join(str(f) for f in self.folders())
            return PromptError(f"prompt template {act}.j2: {exc.name} not found (looked in "
                               f"{looked})")
        return PromptError(f"prompt template {act}.j2: {exc}")

    def variables(self, act: str) -> frozenset[str]:
        """The names template ``act`` reads without setting them (a name it only tests with
        ``is defined`` left out: it may go without); a missing or broken template is a
        :class:`PromptError`."""
        loader = self.env.loader
        assert loader is not None
        try:
            source, _, _ = loader.get_source(self.env, f"{act}.j2")
            tree = self.env.parse(source)
        except TemplateError as exc:
            raise self._error(act, exc) from None
        guarded = {
            t.node.name for t in tree.find_all(nodes.Test)
            if t.name in ("defined", "undefined") and isinstance(t.node, nodes.Name)
        }
        used = meta.find_undeclared_variables(tree)
        return frozenset(used - guarded - set(self.env.globals))

    def _template(self, act: str) -> _Compiled:
        compiled = self._compiled.get(act)
        if compiled is not None:
            return compiled
        try:
            tmpl = self.env.get_template(f"{act}.j2")
        except TemplateError as exc:
            raise self._error(act, exc) from None
        compiled = self._compiled[act] = _Compiled(tmpl)
        return compiled

    def render(self, act: str, **variables: Any) -> list[dict[str, str]]:
        """The chat messages of ``act`` (one per non-empty block), with ``variables`` bound."""
        compiled = self._template(act)
        tmpl = compiled.template
        messages: list[dict[str, str]] = []
        try:
            if not compiled.blocks:
                text = tmpl.render(**variables).strip()
                return [{"role": "user", "content": text}] if text else []
            ctx = compiled.context(variables)
            for block, render_block in compiled.blocks:
                text = "".join(render_block(ctx)).strip()
                if text:
                    messages.append({"role": block, "content": text})
        except TemplateError as exc:
            raise PromptError(f"prompt template {act}.j2: {exc}") from None
        if not messages or messages[-1]["role"] != "user":
            raise PromptError(f"prompt template {act}.j2 renders no user message")
        return messages

    def text(self, act: str, **variables: Any) -> str:
        """A template without blocks rendered to one string (e.g. ``claim.j2``)."""
        tmpl = self._template(act).template
        try:
            return str(tmpl.render(**variables)).strip()
        except TemplateError as exc:
            raise PromptError(f"prompt template {act}.j2: {exc}") from None


class _Compiled:
    """A compiled template with what its renders share, worked out once: its message blocks
    in order, and its globals flattened (Jinja copies its chain of globals into a new dict and
    a new set on every render, a tenth of the cost of rendering these short prompts)."""

    def __init__(self, template: Any) -> None:
        self.template = template
        self.blocks = [(b, template.blocks[b]) for b in BLOCKS if b in template.blocks]
        self.globals = dict(template.globals)
        self.globals_keys = frozenset(self.globals)

    def context(self, variables: dict[str, Any]) -> Any:
        """A render context with ``variables`` bound (what ``Template.new_context`` makes)."""
        env = self.template.environment
        ctx = env.context_class(
            env, {**self.globals, **variables}, self.template.name, self.template.blocks
        )
        ctx.globals_keys = self.globals_keys
        return ctx


def rule_text(rule: CombinationRule, q: int) -> str:
    """The combination rule in words, completing "the claim is true iff ..."."""
    if rule.kind == "and":
        return f"all {q} subclaims are true" if q > 1 else "the subclaim is true"
    if rule.kind == "or":
        return "at least one subclaim is true"
    if rule.kind == "at_least":
        return f"at least {rule.k} of the {q} subclaims are true"
    if rule.kind == "majority":
        return f"more than half of the {q} subclaims are true"
    return f"the expression {rule.expr} holds, where yi stands for subclaim i being true"
