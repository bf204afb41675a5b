"""The batched decoder and the one-pass policy gradient of text self-play
(llmdebate/training/text_decode.py, text_logprob.py, precision.py) against the one-row
reference (llmdebate/training/text_sample.py), on a tiny random model built here: the same
tokens at temperature 0, the same log-probabilities and gradients, a seeded batch that
replays, and the reduced-precision weights' effect measured."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from llmdebate.agents.replies import decomposition_schema
from llmdebate.models.grammar_cache import GrammarCache
from llmdebate.training.config import LoraSettings

try:
    from tests.test_train_grpo import tiny_model
except ImportError:  # pytest run from inside tests/
    from test_train_grpo import tiny_model  # type: ignore[no-redef]

EVERY = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
PROMPTS = ["Split: 91 in [2, 10).", "Split the claim that 35 has a divisor d, 3 <= d < 9."]
TOKENS = 24


@pytest.fixture(scope="module")
def trainer(tmp_path_factory: pytest.TempPathFactory) -> Any:
    import torch

    from llmdebate.training.debate_reward import LeafTrainer

    folder = tiny_model(tmp_path_factory.mktemp("tiny") / "m")
    t = LeafTrainer(folder, LoraSettings(r=8, alpha=32, target_modules=EVERY, layers=[1]), ["x"])
    torch.manual_seed(3)
    for name, p in t.model.named_parameters():  # an adapter that changes the replies
        if "lora_B" in name:
            p.data.normal_(0, 0.5)
    return t


def _schema() -> str:
    return decomposition_schema(2).schema_json


def _decode(trainer: Any, n: int, temperature: float, seed: int | None, floor: int = 1,
            precision: str = "float32") -> list[list[Any]]:
    import torch

    from llmdebate.training.precision import Head
    from llmdebate.training.text_decode import decode

    gen = torch.Generator().manual_seed(seed) if seed is not None else None
    return decode(trainer.model, trainer.tok, GrammarCache(None),
                  Head(trainer.model, precision),  # type: ignore[arg-type]
                  PROMPTS, [_schema()] * len(PROMPTS), n, temperature=temperature,
                  max_tokens=TOKENS, generator=gen, device="cpu", floor=floor)


def test_the_batched_decoder_gives_the_one_row_decoders_tokens_at_temperature_0(
        trainer: Any) -> None:
    import torch

    from llmdebate.training.text_sample import sample

    batched = _decode(trainer, 3, 0.0, None)
    for prompt, group in zip(PROMPTS, batched, strict=True):
        one = sample(trainer.model, trainer.tok, GrammarCache(None), _schema(), prompt, 1,
                     temperature=0.0, max_tokens=TOKENS, generator=torch.Generator(),
                     device="cpu")[0]
        assert len(one.tokens) > 5
        assert [c.tokens for c in group] == [one.tokens] * 3
        assert [c.text for c in group] == [one.text] * 3
        assert all(len(c.masks) == len(c.tokens) for c in group)
        for c in group:  # the recorded masks are the one-row decoder's, step by step
            assert all(torch.equal(a, b) for a, b in zip(c.masks, one.masks, strict=True))
            assert c.logprob == pytest.approx(one.logprob, rel=1e-5)


def test_a_seed_replays_a_sampled_batch_and_another_seed_draws_another(trainer: Any) -> None:
    first = _decode(trainer, 4, 1.0, 7)
    again = _decode(trainer, 4, 1.0, 7)
    other = _decode(trainer, 4, 1.0, 8)
    tokens = [[c.tokens for c in g] for g in first]
    assert tokens == [[c.tokens for c in g] for g in again]
    assert tokens != [[c.tokens for c in g] for g in other]
    assert len({tuple(t) for g in tokens for t in g}) > 1  # the draws differ within a batch
    for g, h in zip(first, again, strict=True):
        assert [c.logprob for c in g] == [c.logprob for c in h]


def test_each_token_is_one_the_grammar_allowed(trainer: Any) -> None:
    import torch

    from llmdebate.training.text_sample import _unpack

    for g in _decode(trainer, 4, 1.0, 11):
        for c in g:
            for t, bits in zip(c.tokens, c.masks, strict=True):
                allowed = _unpack(torch, bits[None, :], 10**6)[0]
                assert bool(allowed[t])


def test_the_one_pass_log_probabilities_and_gradients_are_the_one_row_ones(
        trainer: Any) -> None:
    import torch

    from llmdebate.training.precision import Head
    from llmdebate.training.text_logprob import group_logprobs
    from llmdebate.training.text_sample import sequence_logprobs

    groups = _decode(trainer, 3, 1.0, 5)
    model = trainer.model
    model.train()
    head = Head(model, "float32")
    for top_only in (trainer.top_only, None):  # from the kept frozen states, and without
        model.zero_grad()
        mine = group_logprobs(model, trainer.tok, head, PROMPTS, groups, "cpu", top_only)
        sum(x.sum() for x in mine).backward()
        got = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
        model.zero_grad()
        ref = [sequence_logprobs(model, trainer.tok, p, g, "cpu")
               for p, g in zip(PROMPTS, groups, strict=True)]
        sum(x.sum() for x in ref).backward()
        want = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
        for a, b, g in zip(mine, ref, groups, strict=True):
            # a sum of up to 24 float32 log-probabilities, each within 1e-5 relative
            assert a.detach().tolist() == pytest.approx(b.detach().tolist(), rel=1e-5)
            assert a.detach().tolist() == pytest.approx([c.logprob for c in g], rel=1e-5)
        assert set(got) == set(want) and got
        for name in want:
            assert torch.allclose(got[name], want[name], rtol=1e-4, atol=1e-5), name


@pytest.mark.parametrize(("sparse", "keep", "softcap"), [
    (0, 0, 3.0), (0, 1 << 20, None), (0, 0, None), (10**6, 0, 3.0), (30, 1 << 20, None)])
def test_the_masked_log_probability_gradient_is_autograds(
        sparse: int, keep: int, softcap: float | None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every position through the whole projection or through its allowed rows alone (and a
    mix), the probabilities kept for the backward pass or computed again, with and without
    soft-capping: the log-probabilities and their gradient are autograd's."""
    import torch

    from llmdebate.training import text_logprob
    from llmdebate.training.text_logprob import masked_logprobs

    monkeypatch.setattr(text_logprob, "SPARSE", sparse)
    monkeypatch.setattr(text_logprob, "KEEP_FLOATS", keep)

    class TinyHead:
        vocab = 70
        weight = torch.randn(70, 8, generator=torch.Generator().manual_seed(0))

        def __init__(self) -> None:
            self.softcap = softcap

        def raw(self, h: Any, rows: Any = None, *, decoding: bool = True) -> Any:
            return self.weight[rows] @ h if rows is not None else h @ self.weight.T

        def cap(self, z: Any) -> Any:
            return z if self.softcap is None else self.softcap * (z / self.softcap).tanh()

    head = TinyHead()
    gen = torch.Generator().manual_seed(1)
    h = torch.randn(5, 8, generator=gen, dtype=torch.float32, requires_grad=True)
    allowed = torch.rand(5, 96, generator=gen) < 0.5
    targets = torch.tensor([int(row.nonzero()[0]) for row in allowed[:, :70]])
    bits = (allowed.view(5, 3, 32).long() << torch.arange(32)).sum(-1).to(torch.int64)
    bits = ((bits + 2**31) % 2**32 - 2**31).to(torch.int32)
    got = masked_logprobs(head, h, targets, bits)  # type: ignore[arg-type]
    z = head.cap(h @ head.weight.T).masked_fill(~allowed[:, :70], float("-inf"))
    want = torch.log_softmax(z, -1).gather(1, targets[:, None])[:, 0]
    assert torch.allclose(got, want, atol=1e-5)
    w = torch.randn(5, generator=gen)
    (g1,) = torch.autograd.grad((got * w).sum(), h)
    (g2,) = torch.autograd.grad((want * w).sum(), h)
    assert torch.allclose(g1, g2, atol=1e-5)


def test_reduced_precision_keeps_the_adapters_in_float32_and_states_its_effect(
        tmp_path: Path) -> None:
    import torch

    from llmdebate.training.debate_reward import LeafTrainer
    from llmdebate.training.precision import Head
    from llmdebate.training.self_play import ESTIMATOR, TwoSeats
    from llmdebate.training.text_logprob import group_logprobs

    folder = tiny_model(tmp_path / "m")
    lora = LoraSettings(r=8, alpha=32, target_modules=EVERY, layers=[1])
    low = LeafTrainer(folder, lora, ["x"], precision="bfloat16")
    TwoSeats(low, lora)  # a second adapter, added after the weights were lowered
    full = LeafTrainer(folder, lora, ["x"])
    lora_params = [(n, p) for n, p in low.model.named_parameters() if "lora_" in n]
    assert any(f".{ESTIMATOR}." in n for n, _ in lora_params)
    assert all(p.dtype == torch.float32 for _, p in lora_params)
    base = [m for n, m in low.model.named_modules() if n.endswith("q_proj.base_layer")]
    assert base and all(m.weight.dtype == torch.bfloat16 for m in base)
    groups = _decode(full, 2, 1.0, 3)
    plain = [[type(c)(c.tokens, c.text, c.masks, c.logprob) for c in g] for g in groups]
    with torch.no_grad():
        a = group_logprobs(full.model, full.tok, Head(full.model, "float32"), PROMPTS, plain,
                           "cpu")
        b = group_logprobs(low.model, low.tok, Head(low.model, "bfloat16"), PROMPTS, plain,
                           "cpu")
    diffs = [abs(x - y) for ga, gb in zip(a, b, strict=True)
             for x, y in zip(ga.tolist(), gb.tolist(), strict=True)]
    # bfloat16 keeps 8 bits of mantissa: close to float32's, not equal to it
    assert 0 < max(diffs) < 0.05 * max(abs(x) for g in a for x in g.tolist())


def test_frozen_states_of_prompts_sharing_a_beginning_are_those_computed_alone(
        trainer: Any) -> None:
    """The estimator's conditional prompts of one split share all but their last lines: the
    shared beginning is computed once, and the states equal a plain pass's; an unseen
    prompt's probability is the whole model's."""
    import torch

    from llmdebate.training import debate_reward as dr

    intro = "System: estimate how likely each statement is. Be calibrated. User:"
    stem = "Claim: 91 has a divisor d with 2 <= d < 10. Rule: or. Subclaims: 1. [2, 6) 2. [6, 10)"
    other = ("Claim: 97 has no divisor d with 3 <= d < 12. Rule: and. "
             "Subclaims: 1. [3, 7) 2. [7, 12)")
    prompts = [f"{stem} Question {k}: is subclaim {k} true?" for k in range(1, 4)] + ["Other."]
    # two levels: every prompt shares the introduction, each split's its claim and subclaims
    nested = [f"{intro} {c} Question {k}: is subclaim {k} true?"
              for c in (stem, other) for k in range(1, 4)]
    encoded = {p: list(trainer.tok(p)["input_ids"]) for p in nested}
    assert [len(g) for g in dr._sharing(sorted(nested), encoded, 16)] == [6]
    assert [len(g) for g in dr._sharing(sorted(nested), encoded, 16,
                                         start=dr.shared_length(list(encoded.values())))] == [3, 3]
    prompts += nested
    shared: dict[str, Any] = {}
    trainer._fill_cache(prompts, into=shared)
    plain: dict[str, Any] = {}
    saved = dr.SHARED_TOKENS
    dr.SHARED_TOKENS = 10**9
    try:
        trainer._fill_cache(prompts, into=plain)
    finally:
        dr.SHARED_TOKENS = saved
    assert len(dr._sharing(sorted(prompts), {p: list(trainer.tok(p)["input_ids"])
                                            for p in prompts}, 16)) == 3
    for p in prompts:
        assert shared[p].shape == plain[p].shape
        assert torch.allclose(shared[p], plain[p], atol=1e-5)
    with torch.no_grad():
        kept = trainer.probabilities(prompts)  # the frozen states, kept among the extra
        whole = trainer.probabilities(prompts, cached=False)
    assert all(p in trainer.extra for p in prompts)
    assert torch.allclose(kept, whole, atol=1e-5)


def test_a_replayed_frozen_beginning_gives_the_computed_ones_replies(trainer: Any) -> None:
    """Decoding prompts whose shared beginning the last call kept: the frozen layers replay
    it, and the replies, their log-probabilities and frozen states are those of a call that
    computes it (temperature 0, and a seeded draw)."""
    import torch

    from llmdebate.training.frozen_prefix import FrozenPrefix
    from llmdebate.training.precision import Head
    from llmdebate.training.text_decode import decode

    intro = ("System: split the claim into two subclaims whose rule gives the claim. "
             "Answer in JSON. User: ")
    first = [intro + "Claim: 91 has a divisor in [2, 10).", intro + "Claim: 35 in [3, 9)."]
    then = [intro + "Claim: 77 has a divisor in [2, 12).", intro + "Claim: 51 in [4, 8)."]

    def run(prompts: list[str], prefix: FrozenPrefix | None, temperature: float) -> Any:
        gen = torch.Generator().manual_seed(11)
        return decode(trainer.model, trainer.tok, GrammarCache(None),
                      Head(trainer.model, "float32"), prompts, [_schema()] * 2, 2,
                      temperature=temperature, max_tokens=TOKENS, generator=gen,
                      device="cpu", floor=1, prefix=prefix)

    for temperature in (0.0, 1.0):
        prefix = FrozenPrefix()
        run(first, prefix, temperature)
        kept = len(prefix.tokens)
        assert kept >= 16 and prefix.match(list(trainer.tok(then[0])["input_ids"]), 1) > 0
        replayed, computed = run(then, prefix, temperature), run(then, None, temperature)
        for g1, g2 in zip(replayed, computed, strict=True):
            for a, b in zip(g1, g2, strict=True):
                assert a.tokens == b.tokens
                assert a.logprob == pytest.approx(b.logprob, abs=1e-4)
                assert torch.allclose(a.frozen, b.frozen, atol=1e-5)


def test_frozen_states_after_a_kept_beginning_are_those_computed_alone(
        trainer: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Conditional prompts of a later step begin with the instructions of the last call's:
    their frozen states start from the kept beginning (no pass over it again) and equal a
    plain pass's."""
    import torch

    from llmdebate.training import debate_reward as dr

    intro = "System: estimate how likely each statement is. Be calibrated and brief. User:"
    first = [f"{intro} Claim: 91 has a divisor in [2, 10). Question {k}: true?" for k in (1, 2)]
    later = [f"{intro} Claim: 45 has no divisor in [3, 8). Question {k}: true?" for k in (1, 2)]
    trainer._beginning = None
    trainer._fill_cache(first, into={})
    whole: list[int] = []
    plain_pass = trainer._pass

    def spy(rows: Any, cache: Any, shared: int | None) -> None:
        if shared is None and rows and isinstance(rows[0], int):
            whole.append(len(rows))
        plain_pass(rows, cache, shared)

    monkeypatch.setattr(trainer, "_pass", spy)
    kept: dict[str, Any] = {}
    trainer._fill_cache(later, into=kept)
    assert whole == []  # the instructions were not computed again
    monkeypatch.setattr(dr, "SHARED_TOKENS", 10**9)
    plain: dict[str, Any] = {}
    trainer._fill_cache(later, into=plain)
    for p in later:
        assert torch.allclose(kept[p], plain[p], atol=1e-5)
