"""Errors a benchctl command reports as one line with the fix, never a traceback."""


class CliError(Exception):
    pass
