"""kraftspec: the KRaft controller's broker lifecycle (KIP-631), specified, modelled and
checkable. See README.md; the command line is ``kraftspec`` (kraftspec.cli)."""

__version__ = "0.1.0"
