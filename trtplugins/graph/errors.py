class GraphError(ValueError):
    """A model the graph tools cannot work on: the message says what and why."""
