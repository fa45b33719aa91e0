"""Simulated users for declarative multi-turn cases: ``script([...])`` sends fixed replies in
order; ``persona(goal=..., brief=...)`` has a model play the user. ``converse`` runs the
conversation; ``SimulatedUser`` is the seam for users of your own."""

from ._converse import converse
from ._persona import DEFAULT_MAX_TURNS, DONE, Persona, persona, persona_instructions
from ..authoring._user import SimulatedUser, UserContext, UserSession, UserSimulationError
from ._script import Script, script

__all__ = [
    "DEFAULT_MAX_TURNS",
    "DONE",
    "Persona",
    "Script",
    "SimulatedUser",
    "UserContext",
    "UserSession",
    "UserSimulationError",
    "converse",
    "persona",
    "persona_instructions",
    "script",
]
