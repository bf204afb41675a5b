"""The experiment layer: one config, one runner, one run directory for every protocol.

:mod:`.config` (the config), :mod:`.loading` (YAML and flags, errors that name their source),
:mod:`.jobs` (the debates of a run, drawn from the seed and the item id), :mod:`.debate` (one
debate and what it reports), :mod:`.runner` (resume, the failure policy, the summary),
:mod:`.executors` (where the debates run: a registry of executors), :mod:`.worker` (what a
worker process of an executor runs), :mod:`.runtime` (what the driver and the workers share).
Arrows point from the runner to the executors to the workers, never back.
"""
