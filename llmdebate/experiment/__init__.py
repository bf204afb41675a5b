"""The experiment layer: one config, one runner, one run directory for every protocol.

:mod:`.config` (the config), :mod:`.loading` (YAML and flags, errors that name their source),
:mod:`.jobs` (the debates of a run, drawn from the seed and the item id), :mod:`.runner`
(concurrency, resume, the failure policy, the summary).
"""
