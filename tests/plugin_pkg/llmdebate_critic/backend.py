"""Backend ``parrot``: a model that needs no server; it answers every prompt with its
``prefix`` and the first words of the prompt's last message. Its options model forbids
unknown keys, so a misspelt option is refused when the config is read."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from llmdebate.models import Backend, ChatMessage, GenerateConfig, ModelOutput
from llmdebate.models.backends import BACKENDS, BackendSpec, construct
from llmdebate.models.profile import BackendProfile


class ParrotOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    prefix: str = "Weakest step:"
    """What every reply starts with."""
    words: int = 6
    """How many words of the prompt's last message follow the prefix."""


class ParrotBackend(Backend):
    provider = "parrot"
    profile = BackendProfile()

    def __init__(self, name: str, model_id: str, prefix: str = "", words: int = 6) -> None:
        self.name, self.model_id, self.prefix, self.words = name, model_id, prefix, words

    async def generate(
        self, messages: list[ChatMessage], config: GenerateConfig, sample_index: int = 0
    ) -> ModelOutput:
        head = " ".join(str(messages[-1]["content"]).split()[: self.words])
        return ModelOutput(f"{self.prefix} {head} ({self.model_id})", self.name)


@BACKENDS.register("parrot", options=ParrotOptions, capabilities={"model-id"})
def parrot(spec: BackendSpec) -> Backend:
    """parrot/<name>: replies with a prefix and the prompt's first words (no server)."""
    return construct(spec, ParrotBackend, spec.model, spec.model_id, **spec.options)
