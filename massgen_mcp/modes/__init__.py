"""Run modes. Each is a consensus run with its own answer format and what happens to the
winning answer; `planning/` and `checkpoint/` have the same inner shape:

    schema.py         the structured answer's schema and validation
    answer_format.py  the structured `new_answer` tool: parameters, parsing, rendering
    store.py          where accepted results are kept
    run.py            prepare a run of the mode and turn its result into the mode's result

`consensus.py` is the plain mode (free-text answers) and the vote summary every mode returns.
"""
