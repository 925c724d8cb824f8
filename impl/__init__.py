"""kraftspec's production controller: the rules of spec/ built for scale, with its own codec,
metadata log on disk, snapshots and recovery. Independent of kraftspec.model (conformance
connects the two). See impl/README.md; the entry point is ``kraftspec.impl.controller.Controller``."""
