"""`checkpoint`: a reviewer team's safety step plan, recorded under `checkpoints/` and
enforced by the PreToolUse hook (`massgen_mcp.hook`)."""
