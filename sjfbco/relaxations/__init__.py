"""The bound *models*: relaxations of the problem built once per instance and horizon and
solved several ways (``bound()``, ``decide()``, ``search()``), each a lower bound on the
optimal makespan in slots with its validity argued in its module docstring.

- :mod:`~sjfbco.relaxations.contention_free`: the contention-free multi-mode relaxation
  on CP-SAT (``ContentionFree``), with pairwise contention and GPU-time cuts;
- :mod:`~sjfbco.relaxations.timeindexed`: the same relaxation as a time-indexed program,
  per server or with identical servers pooled (``TimeIndexed``), on HiGHS or decided by
  CP-SAT;
- :mod:`~sjfbco.relaxations.configuration`: the configuration bound (``Configuration``),
  contention per server and slot, time forgotten.

The closed-form, packing and cutting-stock bounds stay in :mod:`sjfbco.bounds`.
"""
