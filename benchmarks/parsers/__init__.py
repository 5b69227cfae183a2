"""Pure parsers for the text and JSON that network measurement tools print.

Every parser takes the tool's captured stdout as a ``str`` and returns a frozen
dataclass. Parsers never run the tools themselves, so they can be tested
against recorded output (see ``tests/data``) without touching the network.
"""


class ParseError(ValueError):
    """The input is not output this parser understands.

    This is the only exception the parsers raise on bad input, so callers can
    handle "the tool printed something unexpected" with a single ``except``.
    It subclasses ``ValueError`` because bad input is a value problem, which
    also keeps generic ``except ValueError`` handlers working.
    """
