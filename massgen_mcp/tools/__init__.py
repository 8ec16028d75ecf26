"""What agents can call besides the workflow tools: MCP tool servers run for them."""
