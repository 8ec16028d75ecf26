"""Team configuration: the schema, loading, the environment and provider presets."""
