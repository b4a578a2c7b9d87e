"""Size limits: inputs that would exhaust memory or time are refused before any work.

Each limit has a default sized for a machine with a few GB of memory and can be
raised (or lowered) with an environment variable, e.g.
``SJFBCO_MAX_JOBS=2000000 sjfbco solve big.json``. A refusal is one
:class:`~sjfbco.errors.LimitError` line that names the size, the limit and the
variable. ``docs/formats.md`` lists them with what each one bounds.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from sjfbco.errors import InputError, LimitError, number


@dataclass(frozen=True)
class Limit:
    """A size limit.

    Parameters
    ----------
    env
        Environment variable that overrides the default (a positive integer).
    default
        The limit when ``env`` is not set.
    what
        What is counted, as a plural noun phrase ("jobs in one instance").
    """

    env: str
    default: int
    what: str

    @property
    def value(self) -> int:
        """The limit in force (``env`` if set, else ``default``)."""
        text = os.environ.get(self.env)
        if text is None or not text.strip():
            return self.default
        try:
            value = int(text.strip().replace("_", ""))
        except ValueError:
            raise InputError(
                f"must be a positive integer, got {text!r}", where=f"environment {self.env}"
            ) from None
        if value < 1:
            raise InputError(f"must be >= 1, got {value}", where=f"environment {self.env}")
        return value

    def check(self, n: int, *, source: str | None = None, where: str | None = None) -> None:
        """Raise :class:`LimitError` if ``n`` exceeds the limit."""
        limit = self.value
        if n > limit:
            raise LimitError(
                f"{number(n)} {self.what}; the limit is {limit:,} (raise it with the "
                f"environment variable {self.env}=N)",
                source=source,
                where=where,
            )


#: Bytes of an input file (instance, schedule, trace, batch results).
FILE_BYTES = Limit("SJFBCO_MAX_FILE_BYTES", 256 * 1024 * 1024, "bytes in one input file")
#: Jobs of one instance (also ``generate --jobs`` and ``convert``).
JOBS = Limit("SJFBCO_MAX_JOBS", 1_000_000, "jobs in one instance")
#: Servers of one cluster. A million jobs (``JOBS``) at the paper's 8 jobs per server need
#: 125,000 (``generate paper --jobs 1000000 --servers 125000``); measured there
#: (``docs/benchmarks/2026-12-million.md``): every command within its limit or in
#: near-linear time, peak memory under 8 GB. 150,000 leaves a fifth of headroom.
SERVERS = Limit("SJFBCO_MAX_SERVERS", 150_000, "servers in one cluster")
#: GPUs of one cluster (the evaluator keeps a few words per GPU): 125,000 servers of the
#: paper's largest size (32 GPUs) hold 4,000,000; the measured million-job cluster drew
#: 1,875,000 (``docs/benchmarks/2026-12-million.md``).
GPUS = Limit("SJFBCO_MAX_GPUS", 4_000_000, "GPUs in one cluster")
#: GPUs asked for by all jobs together, ``sum_j G_j``: a schedule holds one
#: ``(server, index)`` pair per unit (about 150 bytes each across a solve). A million jobs
#: of the paper's mix ask for 4,025,000; peak memory measured there
#: (``docs/benchmarks/2026-12-million.md``) leaves room for a quarter more.
JOB_GPUS = Limit(
    "SJFBCO_MAX_JOB_GPUS", 5_000_000, "GPUs asked for by all jobs together (sum of jobs' gpus)"
)
#: Tasks of one ``batch`` or ``reproduce`` run (instances x solvers x seeds).
TASKS = Limit("SJFBCO_MAX_TASKS", 1_000_000, "tasks in one run")
#: Jobs written by one ``convert`` run (jobs per instance x instances).
OUTPUT_JOBS = Limit("SJFBCO_MAX_OUTPUT_JOBS", 10_000_000, "jobs written by one conversion")
#: Cells of a time-indexed model: slots of the horizon x (job, pattern) pairs.
MODEL_CELLS = Limit(
    "SJFBCO_MAX_MODEL_CELLS",
    20_000_000,
    "time-indexed model cells (horizon slots x job placement patterns)",
)
#: Bars of a Gantt chart (one per job and GPU).
PLOT_BARS = Limit("SJFBCO_MAX_PLOT_BARS", 100_000, "bars in one Gantt chart (jobs' GPUs)")
#: Rows of measurement files in one ``calibrate`` run (about 30 s of fitting per 100,000 on
#: a quiet 2-core machine, 2026-12-02: at the limit some 5 minutes).
CALIBRATION_ROWS = Limit(
    "SJFBCO_MAX_CALIBRATION_ROWS", 1_000_000, "measurement rows in one calibrate run"
)
#: Seconds a model is estimated to take to build in ``formulate`` (its variables at the
#: exact solver's measured build rate, ``docs/exact.md``): a valid model can take minutes.
BUILD_SECONDS = Limit(
    "SJFBCO_MAX_BUILD_SECONDS",
    60,
    "seconds to build the model (estimated before building, from its variables)",
)

ALL: tuple[Limit, ...] = (
    FILE_BYTES,
    JOBS,
    SERVERS,
    GPUS,
    JOB_GPUS,
    TASKS,
    OUTPUT_JOBS,
    MODEL_CELLS,
    PLOT_BARS,
    CALIBRATION_ROWS,
    BUILD_SECONDS,
)

# ----------------------------------------------------------------------------- value ranges

#: Value ranges of the instance fields (``docs/formats.md`` lists them field by field;
#: :mod:`sjfbco.problem` checks them, ``sjfbco.problem.MAX_ALPHA`` and friends are these).
#: They keep every derived figure finite and every slot count exact: with them a
#: per-iteration time stays below about 1e52 s, a rate below 1e12 iterations per
#: slot, and times in the slotted model are exact integers.
MAX_GPUS_PER_SERVER = 4096
MAX_ITERATIONS = 10**12
#: Latest arrival, slots (planned starts: ``sjfbco.schedule.MAX_START``).
MAX_SLOT = 10**12
#: Bandwidths and the GPU reduction speed, MB/s.
MIN_BANDWIDTH, MAX_BANDWIDTH = 1e-3, 1e9
#: Gradient size, MB.
MAX_GRADIENT_MB = 1e9
#: Any time per iteration given in the file (compute, forward per sample, backward), s.
MAX_SECONDS = 1e6
#: Slot length, s.
MIN_SLOT_SECONDS, MAX_SLOT_SECONDS = 1e-3, 1e6
#: Largest ``cost.alpha``: ``f(alpha, k)`` stays finite for every contention ``k <= 4096``.
MAX_ALPHA = 10.0
#: Smallest per-iteration time of one worker, ``compute + xi2`` (s): rates stay finite.
MIN_ITERATION_SECONDS = 1e-6
MAX_BATCH_SIZE = 10**9
#: Largest ``rho_hat``, slots.
MAX_RHO_HAT = 1e15
#: Largest overlap exponent: (c^q + m^q)^(1/q) is within 1.4% of max(c, m) at q = 50.
MAX_OVERLAP_EXPONENT = 50.0
#: Largest ``cost.ring_latency``, s per MB and ring step (a 1,000 MB gradient over 16 GPUs
#: would pay 30 s an iteration at it).
MAX_RING_LATENCY = 1e-3
#: Largest ``cost.intra_step_seconds``, s per ring step (a ring of 16 GPUs would pay 3 s an
#: iteration at it; the emulated testbed's one-server steps fit 3.4 ms, ``docs/model.md``).
MAX_INTRA_STEP_SECONDS = 0.1
#: Largest ``cost.squeeze``: a split job's ring pair squeezed between two neighbours counts
#: the smaller side up to 4 times over (TCP's two-queue unfairness is argued near 1 to 2,
#: ``docs/model.md`` section 2).
MAX_SQUEEZE = 4.0
#: Largest ``cost.ring_weight``: a co-runner whose ring has more than two GPUs weighs up to
#: 5 times its link share's weight (the emulated testbed fits it near 0.3,
#: ``docs/model.md`` section 2).
MAX_RING_WEIGHT = 4.0
