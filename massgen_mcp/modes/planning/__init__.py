"""`plan`: a team-agreed, validated task plan, stored under `plans/`."""
