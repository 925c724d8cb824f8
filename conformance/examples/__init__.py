"""Example servers of the conformance protocol (spec/protocol.md).

``impl_server`` puts kraftspec's own controller behind the protocol: a reference for writing a
server in another language, and the system under test of the subprocess adapter's tests.
"""
