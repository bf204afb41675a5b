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

:data:`API_VERSION` is the version of what these modules give, (major, minor): an extension
may check it. A name removed from it (a module that moved, a protocol attribute of an
earlier version such as ``seat_roles``) either still works with a :class:`DeprecationWarning`
naming its replacement or is refused in one line naming it (:mod:`llmdebate.retired`).
"""

from llmdebate.retired import API_VERSION

__all__ = ["API_VERSION"]
