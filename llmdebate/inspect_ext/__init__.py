"""llmdebate inside UK AISI's Inspect (the ``inspect`` extra).

* :mod:`llmdebate.inspect_ext.task`: the Inspect task ``llmdebate/debate`` (any protocol on
  any dataset, the roles' models from ``--model-role``), its solver and scorer;
* :mod:`llmdebate.inspect_ext.events`: a debate as readable events of the sample's log;
* :mod:`llmdebate.inspect_ext.logs`: the transcripts inside an Inspect eval log (what
  ``llmdebate score`` re-scores) and a run directory written as an eval log (``llmdebate
  export RUN --format inspect-log``);
* :mod:`llmdebate.inspect_ext._registry`: what Inspect's entry point
  (``[project.entry-points.inspect_ai] llmdebate``) imports.

The provider side, ``inspect/<provider>/<model>`` model strings in ``llmdebate run``, is the
backend :mod:`llmdebate.models.inspect_backend`. Nothing here imports ``inspect_ai`` at import
time except the task and registry modules, which Inspect itself loads.
"""
