"""Run modes. Each is a consensus run with its own answer format and what happens to the
winning answer; `consensus/`, `planning/` and `checkpoint/` have the same inner shape:

    schema.py         the structured answer's schema and validation (consensus: the vote
                      summary every mode's result carries)
    answer_format.py  the structured `new_answer` tool: parameters, parsing, rendering
                      (not in consensus: its answers are the orchestrator's free text)
    store.py          where accepted results are kept (not in consensus: the run record is
                      its result)
    run.py            prepare a run of the mode and turn its result into the mode's result
                      (not in consensus: `App.consensus` prepares it on the engine directly,
                      and the `RunResult` is its result)
"""
