"""What the Ask pipeline announces, so that its record step need not know who listens.

``decisions_recorded`` is sent inside the transaction that writes the records of one or more
Asks, with ``asks``: ``[(tenant id, the Ask's saved decisions), ...]`` (``CacheDecision`` rows, or
``hit_sampling.DecisionRef`` for the background writer's batches). ``supportbot.receivers`` samples
the hits for staff labelling and queues their second opinions (which ask the pipeline again)."""
from django.dispatch import Signal

decisions_recorded = Signal()
