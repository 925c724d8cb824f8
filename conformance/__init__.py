"""Conformance: traces recorded from the model, replayed against any implementation.

* :mod:`.trace`: the trace format of spec/traces.md (reading refuses a malformed file with its
  path, line and field; writing is canonical; a trace's name is the hash of its content);
* :mod:`.generate` (random walks of :mod:`.simulation`'s cluster, with faults, swarm style),
  :mod:`.targeted` (a short trace for every rule; builds the corpus) and :mod:`.exhaustive`
  (every sequence of a small scope up to a depth, one trace per distinct state);
* :mod:`.adapters` (impl and the model in process) and :mod:`.subprocess_adapter` (any program
  that speaks spec/protocol.md); :mod:`.replay` compares at a level and reports the first
  divergence with a command that reproduces it;
* :mod:`.shrink` (a shortest trace that fails the same way), :mod:`.coverage` (how often each
  rule fired), :mod:`.mutation` (deliberate breakages of impl and who catches them);
* ``corpus/``: the regression traces CI replays; ``examples/impl_server.py``: impl behind the
  subprocess protocol.

The commands are ``kraftspec generate | replay | shrink | coverage | mutate``; see README.md."""
