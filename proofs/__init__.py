"""Proofs about the model: Z3 inductive invariants, lease timing theorems, CrossHair contracts.
Not written yet: see issue 5."""
