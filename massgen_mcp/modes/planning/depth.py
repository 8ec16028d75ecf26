"""How big a plan is asked to be: its own module, so the CLI can offer the choices without
loading the plan schema (start-up time)."""

from __future__ import annotations

from typing import Literal, get_args

Depth = Literal["shallow", "medium", "deep", "dynamic"]
DEPTHS: tuple[str, ...] = get_args(Depth)
