"""The one-line user error of the build tools."""


class BuildError(Exception):
    """A user-facing failure with a one-line message (the CLIs print it and exit 2)."""
