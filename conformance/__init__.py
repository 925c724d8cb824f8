"""Conformance: scenarios and traces generated from the model, and replaying them against
implementations. Today it holds the simulated cluster behind ``kraftspec explain``; traces,
adapters, the shrinker and the corpus follow (issues 4 and 6)."""
