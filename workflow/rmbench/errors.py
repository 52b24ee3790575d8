"""Errors that stop a rule with a message a user can act on."""


class RmbenchError(Exception):
    """Base class: the message names what is wrong and what to do about it."""


class DataSourceError(RmbenchError):
    """A data source could not be read (hub unreachable, file missing or malformed)."""


class ModelSourceError(RmbenchError):
    """A model could not be built or loaded."""


class ParityError(RmbenchError):
    """An exported model disagrees with its PyTorch reference beyond the tolerance."""


class MixedHostsError(RmbenchError):
    """Launches of one cell, or of two compared cells, ran on different kinds of host."""
