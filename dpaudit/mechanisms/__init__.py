"""What is audited: reference mechanisms and adapters for foreign code."""
