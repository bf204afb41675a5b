"""Debaters that learn from the protocol's reward alone in the formal engine.

Small linear-softmax policies over the state the formal strategies see (the truth of the
current claim and of its subclaims, one coherent lie, B's numbers), trained A-leading:
B's inner loop of evolution-strategy steps approaches a best response to the current A,
then A takes one step against that B. Every payoff is the exact expectation of
:func:`llmdebate.formal.exact.exact_prover_estimator` (rewards from
:mod:`llmdebate.core.scoring`), evaluated for a whole population of perturbed policies in
one vectorised call (:mod:`llmdebate.formal.learning.replicas`).
"""
