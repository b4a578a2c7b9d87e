"""Readings of the paper: the constants and Decisions a reproduction runs under.

The paper leaves its cost constants and several Decisions open
(``docs/reproduction.md``). A :class:`Reading` fixes all of them: a
:class:`~sjfbco.workloads.paper.Preset` (slot length, bandwidths, ``xi1``,
``xi2``, ``alpha``, degradation form), solver parameters per policy
(assignment mode, baseline job order, how the baselines use ``theta``, the
``rho_hat`` estimate, FA-FFP ties) and which horizon ``T`` the ``theta``
search uses. ``sjfbco reproduce --reading NAME`` selects one from
:data:`READINGS`; several readings are shown side by side.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

from sjfbco.experiments.paper import PAPER_HORIZON, THETA_POLICIES
from sjfbco.workloads.paper import PRESETS, Preset

Horizon = Literal["solver", "paper"]


@dataclass(frozen=True)
class Reading:
    """One reading of the paper's unstated choices.

    Parameters
    ----------
    name
        Key in :data:`READINGS`; appears in rows, tables and plots.
    description
        One line for tables and ``--help``.
    preset
        Cost constants of the generated instances.
    options
        Solver parameters by policy name; ``"*"`` applies to every policy that
        has the parameter (e.g. ``{"*": {"mode": "timestepped"}}``).
    horizon
        ``solver``: each solver's default ``T`` (``ceil(sum rho_hat / u)``);
        ``paper``: the paper's 1200 slots (Fig. 6: 1500) for the policies that
        search ``theta``.
    """

    name: str
    description: str
    preset: Preset
    options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    horizon: Horizon = "solver"

    def __post_init__(self) -> None:
        if self.horizon not in ("solver", "paper"):
            raise ValueError(f"reading {self.name}: horizon must be solver or paper")

    def params(self, policy: str, figure: str, known: set[str]) -> dict[str, Any]:
        """Parameters ``policy`` gets in ``figure``: ``"*"`` options it knows, then its own."""
        out = {k: v for k, v in self.options.get("*", {}).items() if k in known}
        out.update(self.options.get(policy, {}))
        if self.horizon == "paper" and policy in THETA_POLICIES:
            out["horizon"] = PAPER_HORIZON[figure]
        return out

    def with_preset(self, preset: Preset) -> Reading:
        """The same Decisions on other constants."""
        return replace(self, preset=preset)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready description (for ``settings.json``)."""
        return {
            "name": self.name,
            "description": self.description,
            "preset": asdict(self.preset),
            "options": {k: dict(v) for k, v in self.options.items()},
            "horizon": self.horizon,
        }


DEFAULT = Reading(
    "default",
    "preset paper; offline mode for every policy; baselines in input order; "
    "FF and LS search theta, RAND none; rho_hat alone; fragment ties; T = sum of estimates",
    PRESETS["paper"],
)

#: Readings by name (``sjfbco reproduce --reading NAME``).
READINGS: dict[str, Reading] = {DEFAULT.name: DEFAULT}


def get_reading(name: str) -> Reading:
    """The reading called ``name``, or a ``ValueError`` listing the known ones."""
    try:
        return READINGS[name]
    except KeyError:
        raise ValueError(f"unknown reading {name!r}; known: {', '.join(READINGS)}") from None
