"""Chart colours, read once from the app theme (.streamlit/config.toml).

The theme's `chartCategoricalColors` (Okabe-Ito, colour-blind safe) is the one source of colour:
figure builders ask for a colour by role (`color("decode")`) instead of typing hex codes, so a
theme change recolours every chart and the figures stay consistent with Streamlit's own.
"""

from __future__ import annotations

import tomllib
from functools import cache
from pathlib import Path

CONFIG = Path(__file__).resolve().parent.parent / ".streamlit" / "config.toml"

# Roles map to positions in the theme palette, so each concept keeps one colour across lessons.
ROLES = {
    "primary": 0,
    "decode": 0,
    "prefill": 1,
    "compute": 1,
    "memory": 0,
    "kv": 2,
    "attention": 2,
    "lm_head": 3,
    "comm": 4,
    "overhead": 5,
    "highlight": 5,
    "neutral": 7,
    "recompute": 3,
    "cached": 2,
    "budget": 5,
    "unused": 7,
    "tenant_heavy": 3,
    "tenant_light": 4,
    "fcfs": 0,
    "sjf": 3,
    "no_limit": 0,
    "limit_rule": 2,
    "limit_peak": 1,
    "waiting": 5,
    "healthy": 2,
    "config_a": 0,
    "config_b": 1,
}


@cache
def palette() -> tuple[str, ...]:
    """The theme's categorical colours, in order."""
    with CONFIG.open("rb") as fh:
        theme = tomllib.load(fh)["theme"]
    return tuple(theme["chartCategoricalColors"])


def color(role: str) -> str:
    """The colour of a role such as "decode" or "prefill" (KeyError for an unknown role)."""
    return palette()[ROLES[role]]
