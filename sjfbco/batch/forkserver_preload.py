"""Imported by the local pool's fork server first (its preload list): the server then dies
with the batch that started it (:func:`sjfbco.batch.lifeline.for_fork_server`).

Importing this module anywhere else does nothing unless the environment names
this process's parent as a pool owner.
"""

from __future__ import annotations

from sjfbco.batch.lifeline import for_fork_server

for_fork_server()
