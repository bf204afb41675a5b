"""Where an extension's author imports from: one public module per kind of extension.

========================================  ===============================================
kind                                      import from
========================================  ===============================================
a protocol                                :mod:`llmdebate.authoring.protocol`
a backend (a model provider)              :mod:`llmdebate.authoring.backend`
an export format                          :mod:`llmdebate.authoring.export_format`
========================================  ===============================================

Each module re-exports, from the floors below, everything an author of that kind needs and
nothing else; docs/extending.md gives a complete example of each, installed as a package and
run by the tests. The other registries (judge kinds, report sections, verbs, executors,
probability methods) are each one module already (docs/extending.md names them).
"""
