"""The AReaL internals the project relies on, pinned: the cost of an AReaL upgrade.

pinned      the list: each internal, the project's code that relies on it, why,
            and the digest of its code in the locked AReaL (1.0.4)
revised     the digests at later AReaL commits (the v2.0.0 tag, main), each read
            again with why the project's use still holds
check       how a pin is checked against the installed AReaL
"""
