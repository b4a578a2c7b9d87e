"""Subcommands of the ``sjfbco`` CLI, in the order ``--help`` lists them."""

COMMANDS: list[str] = [
    "solve",
    "compare",
    "bench",
    "evaluate",
    "generate",
    "formulate",
    "reproduce",
    "plot",
    "batch",
    "convert",
    "online",
    "elastic",
    "calibrate",
    "testbed",
    "slurm",
]
