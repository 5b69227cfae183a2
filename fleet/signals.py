"""What fleet tells the apps above it, without importing them (they connect in ready())."""

from django.dispatch import Signal

# Sent once a node's revocation is committed, with ``node`` and ``reason``.
node_revoked = Signal()

# Sent inside the revocation's transaction, with ``node`` and ``reason``: what must end
# with the node (its open runs) ends in the same commit.
node_revoking = Signal()
