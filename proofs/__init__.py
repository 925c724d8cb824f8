"""Proofs about the model (see proofs/README.md).

- :mod:`.inductive`: the model's invariants proved inductive with Z3, for any number of brokers
  and partitions, over the encoding of :mod:`.symbolic` and :mod:`.transitions`;
- :mod:`.drift`: the check that the encoding gives the model's own successors on concrete steps;
- :mod:`.guards`: each guard an invariant relies on, removed, makes its proof fail;
- :mod:`.counterexample`: a failed proof's countermodel as a concrete state and event, replayed
  and classified;
- :mod:`.timing`: the lease timing theorems over the reals (``kraftspec check-config``);
- :mod:`.contracts`: the CrossHair contracts and their planted twins.

``kraftspec prove`` runs them and prints one line per :class:`.obligations.Obligation`.
"""
