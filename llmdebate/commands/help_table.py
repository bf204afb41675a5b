"""What the verbs' ``--help`` shows that is read from the config's fields, the
registries' built-in entries and the formal engine's names, stored so that ``--help`` imports
none of them; written by ``python scripts/help_table.py`` (``tests/test_cli_startup.py``
checks it against them). Where a plugin of a registry is installed, help is read from the
registries instead."""

from __future__ import annotations

CONFIG_FLAGS: tuple[tuple[str, str, bool, str, str, tuple[str, ...]], ...] = (
    (
        'name',
        'scalar',
        False,
        'VALUE',
        (
            'Name of the run (the run directory is <name>-<timestamp> unless --run-id '
            'is given). [default: run]'
        ),
        (),
    ),
    (
        'seed',
        'scalar',
        False,
        'VALUE',
        (
            'Seed of every draw: answers, shown order, protocol draws, strategies. '
            '[default: 0]'
        ),
        (),
    ),
    (
        'topologies',
        'dict',
        False,
        'JSON',
        (
            'Speech protocols described as data, by name (turns, speakers, the slot '
            'each writes and who reads it: docs/extending.md, "A speech protocol as '
            'data"); each is registered when the config is read, so ``protocols`` may '
            'name it.'
        ),
        (),
    ),
    (
        'protocols',
        'list',
        False,
        'LIST',
        (
            'Protocols to run on every item (JSON list of registered protocol names; '
            'an unknown name is refused with the list). One of: prover-estimator, '
            'naive-recursive, two-sided, consultancy, direct. [default: '
            '["prover-estimator"]]'
        ),
        (
            'llmdebate.protocols',
        ),
    ),
    (
        'dataset.path',
        'scalar',
        False,
        'VALUE',
        (
            "A JSONL file in the common schema, GPQA's encrypted .zip, a parquet file "
            'or arrow folder, or hf:<hub name> (relative paths: the current folder, '
            'then the repository). [default: datasets/divisors.jsonl]'
        ),
        (),
    ),
    (
        'dataset.split',
        'scalar',
        True,
        'VALUE',
        'Split of a Hugging Face dataset.',
        (),
    ),
    (
        'dataset.subset',
        'scalar',
        True,
        'VALUE',
        'Subset (configuration) of a Hugging Face dataset.',
        (),
    ),
    (
        'dataset.fields',
        'dict',
        True,
        'JSON',
        'Hugging Face columns to the common schema, as JSON: {"question": "query", ...}.',
        (),
    ),
    (
        'dataset.shuffle_seed',
        'scalar',
        False,
        'VALUE',
        "Seed of the item order and of every item's choice order. [default: 0]",
        (),
    ),
    (
        'dataset.limit',
        'scalar',
        True,
        'VALUE',
        'Use only the first N items.',
        (),
    ),
    (
        'dataset.ids',
        'list',
        True,
        'LIST',
        'Use only these item ids (JSON list).',
        (),
    ),
    (
        'dataset.password',
        'scalar',
        True,
        'VALUE',
        'Password of an encrypted zip (default for GPQA: the one its authors publish).',
        (),
    ),
    (
        'dataset.format',
        'scalar',
        False,
        '[auto|common|quality|answers]',
        (
            "How the file is read: quality (QuALITY's own files or its questions in "
            "the common schema: filters, best distractors), answers (a policy's "
            'answers with a checker: a labelling run, docs/labelling.md), common, or '
            "auto (quality when the first record is in QuALITY's format or names "
            'dataset quality, answers when it names a checker). One of: auto, common, '
            'quality, answers. [default: auto]'
        ),
        (),
    ),
    (
        'dataset.filters',
        'scalar',
        False,
        'VALUE',
        (
            'QuALITY: the questions kept (all, hard, answerable, khan2024, '
            'michael2023). [default: all]'
        ),
        (),
    ),
    (
        'dataset.distractor',
        'scalar',
        False,
        '[best|random]',
        (
            'QuALITY: the dishonest answer: best (the option most validators named the '
            'best distractor) or random (a wrong option drawn from the seed). One of: '
            'best, random. [default: best]'
        ),
        (),
    ),
    (
        'dataset.pair',
        'scalar',
        False,
        'VALUE',
        (
            "QuALITY: cut every question's choices to the gold answer and its "
            'distractor. [default: False]'
        ),
        (),
    ),
    (
        'dataset.passage_chars',
        'scalar',
        True,
        'VALUE',
        (
            'Keep only the start of every passage, at most this many characters, cut '
            'at a paragraph or sentence end (quick runs of a small model; the '
            'published studies use whole stories).'
        ),
        (),
    ),
    (
        'debate.epsilon',
        'scalar',
        False,
        'VALUE',
        '[default: 0.2]',
        (),
    ),
    (
        'debate.rho',
        'scalar',
        False,
        'VALUE',
        '[default: 0.5]',
        (),
    ),
    (
        'debate.depth',
        'scalar',
        False,
        'VALUE',
        '[default: 2]',
        (),
    ),
    (
        'debate.width',
        'scalar',
        False,
        'VALUE',
        '[default: 3]',
        (),
    ),
    (
        'debate.seed',
        'scalar',
        False,
        'VALUE',
        '[default: 0]',
        (),
    ),
    (
        'debate.expected_rewards',
        'scalar',
        False,
        'VALUE',
        '[default: True]',
        (),
    ),
    (
        'debate.early_stop',
        'scalar',
        False,
        'VALUE',
        '[default: True]',
        (),
    ),
    (
        'debate.variant',
        'scalar',
        False,
        '[figure2|marginal|independent|commit|commit-marginal]',
        (
            'One of: figure2, marginal, independent, commit, commit-marginal. '
            '[default: figure2]'
        ),
        (),
    ),
    (
        'rounds',
        'scalar',
        False,
        'VALUE',
        'Speeches per debater in two-sided debate and consultancy. [default: 1]',
        (),
    ),
    (
        'mode',
        'scalar',
        False,
        '[sequential|simultaneous]',
        (
            "Two-sided debate: does debater B see A's speech of the same round. One "
            'of: sequential, simultaneous. [default: sequential]'
        ),
        (),
    ),
    (
        'prover.model',
        'scalar',
        False,
        'VALUE',
        (
            "Model string: <backend>/<model id>, or a backend's bare name (local, "
            'scripted). Backends: openai/<model>, openai-completions/<model>, '
            'anthropic/<model>, inspect/<model>, hf/<model>, local, scripted. '
            '[default: local]'
        ),
        (
            'llmdebate.backends',
        ),
    ),
    (
        'prover.base_url',
        'list',
        True,
        'LIST',
        (
            'Server URL of an OpenAI-compatible or Anthropic endpoint (default: the '
            "provider's); a list of several: replicas of one model, each request to "
            'the least loaded.'
        ),
        (),
    ),
    (
        'prover.api_key_env',
        'scalar',
        True,
        'VALUE',
        "Environment variable holding the API key (default: the provider's usual one).",
        (),
    ),
    (
        'prover.options',
        'dict',
        False,
        'JSON',
        'Backend options as JSON (e.g. {"requests_per_minute": 500}); never secrets.',
        (),
    ),
    (
        'prover.context_length',
        'scalar',
        True,
        'VALUE',
        (
            "The model's context window in tokens: a prompt that cannot fit fails its "
            'debate before it is sent (default: what the backend reports, if it does; '
            'else no check).'
        ),
        (),
    ),
    (
        'prover.assignment',
        'scalar',
        False,
        '[paired|honest|dishonest|alternate|choose]',
        (
            'Which answer the prover (the consultant) defends: paired runs every item '
            'twice, once for the gold answer and once for a wrong one; alternate takes '
            'gold on even items; choose lets the model answer (asymmetric protocols '
            'only). One of: paired, honest, dishonest, alternate, choose. [default: '
            'paired]'
        ),
        (),
    ),
    (
        'prover.direction',
        'scalar',
        False,
        '[belief|model]',
        (
            "belief: eq. 13 on the prover's own probability; model: the model picks. "
            'One of: belief, model. [default: belief]'
        ),
        (),
    ),
    (
        'prover.recursion',
        'scalar',
        False,
        '[belief|model]',
        (
            "belief: the subclaim where B is furthest from the prover's own view; "
            'model: it picks. One of: belief, model. [default: belief]'
        ),
        (),
    ),
    (
        'prover.decomposer',
        'scalar',
        False,
        '[model|formal]',
        (
            "model: the model writes decompositions; formal: the item's own (problem "
            'structure or gold facts) where it has one, else the model. One of: model, '
            'formal. [default: model]'
        ),
        (),
    ),
    (
        'prover.belief_method',
        'scalar',
        False,
        'NAME',
        (
            "How the prover's own probabilities are elicited (with beliefs.source "
            'model). One of: logprobs, sampling, verbalised. [default: logprobs]'
        ),
        (
            'llmdebate.methods',
        ),
    ),
    (
        'prover.beliefs.source',
        'scalar',
        False,
        'NAME',
        (
            "model: the prover's model, by belief_method; table: a bounded prover, "
            'P(the leaf judge says True | a feature of the claim) estimated on other '
            "claims (table names it); oracle: an omniscient prover, each claim's exact "
            'truth. One of: model, table, oracle. [default: model]'
        ),
        (
            'llmdebate.belief_sources',
        ),
    ),
    (
        'prover.beliefs.table',
        'scalar',
        True,
        'VALUE',
        (
            "The table of a table source: a shipped table's name "
            '(divisors-polarity-width) or a JSON file written by '
            'llmdebate.beliefs.build_table.'
        ),
        (),
    ),
    (
        'prover.beliefs.shift',
        'scalar',
        False,
        'VALUE',
        (
            'A known bias added to every belief of a table or oracle source (clipped '
            'to [0, 1]). [default: 0.0]'
        ),
        (),
    ),
    (
        'prover.beliefs.shuffle_seed',
        'scalar',
        True,
        'VALUE',
        (
            "A table source's beliefs shuffled across claims: each claim gets the "
            "belief of a cell drawn at random (by this seed and the claim's text) with "
            "the cells' frequencies."
        ),
        (),
    ),
    (
        'prover.samples',
        'scalar',
        False,
        'VALUE',
        'Samples per probability with the sampling method. [default: 8]',
        (),
    ),
    (
        'prover.temperature',
        'scalar',
        False,
        'VALUE',
        "Temperature of the prover's and debaters' generations. [default: 0.0]",
        (),
    ),
    (
        'prover.max_tokens',
        'scalar',
        False,
        'VALUE',
        'Tokens per generation (decompositions, evidence, speeches). [default: 400]',
        (),
    ),
    (
        'prover.max_attempts',
        'scalar',
        False,
        'VALUE',
        'Attempts at a valid structured reply before the debate fails. [default: 3]',
        (),
    ),
    (
        'prover.best_of',
        'scalar',
        False,
        'VALUE',
        (
            'Decompositions the prover writes at each round: each is scored by its '
            "exact expected reward over the estimator's draws and the best is played "
            '(the others are kept in the call log as preference pairs for export). '
            '[default: 1]'
        ),
        (),
    ),
    (
        'prover.keep_invalid',
        'scalar',
        False,
        'VALUE',
        (
            'When every attempt at a decomposition fails only a check the schema '
            'cannot express (a subclaim repeating its claim), play the last one, '
            'marked invalid, instead of failing. [default: False]'
        ),
        (),
    ),
    (
        'prover.max_words',
        'scalar',
        True,
        'VALUE',
        (
            'Words per speech (two-sided debate, consultancy): one re-ask when over, '
            'then a cut at a sentence end with a visible marker (None: no limit).'
        ),
        (),
    ),
    (
        'prover.min_words',
        'scalar',
        True,
        'VALUE',
        (
            'Fewest words per speech: one re-ask when under, then kept as it is (None: '
            'no minimum).'
        ),
        (),
    ),
    (
        'prover.quote_words',
        'scalar',
        True,
        'VALUE',
        (
            'Quoted words per speech: one re-ask when over, then the quotes past the '
            'budget are left out of what the judge reads (None: no budget).'
        ),
        (),
    ),
    (
        'prover.quote_penalty',
        'scalar',
        False,
        'VALUE',
        (
            'Weight of the optional training term that penalises quotes not found in '
            'the passage: -weight per unverified quote, recorded per speaker in '
            'meta.quote_penalty (0: off). [default: 0.0]'
        ),
        (),
    ),
    (
        'prover.scratchpad',
        'scalar',
        False,
        'VALUE',
        (
            'Speeches may open with a private <thinking> scratchpad that no judge or '
            'opponent sees (kept in the transcript); only the <argument> is shown. '
            '[default: True]'
        ),
        (),
    ),
    (
        'prover.best_of_acts',
        'list',
        False,
        'LIST',
        (
            'The decisions best_of applies to: decompose, and direction (with '
            'direction: model; each sampled direction scored by its exact expected '
            "reward for the round's decomposition), and speech (two-sided debate, "
            "consultancy: each speech scored by the judge's probability of the "
            "debater's answer after it). One of: decompose, direction, speech. "
            '[default: ["decompose"]]'
        ),
        (),
    ),
    (
        'estimator.model',
        'scalar',
        False,
        'VALUE',
        (
            "Model string: <backend>/<model id>, or a backend's bare name (local, "
            'scripted). Backends: openai/<model>, openai-completions/<model>, '
            'anthropic/<model>, inspect/<model>, hf/<model>, local, scripted. '
            '[default: local]'
        ),
        (
            'llmdebate.backends',
        ),
    ),
    (
        'estimator.base_url',
        'list',
        True,
        'LIST',
        (
            'Server URL of an OpenAI-compatible or Anthropic endpoint (default: the '
            "provider's); a list of several: replicas of one model, each request to "
            'the least loaded.'
        ),
        (),
    ),
    (
        'estimator.api_key_env',
        'scalar',
        True,
        'VALUE',
        "Environment variable holding the API key (default: the provider's usual one).",
        (),
    ),
    (
        'estimator.options',
        'dict',
        False,
        'JSON',
        'Backend options as JSON (e.g. {"requests_per_minute": 500}); never secrets.',
        (),
    ),
    (
        'estimator.context_length',
        'scalar',
        True,
        'VALUE',
        (
            "The model's context window in tokens: a prompt that cannot fit fails its "
            'debate before it is sent (default: what the backend reports, if it does; '
            'else no check).'
        ),
        (),
    ),
    (
        'estimator.method',
        'scalar',
        False,
        'NAME',
        (
            "How the estimator's (and naive debate's challenger's) probabilities are "
            'elicited. One of: logprobs, sampling, verbalised. [default: logprobs]'
        ),
        (
            'llmdebate.methods',
        ),
    ),
    (
        'estimator.samples',
        'scalar',
        False,
        'VALUE',
        'Samples per probability with the sampling method. [default: 8]',
        (),
    ),
    (
        'estimator.temperature',
        'scalar',
        False,
        'VALUE',
        'Sampling temperature. [default: 1.0]',
        (),
    ),
    (
        'estimator.independent',
        'scalar',
        False,
        'VALUE',
        (
            'Ask all b_i of a round in one batch, ignoring z_<i (cheaper; not the '
            "paper's protocol). [default: False]"
        ),
        (),
    ),
    (
        'judge.model',
        'scalar',
        False,
        'VALUE',
        (
            "Model string: <backend>/<model id>, or a backend's bare name (local, "
            'scripted). Backends: openai/<model>, openai-completions/<model>, '
            'anthropic/<model>, inspect/<model>, hf/<model>, local, scripted. '
            '[default: local]'
        ),
        (
            'llmdebate.backends',
        ),
    ),
    (
        'judge.base_url',
        'list',
        True,
        'LIST',
        (
            'Server URL of an OpenAI-compatible or Anthropic endpoint (default: the '
            "provider's); a list of several: replicas of one model, each request to "
            'the least loaded.'
        ),
        (),
    ),
    (
        'judge.api_key_env',
        'scalar',
        True,
        'VALUE',
        "Environment variable holding the API key (default: the provider's usual one).",
        (),
    ),
    (
        'judge.options',
        'dict',
        False,
        'JSON',
        'Backend options as JSON (e.g. {"requests_per_minute": 500}); never secrets.',
        (),
    ),
    (
        'judge.context_length',
        'scalar',
        True,
        'VALUE',
        (
            "The model's context window in tokens: a prompt that cannot fit fails its "
            'debate before it is sent (default: what the backend reports, if it does; '
            'else no check).'
        ),
        (),
    ),
    (
        'judge.kind',
        'scalar',
        False,
        'VALUE',
        (
            'A registered judge kind '
            '(:data:`~llmdebate.agents.judge_registry.JUDGES`). Built in — llm: a '
            'model rules; oracle: the gold truth of the leaf; oracle-or-llm: gold '
            'where known, else the model; deferred or human: no verdict, the debate '
            'waits for a person (every protocol stops where the judge would decide; '
            'see llmdebate assign / serve / judge). [default: llm]'
        ),
        (),
    ),
    (
        'judge.method',
        'scalar',
        False,
        'VALUE',
        (
            "How the judge's probability is elicited: a registered probability method, "
            'or generate (a True/False word, no probability). [default: logprobs]'
        ),
        (),
    ),
    (
        'judge.ruling',
        'scalar',
        False,
        '[argmax|sample]',
        (
            'How a model judge rules the leaf from its probability P[O = 1] (one judge '
            'for the paid and the expected payoff): argmax, O = 1[P >= 1/2], a '
            "deterministic judge as the paper's oracle O, so the expected payoff uses "
            "O; sample, O = 1[u < P] with u drawn from the debate's recorded seed, a "
            'random judge, so the expected payoff uses P. sample needs a probability '
            'method (not generate). One of: argmax, sample. [default: argmax]'
        ),
        (),
    ),
    (
        'judge.samples',
        'scalar',
        False,
        'VALUE',
        'Samples per probability with the sampling method. [default: 8]',
        (),
    ),
    (
        'judge.temperature',
        'scalar',
        False,
        'VALUE',
        'Sampling temperature. [default: 1.0]',
        (),
    ),
    (
        'judge.interactive',
        'scalar',
        False,
        'VALUE',
        (
            'Protocols with the capability asks_questions (two-sided debate, '
            'consultancy): after every round the model judge may ask the debaters a '
            'question (answered in the next round) or end the debate and decide (a '
            'judge_turn reply); the rounds setting is then the most it may hear. '
            '[default: False]'
        ),
        (),
    ),
    (
        'judge.turn_cost',
        'scalar',
        False,
        'VALUE',
        (
            'Interactive judge: what each round it asks for costs in its score, '
            'log_b(p) - cost x rounds asked (Michael et al. 2023: 0.05 in bits). '
            '[default: 0.05]'
        ),
        (),
    ),
    (
        'judge.log_base',
        'scalar',
        False,
        'VALUE',
        'Interactive judge: base of its log score (2: bits). [default: 2.0]',
        (),
    ),
    (
        'judge.passage',
        'scalar',
        False,
        '[hidden|shown]',
        (
            "What the judge sees of an item's passage: hidden (only the debaters' "
            'quotes, marked verified or unverified) or shown (the whole passage). '
            'Debaters, consultant, prover and estimator always see it. One of: hidden, '
            'shown. [default: hidden]'
        ),
        (),
    ),
    (
        'judge.direct_passage',
        'list',
        False,
        'LIST',
        (
            'The direct protocol on items with a passage: one debate per entry, '
            'variant blind (hidden: the judge answers from the question alone) and '
            'expert (shown). One of: hidden, shown. [default: ["hidden", "shown"]]'
        ),
        (),
    ),
    (
        'seats',
        'dict',
        False,
        'JSON',
        (
            'A model per debater seat, as JSON: {"debater_b": {"model": '
            '"openai/gpt-4o"}} (seats: debater_a, debater_b, consultant, prover, '
            "estimator; a seat plays with its role's settings, debaters and "
            "consultants the prover's)."
        ),
        (),
    ),
    (
        'tournament.roster',
        'dict',
        False,
        'JSON',
        (
            'Debater models by name (letters, digits, \'.\', \'_\', \'-\'), as JSON: {"a": '
            '{"model": "openai/gpt-4o"}, "b": {...}}. With two or more, every debater '
            'seat is filled from it: two-sided debate by the schedule, consultancy '
            'with every model on both sides of every item, prover-estimator and naive '
            'debate with every prover x estimator model.'
        ),
        (),
    ),
    (
        'tournament.schedule',
        'scalar',
        False,
        '[round-robin|swiss]',
        (
            'Two-sided debate: round-robin (every ordered pair on every item) or swiss '
            '(rounds of pairings where the ratings are uncertain, rated between '
            'rounds). One of: round-robin, swiss. [default: round-robin]'
        ),
        (),
    ),
    (
        'tournament.self_play',
        'scalar',
        False,
        'VALUE',
        'Round-robin: each model also debates itself. [default: False]',
        (),
    ),
    (
        'tournament.swiss_rounds',
        'scalar',
        True,
        'VALUE',
        'Swiss rounds (default: ceil(log2 of the roster size)).',
        (),
    ),
    (
        'tournament.items_per_pair',
        'scalar',
        False,
        'VALUE',
        (
            'Swiss: items each pair debates per round (each with the sides swapped). '
            '[default: 1]'
        ),
        (),
    ),
    (
        'tournament.swiss_sigma',
        'scalar',
        False,
        'VALUE',
        (
            'Swiss: the rating uncertainty (logits) of every model before any debate. '
            '[default: 1.0]'
        ),
        (),
    ),
    (
        'tournament.provers',
        'list',
        True,
        'LIST',
        (
            'Prover-estimator and naive debate: the roster models that sit as prover '
            '(default: all).'
        ),
        (),
    ),
    (
        'tournament.estimators',
        'list',
        True,
        'LIST',
        (
            'Prover-estimator and naive debate: the roster models that sit as '
            'estimator (default: all).'
        ),
        (),
    ),
    (
        'max_concurrency',
        'scalar',
        False,
        'VALUE',
        'Debates in flight at once. [default: 4]',
        (),
    ),
    (
        'model_concurrency',
        'scalar',
        True,
        'VALUE',
        "Requests in flight per model (default: the backend's).",
        (),
    ),
    (
        'max_retries',
        'scalar',
        False,
        'VALUE',
        (
            'Re-sends of a request after a transient failure (429, 5xx, timeout). '
            '[default: 4]'
        ),
        (),
    ),
    (
        'max_consecutive_failures',
        'scalar',
        False,
        'VALUE',
        (
            'Stop the run after this many debates in a row failed on the server '
            '(circuit breaker). [default: 10]'
        ),
        (),
    ),
    (
        'use_cache',
        'scalar',
        False,
        'VALUE',
        'Read and write the response cache. [default: True]',
        (),
    ),
    (
        'cache_dir',
        'scalar',
        True,
        'VALUE',
        'Response cache and local weights folder (default: ~/.cache/llmdebate).',
        (),
    ),
    (
        'prompts_dir',
        'scalar',
        True,
        'VALUE',
        'A folder of prompt templates overriding the shipped ones.',
        (),
    ),
    (
        'runs_dir',
        'scalar',
        False,
        'VALUE',
        'Where run directories are created. [default: runs]',
        (),
    ),
    (
        'report.bootstrap',
        'scalar',
        False,
        'VALUE',
        'Bootstrap resamples of the confidence intervals. [default: 2000]',
        (),
    ),
    (
        'report.calibration_bins',
        'scalar',
        False,
        'VALUE',
        'Bins of the calibration curves. [default: 10]',
        (),
    ),
    (
        'report.formal',
        'scalar',
        False,
        'VALUE',
        'Add the formal obfuscation table to the report. [default: False]',
        (),
    ),
)

EXECUTOR_HELP: dict[str, str] = {
    'Where debates run: {executors}.':
        (
            'Where debates run: local (this process); processes (worker processes on '
            'this machine, for many cores and a fast local server); ray (a Ray '
            'cluster, with the llmdebate[ray] extra).'
        ),
    (
        'Worker processes for --executor {workers} (default: the CPUs of this machine '
        'or cluster, at most max_concurrency).'
    ):
        (
            'Worker processes for --executor processes or ray (default: the CPUs of '
            'this machine or cluster, at most max_concurrency).'
        ),
    (
        'Ray cluster to join with --executor {address} (e.g. auto, ray://head:10001); '
        'default: start one here.'
    ):
        (
            'Ray cluster to join with --executor ray (e.g. auto, ray://head:10001); '
            'default: start one here.'
        ),
}

FORMATS: tuple[str, ...] = (
    'trl-prompt-completion',
    'audit',
    'trl-preference',
    'trl-unpaired',
    'trl-prompt-only',
    'verl',
    'openrlhf',
    'inspect-log',
    'answers',
)

PLAYERS: tuple[str, ...] = (
    'prover',
    'estimator',
    'judge',
    'debater',
)

EXPORT_KINDS: tuple[str, ...] = (
    'jsonl',
    'csv',
    'parquet',
    'hf',
)

MODEL_STRINGS: str = (
    'Backends: openai/<model>, openai-completions/<model>, anthropic/<model>, '
    'inspect/<model>, hf/<model>, local, scripted.'
)

VARIANTS: tuple[str, ...] = (
    'figure2',
    'marginal',
    'independent',
    'commit',
    'commit-marginal',
)

ATTACK_TARGETS: tuple[str, ...] = (
    'completeness',
    'soundness',
)

ATTACK_ANSWERS: tuple[str, ...] = (
    'wrong',
    'any',
)
