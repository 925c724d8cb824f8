"""kraftspec: the KRaft controller's broker lifecycle (KIP-631), specified, modelled and
checkable. See README.md; the command line is ``kraftspec`` (kraftspec.cli)."""

__version__ = "0.1.0"

from .compiled import enable_if_asked as _enable_compiled_if_asked

_enable_compiled_if_asked()  # KRAFTSPEC_COMPILED=1: the compiled modules, where a build matches (kraftspec.compiled)
