"""`massgen-mcp eval`: does the team beat one model, and at what cost?

    from massgen_mcp.eval import EvalOptions, run_eval
    figures = await run_eval(EvalOptions("arith", models="openai/gpt-5-mini,...", limit=20))
    print(figures["arms"]["team"]["accuracy"], figures["selection_gap"])

See `run.py` for the arms, `prepare.py` for the options and `suites.py` for the suites.
"""

from __future__ import annotations

from massgen_mcp.eval.prepare import ARMS, EvalOptions
from massgen_mcp.eval.run import run_eval

__all__ = ["ARMS", "EvalOptions", "run_eval"]
