"""An outside package extending llmdebate through its entry points alone (its
``llmdebate_critic-0.1.dist-info/entry_points.txt``):

* protocol ``critiqued-consultancy`` (:mod:`.protocol`): consultancy with a new seat,
  ``critic``, on a model of its own, with its own prompt template (``prompts/critique.j2``)
  and its own exported role;
* backend ``parrot`` (:mod:`.backend`): a model that needs no server, whose options model
  forbids unknown keys;
* export format ``critic-sheet`` (:mod:`.sheet`): rows as a CSV sheet.
"""
