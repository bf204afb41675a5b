"""Everything a backend's author needs, from one place (docs/extending.md, "Adding a
backend"): the :class:`Backend` base and what it speaks (:class:`ChatMessage`,
:class:`GenerateConfig`, :class:`ModelOutput`, :class:`BackendProfile`), the registry
:data:`BACKENDS` with :class:`BackendSpec` and :func:`construct`."""

from llmdebate.models import Backend, ChatMessage, GenerateConfig, ModelOutput
from llmdebate.models.backends import BACKENDS, BackendSpec, construct
from llmdebate.models.profile import BackendProfile

__all__ = [
    "BACKENDS",
    "Backend",
    "BackendProfile",
    "BackendSpec",
    "ChatMessage",
    "GenerateConfig",
    "ModelOutput",
    "construct",
]
