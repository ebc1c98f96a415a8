"""Process plumbing: ports, the local scheduler, Ray, shared folders, the terminal.

Nothing here is MemAgent: it is what running AReaL's single controller well
on one machine (or a cluster) needs.
"""
