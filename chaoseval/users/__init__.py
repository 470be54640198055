"""The simulated user of a conversational scenario: the other side of the conversation.

``simulator`` (the deterministic user: a seeded policy over what it knows and its script),
``phrases`` (what it says, by language and persona), ``reading`` (what a message asks and
states, for both sides), ``writing`` (values written as people write them, slips, plausible
wrong values, typos), ``channel`` (``episode.user``: a turn through the user-channel plugins,
recorded as a ``user`` step), ``perturbing`` (what the ``user_*`` plugins share).
"""
