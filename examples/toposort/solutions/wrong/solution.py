def toposort(n, edges):
    # A plausible bug: the nodes sorted by number, as if every edge went
    # from a smaller node to a larger one.
    return list(range(n))
