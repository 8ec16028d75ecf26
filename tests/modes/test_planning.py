"""Plans: schema, validation messages, answer format, Markdown, storage."""

from __future__ import annotations

import copy
import json
import re
import threading
from pathlib import Path
from typing import Any

import pytest

from massgen_mcp.coordination.answers import AnswerRejected, ParsedAnswer
from massgen_mcp.errors import InputError
from massgen_mcp.modes.planning import store as plan_store
from massgen_mcp.modes.planning.answer_format import PlanAnswerFormat, plan_markdown
from massgen_mcp.modes.planning.schema import (
    DEPTH_TARGETS,
    Plan,
    accepted_task_range,
    plan_json_schema,
    validate_plan,
)
from massgen_mcp.modes.planning.store import get_plan, list_plans, save_plan


def task(tid: str, chunk: str = "build", deps: list[str] | None = None, **extra: Any) -> dict:
    t = {
        "id": tid,
        "chunk": chunk,
        "description": f"Do {tid}.",
        "depends_on": deps or [],
        "priority": "medium",
        "task_type": "deterministic",
        "success_criteria": [f"{tid} works"],
        "verification": f"pytest -k {tid}",
    }
    t.update(extra)
    return t


def plan_data(tasks: list[dict], summary: str = "Build it in two phases.") -> dict:
    return {"summary": summary, "tasks": tasks}


def chain(n: int) -> dict:
    """A valid plan of n tasks: t0 <- t1 <- ... in chunks of 5."""
    return plan_data([
        task(f"t{i}", f"phase {i // 5}", [f"t{i - 1}"] if i else []) for i in range(n)
    ])


VALID = plan_data([
    task("design", "design", task_type="exploratory", priority="high"),
    task("schema", "build", ["design"]),
    task("api", "build", ["schema"]),
    task("ui", "build", ["api"], priority="low"),
    task("docs", "ship", ["api", "ui"]),
])


def problems(data: Any, depth: str = "dynamic") -> list[str]:
    with pytest.raises(AnswerRejected) as info:
        validate_plan(data, depth)
    return info.value.problems


# ---------------------------------------------------------------------------- validation


def test_valid_plan_is_accepted_with_chunks_in_order_of_first_appearance() -> None:
    plan = validate_plan(VALID, "shallow")
    assert [t.id for t in plan.tasks] == ["design", "schema", "api", "ui", "docs"]
    assert plan.chunks() == ["design", "build", "ship"]
    assert plan.tasks[0].task_type == "exploratory"


def test_lenient_reading_strips_text_numbers_ids_and_defaults_depends_on() -> None:
    data = plan_data([task("a"), task("b", deps=["a", "a"]), task("c")])
    data["tasks"][0]["id"] = 1
    data["tasks"][1]["depends_on"] = [1, " 1 "]
    del data["tasks"][2]["depends_on"]
    data["tasks"][2]["description"] = "  padded  "
    plan = validate_plan(data, "dynamic")
    assert plan.tasks[0].id == "1"
    assert plan.tasks[1].depends_on == ["1"]
    assert plan.tasks[2].depends_on == []
    assert plan.tasks[2].description == "padded"


def test_cycle_is_named() -> None:
    data = plan_data([task("a", deps=["c"]), task("b", deps=["a"]), task("c", deps=["b"]),
                      task("d", deps=["a"])])
    (problem,) = problems(data)
    assert problem.startswith("dependency cycle: a -> c -> b -> a")
    assert "x -> y means x depends on y" in problem


def test_two_separate_cycles_are_both_reported_and_dependents_are_not() -> None:
    data = plan_data([task("a", deps=["b"]), task("b", deps=["a"]), task("c", deps=["a"]),
                      task("x", deps=["y"]), task("y", deps=["x"])])
    found = problems(data)
    assert [p.split(" (")[0] for p in found] == [
        "dependency cycle: a -> b -> a",
        "dependency cycle: x -> y -> x",
    ]


def test_long_chain_does_not_recurse() -> None:
    data = chain(250)
    data["tasks"][0]["depends_on"] = ["t249"]
    for t in data["tasks"]:
        t["chunk"] = "one"
    (problem,) = problems(data)
    assert problem.startswith("dependency cycle: t0 -> t249 -> t248")
    assert problem.count("->") == 250 + 1  # 250 edges, plus the "x -> y" legend


def test_unknown_dependency_names_the_task_and_suggests_a_close_id() -> None:
    data = plan_data([task("schema"), task("api", deps=["shema", "zz"])])
    assert problems(data) == [
        "tasks[1] 'api' depends on unknown task 'shema' (did you mean 'schema'?)",
        "tasks[1] 'api' depends on unknown task 'zz' (no task has that id)",
    ]


def test_self_dependency() -> None:
    (problem,) = problems(plan_data([task("a", deps=["a"])]))
    assert problem == "tasks[0] 'a' depends on itself; remove 'a' from its depends_on"


def test_dependency_on_a_later_chunk() -> None:
    data = plan_data([task("a", "phase 1", ["b"]), task("b", "phase 2")])
    (problem,) = problems(data)
    assert problem.startswith(
        "tasks[0] 'a' in chunk 'phase 1' depends on 'b' in the later chunk 'phase 2'"
    )
    assert "order of first appearance" in problem


def test_dependency_on_an_earlier_task_listed_later_in_the_same_chunk_is_fine() -> None:
    plan = validate_plan(plan_data([task("b", deps=["a"]), task("a")]), "dynamic")
    assert [t.id for t in plan.ordered()[0][1]] == ["a", "b"]


def test_duplicate_ids() -> None:
    data = plan_data([task("a"), task("b"), task("a")])
    assert problems(data) == [
        "tasks[2]: id 'a' is already used by tasks[0]; give every task a unique id"
    ]


def test_wrong_enums_missing_and_unknown_fields_give_field_paths() -> None:
    data = plan_data([task("a"), task("b", priority="urgent", task_type="manual")])
    del data["tasks"][0]["verification"]
    data["tasks"][1]["dependencies"] = ["a"]
    data["tasks"][1]["success_criteria"] = []
    assert problems(data) == [
        "tasks[0].verification: this field is required",
        "tasks[1].priority: must be high, medium or low, not 'urgent'",
        "tasks[1].task_type: must be deterministic or exploratory, not 'manual'",
        "tasks[1].success_criteria: must list at least one item",
        "tasks[1].dependencies: unknown field; did you mean 'depends_on'? allowed fields: "
        "id, chunk, description, depends_on, priority, task_type, success_criteria, "
        "verification",
    ]


def test_ids_with_spaces_and_empty_text_are_rejected() -> None:
    data = plan_data([task("set up db", description="   ")], summary="")
    assert problems(data) == [
        "summary: must not be empty",
        "tasks[0].id: must not contain spaces; use a short id like 'db-schema' or 'T3'",
        "tasks[0].description: must not be empty",
    ]


@pytest.mark.parametrize(
    ("depth", "count", "target"),
    [("shallow", 2, "5-10"), ("shallow", 16, "5-10"), ("medium", 9, "20-50"),
     ("deep", 40, "100-200")],
)
def test_task_count_far_outside_the_depth_target(depth: str, count: int, target: str) -> None:
    low, high = accepted_task_range(depth)
    (problem,) = problems(chain(count), depth)
    assert problem.startswith(f"tasks: the plan has {count} tasks, far outside the {depth} "
                              f"target of {target} tasks (accepted: {low}-{high})")


def test_tolerance_bounds_are_accepted() -> None:
    assert accepted_task_range("shallow") == (3, 15)
    assert accepted_task_range("medium") == (10, 75)
    assert accepted_task_range("deep") == (50, 300)
    assert accepted_task_range("dynamic") == (1, 250)
    for depth, target in DEPTH_TARGETS.items():
        low, high = accepted_task_range(depth)
        assert len(validate_plan(chain(low), depth).tasks) == low
        assert len(validate_plan(chain(high), depth).tasks) == high
        if target:
            assert low <= target[0] and high >= target[1]
    assert problems(plan_data([]), "dynamic") == [
        "tasks: the plan has 0 tasks; a plan needs 1-250 tasks"
    ]


def test_unknown_depth_is_an_input_error() -> None:
    with pytest.raises(InputError, match="shallow, medium, deep, dynamic"):
        validate_plan(VALID, "huge")
    with pytest.raises(InputError):
        PlanAnswerFormat("huge")


def test_every_problem_is_reported_together() -> None:
    data = plan_data([
        task("a", "one", ["b"], priority="top"),      # later chunk + enum
        task("b", "two", ["zz"]),                     # unknown dep
        task("b", "two"),                             # duplicate
        task("c", "two", ["d"]), task("d", "two", ["c"]),  # cycle
    ])
    found = problems(data, "medium")
    expected = [
        "tasks[0].priority: must be",
        "tasks[2]: id 'b' is already used by tasks[1]",
        "tasks[0] 'a' in chunk 'one' depends on 'b' in the later chunk 'two'",
        "tasks[1] 'b' depends on unknown task 'zz'",
        "dependency cycle: c -> d -> c",
        "tasks: the plan has 5 tasks, far outside the medium target of 20-50 tasks",
    ]
    assert len(found) == len(expected)
    for want, got in zip(expected, found, strict=True):
        assert got.startswith(want)


def test_not_an_object() -> None:
    assert problems(["a"]) == ["plan: must be a JSON object with 'summary' and 'tasks', not a list"]
    assert problems({"summary": "s", "tasks": "a, b"}) == ["tasks: must be a list, not a string"]


def test_a_plan_broken_everywhere_gets_a_bounded_list() -> None:
    found = problems(plan_data([{"id": i} for i in range(100)]))
    assert len(found) == 41
    assert re.fullmatch(r"\.\.\. and \d+ more problems", found[-1])


# ---------------------------------------------------------------------------- answer format


def test_tool_schema_is_self_contained_and_provider_friendly() -> None:
    params = PlanAnswerFormat("medium").tool_parameters()
    text = json.dumps(params)
    for banned in ("$ref", "$defs", "oneOf", "anyOf", "allOf", "additionalProperties",
                   '"title"', '"default"'):
        assert banned not in text, banned
    assert params["required"] == ["plan"]
    task_schema = params["properties"]["plan"]["properties"]["tasks"]["items"]
    assert task_schema["properties"]["priority"]["enum"] == ["high", "medium", "low"]
    assert task_schema["properties"]["task_type"]["enum"] == ["deterministic", "exploratory"]
    assert set(task_schema["required"]) == set(task_schema["properties"])
    assert all(p.get("description") for p in task_schema["properties"].values())
    assert "20-50" in params["properties"]["plan"]["description"]
    assert plan_json_schema() == plan_json_schema()  # no shared mutable state


def test_parse_returns_markdown_and_plan_data() -> None:
    fmt = PlanAnswerFormat("shallow", goal="Add login")
    answer = fmt.parse({"plan": VALID})
    assert answer.text.startswith("# Plan: Add login\n")
    assert answer.data == Plan.model_validate(VALID).model_dump(mode="json")
    json.dumps(answer.data)  # plain JSON, ready for storage and structured output


def test_parse_accepts_a_plan_given_as_a_json_string() -> None:
    fmt = PlanAnswerFormat("shallow")
    assert fmt.parse({"plan": json.dumps(VALID)}).data == fmt.parse({"plan": VALID}).data


def test_parse_accepts_the_plan_fields_without_the_wrapper() -> None:
    assert PlanAnswerFormat("shallow").parse(copy.deepcopy(VALID)).data["tasks"][0]["id"] == (
        "design"
    )


def test_parse_rejections_are_actionable() -> None:
    fmt = PlanAnswerFormat("shallow")
    with pytest.raises(AnswerRejected) as info:
        fmt.parse({"plan": "{not json"})
    (problem,) = info.value.problems
    assert problem.startswith("plan: a string was given that is not valid JSON")
    with pytest.raises(AnswerRejected, match="plan: this argument is required"):
        fmt.parse({"content": "my plan is ..."})
    with pytest.raises(AnswerRejected, match="unknown task 'zz'"):
        bad = copy.deepcopy(VALID)
        bad["tasks"][1]["depends_on"] = ["zz"]
        fmt.parse({"plan": bad})


def test_render_is_one_line_per_task_in_dependency_order() -> None:
    data = plan_data([
        task("b", "build", ["a"], description="Write\n the   API"),
        task("a", "build", priority="high", task_type="exploratory"),
        task("c", "ship", ["a", "b"]),
    ])
    fmt = PlanAnswerFormat("dynamic")
    rendered = fmt.render(fmt.parse({"plan": data}))
    assert rendered.splitlines() == [
        "Summary: Build it in two phases.",
        "3 tasks in 2 chunks:",
        "[build] a (high, exploratory) Do a.",
        "[build] b (medium, deterministic) Write the API ← a",
        "[ship] c (medium, deterministic) Do c. ← a, b",
    ]
    assert "{" not in rendered
    assert fmt.render(ParsedAnswer("free text")) == "free text"


def test_instructions_state_the_depth_target() -> None:
    assert "aim for 100-200 tasks" in PlanAnswerFormat("deep").instructions()
    assert "fewer than 50 or more than 300 are rejected" in PlanAnswerFormat("deep").instructions()
    assert "from 1 to 250" in PlanAnswerFormat("dynamic").instructions()
    assert PlanAnswerFormat("deep").noun == "plan"


# ---------------------------------------------------------------------------- markdown


def test_markdown_groups_by_chunk_in_order_and_sorts_by_dependencies() -> None:
    data = plan_data([
        task("api", "build", ["model"]),
        task("deploy", "ship", ["test"]),
        task("test", "ship", ["api"], success_criteria=["all green", "coverage > 80%"]),
        task("model", "build"),
        task("notes", "ship"),
    ])
    md = plan_markdown(validate_plan(data, "dynamic"), "Release v2")
    assert md.startswith("# Plan: Release v2\n\nBuild it in two phases.\n")
    headings = [line for line in md.splitlines() if line.startswith("#")]
    assert headings == [
        "# Plan: Release v2",
        "## 1. build", "### `model`", "### `api`",
        "## 2. ship", "### `test`", "### `deploy`", "### `notes`",
    ]
    test_section = md.split("### `test`")[1].split("###")[0]
    assert "**Priority:** medium · **Type:** deterministic · **Depends on:** `api`" in test_section
    assert "  - all green\n  - coverage > 80%" in test_section
    assert "- **Verification:** pytest -k test" in test_section
    assert "**Depends on:** none" in md.split("### `model`")[1].split("###")[0]


# ---------------------------------------------------------------------------- storage


def save(tmp_path: Path, goal: str = "Add login", data: dict | None = None) -> Any:
    return save_plan(tmp_path, goal=goal, depth="shallow", plan=data or VALID, run_id="run_1",
                     consensus={"tally": {"agent1": 2}, "votes": [{"voter": "b"}]})


def test_save_writes_three_files_and_get_reads_them_back(tmp_path: Path) -> None:
    stored = save(tmp_path)
    assert re.fullmatch(r"plan_\d{8}T\d{6}Z_[0-9a-f]{4}", stored.plan_id)
    folder = tmp_path / "plans" / stored.plan_id
    assert stored.path == str(folder)
    assert sorted(p.name for p in folder.iterdir()) == ["metadata.json", "plan.json", "plan.md"]
    meta = json.loads((folder / "metadata.json").read_text())
    assert meta["goal"] == "Add login" and meta["depth"] == "shallow"
    assert meta["run_id"] == "run_1" and meta["task_count"] == 5 and meta["chunk_count"] == 3
    assert meta["consensus"]["tally"] == {"agent1": 2}
    assert meta["created"].endswith("+00:00")
    assert (folder / "plan.md").read_text() == stored.markdown
    assert json.loads((folder / "plan.json").read_text()) == stored.plan.model_dump(mode="json")

    again = get_plan(tmp_path, stored.plan_id)
    assert again == stored
    assert get_plan(tmp_path, "latest") == stored
    # fit for an MCP tool's structured output
    json.loads(again.model_dump_json())
    assert "plan" in type(again).model_json_schema()["properties"]


def test_save_rejects_an_invalid_plan_dict(tmp_path: Path) -> None:
    bad = copy.deepcopy(VALID)
    bad["tasks"][0]["depends_on"] = ["nope"]
    with pytest.raises(AnswerRejected):
        save(tmp_path, data=bad)
    assert list_plans(tmp_path) == []


def test_ids_are_unique_within_a_second_and_list_is_newest_first(tmp_path: Path) -> None:
    ids: list[str] = []
    lock = threading.Lock()

    def worker() -> None:
        for _ in range(10):
            sid = save(tmp_path).plan_id
            with lock:
                ids.append(sid)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert len(ids) == 40 and len(set(ids)) == 40
    listed = list_plans(tmp_path, limit=100)
    assert {p.plan_id for p in listed} == set(ids)
    created = [p.created for p in listed]
    assert created == sorted(created, reverse=True)
    assert len(list_plans(tmp_path, limit=3)) == 3


def test_latest_and_list_follow_save_order_within_one_second(tmp_path: Path) -> None:
    stored = [save(tmp_path, goal=f"goal {i}") for i in range(5)]
    assert [p.goal for p in list_plans(tmp_path)] == [f"goal {i}" for i in reversed(range(5))]
    assert get_plan(tmp_path, "latest").plan_id == stored[-1].plan_id
    assert get_plan(tmp_path, f" {stored[0].plan_id} ").goal == "goal 0"


def test_an_id_taken_in_the_same_second_is_not_reused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suffixes = iter(["aaaa", "aaaa", "bbbb"])
    monkeypatch.setattr(plan_store.secrets, "token_hex", lambda n: next(suffixes))
    first, second = save(tmp_path), save(tmp_path)
    assert first.plan_id.endswith("_aaaa")
    assert second.plan_id != first.plan_id
    if second.plan_id[:21] == first.plan_id[:21]:  # same second: the retry picked a new suffix
        assert second.plan_id.endswith("_bbbb")
    assert get_plan(tmp_path, first.plan_id).metadata.plan_id == first.plan_id


def test_unfinished_saves_are_ignored(tmp_path: Path) -> None:
    stored = save(tmp_path)
    half = tmp_path / "plans" / "plan_20990101T000000Z_ffff"
    half.mkdir()
    (half / "plan.json").write_text("{}")
    assert [p.plan_id for p in list_plans(tmp_path)] == [stored.plan_id]
    assert get_plan(tmp_path, "latest").plan_id == stored.plan_id


def test_latest_with_no_plans_says_how_to_make_one(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"no plans are stored .* `plan` tool"):
        get_plan(tmp_path, "latest")
    assert list_plans(tmp_path) == []


def test_unknown_id_lists_the_newest_ids(tmp_path: Path) -> None:
    stored = save(tmp_path)
    with pytest.raises(InputError) as info:
        get_plan(tmp_path, "plan_20000101T000000Z_0000")
    assert stored.plan_id in str(info.value)
    assert "'latest'" in str(info.value)


@pytest.mark.parametrize(
    "bad", ["../secrets", "plan_x/../../etc", "a\\b", "..", "/etc/passwd", "", ".hidden"]
)
def test_bad_ids_are_rejected_before_touching_the_disk(tmp_path: Path, bad: str) -> None:
    with pytest.raises(InputError, match="is not a plan id"):
        get_plan(tmp_path, bad)


def test_save_rejects_an_unknown_depth(tmp_path: Path) -> None:
    with pytest.raises(InputError):
        save_plan(tmp_path, goal="g", depth="extreme", plan=VALID, run_id=None, consensus={})
