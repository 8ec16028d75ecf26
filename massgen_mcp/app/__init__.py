"""The application facade (`App`, facade.py) and how it chooses a call's team (teams.py)."""

from massgen_mcp.app.facade import App
from massgen_mcp.app.teams import ChosenTeam

__all__ = ["App", "ChosenTeam"]
