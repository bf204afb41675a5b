"""llmdebate: prover-estimator debate between language models."""

from llmdebate.retired import install as _install_moved_modules

__version__ = "0.1.0"

_install_moved_modules()  # a module that moved: its import names the replacement
