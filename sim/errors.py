"""The one exception type for bad input from a user (CLI flag, URL parameter, trace, API value).

Its message is one clear line that names the bad value; the command line prints it and exits
with code 2, and the app shows it as an error box. Anything else escaping is a bug.
"""


class SimInputError(ValueError):
    """A value a user gave is out of range, unknown or malformed; the message says which."""
