"""llmdebate: prover-estimator debate between language models."""

__version__ = "0.1.0"
